"""A stop is a pause that says what stays; an abort is an explicit end that says it too.

Against the simulated world (stepped by the runner's sleep), each kind of run — hold, catalog change,
rollback, drain supervision — is stopped the ways an operator stops one: a declined step, a mistyped
context name (the CLI's own confirmation, answered by script), Ctrl-C (the run's task interrupted). The
run is Paused and resumable; `workflow status` (text and `-o json` `leftovers`) lists what it leaves in
the cluster — queues on Hold/HoldAndDrain, Workloads still deactivated, the catalog it applied, objects it
deleted — each with the exact command that undoes it, checked against the live objects when a cluster is
given; `workflow abort ID --yes` ends it and prints the same. Exit codes: 4 paused or failed, 0 completed
or aborted.
"""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from tools.workflows import CQ, TC, WL, harness

from taudash.cli import main
from taudash.commands import workflow as wfcli
from taudash.engine.workflows import Journal, Runner, build, new_id
from taudash.engine.workflows.params import release_params, rollback_params
from taudash.engine.workflows.steps import DEACTIVATED_BY

pytestmark = pytest.mark.usefixtures("state_dir")


@pytest.fixture
async def h():
    async with harness() as it:
        yield it


def operator(context: str, answers: dict[str, list[str]]):
    """Confirmations as the CLI asks them on a terminal: at the steps named in `answers`, the CLI's own
    prompt gets those lines in order (a typed context name, `y`, `n`, a typo); every other step is
    confirmed, as `--yes` does."""
    async def confirm(step, plan, op):
        if step.id not in answers:
            return True
        lines = answers[step.id]
        return await wfcli._confirmer(True, context, ask=lambda _prompt: lines.pop(0) if lines else "")(step, plan, op)

    return confirm


async def run(h, kind: str, params: dict, answers: dict | None = None, interrupt_at: str = ""):
    """Run `kind`, the steps named in `answers` confirmed through the CLI's prompt with those lines;
    `interrupt_at` (a hook point) interrupts it there as Ctrl-C does (the task is cancelled).
    Returns (the journal as read back, the state the runner returned)."""
    journal = Journal.create(new_id(), kind, params, h.live.target.context, cluster=h.live.identity)

    def hook(at: str) -> None:
        if at == interrupt_at:  # Ctrl-C here: asyncio cancels the run's task at this very point
            raise asyncio.CancelledError

    confirm = operator(h.live.target.context, answers or {})
    runner = Runner(build(kind, journal.params), h.ctx(journal, hook), journal, confirm, poll=0.0, sleep=h.sleep)
    if interrupt_at:
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(runner.run(), 120)
        return Journal.open(str(journal.path)), "interrupted"
    state = await asyncio.wait_for(runner.run(), 120)
    return Journal.open(str(journal.path)), state


async def status_json(journal: Journal, *source: str) -> dict:
    out = io.StringIO()
    real = wfcli.sys.stdout
    wfcli.sys.stdout = out
    try:
        assert await asyncio.to_thread(main, ["workflow", "status", journal.id, "-o", "json", *source]) == 0
    finally:
        wfcli.sys.stdout = real
    return json.loads(out.getvalue())


async def status_text(journal: Journal, capsys) -> str:
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["workflow", "status", journal.id]) == 0
    return " ".join(capsys.readouterr().out.split())


def undo_of(doc: dict) -> dict[str, str | None]:
    return {it["kind"]: it["undo"] for it in doc["leftovers"]}


def release(wid: str) -> str:
    return f"taudash workflow start release --reactivate-from {wid} --context taudash-sim"


def inactive(h, wid: str) -> set[str]:
    return {f"{w['metadata']['namespace']}/{w['metadata']['name']}" for w in h.sim.db.list(WL)
            if (w["metadata"].get("annotations") or {}).get(DEACTIVATED_BY) == wid
            and not w["spec"].get("active", True)}


# --- hold --------------------------------------------------------------------------------------------


async def test_hold_declined_at_the_drain_pauses_and_says_the_queue_stays_held(h, capsys):
    journal, state = await run(h, "hold", {"cqs": ["tau-ws-eval"], "mode": "HoldAndDrain"},
                               answers={"hold": [h.live.target.context], "drain": ["n"]})
    assert state == "Paused" and journal.resumable
    assert h.sim.db.get(CQ, "tau-ws-eval")["spec"]["stopPolicy"] == "HoldAndDrain"
    doc = await status_json(journal)
    assert doc["state"] == "Paused" and doc["paused"]["step"] == "drain" and doc["paused"]["reason"] == "declined"
    assert undo_of(doc) == {"queue-held": release(journal.id)}
    [held] = doc["leftovers"]
    assert (held["object"], held["stopPolicy"], held["previous"], held["checked"]) == (
        "ClusterQueue tau-ws-eval", "HoldAndDrain", "None", "journal")
    assert doc["resume"] == f"taudash workflow resume {journal.id} --context taudash-sim"
    text = await status_text(journal, capsys)
    assert "paused at step 2 (Deactivate pending Workloads, then wait for the queues to drain): not confirmed" in text
    assert "ClusterQueue tau-ws-eval is on stopPolicy HoldAndDrain (it was None before the run)" in text
    assert f"undo: {release(journal.id)}" in text
    # checked against the live cluster: the same, marked so
    live = await status_json(journal, "--kubeconfig", str(h.sim.kubeconfig))
    assert [it["checked"] for it in live["leftovers"]] == ["cluster"]
    # the operator ends it for good: nothing is undone, and the same list says how to undo it
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["workflow", "abort", journal.id, "--yes"]) == 0
    err = capsys.readouterr().err
    assert f"workflow {journal.id} aborted: it will not be resumed; nothing it changed in the cluster is undone" in err
    assert "ClusterQueue tau-ws-eval is on stopPolicy HoldAndDrain" in err and f"undo: {release(journal.id)}" in err
    assert Journal.open(journal.id).state == "Aborted"
    assert h.sim.db.get(CQ, "tau-ws-eval")["spec"]["stopPolicy"] == "HoldAndDrain"


async def test_hold_interrupted_in_its_wait_lists_the_queue_and_the_deactivated_workloads(h):
    journal, _ = await run(h, "hold", {"cqs": ["tau-ws-eval"], "mode": "HoldAndDrain"}, interrupt_at="drain:op0")
    assert journal.state == "Paused" and journal.last("paused")["data"]["reason"] == "interrupted"
    doc = await status_json(journal)
    assert undo_of(doc) == {"queue-held": release(journal.id), "workloads-deactivated": release(journal.id)}
    workloads = next(it for it in doc["leftovers"] if it["kind"] == "workloads-deactivated")
    assert set(workloads["objects"]) == inactive(h, journal.id) and workloads["objects"]
    assert set(doc["deactivated"]) == inactive(h, journal.id)
    # the printed hint after Ctrl-C says the same
    err = io.StringIO()
    assert wfcli.interrupted(journal.id, "taudash-sim", err=err) == 130
    said = " ".join(err.getvalue().split())
    assert f"{len(workloads['objects'])} Workload(s) deactivated" in said and f"undo: {release(journal.id)}" in said


async def test_a_mistyped_context_name_pauses_with_nothing_left(h):
    journal, state = await run(h, "hold", {"cqs": ["tau-ws-eval"], "mode": "HoldAndDrain"}, answers={"hold": ["prod"]})
    assert state == "Paused"
    data = journal.last("paused")["data"]
    assert data["reason"] == "context-name" and "'prod' is not the context name 'taudash-sim'" in data["message"]
    doc = await status_json(journal)
    assert doc["leftovers"] == [] and h.real_writes() == []


# --- catalog change and rollback ---------------------------------------------------------------------------


async def test_catalog_declined_at_its_reactivation_leaves_the_catalog_and_the_workloads(h, tmp_path, capsys):
    params = h.eval_placement_change(tmp_path)
    journal, state = await run(h, "catalog", params, answers={"reactivate": ["n"]})
    assert state == "Paused" and journal.last("paused")["data"]["step"] == "reactivate"
    doc = await status_json(journal, "--kubeconfig", str(h.sim.kubeconfig))
    assert undo_of(doc) == {"catalog-changed": f"taudash workflow start rollback --from {journal.id} --context "
                                               "taudash-sim",
                            "workloads-deactivated": release(journal.id)}
    assert all(it["checked"] == "cluster" for it in doc["leftovers"])
    assert set(next(it for it in doc["leftovers"] if it["kind"] == "workloads-deactivated")["objects"]) == \
        inactive(h, journal.id)
    text = await status_text(journal, capsys)
    declared = len(h.sim.db.get(TC, "cluster")["spec"]["workloadProfiles"])  # the demo's catalog, one profile moved
    assert f"TauCluster cluster declares the new catalog ({declared} profiles)" in text, text
    assert f"undo: taudash workflow start rollback --from {journal.id}" in text
    # the queue is back on its previous policy: not a leftover
    assert h.sim.db.get(CQ, "tau-ws-eval")["spec"].get("stopPolicy", "None") == "None"


async def test_catalog_declined_before_the_apply_leaves_the_queue_held_not_the_catalog(h, tmp_path):
    params = h.eval_placement_change(tmp_path)
    journal, state = await run(h, "catalog", params, answers={"apply": ["n"]})
    assert state == "Paused" and journal.last("paused")["data"]["step"] == "apply"
    doc = await status_json(journal)
    assert set(undo_of(doc)) == {"queue-held", "workloads-deactivated"}
    assert set(undo_of(doc).values()) == {release(journal.id)}


async def test_rollback_stopped_before_the_restore_says_the_change_still_stays(h, tmp_path, capsys):
    params = h.eval_placement_change(tmp_path)
    change, state = await run(h, "catalog", params, answers={"reactivate": ["n"]})
    assert state == "Paused"
    assert await asyncio.to_thread(main, ["workflow", "abort", change.id, "--yes"]) == 0
    rb_params = rollback_params(h.context(), change.id)
    rb, state = await run(h, "rollback", rb_params, answers={"restore-catalog": ["n"]})
    assert state == "Paused" and rb.last("paused")["data"]["step"] == "restore-catalog"
    doc = await status_json(rb)
    items = {(it["kind"], it.get("of")): it["undo"] for it in doc["leftovers"]}
    resume = f"taudash workflow resume {rb.id} --context taudash-sim"
    assert items[("queue-held", None)] == release(rb.id)
    assert items[("catalog-changed", change.id)] == resume  # finishing the rollback undoes it
    # ended for good, each undo then names the runs that remain: the queue goes back with rb's release
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["workflow", "abort", rb.id, "--yes"]) == 0
    said = " ".join(capsys.readouterr().err.split())
    assert f"undo: taudash workflow start rollback --from {change.id}" in said and "workflow resume" not in said
    _, state = await run(h, "release", release_params([], rb.id, ctx=h.context()))
    assert state == "Completed" and h.sim.db.get(CQ, "tau-ws-eval")["spec"].get("stopPolicy", "None") == "None"
    # a new rollback, its destructive hold answered with a typo: paused, none of its own changes stay,
    # the change it undoes still does — and finishing this rollback is what undoes it
    rb2, state = await run(h, "rollback", rollback_params(h.context(), change.id), answers={"hold": ["prod"]})
    assert state == "Paused" and rb2.last("paused")["data"]["reason"] == "context-name"
    doc = await status_json(rb2)
    assert {(it["kind"], it.get("of"), it["undo"]) for it in doc["leftovers"]} == {
        ("catalog-changed", change.id, f"taudash workflow resume {rb2.id} --context taudash-sim"),
        ("workloads-deactivated", change.id, f"taudash workflow resume {rb2.id} --context taudash-sim")}


# --- drain supervision -------------------------------------------------------------------------------------


async def test_drain_paused_after_a_deletion_says_it_cannot_be_undone(h):
    journal, state = await run(h, "drain", {"workspace": "eval"}, answers={"blockers": [h.live.target.context, "prod"]})
    assert state == "Paused" and journal.last("paused")["data"]["reason"] == "context-name"
    doc = await status_json(journal)
    [deleted] = doc["leftovers"]
    assert deleted["kind"] == "deleted" and deleted["undo"] is None and "not reversible" in deleted["message"]
    kind, ref = deleted["object"].split(" ", 1)
    ns, name = ref.split("/")
    resource = {"RayService": "rayservices.ray.io", "Deployment": "deployments.apps", "Job": "jobs.batch",
                "RayJob": "rayjobs.ray.io"}[kind]
    gone = h.sim.db.get(resource, name, ns)
    assert gone is None or gone["metadata"].get("deletionTimestamp")  # the first blocker, confirmed, went
    assert len([op for s in doc["steps"] for op in s["operations"] if op["verb"] == "delete"]) == 1


async def test_a_failed_run_exits_4_not_1(h, capsys):
    h.sim.faults.forbid("deployments.apps")  # the drain becomes Unknown: its first step fails closed
    await h.sim.api.wait_for_watches(1, "deployments.apps")
    h.sim.faults.drop_watches()
    code = await asyncio.to_thread(main, ["workflow", "start", "drain", "--workspace", "eval", "--yes",
                                          "--kubeconfig", str(h.sim.kubeconfig), "--poll", "0"])
    err = capsys.readouterr().err
    assert code == wfcli.EXIT_PAUSED == 4, err
    assert "Failed" in err and "continue it: taudash workflow resume" in err


# --- exit codes ----------------------------------------------------------------------------------------------


def test_paused_and_failed_exit_4_completed_and_aborted_exit_0_and_help_says_so(capsys):
    assert wfcli.EXIT_PAUSED == 4
    with pytest.raises(SystemExit):
        main(["workflow", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit codes: 0 the run completed, or was aborted on request" in text
    assert "4 the run paused" in text and "or failed: it is resumable" in text


# --- every kind, every way of stopping: what stays is listed, and abort lists it again ------------------------

RELEASE, ROLLBACK, RESUME = "release", "rollback", "resume"
STOPS = [  # kind, answers by step, interrupted at, pause reason, what stays → what undoes each (by command word)
    pytest.param("catalog", {"hold": ["prod"]}, "", "context-name", {}, id="catalog-mistyped-context"),
    pytest.param("catalog", {}, "apply:op0", "interrupted",
                 {"queue-held": RELEASE, "workloads-deactivated": RELEASE, "catalog-changed": ROLLBACK},
                 id="catalog-ctrl-c-after-the-apply"),
    pytest.param("rollback", {}, "restore-catalog:op0", "interrupted",
                 {"queue-held": RELEASE, "workloads-deactivated": RELEASE}, id="rollback-ctrl-c-after-the-restore"),
    pytest.param("rollback", {"restore": ["n"]}, "", "declined",
                 {"queue-held": RELEASE, "workloads-deactivated": RELEASE}, id="rollback-declined-at-restore"),
    pytest.param("drain", {"blockers": ["taudash-sim", ""]}, "", "context-name", {"deleted": None},
                 id="drain-nothing-typed-at-the-second-deletion"),
    pytest.param("drain", {}, "blockers:op0", "interrupted", {"deleted": None}, id="drain-ctrl-c-after-a-deletion"),
]


@pytest.mark.parametrize(("kind", "answers", "at", "reason", "stays"), STOPS)
async def test_each_kind_stopped_each_way_lists_what_stays_and_abort_lists_it_again(h, tmp_path, capsys, kind,
                                                                                   answers, at, reason, stays):
    if kind == "catalog":
        params = h.eval_placement_change(tmp_path)
    elif kind == "rollback":
        change, state = await run(h, "catalog", h.eval_placement_change(tmp_path))
        assert state == "Completed"
        params = rollback_params(h.context(), change.id)
    else:
        params = {"workspace": "eval"}
    journal, _ = await run(h, kind, params, answers=answers, interrupt_at=at)
    assert journal.state == "Paused" and journal.last("paused")["data"]["reason"] == reason
    doc = await status_json(journal, "--kubeconfig", str(h.sim.kubeconfig))
    words = {it["kind"]: (it["undo"].split()[3] if it["undo"] and "start" in it["undo"] else
                          RESUME if it["undo"] else None) for it in doc["leftovers"]}
    assert words == stays, doc["leftovers"]
    assert all(f"-from {journal.id} " in it["undo"] + " " for it in doc["leftovers"] if it["undo"])
    assert all(it["checked"] == "cluster" for it in doc["leftovers"])
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["workflow", "abort", journal.id, "--yes"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert Journal.open(journal.id).state == "Aborted"
    for it in doc["leftovers"]:
        assert " ".join(it["message"].split()) in err
        assert (f"undo: {it['undo']}" if it["undo"] else "(not reversible by taudash)") in err
    if not stays:
        assert "what this run leaves in the cluster: nothing" in err
