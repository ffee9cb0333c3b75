"""Claims and Workloads left deactivated (docs/rules.md#claims): positive, negative and fail-closed cases on
hand-built Leases and Workloads."""

from __future__ import annotations

from datetime import timedelta

from factories import (
    NOW,
    claim_lease,
    cluster_queue,
    deactivated_workload,
    local_queue,
    only,
    rules,
    store_of,
    upsert_raw,
    view_of,
    workload,
)

from taudash.engine.incremental import IncrementalDeriver
from taudash.engine.store import AccessState

TRAIN = "ClusterQueue tau-ws-train"


def queue_world(*extra: dict) -> list[dict]:
    return [cluster_queue("tau-ws-train"), local_queue("jobqueue", "train", "tau-ws-train"), *extra]


def test_a_renewed_claim_is_shown_with_its_holder_and_is_not_stale():
    v = view_of(*queue_world(claim_lease(TRAIN, "1a2b3c", renewed=NOW - timedelta(seconds=20),
                                         acquired=NOW - timedelta(minutes=9))))
    (claim,) = v.claims
    assert (claim.target, claim.holder, claim.workflow, claim.who, claim.host) == (
        TRAIN, "1a2b3c", "hold", "alice", "laptop-1")
    assert claim.since == "2026-11-30T08:51:00.000000Z" and claim.renewed == "2026-11-30T08:59:40.000000Z"
    assert claim.stale is False and claim.lease == "tau-system/taudash.clusterqueue.tau-ws-train"
    assert "CLAIM-STALE" not in rules(v.findings)
    contract = v.to_contract()["claims"][0]
    assert set(contract) >= {"target", "holder", "who", "host", "since", "renewed", "stale"}


def test_a_claim_not_renewed_within_its_lease_is_stale_and_says_how_to_take_it_over():
    v = view_of(*queue_world(claim_lease(TRAIN, "1a2b3c", workflow="catalog", renewed=NOW - timedelta(minutes=5))))
    assert v.claims[0].stale is True
    f = only(v.findings, "CLAIM-STALE")
    assert f.severity.value == "warning" and (f.object.kind, f.object.name) == ("ClusterQueue", "tau-ws-train")
    assert "workflow 1a2b3c (catalog, alice on laptop-1, since 2026-11-30 08:55:00 UTC)" in f.message
    assert "last renewed 5 min ago" in f.message and "its lease is 120 s" in f.message
    assert "stopped unfinished" in f.message
    assert "taudash workflow start catalog … --take-over 1a2b3c" in f.hint
    assert "taudash workflow resume 1a2b3c" in f.hint


def test_a_claim_exactly_at_its_lease_end_still_holds_and_one_never_renewed_is_stale():
    at_end = view_of(claim_lease(TRAIN, "a", renewed=NOW - timedelta(seconds=120)))
    assert at_end.claims[0].stale is False  # past the lease, not at it
    never = view_of(claim_lease(TRAIN, "b", renewed=None, acquired=NOW - timedelta(seconds=5)))
    assert never.claims[0].stale is True and "never renewed" in only(never.findings, "CLAIM-STALE").message


def test_leases_of_other_controllers_are_not_read():
    foreign = claim_lease(TRAIN, "kube-scheduler-xyz", labelled=False, renewed=NOW - timedelta(hours=2))
    v = view_of(*queue_world(foreign))
    assert v.claims == [] and "CLAIM-STALE" not in rules(v.findings)


def test_a_workload_deactivated_by_a_run_that_holds_no_claim_is_left_deactivated():
    v = view_of(*queue_world(deactivated_workload("train-7", "train", by="9f8e7d")))
    f = only(v.findings, "WORKLOAD-LEFT-DEACTIVATED")
    assert (f.object.kind, f.object.namespace, f.object.name) == ("Workload", "train", "train-7")
    assert "deactivated by workflow 9f8e7d" in f.message and "ClusterQueue tau-ws-train" in f.message
    assert "taudash workflow start release --cq tau-ws-train --reactivate-from 9f8e7d" in f.hint


def test_the_cluster_queue_of_an_admitted_workload_is_its_admission():
    wl = deactivated_workload("w", "train", by="9f8e7d", queue="nosuch", state="reserved")
    wl["status"]["admission"] = {"clusterQueue": "tau-ws-eval", "podSetAssignments": []}
    f = only(view_of(*queue_world(wl)).findings, "WORKLOAD-LEFT-DEACTIVATED")
    assert "--cq tau-ws-eval --reactivate-from 9f8e7d" in f.hint


def test_a_workload_of_a_run_that_still_holds_a_claim_is_not_left_behind():
    held = view_of(*queue_world(deactivated_workload("train-7", "train", by="9f8e7d"),
                                claim_lease(TRAIN, "9f8e7d", renewed=NOW)))
    assert "WORKLOAD-LEFT-DEACTIVATED" not in rules(held.findings)
    # a stale claim still holds: the run is paused or crashed and resumes to reactivate its Workloads
    paused = view_of(*queue_world(deactivated_workload("train-7", "train", by="9f8e7d"),
                                  claim_lease(TRAIN, "9f8e7d", renewed=NOW - timedelta(hours=1))))
    assert rules(paused.findings).count("WORKLOAD-LEFT-DEACTIVATED") == 0 and "CLAIM-STALE" in rules(paused.findings)


def test_active_finished_or_unannotated_workloads_are_not_judged():
    reactivated = deactivated_workload("a", "train", by="9f8e7d")
    reactivated["spec"]["active"] = True
    finished = deactivated_workload("b", "train", by="9f8e7d", state="finished")
    by_someone_else = workload("c", "train", active=False)  # deactivated by hand: not a workflow's leftover
    v = view_of(*queue_world(reactivated, finished, by_someone_else))
    assert "WORKLOAD-LEFT-DEACTIVATED" not in rules(v.findings)


def test_unreadable_leases_give_no_verdict_on_deactivated_workloads():
    objs = queue_world(deactivated_workload("train-7", "train", by="9f8e7d"), claim_lease(TRAIN, "old", renewed=None))
    v = view_of(*objs, access={"Lease": AccessState.FORBIDDEN})
    assert v.claims == []  # unknown, not "nobody holds anything"
    assert "WORKLOAD-LEFT-DEACTIVATED" not in rules(v.findings) and "CLAIM-STALE" not in rules(v.findings)
    assert any(f.rule == "DATA-UNREADABLE" and f.object.name == "leases.coordination.k8s.io" for f in v.findings)


def test_unreadable_workloads_or_local_queues_give_no_verdict_either():
    objs = queue_world(deactivated_workload("train-7", "train", by="9f8e7d"))
    for kind in ("Workload", "LocalQueue"):
        v = view_of(*objs, access={kind: AccessState.ERROR})
        assert "WORKLOAD-LEFT-DEACTIVATED" not in rules(v.findings), kind


def test_a_claim_goes_stale_with_the_clock_alone_and_a_later_deactivation_is_seen():
    store = store_of(*queue_world(claim_lease(TRAIN, "1a2b3c", renewed=NOW)))
    deriver = IncrementalDeriver(store)
    assert deriver.view(NOW).claims[0].stale is False
    later = deriver.view(NOW + timedelta(minutes=3))  # nothing changed in the store
    assert later.claims[0].stale is True and "CLAIM-STALE" in rules(later.findings)
    upsert_raw(store, deactivated_workload("train-7", "train", by="gone42"))
    f = only(deriver.view(NOW + timedelta(minutes=3)).findings, "WORKLOAD-LEFT-DEACTIVATED")
    assert "gone42" in f.message


# --- incremental: a change looks at the Workloads that changed, not at every Workload ---------------


def _left(view) -> list[tuple[str, str, str]]:
    return sorted((f.object.namespace, f.object.name, f.message) for f in view.findings
                  if f.rule == "WORKLOAD-LEFT-DEACTIVATED")


def test_deactivations_reactivations_and_reroutes_update_the_view_as_a_full_derivation_would():
    import copy

    from taudash.engine.incremental import derive

    objs = queue_world(local_queue("other", "train", "tau-ws-eval"), cluster_queue("tau-ws-eval"),
                       deactivated_workload("a", "train", by="r1"), deactivated_workload("b", "train", by="r2"),
                       workload("c", "train"))
    store = store_of(*objs)
    deriver = IncrementalDeriver(store)
    deriver.view(NOW)
    steps = []
    b = copy.deepcopy(objs[5])
    b["spec"]["active"] = True  # reactivated: no longer left behind
    steps.append(b)
    steps.append(deactivated_workload("c", "train", by="r3", queue="other"))  # deactivated later, another queue
    steps.append(deactivated_workload("a", "train", by="r1", state="finished"))  # finished: not judged
    steps.append(local_queue("other", "train", "tau-ws-train"))  # c's LocalQueue routes elsewhere now
    steps.append(deactivated_workload("d", "train", by="r4"))  # a new one
    for raw in steps:
        upsert_raw(store, raw)
        assert _left(deriver.view(NOW)) == _left(derive(store, NOW)), raw["metadata"]["name"]
    store.delete("Workload", "d", "train")
    assert _left(deriver.view(NOW)) == _left(derive(store, NOW))
    assert [n for _, n, _ in _left(deriver.view(NOW))] == ["c"]
    assert "ClusterQueue tau-ws-train" in _left(deriver.view(NOW))[0][2]
    assert deriver.full_builds == 1


def test_a_change_to_an_unrelated_workload_leaves_the_deactivated_list_as_it_was():
    import copy

    store = store_of(*queue_world(deactivated_workload("a", "train", by="r1"), workload("c", "train")))
    deriver = IncrementalDeriver(store)
    deriver.view(NOW)
    part = deriver._parts["claims"]
    before = part._deactivated
    c = copy.deepcopy(workload("c", "train", message="3 more needed"))
    upsert_raw(store, c, workload("e", "train"))  # a pending message moves, a new active Workload comes
    deriver.view(NOW)
    assert part._deactivated is before and [d.name for d in before] == ["a"]
