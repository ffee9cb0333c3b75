"""The bench generator's multi-worker gangs (taudash/bench/generate.py): a Job or RayJob of W workers is one
Workload whose pod set counts W, and once admitted (or finished) it has W Pods, each bound to a node of its
flavor; nodes are never over-committed; the Pods counted per size are what docs/benchmarks.md says."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from taudash.bench.generate import WORKERS, Size, generate

SMALL = Size("T", 40, 600, 300, 20, 2, 3, 4)


@pytest.fixture(scope="module")
def objs():
    return generate(SMALL, seed=7)


def _owner_uid(o: dict) -> str:
    return o["metadata"]["ownerReferences"][0]["uid"]


def test_gangs_have_one_pod_per_worker_bound_in_their_flavor(objs):
    nodes = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Node"}
    pods_of: dict[str, list[dict]] = defaultdict(list)
    for p in objs:
        if p["kind"] == "Pod" and p["metadata"].get("ownerReferences"):
            pods_of[_owner_uid(p)].append(p)
    workers_seen = Counter()
    for wl in (o for o in objs if o["kind"] == "Workload"):
        if wl["metadata"]["ownerReferences"][0]["kind"] not in ("Job", "RayJob"):
            continue
        count = wl["spec"]["podSets"][0]["count"]
        workers_seen[count] += 1
        admitted = "admission" in wl["status"]
        pods = pods_of.get(_owner_uid(wl), [])
        if not admitted:
            assert pods == [], wl["metadata"]["name"]  # a waiting job has no Pods
            continue
        assert wl["status"]["admission"]["podSetAssignments"][0]["count"] == count
        assert len(pods) == count, wl["metadata"]["name"]
        gpus = wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]
        usage = wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["nvidia.com/gpu"]
        assert int(usage) == int(gpus) * count
        cls = wl["spec"]["podSets"][0]["template"]["spec"]["nodeSelector"]["tau.azure.com/gpu-class"]
        for p in pods:
            node = p["spec"].get("nodeName")
            if node:  # (a full flavor leaves a worker Pending, unbound)
                assert nodes[node]["metadata"]["labels"]["tau.azure.com/gpu-class"] == cls
    assert set(workers_seen) == set(WORKERS)  # every gang size occurs
    assert sum(n for w, n in workers_seen.items() if w > 1) > 0


def test_no_node_holds_more_gpus_than_it_has(objs):
    held: Counter[str] = Counter()
    for p in objs:
        if p["kind"] == "Pod" and p["status"]["phase"] == "Running" and p["spec"].get("nodeName"):
            req = p["spec"]["containers"][0]["resources"]["requests"].get("nvidia.com/gpu", "0")
            held[p["spec"]["nodeName"]] += int(req)
    alloc = {o["metadata"]["name"]: int(o["status"]["allocatable"].get("nvidia.com/gpu", "0"))
             for o in objs if o["kind"] == "Node"}
    assert held and all(held[n] <= alloc[n] for n in held)


def test_pods_counted_per_gang_and_plain_pod():
    """Pods = the workers of the admitted and finished jobs + one per plain Pod workload + two agents per
    GPU node; the same size and seed give the same count."""
    objs = generate(SMALL, seed=3)
    kinds = Counter(o["kind"] for o in objs)
    want = 0
    for wl in (o for o in objs if o["kind"] == "Workload"):
        kind = wl["metadata"]["ownerReferences"][0]["kind"]
        if kind == "Pod":
            want += 1
        elif "admission" in wl["status"]:
            want += wl["spec"]["podSets"][0]["count"]
    gpu_nodes = sum(1 for o in objs if o["kind"] == "Node" and "nvidia.com/gpu" in o["status"]["allocatable"])
    assert kinds["Pod"] == want + 2 * gpu_nodes
    assert kinds["Pod"] > kinds["Workload"]  # gangs make more Pods than Workloads
    assert Counter(o["kind"] for o in generate(SMALL, seed=3)) == kinds
