"""`taudash why NS/NAME` against a live (simulated) cluster: positions from Kueue's visibility API when it is
served (positionSource visibility), the estimate labelled when it is not served, unknown (null, never 0)
when it is forbidden."""

from __future__ import annotations

import asyncio
import json

from taudash.cli import main
from taudash.loading import DEMO_SNAPSHOT
from taudash.sim import visibility
from taudash.sim.server import SimServer

PENDING = "train/job-ctx-ablation-32k-bc6fa"  # waits in tau-ws-train behind one Workload
CQ = "tau-ws-train"


async def why(sim: SimServer, capsys, output: str = "json"):
    code = await asyncio.to_thread(main, ["why", PENDING, "--kubeconfig", str(sim.kubeconfig), "-o", output])
    out = capsys.readouterr().out
    return code, (json.loads(out) if output == "json" else out)


def served(sim: SimServer) -> list[dict]:
    return visibility.pending_workloads(sim.db, visibility.CLUSTERQUEUE_PENDING, "v1beta2", None, CQ, {})["items"]


async def test_served_positions_come_from_the_visibility_api(capsys):
    async with SimServer(DEMO_SNAPSHOT) as sim:
        sim.api.reset_counters()
        code, d = await why(sim, capsys)
        items = served(sim)
        asked = [r.path for r in sim.api.requests if "pendingworkloads" in r.path]
        code_t, table = await why(sim, capsys, "table")
    assert code == 0 and code_t == 0
    assert asked == [f"/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{CQ}/pendingworkloads"]
    mine = next(i for i in items if f"{i['metadata']['namespace']}/{i['metadata']['name']}" == PENDING)
    q = d["queue"]
    assert q["positionSource"] == "visibility" and "visibility API" in q["positionNote"]
    assert (q["positionInClusterQueue"], q["positionInLocalQueue"]) == (
        mine["positionInClusterQueue"], mine["positionInLocalQueue"])
    assert [a["name"] for a in d["ahead"]] == [
        i["metadata"]["name"] for i in items if i["positionInClusterQueue"] < mine["positionInClusterQueue"]]
    assert f"position #{mine['positionInClusterQueue'] + 1} in ClusterQueue" in table  # 1-based in words
    assert "(from Kueue's visibility API)" in table


async def test_not_served_is_the_estimate_labelled(capsys):
    async with SimServer(DEMO_SNAPSHOT) as sim:
        sim.api.set_group_enabled("visibility.kueue.x-k8s.io", False)
        code, d = await why(sim, capsys)
        _, table = await why(sim, capsys, "table")
    q = d["queue"]
    assert code == 0 and q["positionSource"] == "estimated" and "not served" in q["positionNote"]
    assert isinstance(q["positionInClusterQueue"], int) and len(d["ahead"]) == q["positionInClusterQueue"]
    assert "LocalQueue (estimated from the objects)" in table


async def test_forbidden_is_unknown_never_zero(capsys):
    async with SimServer(DEMO_SNAPSHOT) as sim:
        sim.faults.forbid(visibility.CLUSTERQUEUE_PENDING)
        code, d = await why(sim, capsys)
        _, table = await why(sim, capsys, "table")
    q = d["queue"]
    assert code == 0 and q["positionSource"] == "unknown" and "forbidden" in q["positionNote"]
    assert q["positionInClusterQueue"] is None and q["positionInLocalQueue"] is None and d["ahead"] is None
    assert not any(r["code"] == "QueuedBehind" for r in d["reasons"])
    assert d["reasons"][0]["code"] == "InsufficientQuota"  # the quota analysis does not need the positions
    assert "position unknown (visibility API forbidden" in table
