"""The simulated Kueue admits, preempts and evicts as Kueue 0.19 does, on small hand-built clusters:
flavor matching (label keys, required node affinity, taints), classical preemption within a
ClusterQueue and reclaim within a cohort, quota held until the evicted job is inactive,
deactivation/reactivation conditions, `borrowed: "0"` outside a cohort."""

from __future__ import annotations

import pytest
from factories import resource_groups, small_world, workload_priority_class
from test_sim_world_admission import GPU, cluster, cohort, complete, cq, flavor, job, lq, reason, state

from taudash.engine.history import db as hdb
from taudash.sim.controllers.admission import Behaviour
from taudash.sim.world import World


def workload(w: World, ns: str, name: str) -> dict:
    return next(x for x in w.db.list("Workload", ns) if x["metadata"]["ownerReferences"][0]["name"] == name)


def conds(w: World, ns: str, name: str) -> dict[str, dict]:
    return {c["type"]: c for c in workload(w, ns, name).get("status", {}).get("conditions", [])}


def assigned(w: World, ns: str, name: str) -> str:
    return workload(w, ns, name)["status"]["admission"]["podSetAssignments"][0]["flavors"][GPU]


def suspended(w: World, ns: str, name: str) -> bool:
    return w.db.get("Job", name, ns)["spec"]["suspend"]


def priorities() -> list[dict]:
    return [workload_priority_class(n, v) for n, v in (("low", 100), ("high", 1000))]


def with_pod(obj: dict, **pod_spec) -> dict:
    obj["spec"]["template"]["spec"].update(pod_spec)
    return obj


# --- flavor matching ------------------------------------------------------------------------------


@pytest.mark.parametrize(("label_keys", "expected"), [("flavor", "default-flavor"), ("group", "spot")])
def test_instance_type_spot_is_matched_over_the_flavors_label_keys(label_keys, expected):
    """Kueue ≥ 0.18.2 compares the pod's selector with each flavor over that flavor's own label keys: a flavor
    without labels matches anything (kubernetes-sigs/kueue#12449). Older releases used the union of the group's
    keys, so a label-less flavor failed `instance-type=spot`."""
    w = cluster(
        flavor("default-flavor"),
        flavor("spot", **{"instance-type": "spot"}),
        cq("a", {"default-flavor": {GPU: "8"}, "spot": {GPU: "8"}}, cohort_name=None),
        lq("team-a", "q", "a"),
        job("team-a", "spotty", "q", 1, 1, selector={"instance-type": "spot"}),
        job("team-a", "on-demand", "q", 1, 2, selector={"instance-type": "on-demand"}),
    )
    w.controllers[-1].behaviour = Behaviour(label_keys=label_keys)
    w.step(1)
    assert assigned(w, "team-a", "spotty") == expected
    if label_keys == "flavor":
        assert assigned(w, "team-a", "on-demand") == "default-flavor"
    else:
        assert reason(w, "team-a", "on-demand") == (
            "NoMatchingFlavor",
            "couldn't assign flavors to pod set main: flavor default-flavor doesn't match node affinity, "
            "flavor spot doesn't match node affinity",
        )


def affinity(*terms: list[tuple[str, str, list[str]]]) -> dict:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": k, "operator": op, "values": v} for k, op, v in term]}
                    for term in terms
                ]
            }
        }
    }


def test_required_node_affinity_picks_the_matching_flavor():
    w = cluster(
        flavor("zone-a", zone="a"),
        flavor("zone-b", zone="b"),
        cq("a", {"zone-a": {GPU: "8"}, "zone-b": {GPU: "8"}}, cohort_name=None),
        lq("team-a", "q", "a"),
        with_pod(job("team-a", "in-b", "q", 1, 1), affinity=affinity([("zone", "In", ["b"])])),
        with_pod(job("team-a", "not-a", "q", 1, 2), affinity=affinity([("zone", "NotIn", ["a"])])),
        # terms are ORed: the second one matches zone-a
        with_pod(job("team-a", "either", "q", 1, 3),
                 affinity=affinity([("zone", "In", ["c"])], [("zone", "Exists", [])])),
        with_pod(job("team-a", "nowhere", "q", 1, 4), affinity=affinity([("zone", "NotIn", ["a", "b"])])),
        # a key no flavor has is not the flavors' business: the term drops out and everything matches
        with_pod(job("team-a", "foreign", "q", 1, 5), affinity=affinity([("gpu-model", "In", ["h100"])])),
    )
    w.step(1)
    assert assigned(w, "team-a", "in-b") == "zone-b"
    assert assigned(w, "team-a", "not-a") == "zone-b"
    assert assigned(w, "team-a", "either") == "zone-a"
    assert assigned(w, "team-a", "foreign") == "zone-a"
    assert reason(w, "team-a", "nowhere") == (
        "NoMatchingFlavor",
        "couldn't assign flavors to pod set main: flavor zone-a doesn't match node affinity, "
        "flavor zone-b doesn't match node affinity",
    )


def tainted(name: str, *taints: dict, tolerations: list[dict] | None = None) -> dict:
    rf = flavor(name)
    rf["spec"]["nodeTaints"] = list(taints)
    if tolerations:
        rf["spec"]["tolerations"] = tolerations
    return rf


SKU = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}


def test_a_flavor_taint_must_be_tolerated_by_the_pod_or_the_flavor():
    w = cluster(
        tainted("tainted", SKU),
        tainted("soft", {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}),
        cq("a", {"tainted": {GPU: "8"}}, cohort_name=None),
        cq("b", {"soft": {GPU: "8"}}, cohort_name=None),
        lq("team-a", "q", "a"),
        lq("team-b", "q", "b"),
        job("team-a", "plain", "q", 1, 1),
        with_pod(job("team-a", "tolerant", "q", 1, 2), tolerations=[{**SKU, "operator": "Equal"}]),
        with_pod(job("team-a", "exists", "q", 1, 3), tolerations=[{"key": "sku", "operator": "Exists"}]),
        with_pod(job("team-a", "wrong-value", "q", 1, 4), tolerations=[{**SKU, "value": "cpu"}]),
        job("team-b", "preferred", "q", 1, 5),  # PreferNoSchedule does not keep anything off
    )
    w.step(1)
    untolerated = (
        "NoMatchingFlavor",
        "couldn't assign flavors to pod set main: untolerated taint sku=gpu:NoSchedule in flavor tainted",
    )
    assert reason(w, "team-a", "plain") == untolerated
    assert reason(w, "team-a", "wrong-value") == untolerated
    assert state(w, "team-a", "tolerant") == state(w, "team-a", "exists") == "admitted"
    assert state(w, "team-b", "preferred") == "admitted"
    # the flavor's own tolerations count as the pod's
    w.db.patch_merge("ResourceFlavor", "tainted", {"spec": {"tolerations": [{**SKU, "operator": "Equal"}]}})
    w.step(1)
    assert state(w, "team-a", "plain") == "admitted"


# --- preemption -----------------------------------------------------------------------------------


def running(w: World, ns: str, name: str) -> bool:
    return int((w.db.get("Job", name, ns).get("status") or {}).get("active") or 0) > 0


def start(w: World) -> None:
    """Admission (Workload created and reserved), resume (Kueue unsuspends), run (the job's pods start)."""
    for _ in range(3):
        w.step(1)


def preemption_world(within: str = "LowerPriority", high: str = "high") -> World:
    w = cluster(
        *priorities(),
        cq("a", {"gpu": {GPU: "4"}}, cohort_name=None, preemption={"withinClusterQueue": within}),
        lq("team-a", "q", "a"),
        job("team-a", "victim", "q", 4, 1, "low"),
    )
    start(w)
    assert state(w, "team-a", "victim") == "admitted" and running(w, "team-a", "victim")
    w.db.create(job("team-a", "urgent", "q", 4, 2, high))
    w.step(1)
    return w


def test_lower_priority_is_preempted_and_the_preemptor_waits_until_the_victims_job_is_inactive():
    w = preemption_world()
    victim, urgent = workload(w, "team-a", "victim"), workload(w, "team-a", "urgent")
    c = conds(w, "team-a", "victim")
    msg = (
        f"Preempted to accommodate a workload (UID: {urgent['metadata']['uid']}, JobUID: "
        f"{w.db.get('Job', 'urgent', 'team-a')['metadata']['uid']}) due to prioritization in the ClusterQueue; "
        "preemptor path: /a; preemptee path: /a"
    )
    assert (c["Evicted"]["status"], c["Evicted"]["reason"], c["Evicted"]["message"]) == ("True", "Preempted", msg)
    assert (c["Preempted"]["status"], c["Preempted"]["reason"], c["Preempted"]["message"]) == (
        "True",
        "InClusterQueue",
        msg,
    )
    assert hdb.preemptor_uid(msg) == urgent["metadata"]["uid"]  # what the recorder reads
    # the victim's job is stopped at once, but its quota stays reserved while its pods run
    assert suspended(w, "team-a", "victim") is True and running(w, "team-a", "victim")
    assert c["QuotaReserved"]["status"] == "True" and victim["status"]["admission"]["clusterQueue"] == "a"
    assert reason(w, "team-a", "urgent") == (
        "WaitingForPreemptedWorkloads",
        f"couldn't assign flavors to pod set main: insufficient unused quota for {GPU} in flavor gpu, "
        "4 more needed. Pending the preemption of 1 workload(s)",
    )
    st = w.db.get("ClusterQueue", "a")["status"]
    assert st["reservingWorkloads"] == 1 and st["flavorsReservation"][0]["resources"][0] == {
        "name": GPU,
        "total": "4",
        "borrowed": "0",  # Kueue writes it outside a cohort too
    }

    w.step(1)  # the job's pods are gone: the reservation goes, the preemptor gets it
    c = conds(w, "team-a", "victim")
    assert not running(w, "team-a", "victim")
    # released (QuotaReserved=False, Pending, the eviction message), then queued again in the same pass: the
    # scheduler's reason replaces it (checked below)
    assert c["QuotaReserved"]["status"] == "False"
    assert (c["Requeued"]["status"], c["Requeued"]["reason"], c["Requeued"]["message"]) == ("True", "Preempted", msg)
    assert c["Evicted"]["status"] == "True" and c["Admitted"]["status"] == "False"
    assert "admission" not in workload(w, "team-a", "victim")["status"]
    assert workload(w, "team-a", "victim")["status"]["schedulingStats"]["evictions"] == [
        {"reason": "Preempted", "underlyingCause": "", "count": 1}
    ]
    assert state(w, "team-a", "urgent") == "admitted"
    assert reason(w, "team-a", "victim")[0] == "WaitingForQuota"  # requeued behind the higher priority
    # the victim runs again once the preemptor finishes; its Evicted/Preempted turn False
    w.step(1)
    complete(w, "team-a", "urgent")
    w.step(1)
    w.step(1)
    c = conds(w, "team-a", "victim")
    assert state(w, "team-a", "victim") == "admitted"
    assert (c["Evicted"]["status"], c["Evicted"]["message"]) == ("False", f"Previously: {msg}")
    assert c["Preempted"]["status"] == "False"


@pytest.mark.parametrize(("within", "high"), [("Never", "high"), ("LowerPriority", "low")])
def test_no_preemption_with_never_or_an_equal_priority(within, high):
    w = preemption_world(within, high)
    w.step(1)
    assert "Evicted" not in conds(w, "team-a", "victim") and running(w, "team-a", "victim")
    assert state(w, "team-a", "victim") == "admitted" and state(w, "team-a", "urgent") == "pending"
    assert reason(w, "team-a", "urgent") == (
        "WaitingForQuota",
        f"couldn't assign flavors to pod set main: insufficient unused quota for {GPU} in flavor gpu, 4 more needed",
    )


@pytest.mark.parametrize("policy", ["Any", "LowerPriority", "Never"])
def test_a_queue_reclaims_its_nominal_quota_from_a_borrowing_queue(policy):
    w = cluster(
        *priorities(),
        cohort("pool"),
        cq("a", {"gpu": {GPU: "4"}}, preemption={"reclaimWithinCohort": policy}),
        cq("b", {"gpu": {GPU: "0"}}),
        lq("team-a", "q", "a"),
        lq("team-b", "q", "b"),
        job("team-b", "borrower", "q", 4, 1, "low"),
    )
    w.step(1)
    w.step(1)
    assert state(w, "team-b", "borrower") == "admitted"
    st = w.db.get("ClusterQueue", "b")["status"]["flavorsReservation"][0]["resources"][0]
    assert st["borrowed"] == "4"
    w.db.create(job("team-a", "owner", "q", 4, 2, "high"))
    w.step(1)
    if policy == "Never":
        assert "Evicted" not in conds(w, "team-b", "borrower")
        assert reason(w, "team-a", "owner")[0] == "WaitingForQuota"
        return
    c = conds(w, "team-b", "borrower")
    assert (c["Evicted"]["reason"], c["Preempted"]["reason"]) == ("Preempted", "InCohortReclamation")
    assert c["Preempted"]["message"].endswith(
        "due to reclamation within the cohort; preemptor path: /pool/a; preemptee path: /pool/b"
    )
    assert reason(w, "team-a", "owner")[0] == "WaitingForPreemptedWorkloads"
    w.step(1)
    assert state(w, "team-a", "owner") == "admitted" and state(w, "team-b", "borrower") == "pending"


def test_a_queue_within_its_nominal_quota_is_not_reclaimed_from():
    w = cluster(
        *priorities(),
        cohort("pool"),
        cq("a", {"gpu": {GPU: "4"}}, preemption={"reclaimWithinCohort": "Any"}),
        cq("b", {"gpu": {GPU: "4"}}),
        lq("team-a", "q", "a"),
        lq("team-b", "q", "b"),
        job("team-b", "own", "q", 4, 1, "low"),
    )
    w.step(1)
    w.db.create(job("team-a", "more", "q", 8, 2, "high"))  # a's 4 plus b's 4: b is not borrowing
    w.step(1)
    assert "Evicted" not in conds(w, "team-b", "own")
    assert state(w, "team-a", "more") == "pending"


# --- eviction and deactivation ------------------------------------------------------------------------


def test_hold_and_drain_keeps_quota_until_the_job_is_inactive():
    w = cluster(
        cq("a", {"gpu": {GPU: "8"}}, cohort_name=None),
        lq("team-a", "q", "a"),
        job("team-a", "a1", "q", 4, 1),
    )
    start(w)
    assert running(w, "team-a", "a1")
    w.db.patch_merge("ClusterQueue", "a", {"spec": {"stopPolicy": "HoldAndDrain"}})
    w.step(1)
    c = conds(w, "team-a", "a1")
    assert (c["Evicted"]["status"], c["Evicted"]["reason"], c["Evicted"]["message"]) == (
        "True",
        "ClusterQueueStopped",
        "The ClusterQueue is stopped",
    )
    assert c["QuotaReserved"]["status"] == "True" and suspended(w, "team-a", "a1")
    assert w.db.get("ClusterQueue", "a")["status"]["reservingWorkloads"] == 1
    w.step(1)
    c = conds(w, "team-a", "a1")
    assert (c["QuotaReserved"]["status"], c["QuotaReserved"]["message"]) == ("False", "ClusterQueue a is stopped")
    assert (c["Requeued"]["status"], c["Requeued"]["reason"]) == ("False", "ClusterQueueStopped")
    assert "admission" not in workload(w, "team-a", "a1")["status"] and not running(w, "team-a", "a1")
    assert w.db.get("ClusterQueue", "a")["status"]["reservingWorkloads"] == 0
    w.db.patch_merge("ClusterQueue", "a", {"spec": {"stopPolicy": "None"}})
    w.step(1)
    c = conds(w, "team-a", "a1")
    assert (c["Requeued"]["status"], c["Requeued"]["reason"]) == ("True", "ClusterQueueRestarted")
    w.step(1)
    assert state(w, "team-a", "a1") == "admitted"


def test_deactivation_and_reactivation_set_kueues_conditions():
    w = small_world(  # Kueue 0.19.2's defaults: QuotaReserved=False says Pending once the job is inactive
        cq("a", {"gpu": {GPU: "4"}}, cohort_name=None),
        lq("team-a", "q", "a"),
        job("team-a", "runner", "q", 4, 1),
        job("team-a", "waiter", "q", 4, 2),
        granular_reasons=False,
    )
    start(w)
    assert running(w, "team-a", "runner") and state(w, "team-a", "waiter") == "pending"
    for name in ("runner", "waiter"):
        w.db.patch_merge("Workload", workload(w, "team-a", name)["metadata"]["name"], {"spec": {"active": False}},
                         "team-a")
    w.step(1)
    for name in ("runner", "waiter"):
        c = conds(w, "team-a", name)
        assert (c["Evicted"]["status"], c["Evicted"]["reason"], c["Evicted"]["message"]) == (
            "True",
            "Deactivated",
            "The workload is deactivated",
        )
    # the running one keeps its quota until its job is inactive; the pending one has none
    assert conds(w, "team-a", "runner")["QuotaReserved"]["status"] == "True"
    assert "Requeued" not in conds(w, "team-a", "waiter")
    w.step(1)
    c = conds(w, "team-a", "runner")
    assert (c["QuotaReserved"]["status"], c["QuotaReserved"]["reason"]) == ("False", "Pending")
    assert (c["Requeued"]["status"], c["Requeued"]["reason"]) == ("False", "Deactivated")
    assert state(w, "team-a", "waiter") == "pending"  # inactive: not admitted into the freed quota
    assert w.db.get("ClusterQueue", "a")["status"]["pendingWorkloads"] == 0

    w.db.patch_merge("Workload", workload(w, "team-a", "runner")["metadata"]["name"], {"spec": {"active": True}},
                     "team-a")
    w.step(1)
    c = conds(w, "team-a", "runner")
    assert (c["Requeued"]["status"], c["Requeued"]["reason"], c["Requeued"]["message"]) == (
        "True",
        "Reactivated",
        "The workload was reactivated",
    )
    w.step(1)
    c = conds(w, "team-a", "runner")
    assert state(w, "team-a", "runner") == "admitted"
    assert (c["Evicted"]["status"], c["Evicted"]["message"]) == ("False", "Previously: The workload is deactivated")
    # a Workload deactivated while pending had no reservation to requeue: no Requeued on reactivation (Kueue 0.19)
    w.db.patch_merge("Workload", workload(w, "team-a", "waiter")["metadata"]["name"], {"spec": {"active": True}},
                     "team-a")
    w.step(1)
    assert "Requeued" not in conds(w, "team-a", "waiter") and state(w, "team-a", "waiter") == "pending"


def test_lowering_quota_under_a_preempting_policy_still_evicts_nothing():
    w = cluster(
        *priorities(),
        cohort("pool", {"gpu": {GPU: "8"}}),
        cq("a", {"gpu": {GPU: "0"}}, preemption={"withinClusterQueue": "LowerPriority"}),
        lq("team-a", "q", "a"),
        job("team-a", "a1", "q", 4, 1, "low"),
        job("team-a", "a2", "q", 4, 2, "low"),
    )
    w.step(1)
    w.db.patch_merge("Cohort", "pool",
                     {"spec": {"resourceGroups": resource_groups({"gpu": {GPU: "4"}}, every_resource=True)}})
    w.db.create(job("team-a", "a3", "q", 4, 3, "high"))
    w.step(1)
    w.step(1)
    # a3 would need borrowing (nominal 0): Kueue preempts only within nominal quota or with borrowWithinCohort
    assert state(w, "team-a", "a1") == state(w, "team-a", "a2") == "admitted"
    assert state(w, "team-a", "a3") == "pending" and "Evicted" not in conds(w, "team-a", "a1")


@pytest.mark.parametrize(("when_can_borrow", "expected"), [("MayStopSearch", "shared"), ("TryNextFlavor", "own")])
def test_flavor_fungibility_decides_between_borrowing_and_the_next_flavor(when_can_borrow, expected):
    w = cluster(
        flavor("shared"),
        flavor("own"),
        cohort("pool", {"shared": {GPU: "4"}, "own": {GPU: "0"}}),
        cq("a", {"shared": {GPU: "0"}, "own": {GPU: "4"}}, flavorFungibility={"whenCanBorrow": when_can_borrow}),
        lq("team-a", "q", "a"),
        job("team-a", "a1", "q", 2, 1),
    )
    w.step(1)
    assert assigned(w, "team-a", "a1") == expected
    borrowed = w.db.get("ClusterQueue", "a")["status"]["flavorsReservation"]
    assert {fl["name"]: fl["resources"][0]["borrowed"] for fl in borrowed} == (
        {"shared": "2", "own": "0"} if expected == "shared" else {"shared": "0", "own": "0"}
    )


@pytest.mark.parametrize(("bwc", "evicted"), [(None, False), ({"policy": "LowerPriority"}, True),
                                              ({"policy": "LowerPriority", "maxPriorityThreshold": 50}, False)])
def test_borrow_within_cohort_lets_a_borrowing_queue_preempt(bwc, evicted):
    """Without borrowWithinCohort Kueue preempts only for a request within the queue's nominal quota; with it,
    lower-priority Workloads of other borrowing queues (up to maxPriorityThreshold) can go."""
    pre = {"reclaimWithinCohort": "Any"}
    if bwc:
        pre["borrowWithinCohort"] = bwc
    w = cluster(
        *priorities(),
        cohort("pool", {"gpu": {GPU: "4"}}),
        cq("a", {"gpu": {GPU: "0"}}, preemption=pre),
        cq("b", {"gpu": {GPU: "0"}}),
        lq("team-a", "q", "a"),
        lq("team-b", "q", "b"),
        job("team-b", "borrower", "q", 4, 1, "low"),
    )
    start(w)
    w.db.create(job("team-a", "also-borrowing", "q", 4, 2, "high"))
    w.step(1)
    c = conds(w, "team-b", "borrower")
    if not evicted:
        assert "Evicted" not in c and reason(w, "team-a", "also-borrowing")[0] == "WaitingForQuota"
        return
    assert (c["Evicted"]["reason"], c["Preempted"]["reason"]) == ("Preempted", "InCohortReclaimWhileBorrowing")
    assert "due to reclamation within the cohort while borrowing" in c["Preempted"]["message"]
    w.step(1)
    assert state(w, "team-a", "also-borrowing") == "admitted"


def test_why_names_the_victims_the_simulator_then_preempts():
    """`taudash why` and the simulator share the quota tree and the candidate rules: the victim the wait report
    predicts for a queued preemptor is the one the simulated Kueue evicts."""
    from taudash.engine.rules.base import RuleContext
    from taudash.engine.rules.why import why_waiting_report

    w = cluster(
        *priorities(),
        cq("a", {"gpu": {GPU: "8"}}, cohort_name=None, preemption={"withinClusterQueue": "LowerPriority"}),
        lq("team-a", "q", "a"),
        lq("team-a", "held", "a"),
        job("team-a", "small-old", "q", 4, 1, "low"),
        job("team-a", "small-new", "q", 4, 2, "low"),
    )
    start(w)
    # queued where Kueue does not look yet (a stopped LocalQueue), so the report sees it before the scheduler does
    w.db.patch_merge("LocalQueue", "held", {"spec": {"stopPolicy": "Hold"}}, "team-a")
    w.db.create(job("team-a", "urgent", "held", 4, 3, "high"))
    w.step(1)
    name = workload(w, "team-a", "urgent")["metadata"]["name"]
    report = why_waiting_report(RuleContext(store=w.store(), now=w.clock.datetime()), "team-a", name)
    assert report.preemption.possible is True
    predicted = {c.name for c in report.preemption.candidates}
    assert len(predicted) == 1
    w.db.patch_merge("LocalQueue", "held", {"spec": {"stopPolicy": "None"}}, "team-a")
    w.step(1)
    evicted = {x["metadata"]["name"] for x in w.db.list("Workload", "team-a")
               if {c["type"]: c["status"] for c in x["status"].get("conditions", [])}.get("Evicted") == "True"}
    assert evicted == predicted


@pytest.mark.parametrize(("within", "preempts"), [("LowerOrNewerEqualPriority", True), ("LowerPriority", False)])
def test_lower_or_newer_equal_priority_preempts_a_newer_workload_of_the_same_priority(within, preempts):
    w = cluster(
        *priorities(),
        cq("a", {"gpu": {GPU: "4"}}, cohort_name=None, preemption={"withinClusterQueue": within}),
        lq("team-a", "q", "a"),
        lq("team-a", "held", "a"),
    )
    w.db.patch_merge("LocalQueue", "held", {"spec": {"stopPolicy": "Hold"}}, "team-a")
    w.db.create(job("team-a", "older", "held", 4, 1, "low"))
    w.step(1)  # its Workload exists (created now) but waits in the held queue
    w.step(60)
    w.db.create(job("team-a", "newer", "q", 4, 2, "low"))
    start(w)
    assert state(w, "team-a", "newer") == "admitted" and running(w, "team-a", "newer")
    w.db.patch_merge("LocalQueue", "held", {"spec": {"stopPolicy": "None"}}, "team-a")
    w.step(1)
    c = conds(w, "team-a", "newer")
    if not preempts:
        assert "Evicted" not in c and state(w, "team-a", "older") == "pending"
        return
    assert (c["Evicted"]["reason"], c["Preempted"]["reason"]) == ("Preempted", "InClusterQueue")
    w.step(1)
    assert state(w, "team-a", "older") == "admitted" and state(w, "team-a", "newer") == "pending"


def test_the_history_recorder_reads_a_simulated_preemption(tmp_path):
    from taudash.engine.history import query
    from taudash.engine.history.recorder import Recorder

    w = preemption_world()
    rec = Recorder(tmp_path / "h.sqlite3")
    rec.record(w.view(), w.store(), w.clock.datetime())
    [row] = query.preemption_log(rec.conn, 0)
    rec.close()
    urgent = workload(w, "team-a", "urgent")
    assert (row.name, row.cluster_queue, row.preemption_reason) == (
        workload(w, "team-a", "victim")["metadata"]["name"],
        "a",
        "InClusterQueue",
    )
    assert (row.preemptor_uid, row.preemptor_name, row.preemptor_cluster_queue) == (
        urgent["metadata"]["uid"],
        urgent["metadata"]["name"],
        "a",
    )


def test_a_started_job_gets_the_flavors_labels_and_tolerations_and_gives_them_back_when_stopped():
    rf = tainted("spot", {"key": "spot", "value": "true", "effect": "NoSchedule"},
                 tolerations=[{"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}])
    rf["spec"]["nodeLabels"] = {"instance-type": "spot"}
    w = cluster(
        rf,
        cq("a", {"spot": {GPU: "4"}}, cohort_name=None),
        lq("team-a", "q", "a"),
        job("team-a", "j", "q", 4, 1, selector={"team": "a"}),
    )
    start(w)
    pod = w.db.get("Job", "j", "team-a")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"team": "a", "instance-type": "spot"}
    assert pod["tolerations"] == [{"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    w.db.patch_merge("Workload", workload(w, "team-a", "j")["metadata"]["name"], {"spec": {"active": False}}, "team-a")
    w.step(1)
    job_now = w.db.get("Job", "j", "team-a")
    assert job_now["spec"]["suspend"] is True
    assert job_now["spec"]["template"]["spec"]["nodeSelector"] == {"team": "a"}
    assert "tolerations" not in job_now["spec"]["template"]["spec"]


def test_a_rayjobs_head_and_worker_templates_get_the_flavor_too():
    rf = flavor("pool", **{"gpu-class": "h100"})
    rf["spec"]["tolerations"] = [{"key": "sku", "operator": "Exists", "effect": "NoSchedule"}]

    def tmpl(gpus: str) -> dict:
        return {"spec": {"containers": [{"name": "c", "resources": {"requests": {GPU: gpus}}}]}}

    rj = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "r", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {
            "entrypoint": "python x.py",
            "submissionMode": "HTTPMode",
            "suspend": True,
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": tmpl("0")},
                "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "minReplicas": 2, "maxReplicas": 2,
                                      "rayStartParams": {}, "template": tmpl("1")}],
            },
        },
    }
    w = cluster(rf, cq("a", {"pool": {GPU: "8"}}, cohort_name=None), lq("team-a", "q", "a"), rj)
    start(w)
    spec = w.db.get("RayJob", "r", "team-a")["spec"]
    assert spec["suspend"] is False
    worker = spec["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    assert worker["nodeSelector"] == {"gpu-class": "h100"} and worker["tolerations"] == rf["spec"]["tolerations"]
    assert worker["containers"][0]["resources"]["requests"] == {GPU: "1"}  # the rest of the template is kept
    # the head requests no GPU: its pod set has no flavor, so nothing is injected there
    assert "nodeSelector" not in spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]


@pytest.mark.parametrize("seed", range(6))
def test_random_clusters_never_reserve_more_than_the_quota_allows(seed):
    """Random policies, limits, priorities, arrivals and completions: whatever is preempted, reservations stay
    within each queue's nominal + borrowingLimit and within the cohort's total, and every write is valid."""
    import random

    from taudash.sim.controllers.admission import usage_of

    r = random.Random(seed)
    objs: list[dict] = [
        *priorities(),
        workload_priority_class("mid", 500),
        cohort("pool", {"gpu": {GPU: str(r.choice([0, 4, 8]))}}),
    ]
    limits = {}
    for name, ns in (("a", "team-a"), ("b", "team-b")):
        pre = {"withinClusterQueue": r.choice(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
               "reclaimWithinCohort": r.choice(["Never", "LowerPriority", "Any"])}
        if r.random() < 0.3:
            pre["borrowWithinCohort"] = {"policy": "LowerPriority"}
        nominal, lim = r.choice([0, 2, 4, 8]), r.choice([None, 2, 4])
        limits[name] = nominal + lim if lim is not None else None
        objs += [cq(name, {"gpu": {GPU: (str(nominal), None if lim is None else str(lim), None)}}, preemption=pre),
                 lq(ns, "q", name)]
    w = cluster(*objs)
    capacity = sum(int(o["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"])
                   for o in objs if o.get("kind") in ("ClusterQueue", "Cohort"))
    n = 0
    for _ in range(50):
        if r.random() < 0.5:
            n += 1
            w.db.create(job(r.choice(["team-a", "team-b"]), f"j{n}", "q", r.choice([1, 2, 4, 8]), 0,
                            r.choice(["low", "mid", "high"])))
        busy = [j for j in w.db.list("Job") if (j.get("status") or {}).get("active")]
        if busy and r.random() < 0.2:
            j = r.choice(busy)
            complete(w, j["metadata"]["namespace"], j["metadata"]["name"])
        w.step(1)
        held: dict[str, int] = {}
        for x in w.db.list("Workload"):
            c = {k["type"]: k["status"] for k in x["status"].get("conditions", [])}
            if c.get("QuotaReserved") == "True" and c.get("Finished") != "True":
                cqn = x["status"]["admission"]["clusterQueue"]
                held[cqn] = held.get(cqn, 0) + int(sum(usage_of(x).values()))
        assert sum(held.values()) <= capacity
        for name, most in limits.items():
            assert most is None or held.get(name, 0) <= most
    assert w.writer.invalid == 0
