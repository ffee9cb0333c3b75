"""The simulated dcgm-exporter: one series per GPU of each GPU node, the holding Pod's labels, idle Pods by seed."""

from __future__ import annotations

import re

import aiohttp

from taudash.sim.dcgm import DcgmExporter, exposition, gpu_series, idle_pod

SERIES = re.compile(r'^(DCGM_[A-Z_]+)\{(.*)\} (\S+)$')


def parsed(text: str) -> list[tuple[str, dict[str, str], float]]:
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = SERIES.match(line)
        assert m, line
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        out.append((m.group(1), labels, float(m.group(3))))
    return out


async def test_every_gpu_of_every_gpu_node_is_a_series_labelled_with_its_pod(sim_server):
    exporter = await DcgmExporter(sim_server.db, seed=0, idle_share=0.0).start()
    try:
        async with aiohttp.ClientSession() as http, http.get(exporter.url) as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            rows = parsed(await r.text())
    finally:
        await exporter.stop()
    nodes = sim_server.db.list("Node")
    gpus = {n["metadata"]["name"]: int(n["status"]["allocatable"].get("nvidia.com/gpu", 0)) for n in nodes}
    util = [(labels, v) for name, labels, v in rows if name == "DCGM_FI_DEV_GPU_UTIL"]
    per_node: dict[str, int] = {}
    for labels, _ in util:
        per_node[labels["Hostname"]] = per_node.get(labels["Hostname"], 0) + 1
    assert per_node == {n: c for n, c in gpus.items() if c}
    # a GPU-holding Pod's GPUs carry its namespace/pod/container; no idle share: every allocated GPU is busy
    pods = [p for p in sim_server.db.list("Pod") if p["spec"].get("nodeName")
            and p["status"].get("phase") not in ("Succeeded", "Failed")]
    held = {(lb["namespace"], lb["pod"]) for lb, _ in util if "pod" in lb}
    assert held and held <= {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}
    assert all(v >= 60 for lb, v in util if "pod" in lb)
    assert all(v == 0 for lb, v in util if "pod" not in lb)
    assert {name for name, _, _ in rows} == {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                                            "DCGM_FI_DEV_FB_USED"}


async def test_the_idle_share_is_picked_per_pod_by_the_seed(sim_server):
    nodes, pods = sim_server.db.list("Node"), sim_server.db.list("Pod")
    series = gpu_series(nodes, pods, seed=3, idle_share=0.5)
    assert series == gpu_series(nodes, pods, seed=3, idle_share=0.5)  # the same seed, the same GPUs
    held = [s for s in series if s.allocated]
    idle = {(s.namespace, s.pod) for s in held if s.idle}
    assert idle == {(s.namespace, s.pod) for s in held if idle_pod(3, 0.5, s.namespace, s.pod)}
    assert 0 < len(idle) < len({(s.namespace, s.pod) for s in held})
    # every GPU of an idle Pod is idle; 0 and 1 make none and all idle
    assert all(s.idle for s in held if (s.namespace, s.pod) in idle)
    assert not any(s.idle for s in gpu_series(nodes, pods, seed=3, idle_share=0.0) if s.allocated)
    assert all(s.idle for s in gpu_series(nodes, pods, seed=3, idle_share=1.0) if s.allocated)
    assert gpu_series(nodes, pods, seed=4, idle_share=0.5) != series


def test_a_pod_gets_as_many_gpus_as_it_asks_in_creation_order():
    node = {"metadata": {"name": "n1", "labels": {}}, "status": {"allocatable": {"nvidia.com/gpu": "4"}}}

    def pod(name: str, gpus: str, created: str, phase: str = "Running") -> dict:
        return {"metadata": {"name": name, "namespace": "ns", "creationTimestamp": created},
                "spec": {"nodeName": "n1", "containers": [
                    {"name": "side"}, {"name": "main", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]},
                "status": {"phase": phase}}

    series = gpu_series([node], [pod("b", "1", "2026-01-01T00:00:02Z"), pod("a", "2", "2026-01-01T00:00:01Z"),
                                 pod("done", "1", "2026-01-01T00:00:00Z", "Succeeded")], idle_share=0.0)
    assert [(s.gpu, s.pod, s.container) for s in series] == [(0, "a", "main"), (1, "a", "main"), (2, "b", "main"),
                                                             (3, "", "")]
    text = exposition(series)
    assert 'DCGM_FI_DEV_GPU_UTIL{gpu="3",' in text and 'Hostname="n1"} 0' in text
