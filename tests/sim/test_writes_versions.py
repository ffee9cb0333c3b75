"""Writes address the API version the cluster serves (Kueue ≤ 0.14 serves only v1beta1), and the
audit log records the intent of each real write before the request and its outcome after it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import pytest
from tools.claims import claim_record, claim_request
from tools.paths import REPO

from taudash.engine.actions import Actions, ApiNotServed, AuditLog, PreconditionFailed
from taudash.engine.sources.client import connect
from taudash.engine.workflows import Journal, Runner, artifacts_dir, build, new_id
from taudash.engine.workflows.base import Context
from taudash.engine.workflows.journal import deactivated_by
from taudash.live import LiveCluster
from taudash.sim.controllers.scenario import Knobs, Scenario
from taudash.sim.server import SimServer
from taudash.sim.world import World

CQ = "clusterqueues.kueue.x-k8s.io"
WL = "workloads.kueue.x-k8s.io"
QUIET = Scenario(knobs=Knobs(arrivals_per_hour=0, node_flaps_per_hour=0, cordons_per_hour=0))


pytestmark = pytest.mark.usefixtures("state_dir")


def hold(cur):
    return None if cur["spec"].get("stopPolicy") == "HoldAndDrain" else {"spec": {"stopPolicy": "HoldAndDrain"}}


def kueue_requests(sim, verbs=("get", "patch", "delete", "create")):
    return [(r.verb, r.path, r.status) for r in sim.api.requests
            if r.verb in verbs and r.path.startswith("/apis/kueue.x-k8s.io/")]


# --- the simulator plays an old Kueue ------------------------------------------------------------

async def test_v1beta1_only_simulator_serves_kueue_at_v1beta1_only(tmp_path):
    async with SimServer(kueue_version="0.14") as sim:
        target = await connect(kubeconfig=str(sim.kubeconfig))
        actions = Actions.live(target.api_client, "alice", target.context, None)
        group = await actions._call("GET", "/apis/kueue.x-k8s.io")
        assert [v["version"] for v in group["versions"]] == ["v1beta1"]
        assert group["preferredVersion"]["version"] == "v1beta1"
        obj = await actions._call("GET", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/tau-ws-train")
        assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta1"
        with pytest.raises(Exception, match="404"):
            await actions._call("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/tau-ws-train")
        await target.close()
    # the default still serves both, v1beta2 preferred
    async with SimServer() as sim:
        assert sim.api._group("kueue.x-k8s.io")["preferredVersion"]["version"] == "v1beta2"
    with pytest.raises(ValueError, match="9.9"):
        SimServer(kueue_version="9.9")


# --- Actions picks the served version ----------------------------------------------------------

async def test_patch_discovers_v1beta1_when_v1beta2_is_not_served(tmp_path):
    async with SimServer(kueue_version="0.14") as sim:
        target = await connect(kubeconfig=str(sim.kubeconfig))
        actions = Actions.live(target.api_client, "alice", target.context, AuditLog(tmp_path / "audit.log"))
        res = await actions.patch("ClusterQueue", "tau-ws-train", None, hold, "hold")
        assert res.changed and sim.db.get(CQ, "tau-ws-train")["spec"]["stopPolicy"] == "HoldAndDrain"
        paths = {p for v, p, _ in kueue_requests(sim, ("get", "patch"))}
        assert paths == {"/apis/kueue.x-k8s.io/v1beta1/clusterqueues/tau-ws-train"}
        await target.close()


async def test_source_version_is_used_without_discovery(sim_server, tmp_path):
    target = await connect(kubeconfig=str(sim_server.kubeconfig))
    actions = Actions.live(target.api_client, "alice", target.context, None, versions=lambda kind: "v1beta1")
    await actions.patch("ClusterQueue", "tau-ws-train", None, hold, "hold")
    assert {p for _, p, _ in kueue_requests(sim_server, ("get", "patch"))} == {
        "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/tau-ws-train"}
    assert not [r for r in sim_server.api.requests if r.verb == "discovery"]
    await target.close()


async def test_stale_version_is_rediscovered_not_reported_as_gone(tmp_path):
    """The source said v1beta2 but the cluster serves only v1beta1 (a downgrade): the write goes
    to v1beta1, never "no longer exists"."""
    async with SimServer(kueue_version="0.14") as sim:
        target = await connect(kubeconfig=str(sim.kubeconfig))
        actions = Actions.live(target.api_client, "alice", target.context, None, versions=lambda kind: "v1beta2")
        res = await actions.patch("ClusterQueue", "tau-ws-train", None, hold, "hold")
        assert res.changed and await actions.version("ClusterQueue") == "v1beta1"
        await target.close()


async def test_unserved_api_is_reported_as_such_and_a_missing_object_as_gone(tmp_path):
    sim = SimServer()
    async with sim:
        target = await connect(kubeconfig=str(sim.kubeconfig))
        actions = Actions.live(target.api_client, "alice", target.context, AuditLog(tmp_path / "audit.log"))
        # negative: the API is served, the object is not there
        with pytest.raises(PreconditionFailed, match="no longer exists"):
            await actions.patch("ClusterQueue", "no-such-queue", None, hold, "hold")
        # the Kueue API is uninstalled: the real cause, not "no longer exists"
        sim.api.set_group_enabled("kueue.x-k8s.io", False)
        with pytest.raises(ApiNotServed, match="clusterqueues.kueue.x-k8s.io at none of .*v1beta2, v1beta1"):
            await actions.patch("ClusterQueue", "tau-ws-train", None, hold, "hold")
        assert sim.api.writes == {}
        await target.close()


# --- hold and release end to end on Kueue ≤ 0.14 ------------------------------------------------

class Harness:
    def __init__(self, sim, world, live):
        self.sim, self.world, self.live = sim, world, live

    async def sleep(self, _dt):
        self.world.step(30)
        await asyncio.sleep(0.02)

    async def confirm(self, step, plan, op):
        return True

    async def run(self, kind, params):
        journal = Journal.create(new_id(), kind, params, self.live.target.context)
        ctx = Context(store=self.live.store, actions=self.live.actions, clock=self.world.clock.now,
                      artifacts_dir=artifacts_dir(journal))
        runner = Runner(build(kind, journal.params), ctx, journal, self.confirm, poll=0.0, sleep=self.sleep)
        return journal, await runner.run()


@pytest.mark.parametrize("version", ["0.14", "0.15", "0.19"])
async def test_hold_and_release_on_each_kueue_release(version):
    preferred = {"0.14": "v1beta1", "0.15": "v1beta2", "0.19": "v1beta2"}[version]
    other = "v1beta2" if preferred == "v1beta1" else "v1beta1"
    async with SimServer(kueue_version=version) as sim:
        world = World.for_server(sim, QUIET)
        world.step(1)
        async with LiveCluster(None, str(sim.kubeconfig)) as live:
            assert live.source.version_of("ClusterQueue") == preferred
            h = Harness(sim, world, live)
            for _ in range(3):
                world.step(5)
            await asyncio.sleep(0.1)
            journal, state = await h.run("hold", {"cqs": ["tau-ws-train"], "mode": "HoldAndDrain"})
            assert state == "Completed", journal.records[-3:]
            assert sim.db.get(CQ, "tau-ws-train")["spec"]["stopPolicy"] == "HoldAndDrain"
            cancelled = deactivated_by(journal)
            assert cancelled
            _, state = await h.run("release", {"cqs": ["tau-ws-train"], "reactivate": cancelled})
            assert state == "Completed"
            assert sim.db.get(CQ, "tau-ws-train")["spec"].get("stopPolicy", "None") == "None"
            for ns, name in cancelled:
                wl = sim.db.get(WL, name, ns)
                assert wl is None or wl["spec"].get("active", True)
            writes = [(r.verb, r.path, r.status) for r in sim.api.requests
                      if r.verb in ("patch", "delete") and not r.dry_run and not claim_request(r)]
            cq_writes = [w for w in writes if w[1] == f"/apis/kueue.x-k8s.io/{preferred}/clusterqueues/tau-ws-train"]
            assert len(cq_writes) == 2 and all(s == 200 for _, _, s in cq_writes)  # hold, then release
            assert any(f"/{preferred}/namespaces/train/workloads/" in p for _, p, _ in writes)
            assert not [w for w in writes if f"/{other}/" in w[1]]
            # stored in the release's storage version, whatever version the writes named
            stored = sim.db.stored(CQ, "tau-ws-train")
            assert stored["apiVersion"] == f"kueue.x-k8s.io/{sim.kueue.storage}"


# --- audit: intent before the request, outcome after -----------------------------------------

async def test_intent_is_on_disk_before_the_server_receives_the_write(tmp_path):
    audit = AuditLog(tmp_path / "audit.log")
    seen_at_receipt = []
    async with SimServer() as sim:
        def on_write(op, r, new, old):
            if r.plural == "clusterqueues":
                seen_at_receipt.append([e["result"] for e in audit.read()])
        sim.db.add_admission(on_write)
        target = await connect(kubeconfig=str(sim.kubeconfig))
        actions = Actions.live(target.api_client, "alice", target.context, audit)
        await actions.patch("ClusterQueue", "tau-ws-train", None, hold, "hold for a test")
        await target.close()
    # dry-run: nothing on record yet; real write: the intent is already on disk
    assert seen_at_receipt == [[], ["intent"]]
    intent, outcome = audit.read()
    assert (intent["result"], outcome["result"]) == ("intent", "ok")
    assert intent["request"] == outcome["request"] and len(intent["request"]) == 32
    # who: the user the cluster authenticated (SelfSubjectReview), not the name of the kubeconfig entry
    assert intent["who"] == "sim-admin" and intent["identity"]["source"] == "SelfSubjectReview"
    assert intent["verb"] == "patch" and intent["name"] == "tau-ws-train"
    assert intent["patch"] == {"spec": {"stopPolicy": "HoldAndDrain"}} and intent["reason"] == "hold for a test"
    assert intent["at"] <= outcome["at"]


async def test_failed_write_records_intent_then_failure(tmp_path):
    audit = AuditLog(tmp_path / "audit.log")
    async with SimServer() as sim:
        target = await connect(kubeconfig=str(sim.kubeconfig))
        actions = Actions.live(target.api_client, "alice", target.context, audit)

        def reject_real_write(op, r, new, old):
            if r.plural == "clusterqueues" and len([x for x in sim.api.requests if x.verb == "patch"]) >= 2:
                from taudash.sim.errors import ApiError
                raise ApiError("admission webhook denied the request", code=500)
        sim.db.add_admission(reject_real_write)
        with pytest.raises(Exception, match="500"):
            await actions.patch("ClusterQueue", "tau-ws-train", None, hold, "hold")
        await target.close()
    records = audit.read()
    assert [r["result"] for r in records] == ["intent", "failed"]
    assert records[0]["request"] == records[1]["request"] and "denied" in records[1]["note"]


def test_audit_log_tolerates_a_torn_line(tmp_path):
    log = AuditLog(tmp_path / "audit.log")
    log.record({"result": "intent", "request": "a"})
    with open(log.path, "ab") as fh:  # a kill -9 in the middle of a write
        fh.write(b'{"result":"ok","requ')
    assert [r["request"] for r in log.read()] == ["a"]
    log.record({"result": "intent", "request": "b"})  # must not be swallowed by the torn line
    assert [r["request"] for r in log.read()] == ["a", "b"]
    lines = log.path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and json.loads(lines[-2])["request"] == "b"


async def test_kill_9_right_after_the_write_leaves_the_intent(tmp_path, state_dir):
    """The hold workflow runs in a child process; the simulator (here) SIGKILLs it the moment it
    receives the real PATCH of the queue, then applies the write. The audit log has the intent."""
    env = {**os.environ, "TAUDASH_STATE_DIR": str(state_dir), "PYTHONPATH": str(REPO)}
    async with SimServer() as sim:
        proc = None
        killed = []

        def kill_on_real_patch(op, r, new, old):
            if (r.plural == "clusterqueues" and op == "UPDATE" and new["metadata"]["name"] == "tau-ws-train"
                    and (new.get("spec") or {}).get("stopPolicy") == "HoldAndDrain"):
                patches = [x for x in sim.api.requests if x.verb == "patch" and x.resource == CQ]
                if patches and not patches[-1].dry_run and proc is not None and not killed:
                    os.kill(proc.pid, signal.SIGKILL)
                    killed.append(proc.pid)
        sim.db.add_admission(kill_on_real_patch)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "taudash.cli", "workflow", "start", "hold", "--cq", "tau-ws-train",
            "--kubeconfig", str(sim.kubeconfig), "--yes", "--poll", "0.1", env=env, cwd=REPO,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        _, err = await asyncio.wait_for(proc.communicate(), 120)
        assert killed and proc.returncode == -signal.SIGKILL, err.decode()[-2000:]
        # the server applied it after the client died
        assert sim.db.get(CQ, "tau-ws-train")["spec"]["stopPolicy"] == "HoldAndDrain"
    records = AuditLog(state_dir / "audit.log").read()
    cq = [r for r in records if r.get("kind") == "ClusterQueue" and r.get("name") == "tau-ws-train"
          and not claim_record(r)]
    assert [r["result"] for r in cq] == ["intent"], cq
    assert cq[0]["patch"] == {"spec": {"stopPolicy": "HoldAndDrain"}} and cq[0]["verb"] == "patch"
