"""The one write path, against the simulator over HTTPS."""

import json
import os

import pytest

from taudash.engine.actions import Actions, AuditLog, PermissionDenied, PreconditionFailed, WriteRefused
from taudash.engine.sources.client import connect
from taudash.sim.server import SimServer

CQ = "clusterqueues.kueue.x-k8s.io"


async def live_actions(sim, tmp_path):
    target = await connect(kubeconfig=str(sim.kubeconfig))
    return target, Actions.live(target.api_client, "alice", target.context, AuditLog(tmp_path / "audit.log"))


def hold(cur):
    return None if cur["spec"].get("stopPolicy") == "HoldAndDrain" else {"spec": {"stopPolicy": "HoldAndDrain"}}


async def test_read_only_refuses_every_write_and_sends_nothing(sim_server):
    actions = Actions.read_only("read-only mode (--read-only)")
    with pytest.raises(WriteRefused, match="read-only"):
        await actions.patch("ClusterQueue", "tau-ws-train", None, hold, "test")
    with pytest.raises(WriteRefused):
        await actions.delete("RayService", "llm", "eval", lambda o: True, "test")
    with pytest.raises(WriteRefused):
        await actions.dry_run_create({"kind": "Job", "metadata": {"name": "x", "namespace": "eval"}}, "test")
    assert actions.refusals == 3 and not actions.writable
    assert sim_server.api.writes == {}
    assert [e["result"] for e in actions.log] == ["refused"] * 3


async def test_patch_checks_access_dry_runs_then_writes_and_audits(sim_server, tmp_path):
    target, actions = await live_actions(sim_server, tmp_path)
    res = await actions.patch("ClusterQueue", "tau-ws-train", None, hold, "hold for a catalog change")
    assert res.changed and res.attempts == 1
    assert sim_server.db.get(CQ, "tau-ws-train")["spec"]["stopPolicy"] == "HoldAndDrain"
    verbs = [(r.verb, r.dry_run) for r in sim_server.api.requests if r.verb in ("review", "patch")]
    assert verbs == [("review", False), ("patch", True), ("patch", False)]
    # idempotent: a second run plans nothing and writes nothing
    again = await actions.patch("ClusterQueue", "tau-ws-train", None, hold, "again")
    assert not again.changed and sim_server.api.writes["patch"] == 2
    lines = [json.loads(x) for x in (tmp_path / "audit.log").read_text().splitlines()]
    assert lines[-1]["result"] == "ok" and lines[-1]["name"] == "tau-ws-train"
    # who the cluster says wrote (its SelfSubjectReview), not the kubeconfig entry's name ("alice")
    assert lines[-1]["who"] == "sim-admin" and lines[-1]["identity"]["source"] == "SelfSubjectReview"
    # what changed, not the objects: the one field, and the resourceVersion it moved from and to
    assert lines[-1]["diff"] == {"spec": {"stopPolicy": "HoldAndDrain"}}
    before_rv, after_rv = lines[-1]["versions"]
    assert int(after_rv) > int(before_rv) and "before" not in lines[-1] and "after" not in lines[-1]
    assert oct(os.stat(tmp_path / "audit.log").st_mode & 0o777) == "0o600"
    assert sim_server.token not in (tmp_path / "audit.log").read_text()
    await target.close()


async def test_conflict_rereads_and_replans(sim_server, tmp_path):
    target, actions = await live_actions(sim_server, tmp_path)
    calls = []

    def planner(cur):
        calls.append(cur["metadata"]["resourceVersion"])
        if len(calls) == 1:  # another writer changes the queue between our read and our write
            sim_server.db.patch_merge(CQ, "tau-ws-eval", {"metadata": {"labels": {"other-writer": "yes"}}})
        return hold(cur)

    res = await actions.patch("ClusterQueue", "tau-ws-eval", None, planner, "test")
    assert res.changed and res.attempts == 2 and calls[0] != calls[1]
    obj = sim_server.db.get(CQ, "tau-ws-eval")
    assert obj["spec"]["stopPolicy"] == "HoldAndDrain" and obj["metadata"]["labels"]["other-writer"] == "yes"
    assert [e["result"] for e in actions.log] == ["conflict", "intent", "ok"]
    await target.close()


async def test_replan_can_decide_nothing_is_left_to_do(sim_server, tmp_path):
    target, actions = await live_actions(sim_server, tmp_path)
    first = True

    def planner(cur):
        nonlocal first
        if first:
            first = False
            sim_server.db.patch_merge(CQ, "tau-ws-eval", {"spec": {"stopPolicy": "HoldAndDrain"}})
            return {"spec": {"stopPolicy": "HoldAndDrain"}}
        return hold(cur)

    res = await actions.patch("ClusterQueue", "tau-ws-eval", None, planner, "test")
    assert not res.changed and res.note == "already in the planned state"
    await target.close()


async def test_permission_denied_sends_no_write(tmp_path):
    sim = SimServer()
    sim.faults.forbid("rayservices.ray.io", verbs={"delete"})
    async with sim:
        target, actions = await live_actions(sim, tmp_path)
        with pytest.raises(PermissionDenied, match="SelfSubjectAccessReview"):
            await actions.delete("RayService", "llm", "eval", lambda o: True, "test")
        assert sim.api.writes == {}
        await target.close()


async def test_delete_rechecks_the_plan_and_is_idempotent(sim_server, tmp_path):
    target, actions = await live_actions(sim_server, tmp_path)
    with pytest.raises(PreconditionFailed):
        await actions.delete("RayService", "llm", "eval", lambda o: False, "test")
    uid = sim_server.db.get("rayservices.ray.io", "llm", "eval")["metadata"]["uid"]
    res = await actions.delete("RayService", "llm", "eval", lambda o: o["metadata"]["uid"] == uid, "test")
    assert res.changed and sim_server.db.get("rayservices.ray.io", "llm", "eval") is None
    again = await actions.delete("RayService", "llm", "eval", lambda o: True, "test")
    assert not again.changed and "gone" in again.note
    assert sim_server.api.writes["delete"] == 2  # dry-run + real, once
    await target.close()
