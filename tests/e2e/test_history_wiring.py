"""History wired into the programs: the sparklines start from the recorded file after a restart, and
`taudash serve` records continuously (collect in its tick hook, write on the recorder's thread)."""

from __future__ import annotations

import asyncio
import sqlite3

from tools.history_fixture import GPU, NOW, T, build, demo_session, sample_values
from tools.waiting import eventually

from taudash.compose import seed_from_history
from taudash.engine.history import db as hdb
from taudash.engine.history import query
from taudash.engine.history.queued import QueuedRecorder
from taudash.engine.history.reader import HistoryReader
from taudash.engine.history.recorder import Recorder
from taudash.engine.session import HISTORY_BUCKETS, HISTORY_WINDOW

A100 = "taugrid-gpu-a100-80gb"


def expected_at(end: float) -> float:
    """The fixture's reserved GPUs of the a100 flavor at the last 10-second sample at or before `end`."""
    return sample_values(int(end) // 10 * 10)[("flavor", A100, A100, GPU, "reserved")]


# --- sparklines seeded from the recorder -----------------------------------------------------------------


def test_sparklines_start_from_the_recorded_history_after_a_restart(tmp_path):
    path = build(tmp_path / "h.sqlite3")
    fresh = demo_session()
    spark = fresh.frame(NOW).history[A100]
    assert spark[-1] == 13.0 and all(v is None for v in spark[:-1])  # a new session knows only now

    restarted = demo_session(HistoryReader(path))
    seed_from_history(restarted, NOW)
    assert restarted.history_reader is not None
    spark = restarted.frame(NOW).history[A100]
    step = HISTORY_WINDOW / HISTORY_BUCKETS
    ends = [T - HISTORY_WINDOW + step * (i + 1) for i in range(HISTORY_BUCKETS)]
    assert list(spark[:-1]) == [expected_at(e) for e in ends[:-1]]
    assert len(set(spark[:-1])) > 1  # the recorded wave, not a flat line
    assert spark[-1] == 13.0  # then live: the view's own sample at NOW


def test_only_the_window_is_seeded_and_live_samples_stay_last(tmp_path):
    path = build(tmp_path / "h.sqlite3")
    reader = HistoryReader(path)
    seeded = reader.recent_reserved(T, HISTORY_WINDOW)
    assert seeded and all(T - HISTORY_WINDOW <= ts <= T for ts, _ in seeded)
    assert set(seeded[0][1]) == {"taugrid-gpu-a100-80gb", "taugrid-gpu-gb200-186gb", "taugrid-gpu-h100-80gb",
                                 "taugrid-gpu-h200-141gb"}
    session = demo_session()
    session.frame(NOW)  # a live sample first (at NOW)
    session.seed_history(seeded)
    assert session.frame(NOW).history[A100][-1] == 13.0  # the recorded sample at NOW does not replace it
    # a file recorded long ago seeds nothing: the sparkline stays unknown, never zero
    later = demo_session(reader)
    seed_from_history(later, NOW.replace(day=1, month=12))
    assert all(v is None for v in later.frame(NOW.replace(day=1, month=12)).history[A100][:-1])


def test_a_cluster_never_recorded_seeds_nothing_and_creates_no_file(tmp_path):
    session = demo_session(HistoryReader(tmp_path / "none.sqlite3"))
    seed_from_history(session, NOW)
    assert all(v is None for v in session.frame(NOW).history[A100][:-1])
    assert not (tmp_path / "none.sqlite3").exists()


def test_the_reader_never_writes(tmp_path):
    path = build(tmp_path / "h.sqlite3")
    reader = HistoryReader(path)
    assert reader.available()
    conn = reader._connection()
    try:
        conn.execute("DELETE FROM samples")
    except sqlite3.OperationalError as exc:
        assert "readonly" in str(exc) or "read-only" in str(exc) or "query_only" in str(exc).lower()
    else:
        raise AssertionError("a read-only reader deleted rows")
    reader.close()


# --- the queued recorder (serve's tick hook) ---------------------------------------------------------------


def test_the_hook_collects_and_the_writer_thread_writes(tmp_path):
    path = tmp_path / "q.sqlite3"
    session = demo_session()
    rec = QueuedRecorder(lambda: Recorder(path)).start()
    try:
        assert asyncio.run(eventually(lambda: rec._ready.is_set()))
        rec.hook(session.view(NOW), session.store, NOW)
        assert asyncio.run(eventually(lambda: rec.writes == 1))
    finally:
        rec.stop()
    conn = hdb.connect(path, write=False)
    s = query.summary(conn)
    assert s["rawSamples"] > 0 and s["waits"] > 0 and s["evictions"] == 2
    conn.close()


def test_a_newer_schema_is_never_written_and_said_once(tmp_path):
    path = tmp_path / "newer.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {hdb.LATEST + 1}")
    conn.close()
    said: list[str] = []
    rec = QueuedRecorder(lambda: Recorder(path), say=said.append).start()
    assert asyncio.run(eventually(lambda: rec.stopped))
    session = demo_session()
    rec.hook(session.view(NOW), session.store, NOW)  # does nothing
    rec.stop()
    assert rec.writes == 0 and len(said) == 1 and "newer taudash" in said[0]


# --- taudash serve records -------------------------------------------------------------------------------


async def test_serve_on_a_simulator_records_history_and_writes_nothing_to_the_cluster(tmp_path, monkeypatch):
    from taudash.cli import parse_args
    from taudash.serve.service import Serve
    from taudash.sim.server import SimServer

    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))
    async with SimServer() as sim:
        serve = Serve(parse_args(["serve", "--kubeconfig", str(sim.kubeconfig), "--interval", "0.2"]), None)
        task = asyncio.ensure_future(serve.main())
        try:
            assert await eventually(lambda: serve.recorder is not None and serve.recorder.writes >= 3, within=120)
        finally:
            serve._stop.set()
            assert await asyncio.wait_for(task, 60) == 0
        assert sum(sim.api.writes.values()) == 0, sim.api.writes
    files = list((tmp_path / "state" / "history").glob("*.sqlite3"))
    assert len(files) == 1 and files[0].name.startswith("taudash-sim-")
    assert serve.recorder.stopped and serve.recorder.hook not in serve.on_tick
    reader = HistoryReader(files[0])
    conn = reader._connection()
    s = query.summary(conn)
    assert s["rawSamples"] > 0 and s["series"] > 0 and s["waits"] > 0
    names = {n["name"] for n in query.series_names(conn, "flavor")}
    assert A100 in names
    reader.close()


async def test_serve_on_a_snapshot_records_nothing(tmp_path, monkeypatch):
    from tools.history_fixture import DEMO

    from taudash.cli import parse_args
    from taudash.serve.service import Serve

    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))
    serve = Serve(parse_args(["serve", "--snapshot", str(DEMO), "--interval", "0.01"]), None)
    ticks = []
    loop = asyncio.get_running_loop()

    def count(view, store, now):
        ticks.append(now)
        if len(ticks) == 3:
            loop.call_soon_threadsafe(serve._stop.set)

    serve.on_tick.append(count)
    assert await asyncio.wait_for(serve.main(), 120) == 0
    assert serve.recorder is None and not (tmp_path / "state" / "history").exists()


# --- the dashboard: recording and the History screen on one live cluster ---------------------------------


async def test_the_history_screen_shows_what_the_dashboards_recorder_writes(tmp_path):
    from datetime import UTC, datetime

    from tools.livedash import close, dashboard, live_session

    from taudash.engine.history.recorder import RecorderThread
    from taudash.screens.history import NO_HISTORY, HistoryScreen
    from taudash.screens.kit.messages import Navigate
    from taudash.sim.server import SimServer

    path = tmp_path / "live.sqlite3"
    async with SimServer() as sim:
        session, source = await live_session(sim, history_reader=HistoryReader(path))
        try:
            # as taudash/compose.py wires it: the reader first (no file yet), then the recorder
            seed_from_history(session, datetime.now(UTC))
            app = dashboard(session)
            async with app.run_test(size=(120, 36)):
                app.post_message(Navigate("history"))
                assert await eventually(lambda: isinstance(app.screen, HistoryScreen) and app.screen.loaded)
                screen = app.screen
                assert NO_HISTORY in str(screen.query_one("#hist-none").render())
                assert not path.exists()  # the reader created nothing
                recorder = RecorderThread(lambda: Recorder(path, interval=0.5), session, lambda: datetime.now(UTC),
                                          period=0.2).start()
                try:
                    # the recorder writes while the screen reads (read-only, WAL); a new bucket re-reads
                    assert await eventually(lambda: screen.loaded and screen.data is not None
                                            and not screen.data.empty, within=60)
                    assert await eventually(lambda: screen.query_one("#hist-data").display)
                    flavors = {f.name for f in screen.data.flavors}
                    assert A100 in flavors
                    a100 = next(f for f in screen.data.flavors if f.name == A100)
                    assert any(v is not None for _, v in a100.budget)
                finally:
                    recorder.stop()
                assert recorder.error is None
        finally:
            await close(source)
