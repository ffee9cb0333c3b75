"""The catalog change against the simulated world: a catalog is refused before the first write,
only the queues a change affects are held, each comes back to the stopPolicy it had before, and
every Workload a hold, a catalog change or a rollback deactivates is annotated, listed at the end
and reactivated by `release --reactivate-from`."""

from __future__ import annotations

import asyncio
import copy

import pytest
import yaml
from test_workflows_e2e import CQ
from tools.claims import claim_request
from tools.workflows import harness

from taudash.cli import main
from taudash.engine.workflows import Journal, status
from taudash.engine.workflows.base import Context, Crash
from taudash.engine.workflows.ops import operation_records
from taudash.engine.workflows.params import catalog_params, release_params, rollback_params
from taudash.engine.workflows.steps import DEACTIVATED_BY, previous_stop_policies

TC = "clusters.tau.azure.com"
WL = "workloads.kueue.x-k8s.io"
EVAL = "azure.research.eval.gpu"


pytestmark = pytest.mark.usefixtures("state_dir")


@pytest.fixture
async def h():
    async with harness() as it:
        yield it


def ctx_of(h) -> Context:
    return Context(store=h.live.store, actions=h.live.actions)


def catalog(h) -> list[dict]:
    return copy.deepcopy(h.sim.db.get(TC, "cluster")["spec"]["workloadProfiles"])


def policy(h, name) -> str:
    return h.sim.db.get(CQ, name)["spec"].get("stopPolicy", "None")


def writes_to(h, name, dry_runs: bool = True) -> list[tuple[str, str]]:
    """Write requests of the workflows' steps to a ClusterQueue (their claims left out: tests/tools/claims.py);
    with `dry_runs`, the dry-run sent before each write too."""
    return [(r.verb, r.path) for r in h.sim.api.requests
            if r.verb in ("patch", "update", "delete") and r.resource == CQ and r.name == name
            and (dry_runs or not r.dry_run) and not claim_request(r)]


def any_write(h) -> list[tuple[str, str]]:
    """Every request that could change something, dry-runs and access reviews included."""
    return [(r.verb, r.path) for r in h.sim.api.requests if r.verb not in ("get", "list", "watch", "discovery")]


def journals(state) -> list:
    d = state / "workflows"
    return sorted(d.glob("*.jsonl")) if d.is_dir() else []


def cli(*args: str) -> int:
    return main(list(args))


async def test_invalid_input_exits_2_before_any_write_or_journal(h, tmp_path, state_dir, capsys):
    kc = ("--kubeconfig", str(h.sim.kubeconfig), "--yes")
    good = catalog(h)
    dup = [*good, copy.deepcopy(good[0])]
    no_ns = copy.deepcopy(good)
    next(p for p in no_ns if p["name"] == EVAL)["applicability"].pop("namespaces")
    unknown_lq = copy.deepcopy(good)
    next(p for p in unknown_lq if p["name"] == EVAL)["defaultLocalQueue"] = "nosuch"
    wrong_type = copy.deepcopy(good)
    next(p for p in wrong_type if p["name"] == EVAL)["gpusPerWorker"] = "one"
    cases = {"name-only": [{"name": "x"}], "duplicate": dup, "no-namespaces": no_ns, "unknown-lq": unknown_lq,
             "wrong-type": wrong_type}
    expect = {"name-only": "✖ profile 'x': defaultLocalQueue is required",
              "duplicate": f"is declared twice (also profile {good[0]['name']!r})",
              "no-namespaces": f"✖ profile {EVAL!r}: applicability.namespaces is empty",
              "unknown-lq": f"✖ profile {EVAL!r}: defaultLocalQueue: LocalQueue eval/nosuch not found",
              "wrong-type": f"✖ profile {EVAL!r}: gpusPerWorker must be an integer, got str"}
    before = len(any_write(h))
    for label, profiles in cases.items():
        f = tmp_path / f"{label}.yaml"
        f.write_text(yaml.safe_dump({"workloadProfiles": profiles}))
        capsys.readouterr()
        assert await asyncio.to_thread(cli, "workflow", "start", "catalog", "--catalog", str(f), *kc) == 2, label
        err = capsys.readouterr().err
        assert "the catalog cannot be applied" in err and expect[label] in err, (label, err)
    assert await asyncio.to_thread(cli, "workflow", "start", "hold", "--cq", "tau-ws-train", "--cq", "nope", *kc) == 2
    assert "ClusterQueue(s) not found: nope" in capsys.readouterr().err
    assert await asyncio.to_thread(cli, "workflow", "start", "drain", "--workspace", "train", *kc) == 2
    assert "not draining" in capsys.readouterr().err
    assert await asyncio.to_thread(cli, "workflow", "start", "release", "--cq", "nope", *kc) == 2
    assert any_write(h)[before:] == [] and journals(state_dir) == []
    assert h.sim.db.get(TC, "cluster")["spec"]["workloadProfiles"] == good


async def test_rejected_server_dry_run_stops_before_any_hold(h, tmp_path):
    new = catalog(h)
    next(p for p in new if p["name"] == EVAL)["placement"] = "same-host"
    params = catalog_params(ctx_of(h), _file(tmp_path, new))
    h.sim.faults.fail(422, resource=TC, verbs={"patch"})  # the access review would consume a count
    journal, state = await h.run("catalog", params)
    assert state == "Failed"
    assert "server dry-run of the TauCluster update rejected" in journal.steps()["hold"].failed
    assert h.real_writes() == []
    assert any(r.verb == "patch" and r.dry_run and r.resource == TC for r in h.sim.api.requests)


def _file(tmp_path, profiles) -> str:
    path = tmp_path / f"catalog-{len(list(tmp_path.glob('catalog-*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(profiles))
    return str(path)


def deactivated_workloads(h, wid: str) -> set[tuple[str, str]]:
    return {(w["metadata"]["namespace"], w["metadata"]["name"]) for w in h.sim.db.list(WL)
            if (w["metadata"].get("annotations") or {}).get(DEACTIVATED_BY) == wid}


async def test_catalog_holds_only_affected_queues_restores_hold_then_reactivates(h, tmp_path):
    h.sim.db.patch_merge(CQ, "tau-ws-eval", {"spec": {"stopPolicy": "Hold"}})  # an operator's hold, before
    await h.settle()
    new = catalog(h)
    next(p for p in new if p["name"] == EVAL)["placement"] = "same-host"
    params = catalog_params(ctx_of(h), _file(tmp_path, new))
    assert params["cqs"] == ["tau-ws-eval"]
    assert params["diff"] == [f"~ {EVAL}: placement unconstrained → same-host"]
    journal, state = await h.run("catalog", params)
    assert state == "Completed", journal.records[-3:]
    # the unaffected queues were never written; the held one is back on Hold
    for other in ("tau-ws-train", "tau-ws-vision", "platform-cq", "research-multikueue"):
        assert writes_to(h, other) == [], other
        assert policy(h, other) == "None"
    assert policy(h, "tau-ws-eval") == "Hold"
    assert previous_stop_policies(journal) == {"tau-ws-eval": "Hold"}
    hold_plan = journal.steps()["hold"].planned
    assert "tau-ws-eval: " + params["why"]["tau-ws-eval"][0] in hold_plan["notes"]
    assert any(n.startswith("evicts ") and " admitted Workload(s) in tau-ws-eval: " in n for n in hold_plan["notes"])
    assert any("server dry-run of the TauCluster update accepted" in n for n in hold_plan["notes"])
    # the evicted work came back pending and was deactivated, annotated with this run's id; the change's last
    # step reactivated all of it once admission was restored: nothing is left deactivated, nothing listed
    ever = {(r.namespace, r.name) for r in operation_records(journal)
            if r.kind == "Workload" and r.step == "drain" and r.state == "done"}
    verify = next(r for r in journal.records if r["event"] == "verified" and r["step"] == "drain")
    assert ever and any(c["message"].startswith(f"deactivated {len(ever)} Workload(s): ")
                        for c in verify["data"]["checks"])
    assert ("reactivate", None) in h.confirmations  # its own confirmation
    assert {(r.namespace, r.name) for r in operation_records(journal)
            if r.step == "reactivate" and r.state == "done"} == ever - gone_or_finished(h, ever)
    assert status(journal)["deactivated"] == [] and deactivated_workloads(h, journal.id) == set()
    for ns, name in ever:
        wl = h.sim.db.get(WL, name, ns)
        assert wl is None or (wl["spec"].get("active", True)
                              and DEACTIVATED_BY not in (wl["metadata"].get("annotations") or {}))
    # a release of the change then has nothing to reactivate, and leaves the queue where the operator had it
    rel = release_params([], journal.id, ctx=ctx_of(h))
    assert rel["cqs"] == ["tau-ws-eval"] and rel["reactivate"] == []
    writes = len(writes_to(h, "tau-ws-eval"))
    _, state = await h.run("release", rel)
    assert state == "Completed"
    assert policy(h, "tau-ws-eval") == "Hold" and len(writes_to(h, "tau-ws-eval")) == writes


def gone_or_finished(h, refs) -> set[tuple[str, str]]:
    out = set()
    for ns, name in refs:
        wl = h.sim.db.get(WL, name, ns)
        if wl is None or any(c.get("type") == "Finished" and c.get("status") == "True"
                             for c in (wl.get("status") or {}).get("conditions") or []):
            out.add((ns, name))
    return out


async def test_hold_annotates_lists_and_release_reactivates(h, capsys):
    journal, state = await h.run("hold", {"cqs": ["tau-ws-train"], "mode": "HoldAndDrain"})
    assert state == "Completed"
    listed = {tuple(ref.split("/")) for ref in status(journal)["deactivated"]}
    assert listed and listed == deactivated_workloads(h, journal.id)
    assert previous_stop_policies(journal) == {"tau-ws-train": "None"}
    # the CLI shows them in `workflow status`, with the command that undoes the hold
    assert await asyncio.to_thread(cli, "workflow", "status", journal.id) == 0
    out = capsys.readouterr().out
    assert f"{len(listed)} Workload(s) deactivated" in out
    assert all(f"{ns}/{name}" in out for ns, name in listed)
    assert f"undo: taudash workflow start release --reactivate-from {journal.id}" in out
    rel = release_params([], journal.id, ctx=ctx_of(h))
    _, state = await h.run("release", rel)
    assert state == "Completed" and policy(h, "tau-ws-train") == "None"
    assert deactivated_workloads(h, journal.id) == set()
    for ns, name in listed:
        wl = h.sim.db.get(WL, name, ns)
        assert wl is None or wl["spec"].get("active", True)


@pytest.mark.parametrize("point", ["hold:op0", "drain:executed", "restore:before-plan"])
async def test_crash_then_resume_still_restores_the_previous_policy(h, tmp_path, point):
    h.sim.db.patch_merge(CQ, "research-multikueue", {"spec": {"stopPolicy": "Hold"}})
    await h.settle()
    new = [p for p in catalog(h) if p["name"] != "azure.research.remote.burst"]
    params = catalog_params(ctx_of(h), _file(tmp_path, new))
    assert params["cqs"] == ["research-multikueue"]

    def crash(at):
        if at == point:
            raise Crash(at)

    journal = Journal.create("c1" + point.replace(":", "-"), "catalog", params, h.live.target.context)
    with pytest.raises(Crash):
        await h.run("catalog", params, hooks=crash, journal=journal)
    resumed = Journal.open(str(journal.path))
    _, state = await h.run("catalog", params, journal=resumed)
    assert state == "Completed", resumed.records[-3:]
    assert policy(h, "research-multikueue") == "Hold"
    assert previous_stop_policies(resumed) == {"research-multikueue": "Hold"}


async def test_rollback_restores_hold_and_offers_reactivation(h, tmp_path):
    h.sim.db.patch_merge(CQ, "tau-ws-eval", {"spec": {"stopPolicy": "Hold"}})
    await h.settle()
    new = catalog(h)
    next(p for p in new if p["name"] == EVAL)["placement"] = "same-host"
    real_confirm = h.confirm

    async def keep_them_deactivated(step, plan, op):  # the operator declines the change's reactivation
        return False if step.id == "reactivate" else await real_confirm(step, plan, op)

    h.confirm = keep_them_deactivated
    journal, state = await h.run("catalog", catalog_params(ctx_of(h), _file(tmp_path, new)))
    h.confirm = real_confirm
    assert state == "Paused", journal.records[-3:]
    by_catalog = deactivated_workloads(h, journal.id)
    assert by_catalog and {tuple(ref.split("/")) for ref in status(journal)["deactivated"]} == by_catalog
    rb_params = rollback_params(ctx_of(h), journal.id)
    assert rb_params["cqs"] == ["tau-ws-eval"] and {tuple(x) for x in rb_params["reactivate"]} == by_catalog
    assert rb_params["diff"] == [f"~ {EVAL}: placement same-host → unconstrained"]
    rb, state = await h.run("rollback", rb_params)
    assert state == "Completed", rb.records[-3:]
    assert policy(h, "tau-ws-eval") == "Hold"
    assert "reactivate" in [s["id"] for s in status(rb)["steps"]]
    assert ("reactivate", None) in h.confirmations  # its own confirmation
    assert deactivated_workloads(h, journal.id) == set()  # what the catalog run deactivated is active again
    assert deactivated_workloads(h, rb.id) == set()  # and what the rollback's own drain deactivated
    assert status(rb)["deactivated"] == [] and status(journal)["deactivated"] == []
    for ns, name in by_catalog:
        wl = h.sim.db.get(WL, name, ns)
        assert wl is None or wl["spec"].get("active", True)
    assert h.sim.db.get(TC, "cluster")["spec"]["workloadProfiles"] == yaml.safe_load(
        open(journal.artifacts()["taucluster"]).read())["spec"]["workloadProfiles"]


async def test_a_queue_already_on_the_target_is_recorded_not_written(h):
    h.sim.db.patch_merge(CQ, "tau-ws-vision", {"spec": {"stopPolicy": "HoldAndDrain"}})
    await h.settle()
    before = len(writes_to(h, "tau-ws-vision"))
    params = {"cqs": ["tau-ws-train", "tau-ws-vision"], "mode": "HoldAndDrain", "cancel_pending": False}
    journal, state = await h.run("hold", params)
    assert state == "Completed"
    assert previous_stop_policies(journal) == {"tau-ws-train": "None", "tau-ws-vision": "HoldAndDrain"}
    assert len(writes_to(h, "tau-ws-vision")) == before and len(writes_to(h, "tau-ws-train", dry_runs=False)) == 1
    assert "already on HoldAndDrain, not written: tau-ws-vision" in journal.steps()["hold"].planned["notes"]
    _, state = await h.run("release", release_params([], journal.id, ctx=ctx_of(h)))
    assert state == "Completed"
    assert policy(h, "tau-ws-train") == "None" and policy(h, "tau-ws-vision") == "HoldAndDrain"
    assert len(writes_to(h, "tau-ws-vision")) == before


async def test_the_export_step_says_where_it_saved(h, tmp_path):
    import io
    from datetime import datetime
    from pathlib import Path

    from taudash.commands.workflow import _printer
    from taudash.engine.workflows import Runner, build, new_id

    new = catalog(h)
    next(p for p in new if p["name"] == EVAL)["placement"] = "same-host"
    params = catalog_params(ctx_of(h), _file(tmp_path, new))
    journal = Journal.create(new_id(), "catalog", params, h.live.target.context)
    err = io.StringIO()
    runner = Runner(build("catalog", params), h.ctx(journal), journal, h.confirm,
                    _printer(now=lambda: datetime(2026, 1, 2, 9, 5, 7), err=err), poll=0.0, sleep=h.sleep)
    assert await runner.run() == "Completed"
    art = journal.artifacts()
    said = [ln for ln in err.getvalue().splitlines() if "exported TauCluster" in ln]
    assert len(said) == 1 and art["taucluster"] in said[0] and art["profiles"] in said[0]
    assert Path(art["taucluster"]).is_file() and Path(art["profiles"]).is_file()
