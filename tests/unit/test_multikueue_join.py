"""MultiKueue joined up across a fleet (engine/multikueue_join.py, docs/rules.md#multikueue-across-the-fleet):
dispatched Workloads with their worker and remote state, mismatches as findings; an unreachable worker is unknown,
never gone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from factories import (
    admission_check,
    dispatched_workload,
    multikueue_cluster,
    multikueue_config,
    multikueue_mirror,
    store_of,
    workload,
)

from taudash.engine.multikueue_join import WorkerSide, context_of, is_manager, join_multikueue
from taudash.engine.store import AccessState

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
OLD = (NOW - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
JUST = (NOW - timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")


def dispatched(name: str, *, on: str | None = None, nominated: list[str] | None = None, state: str = "admitted",
               at: str = OLD) -> dict:
    return dispatched_workload(name, on=on, nominated=nominated, state=state, at=at)


def mirror(name: str, *, state: str = "admitted", created: str = OLD) -> dict:
    return multikueue_mirror(name, state=state, created=created)


def manager(*wls: dict, w2_active: str = "True", access: dict | None = None):
    return store_of(admission_check(), multikueue_config(clusters=("w1", "w2")), multikueue_cluster("w1"),
                    multikueue_cluster("w2", w2_active), *wls, access=access)


def live(*objs: dict, context: str = "ctx", access: dict | None = None) -> WorkerSide:
    return WorkerSide(context, store_of(*objs, access=access), True)


def rules(j) -> list[tuple[str, str]]:
    return [(f.rule, f.object.name) for f in j.findings]


def test_a_dispatched_workload_has_its_worker_and_the_mirrors_state():
    m = manager(dispatched("a", on="w1"), dispatched("b", nominated=["w1", "w2"], state="reserved"),
                workload("local", "train"))
    j = join_multikueue(m, {"w1": live(mirror("a")), "w2": live(mirror("b", state="pending"))}, NOW)
    by = {d.name: d for d in j.dispatched}
    assert set(by) == {"a", "b"}  # a Workload never dispatched is not listed
    assert (by["a"].cluster_name, by["a"].state, by["a"].remote_state) == ("w1", "admitted", "admitted")
    assert by["b"].nominated == ["w1", "w2"] and by["b"].cluster_name is None and by["b"].remote_state == ""
    assert j.findings == [] and j.orphans == []
    assert [(w.name, w.active, w.reach, w.mirrors) for w in j.workers] == [("w1", True, "live", 1),
                                                                            ("w2", True, "live", 1)]
    assert is_manager(m) and not is_manager(store_of(mirror("a")))


def test_a_copy_gone_from_a_readable_worker_is_critical_after_the_grace():
    m = manager(dispatched("a", on="w1"), dispatched("fresh", on="w1", at=JUST), dispatched("done", on="w1",
                                                                                            state="finished"))
    j = join_multikueue(m, {"w1": live(), "w2": live()}, NOW)
    assert {d.name: d.remote_state for d in j.dispatched} == {"a": "gone", "fresh": "gone", "done": "gone"}
    assert rules(j) == [("MK-REMOTE-GONE", "a")]  # in flight (admitted 5 s ago) and finished ones are not findings
    assert j.findings[0].severity.value == "critical" and "w1" in j.findings[0].message


def test_an_unreachable_worker_is_unknown_never_gone():
    m = manager(dispatched("a", on="w1"))
    down = WorkerSide("ctx-w1", None, False, "unreachable")
    j = join_multikueue(m, {"w1": down, "w2": live()}, NOW)
    assert j.dispatched[0].remote_state == "unknown"
    assert rules(j) == [("MK-WORKER-UNREACHABLE", "w1")]  # Active on the manager, unreadable from here
    assert "unreachable" in j.findings[0].message and "ctx-w1" in j.findings[0].message
    # stale data (the store is there, the connection is not) and a worker whose Workloads are forbidden: unknown too
    for side in (WorkerSide("ctx-w1", store_of(), False, "stale"), live(access={"Workload": AccessState.FORBIDDEN})):
        j = join_multikueue(m, {"w1": side, "w2": live()}, NOW)
        assert j.dispatched[0].remote_state == "unknown"
        assert [r for r, _ in rules(j)] == ["MK-WORKER-UNREACHABLE"]


def test_an_unmapped_worker_is_unknown_and_an_inactive_one_is_left_to_the_managers_own_finding():
    m = manager(dispatched("a", on="w1"), w2_active="False")
    j = join_multikueue(m, {}, NOW)  # no context maps to either worker
    assert j.dispatched[0].remote_state == "unknown"
    assert [(w.name, w.context, w.reach) for w in j.workers] == [("w1", None, "no context maps to it"),
                                                                  ("w2", None, "no context maps to it")]
    # w1 is Active (a finding: cannot be checked from here); w2 is not Active: MK-WORKER-DISCONNECTED says so
    assert rules(j) == [("MK-WORKER-UNREACHABLE", "w1")]


def test_a_mirror_the_manager_no_longer_tracks_is_an_orphan():
    m = manager(dispatched("moved", on="w2"), dispatched("done", on="w1", state="finished"),
                dispatched("dispatching", nominated=["w1", "w2"], state="reserved"))
    w1 = live(mirror("ghost"), mirror("moved"), mirror("done", state="finished"),
              mirror("dispatching", state="pending"),
              mirror("young", created=JUST))
    j = join_multikueue(m, {"w1": w1, "w2": live(mirror("moved"))}, NOW)
    assert [(o.worker, o.name, o.why) for o in j.orphans] == [
        ("w1", "done", "it finished on the manager"),
        ("w1", "ghost", "the manager has no such Workload"),
        ("w1", "moved", "the manager runs it on w2"),
    ]
    assert sorted(rules(j)) == [("MK-REMOTE-ORPHAN", "done"), ("MK-REMOTE-ORPHAN", "ghost"),
                                ("MK-REMOTE-ORPHAN", "moved")]


def test_an_unreadable_manager_never_calls_a_mirror_orphaned():
    m = manager(access={"Workload": AccessState.ERROR})
    j = join_multikueue(m, {"w1": live(mirror("ghost")), "w2": live()}, NOW)
    assert j.orphans == [] and j.dispatched == [] and j.findings == []


def test_context_of_prefers_the_explicit_mapping_then_the_same_name():
    contexts = {"w1", "prod-w2"}
    assert context_of("w2", {"w2": "prod-w2"}, contexts) == "prod-w2"
    assert context_of("w1", {}, contexts) == "w1"
    assert context_of("w3", {}, contexts) is None


def test_the_fleet_join_maps_workers_to_contexts_and_a_stale_manager_is_unknown():
    from taudash.fleet import join_fleet

    m = manager(dispatched("a", on="w1"), dispatched("b", on="w2"))
    clusters = {"mgr": (m, True, ""), "w1": (store_of(mirror("a")), True, ""), "east": (store_of(), True, "")}
    joins = join_fleet(clusters, {"w2": "east"}, NOW)  # w1 by its name; w2 by the config file's mapping
    assert list(joins) == ["mgr"]  # the workers are not managers
    j = joins["mgr"]
    assert {w.name: w.context for w in j.workers} == {"w1": "w1", "w2": "east"}
    assert {d.name: d.remote_state for d in j.dispatched} == {"a": "admitted", "b": "gone"}
    # the manager's data is not current: nothing is joined, and it says why instead of "not a manager"
    stale = join_fleet({**clusters, "mgr": (m, False, "stale")}, {"w2": "east"}, NOW)
    assert stale["mgr"].unknown == "stale" and stale["mgr"].dispatched == [] and stale["mgr"].findings == []
