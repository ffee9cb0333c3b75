"""The recorder writes a sample only when the value changed (db.py, KEYFRAME_SECONDS): every value at a
keyframe bucket's first pass, then the changes, a NULL when a series ends, one `sample_passes` row per
pass. What is read back is every pass's value, as if every value had been written at every pass."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

from taudash.engine.history import Recorder
from taudash.engine.history import db as hdb
from taudash.engine.history import query as q
from taudash.engine.history.recorder import Observation

K = hdb.KEYFRAME_SECONDS
T0 = 1_796_000_000 // K * K  # a keyframe bucket's start
A = ("queue", "a", "", "", "pending")
B = ("queue", "b", "", "", "pending")


def rows(rec: Recorder) -> int:
    return rec.conn.execute("SELECT count(*) FROM samples").fetchone()[0]


def value_at(rec: Recorder, key: tuple, ts: int) -> float | None:
    """The series' value at the pass `ts`, through the read API (a 10 s bucket holding that pass only)."""
    [(_, v)] = q.series(rec.conn, key[0], key[1], key[4], ts, ts + 10, 10, flavor=key[2], resource=key[3], agg="last")
    return v


def record(rec: Recorder, ts: int, samples: dict) -> None:
    rec.write(Observation(now=ts, samples=samples))


def test_unchanged_values_are_not_written_again_and_read_back_at_every_pass(tmp_path):
    rec = Recorder(tmp_path / "h.sqlite3")
    passes = [(T0, {A: 1.0, B: 5.0}), (T0 + 10, {A: 1.0, B: 5.0}), (T0 + 20, {A: 2.0, B: 5.0}),
              (T0 + 30, {A: 2.0}), (T0 + 40, {A: 2.0, B: 7.0})]
    written = []
    for ts, samples in passes:
        before = rows(rec)
        record(rec, ts, samples)
        written.append(rows(rec) - before)
    assert written == [2, 0, 1, 1, 1]  # all, nothing, A changed, B ended (a NULL), B is back
    for ts, samples in passes:
        assert value_at(rec, A, ts) == samples.get(A)
        assert value_at(rec, B, ts) == samples.get(B), ts  # None where B had no value: never carried over
    assert q.summary(rec.conn)["samplePasses"] == len(passes)
    rec.close()


def test_a_new_keyframe_bucket_writes_every_value_and_a_gap_carries_nothing(tmp_path):
    rec = Recorder(tmp_path / "h.sqlite3")
    record(rec, T0 + K - 10, {A: 1.0, B: 5.0})
    before = rows(rec)
    record(rec, T0 + K, {A: 1.0, B: 5.0})  # unchanged, but the first pass of the next bucket
    assert rows(rec) - before == 2
    # no pass between: the read shows a gap there, not the last value
    assert q.series(rec.conn, "queue", "a", "pending", T0 + K + 10, T0 + K + 40, 10, agg="last") == [
        (T0 + K + 10, None), (T0 + K + 20, None), (T0 + K + 30, None)]
    rec.close()


def test_a_recorder_taking_over_mid_bucket_ends_what_the_last_one_left_open(tmp_path):
    """A restart, or another process taking over the file (writer_lock.py): its first pass has no memory of
    what was written, so a series the last recorder left holding a value and that is gone now gets its NULL."""
    path = tmp_path / "h.sqlite3"
    first = Recorder(path)
    record(first, T0 + 10, {A: 1.0, B: 5.0})
    first.close()
    again = Recorder(path)
    record(again, T0 + 20, {A: 1.0})  # the same bucket; B went away while nobody recorded
    assert value_at(again, B, T0 + 10) == 5.0
    assert value_at(again, B, T0 + 20) is None
    assert value_at(again, A, T0 + 20) == 1.0
    record(again, T0 + 30, {A: 1.0})
    assert value_at(again, B, T0 + 30) is None
    again.close()


def test_a_reopened_recorder_samples_an_interval_after_the_last_pass(tmp_path):
    path = tmp_path / "h.sqlite3"
    first = Recorder(path, interval=10)
    record(first, T0, {A: 1.0})
    record(first, T0 + 10, {A: 1.0})  # no row written, a pass all the same
    first.close()
    again = Recorder(path, interval=10)
    assert again._last_sample == T0 + 10
    again.close()


class _Q:
    def __init__(self, v: float) -> None:
        self.v = v
        self.value = Decimal(str(v))

    def as_float(self) -> float:
        return self.v


def _view(flavors, queues, cohorts, team_queues):
    from types import SimpleNamespace as NS

    return NS(pool=NS(flavors=flavors, queues=team_queues), cluster_queues=queues, cohorts=cohorts)


def _flavor(name, used):
    from types import SimpleNamespace as NS

    return NS(name=name, budget={"gpu": _Q(8)}, reserved={"gpu": _Q(used)}, used={"gpu": _Q(used)}, headroom={})


def _cq(name, pending):
    from types import SimpleNamespace as NS

    return NS(name=name, pending=pending, reserving=1, admitted=1, inactive=None)


def _cohort(name, borrowed):
    from types import SimpleNamespace as NS

    return NS(name=name, flavors=[NS(name="h100", resources=[NS(name="gpu", borrowed=_Q(borrowed))])])


class _Row(SimpleNamespace):
    """A pool queue row (a subclass: weakly referable, as the view's rows are)."""


def _team_queue(team, used, name=None):
    return _Row(team=team, cluster_queue=name or f"tau-ws-{team}-{used}", reserved={"h100": {"gpu": _Q(used)}},
              used={"h100": {"gpu": _Q(used)}})


def test_sample_values_part_by_part_equal_the_whole_conversion_and_reuse_unchanged_parts():
    from taudash.engine.history.recorder import SampleValues, view_samples

    values = SampleValues()
    fl, qa, qb, co = _flavor("h100", 2), _cq("a", 3), _cq("b", 0), _cohort("c", 1)
    ta1, ta2, tb = _team_queue("ml", 1), _team_queue("ml", 2), _team_queue("web", 4)
    passes = [
        _view([fl], [qa, qb], [co], [ta1, ta2, tb]),
        _view([fl], [qa, _cq("b", 5)], [co], [ta1, ta2, tb]),  # one queue replaced
        _view([fl], [qa], [], [ta1, _team_queue("ml", 7), tb]),  # a queue and the cohort gone, a team's queue new
        _view([fl], [qa, _cq("b", 1)], [_cohort("c", 2)], [ta1]),  # back again; a team gone, one of ml's gone
        _view([], [], [], []),  # nothing at all
    ]
    for view in passes:
        assert values(view) == view_samples(view)
    # A part whose objects are the same ones as the last pass keeps its values without a conversion:
    view = _view([fl], [qa], [], [ta1])
    assert values(view) == view_samples(view)
    fl.used = {"gpu": _Q(5)}  # views are immutable; a change in place is invisible (the cache is by identity)
    assert values(view)[("flavor", "h100", "h100", "gpu", "used")] == 2.0
    assert view_samples(view)[("flavor", "h100", "h100", "gpu", "used")] == 5.0


def test_sample_values_convert_only_new_queue_rows_and_queues_whose_counts_moved(monkeypatch):
    """A ClusterQueue's view is rebuilt whenever the quota tree moves: its part is compared by its counts.
    A team whose rows moved converts only the rows that are new, and sums them in the pool's order."""
    from taudash.engine.history import recorder

    converted: list[str] = []
    terms, counts = recorder._team_terms, recorder.queue_values
    monkeypatch.setattr(recorder, "_team_terms", lambda team, pq: converted.append(pq.cluster_queue) or terms(team, pq))
    read = recorder._row_values
    monkeypatch.setattr(recorder, "_row_values", lambda pq: converted.append(pq.cluster_queue) or read(pq))
    monkeypatch.setattr(recorder, "queue_values", lambda cq: converted.append(cq.name) or counts(cq))
    values = recorder.SampleValues()

    def record(view) -> list[str]:
        whole = recorder.view_samples(view)
        converted.clear()
        assert values(view) == whole
        return sorted(converted)

    rows = [_team_queue("ml", n, f"q{n}") for n in range(4)]
    assert record(_view([], [_cq("a", 3)], [], rows)) == ["a", "q0", "q1", "q2", "q3"]
    moved = [rows[0], _team_queue("ml", 9, "q1"), rows[2], rows[3]]
    assert record(_view([], [_cq("a", 3)], [], moved)) == ["q1"]  # a new queue view, the same counts; one row new
    view = _view([], [_cq("a", 4)], [], moved[:2])
    assert record(view) == ["a"]  # the counts moved; two rows gone
    assert values(view)[("team", "ml", "h100", "gpu", "used")] == 9.0  # the gone rows are out of the sums


def test_team_sums_kept_by_adding_and_removing_rows_stay_exact():
    """0.1 + 0.2 is not 0.3 in floats: sums kept by adding and removing rows would drift over weeks of passes.
    They are decimals, so after any sequence of rows the values are the ones a sum from nothing gives."""
    import random

    from taudash.engine.history.recorder import SampleValues, view_samples

    values = SampleValues()
    pool = [_team_queue("ml", v, f"q{i}") for i, v in enumerate((0.1, 0.2, 0.3, 0.7, 1.1, 0.05))]
    rnd = random.Random(7)
    for _ in range(200):
        rows = [r if rnd.random() < 0.7 else _team_queue("ml", r.used["h100"]["gpu"].v, r.cluster_queue)
                for r in rnd.sample(pool, rnd.randint(0, len(pool)))]
        view = _view([], [], [], rows)
        assert values(view) == view_samples(view)
    view = _view([], [], [], pool[:3])
    assert values(view)[("team", "ml", "h100", "gpu", "used")] == 0.6  # float(0.1 + 0.2 + 0.3 exactly)


def test_the_recorder_forgets_a_deleted_workload_and_records_a_new_one_of_the_same_name(tmp_path):
    """Per-Workload state (waits written, evictions written, where a UID lives) goes with the Workload: a
    console running for weeks sees every Workload its cluster ever ran."""
    from factories import store_of, workload

    from taudash.engine.model import lookup

    model = lookup("kueue.x-k8s.io/v1beta2", "Workload").model

    def admitted(name: str) -> dict:
        wl = workload(name, "team-a", admitted_to="cq", state="admitted")
        for c in wl["status"]["conditions"]:
            c["lastTransitionTime"] = "2026-11-30T10:00:00Z"
        return wl

    store = store_of(*(admitted(f"w{i}") for i in range(3)))
    view = _view([], [], [], [])
    view.findings, view.workspaces = [], []
    rec = Recorder(tmp_path / "h.sqlite3")
    rec.record(view, store, T0)
    assert len(rec.conn.execute("SELECT * FROM waits").fetchall()) == 3
    store.delete("Workload", "w0", "team-a")
    store.delete("Workload", "w1", "team-a")
    again = admitted("w1")
    again["metadata"]["uid"] = "uid-wl-w1-again"
    store.upsert(model.model_validate(again), again)
    rec.record(view, store, T0 + 10)
    assert rec._waits_seen == {"uid-wl-w2", "uid-wl-w1-again"}
    assert set(rec._uids) == {"uid-wl-w2", "uid-wl-w1-again"}
    uids = sorted(u for (u,) in rec.conn.execute("SELECT uid FROM waits"))
    assert uids == ["uid-wl-w0", "uid-wl-w1", "uid-wl-w1-again", "uid-wl-w2"]  # the history keeps them all
    rec.record(view, store, T0 + 20)  # nothing new: no wait twice
    assert len(rec.conn.execute("SELECT * FROM waits").fetchall()) == 4
    rec.close()


def test_team_sums_move_only_when_a_value_moved_and_never_trust_an_object_they_cannot_follow():
    from taudash.engine.history.recorder import TeamSums

    sums = TeamSums("ml")
    rows = [_team_queue("ml", 1, "q0"), _team_queue("ml", 2, "q1")]
    assert sums.update(rows) == {("team", "ml", "h100", "gpu", "reserved"): 3.0,
                                 ("team", "ml", "h100", "gpu", "used"): 3.0}
    assert sums.update([_team_queue("ml", 1, "q0"), _team_queue("ml", 2, "q1")]) is None  # new rows, same values
    # A row that cannot be weakly referenced is read again every pass: a change in place is seen.
    plain = SimpleNamespace(team="ml", cluster_queue="q0", reserved={"h100": {"gpu": _Q(1)}},
                            used={"h100": {"gpu": _Q(1)}})
    assert sums.update([plain, rows[1]]) is None
    plain.used = {"h100": {"gpu": _Q(5)}}
    assert sums.update([plain, rows[1]])[("team", "ml", "h100", "gpu", "used")] == 7.0
    assert sums.update([]) == {}  # every row gone: no sum left
