"""What-if predictions kept beside the history and held against it (engine/history/whatif.py): the Workload
Kueue made for the object is found by name and time, and its flavor, wait and preemptions compared."""

from __future__ import annotations

from datetime import datetime

from factories import whatif_prediction

from taudash.engine.history import db as hdb
from taudash.engine.history import whatif

T0 = datetime.fromisoformat("2026-11-30T09:00:00+00:00").timestamp()
VICTIM_MSG = ("Preempted to accommodate a workload (UID: uid-mine, JobUID: j) due to prioritization in the "
              "ClusterQueue; preemptor path: /a; preemptee path: /a")


def history(tmp_path, *waits: tuple, evictions: tuple = ()):
    conn = hdb.connect(tmp_path / "h.sqlite3")
    for w in waits:
        conn.execute("INSERT INTO waits (uid, namespace, name, queue, cluster_queue, team, flavor, created, reserved, "
                     "admitted) VALUES (?, ?, ?, 'jobqueue', 'tau-ws-train', 'research', ?, ?, ?, ?)", w)
    for e in evictions:
        conn.execute("INSERT INTO evictions (uid, at, namespace, name, cluster_queue, team, reason, message) "
                     "VALUES (?, ?, 'train', ?, 'tau-ws-train', 'research', ?, ?)", e)
    conn.commit()
    return conn


def test_record_and_load_keep_predictions_per_cluster(tmp_path):
    whatif.record(whatif_prediction("b2"), "prod-1", tmp_path)
    whatif.record(whatif_prediction("a1", created="2026-11-30T08:00:00+00:00"), "prod-1", tmp_path)
    whatif.record(whatif_prediction("c3"), "other", tmp_path)
    assert [d["metadata"]["id"] for d in whatif.load_all("prod-1", tmp_path)] == ["a1", "b2"]  # oldest first
    assert (tmp_path / "whatif" / "prod-1" / "a1.json").stat().st_mode & 0o777 == 0o600
    assert whatif.load_all("nobody", tmp_path) == []


def test_a_prediction_that_came_true(tmp_path):
    conn = history(tmp_path, ("uid-mine", "train", "job-try-me-ab12c", "h100", T0 + 5, T0 + 10, T0 + 10),
                   evictions=(("uid-v", T0 + 8, "victim-wl", "Preempted", VICTIM_MSG),))
    doc = whatif_prediction("p1", preempts=[("train", "victim-wl")])
    actual = whatif.actual_of(conn, doc, T0)
    assert actual is not None and actual["workload"] == "job-try-me-ab12c" and actual["waitSeconds"] == 5.0
    out = whatif.compare(doc, actual)
    assert out["match"] == {"flavor": True, "startsNow": True, "waitInInterval": None, "preempts": True}


def test_a_prediction_that_was_wrong(tmp_path):
    conn = history(tmp_path, ("uid-mine", "train", "job-try-me-ab12c", "a100", T0 + 5, T0 + 3605, T0 + 3605))
    doc = whatif_prediction("p1", starts_now=False, interval=(60.0, 600.0), fork_wait=300.0,
                            preempts=[("train", "victim-wl")])
    out = whatif.compare(doc, whatif.actual_of(conn, doc, T0))
    assert out["match"] == {"flavor": False, "startsNow": True, "waitInInterval": False, "preempts": False}
    assert out["actual"]["startedNow"] is False and out["actual"]["waitSeconds"] == 3600.0
    assert out["predicted"]["interval"] == [60.0, 600.0] and out["predicted"]["waitSeconds"] == 300.0


def test_no_recorded_workload_is_not_seen_yet_never_a_guess(tmp_path):
    conn = history(tmp_path,
                   ("u1", "eval", "job-try-me-ab12c", "h100", T0 + 5, T0 + 6, T0 + 6),  # another namespace
                   ("u2", "train", "job-try-me-2-ab12c", "h100", T0 + 5, T0 + 6, T0 + 6),  # another Job's name
                   ("u3", "train", "job-try-me-ab12c", "h100", T0 - 600, T0 + 6, T0 + 6))  # made before it
    doc = whatif_prediction("p1")
    assert whatif.actual_of(conn, doc, T0) is None
    out = whatif.compare(doc, None)
    assert out["actual"] is None and out["match"] is None and out["predicted"]["flavor"] == "h100"


def test_a_workload_manifest_matches_by_its_own_name(tmp_path):
    conn = history(tmp_path, ("u1", "train", "my-wl", "h100", T0 + 1, T0 + 2, T0 + 2))
    assert whatif.actual_of(conn, whatif_prediction("p", ("Workload", "train", "my-wl")), T0)["uid"] == "u1"
    assert whatif.actual_of(conn, whatif_prediction("p", ("Job", "train", "my-wl")), T0) is None


def test_the_history_window_holds_the_predictions_made_in_its_range(tmp_path):
    from taudash.engine.history.reader import HistoryReader

    conn = history(tmp_path, ("uid-mine", "train", "job-try-me-ab12c", "h100", T0 + 5, T0 + 10, T0 + 10))
    conn.close()
    whatif.record(whatif_prediction("in1"), "prod-1", tmp_path)  # at T0: came true
    whatif.record(whatif_prediction("old", created="2026-11-30T07:00:00+00:00"), "prod-1", tmp_path)
    reader = HistoryReader(tmp_path / "h.sqlite3", "prod-1", tmp_path)
    try:
        window = reader.window(T0 + 1800, 3600)
        assert window is not None
        assert [i["id"] for i in window.whatif] == ["in1"]  # the one made before the range is not in it
        assert window.whatif[0]["match"] == {"flavor": True, "startsNow": True, "waitInInterval": None,
                                             "preempts": True}
        # a reader that knows no cluster key reads no predictions and keeps none
        keyless = HistoryReader(tmp_path / "h.sqlite3")
        try:
            assert keyless.window(T0 + 1800, 3600).whatif == []
            assert keyless.keep_prediction(whatif_prediction("x")) is None
        finally:
            keyless.close()
        assert reader.keep_prediction(whatif_prediction("new1")) == tmp_path / "whatif" / "prod-1" / "new1.json"
    finally:
        reader.close()
