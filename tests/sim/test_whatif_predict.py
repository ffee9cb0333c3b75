"""`taudash whatif` predictions on small hand-built clusters: starts now with the right flavor, waits behind N
with the right positions, borrows from the cohort, preempts exactly the Workloads the simulated Kueue evicts
when the object is really created, and every reason an object can never be admitted."""

from __future__ import annotations

import copy

import factories
import pytest
from factories import cluster_queue, local_queue, namespace, resource_flavor, small_world, workload_priority_class
from tools import kueue_data

from taudash.rehearse.fork import Fork
from taudash.sim.world import World
from taudash.whatif import ManifestError, from_object, whatif

GPU = "nvidia.com/gpu"


def cq(name: str, quotas: dict, cohort: str | None = None, **spec) -> dict:
    return cluster_queue(name, cohort=cohort, flavors=quotas, every_resource=True, status=False, stop="None", **spec)


def job(ns: str, name: str, queue: str | None, gpus: int, *, minute: int = 0, priority: str = "",
        selector: dict | None = None) -> dict:
    return factories.job(name, ns, queue=queue, gpus=gpus, minute=minute, priority=priority, selector=selector)


def priorities() -> list[dict]:
    return [workload_priority_class("low", 10), workload_priority_class("high", 100)]


def settled(*objects: dict, steps: int = 3) -> World:
    """A quiet world of `objects` (namespaces team-a, team-b, flavor `gpu`) after its first admissions."""
    w = small_world(*objects)
    for _ in range(steps):
        w.step(1)
    return w


def fork_of(w: World) -> Fork:
    objects = [o for r in w.db.registry.all for o in w.db.list(r)]
    return Fork(copy.deepcopy(objects), w.clock.now(), context="hand-built")


def predict(w: World | Fork, manifest: dict, **kw):
    fork = w if isinstance(w, Fork) else fork_of(w)
    return whatif(fork, from_object(manifest), source="snapshot", **kw)["prediction"]


def workload_of(w: World, ns: str, job_name: str) -> dict:
    return next(x for x in w.db.list("Workload", ns) if x["metadata"]["ownerReferences"][0]["name"] == job_name)


def reserved(w: World, ns: str, job_name: str) -> bool:
    c = {x["type"]: x["status"] for x in workload_of(w, ns, job_name).get("status", {}).get("conditions", [])}
    return c.get("QuotaReserved") == "True"


# --- admissible ----------------------------------------------------------------------------------------------


def test_starts_now_with_the_flavor_its_node_selector_matches():
    w = settled(resource_flavor("a100", {"gpu-class": "a100"}), resource_flavor("h100", {"gpu-class": "h100"}),
                cq("train", {"a100": {GPU: "8"}, "h100": {GPU: "8"}}), local_queue("q", "team-a", "train"))
    p = predict(w, job("team-a", "new", "q", 4, selector={"gpu-class": "h100"}))
    assert p["admissible"] and p["reason"] is None
    assert (p["localQueue"], p["clusterQueue"]) == ("q", "train")
    assert p["startsNow"] is True and p["position"] is None
    assert [f["flavors"] for f in p["flavors"]] == [{GPU: "h100"}]
    assert p["preempts"] == [] and p["borrows"] == []
    assert p["eta"]["text"] == "starts now" and p["eta"]["fork"]["simulatedAdmissionSeconds"] == 0.0

    # no selector: the first flavor in the queue's order that has room
    w2 = settled(resource_flavor("a100", {"gpu-class": "a100"}), resource_flavor("h100", {"gpu-class": "h100"}),
                 cq("train", {"a100": {GPU: "8"}, "h100": {GPU: "8"}}), local_queue("q", "team-a", "train"),
                 job("team-a", "busy", "q", 6))
    assert reserved(w2, "team-a", "busy")
    p2 = predict(w2, job("team-a", "new", "q", 4))
    assert p2["startsNow"] is True and [f["flavors"] for f in p2["flavors"]] == [{GPU: "h100"}]


def test_waits_behind_the_pending_workloads_ahead_of_it_with_positions_in_both_queues():
    w = settled(cq("shared", {"gpu": {GPU: "8"}}), local_queue("qa", "team-a", "shared"),
                local_queue("qb", "team-b", "shared"),
                job("team-a", "running", "qa", 8, minute=0), job("team-a", "p1", "qa", 8, minute=1),
                job("team-b", "p2", "qb", 8, minute=2), job("team-a", "p3", "qa", 8, minute=3))
    assert reserved(w, "team-a", "running") and not reserved(w, "team-a", "p1")
    p = predict(w, job("team-b", "new", "qb", 8))
    assert p["admissible"] and p["startsNow"] is False
    # three pending ahead in the ClusterQueue, one of them in the same LocalQueue
    assert (p["position"]["clusterQueue"], p["position"]["localQueue"], p["position"]["of"]) == (4, 2, 4)
    # run forward: it is admitted after the four 8-GPU jobs ahead of it (one running, three waiting) finish
    assert p["eta"]["fork"]["simulatedAdmissionSeconds"] > 0
    assert [f["flavors"] for f in p["flavors"]] == [{GPU: "gpu"}]


def test_a_short_horizon_reports_what_it_still_waits_for():
    w = settled(cq("shared", {"gpu": {GPU: "8"}}), local_queue("qa", "team-a", "shared"),
                job("team-a", "running", "qa", 8))
    p = predict(w, job("team-a", "new", "qa", 8), horizon=60, step=30)
    assert p["admissible"] and not p["startsNow"] and p["flavors"] == []
    # the fork plays Kueue's default release: its no-fit reason reads Pending
    assert p["waiting"]["reason"] == "Pending" and "insufficient unused quota" in p["waiting"]["message"]
    assert p["eta"]["fork"]["simulatedAdmissionSeconds"] is None


def test_borrows_the_unused_quota_of_the_cohort():
    w = settled(factories.cohort("pool"), cq("small", {"gpu": {GPU: "4"}}, cohort="pool"),
                cq("big", {"gpu": {GPU: "8"}}, cohort="pool"), local_queue("q", "team-a", "small"))
    p = predict(w, job("team-a", "new", "q", 6))
    assert p["startsNow"] is True
    assert p["borrows"] == [{"flavor": "gpu", "resource": GPU, "amount": "2",
                             "from": [{"kind": "ClusterQueue", "name": "big", "unused": "8"}]}]
    # within its own quota: nothing borrowed
    assert predict(w, job("team-a", "new", "q", 4))["borrows"] == []


def test_preempts_exactly_the_workloads_the_simulated_kueue_evicts():
    objects = (*priorities(), cq("a", {"gpu": {GPU: "8"}}, preemption={"withinClusterQueue": "LowerPriority"}),
               local_queue("q", "team-a", "a"),
               job("team-a", "low-old", "q", 4, minute=1, priority="low"),
               job("team-a", "low-new", "q", 4, minute=2, priority="low"))
    w = settled(*objects)
    assert reserved(w, "team-a", "low-old") and reserved(w, "team-a", "low-new")
    urgent = job("team-a", "urgent", "q", 4, minute=3, priority="high")
    p = predict(w, urgent)
    assert p["admissible"] and p["startsNow"] is True  # right after its victim's quota is released
    victim = workload_of(w, "team-a", "low-new")["metadata"]["name"]  # the newest reservation of the lowest priority
    assert [(v["namespace"], v["name"], v["owner"], v["reason"]) for v in p["preempts"]] == [
        ("team-a", victim, {"kind": "Job", "name": "low-new"}, "InClusterQueue")]

    # the same Job really created in the world the fork was taken from: the same victims
    w.db.create(copy.deepcopy(urgent))
    for _ in range(4):
        w.step(1)
    actual = sorted(x["metadata"]["name"] for x in w.db.list("Workload", "team-a")
                    if any(c["type"] == "Preempted" for c in x.get("status", {}).get("conditions", [])))
    assert actual == [v["name"] for v in p["preempts"]]
    assert reserved(w, "team-a", "urgent")


def test_no_preemption_when_the_queue_never_preempts():
    w = settled(*priorities(), cq("a", {"gpu": {GPU: "4"}}), local_queue("q", "team-a", "a"),
                job("team-a", "low", "q", 4, priority="low"))
    p = predict(w, job("team-a", "urgent", "q", 4, priority="high"), horizon=60)
    assert p["preempts"] == [] and not p["startsNow"]


# --- inadmissible, each reason ---------------------------------------------------------------------------------


def base() -> list[dict]:
    return [resource_flavor("h100", {"gpu-class": "h100"}), cq("train", {"h100": {GPU: "8"}}),
            local_queue("q", "team-a", "train")]


@pytest.mark.parametrize(("objects", "manifest", "code", "words"), [
    pytest.param(base(), job("team-b", "j", "q", 1), "NoLocalQueue", "namespace team-b has no LocalQueue",
                 id="namespace-without-local-queue"),
    pytest.param(base(), job("team-a", "j", None, 1), "NotManagedByKueue", "no kueue.x-k8s.io/queue-name label",
                 id="no-queue-name"),
    pytest.param(base(), job("team-a", "j", "nope", 1), "LocalQueueNotFound", "LocalQueue nope doesn't exist",
                 id="local-queue-missing"),
    pytest.param([*base(), local_queue("orphan", "team-a", "gone")], job("team-a", "j", "orphan", 1),
                 "ClusterQueueNotFound", "ClusterQueue gone doesn't exist", id="cluster-queue-missing"),
    pytest.param([resource_flavor("h100", {"gpu-class": "h100"}),
                  cq("train", {"h100": {GPU: "8"}}, selector={"matchLabels": {"team": "x"}}),
                  local_queue("q", "team-a", "train")], job("team-a", "j", "q", 1),
                 "NamespaceNotSelected", "doesn't match the namespaceSelector", id="namespace-not-selected"),
    pytest.param(base(), job("team-a", "j", "q", 9), "ExceedsMaxQuota", "maximum capacity (8)",
                 id="above-the-queue-maximum"),
    pytest.param([factories.cohort("pool"), resource_flavor("h100", {"gpu-class": "h100"}),
                  cq("train", {"h100": {GPU: "8"}}, cohort="pool"), cq("other", {"h100": {GPU: "8"}}, cohort="pool"),
                  local_queue("q", "team-a", "train")], job("team-a", "j", "q", 17), "ExceedsMaxQuota",
                 "maximum capacity (16)", id="above-the-cohort-maximum"),
    pytest.param(base(), job("team-a", "j", "q", 1, selector={"gpu-class": "b200"}), "NoMatchingFlavor",
                 "flavor h100 doesn't match node affinity", id="no-matching-flavor"),
])
def test_inadmissible_for_each_reason(objects, manifest, code, words):
    w = settled(*objects, steps=1)
    p = predict(w, manifest)
    assert p["admissible"] is False and p["reason"]["code"] == code
    assert words in p["reason"]["message"]
    assert p["startsNow"] is False and p["flavors"] == [] and p["preempts"] == []


def test_a_fitting_job_in_the_same_cluster_is_admissible():  # the negative of the reasons above
    p = predict(settled(*base(), steps=1), job("team-a", "j", "q", 8))
    assert p["admissible"] and p["startsNow"]


def test_inadmissible_when_its_profile_is_not_ready_or_its_workspace_is_not_ready():
    ready = factories.workload_profile("ok", namespaces=["team-a"], queue="q", cluster_queue="train")
    broken = factories.workload_profile("broken", namespaces=["team-a"], queue="q", cluster_queue="train",
                                        ready=False)
    # the cluster as read (a Fork of the objects, not stepped first: TauGrid's published status as it is)
    objs = [*base(), namespace("team-a"), namespace("tau-system"), factories.tau_cluster([ready, broken])]
    w = Fork(copy.deepcopy(objs), 1772366400.0)
    labelled = job("team-a", "j", None, 1)
    labelled["metadata"]["labels"] = {"tau.azure.com/profile": "broken"}
    p = predict(w, labelled)
    assert p["admissible"] is False and p["reason"]["code"] == "ProfileNotReady"
    assert "'broken' is not Ready" in p["reason"]["message"]

    # no label: the only ready profile is stamped, and its LocalQueue is used
    p = predict(w, job("team-a", "j", None, 1))
    assert p["admissible"] and p["profile"]["name"] == "ok" and p["profile"]["selectedBy"] == "implicit"
    assert p["localQueue"] == "q" and p["startsNow"]

    w2 = Fork(copy.deepcopy([*base(), namespace("team-a"), namespace("tau-system"),
                             factories.workspace("team-a", phase="Provisioning")]), 1772366400.0)
    p = predict(w2, job("team-a", "j", "q", 1))
    assert p["admissible"] is False and p["reason"]["code"] == "WorkspaceNotReady"


def test_unreadable_workloads_or_queues_give_no_prediction_at_all():
    w = settled(*base(), job("team-a", "running", "q", 8))
    fork = fork_of(w)
    fork.access = {"Workload": "Forbidden"}
    p = predict(fork, job("team-a", "new", "q", 8))
    assert p["admissible"] is None and p["reason"]["code"] == "Unknown"
    assert "Workload Forbidden" in p["reason"]["message"] and p["startsNow"] is False and p["position"] is None
    fork.access = {"Cohort": "Absent"}  # an API not served is read as empty, as on the cluster
    assert predict(fork, job("team-a", "new", "q", 8))["admissible"] is True


def test_a_manifest_with_no_readable_pod_sets_is_a_manifest_error():
    w = settled(*base(), steps=1)
    bad = job("team-a", "j", "q", 1)
    bad["spec"]["parallelism"] = "lots"
    with pytest.raises(ManifestError, match="cannot read its pod sets: invalid literal"):
        predict(w, bad)


def test_a_manifest_the_kueue_crd_schema_refuses_is_a_manifest_error():
    kueue_data.root()  # the refusal comes from Kueue's CRD schema: skips without it outside CI, fails in CI
    w = settled(*base(), steps=1)
    wl = factories.workload_request("w", "team-a", queue="q", pod_sets=True)
    wl.pop("status")
    wl["spec"]["podSets"][0]["count"] = "two"  # the Kueue CRD schema refuses it
    with pytest.raises(ManifestError, match="Workload team-a/w: the API server would refuse it"):
        predict(w, wl)


def test_the_fork_is_untouched_and_the_prediction_repeats():
    w = settled(*base(), job("team-a", "running", "q", 8))
    fork = fork_of(w)
    before = copy.deepcopy(fork.objects)
    m = from_object(job("team-a", "new", "q", 8))
    first = whatif(fork, m)["prediction"]
    second = whatif(fork, m)["prediction"]
    assert fork.objects == before
    first.pop("simulation"), second.pop("simulation")
    assert first == second


# --- the other kinds ------------------------------------------------------------------------------------------


def kinds_cluster() -> World:
    return settled(cq("train", {"gpu": {GPU: "8", "cpu": "8"}}), local_queue("q", "team-a", "train"))


@pytest.mark.parametrize(("kind", "podsets"), [
    ("Job", [("main", 1)]), ("RayJob", [("head", 1), ("gpu", 2)]), ("Workload", [("main", 1)])])
def test_each_kind_gets_its_pod_sets_flavored(kind, podsets):
    p = predict(kinds_cluster(), factories.submittable(kind, "x", "team-a", queue="q", gpus=2, workers=2))
    assert p["admissible"] and p["startsNow"] and len(p["workloads"]) == 1
    assert [(f["podSet"], f["count"]) for f in p["flavors"]] == podsets
    assert all(set(f["flavors"].values()) == {"gpu"} for f in p["flavors"])


def test_a_managed_deployment_predicts_one_workload_per_replica():
    w = kinds_cluster()
    p = predict(w, factories.submittable("Deployment", "web", "team-a", queue="q", gpus=3, replicas=3))
    # two replicas of 3 GPUs fit the 8: the third waits (the prediction is for the whole Deployment)
    assert len(p["workloads"]) == 3 and p["admissible"] and not p["startsNow"]
    assert p["position"]["clusterQueue"] == 1
    assert len(p["flavors"]) == 2 and p["waiting"]["horizonSeconds"] > 0  # the two admitted, the third waiting
    unmanaged = predict(w, factories.submittable("Deployment", "web", "team-a", queue=None))
    assert unmanaged["admissible"] is False and unmanaged["reason"]["code"] == "NotManagedByKueue"


def test_a_rayjob_above_the_queue_maximum_is_inadmissible():
    p = predict(kinds_cluster(), factories.submittable("RayJob", "big", "team-a", queue="q", gpus=4, workers=3))
    assert p["admissible"] is False and p["reason"]["code"] == "ExceedsMaxQuota"


# --- what if the quota changed ---------------------------------------------------------------------------------


def test_a_quota_change_gains_admissions_in_one_queue_and_loses_them_in_another():
    from taudash.whatif.quota import quota_whatif

    w = settled(cq("grow", {"gpu": {GPU: "4"}}), cq("shrink", {"gpu": {GPU: "8"}}),
                local_queue("qa", "team-a", "grow"), local_queue("qb", "team-b", "shrink"),
                job("team-a", "a-run", "qa", 4, minute=0), job("team-a", "a-wait", "qa", 4, minute=1),
                job("team-b", "b-run", "qb", 4, minute=0), job("team-b", "b-wait", "qb", 8, minute=1))
    fork = fork_of(w)
    out = quota_whatif(fork, [cq("grow", {"gpu": {GPU: "8"}}), cq("shrink", {"gpu": {GPU: "4"}})],
                       horizon=12 * 3600, step=60)
    rows = {r["clusterQueue"]: r for r in out["queues"]}
    grow, shrink = rows["grow"], rows["shrink"]
    # a-wait fits the grown queue at once; without the change it waits for a-run to finish
    assert grow["pending"] == 1 and (grow["admittedBefore"], grow["admittedAfter"]) == (1, 1)
    assert grow["shorterWaits"] == 1 and grow["medianWaitDeltaSeconds"] < 0
    # b-wait (8 GPUs) fits once b-run is done, but never in a queue of 4
    assert (shrink["admittedBefore"], shrink["admittedAfter"]) == (1, 0)
    assert len(shrink["lost"]) == 1 and shrink["lost"][0].startswith("team-b/job-b-wait-")
    assert out["reverted"] == []  # nothing manages these queues: the edits stay
    # the same quota: the same on both sides
    same = quota_whatif(fork, [cq("grow", {"gpu": {GPU: "4"}})], horizon=12 * 3600, step=60)
    assert all(r["gained"] == [] and r["lost"] == [] and r["medianWaitDeltaSeconds"] == 0 for r in same["queues"])


def test_a_quota_change_to_an_object_that_is_not_there_is_refused():
    from taudash.whatif.quota import quota_whatif

    fork = fork_of(settled(*base(), steps=1))
    with pytest.raises(ManifestError, match="ClusterQueue nope is not in the cluster"):
        quota_whatif(fork, [cq("nope", {"gpu": {GPU: "4"}})], horizon=60, step=30)
