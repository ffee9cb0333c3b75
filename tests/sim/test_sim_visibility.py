"""Kueue's visibility API in the simulator: discovery, both pendingworkloads endpoints through the real
kubectl (limit/offset, 404, 403), and positions that are the simulated scheduler's admission order."""

from __future__ import annotations

import json
import random

import factories
import pytest
import pytest_asyncio
from factories import cluster_queue, local_queue, small_world, workload_priority_class
from test_sim_kubectl import FIXTURE, kubectl

from taudash.sim import visibility
from taudash.sim.server import SimServer

CQ_PATH = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/tau-ws-training/pendingworkloads"


def pending_wl(name: str, priority: int, minute: int, queue: str = "jobqueue") -> dict:
    wl = factories.workload(name, "training", queue=queue, owner=("Job", f"job-{name}", f"uid-job-{name}"))
    wl["spec"]["priority"] = priority
    wl["metadata"]["creationTimestamp"] = f"2026-03-01T10:{minute:02d}:00Z"
    return wl


# name, priority, minute: the expected order is priority desc, then age
EXTRA = [("w-low-old", 0, 1), ("w-high-new", 100, 30), ("w-mid", 50, 10), ("w-low-new", 0, 20),
         ("w-other-lq", 50, 5, "second")]


@pytest_asyncio.fixture
async def sim(tmp_path):
    objs = [pending_wl(*e) for e in EXTRA] + [local_queue("second", "training", "tau-ws-training")]
    async with SimServer(FIXTURE, objects=objs, kubeconfig=tmp_path / "kube" / "config") as s:
        yield s


async def get_raw(sim, path: str, ok: bool = True):
    code, out, err = await kubectl(sim, "get", "--raw", path, ok=ok)
    return (json.loads(out) if code == 0 else None), code, err


async def test_discovery_serves_the_group_in_both_versions_after_kueue(sim):
    groups, _, _ = await get_raw(sim, "/apis")
    names = [g["name"] for g in groups["groups"]]
    assert "visibility.kueue.x-k8s.io" in names
    assert names.index("visibility.kueue.x-k8s.io") > names.index("kueue.x-k8s.io")
    group = next(g for g in groups["groups"] if g["name"] == "visibility.kueue.x-k8s.io")
    assert [v["version"] for v in group["versions"]] == ["v1beta2", "v1beta1"]
    assert group["preferredVersion"]["version"] == "v1beta2"
    rl, _, _ = await get_raw(sim, "/apis/visibility.kueue.x-k8s.io/v1beta1")
    assert {r["name"] for r in rl["resources"]} == {"clusterqueues/pendingworkloads", "localqueues/pendingworkloads"}
    # kubectl still resolves the plain resource name to Kueue's ClusterQueues
    _, out, _ = await kubectl(sim, "get", "clusterqueues", "-o", "name")
    assert "clusterqueue.kueue.x-k8s.io/tau-ws-training" in out


async def test_cluster_queue_endpoint_orders_every_pending_workload(sim):
    body, _, _ = await get_raw(sim, CQ_PATH)
    assert body["kind"] == "PendingWorkloadsSummary"
    assert body["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
    names = [i["metadata"]["name"] for i in body["items"]]
    # w-high-new (100) first; then 50s by age: w-other-lq (10:05) before w-mid (10:10); the fixture's own
    # pending Workload (priority 0) sits with the 0s by its creation time
    assert names[:3] == ["w-high-new", "w-other-lq", "w-mid"]
    assert names.index("w-low-old") < names.index("w-low-new")
    assert "job-train-b-9d8e7" in names
    assert [i["positionInClusterQueue"] for i in body["items"]] == list(range(len(names)))
    first = body["items"][0]
    assert first["priority"] == 100 and first["localQueueName"] == "jobqueue" and first["positionInLocalQueue"] == 0
    assert first["metadata"]["namespace"] == "training" and first["metadata"]["creationTimestamp"]
    other = body["items"][1]
    assert other["localQueueName"] == "second" and other["positionInLocalQueue"] == 0
    assert first["metadata"]["ownerReferences"] == [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "job-w-high-new", "uid": "uid-job-w-high-new",
         "controller": True}]


async def test_local_queue_endpoint_keeps_the_cluster_queue_position(sim):
    path = "/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/training/localqueues/second/pendingworkloads"
    body, _, _ = await get_raw(sim, path)
    assert body["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
    assert [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in body["items"]] \
        == [("w-other-lq", 1, 0)]
    main, _, _ = await get_raw(sim, path.replace("/second/", "/jobqueue/"))
    assert [i["positionInLocalQueue"] for i in main["items"]] == list(range(len(main["items"])))
    assert main["items"][1]["positionInClusterQueue"] == 2  # w-mid: behind w-other-lq of the other LocalQueue


async def test_limit_and_offset(sim):
    full, _, _ = await get_raw(sim, CQ_PATH)
    page, _, _ = await get_raw(sim, CQ_PATH + "?limit=2&offset=1")
    assert page["items"] == full["items"][1:3]
    none, _, _ = await get_raw(sim, CQ_PATH + "?limit=0")
    assert none["items"] == []
    past, _, _ = await get_raw(sim, CQ_PATH + "?offset=100")
    assert past["items"] == []
    huge, _, _ = await get_raw(sim, CQ_PATH + "?limit=1000000")  # clamped to 100000, not refused
    assert huge["items"] == full["items"]
    _, code, err = await get_raw(sim, CQ_PATH + "?limit=abc", ok=False)
    assert code != 0 and ("BadRequest" in err or "invalid limit" in err)


async def test_unknown_queues_are_404(sim):
    _, code, err = await get_raw(sim, CQ_PATH.replace("tau-ws-training", "nope"), ok=False)
    assert code != 0 and "NotFound" in err
    path = "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/training/localqueues/nope/pendingworkloads"
    _, code, err = await get_raw(sim, path, ok=False)
    assert code != 0 and "NotFound" in err
    _, code, err = await get_raw(sim, "/apis/visibility.kueue.x-k8s.io/v1/clusterqueues/x/pendingworkloads", ok=False)
    assert code != 0 and "NotFound" in err


async def test_forbidden_subresources_answer_403(sim):
    sim.faults.forbid(visibility.CLUSTERQUEUE_PENDING)
    _, code, err = await get_raw(sim, CQ_PATH, ok=False)
    assert code != 0 and "Forbidden" in err
    lq_path = "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/training/localqueues/jobqueue/pendingworkloads"
    body, _, _ = await get_raw(sim, lq_path)  # the other subresource stays readable
    assert body["items"]
    sim.faults.forbid(visibility.LOCALQUEUE_PENDING)
    _, code, err = await get_raw(sim, lq_path, ok=False)
    assert code != 0 and "Forbidden" in err
    sim.faults.allow(visibility.CLUSTERQUEUE_PENDING)
    assert (await get_raw(sim, CQ_PATH))[0]["items"]


async def test_a_simulator_without_the_visibility_api_serves_404(sim):
    sim.api.set_group_enabled(visibility.GROUP, False)
    groups, _, _ = await get_raw(sim, "/apis")
    assert "visibility.kueue.x-k8s.io" not in [g["name"] for g in groups["groups"]]
    _, code, err = await get_raw(sim, CQ_PATH, ok=False)
    assert code != 0 and "NotFound" in err


# --- positions against the simulated scheduler -----------------------------------------------------------

def admitted(w) -> set[str]:
    out = set()
    for wl in w.db.list("Workload"):
        c = {x["type"]: x["status"] for x in (wl.get("status") or {}).get("conditions", [])}
        if c.get("QuotaReserved") == "True" and c.get("Finished") != "True":
            out.add(wl["metadata"]["name"])
    return out


def finish(w, wl_name: str, ns: str) -> None:
    wl = w.db.get("Workload", wl_name, ns)
    job = wl["metadata"]["ownerReferences"][0]["name"]
    w.db.patch_merge("Job", job, {"status": {"conditions": [{"type": "Complete", "status": "True"}]}}, ns,
                     subresource="status")


@pytest.mark.parametrize("seed", [1, 7])
def test_the_head_of_the_list_is_admitted_next(seed):
    rng = random.Random(seed)
    classes = [workload_priority_class("low", 10), workload_priority_class("high", 1000)]
    jobs = []
    for i in range(9):
        ns, q = rng.choice([("team-a", "qa"), ("team-b", "qb")])
        # shared minutes on purpose: the scheduler's same-second tie-break must match too
        jobs.append(factories.job(f"j{i}", ns, queue=q, gpus=4, minute=rng.randint(0, 3),
                                  priority=rng.choice(["", "low", "high"])))
    w = small_world(*classes, cluster_queue("cq", flavors={"gpu": {"nvidia.com/gpu": "4"}}, every_resource=True,
                                            status=False, stop="None"),
                    local_queue("qa", "team-a", "cq"), local_queue("qb", "team-b", "cq"), *jobs, seed=seed)
    w.step(1)
    running = admitted(w)
    assert len(running) == 1
    order_seen = []
    for _ in range(len(jobs) - 1):
        summary = visibility.pending_workloads(w.db, visibility.CLUSTERQUEUE_PENDING, "v1beta2", None, "cq", {})
        assert [i["positionInClusterQueue"] for i in summary["items"]] == list(range(len(summary["items"])))
        head = summary["items"][0]["metadata"]
        (done,) = running
        finish(w, done,
               next(x["metadata"]["namespace"] for x in w.db.list("Workload") if x["metadata"]["name"] == done))
        for _ in range(5):
            w.step(1)
            if admitted(w) - running - {done}:
                break
        now = admitted(w)
        assert now - {done} == {head["name"]}, f"admitted {now - {done}}, the list's head was {head['name']}"
        order_seen.append(head["name"])
        running = now - {done}
    final = visibility.pending_workloads(w.db, visibility.CLUSTERQUEUE_PENDING, "v1beta2", None, "cq", {})
    assert final["items"] == []
    assert len(set(order_seen)) == len(jobs) - 1


async def test_only_get_is_served(sim):
    import aiohttp

    url = sim.url + CQ_PATH
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {sim.token}"}) as c:
        async with c.get(url + "?watch=true", ssl=False) as r:
            assert r.status == 405
        async with c.post(url, json={}, ssl=False) as r:
            assert r.status == 405
        async with c.get(url, ssl=False) as r:
            assert r.status == 200 and (await r.json())["kind"] == "PendingWorkloadsSummary"
    assert sim.api.writes["create"] == 1  # counted like any write attempt, nothing stored
