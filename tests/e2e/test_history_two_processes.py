"""A dashboard and `taudash serve` recording one cluster on one host: one of them writes the history file at a
time, the other stands by and takes over when it stops — never an IntegrityError, nothing recorded twice
(engine/history/writer_lock.py; docs/decisions.md, decision 111). `taudash serve` runs as a real process
(twice: before and after the dashboard); this process is the dashboard's side: a live session and the
dashboard's recorder thread."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from tools.livedash import close, live_session
from tools.waiting import eventually

from taudash.engine.history import Recorder, RecorderThread, cluster_key
from taudash.engine.history import db as hdb
from taudash.engine.history.writer_lock import WriterLock
from taudash.sim.server import SimServer


class Serve:
    def __init__(self, sim: SimServer, state: Path, log: Path) -> None:
        self.sim, self.state, self.log = sim, state, log
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> Serve:
        fh = await asyncio.to_thread(open, self.log, "wb")
        try:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "taudash.cli", "serve", "--kubeconfig", str(self.sim.kubeconfig),
                "--interval", "0.5", stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                env={**os.environ, "TAUDASH_STATE_DIR": str(self.state)})
        finally:
            fh.close()
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    async def stop(self) -> int | None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.proc.wait(), 60)


def holder(path: Path) -> int | None:
    who = WriterLock(path).holder()
    return int(who["pid"]) if who and isinstance(who.get("pid"), int) else None  # type: ignore[arg-type]


def passes(path: Path) -> list[int]:
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT ts FROM sample_passes ORDER BY ts")]
    except sqlite3.OperationalError:  # created, schema not committed yet
        return []
    finally:
        conn.close()


def replayed_findings(path: Path) -> tuple[set[tuple], set[tuple]]:
    """(findings open by replaying the events — each opened once, closed only while open —, open_findings)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    open_: set[tuple] = set()
    for event, *key in conn.execute("SELECT event, rule, kind, namespace, name FROM finding_events ORDER BY id"):
        k = tuple(key)
        if event == "open":
            assert k not in open_, f"opened twice: {k}"
            open_.add(k)
        else:
            assert k in open_, f"closed while not open: {k}"
            open_.remove(k)
    stored = set(conn.execute("SELECT rule, kind, namespace, name FROM open_findings"))
    conn.close()
    return open_, stored


def problems(log: str) -> list[str]:
    return [ln for ln in log.splitlines() if "Error" in ln or ("history:" in ln and "is recorded by" not in ln
                                                             and "recording now" not in ln)]


async def test_a_dashboard_and_serve_record_one_cluster_one_at_a_time(tmp_path):
    state = tmp_path / "state"
    async with SimServer(simulate=True, speed=30.0, seed=3) as sim:
        first = await Serve(sim, state, tmp_path / "serve-1.log").start()
        session, source = await live_session(sim)
        path = hdb.db_path(cluster_key(source.target.context, source.target.server), state)
        thread: RecorderThread | None = None
        try:
            # serve records first; the dashboard's recorder stands by, naming it
            assert await eventually(lambda: holder(path) == first.pid and len(passes(path)) >= 1, within=120), \
                first.text()
            thread = RecorderThread(lambda: Recorder(path), session, lambda: datetime.now(UTC), period=0.2).start()
            assert await eventually(lambda: thread.standby is not None, within=60)
            assert f"is recorded by taudash serve (pid {first.pid} since" in thread.standby
            by_serve = len(passes(path))

            # serve stops: the dashboard takes over and its samples follow serve's
            assert await first.stop() == 0
            assert await eventually(lambda: thread.recorder is not None and holder(path) == os.getpid(), within=60)
            assert await eventually(lambda: len(passes(path)) > by_serve, within=60)
            assert problems(first.text()) == [] and thread.error is None

            # a second serve finds the dashboard recording, says so once, and takes over when it stops
            second = await Serve(sim, state, tmp_path / "serve-2.log").start()
            assert await eventually(lambda: "is recorded by" in second.text(), within=120), second.text()
            assert f"(pid {os.getpid()} since" in second.text() and holder(path) == os.getpid()
            by_dashboard = len(passes(path))
            thread.stop()
            thread = None
            assert await eventually(lambda: holder(path) == second.pid and "recording now" in second.text(), within=60)
            assert await eventually(lambda: len(passes(path)) > by_dashboard, within=60)
            assert await second.stop() == 0
            assert problems(second.text()) == [] and second.text().count("is recorded by") == 1
        finally:
            if thread is not None:
                thread.stop()
            await close(source)
    # one history, written by three recorders in turn: passes in order, every finding opened once
    stamps = passes(path)
    assert stamps == sorted(set(stamps)) and len(stamps) >= 3
    replayed, stored = replayed_findings(path)
    assert replayed == stored and stored
    assert holder(path) is None  # the last one let go
