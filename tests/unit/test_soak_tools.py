"""The soak's diagnostics: the stall watch names what held the event loop; the objects count names the
type that grew."""

from __future__ import annotations

import asyncio
import time

from taudash.bench.soak_memory import MemoryTrace
from taudash.bench.soak_stall import StallWatch


def _hold_the_loop(seconds: float) -> None:
    time.sleep(seconds)  # a blocking call on the loop: what a stalled dashboard does


async def test_the_stall_watch_names_the_function_that_held_the_loop():
    watch = StallWatch(threshold=0.3, interval=0.05)
    watch.start()
    await asyncio.sleep(0.2)
    _hold_the_loop(2.0)
    await asyncio.sleep(0.2)
    await watch.stop()
    report = watch.report(0.0)
    assert "_hold_the_loop" in report, report
    assert max(s.longest for s in watch.stalls.values()) >= 0.3


async def test_the_stall_watch_reports_no_stall_on_a_loop_that_keeps_running():
    watch = StallWatch(threshold=1.0, interval=0.05)
    watch.start()
    for _ in range(10):
        await asyncio.sleep(0.02)
    await watch.stop()
    assert watch.report(0.0).startswith("no stall")


class GrowingThing:
    pass


def test_the_objects_count_names_the_type_that_grew(tmp_path):
    trace = MemoryTrace(tmp_path, allocations=False)
    trace.start()
    kept = []
    trace.take(60.0)
    kept.extend(GrowingThing() for _ in range(5000))
    trace.take(120.0)
    trace.stop()
    [path] = trace.report()
    text = path.read_text()
    line = next(ln for ln in text.splitlines() if "GrowingThing" in ln)
    assert line.split()[0] == "+5000", line
    assert len(kept) == 5000


def test_a_soak_whose_process_did_not_start_says_so_in_words_and_exits_2(tmp_path, monkeypatch, capsys):
    from types import SimpleNamespace

    from taudash.bench import soak

    async def failing(*args, **kwargs):
        raise RuntimeError("taudash serve did not start:\nsyncing …")

    monkeypatch.setattr(soak, "soak", failing)
    args = SimpleNamespace(soak=1.0, fault_every=30.0, out=str(tmp_path), size="S", seed=0, output="json",
                           trace_memory=None)
    assert soak.run_soak(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("taudash bench --soak: taudash serve did not start") and f"logs in {tmp_path}" in err
    assert "Traceback" not in err
