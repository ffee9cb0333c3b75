"""The recorder against the simulated demo cluster stepped in-process: what it writes equals what the
view derived at each tick says (samples, findings, drains, evictions, admission waits)."""

from __future__ import annotations

import sqlite3

import pytest
from factories import sim_world

from taudash.engine.history import Recorder
from taudash.engine.history import db as hdb
from taudash.engine.history import query as q
from taudash.engine.history.recorder import parse_time

GPU = "nvidia.com/gpu"


def sample(conn: sqlite3.Connection, ts: int, kind: str, name: str, metric: str, flavor: str = "",
           resource: str = "") -> tuple[bool, float | None]:
    """(found, value) of a series at the sample pass `ts`: its latest sample row at or before the pass in
    the pass's keyframe bucket (db.py: a pass writes only the values that changed)."""
    if conn.execute("SELECT 1 FROM sample_passes WHERE ts = ?", (ts,)).fetchone() is None:
        return (False, None)
    row = conn.execute(
        "SELECT s.value FROM samples s JOIN series x ON x.id = s.series_id WHERE x.kind=? AND x.name=? AND "
        "x.flavor=? AND x.resource=? AND x.metric=? AND s.ts <= ? AND s.ts >= ? ORDER BY s.ts DESC LIMIT 1",
        (kind, name, flavor, resource, metric, ts, ts // hdb.KEYFRAME_SECONDS * hdb.KEYFRAME_SECONDS)
    ).fetchone()
    return (row is not None, row[0] if row else None)


def finding_keys(view) -> set[tuple]:
    return {(f.rule, f.object.kind, f.object.namespace or "", f.object.name) for f in view.findings}


def replay_findings(conn: sqlite3.Connection, upto: float) -> set[tuple]:
    open_ = set()
    for e in q.findings_history(conn, 0, upto + 1):
        key = (e["rule"], e["kind"], e["namespace"], e["name"])
        if e["event"] == "open":
            assert key not in open_, f"opened twice: {key}"
            open_.add(key)
        else:
            assert key in open_, f"closed while not open: {key}"
            open_.remove(key)
    return open_


def test_recorded_series_and_events_equal_the_views_derived_at_each_tick(tmp_path):
    w = sim_world(seed=5, arrivalsPerHour=120, jobMinutes=[1, 4])
    rec = Recorder(tmp_path / "h.sqlite3", interval=10)
    conn = rec.conn
    ticks = []

    def tick():
        w.step(10)
        view = w.view()
        rec.record(view, w.store(), w.clock.datetime())
        now = int(w.clock.datetime().timestamp())
        ticks.append(now)
        for f in view.pool.flavors:
            for metric in ("budget", "reserved", "used", "headroom"):
                expected = getattr(f, metric).get(GPU)
                found, value = sample(conn, now, "flavor", f.name, metric, f.name, GPU)
                assert found and value == (None if expected is None else expected.as_float()), (f.name, metric)
        for cq in view.cluster_queues:
            for metric in ("pending", "reserving", "admitted"):
                assert sample(conn, now, "queue", cq.name, metric) == (True, getattr(cq, metric)), (cq.name, metric)
            found, value = sample(conn, now, "queue", cq.name, "inactive")
            assert found and value == getattr(cq, "inactive", None)
        for co in view.cohorts:
            for fl in co.flavors:
                for r in fl.resources:
                    assert sample(conn, now, "cohort", co.name, "borrowed", fl.name, r.name) == (
                        True, r.borrowed.as_float())
        teams: dict[tuple, float] = {}
        for pq in view.pool.queues:
            for flavor, res in pq.reserved.items() if pq.team else ():
                if GPU in res:
                    teams[(pq.team, flavor)] = teams.get((pq.team, flavor), 0.0) + res[GPU].as_float()
        for (team, flavor), total in teams.items():
            assert sample(conn, now, "team", team, "reserved", flavor, GPU) == (True, total)
        assert replay_findings(conn, now) == finding_keys(view)
        return view

    first = tick()
    assert first.pool.flavors and any(f.reserved.get(GPU) for f in first.pool.flavors)
    assert any(pq.team and pq.reserved for pq in first.pool.queues)  # team usage is compared, not vacuous
    for _ in range(12):
        tick()

    # Stop a queue with HoldAndDrain: its admitted work is evicted (ClusterQueueStopped), recorded once.
    w.db.patch_merge("ClusterQueue", "tau-ws-train", {"spec": {"stopPolicy": "HoldAndDrain"}})
    for _ in range(4):
        tick()
    stopped = [e for e in q.preemption_log(conn, 0, all_evictions=True) if e.reason == "ClusterQueueStopped"]
    assert stopped and {e.cluster_queue for e in stopped} == {"tau-ws-train"}
    assert all(e.team == "research" and e.cohort for e in stopped)
    evicted_now = {(wl.metadata.uid, parse_time(wl.condition("Evicted").last_transition_time))
                   for wl in w.store().list("Workload", "train")
                   if wl.condition("Evicted") is not None and wl.condition("Evicted").status == "True"}
    assert {(e.uid, e.at) for e in stopped} == {k for k in evicted_now if k[0] in {e.uid for e in stopped}}
    assert len({(e.uid, e.at) for e in stopped}) == len(stopped)  # no duplicates over several ticks

    # Finish the eval retarget: the drain recorded as started (first tick) is now cleared.
    for kind, name in (("Job", "mmlu-sweep-17"), ("Job", "prep-4"), ("RayJob", "rl-eval"),
                       ("Deployment", "web-ui"), ("RayService", "llm")):
        w.db.delete(kind, name, "eval")
    for _ in range(4):
        tick()
    drains = q.drain_history(conn, 0)
    assert [(d["workspace"], d["event"]) for d in drains][0] == ("eval", "started")
    assert drains[0]["state"] == "Blocked" and drains[0]["mode"] == "Retarget" and drains[0]["at"] == ticks[0]
    assert (drains[-1]["workspace"], drains[-1]["event"], drains[-1]["state"]) == ("eval", "cleared", "NotDraining")

    # The read API over the range: a 10 s step returns the per-tick values in order.
    start, end = ticks[0], ticks[-1] + 10
    name = first.pool.flavors[0].name
    got = q.series(conn, "flavor", name, "reserved", start, end, 10, flavor=name, resource=GPU)
    assert [ts for ts, _ in got] == ticks
    assert all(v is not None for _, v in got)
    pend = q.queue_counts(conn, "tau-ws-train", start, end, 10)["pending"]
    assert max(v for _, v in pend) > pend[0][1]  # HoldAndDrain sent admitted work back to pending

    # Admission waits: one row per admitted Workload, creation <= QuotaReserved <= Admitted.
    rows = conn.execute("SELECT uid, created, reserved, admitted, cluster_queue FROM waits").fetchall()
    assert len(rows) == len({r[0] for r in rows}) > 10
    assert all(c is None or c <= a for _, c, _, a, _ in rows)
    assert all(cq for *_, cq in rows)
    admitted = {wl.metadata.uid for wl in w.store().list("Workload") if wl.admitted}
    assert admitted <= {r[0] for r in rows}
    per_queue = q.wait_percentiles(conn, 0, 1e12)
    assert sum(v["count"] for v in per_queue.values()) == sum(1 for r in rows if r[1] is not None)
    assert all(v["p50"] <= v["p95"] for v in per_queue.values())
    rec.close()


def test_samples_are_written_at_most_once_per_interval_and_events_every_tick(tmp_path):
    w = sim_world(seed=2)
    rec = Recorder(tmp_path / "h.sqlite3", interval=10)
    written = []
    for _ in range(8):
        w.step(4)
        obs = rec.record(w.view(), w.store(), w.clock.datetime())
        written.append(obs.samples is not None)
    assert written == [True, False, False, True, False, False, True, False]  # t=4, 16, 28 (>= 10 s apart)
    stamps = [r[0] for r in rec.conn.execute("SELECT ts FROM sample_passes ORDER BY ts")]
    assert len(stamps) == 3 and all(b - a >= 10 for a, b in zip(stamps, stamps[1:], strict=False))
    rec.close()


def test_incremental_collection_sees_what_a_full_scan_sees(tmp_path):
    """The recorder reads only the Workloads the store's change feed names; a recorder that always scans
    everything (a fresh one per tick) must record the same waits and evictions."""
    w = sim_world(seed=9, arrivalsPerHour=120, jobMinutes=[1, 3])
    inc = Recorder(tmp_path / "inc.sqlite3")
    full_path = tmp_path / "full.sqlite3"
    for i in range(12):
        w.step(10)
        if i == 6:
            w.db.patch_merge("ClusterQueue", "tau-ws-eval", {"spec": {"stopPolicy": "HoldAndDrain"}})
        view, now = w.view(), w.clock.datetime()
        inc.record(view, w.store(), now)
        full = Recorder(full_path)
        full.record(view, w.store(), now)
        full.close()
    full = sqlite3.connect(full_path)
    for table in ("waits", "evictions"):
        a = sorted(inc.conn.execute(f"SELECT * FROM {table}").fetchall())
        b = sorted(full.execute(f"SELECT * FROM {table}").fetchall())
        assert a == b and a, table
    full.close()
    inc.close()


def test_a_restart_continues_open_findings_and_closes_what_went_away(tmp_path):
    w = sim_world(seed=1)
    w.step(5)
    view = w.view()
    assert view.findings
    rec = Recorder(tmp_path / "h.sqlite3")
    rec.record(view, w.store(), w.clock.datetime())
    opened = len(q.findings_history(rec.conn, 0))
    assert opened == len(finding_keys(view))
    rec.close()

    again = Recorder(tmp_path / "h.sqlite3")  # the dashboard reopened: nothing opens twice
    w.step(5)
    again.record(w.view(), w.store(), w.clock.datetime())
    assert replay_findings(again.conn, 1e12) == finding_keys(w.view())

    # a view without findings closes every open one, with its severity and message
    empty = view.model_copy(update={"findings": []})
    again.record(empty, w.store(), w.clock.datetime().timestamp() + 20)
    closes = [e for e in q.findings_history(again.conn, 0) if e["event"] == "close"]
    assert {(e["rule"], e["kind"], e["namespace"], e["name"]) for e in closes} == finding_keys(w.view())
    assert all(e["severity"] in ("critical", "warning", "info") and e["message"] for e in closes)
    assert q.open_findings(again.conn) == []
    again.close()


def test_unreadable_workspaces_keep_the_last_drain_states(tmp_path):
    from taudash.engine.store import AccessState

    w = sim_world(seed=1)
    w.step(5)
    rec = Recorder(tmp_path / "h.sqlite3")
    rec.record(w.view(), w.store(), w.clock.datetime())
    assert [d["event"] for d in q.drain_history(rec.conn, 0)] == ["started"]
    store = w.store()
    store.set_access("TauWorkspace", AccessState.FORBIDDEN, "forbidden")
    view = w.view()
    rec.record(view.model_copy(update={"workspaces": []}), store, w.clock.datetime().timestamp() + 10)
    # not "cleared": the workspaces could not be read, which says nothing about their drains
    assert [d["event"] for d in q.drain_history(rec.conn, 0)] == ["started"]
    rec.close()


@pytest.mark.parametrize("bad", ["", "../x", ".hidden", "a/b"])
def test_cluster_keys_that_are_not_file_names_are_refused(tmp_path, bad):
    from taudash.engine.history import HistoryError, db_path

    with pytest.raises(HistoryError):
        db_path(bad, tmp_path)
