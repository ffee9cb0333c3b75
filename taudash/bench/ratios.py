"""Timing targets as ratios to a yardstick measured in the same run (decision 166).

An absolute target in milliseconds passes or fails with the CPU the run lands on. Each timed figure
with a target is judged instead by its ratio to a yardstick figure of the same run (taudash/bench/
yardstick.py, or the raw decode of the same pages): the ratio figure carries the target and decides
pass; the absolute figure keeps its key and value (no target, the documented absolute target it
replaces in its note). Each target is the absolute target over its yardstick's median in three quiet L
runs of this machine kind (decision 175, the formula of decision 167; docs/benchmarks.md, "Ratio targets
from quiet L runs"): a run passes a ratio exactly when it would meet the absolute target on such a machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from taudash.bench.measure import Figure, median


@dataclass(frozen=True)
class Ratio:
    figure: str  # the absolute figure's key
    yardstick: str  # the yardstick figure's key
    key: str  # the ratio figure's key
    target: float | None  # the ratio must be ≤ this; None: reported only
    was_s: float | None = None  # the absolute target (s) this replaces: information only
    paired: bool = False  # both carry runs measured in alternation: the ratio is the median of per-pair ratios


# Yardstick figure keys (the figures themselves are added by run.py and history.py).
DECODE = "yardstick_decode_s"  # orjson over the synced pages, alternated with the full derivations
TABLE_PAINT = "yardstick_table_paint_s"  # bare Textual app: a screen with a full DataTable pushed → painted
TABLE_RENDER = "yardstick_table_render_s"  # the same table, every visible cell changed → painted
KEY = "yardstick_key_s"  # bare Textual app: key → the other of two trivial screens painted
CPU_LOAD = "yardstick_cpu_load_s"  # the fixed loop, just before and after the load phase
CPU_RECORDER = "yardstick_cpu_recorder_s"  # the fixed loop, just before and after the recorder's passes

SHORT = {DECODE: "raw decode", TABLE_PAINT: "bare DataTable paint", TABLE_RENDER: "bare DataTable re-render",
         KEY: "bare key → screen", CPU_LOAD: "CPU loop", CPU_RECORDER: "CPU loop"}

# The yardsticks (s) the targets were derived from (decision 175): their medians in three quiet L runs of
# this machine kind (2 cores; docs/benchmarks.md, "Ratio targets from quiet L runs"), except the decode, which
# grows with the fleet: its target keeps session 4's own L pair (500 ms derivation target, 720.3 ms decode in
# the same runs). The bare-app and CPU-loop yardsticks hold none of taudash's code.
DERIVED_FROM = {DECODE: 0.7203, TABLE_PAINT: 0.058537, TABLE_RENDER: 0.051156, KEY: 0.002014, CPU_LOAD: 0.001840,
                CPU_RECORDER: 0.002368}


def derived_target(was_s: float, yardstick_s: float) -> float:
    """The absolute target over the yardstick, rounded down to two significant figures (a rounding that
    flatters is worse than a miss)."""
    x = was_s / yardstick_s
    scale = 10.0 ** (math.floor(math.log10(x)) - 1)
    return round(math.floor(x / scale + 1e-9) * scale, 10)


# Targets: derived_target(was_s, DERIVED_FROM[yardstick]), written out (tests/unit/test_bench_ratios.py checks).
RATIOS: tuple[Ratio, ...] = (
    Ratio("derive_full_s", DECODE, "derive_full_vs_decode", 0.69, 0.5, paired=True),
    Ratio("session_first_view_s", DECODE, "session_first_view_vs_decode", None),
    Ratio("first_paint_max_s", TABLE_PAINT, "first_paint_vs_table", 2.5, 0.150),
    Ratio("switch_max_s", TABLE_PAINT, "switch_vs_table", 2.5, 0.150),
    Ratio("tick_render_max_s", TABLE_RENDER, "tick_render_vs_table", 0.58, 0.030),
    Ratio("update_p99_s", CPU_LOAD, "update_p99_vs_cpu", 5.4, 0.010),
    Ratio("key_p95_s", KEY, "key_p95_vs_key", 49.0, 0.100),
    Ratio("tick_under_load_s", TABLE_RENDER, "tick_under_load_vs_table", 0.58, 0.030),
    Ratio("queue_first_paint_s", TABLE_PAINT, "queue_first_paint_vs_table", 2.5, 0.150),
    Ratio("queue_tick_s", TABLE_RENDER, "queue_tick_vs_table", 0.58, 0.030),
    Ratio("queue_key_p95_s", KEY, "queue_key_p95_vs_key", 49.0, 0.100),
    Ratio("recorder_tick_s", CPU_RECORDER, "recorder_tick_vs_cpu", 2.1, 0.005),
)


def ratio_figure(measured: Figure, yardstick: Figure, r: Ratio) -> Figure:
    """`measured` over `yardstick`, judged by `r.target`. Paired runs give per-pair ratios (their median
    is the value); otherwise the figure over the yardstick's median."""
    note = f"{measured.key} / {yardstick.key}"
    label = f"{measured.label.split(' (')[0]} / {SHORT.get(yardstick.key, yardstick.key)}"
    if r.paired and measured.runs and yardstick.runs and len(measured.runs) == len(yardstick.runs):
        runs = [m / y for m, y in zip(measured.runs, yardstick.runs, strict=True) if y > 0]
        return Figure.of_runs(r.key, label, runs, "x", r.target,
                              note=f"{note}, {len(runs)} alternated pairs")
    base = yardstick.value
    value = measured.value / base if measured.value is not None and base else None
    return Figure(r.key, label, value, "x", r.target, note=note)


def with_ratios(figs: dict[str, Figure], ratios: tuple[Ratio, ...] = RATIOS) -> dict[str, Figure]:
    """The figures with each ratio right after the figure it judges (both figures present; a missing one
    skips its ratio). The absolute figure loses its target: the ratio decides pass."""
    by_figure = {r.figure: r for r in ratios}
    out: dict[str, Figure] = {}
    for key, f in figs.items():
        out[key] = f
        r = by_figure.get(key)
        if r is None or r.yardstick not in figs:
            continue
        f.target = None
        if r.target is not None and r.was_s is not None:
            f.note = "; ".join(x for x in (f.note, f"judged by {r.key} ≤ {r.target:g}× (was ≤ {r.was_s * 1000:g} ms)")
                               if x)
        out[r.key] = ratio_figure(f, figs[r.yardstick], r)
    return out


def untargeted_timings(figs: dict[str, Figure]) -> list[str]:
    """Keys of timed figures (unit s) that still carry a target of their own: none should."""
    return [k for k, f in figs.items() if f.unit == "s" and f.target is not None]


def yardstick(key: str, label: str, runs: list[float]) -> Figure:
    """A yardstick figure: the median of its runs, which are kept (their spread shows how steady it was)."""
    return Figure.of_runs(key, label, runs, "s", note=f"yardstick, median of {len(runs)}" if median(runs) else "")


__all__ = ["DERIVED_FROM", "RATIOS", "Ratio", "derived_target", "ratio_figure", "untargeted_timings", "with_ratios", "yardstick"]
