"""Timing targets as ratios to yardsticks measured in the same run (taudash/bench/ratios.py):
the ratio decides pass, the absolute figure keeps its value without a target, every timed target of
`taudash bench` is a ratio, and the yardsticks measure something. No assertion on a timing."""

from __future__ import annotations

import ast
from pathlib import Path

from taudash.bench.generate import Size
from taudash.bench.history import recorder_bench
from taudash.bench.measure import Figure
from taudash.bench.ratios import (
    CPU_RECORDER,
    DECODE,
    DERIVED_FROM,
    KEY,
    RATIOS,
    Ratio,
    derived_target,
    untargeted_timings,
    with_ratios,
)
from taudash.bench.yardstick import cpu_work, cpu_yardstick, key_yardstick, table_yardstick

BENCH = Path(__file__).resolve().parents[2] / "taudash" / "bench"
BUILDERS = ("run.py", "queue_view.py", "history.py")  # the modules that build `taudash bench`'s figures
TINY = Size("T", 20, 300, 150, 6, 2, 2, 4)


def _derive_and_decode(derives: list[float], decodes: list[float]) -> dict[str, Figure]:
    return {"derive_full_s": Figure.of_runs("derive_full_s", "full derivation", derives, "s"),
            DECODE: Figure.of_runs(DECODE, "raw decode", decodes, "s")}


def test_a_paired_ratio_is_the_median_of_the_pairs_and_decides_pass():
    target = next(r for r in RATIOS if r.key == "derive_full_vs_decode").target
    assert target is not None
    out = with_ratios(_derive_and_decode([0.1, 0.4, 0.2], [0.2, 0.2, 0.1]))
    assert list(out) == ["derive_full_s", "derive_full_vs_decode", DECODE]  # the ratio right after its figure
    ratio = out["derive_full_vs_decode"]
    assert ratio.runs == [0.5, 2.0, 2.0] and ratio.value == 2.0 and ratio.unit == "x"
    assert ratio.target == target and ratio.ok is False
    assert with_ratios(_derive_and_decode([0.01, 0.01, 0.01], [0.1, 0.1, 0.1]))["derive_full_vs_decode"].ok is True
    absolute = out["derive_full_s"]
    assert absolute.value == 0.2 and absolute.target is None and absolute.ok is None  # kept, not judged
    assert "judged by derive_full_vs_decode" in absolute.note and "was ≤ 500 ms" in absolute.note


def test_an_unpaired_ratio_is_over_the_yardsticks_median():
    r = Ratio("key_p95_s", KEY, "key_p95_vs_key", 10.0)
    figs = {"key_p95_s": Figure("key_p95_s", "key p95", 0.05, "s"),
            KEY: Figure.of_runs(KEY, "bare key", [0.004, 0.005, 0.1], "s")}
    ratio = with_ratios(figs, (r,))["key_p95_vs_key"]
    assert ratio.value == 0.05 / 0.005 and ratio.runs is None and ratio.ok is True
    figs["key_p95_s"].value = 0.06
    assert with_ratios(figs, (r,))["key_p95_vs_key"].ok is False  # 12× > 10×


def test_without_a_yardstick_there_is_no_ratio_and_a_zero_one_judges_nothing():
    r = Ratio("update_p99_s", "cpu", "update_vs_cpu", 5.0)
    alone = {"update_p99_s": Figure("update_p99_s", "update p99", 0.003, "s")}
    assert list(with_ratios(alone, (r,))) == ["update_p99_s"]
    zero = {**alone, "cpu": Figure("cpu", "loop", 0.0, "s")}
    assert with_ratios(zero, (r,))["update_vs_cpu"].ok is None


def _figure_calls(source: str):
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("Figure",
                                                                                                      "of_runs"):
            yield node


def test_no_timed_figure_of_the_bench_carries_an_absolute_target():
    for name in BUILDERS:
        for call in _figure_calls((BENCH / name).read_text()):
            args = call.args
            unit = args[3].value if len(args) > 3 and isinstance(args[3], ast.Constant) else None
            target = args[4] if len(args) > 4 else next((k.value for k in call.keywords if k.arg == "target"), None)
            if unit == "s":
                assert target is None or (isinstance(target, ast.Constant) and target.value is None), (
                    f"{name}:{call.lineno} states a timing target in seconds: targets are ratios (decision 166)")


def test_every_ratio_names_figures_the_bench_builds_and_replaces_a_target_with_one():
    keys = {node.value for name in BUILDERS for node in ast.walk(ast.parse((BENCH / name).read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    for r in RATIOS:
        assert r.figure in keys, r
        assert r.was_s is None or (r.target is not None and r.target > 0), r
    assert len({r.key for r in RATIOS}) == len(RATIOS)


def test_each_target_is_its_absolute_target_over_the_yardstick_it_was_derived_from_rounded_down():
    for r in RATIOS:
        if r.target is None:
            continue
        assert r.was_s is not None and r.yardstick in DERIVED_FROM, r
        assert r.target == derived_target(r.was_s, DERIVED_FROM[r.yardstick]), r
        assert r.target <= r.was_s / DERIVED_FROM[r.yardstick], r  # never rounded up: that would flatter
    assert derived_target(0.150, 0.3623) == 0.41 and derived_target(0.1, 0.00582) == 17.0
    assert derived_target(0.5, 0.7203) == 0.69 and derived_target(1.0, 0.1) == 10.0


def test_a_tiny_recorder_run_states_its_timing_target_as_a_ratio(tmp_path):
    figs = with_ratios({f.key: f for f in recorder_bench(TINY, seed=1, ticks=3, churn=5, directory=tmp_path)["figures"]})
    assert untargeted_timings(figs) == []
    ratio = figs["recorder_tick_vs_cpu"]
    assert ratio.unit == "x" and ratio.target is not None and ratio.ok in (True, False)
    assert figs[CPU_RECORDER].runs is not None and len(figs[CPU_RECORDER].runs) == 10
    assert untargeted_timings({"t": Figure("t", "timed", 0.1, "s", 0.2)}) == ["t"]


def test_the_cpu_yardstick_does_fixed_work_and_takes_time():
    assert cpu_work(500) == cpu_work(500) > 0
    runs = cpu_yardstick(repeat=2, rows=200)
    assert len(runs) == 2 and all(x > 0 for x in runs)


async def _painted(app) -> None:
    for _ in range(2):
        await app.screen.wait_for_refresh()


async def test_the_textual_yardsticks_paint_and_switch():
    paints, renders = await table_yardstick((60, 10), _painted, rounds=1)
    assert len(paints) == len(renders) == 1 and paints[0] > 0 and renders[0] > 0
    keys = await key_yardstick((60, 10), _painted, presses=2)
    assert len(keys) == 2 and all(x > 0 for x in keys)
