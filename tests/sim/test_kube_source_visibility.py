"""KubeSource.pending_workloads against the simulator: served (Kueue's positions), forbidden (unknown,
never an empty list), not served (queue_order's estimate, labelled), unknown queue, failing API."""

from __future__ import annotations

import pytest
from factories import local_queue
from test_kube_source import Live
from test_sim_kubectl import FIXTURE
from test_sim_visibility import EXTRA, pending_wl

from taudash.engine.rules.queue_order import ESTIMATED, FROM_API, UNKNOWN
from taudash.sim import visibility
from taudash.sim.server import SimServer


def sim_server(tmp_path) -> SimServer:
    objs = [pending_wl(*e) for e in EXTRA] + [local_queue("second", "training", "tau-ws-training")]
    return SimServer(FIXTURE, objects=objs, kubeconfig=tmp_path / "kube" / "config")


def names(pos) -> list[str]:
    return [i["metadata"]["name"] for i in pos.items]


def served_order(sim: SimServer, cq: str = "tau-ws-training") -> list[str]:
    body = visibility.pending_workloads(sim.db, visibility.CLUSTERQUEUE_PENDING, "v1beta2", None, cq, {})
    return [i["metadata"]["name"] for i in body["items"]]


async def test_served_positions_come_from_the_visibility_api(tmp_path):
    sim = sim_server(tmp_path)
    async with sim, Live(sim) as live:
        sim.api.reset_counters()
        pos = await live.source.pending_workloads(cq="tau-ws-training")
        assert pos.source == FROM_API and pos.access == "Synced" and "visibility API" in pos.label
        assert names(pos) == served_order(sim) and len(pos.items) == 6
        paths = [r.path for r in sim.api.requests if "visibility" in r.path]
        assert paths == ["/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/tau-ws-training/pendingworkloads"]
        one = await live.source.pending_workloads(lq=("training", "second"), limit=5)
        assert [(i["metadata"]["name"], i["positionInClusterQueue"]) for i in one.items] == [("w-other-lq", 1)]
        page = await live.source.pending_workloads(cq="tau-ws-training", limit=2, offset=1)
        assert names(page) == served_order(sim)[1:3]
        with pytest.raises(ValueError):
            await live.source.pending_workloads()


async def test_forbidden_is_unknown_never_empty(tmp_path):
    sim = sim_server(tmp_path)
    sim.faults.forbid(visibility.CLUSTERQUEUE_PENDING)
    async with sim, Live(sim) as live:
        pos = await live.source.pending_workloads(cq="tau-ws-training")
        assert pos.source == UNKNOWN and pos.access == "Forbidden" and pos.items is None
        assert "forbidden" in pos.label
        lq = await live.source.pending_workloads(lq=("training", "jobqueue"))  # still allowed
        assert lq.source == FROM_API and lq.items


async def test_not_served_falls_back_to_the_estimate_labelled(tmp_path):
    sim = sim_server(tmp_path)
    async with sim, Live(sim) as live:
        expected = served_order(sim)
        sim.api.set_group_enabled(visibility.GROUP, False)
        pos = await live.source.pending_workloads(cq="tau-ws-training")
        assert pos.source == ESTIMATED and pos.access == "Absent" and pos.label.startswith("estimated order")
        assert names(pos) == expected  # distinct creation times: the estimate equals Kueue's order here
        assert [i["positionInClusterQueue"] for i in pos.items] == list(range(len(expected)))
        lq = await live.source.pending_workloads(lq=("training", "second"))
        assert lq.source == ESTIMATED and [(i["metadata"]["name"], i["positionInClusterQueue"]) for i in lq.items] \
            == [("w-other-lq", 1)]
        missing = await live.source.pending_workloads(cq="nope")
        assert missing.source == UNKNOWN and missing.items is None


async def test_not_served_and_workloads_unreadable_is_unknown(tmp_path):
    sim = sim_server(tmp_path)
    sim.faults.forbid("workloads.kueue.x-k8s.io")
    async with sim, Live(sim) as live:
        sim.api.set_group_enabled(visibility.GROUP, False)
        pos = await live.source.pending_workloads(cq="tau-ws-training")
        assert pos.source == UNKNOWN and pos.items is None and "workloads" in pos.message


async def test_unknown_queue_and_failing_api(tmp_path):
    sim = sim_server(tmp_path)
    async with sim, Live(sim) as live:
        pos = await live.source.pending_workloads(cq="nope")
        assert pos.source == UNKNOWN and pos.access == "NotFound" and pos.items is None
        sim.faults.fail(503, resource=visibility.CLUSTERQUEUE_PENDING)
        failing = await live.source.pending_workloads(cq="tau-ws-training")
        assert failing.source == ESTIMATED and failing.access == "Error" and "503" in failing.message
        assert names(failing) == served_order(sim)
