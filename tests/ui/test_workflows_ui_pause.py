"""Stopping a run in the dashboard: a pause that says what stays, an abort that asks for the run's id.

Against the simulated world (Pilot): the step confirmation's focused button is "Pause (resume later)",
so Enter pauses — the run is Paused, resumable, and the wizard's WHAT STAYS lists what it leaves in the
cluster (checked against the cluster the dashboard shows) with the command that undoes it; `p` pauses a
run at its next wait; quitting while a run runs pauses it; `a` ends a run only once its id is typed. The
SVG snapshots (120×36, frozen clock) show the paused wizard's summary and the abort confirmation, from a
fixture journal (tests/fixtures/workflow-paused: a hold of two queues paused at step 2 after a resume
that found its in-flight write applied).
"""

from __future__ import annotations

import asyncio
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from factories import dashboard_app
from test_workflows_ui import open_rig, text_of, wait_for
from textual.widgets import Button, Input, Static
from tools.claims import LEASES
from tools.paths import FIXTURES

from taudash.engine.workflows import Journal, summaries
from taudash.screens.kit.messages import AbortWorkflow, OpenWorkflow, StartWorkflow
from taudash.screens.workflow.wizard import StepConfirmScreen, WizardScreen
from taudash.sim.server import SimServer

CQ = "clusterqueues.kueue.x-k8s.io"
PAUSED_STATE = FIXTURES / "workflow-paused"
STATE = Path("/tmp/taudash-paused-snapshot-state")  # fixed: the wizard shows the journal path
NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


@pytest.fixture
async def rig(state_dir):
    async with SimServer() as sim:
        r = await open_rig(sim)
        yield r
        await r.source.stop()
        await r.source.target.close()


async def until_confirm(pilot, app, step_no: int) -> StepConfirmScreen:
    await wait_for(pilot, lambda: isinstance(app.screen, StepConfirmScreen) and app.screen.request.step_no == step_no,
                   within=60, what=f"step {step_no}'s confirmation")
    return app.screen


async def test_enter_on_a_step_confirmation_pauses_and_the_wizard_says_what_stays(rig):
    app, sim = rig.app, rig.sim
    context = app.session.actions.context
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(StartWorkflow("hold",
                                       {"cqs": ["tau-ws-eval"], "mode": "HoldAndDrain", "cancel_pending": True}))
        modal = await until_confirm(pilot, app, 1)
        modal.query_one("#sc-context", Input).value = context
        await pilot.press("enter")
        modal = await until_confirm(pilot, app, 2)
        pause = modal.query_one("#pause", Button)
        assert modal.focused is pause and str(pause.label) == "Pause (resume later)"
        assert "Pause stops the workflow here, resumable" in text_of(modal.query_one("#sc-ask", Static))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen) and app.screen.model.state == "Paused",
                       what="Paused")
        wizard = app.screen
        wid = wizard.model.id
        assert [s.state for s in wizard.model.steps] == ["Done", "Paused"] and wizard.model.resumable
        stays = text_of(wizard.query_one("#wz-leftovers", Static))
        assert "WHAT STAYS in the cluster  checked against the cluster now" in stays
        assert "‖ paused at step 2: not confirmed" in stays
        assert "ClusterQueue tau-ws-eval is on stopPolicy HoldAndDrain (it was None before the run)" in stays
        assert f"undo: taudash workflow start release --reactivate-from {wid} --context {context}" in stays
        assert "r resumes where it stopped" in stays
        assert any("Paused" in str(n.message) and "WHAT STAYS" in str(n.message) for n in app._notifications)
        # r resumes it where it stopped: the paused step asks again
        await pilot.press("r")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the resume confirmation")
        await pilot.press("tab", "enter")
        modal = await until_confirm(pilot, app, 2)
        assert modal.request.workflow_id == wid
        await pilot.press("escape")  # escape pauses too
        await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen) and app.screen.model.state == "Paused",
                       what="Paused again")
        # paused, the run keeps its claim on the queue; ended for good, it gives it back
        assert [lease["spec"]["holderIdentity"] for lease in sim.db.list(LEASES)] == [wid]
        await pilot.press("a")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the abort confirmation")
        await pilot.press(*wid, "enter")
        await wait_for(pilot, lambda: not sim.db.list(LEASES), what="the claim given back")
    assert sim.db.get(CQ, "tau-ws-eval")["spec"]["stopPolicy"] == "HoldAndDrain"
    [row] = summaries()
    assert row["state"] == "Aborted"


async def test_p_pauses_a_waiting_run_and_quitting_a_running_one_pauses_it(rig):
    app = rig.app

    async def frozen(_dt):  # the world does not move: the drain waits until paused
        await asyncio.sleep(0.02)

    app.workflows.options.sleep = frozen
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(StartWorkflow("hold", {"cqs": ["tau-ws-eval"], "mode": "Hold", "cancel_pending": True}))
        await until_confirm(pilot, app, 1)
        await pilot.click("#confirm")
        await wait_for(pilot,
                       lambda: isinstance(app.screen, WizardScreen) and app.screen.model.steps[1].state == "Waiting",
                       what="the drain wait")
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen) and app.screen.model.state == "Paused",
                       what="Paused by p")
        [wid] = [r["id"] for r in summaries()]
        assert Journal.open(wid).last("paused")["data"]["reason"] == "operator"
        leftovers = text_of(app.screen.query_one("#wz-leftovers", Static))
        assert "ClusterQueue tau-ws-eval is on stopPolicy Hold" in leftovers
        # resumed, then the dashboard quit while it waits: the run is paused, not lost
        await pilot.press("r")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the resume confirmation")
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: app.workflows.live(), what="running again")
        await pilot.press("q")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the quit confirmation")
        assert "pauses where it is (Paused)" in app.screen.targets[0]
        await pilot.press("tab", "enter")
    journal = Journal.open(wid)
    assert journal.state == "Paused" and journal.last("paused")["data"]["reason"] == "interrupted"


async def test_abort_asks_for_the_run_id_and_lists_what_stays(rig):
    app = rig.app
    journal = Journal.create("ab0c0d", "hold", {"cqs": ["tau-ws-eval"], "mode": "Hold", "cancel_pending": False},
                             app.session.actions.context, cluster=app.session.cluster)
    journal.append("paused", None, {"step": "hold", "reason": "declined", "message": "not confirmed"})
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(AbortWorkflow("ab0c0d"))
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the abort confirmation")
        modal = app.screen
        field = modal.query_one("#confirm-typed", Input)
        confirm = modal.query_one("#confirm", Button)
        assert modal.focused is field and confirm.disabled and str(confirm.label) == "Abort for good"
        assert str(modal.query_one("#cancel", Button).label) == "Keep the run"
        assert "nothing: no change of this run remains in the cluster" in " ".join(modal.targets)
        await pilot.press(*"ab0c0", "enter")  # not the id: nothing happens
        await pilot.pause()
        assert app.screen is modal and confirm.disabled and Journal.open("ab0c0d").state == "Paused"
        await pilot.press("escape")  # keeps the run
        await pilot.pause()
        assert Journal.open("ab0c0d").state == "Paused"
        app.post_message(AbortWorkflow("ab0c0d"))
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the abort confirmation")
        await pilot.press(*"ab0c0d", "enter")
        await pilot.pause()
    assert Journal.open("ab0c0d").state == "Aborted"
    assert rig.real_writes() == []


# --- snapshots ---------------------------------------------------------------------------------------------


@pytest.fixture
def paused_state(monkeypatch):
    shutil.rmtree(STATE, ignore_errors=True)
    shutil.copytree(PAUSED_STATE, STATE)
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(STATE))
    yield
    shutil.rmtree(STATE, ignore_errors=True)


async def open_paused(pilot) -> None:
    app = pilot.app
    app.post_message(OpenWorkflow("5a0e1d"))
    await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen) and app.screen.model.state == "Paused",
                   what="the paused wizard")
    await pilot.pause()


def test_paused_wizard_says_what_stays_snapshot(snap_compare, paused_state):
    assert snap_compare(dashboard_app(now=NOW, writable=True), run_before=open_paused, terminal_size=SIZE)


def test_abort_confirmation_snapshot(snap_compare, paused_state):
    async def run_before(pilot):
        app = pilot.app
        await open_paused(pilot)
        await pilot.press("a")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the abort confirmation")
        await pilot.press(*"5a0e")  # half the run's id typed: Abort for good stays disabled
        await wait_for(pilot, lambda: app.screen.query_one(Input).value == "5a0e", what="the typed id")
        await pilot.pause()

    assert snap_compare(dashboard_app(now=NOW, writable=True), run_before=run_before, terminal_size=SIZE)


async def test_the_wizard_follows_a_run_the_cli_aborts_meanwhile(rig):
    app = rig.app
    journal = Journal.create("c11ab0", "hold", {"cqs": ["tau-ws-eval"], "mode": "Hold", "cancel_pending": False},
                             app.session.actions.context, cluster=app.session.cluster)
    journal.append("paused", None, {"step": "hold", "reason": "declined", "message": "not confirmed"})
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(OpenWorkflow("c11ab0"))
        await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen) and app.screen.model.state == "Paused",
                       what="the paused run's wizard")
        await pilot.pause(0.5)  # a tick or two: the wizard has read the journal as it is
        Journal.open("c11ab0").append("aborted", None, {"by": "operator"})  # `taudash workflow abort` elsewhere
        await wait_for(pilot, lambda: app.screen.model.state == "Aborted", what="the wizard to read the abort")
        assert "a abort" not in text_of(app.screen.query_one("#wz-mode", Static))


def test_the_list_reads_each_journal_once_and_a_release_refreshes_the_run_it_undoes(tmp_path, monkeypatch):
    from taudash.screens.workflow.journals import JournalIndex

    directory = tmp_path / "workflows"
    shutil.copytree(FIXTURES / "workflow-state" / "workflows", directory)
    opened: list[str] = []
    real_open = Journal.open.__func__

    def counting(cls, ref, directory=None):
        opened.append(Path(ref).stem)
        return real_open(cls, ref, directory)

    monkeypatch.setattr(Journal, "open", classmethod(counting))
    index = JournalIndex()
    held = {e.id: e for e in index.load(directory)}["a1b2c3"]  # a completed HoldAndDrain of tau-ws-vision
    assert [it["kind"] for it in held.leftovers] == ["queue-held"]
    assert sorted(opened) == sorted(p.stem for p in directory.glob("*.jsonl"))  # each once, not once per entry
    opened.clear()
    assert index.load(directory) and opened == []  # nothing changed: nothing parsed
    # a release of it, from another terminal, puts the queue back: the hold's entry no longer lists it
    release = Journal.create("e1ea5e", "release", {"cqs": ["tau-ws-vision"], "reactivate_from": "a1b2c3",
                                                  "restore_to": {"tau-ws-vision": "None"}}, "aks-eastus-prod-demo",
                             directory=directory)
    op = {"verb": "patch", "kind": "ClusterQueue", "namespace": None, "name": "tau-ws-vision",
          "patch": {"spec": {"stopPolicy": "None"}},
          "diff": "~ ClusterQueue tau-ws-vision: stopPolicy HoldAndDrain → None"}
    release.append("executing", "restore", {"op": op})
    release.append("executed", "restore", {"op": op, "result": {"changed": True}})
    opened.clear()
    held = {e.id: e for e in index.load(directory)}["a1b2c3"]
    assert held.leftovers == [] and opened == ["e1ea5e"]  # the hold's entry is made again from its parsed journal
