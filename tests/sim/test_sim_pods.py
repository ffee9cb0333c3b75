"""Pods in the simulated cluster: served as core/v1 pods (list, watch, get, delete, /status, the pod field
selectors), made for admitted Workloads by the pods controller and moved with their jobs, and Kueue's
topology check (TopologyPlacementFailed, topologyAssignment) on small hand-built clusters and the demo."""

from __future__ import annotations

import asyncio
from collections import Counter

import factories
import pytest
import pytest_asyncio
from factories import cluster_queue, local_queue, node, resource_flavor, sim_world, small_world, topology
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import new_client_from_config
from kubernetes_asyncio.watch import Watch
from tools.paths import FIXTURES

from taudash.engine.sources.library_files import closing_library_descriptors
from taudash.sim.controllers.pods import topology_hosts
from taudash.sim.kueue_versions import OBSERVABILITY, kueue_version
from taudash.sim.server import SimServer
from taudash.sim.world import World

GPU = "nvidia.com/gpu"
AD = "tau.azure.com/accelerator-domain"
HOST = "kubernetes.io/hostname"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"


# --- a small cluster: two NVLink domains of two 4-GPU trays, one TAS flavor -----------------------------


def tray(name: str, domain: str) -> dict:
    return node(name, "gb200", alloc={GPU: "4", "cpu": "64", "memory": "512Gi", "pods": "110"},
                labels={AD: domain, HOST: name})


def job(name: str, gpus: int, count: int = 1, level: str | None = None, minute: int = 0) -> dict:
    j = factories.job(name, "team-a", queue="lq", gpus=gpus, minute=minute)
    j["spec"]["parallelism"] = j["spec"]["completions"] = count
    if count > 1:
        j["spec"]["completionMode"] = "Indexed"
    if level:
        j["spec"]["template"]["metadata"] = {"annotations": {REQUIRED: level}}
    return j


def tas_world(*objs: dict, granular: bool = True, flavor_topology: bool = True) -> World:
    flavor = resource_flavor("gpu", {"tau.azure.com/gpu-class": "gb200"}, topology="topo" if flavor_topology else None)
    cq = cluster_queue("cq", flavors={"gpu": {GPU: "100", "cpu": "1000", "memory": "4Ti"}}, status=False,
                       stop="None")
    w = small_world(topology("topo", AD, HOST), cq, local_queue("lq", "team-a", "cq"),
                    *(tray(f"n{i}", f"d{i // 2}") for i in range(4)), *objs, granular_reasons=granular)
    w.db.patch_merge("ResourceFlavor", "gpu", {"spec": flavor["spec"]})
    return w


def workload_of(w: World, name: str, ns: str = "team-a") -> dict:
    return next(x for x in w.db.list("Workload", ns) if x["metadata"]["ownerReferences"][0]["name"] == name)


def quota_reserved(w: World, name: str) -> tuple[str, str, str]:
    c = next(x for x in workload_of(w, name)["status"]["conditions"] if x["type"] == "QuotaReserved")
    return c["status"], c["reason"], c["message"]


def pods_of(w: World, owner: str, ns: str = "team-a") -> list[dict]:
    return [p for p in w.db.list("Pod", ns) if p["metadata"]["ownerReferences"][0]["name"] == owner]


def nodes_of(w: World, owner: str) -> list[str | None]:
    return sorted((p["spec"].get("nodeName") for p in pods_of(w, owner)), key=lambda n: n or "")


def finish(w: World, name: str, ns: str = "team-a", how: str = "Complete") -> None:
    w.db.patch_merge("Job", name, {"status": {"conditions": [{"type": how, "status": "True"}]}}, ns,
                     subresource="status")


# --- the pods controller ----------------------------------------------------------------------------------


def test_an_admitted_job_gets_bound_pods_owned_by_it_that_run_then_succeed_and_go_with_it():
    w = tas_world(job("train", 2, count=2))
    w.run_for(5, dt=5)
    assert pods_of(w, "train") == []  # admitted, but the Job starts in the next pass
    w.run_for(20, dt=5)
    pods = pods_of(w, "train")
    assert len(pods) == 2 and all(p["status"]["phase"] == "Running" for p in pods)
    j = w.db.get("Job", "train", "team-a")
    for p in pods:
        m = p["metadata"]
        assert m["labels"]["batch.kubernetes.io/job-name"] == "train"
        assert m["labels"]["batch.kubernetes.io/controller-uid"] == j["metadata"]["uid"]
        assert m["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
                                         "uid": j["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
        assert p["spec"]["nodeName"] and p["spec"]["containers"][0]["resources"]["requests"][GPU] == "2"
        cs = p["status"]["containerStatuses"][0]
        assert cs["restartCount"] == 0 and cs["ready"] and "running" in cs["state"]
    assert sorted(m["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] for m in pods) == ["0", "1"]
    finish(w, "train")
    w.run_for(10, dt=5)
    pods = pods_of(w, "train")
    assert [p["status"]["phase"] for p in pods] == ["Succeeded", "Succeeded"]
    assert pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    w.db.delete("Job", "train", "team-a")
    w.run_for(10, dt=5)
    assert pods_of(w, "train") == []  # garbage collected with their owner


def test_a_failed_job_leaves_failed_pods():
    w = tas_world(job("flaky", 1))
    w.run_for(20, dt=5)
    finish(w, "flaky", how="Failed")
    w.run_for(10, dt=5)
    [p] = pods_of(w, "flaky")
    assert p["status"]["phase"] == "Failed" and p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"]


def test_an_evicted_job_loses_its_pods_and_gets_new_ones_when_admitted_again():
    w = tas_world(job("j", 1))
    w.run_for(20, dt=5)
    [first] = pods_of(w, "j")
    w.db.patch_merge("Workload", workload_of(w, "j")["metadata"]["name"], {"spec": {"active": False}}, "team-a")
    w.run_for(15, dt=5)
    assert pods_of(w, "j") == []
    w.db.patch_merge("Workload", workload_of(w, "j")["metadata"]["name"], {"spec": {"active": True}}, "team-a")
    w.run_for(30, dt=5)
    [again] = pods_of(w, "j")
    assert again["metadata"]["name"] != first["metadata"]["name"] and again["status"]["phase"] == "Running"


def test_a_pod_no_node_has_room_for_stays_pending_unscheduled_until_room_frees():
    w = tas_world(job("big", 4, count=4), job("late", 4, minute=1))
    w.run_for(20, dt=5)
    assert len([n for n in nodes_of(w, "big") if n]) == 4
    [late] = pods_of(w, "late")
    assert late["status"]["phase"] == "Pending" and "nodeName" not in late["spec"]
    sched = next(c for c in late["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (sched["status"], sched["reason"]) == ("False", "Unschedulable")
    assert sched["message"].startswith("0/4 nodes are available: 4 Insufficient nvidia.com/gpu")
    finish(w, "big")
    w.run_for(15, dt=5)
    [late] = pods_of(w, "late")
    assert late["spec"].get("nodeName") and late["status"]["phase"] == "Running"


def test_pods_of_a_deleted_node_go_and_come_back_elsewhere():
    w = tas_world(job("j", 1))
    w.run_for(20, dt=5)
    [p] = pods_of(w, "j")
    w.db.delete("Node", p["spec"]["nodeName"])
    w.run_for(10, dt=5)
    [q] = pods_of(w, "j")
    assert q["metadata"]["name"] != p["metadata"]["name"] and q["spec"]["nodeName"] != p["spec"]["nodeName"]


def test_a_rayjob_gets_head_worker_and_submitter_pods_labelled_like_kuberay():
    rj = {"apiVersion": "ray.io/v1", "kind": "RayJob",
          "metadata": {"name": "rj", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
          "spec": {"suspend": True, "submissionMode": "K8sJobMode", "rayClusterSpec": {
              "headGroupSpec": {"template": {"spec": {"containers": [
                  {"name": "head", "resources": {"requests": {"cpu": "2"}}}]}}},
              "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": {"spec": {"containers": [
                  {"name": "w", "resources": {"requests": {GPU: "2", "cpu": "4"}}}]}}}]}}}
    w = tas_world(rj)
    w.run_for(40, dt=5)
    pods = pods_of(w, "rj")
    kinds = Counter((p["metadata"]["labels"].get("ray.io/node-type"), p["metadata"]["labels"]["kueue.x-k8s.io/podset"])
                    for p in pods)
    assert kinds == {("head", "head"): 1, ("worker", "gpu"): 2, (None, "submitter"): 1}
    cluster = w.db.get("RayJob", "rj", "team-a")["status"]["rayClusterName"]
    assert all(p["metadata"]["labels"]["ray.io/cluster"] == cluster for p in pods
               if "ray.io/node-type" in p["metadata"]["labels"])
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "RayJob" for p in pods)


def test_a_kueue_managed_deployment_runs_one_pod_per_replica_workload():
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "team-a"},
           "spec": {"replicas": 3, "template": {
               "metadata": {"labels": {"kueue.x-k8s.io/managed": "true", "kueue.x-k8s.io/queue-name": "lq"}},
               "spec": {"containers": [{"name": "c", "resources": {"requests": {GPU: "1"}}}]}}}}
    w = tas_world(dep)
    w.run_for(15, dt=5)
    wls = sorted(x["metadata"]["name"] for x in w.db.list("Workload", "team-a"))
    pods = pods_of(w, "web")
    assert sorted("pod-" + p["metadata"]["name"] for p in pods) == sorted(n[:-6] for n in wls) and len(pods) == 3
    assert all(p["status"]["phase"] == "Running" and p["spec"]["restartPolicy"] == "Always" for p in pods)
    w.db.patch_merge("Deployment", "web", {"spec": {"replicas": 1}}, "team-a")
    w.run_for(15, dt=5)
    [left] = pods_of(w, "web")
    assert "pod-" + left["metadata"]["name"] == w.db.list("Workload", "team-a")[0]["metadata"]["name"][:-6]


def test_the_same_seed_places_the_same_pods():
    def run() -> list[tuple[str, str | None]]:
        w = sim_world(seed=4, arrivalsPerHour=60)
        w.run_for(40 * 60, dt=30)
        return sorted((p["metadata"]["name"], p["spec"].get("nodeName")) for p in w.db.list("Pod"))

    first = run()
    assert len(first) > 20 and first == run()


# --- Kueue's topology check ---------------------------------------------------------------------------------


def test_a_gang_that_fits_in_one_domain_is_admitted_with_a_topology_assignment_its_pods_follow():
    w = tas_world(job("gang", 4, count=2, level=AD))
    w.run_for(20, dt=5)
    assert quota_reserved(w, "gang")[0] == "True"
    hosts = topology_hosts(workload_of(w, "gang"))["main"]
    assert len(hosts) == 2 and len({h[:1] for h in hosts}) == 1
    ta = workload_of(w, "gang")["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert ta["levels"] == [HOST]
    assert nodes_of(w, "gang") == sorted(hosts)
    domains = {w.db.get("Node", n)["metadata"]["labels"][AD] for n in hosts}
    assert len(domains) == 1
    assert all(p["spec"]["nodeSelector"][HOST] == p["spec"]["nodeName"] for p in pods_of(w, "gang"))


def test_small_jobs_in_every_domain_leave_a_gang_pending_with_topology_placement_failed():
    w = tas_world(*(job(f"small-{i}", 1, minute=i) for i in range(4)))
    w.run_for(20, dt=5)
    spread = {w.db.get("Node", n)["metadata"]["labels"][AD] for i in range(4) for n in nodes_of(w, f"small-{i}")}
    assert spread == {"d0", "d1"}  # kube-scheduler spread them over both domains
    w.db.create(job("gang", 4, count=2, level=AD, minute=9))
    w.run_for(15, dt=5)
    status, reason, message = quota_reserved(w, "gang")
    assert (status, reason) == ("False", "TopologyPlacementFailed")
    assert message.startswith('couldn\'t assign flavors to pod set main: topology "topo" ')
    assert "Total nodes: 4; excluded: resource \"nvidia.com/gpu\"" in message
    assert pods_of(w, "gang") == []
    # the same gang without a placement would start: quota is not the problem
    w.db.create(job("loose", 3, count=2, minute=10))
    w.run_for(15, dt=5)
    assert quota_reserved(w, "loose")[0] == "True"
    for i in range(4):
        finish(w, f"small-{i}")
    finish(w, "loose")
    w.run_for(30, dt=5)
    assert quota_reserved(w, "gang")[0] == "True"


def test_without_the_observability_gate_and_on_older_kueue_the_reason_is_pending():
    w = tas_world(job("small-0", 3, minute=0), job("small-1", 3, minute=1), job("small-2", 3, minute=2),
                  job("small-3", 3, minute=3), granular=False)
    w.run_for(20, dt=5)
    w.db.create(job("gang", 4, count=2, level=AD, minute=9))
    w.run_for(15, dt=5)
    status, reason, message = quota_reserved(w, "gang")
    assert (status, reason) == ("False", "Pending") and "doesn't allow to fit any of 2 pod(s)" in message
    assert kueue_version("0.15").reason("QuotaReserved", "TopologyPlacementFailed") == "Pending"
    assert kueue_version("0.19", {OBSERVABILITY: True}).reason("QuotaReserved", "TopologyPlacementFailed") == \
        "TopologyPlacementFailed"


def test_a_flavor_without_a_topology_is_left_to_kube_scheduler():
    w = tas_world(*(job(f"small-{i}", 1, minute=i) for i in range(4)), flavor_topology=False)
    w.run_for(20, dt=5)
    w.db.create(job("gang", 4, count=2, level=AD, minute=9))
    w.run_for(15, dt=5)
    assert quota_reserved(w, "gang")[0] == "True"  # no TAS: admitted by quota; kube-scheduler keeps the domain
    assert "topologyAssignment" not in workload_of(w, "gang")["status"]["admission"]["podSetAssignments"][0]
    assert [n for n in nodes_of(w, "gang") if n] == []  # all inside one domain or none: no domain has two trays


def test_a_required_level_the_topology_lacks_is_refused_by_name():
    w = tas_world(job("gang", 1, count=2, level="example.com/rack"))
    w.run_for(15, dt=5)
    assert quota_reserved(w, "gang")[1:] == (
        "TopologyPlacementFailed",
        "couldn't assign flavors to pod set main: no requested topology level: example.com/rack")


# --- the demo -----------------------------------------------------------------------------------------------


def test_the_demo_runs_its_admitted_work_as_pods_and_its_gang_waits_on_the_topology():
    w = sim_world()
    w.run_for(30, dt=5)
    pods = w.db.list("Pod")
    owners = {(p["metadata"]["namespace"], p["metadata"]["ownerReferences"][0]["name"]) for p in pods}
    assert {("train", "llama-pretrain-13b"), ("train", "rlhf-reward-model"), ("train", "kernel-bench-fp4"),
            ("eval", "data-validate")} <= owners
    # MultiKueue work runs on the worker cluster, not here
    assert not owners & {("train", "remote-pretrain-a"), ("train", "remote-pretrain-b")}
    # the drain-class node keeps its Pods: kube-scheduler does not read GPU health, nothing cordoned it
    on_sick = [p for p in pods if p["spec"].get("nodeName") == "aks-h100-27604139-vmss000003"]
    assert [p["metadata"]["name"].rsplit("-", 1)[0] for p in on_sick] == ["rlhf-reward-model"]
    # the two-node profile keeps its pods in one network domain; same-host work in one host
    llama = {w.db.get("Node", p["spec"]["nodeName"])["metadata"]["labels"]["tau.azure.com/network-domain"]
             for p in pods if p["metadata"]["name"].startswith("llama-pretrain-13b")}
    assert len(llama) == 1
    wl = workload_of(w, "nvl-pretrain-70b", "train")
    qr = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")
    # the release played writes its own reason (upstream 0.19 without the observability gate: Pending)
    assert (qr["status"], qr["reason"]) == ("False", w.db.kueue.reason("QuotaReserved", "TopologyPlacementFailed"))
    assert "allows to fit only 7 out of 8 pod(s)" in qr["message"]


# --- the API ------------------------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def served(tmp_path):
    pods = [factories.pod(f"p{i}", "team-a", node="n1" if i < 2 else None, phase="Running" if i < 2 else "Pending")
            for i in range(3)]
    async with SimServer(FIXTURES / "sim-cluster.yaml", objects=pods) as sim:
        with closing_library_descriptors():  # the library leaves one open per certificate temp file
            c = await new_client_from_config(config_file=str(sim.kubeconfig), temp_file_path=str(tmp_path))
        yield sim, client.CoreV1Api(c)
        await c.close()


async def test_pods_are_a_core_v1_resource_with_status_and_the_pod_field_selectors(served):
    sim, core = served
    resources = {r.name: r for r in (await core.get_api_resources()).resources}
    assert resources["pods"].short_names == ["po"] and resources["pods"].namespaced and "pods/status" in resources
    assert "watch" in resources["pods"].verbs and "delete" in resources["pods"].verbs
    on_n1 = await core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1")
    assert sorted(p.metadata.name for p in on_n1.items) == ["p0", "p1"]
    unbound = await core.list_namespaced_pod("team-a", field_selector="spec.nodeName=")
    assert [p.metadata.name for p in unbound.items] == ["p2"]
    pending = await core.list_pod_for_all_namespaces(field_selector="status.phase=Pending,metadata.namespace=team-a")
    assert [p.metadata.name for p in pending.items] == ["p2"]
    not_running = await core.list_namespaced_pod("team-a", field_selector="status.phase!=Running")
    assert [p.metadata.name for p in not_running.items] == ["p2"]
    with pytest.raises(ApiException) as bad:
        await core.list_namespaced_pod("team-a", field_selector="spec.priority=3")
    assert bad.value.status == 400 and "field label not supported: spec.priority" in bad.value.body
    p = await core.read_namespaced_pod_status("p0", "team-a")
    assert p.status.phase == "Running"
    await core.patch_namespaced_pod_status("p0", "team-a", {"status": {"phase": "Succeeded"}},
                                           _content_type="application/merge-patch+json")
    assert (await core.read_namespaced_pod("p0", "team-a")).status.phase == "Succeeded"


async def test_pods_watch_and_delete(served):
    sim, core = served
    seen: list[tuple[str, str]] = []

    async def watch() -> None:
        async with Watch().stream(core.list_namespaced_pod, "team-a", field_selector="spec.nodeName=n1",
                                  timeout_seconds=20) as stream:
            async for ev in stream:
                seen.append((ev["type"], ev["object"].metadata.name))
                if ev["type"] == "DELETED":
                    return

    task = asyncio.create_task(watch())
    deadline = asyncio.get_running_loop().time() + 20
    while len(seen) < 2 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    await core.delete_namespaced_pod("p1", "team-a")
    await asyncio.wait_for(task, 20)
    assert seen == [("ADDED", "p0"), ("ADDED", "p1"), ("DELETED", "p1")]
    with pytest.raises(ApiException) as gone:
        await core.read_namespaced_pod("p1", "team-a")
    assert gone.value.status == 404


def test_the_demo_generator_places_the_pods_the_simulator_would_and_dates_them_from_their_jobs():
    """The demo file carries these Pods once the engine reads the kind; a running simulator makes the same."""
    from taudash.sim.demo_scenario import build_objects, place_pods

    objects = build_objects()
    pods, messages = place_pods(objects)
    assert place_pods(build_objects())[0] == pods  # deterministic
    assert (set(messages)
            == {"nvl-pretrain-70b"} and "allows to fit only 7 out of 8 pod(s)" in messages["nvl-pretrain-70b"])
    w = sim_world()
    w.step(1)
    live = sorted((p["metadata"]["namespace"], p["metadata"]["name"], p["spec"].get("nodeName"))
                  for p in w.db.list("Pod"))
    assert sorted((p["metadata"]["namespace"], p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods) == live
    jobs = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects if o["kind"] == "Job"}
    for p in pods:
        if not p["spec"].get("nodeName"):
            assert p["status"]["phase"] == "Pending"  # sam2-finetune: four full-node jobs, three Ready H200 hosts
            continue
        assert p["status"]["phase"] == "Running" and p["status"]["containerStatuses"][0]["ready"]
        job = jobs.get((p["metadata"]["namespace"], p["metadata"]["ownerReferences"][0]["name"]))
        if job is not None:
            assert p["metadata"]["creationTimestamp"] == p["status"]["startTime"] == job["status"]["startTime"]
    unbound = [(p["metadata"]["namespace"], p["metadata"]["ownerReferences"][0]["name"]) for p in pods
               if not p["spec"].get("nodeName")]
    assert unbound == [("vision", "sam2-finetune")]


def test_pods_of_a_job_copied_without_its_pod_spec_land_as_the_workload_says():
    """A rehearsal's fork keeps only what taudash reads of a job (no pod spec): its Pods are stamped from the
    Workload's copy of the pod set and the admitted flavor, so they bind where the real ones did."""
    w = tas_world(job("slim", 2))
    w.run_for(5, dt=5)
    w.db.patch_merge("Job", "slim", {"spec": {"template": {"spec": None}}}, "team-a")
    w.run_for(15, dt=5)
    [p] = pods_of(w, "slim")
    assert p["spec"]["containers"][0]["resources"]["requests"][GPU] == "2"
    assert p["spec"]["nodeSelector"] == {"tau.azure.com/gpu-class": "gb200"} and p["spec"].get("nodeName")


def test_a_workload_owned_by_a_pod_is_not_the_simulators_to_collect():
    w = tas_world(job("j", 1))
    w.run_for(5, dt=5)
    name = workload_of(w, "j")["metadata"]["name"]
    w.db.patch_merge("Workload", name, {"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "plain", "uid": "u-plain", "controller": True}]}}, "team-a")
    w.run_for(15, dt=5)
    assert w.db.get("Workload", name, "team-a") is not None  # Kueue's plain-pod Workloads are not simulated
