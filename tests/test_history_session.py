"""Recording beside a dashboard Session: the recorder thread's tick, its lazy open, a refused file."""

from __future__ import annotations

from test_sim_world import world

from taudash.engine.history import NewerSchema, Recorder, RecorderThread
from taudash.engine.history import query as q
from taudash.engine.session import Session
from taudash.engine.view import SourceInfo


def session_of(w) -> Session:
    return Session(w.store(), SourceInfo(type="sim"))


def test_a_tick_records_the_sessions_view(tmp_path):
    w = world(seed=4, arrivalsPerHour=60)
    session = session_of(w)
    thread = RecorderThread(lambda: Recorder(tmp_path / "h.sqlite3"), session, w.clock.datetime, period=3600)
    for _ in range(3):
        w.step(10)
        thread.tick()
    view = session.view(w.clock.datetime())
    now = w.clock.datetime().timestamp()
    flavor = view.pool.flavors[0]
    got = q.series(thread.recorder.conn, "flavor", flavor.name, "reserved", now - 25, now + 5, 10, flavor=flavor.name,
                   resource="nvidia.com/gpu")
    assert [v is not None for _, v in got] == [True, True, True]
    assert got[-1][1] == flavor.reserved["nvidia.com/gpu"].as_float()
    assert len(thread.costs) == 3
    thread.stop()
    assert q.summary(Recorder(tmp_path / "h.sqlite3").conn)["rawSamples"] > 0


def test_a_dashboard_closed_before_the_first_tick_leaves_no_file(tmp_path):
    w = world(seed=4)
    opened = []
    thread = RecorderThread(lambda: opened.append(1) or Recorder(tmp_path / "h.sqlite3"), session_of(w),
                            w.clock.datetime, period=3600).start()
    thread.stop()
    assert not opened and not (tmp_path / "h.sqlite3").exists()


def test_a_newer_schema_stops_recording_with_a_message(tmp_path):
    w = world(seed=4)

    def refuse():
        raise NewerSchema("h.sqlite3: history schema v9 was written by a newer taudash")

    thread = RecorderThread(refuse, session_of(w), w.clock.datetime, period=0.01).start()
    thread._thread.join(60)
    assert not thread._thread.is_alive()  # gave up for good instead of retrying
    assert "newer taudash" in (thread.error or "")
    thread.stop()
