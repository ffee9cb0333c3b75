"""Guided operations end to end: the live source and the write path against the simulated world.

The world is stepped by the runner's sleep (30 simulated seconds per poll), so waits progress
deterministically and fast.
"""

import asyncio
from pathlib import Path

import pytest
import yaml
from tools.claims import claim_record
from tools.workflows import CQ, harness

from taudash.engine.model.names import HELD_BY_ANNOTATION
from taudash.engine.workflows import Journal, new_id
from taudash.engine.workflows.base import Context, Crash
from taudash.engine.workflows.catalog import affected_queues
from taudash.engine.workflows.journal import deactivated_by

pytestmark = pytest.mark.usefixtures("state_dir")


@pytest.fixture
async def h():
    async with harness() as it:
        yield it


def cq_status(h, name):
    return h.sim.db.get(CQ, name)["status"]


async def test_hold_drains_and_release_restores(h):
    journal, state = await h.run("hold", {"cqs": ["tau-ws-train"], "mode": "HoldAndDrain"})
    assert state == "Completed", journal.records[-3:]
    st = cq_status(h, "tau-ws-train")
    assert (st.get("pendingWorkloads", 0), st.get("reservingWorkloads", 0), st.get("admittedWorkloads", 0)) == (0, 0, 0)
    assert h.sim.db.get(CQ, "tau-ws-train")["spec"]["stopPolicy"] == "HoldAndDrain"
    cancelled = deactivated_by(journal)
    assert cancelled  # the demo has pending work in train
    _, state = await h.run("release", {"cqs": ["tau-ws-train"], "reactivate": cancelled})
    assert state == "Completed"
    assert h.sim.db.get(CQ, "tau-ws-train")["spec"].get("stopPolicy", "None") == "None"
    for ns, name in cancelled:
        wl = h.sim.db.get("workloads.kueue.x-k8s.io", name, ns)
        assert wl is None or wl["spec"].get("active", True)


async def test_drain_supervision_clears_the_retarget(h):
    journal, state = await h.run("drain", {"workspace": "eval"})
    assert state == "Completed", journal.records[-3:]
    deleted = {ref for step, ref in h.confirmations if ref}
    assert "RayService eval/llm" in deleted and "Deployment eval/web-ui" in deleted
    for _ in range(20):  # the TauGrid controller finishes the retarget once the drain is Clear
        await h.sleep(0)
        ws = h.sim.db.get("workspaces.tau.azure.com", "eval", "tau-system")
        if ws["status"]["target"]["resolvedNamespace"] == "eval-v2":
            break
    assert ws["status"]["target"]["resolvedNamespace"] == "eval-v2"


async def test_drain_refuses_to_act_while_unknown(h):
    h.sim.faults.forbid("deployments.apps")
    await h.sim.api.wait_for_watches(1, "deployments.apps")
    h.sim.faults.drop_watches()
    for _ in range(100):
        await asyncio.sleep(0.02)
        if h.live.store.access("Deployment").state.value == "Forbidden":
            break
    journal, state = await h.run("drain", {"workspace": "eval"})
    assert state == "Failed"
    assert "Unknown" in journal.steps()["blockers"].failed
    assert h.real_writes() == []


def current_catalog(h):
    return h.sim.db.get("clusters.tau.azure.com", "cluster")["spec"]["workloadProfiles"]


async def test_catalog_change_then_rollback_restores_catalog_and_hash(h):
    old = current_catalog(h)
    tc0 = h.sim.db.get("clusters.tau.azure.com", "cluster")
    gen0, hash0 = tc0["metadata"]["generation"], tc0["status"]["workloadProfiles"]["profileSetHash"]
    new = [p for p in old if p["name"] != "azure.research.remote.burst"]  # resolve the MultiKueue ambiguity
    ctx = Context(store=h.live.store, actions=h.live.actions)
    why = affected_queues(ctx, new, [])
    params = {"catalog": new, "cqs": list(why), "why": why}
    journal, state = await h.run("catalog", params)
    assert state == "Completed", journal.records[-3:]
    tc = h.sim.db.get("clusters.tau.azure.com", "cluster")
    assert tc["metadata"]["generation"] == gen0 + 1
    assert tc["status"]["workloadProfiles"]["observedGeneration"] == gen0 + 1
    assert tc["status"]["workloadProfiles"]["profileSetHash"] not in ("", hash0)
    assert [p["name"] for p in tc["spec"]["workloadProfiles"]] == [p["name"] for p in new]
    art = journal.artifacts()
    exported = yaml.safe_load(Path(art["taucluster"]).read_text())
    assert exported["metadata"]["generation"] == gen0 and exported["spec"]["workloadProfiles"] == old
    snap = yaml.safe_load(Path(art["profiles"]).read_text())
    assert snap["kind"] == "TauWorkloadProfileSnapshot" and snap["profileSetHash"] == hash0
    for name in params["cqs"]:  # admission restored
        assert h.sim.db.get(CQ, name)["spec"].get("stopPolicy", "None") == "None"
    # dry-run checks reached the server and stored nothing
    assert any(r.verb == "create" and r.dry_run for r in h.sim.api.requests)

    rb_params = {"from": journal.id, "previous_catalog": exported["spec"]["workloadProfiles"], "previous_hash": hash0,
                 "cqs": params["cqs"]}
    rb, state = await h.run("rollback", rb_params)
    assert state == "Completed", rb.records[-3:]
    tc = h.sim.db.get("clusters.tau.azure.com", "cluster")
    assert tc["spec"]["workloadProfiles"] == old
    assert tc["status"]["workloadProfiles"]["profileSetHash"] == hash0
    creds = next(r["data"]["local"] for r in rb.records if r["event"] == "executed" and r["step"] == "credentials")
    assert "revoke" in creds
    # the rollback's completion ends the catalog run it undid: RolledBack, never resumable
    source = Journal.open(str(journal.path))
    assert source.state == "RolledBack" and source.terminal
    assert source.last("rolled-back")["data"] == {"by": rb.id}


async def test_another_writer_conflict_is_replanned(h):
    actions = h.live.actions
    real_read = actions.read
    interfered = []

    async def read(kind, name, namespace=None):
        obj = await real_read(kind, name, namespace)
        # the step's first read (the run's claim has marked the queue held by then)
        if kind == "ClusterQueue" and not interfered and HELD_BY_ANNOTATION in obj["metadata"].get("annotations", {}):
            interfered.append(name)  # someone else edits the queue right after our read
            h.sim.db.patch_merge(CQ, name, {"metadata": {"labels": {"edited-by": "someone-else"}},
                                            "spec": {"stopPolicy": "Hold"}})
        return obj

    actions.read = read
    journal, state = await h.run("hold", {"cqs": ["tau-ws-eval"], "mode": "HoldAndDrain", "cancel_pending": False})
    assert state == "Completed"
    obj = h.sim.db.get(CQ, "tau-ws-eval")
    assert obj["spec"]["stopPolicy"] == "HoldAndDrain" and obj["metadata"]["labels"]["edited-by"] == "someone-else"
    results = [e["result"] for e in actions.log if e["verb"] == "patch" and not claim_record(e)]
    assert results == ["conflict", "intent", "ok"]
    executed = [r for r in journal.records if r["event"] == "executed"]
    assert executed[0]["data"]["result"]["attempts"] == 2


BOUNDARIES = ["hold:before-plan", "hold:planned", "hold:confirmed", "hold:op0", "hold:executed", "hold:mid-wait",
              "hold:observed", "hold:verified", "drain:planned", "drain:confirmed", "drain:op0", "drain:executed",
              "drain:mid-wait", "drain:observed"]


@pytest.mark.parametrize("point", BOUNDARIES)
async def test_crash_at_any_boundary_then_resume_repeats_nothing(h, point):
    params = {"cqs": ["tau-ws-train"], "mode": "HoldAndDrain"}
    journal = Journal.create(new_id(), "hold", params, h.live.target.context)

    def crash(at):
        if at == point:
            raise Crash(at)

    with pytest.raises(Crash):
        await h.run("hold", params, hooks=crash, journal=journal)
    before = h.real_writes()
    resumed = Journal.open(str(journal.path))  # a new process reads the journal back
    _, state = await h.run("hold", params, journal=resumed)
    assert state == "Completed"
    writes = h.real_writes()
    assert len(writes) == len(set(writes)), f"an action was repeated after {point}: {writes}"
    assert set(before) <= set(writes)
    st = cq_status(h, "tau-ws-train")
    assert (st.get("pendingWorkloads", 0), st.get("reservingWorkloads", 0), st.get("admittedWorkloads", 0)) == (0, 0, 0)
