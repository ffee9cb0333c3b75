"""The simulated Kueue on small hand-built clusters: cohort borrowing and its limits, StrictFIFO vs
BestEffortFIFO, borrow-last ordering, priority, flavor order, quota shrink without eviction."""

from __future__ import annotations

import factories
import pytest
from factories import cluster_queue, local_queue, resource_flavor, resource_groups, small_world, workload_priority_class

from taudash.sim.world import World

GPU = "nvidia.com/gpu"


def flavor(name: str, **node_labels: str) -> dict:
    return resource_flavor(name, node_labels)


def cohort(name: str, quotas: dict | None = None, parent: str | None = None) -> dict:
    """quotas: {flavor: {resource: nominal | (nominal, borrowingLimit, lendingLimit)}}."""
    return factories.cohort(name, parent=parent, flavors=quotas, every_resource=True)


def cq(name: str, quotas: dict, cohort_name: str | None = "pool", strategy: str = "BestEffortFIFO", **spec) -> dict:
    return cluster_queue(name, cohort=cohort_name, flavors=quotas, every_resource=True, status=False, stop="None",
                         queueingStrategy=strategy, **spec)


def lq(ns: str, name: str, cq_name: str) -> dict:
    return local_queue(name, ns, cq_name)


def job(ns: str, name: str, queue: str, gpus: int, minute: int = 0, priority: str = "", selector=None) -> dict:
    return factories.job(name, ns, queue=queue, gpus=gpus, minute=minute, priority=priority, selector=selector)


def cluster(*objects: dict):
    """A quiet world of namespaces team-a and team-b, ResourceFlavor `gpu` and `objects`."""
    return small_world(*objects)


def state(w: World, ns: str, name: str) -> str:
    """pending | reserved | admitted | finished, for the Workload of Job ns/name."""
    wl = next(x for x in w.db.list("Workload", ns) if x["metadata"]["ownerReferences"][0]["name"] == name)
    c = {x["type"]: x["status"] for x in wl.get("status", {}).get("conditions", [])}
    if c.get("Finished") == "True":
        return "finished"
    if c.get("Admitted") == "True":
        return "admitted"
    return "reserved" if c.get("QuotaReserved") == "True" else "pending"


def reason(w: World, ns: str, name: str) -> tuple[str, str]:
    wl = next(x for x in w.db.list("Workload", ns) if x["metadata"]["ownerReferences"][0]["name"] == name)
    qr = next(x for x in wl["status"]["conditions"] if x["type"] == "QuotaReserved")
    return qr["reason"], qr["message"]


def gpus(w: World, cq_name: str, field: str = "total") -> str:
    st = w.db.get("ClusterQueue", cq_name)["status"]
    return next(r[field] for fl in st["flavorsReservation"] for r in fl["resources"] if r["name"] == GPU)


def complete(w: World, ns: str, name: str) -> None:
    w.db.patch_merge(
        "Job", name, {"status": {"conditions": [{"type": "Complete", "status": "True"}]}}, ns, subresource="status"
    )


def test_queues_with_zero_nominal_borrow_the_cohort_pool_up_to_its_size():
    w = cluster(
        cohort("pool", {"gpu": {GPU: "8"}}),
        cq("a", {"gpu": {GPU: "0"}}),
        cq("b", {"gpu": {GPU: "0"}}),
        lq("team-a", "q", "a"),
        lq("team-b", "q", "b"),
        job("team-a", "a1", "q", 4, 1),
        job("team-a", "a2", "q", 4, 2),
        job("team-b", "b1", "q", 4, 3),
    )
    w.step(1)
    assert [state(w, "team-a", "a1"), state(w, "team-a", "a2"), state(w, "team-b", "b1")] == [
        "admitted",
        "pending",
        "admitted",
    ]
    assert gpus(w, "a") == "4" and gpus(w, "a", "borrowed") == "4" and gpus(w, "b", "borrowed") == "4"
    assert reason(w, "team-a", "a2") == (
        "WaitingForQuota",
        f"couldn't assign flavors to pod set main: insufficient unused quota for {GPU} in flavor gpu, 4 more needed",
    )
    st = w.db.get("ClusterQueue", "a")["status"]
    assert (st["pendingWorkloads"], st["reservingWorkloads"], st["admittedWorkloads"]) == (1, 1, 1)
    lq_status = w.db.get("LocalQueue", "q", "team-a")["status"]
    assert lq_status["admittedWorkloads"] == 1 and "borrowed" not in lq_status["flavorsReservation"][0]["resources"][0]
    # the running Job finishes: its quota returns to the pool and the next one is admitted
    w.step(1)
    assert w.db.get("Job", "a1", "team-a")["spec"]["suspend"] is False
    complete(w, "team-a", "a1")
    w.step(1)
    assert state(w, "team-a", "a1") == "finished" and state(w, "team-a", "a2") == "admitted"


def test_borrowing_and_lending_limits_bound_what_a_queue_can_take():
    w = cluster(
        cohort("pool"),
        cq("a", {"gpu": {GPU: ("0", "2", None)}}),
        cq("b", {"gpu": {GPU: ("6", None, "2")}}),
        cq("c", {"gpu": {GPU: "0"}}),
        lq("team-a", "q", "a"),
        lq("team-b", "q", "b"),
        lq("team-b", "c", "c"),
        job("team-a", "a1", "q", 4, 1),
        job("team-a", "a2", "q", 2, 2),
    )
    w.step(1)
    assert reason(w, "team-a", "a1")[0] == "ExceedsMaxQuota"  # 4 > borrowingLimit 2
    assert state(w, "team-a", "a2") == "admitted"  # takes b's lendable 2
    w.db.create(job("team-b", "c1", "c", 2, 3))
    w.step(1)
    assert state(w, "team-b", "c1") == "pending"  # nothing left to lend
    w.db.create(job("team-b", "b1", "q", 6, 4))
    w.step(1)
    assert state(w, "team-b", "b1") == "pending"  # b keeps 4 private; its other 2 are lent out (no preemption)
    w.db.create(job("team-b", "b2", "q", 4, 5))
    w.step(1)
    assert state(w, "team-b", "b2") == "admitted"  # the private part is always b's
    complete(w, "team-a", "a2")
    w.step(1)
    w.step(1)
    assert state(w, "team-b", "c1") == "admitted"  # b1 (6) still does not fit beside b2; c1 takes the 2


@pytest.mark.parametrize(("strategy", "small"), [("StrictFIFO", "pending"), ("BestEffortFIFO", "admitted")])
def test_strict_fifo_blocks_behind_its_head_best_effort_skips_it(strategy, small):
    w = cluster(
        cohort("pool", {"gpu": {GPU: "8"}}),
        cq("other", {"gpu": {GPU: "0"}}),
        cq("s", {"gpu": {GPU: "0"}}, strategy=strategy),
        lq("team-a", "q", "other"),
        lq("team-b", "q", "s"),
        job("team-a", "busy", "q", 4, 0),
        job("team-b", "big", "q", 8, 1),
        job("team-b", "small", "q", 2, 2),
    )
    w.step(1)
    assert state(w, "team-a", "busy") == "admitted"
    assert state(w, "team-b", "big") == "pending"
    assert state(w, "team-b", "small") == small
    if strategy == "StrictFIFO":
        assert "waiting behind the head job-big-" in reason(w, "team-b", "small")[1]


def test_non_borrowing_heads_go_before_borrowing_ones():
    # "y" asks first but would borrow; "x" fits in its own nominal quota and wins the last 4 GPUs.
    w = cluster(
        cohort("pool"),
        cq("x", {"gpu": {GPU: "4"}}),
        cq("y", {"gpu": {GPU: "0"}}),
        lq("team-a", "q", "x"),
        lq("team-b", "q", "y"),
        job("team-b", "y1", "q", 4, 1),
        job("team-a", "x1", "q", 4, 2),
    )
    w.step(1)
    assert state(w, "team-a", "x1") == "admitted" and state(w, "team-b", "y1") == "pending"


def test_priority_orders_a_queue_before_age():
    prio = [
        workload_priority_class(n, v)
        for n, v in (("low", 100), ("high", 1000))
    ]
    w = cluster(
        *prio,
        cohort("pool", {"gpu": {GPU: "4"}}),
        cq("a", {"gpu": {GPU: "0"}}),
        lq("team-a", "q", "a"),
        job("team-a", "old-low", "q", 4, 1, "low"),
        job("team-a", "new-high", "q", 4, 2, "high"),
    )
    w.step(1)
    assert state(w, "team-a", "new-high") == "admitted" and state(w, "team-a", "old-low") == "pending"
    wl = next(x for x in w.db.list("Workload", "team-a") if "new-high" in x["metadata"]["name"])
    assert wl["spec"]["priority"] == 1000 and wl["spec"]["priorityClassRef"]["name"] == "high"


def test_flavors_are_tried_in_order_and_must_match_the_pod():
    w = cluster(
        flavor("small", pool="small"),
        flavor("big", pool="big"),
        cohort("pool"),
        cq("a", {"small": {GPU: "2"}, "big": {GPU: "8"}}, cohort_name=None),
        lq("team-a", "q", "a"),
        job("team-a", "fits-small", "q", 2, 1),
        job("team-a", "needs-big", "q", 4, 2),
        job("team-a", "pinned", "q", 1, 3, selector={"pool": "small"}),
        job("team-a", "nowhere", "q", 1, 4, selector={"pool": "gpu-x"}),
    )
    w.step(1)

    def assigned(name: str) -> str:
        wl = next(x for x in w.db.list("Workload", "team-a") if x["metadata"]["ownerReferences"][0]["name"] == name)
        return wl["status"]["admission"]["podSetAssignments"][0]["flavors"][GPU]

    assert assigned("fits-small") == "small" and assigned("needs-big") == "big"
    # Kueue sorts the reasons of a pod set (flavorassigner Status.Message)
    assert reason(w, "team-a", "pinned") == (
        "WaitingForQuota",
        "couldn't assign flavors to pod set main: flavor big doesn't match node affinity, "
        f"insufficient unused quota for {GPU} in flavor small, 1 more needed",
    )
    assert reason(w, "team-a", "nowhere")[0] == "NoMatchingFlavor"


def test_lowering_the_pool_evicts_nothing_and_blocks_new_admissions():
    w = cluster(
        cohort("pool", {"gpu": {GPU: "8"}}),
        cq("a", {"gpu": {GPU: "0"}}),
        lq("team-a", "q", "a"),
        job("team-a", "a1", "q", 4, 1),
        job("team-a", "a2", "q", 4, 2),
    )
    w.step(1)
    assert gpus(w, "a") == "8"
    w.db.patch_merge("Cohort", "pool",
                     {"spec": {"resourceGroups": resource_groups({"gpu": {GPU: "4"}}, every_resource=True)}})
    w.db.create(job("team-a", "a3", "q", 1, 3))
    w.step(1)
    w.step(1)
    assert state(w, "team-a", "a1") == state(w, "team-a", "a2") == "admitted"
    assert state(w, "team-a", "a3") == "pending" and gpus(w, "a") == "8"
    complete(w, "team-a", "a1")
    w.step(1)
    w.step(1)
    assert state(w, "team-a", "a3") == "pending"  # 4 reserved of 4: still no room
    complete(w, "team-a", "a2")
    w.step(1)
    w.step(1)
    assert state(w, "team-a", "a3") == "admitted"


def test_hierarchical_cohorts_share_through_the_parent():
    w = cluster(
        cohort("root", {"gpu": {GPU: "8"}}),
        cohort("team", parent="root"),
        cq("a", {"gpu": {GPU: "0"}}, cohort_name="team"),
        lq("team-a", "q", "a"),
        job("team-a", "a1", "q", 8, 1),
        job("team-a", "a2", "q", 1, 2),
    )
    w.step(1)
    assert state(w, "team-a", "a1") == "admitted" and state(w, "team-a", "a2") == "pending"


def test_a_missing_local_queue_or_a_selector_mismatch_keeps_work_pending():
    w = cluster(
        cohort("pool", {"gpu": {GPU: "8"}}),
        cq("a", {"gpu": {GPU: "0"}}, namespaceSelector={"matchLabels": {"team": "a"}}),
        lq("team-a", "q", "a"),
        job("team-a", "a1", "q", 1, 1),
        job("team-b", "b1", "missing", 1, 2),
    )
    w.step(1)
    assert reason(w, "team-a", "a1") == ("Inadmissible", "Workload namespace doesn't match ClusterQueue selector")
    assert reason(w, "team-b", "b1") == ("Inadmissible", "LocalQueue missing doesn't exist")
    w.db.patch_merge("Namespace", "team-a", {"metadata": {"labels": {"team": "a"}}})
    w.step(1)
    assert state(w, "team-a", "a1") == "admitted"


def test_a_kueue_managed_deployment_gets_one_workload_per_replica():
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "team-a"},
        "spec": {
            "replicas": 3,
            "template": {
                "metadata": {"labels": {"kueue.x-k8s.io/managed": "true", "kueue.x-k8s.io/queue-name": "q"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {GPU: "1"}}}]},
            },
        },
    }
    w = cluster(cohort("pool", {"gpu": {GPU: "8"}}), cq("a", {"gpu": {GPU: "0"}}), lq("team-a", "q", "a"), dep)
    w.step(1)
    wls = [x for x in w.db.list("Workload", "team-a") if x["metadata"]["ownerReferences"][0]["kind"] == "Deployment"]
    assert len(wls) == 3 and all(x["metadata"]["name"].startswith("pod-web-") for x in wls)
    assert gpus(w, "a") == "3"
    w.db.patch_merge("Deployment", "web", {"spec": {"replicas": 1}}, "team-a")
    w.step(1)
    w.step(1)
    assert len(w.db.list("Workload", "team-a")) == 1 and gpus(w, "a") == "1"
    w.db.delete("Deployment", "web", "team-a")
    w.step(1)
    w.step(1)
    assert w.db.list("Workload", "team-a") == []
