"""The recorder's bench phase (taudash/bench/history.py) on a tiny generated fleet: what it measures
is real (rows written per pass, changes applied), its figures are well-formed; never timings."""

from __future__ import annotations

import json

from taudash.bench.generate import Size
from taudash.bench.history import main, recorder_bench

TINY = Size("T", 20, 300, 150, 6, 2, 2, 4)


def test_recorder_bench_writes_the_changed_samples_and_the_churns_events(tmp_path):
    r = recorder_bench(TINY, seed=3, ticks=12, churn=20, directory=tmp_path)
    # every pass is a sample pass; it writes what changed (the churn moves some values), every value
    # at a keyframe pass
    assert r["series"] > 0 and r["series"] * r["keyframePasses"] < r["sampleRowsPerTick"] * 12
    assert r["sampleRowsPerTick"] < r["series"]
    ch = r["changes"]
    assert sum(ch.values()) == 12 * 20 and ch["admit"] > 0 and ch["evict"] > 0
    # every admission is one wait row and every preemption one eviction row (findings may add more)
    assert r["eventRowsPerTick"] * 12 >= ch["admit"] + ch["evict"]
    assert r["bytesPerTick"] > 0 and r["projectedBytesPerDay"] == r["bytesPerTick"] * 8640
    keys = {f.key for f in r["figures"]}
    assert keys == {"recorder_first_s", "recorder_tick_s", "recorder_tick_p95_s", "recorder_growth_mib_day",
                    "yardstick_cpu_recorder_s"}
    assert all(f.value is not None and f.value > 0 for f in r["figures"])
    assert list(tmp_path.iterdir()) == []  # the bench's database is gone afterwards


def test_a_quiet_fleet_writes_no_events_and_samples_only_at_keyframes(tmp_path):
    r = recorder_bench(TINY, seed=3, ticks=40, churn=0, directory=tmp_path)  # 400 s: one keyframe at least
    assert r["keyframePasses"] >= 1
    assert r["eventRowsPerTick"] == 0 and r["sampleRowsPerTick"] * 40 == r["series"] * r["keyframePasses"]


def test_the_module_runs_alone_and_prints_json(capsys):
    assert main(["--size", "S", "--ticks", "3", "--churn", "5"]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert doc["size"] == "S" and doc["ticks"] == 3 and doc["figures"]["recorder_tick_s"]["target"] is None
    assert doc["figures"]["recorder_tick_vs_cpu"]["unit"] == "x" and doc["figures"]["recorder_tick_vs_cpu"]["pass"] in (
        True, False)
    assert "[bench" in out.err
