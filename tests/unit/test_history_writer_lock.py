"""One recorder per history file (engine/history/writer_lock.py): a second one is refused with a message
naming who records, stands by, and takes over once the first lets go. Two processes:
tests/e2e/test_history_two_processes.py."""

from __future__ import annotations

import asyncio
import time

import pytest
from factories import sim_world

from taudash.engine.history import QueuedRecorder, Recorder, RecorderBusy, RecorderThread
from taudash.engine.history.writer_lock import WriterLock
from taudash.engine.session import Session
from taudash.engine.view import SourceInfo


async def eventually(pred, within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pred():
            return True
        await asyncio.sleep(0.02)
    return bool(pred())


def test_a_second_recorder_is_refused_naming_the_first_and_may_open_once_it_closed(tmp_path):
    path = tmp_path / "h.sqlite3"
    first = Recorder(path, owner="taudash serve")
    with pytest.raises(RecorderBusy) as busy:
        Recorder(path)
    text = str(busy.value)
    assert f"{path} is recorded by taudash serve (pid " in text and "records nothing while that one runs" in text
    first.close()
    assert WriterLock(path).holder() is None  # nobody holds it: no stale name left behind
    second = Recorder(path)
    assert second._writer.held
    second.close()


def test_a_refused_or_failed_open_leaves_the_lock_free(tmp_path):
    path = tmp_path / "h.sqlite3"
    path.write_text("not a database")
    with pytest.raises(Exception):  # noqa: B017 - whatever SQLite says about a file that is not one
        Recorder(path)
    lock = WriterLock(path)
    lock.acquire()  # not held by the failed recorder
    lock.release()


def test_the_dashboards_recorder_stands_by_and_takes_over(tmp_path):
    w = sim_world(seed=4)
    session = Session(w.store(), SourceInfo(type="sim"))
    path = tmp_path / "h.sqlite3"
    serve = Recorder(path, owner="taudash serve")
    thread = RecorderThread(lambda: Recorder(path), session, w.clock.datetime, period=3600)
    thread.tick()
    assert thread.recorder is None and "is recorded by taudash serve" in (thread.standby or "")
    assert thread.error is None
    serve.close()
    w.step(10)
    thread.tick()
    assert thread.recorder is not None and thread.standby is None
    thread.stop()


def test_serves_queued_recorder_says_once_that_it_stands_by_then_records(tmp_path):
    path = tmp_path / "h.sqlite3"
    dashboard = Recorder(path, owner="taudash")
    said: list[str] = []
    rec = QueuedRecorder(lambda: Recorder(path), say=said.append, retry=0.05).start()
    try:
        assert asyncio.run(eventually(lambda: rec.standby is not None))
        time.sleep(0.3)  # several retries meanwhile
        assert said == [rec.standby] and "is recorded by taudash (pid" in said[0]
        assert not rec._ready.is_set() and rec.error is None
        dashboard.close()
        assert asyncio.run(eventually(lambda: rec._ready.is_set()))
        assert rec.standby is None and said[-1] == "history: recording now (the other process stopped recording)"
    finally:
        rec.stop()
    assert WriterLock(path).holder() is None


def test_stopping_while_standing_by_returns_at_once(tmp_path):
    path = tmp_path / "h.sqlite3"
    dashboard = Recorder(path)
    rec = QueuedRecorder(lambda: Recorder(path), retry=3600).start()
    assert asyncio.run(eventually(lambda: rec.standby is not None))
    t = time.monotonic()
    rec.stop()
    assert time.monotonic() - t < 30 and not rec._thread.is_alive()
    dashboard.close()
