"""Recording beside a dashboard Session: the recorder thread's tick, its lazy open, a refused file."""

from __future__ import annotations

from factories import sim_world

from taudash.engine.history import NewerSchema, Recorder, RecorderThread
from taudash.engine.history import query as q
from taudash.engine.session import Session
from taudash.engine.view import SourceInfo


def session_of(w) -> Session:
    return Session(w.store(), SourceInfo(type="sim"))


def test_a_tick_records_the_sessions_view(tmp_path):
    w = sim_world(seed=4, arrivalsPerHour=60)
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
    again = Recorder(tmp_path / "h.sqlite3")  # stopping released the file: another recorder may open it
    assert q.summary(again.conn)["rawSamples"] > 0
    again.close()


def test_a_dashboard_closed_before_the_first_tick_leaves_no_file(tmp_path):
    w = sim_world(seed=4)
    opened = []
    thread = RecorderThread(lambda: opened.append(1) or Recorder(tmp_path / "h.sqlite3"), session_of(w),
                            w.clock.datetime, period=3600).start()
    thread.stop()
    assert not opened and not (tmp_path / "h.sqlite3").exists()


def test_a_newer_schema_stops_recording_with_a_message(tmp_path):
    w = sim_world(seed=4)

    def refuse():
        raise NewerSchema("h.sqlite3: history schema v9 was written by a newer taudash")

    thread = RecorderThread(refuse, session_of(w), w.clock.datetime, period=0.01).start()
    thread._thread.join(60)
    assert not thread._thread.is_alive()  # gave up for good instead of retrying
    assert "newer taudash" in (thread.error or "")
    thread.stop()


def test_taudash_demo_records_history_that_taudash_history_reads(tmp_path, monkeypatch, capsys):
    import asyncio
    import json
    import sqlite3

    import taudash.app
    import taudash.commands.dashboard as dashboard
    from taudash.cli import main
    from taudash.engine.history import db as hdb

    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))

    class FastThread(RecorderThread):
        def __init__(self, *a, **kw):
            super().__init__(*a, **{**kw, "period": 0.05})

    monkeypatch.setattr(dashboard, "RecorderThread", FastThread)
    path = tmp_path / "state" / "history" / f"{hdb.DEMO_CLUSTER_KEY}.sqlite3"

    def recorded() -> int:
        if not path.exists():
            return 0
        conn = sqlite3.connect(path)
        try:
            return conn.execute("SELECT count(*) FROM sample_passes").fetchone()[0]
        except sqlite3.OperationalError:  # created, schema not committed yet
            return 0
        finally:
            conn.close()

    async def run_async(self, *a, **kw):  # the dashboard "runs" until two samples are recorded
        for _ in range(600):
            if recorded() >= 2:
                return
            await asyncio.sleep(0.1)

    monkeypatch.setattr(taudash.app.TaudashApp, "run_async", run_async)
    monkeypatch.setattr(dashboard.Recorder, "for_cluster",
                        classmethod(lambda cls, key, base=None, **kw: cls(hdb.db_path(key, base), interval=1, **kw)))
    assert main(["demo", "--speed", "60"]) == 0
    assert recorded() >= 2
    assert main(["history", "summary", "--demo", "-o", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["cluster"] == "demo" and s["series"] > 0 and s["findingEvents"] > 0
    assert main(["history", "preemptions", "--demo", "--since", "2000-01-01T00:00:00Z", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # the demo snapshot carries one preemption: ctx-ablation-32k by llama-pretrain-34b, in the same queue
    assert doc["kind"] == "PreemptionLog"
    (item,) = [i for i in doc["items"] if "ctx-ablation-32k" in i["workload"]["name"]]
    assert "llama-pretrain-34b" in item["preemptor"]["name"] and item["preemptionReason"] == "InClusterQueue"
    assert item["clusterQueue"] == item["preemptor"]["clusterQueue"] == "tau-ws-train"


def test_a_failing_pass_is_kept_as_an_error_and_the_next_one_recovers(tmp_path):
    w = sim_world(seed=4)
    session = session_of(w)
    failures, errors_seen = [], []

    def flaky_view(now):
        errors_seen.append(thread.error)
        if len(failures) < 2:
            failures.append(now)
            raise RuntimeError("a rule bug")
        return Session.view(session, now)

    session.view = flaky_view
    thread = RecorderThread(lambda: Recorder(tmp_path / "h.sqlite3"), session, w.clock.datetime, period=0.01).start()
    for _ in range(3000):
        if thread.recorder is not None and thread.error is None and len(failures) == 2:
            break
        thread._stop.wait(0.01)
    assert len(failures) == 2 and thread.error is None  # it kept going after the failures
    assert errors_seen[:2] == [None, "history: RuntimeError: a rule bug"]
    assert thread._thread.is_alive()
    thread.stop()
    assert not thread._thread.is_alive()
