"""The simulated world on the demo cluster: determinism, stop policies, the eval retarget, profiles,
node loss. Everything is driven through `World.step()`; nothing sleeps."""

from __future__ import annotations

import pytest
from factories import GPU, sim_world
from tools.paths import DEMO
from tools.worlds import conditions, db_view, root_gpus

from taudash.engine.model.quantity import Quantity
from taudash.engine.rules.profilehash import profile_set_hash
from taudash.engine.rules.profiles import load_profile_set
from taudash.sim.controllers.scenario import Scenario
from taudash.sim.world import World


def cq_counts(w: World, name: str) -> tuple[int, int, int]:
    st = w.db.get("ClusterQueue", name)["status"]
    return st["pendingWorkloads"], st["reservingWorkloads"], st["admittedWorkloads"]


# --- determinism -------------------------------------------------------------------------------------


def test_a_seeded_half_hour_is_deterministic_and_the_seed_matters():
    def run(seed: int) -> list:
        w = World.from_snapshot(
            DEMO, seed=seed, scenario=Scenario.parse({"knobs": {"arrivalsPerHour": 40, "nodeFlapsPerHour": 0.5}})
        )
        assert w.clock.stamp() == "2026-11-30T09:00:00Z"  # the snapshot's capture time
        w.run_for(30 * 60, dt=10)
        assert not w.writer.errors
        return w.event_log()

    one, again, other = run(7), run(7), run(8)
    assert len(one) > 50
    assert one == again
    assert one != other
    assert {verb for _, verb, _, _ in one} >= {"create", "status", "patch"}
    assert all(t <= 30 * 60 for t, *_ in one)


def test_the_event_log_records_only_effective_writes():
    w = sim_world()
    w.step(5)
    first = len(w.event_log())
    for _ in range(5):
        w.step(5)
    # a quiet cluster converges: nothing left to write once the first changes settled (a RayJob initialises for
    # up to two minutes; no seeded job ends before five)
    w.run_for(120, dt=5)
    settled = len(w.event_log())
    w.run_for(60, dt=5)
    assert first > 0 and len(w.event_log()) == settled


# --- stop policies ------------------------------------------------------------------------------------


def test_hold_and_drain_evicts_admitted_work_then_resume_readmits():
    w = sim_world()
    w.step(5)
    _, reserving, admitted = cq_counts(w, "tau-ws-train")
    assert admitted > 0
    running = sorted(
        wl["metadata"]["name"]
        for wl in w.db.list("Workload", "train")
        if conditions(wl).get("Admitted", {}).get("status") == "True"
        and "Finished" not in conditions(wl)
        and wl["status"]["admission"]["clusterQueue"] == "tau-ws-train"
    )

    w.db.patch_merge("ClusterQueue", "tau-ws-train", {"spec": {"stopPolicy": "HoldAndDrain"}})
    w.run_for(30, dt=5)
    pending, reserving, admitted = cq_counts(w, "tau-ws-train")
    assert (reserving, admitted) == (0, 0) and pending >= len(running)
    cq = w.db.get("ClusterQueue", "tau-ws-train")
    assert conditions(cq)["Active"]["reason"] == "Stopped"
    for name in running:
        wl = w.db.get("Workload", name, "train")
        c = conditions(wl)
        assert c["Evicted"]["status"] == "True" and c["Evicted"]["reason"] == "ClusterQueueStopped"
        assert c["QuotaReserved"]["status"] == "False" and "admission" not in wl["status"]
        owner = wl["metadata"]["ownerReferences"][0]
        assert w.db.get(owner["kind"], owner["name"], "train")["spec"]["suspend"] is True
    # a deliberate stop is not a workspace failure
    ws = w.db.get("TauWorkspace", "train", "tau-system")
    assert ws["status"]["phase"] == "Ready"

    w.db.patch_merge("ClusterQueue", "tau-ws-train", {"spec": {"stopPolicy": "None"}})
    w.run_for(30, dt=5)
    _, _, admitted = cq_counts(w, "tau-ws-train")
    assert admitted > 0
    readmitted = [n for n in running if conditions(w.db.get("Workload", n, "train"))["Admitted"]["status"] == "True"]
    assert readmitted
    c = conditions(w.db.get("Workload", readmitted[0], "train"))
    assert c["Evicted"]["status"] == "False" and c["Requeued"]["reason"] == "ClusterQueueRestarted"


def test_hold_and_drain_with_pending_owners_cancelled_drains_to_zero():
    w = sim_world()
    w.step(5)
    w.db.patch_merge("ClusterQueue", "tau-ws-vision", {"spec": {"stopPolicy": "HoldAndDrain"}})
    w.run_for(20, dt=5)
    assert cq_counts(w, "tau-ws-vision")[1:] == (0, 0)
    # cancel the pending owners: deleting a source deletes its Workloads (garbage collection)
    for wl in w.db.list("Workload", "vision"):
        owner = wl["metadata"]["ownerReferences"][0]
        if "Finished" not in conditions(wl) and w.db.get(owner["kind"], owner["name"], "vision"):
            w.db.delete(owner["kind"], owner["name"], "vision")
    w.run_for(20, dt=5)
    assert cq_counts(w, "tau-ws-vision") == (0, 0, 0)
    cq = next(q for q in db_view(w).cluster_queues if q.name == "tau-ws-vision")
    assert cq.stop_policy == "HoldAndDrain" and cq.drained is True


def test_hold_keeps_admitted_work_running():
    w = sim_world()
    w.step(5)
    before = cq_counts(w, "tau-ws-train")
    w.db.patch_merge("ClusterQueue", "tau-ws-train", {"spec": {"stopPolicy": "Hold"}})
    w.run_for(20, dt=5)
    after = cq_counts(w, "tau-ws-train")
    assert after[2] == before[2] > 0
    assert not [
        wl
        for wl in w.db.list("Workload", "train")
        if conditions(wl).get("Evicted", {}).get("reason") == "ClusterQueueStopped"
    ]


def test_deactivating_a_workload_evicts_it_and_keeps_it_out():
    w = sim_world()
    w.step(5)
    wl = next(x for x in w.db.list("Workload", "train") if x["metadata"]["name"].startswith("job-finetune-mistral"))
    w.db.patch_merge("Workload", wl["metadata"]["name"], {"spec": {"active": False}}, "train")
    w.run_for(20, dt=5)
    wl = w.db.get("Workload", wl["metadata"]["name"], "train")
    assert conditions(wl)["Evicted"]["reason"] == "Deactivated"
    assert conditions(wl)["QuotaReserved"]["status"] == "False"
    assert w.db.get("Job", "finetune-mistral-lora", "train")["spec"]["suspend"] is True


# --- the eval retarget ---------------------------------------------------------------------------------


def eval_ws(w: World):
    return next(x for x in db_view(w).workspaces if x.name == "eval")


def test_deleting_the_last_blocker_completes_the_eval_retarget():
    w = sim_world()
    w.step(5)
    ws = eval_ws(w)
    assert ws.drain.mode == "Retarget" and ws.drain.state == "Blocked"
    assert {b.kind for b in ws.drain.blockers} >= {"RayService", "Deployment"}

    # cancel the batch work, then remove the long-running sources one by one
    for kind, name in (("Job", "mmlu-sweep-17"), ("Job", "prep-4"), ("RayJob", "rl-eval")):
        w.db.delete(kind, name, "eval")
    w.run_for(15, dt=5)
    ws = eval_ws(w)
    assert ws.drain.state == "Blocked"
    assert sorted((b.kind, b.name) for b in ws.drain.blockers) == [("Deployment", "web-ui"), ("RayService", "llm")]

    w.db.delete("Deployment", "web-ui", "eval")
    w.run_for(15, dt=5)
    ws = eval_ws(w)
    assert [(b.kind, b.name) for b in ws.drain.blockers] == [("RayService", "llm")]
    assert w.db.get("TauWorkspace", "eval", "tau-system")["status"]["target"]["resolvedNamespace"] == "eval"
    assert w.db.get("Namespace", "eval")["metadata"]["labels"]["tau.azure.com/workspace"] == "eval"

    w.db.delete("RayService", "llm", "eval")  # the last blocker
    w.run_for(15, dt=5)
    status = w.db.get("TauWorkspace", "eval", "tau-system")["status"]
    assert status["target"]["resolvedNamespace"] == "eval-v2"
    old = w.db.get("Namespace", "eval")["metadata"]
    for key in (
        "tau.azure.com/workspace",
        "tau.azure.com/team",
        "tau.azure.com/local-queue",
        "kueue.x-k8s.io/default-local-queue",
        "app.kubernetes.io/managed-by",
    ):
        assert key not in old.get("labels", {})
    assert old["labels"]["kubernetes.io/metadata.name"] == "eval"
    assert w.db.get("LocalQueue", "jobqueue", "eval") is None
    assert w.db.get("LocalQueue", "shared", "eval") is not None  # not the workspace's
    assert w.db.get("ServiceAccount", "tau-workload", "eval") is None
    assert w.db.get("RoleBinding", "tau-researcher-v1", "eval") is None
    ws = eval_ws(w)
    assert ws.namespace == "eval-v2" and ws.drain.state == "NotDraining"
    assert not [f for f in db_view(w).findings if f.rule.startswith("DRAIN-")]


def test_workloads_of_a_deleted_source_are_garbage_collected():
    w = sim_world()
    w.step(5)
    owned = [
        x["metadata"]["name"]
        for x in w.db.list("Workload", "eval")
        if x["metadata"]["ownerReferences"][0]["name"] == "mmlu-sweep-17"
    ]
    assert owned
    w.db.delete("Job", "mmlu-sweep-17", "eval")
    w.run_for(10, dt=5)
    assert all(w.db.get("Workload", n, "eval") is None for n in owned)
    assert ("delete", "Workload", f"eval/{owned[0]}") in [(v, k, r) for _, v, k, r in w.event_log()]


# --- profiles -----------------------------------------------------------------------------------------


def test_published_profiles_verify_and_a_catalog_change_gets_a_new_hash():
    w = sim_world()
    w.step(5)
    view = db_view(w)
    assert view.profiles.usable
    assert view.profiles.profile_set_hash == view.profiles.computed_hash
    old_hash, old_gen = view.profiles.profile_set_hash, view.profiles.generation

    tc = w.db.get("TauCluster", "cluster")
    added = {
        **tc["spec"]["workloadProfiles"][0],
        "name": "azure.research.training.quick",
        "description": "A quick one-GPU lane.",
        "applicability": {"teams": ["research"], "lanes": ["quick"], "namespaces": ["train"]},
    }
    w.db.patch_merge("TauCluster", "cluster", {"spec": {"workloadProfiles": [*tc["spec"]["workloadProfiles"], added]}})
    assert db_view(w).profiles.usable is False  # stale until the controller observes the new generation
    w.step(5)
    view = db_view(w)
    assert view.profiles.usable and view.profiles.generation == old_gen + 1
    assert view.profiles.profile_set_hash != old_hash
    assert view.profiles.profile_set_hash == view.profiles.computed_hash
    row = next(p for p in view.profiles.profiles if p.name == "azure.research.training.quick")
    assert row.ready
    published = w.db.get("TauCluster", "cluster")["status"]
    assert published["observedGeneration"] == old_gen + 1
    ready = conditions(w.db.get("TauCluster", "cluster"))["WorkloadProfilesReady"]
    assert ready["status"] == "True" and ready["observedGeneration"] == old_gen + 1
    ps = load_profile_set(w.store())
    assert profile_set_hash(list(ps.profiles)) == published["workloadProfiles"]["profileSetHash"]


def test_a_catalog_change_under_hold_and_drain_becomes_ready():
    """TauGrid's profile migration procedure holds the queues, then waits for the new catalog to be Ready: a held
    (Stopped) queue must not make the profiles that resolve to it unready."""
    w = sim_world()
    w.step(5)
    w.db.patch_merge("ClusterQueue", "tau-ws-train", {"spec": {"stopPolicy": "HoldAndDrain"}})
    w.step(5)
    tc = w.db.get("TauCluster", "cluster")
    lanes = [{**p, "description": p.get("description", "") + " (v2)"} for p in tc["spec"]["workloadProfiles"]]
    w.db.patch_merge("TauCluster", "cluster", {"spec": {"workloadProfiles": lanes}})
    w.step(5)
    view = db_view(w)
    assert view.profiles.usable and all(p.ready for p in view.profiles.profiles)
    assert next(q for q in view.cluster_queues if q.name == "tau-ws-train").active is False


def test_a_profile_with_a_missing_queue_is_not_ready_and_the_set_is_unusable():
    w = sim_world()
    tc = w.db.get("TauCluster", "cluster")
    broken = {**tc["spec"]["workloadProfiles"][0], "name": "azure.research.broken", "defaultLocalQueue": "nope"}
    w.db.patch_merge("TauCluster", "cluster", {"spec": {"workloadProfiles": [*tc["spec"]["workloadProfiles"], broken]}})
    w.step(5)
    status = w.db.get("TauCluster", "cluster")["status"]
    prof = next(p for p in status["workloadProfiles"]["profiles"] if p["name"] == "azure.research.broken")
    c = {x["type"]: x for x in prof["conditions"]}
    assert c["LocalQueuesResolved"]["status"] == "False" and "train/nope" in c["LocalQueuesResolved"]["message"]
    assert c["ClusterQueuesReady"]["status"] == "False" and c["ClusterQueuesReady"]["message"] == ""
    assert c["Ready"]["status"] == "False"
    assert conditions(w.db.get("TauCluster", "cluster"))["WorkloadProfilesReady"]["status"] == "False"
    view = db_view(w)
    assert not view.profiles.usable
    assert view.profiles.profile_set_hash == view.profiles.computed_hash  # published honestly, just not ready


def test_a_worker_going_inactive_turns_multikueue_not_ready():
    w = sim_world(events=[{"at": 10, "workerInactive": "eastus-2"}])
    w.step(5)
    assert conditions(w.db.get("TauCluster", "cluster"))["MultiKueueReady"]["status"] == "True"
    w.run_for(10, dt=5)
    mk = conditions(w.db.get("TauCluster", "cluster"))["MultiKueueReady"]
    assert mk["status"] == "False" and "no Active worker clusters" in mk["message"]
    ac = conditions(w.db.get("AdmissionCheck", "multikueue"))["Active"]
    assert (ac["status"], ac["reason"]) == ("False", "NoUsableClusters")


# --- nodes --------------------------------------------------------------------------------------------


def admitted(w: World) -> set[str]:
    return {
        f"{x['metadata']['namespace']}/{x['metadata']['name']}"
        for x in w.db.list("Workload")
        if conditions(x).get("Admitted", {}).get("status") == "True" and "Finished" not in conditions(x)
    }


def test_a_node_going_not_ready_shrinks_the_budget_and_evicts_nothing():
    node = "aks-h100-27604139-vmss000000"
    w = sim_world(events=[{"at": 20, "notReady": node}], jobMinutes=[600, 600])
    w.step(5)
    assert root_gpus(w, "taugrid-gpu-h100-80gb") == Quantity(64)
    running = admitted(w)
    w.run_for(30, dt=5)
    assert conditions(w.db.get("Node", node))["Ready"]["status"] == "Unknown"
    assert root_gpus(w, "taugrid-gpu-h100-80gb") == Quantity(56)
    assert admitted(w) >= running
    assert not [
        x
        for x in w.db.list("Workload")
        if conditions(x).get("Evicted", {}).get("status") == "True"
        and x["metadata"]["namespace"] + "/" + x["metadata"]["name"] in running
    ]
    flavor = next(f for f in db_view(w).pool.flavors if f.name == "taugrid-gpu-h100-80gb")
    assert flavor.nodes == 7 and any(e.node == node and e.reason == "NotReady" for e in flavor.excluded)


def test_the_demo_budget_never_admits_past_the_root_cohort():
    """h200 starts over budget (32 > 24 after the lost node): new admissions wait; the reserved
    total of each pool flavor only rises while it stays within the root budget."""
    w = sim_world(arrivalsPerHour=60)

    def reserved(flavor: str) -> Quantity:
        total = Quantity(0)
        for cq in w.db.list("ClusterQueue"):
            if not cq["metadata"]["name"].startswith("tau-ws-"):
                continue
            for fl in cq["status"].get("flavorsReservation", []):
                if fl["name"] == flavor:
                    total = total + Quantity.parse(next(r["total"] for r in fl["resources"] if r["name"] == GPU))
        return total

    flavors = ("taugrid-gpu-a100-80gb", "taugrid-gpu-h100-80gb", "taugrid-gpu-h200-141gb")
    w.step(5)
    assert reserved("taugrid-gpu-h200-141gb") > root_gpus(w, "taugrid-gpu-h200-141gb")
    for _ in range(120):
        before = {f: reserved(f) for f in flavors}
        w.step(15)
        for f in flavors:
            after, budget = reserved(f), root_gpus(w, f)
            assert after <= before[f] or after <= budget, (f, before[f], after, budget)


@pytest.mark.parametrize("dt", [5, 30])
def test_arrivals_land_in_each_workspaces_current_namespace(dt):
    w = sim_world(arrivalsPerHour=120)
    w.run_for(20 * 60, dt=dt)
    created = [r for _, verb, kind, r in w.event_log() if verb == "create" and kind in ("Job", "RayJob")]
    assert len(created) > 10
    assert {r.split("/")[0] for r in created} <= {"train", "eval-v2", "vision"}


# --- the real clock: a snapshot's capture time becomes the moment the server starts ---------------------------


async def test_a_real_clock_server_moves_the_snapshot_to_now_and_keeps_every_interval():
    import time

    from taudash.sim.clock import parse_rfc3339
    from taudash.sim.server import SimServer
    from taudash.sim.world import World

    def stamps(sim) -> dict[str, float]:
        return {f"{w['metadata']['namespace']}/{w['metadata']['name']}":
                parse_rfc3339(w["metadata"]["creationTimestamp"]) for w in sim.db.list(sim.db.resource("workloads"))}

    async with SimServer(tls=False, warm_lists=False) as frozen:
        old = stamps(frozen)
        captured = World.for_server(frozen).clock.now()
        assert frozen.clock_start is None
    before = time.time()
    async with SimServer(tls=False, warm_lists=False, real_clock=True) as real:
        new = stamps(real)
        world = World.for_server(real)
    assert before <= real.clock_start <= time.time()
    assert world.clock.now() == real.clock_start  # simulated time runs from now
    delta = real.clock_start - captured
    assert delta > 3600  # the demo was captured in the past
    assert set(new) == set(old) and all(abs(new[k] - (old[k] + delta)) < 1.0 for k in old)
    assert max(new.values()) <= real.clock_start + 1.0  # nothing created in the future
