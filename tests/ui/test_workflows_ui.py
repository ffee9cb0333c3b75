"""Guided operations from the dashboard, against the simulated world (Pilot).

The dashboard runs on the live source like `taudash demo`; the world is stepped by the runner's sleep
(30 simulated seconds per poll, as in test_workflows_e2e.py), so waits progress deterministically.
"""

from __future__ import annotations

import asyncio
import io
import threading
from datetime import UTC, datetime
from unittest import mock

import pytest
from rich.console import Console
from textual.widgets import Button, Input, RadioButton, Select, SelectionList, Static
from tools.claims import claim_request
from tools.waiting import palette_results

from taudash.app import TaudashApp
from taudash.engine.actions import Actions
from taudash.engine.model.names import HELD_BY_ANNOTATION
from taudash.engine.session import Session
from taudash.engine.sources.client import connect
from taudash.engine.sources.kube import KubeSource
from taudash.engine.store import Store
from taudash.engine.view import SourceInfo
from taudash.engine.workflows import Journal, summaries
from taudash.screens.kit.messages import NewWorkflow, ResumeWorkflow, StartWorkflow
from taudash.screens.widgets.keyed_table import KeyedTable
from taudash.screens.workflow.forms import NewWorkflowScreen
from taudash.screens.workflow.host import RunOptions
from taudash.screens.workflow.wizard import StepConfirmScreen, WizardScreen
from taudash.screens.workflows import WorkflowsScreen
from taudash.sim.controllers.scenario import Knobs, Scenario
from taudash.sim.server import SimServer
from taudash.sim.world import World

CQ = "clusterqueues.kueue.x-k8s.io"
WL = "workloads.kueue.x-k8s.io"
QUIET = Scenario(knobs=Knobs(arrivals_per_hour=0, node_flaps_per_hour=0, cordons_per_hour=0))
TICK = 0.3


pytestmark = pytest.mark.usefixtures("state_dir")


class Rig:
    """A simulated cluster, its world, and the dashboard wired to it through the live source."""

    def __init__(self, sim: SimServer, world: World, app: TaudashApp, source: KubeSource) -> None:
        self.sim, self.world, self.app, self.source = sim, world, app, source

    async def sleep(self, _dt: float) -> None:
        self.world.step(30)
        await asyncio.sleep(0.03)  # let the watch deliver the world's writes

    def real_writes(self) -> list[tuple[str, str]]:
        """The workflows' steps' writes (their claims on what they write left out: tests/tools/claims.py)."""
        return [(r.verb, r.path) for r in self.sim.api.requests
                if r.verb in ("patch", "delete", "create") and not r.dry_run and not claim_request(r)]


async def open_rig(sim: SimServer, read_only: bool = False) -> Rig:
    world = World.for_server(sim, QUIET)
    for _ in range(3):
        world.step(5)
    target = await connect(kubeconfig=str(sim.kubeconfig))
    store, lock = Store(), threading.RLock()
    source = KubeSource(store, target, lock=lock)
    await source.start()
    assert await source.wait_synced(15)
    actions = (Actions.read_only("read-only mode (--read-only)", target.context) if read_only
               else Actions.live(target.api_client, "tester", target.context, None))
    session = Session(store, SourceInfo(type="sim", context=target.context, path=target.server), read_only=read_only,
                      demo=True, lock=lock, actions=actions, cluster=await source.identity())
    rig = Rig(sim, world, None, source)  # type: ignore[arg-type]
    rig.app = TaudashApp(session, clock=lambda: datetime.now(UTC), tick=TICK, precompose=False,  # screens on visit
                         workflows=RunOptions(poll=0.0, sleep=rig.sleep, clock=world.clock.now))
    return rig


@pytest.fixture
async def rig():
    async with SimServer() as sim:
        r = await open_rig(sim)
        yield r
        await r.source.stop()
        await r.source.target.close()


async def wait_for(pilot, predicate, within: float = 20.0, what: str = "") -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while not predicate():
        if loop.time() > end:
            app = pilot.app
            model = getattr(app.screen, "model", None)
            log = [f"{x.mark} {x.text}" for x in model.log][-15:] if model is not None else []
            raise AssertionError(f"timed out waiting for {what or predicate}: screen {app.screen}, "
                                 f"state {getattr(model, 'state', None)}, log {log}")
        await pilot.pause(0.05)
    await pilot.pause()  # a screen that just got pushed composes its widgets


def text_of(widget: Static) -> str:
    """What a Static shows, as plain text (wide, so nothing wraps)."""
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


def modal_text(screen) -> str:
    return " ".join(text_of(w) for w in screen.query(Static))


async def open_hold_form(pilot, app, cq: str) -> NewWorkflowScreen:
    """3 Queues → highlight the ClusterQueue → w opens the form with it chosen."""
    await pilot.press("3")
    await pilot.pause()
    table = app.screen.query_one("#queues", KeyedTable)
    table.focus()
    table.move_cursor(row=table.get_row_index(f"cq:{cq}"))
    await pilot.pause()
    await pilot.press("w")
    await wait_for(pilot, lambda: isinstance(app.screen, NewWorkflowScreen), what="the new-workflow form")
    return app.screen


async def test_hold_from_the_queues_screen_confirms_by_context_name_and_drains(rig):
    app, sim = rig.app, rig.sim
    context = app.session.actions.context
    async with app.run_test(size=(120, 36)) as pilot:
        form = await open_hold_form(pilot, app, "tau-ws-train")
        assert form.kind == "hold"
        assert form.query_one("#nw-hold-cqs", SelectionList).selected == ["tau-ws-train"]
        assert rig.real_writes() == []  # opening and filling the form writes nothing
        await pilot.click("#nw-start")
        # the wizard opens and the first step's confirmation names the target and the change
        await wait_for(pilot, lambda: isinstance(app.screen, StepConfirmScreen), what="the step confirmation")
        modal = app.screen
        assert isinstance(modal, StepConfirmScreen)
        body = modal_text(modal)
        assert "ClusterQueue tau-ws-train: stopPolicy None → HoldAndDrain" in body
        assert context in body and "type the context name" in body
        # a destructive confirmation counts its operations and names each target; the plan's notes
        # (what HoldAndDrain evicts) come first, in full
        assert "1 operation on 1 object" in body and "⚠ destructive" in body
        notes, flat = modal.request.notes, " ".join(body.split())  # notes wrap: compare word by word
        assert notes and all(" ".join(n.split()) in flat for n in notes)
        assert body.index("WHAT THIS MEANS") < body.index("CHANGES")
        assert "nothing has been written" in body  # step 1: true, nothing was written yet
        field = modal.query_one("#sc-context", Input)
        assert modal.focused is field  # typing goes straight into the context name
        confirm = modal.query_one("#confirm", Button)
        assert confirm.disabled  # HoldAndDrain is destructive: the context name must be typed
        await pilot.press(*"wrong")
        await pilot.pause()
        assert confirm.disabled and field.value == "wrong"
        await pilot.press("enter")  # enter with the wrong name does nothing
        await pilot.pause()
        assert app.screen is modal and rig.real_writes() == []
        await pilot.press(*["backspace"] * len("wrong"), *context)
        await pilot.pause()
        assert field.value == context and not confirm.disabled
        await pilot.press("enter")  # the typed name confirms
        # step 2 deactivates pending Workloads: not destructive, Confirm is enabled at once. Work the
        # HoldAndDrain evicted comes back pending, so the step may plan (and ask) again.
        asked = 0
        while True:
            await wait_for(pilot,
                           lambda m=modal: (isinstance(app.screen, StepConfirmScreen) and app.screen is not m) or (
                isinstance(app.screen, WizardScreen) and app.screen.model.state in ("Completed", "Failed")),
                within=60, what="the drain step's confirmation or the end")
            if not isinstance(app.screen, StepConfirmScreen):
                break
            modal = app.screen
            asked += 1
            body = modal_text(modal)
            assert "active true → active false" in body and modal.request.step_no == 2
            assert not modal.query_one("#confirm", Button).disabled and not modal.query("#sc-context")
            # not destructive: the focus is on the safe answer, and it says so: enter alone pauses, never ends it
            assert modal.focused is modal.query_one("#pause", Button)
            assert str(modal.query_one("#confirm", Button).label) == "Confirm step 2"
            # step 1 wrote: the confirmation says so instead of "nothing is written"
            assert "nothing has been written" not in body and "nothing is written" not in body
            assert "ALREADY WRITTEN by this workflow" in body and "this step writes nothing" in body
            assert "ClusterQueue tau-ws-train: stopPolicy None → HoldAndDrain" in body
            n = len(modal.request.operations)
            assert f"Confirm sends exactly the {n} operation" in body
            await pilot.click("#confirm")
        assert asked >= 1
        wizard = app.screen
        assert [s.state for s in wizard.model.steps] == ["Done", "Done"]
        assert "✓ Completed" in text_of(wizard.query_one("#wz-title", Static))
        log = " ".join(line.text for line in wizard.model.log)
        assert "confirmed" in log and "drained" in log
        assert wizard.model.items  # live progress was shown (pending/reserving/admitted per queue)
        # the run deactivated the pending Workloads: the wizard lists them and how to reactivate them
        await wait_for(pilot, lambda: bool(wizard.model.deactivated), what="the deactivated list")
        inactive = [(w["metadata"]["namespace"], w["metadata"]["name"]) for w in sim.db.list(WL)
                    if w["spec"].get("active") is False]
        assert sorted(wizard.model.deactivated) == sorted(inactive) and inactive
        gone = text_of(wizard.query_one("#wz-leftovers", Static))
        assert "WHAT STAYS in the cluster  checked against the cluster now" in gone
        assert f"{len(inactive)} Workload(s) deactivated" in gone
        assert "ClusterQueue tau-ws-train is on stopPolicy HoldAndDrain (it was None before the run)" in gone
        assert {f"{ns}/{name}" for ns, name in inactive} <= set(gone.split())  # whole names, never cut
        assert f"undo: taudash workflow start release --reactivate-from {wizard.model.id}" in gone
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, NewWorkflowScreen), what="the release form")
        form = app.screen
        assert form.kind == "release" and form.query_one("#nw-release-from", Select).value == wizard.model.id
        assert form.query_one("#nw-release-cqs", SelectionList).selected == ["tau-ws-train"]
        assert [tuple(x) for x in form.params()["reactivate"]] == wizard.model.deactivated
        await pilot.press("escape")
    cq = sim.db.get(CQ, "tau-ws-train")
    st = cq["status"]
    assert cq["spec"]["stopPolicy"] == "HoldAndDrain"
    assert (st.get("pendingWorkloads", 0), st.get("reservingWorkloads", 0), st.get("admittedWorkloads", 0)) == (0, 0, 0)
    [row] = summaries()
    assert (row["kind"], row["state"], row["stepsDone"], row["steps"]) == ("hold", "Completed", 2, 2)


async def test_declining_the_first_step_writes_nothing(rig):
    app, sim = rig.app, rig.sim
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("9")
        await pilot.pause()
        assert isinstance(app.screen, WorkflowsScreen)
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, NewWorkflowScreen), what="the form")
        form = app.screen
        form.query_one("#nw-hold-cqs", SelectionList).select("tau-ws-eval")
        await pilot.click("#nw-start")
        await wait_for(pilot, lambda: isinstance(app.screen, StepConfirmScreen), what="the confirmation")
        assert "ClusterQueue tau-ws-eval" in modal_text(app.screen)
        await pilot.press("enter")  # the context name has the focus: enter with nothing typed does nothing
        await pilot.pause()
        assert isinstance(app.screen, StepConfirmScreen)
        await pilot.press("tab")  # the next stop is "Pause (resume later)": enter pauses, it does not end the run
        assert str(app.screen.focused.label) == "Pause (resume later)"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen) and app.screen.model.state == "Paused",
                       what="the wizard to show Paused")
        wizard = app.screen
        assert wizard.model.steps[0].state == "Paused" and wizard.model.resumable
        stays = text_of(wizard.query_one("#wz-leftovers", Static))
        assert "nothing: no change this run made remains in the cluster" in stays and "‖ paused at step 1" in stays
        wid = wizard.model.id
    # Nothing of the step: no write, not even its dry-run. The run's claim on the queue (taken when it started,
    # so that no other operator's run could write to it meanwhile) stays with the paused run until it resumes
    # or ends (or goes stale).
    assert [r for r in sim.api.requests if r.verb in ("patch", "create", "delete") and not claim_request(r)] == []
    queue = sim.db.get(CQ, "tau-ws-eval")
    assert queue["spec"].get("stopPolicy", "None") == "None"
    assert queue["metadata"].get("annotations", {}).get(HELD_BY_ANNOTATION) == wid
    [row] = summaries()
    assert row["state"] == "Paused"


async def test_form_reports_bad_input_and_palette_opens_the_form(rig):
    app = rig.app
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"start workflow catalog")
        await palette_results(pilot, "start workflow catalog", expect="catalog")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NewWorkflowScreen), what="the form from the palette")
        form = app.screen
        assert form.kind == "catalog"
        form.query_one("#nw-catalog-file", Input).value = "/nonexistent/catalog.yaml"
        await pilot.click("#nw-start")
        await pilot.pause()
        assert app.screen is form
        assert "no such file" in text_of(form.query_one("#nw-error", Static))
        form.select_kind("drain")
        # the change travels button → set → form (which clears the old error): wait for it to arrive
        error = form.query_one("#nw-error", Static)
        await wait_for(pilot, lambda: form.kind == "drain" and not text_of(error).strip(),
                       what="the drain section, with the catalog's error cleared")
        # Pressed, not clicked: right after the section switch the layout may still move the button under a
        # click's coordinates on a busy machine (the click itself is exercised above).
        form.query_one("#nw-start", Button).press()
        await wait_for(pilot, lambda: "choose the workspace" in text_of(error), what="the drain form's error")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, NewWorkflowScreen)
    assert rig.real_writes() == [] and summaries() == []


async def test_drain_supervision_from_the_workspace_detail_confirms_each_deletion(rig):
    app, sim = rig.app, rig.sim
    context = app.session.actions.context
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        table = app.screen.query_one(KeyedTable)
        table.focus()
        table.move_cursor(row=table.get_row_index("eval"))
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, NewWorkflowScreen), what="the drain form")
        assert app.screen.kind == "drain"
        assert app.screen.query_one(f"#nw-kind-{'drain'}", RadioButton).value
        await pilot.click("#nw-start")
        seen = []
        while True:
            await wait_for(pilot, lambda: isinstance(app.screen, StepConfirmScreen) or (
                isinstance(app.screen, WizardScreen) and app.screen.model.state in ("Completed", "Failed")),
                within=60, what="a confirmation or the end")
            if not isinstance(app.screen, StepConfirmScreen):
                break
            modal = app.screen
            req = modal.request
            assert req.each and len(req.operations) == 1  # one object per confirmation
            seen.append(req.operations[0]["diff"])
            modal.query_one("#sc-context", Input).value = context
            await pilot.pause()
            await pilot.click("#confirm")
            await wait_for(pilot, lambda m=modal: app.screen is not m, what="the modal to close")
        assert app.screen.model.state == "Completed", app.screen.model.error
    assert "- delete RayService eval/llm" in seen and "- delete Deployment eval/web-ui" in seen
    assert sim.db.get("rayservices.ray.io", "llm", "eval") is None


async def test_resume_asks_first_then_continues(rig):
    app, sim = rig.app, rig.sim
    # a hold journaled by an earlier (crashed) session: planned, never confirmed
    journal = Journal.create("c0ffee", "hold", {"cqs": ["tau-ws-eval"], "mode": "Hold", "cancel_pending": False},
                             app.session.actions.context, cluster=app.session.cluster)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("9")
        await wait_for(pilot, lambda: app.current_mode == "workflows" and app.screen.frame is not None,
                       what="the workflows screen, rendered")
        assert app.screen.query_one("#workflows", KeyedTable).visible_keys() == ["c0ffee"]
        app.screen.query_one("#workflows", KeyedTable).focus()
        await pilot.press("r")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the resume confirmation")
        await pilot.press("tab", "enter")  # move to Confirm, then press it
        await wait_for(pilot, lambda: isinstance(app.screen, StepConfirmScreen), what="the step confirmation")
        assert not app.screen.request.destructive  # Hold (not HoldAndDrain): no context name to type
        await pilot.click("#confirm")
        await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen) and app.screen.model.state == "Completed",
                       within=30, what="Completed")
    assert sim.db.get(CQ, "tau-ws-eval")["spec"]["stopPolicy"] == "Hold"
    assert Journal.open(str(journal.path)).state == "Completed"


async def test_another_clusters_run_is_listed_greyed_and_never_resumed(rig):
    from taudash.engine.identity import ClusterIdentity

    app = rig.app
    params = {"cqs": ["tau-ws-eval"], "mode": "Hold", "cancel_pending": False}
    elsewhere = ClusterIdentity("https://10.9.9.9:6443", "uid-of-another-cluster")
    Journal.create("e15e01", "hold", params, app.session.actions.context, cluster=elsewhere)  # same context name
    Journal.create("0a0a0a", "hold", params, app.session.actions.context, cluster=app.session.cluster)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("9")
        await pilot.pause(TICK)
        screen = app.screen
        table = screen.query_one("#workflows", KeyedTable)
        assert set(table.visible_keys()) == {"e15e01", "0a0a0a"}
        assert screen.entries["e15e01"].elsewhere and not screen.entries["0a0a0a"].elsewhere
        table.focus()
        table.move_cursor(row=table.visible_keys().index("e15e01"))
        await pilot.pause()
        assert screen.check_action("resume", ()) is None and screen.check_action("abort", ()) is None
        assert "other cluster" in text_of(screen.query_one("#wf-detail", Static))
        table.move_cursor(row=table.visible_keys().index("0a0a0a"))
        await pilot.pause()
        assert screen.check_action("resume", ()) is True
        app.post_message(ResumeWorkflow("e15e01"))  # even asked directly, it is refused
        await pilot.pause()
        await pilot.pause()
        assert not isinstance(app.screen, (StepConfirmScreen, WizardScreen))
        assert type(app.screen).__name__ != "ConfirmScreen"
    assert rig.real_writes() == []
    assert Journal.open("e15e01").records[-1]["event"] == "created"


async def test_read_only_keys_explain_themselves_and_nothing_is_written():
    async with SimServer() as sim:
        r = await open_rig(sim, read_only=True)
        app = r.app
        why = app.session.actions.why_read_only
        assert why == "read-only mode (--read-only)"
        Journal.create("abc123", "hold", {"cqs": ["tau-ws-train"], "mode": "HoldAndDrain"}, "x")

        def said(what: str) -> bool:
            return any(n.message == f"{what} is disabled — {why}" and n.title == "read-only"
                       and n.severity == "warning" for n in app._notifications)

        async with app.run_test(size=(120, 36)) as pilot:
            # requests by message are refused by the app too
            for msg in (NewWorkflow("hold", cqs=["tau-ws-train"]),
                        StartWorkflow("hold", {"cqs": ["tau-ws-train"], "mode": "HoldAndDrain"}),
                        ResumeWorkflow("abc123")):
                app.post_message(msg)
                await pilot.pause()
                assert not isinstance(app.screen, (NewWorkflowScreen, StepConfirmScreen))
            app.clear_notifications()
            # 9 Workflows: n, r and a say why instead of doing nothing
            await pilot.press("9")
            await wait_for(pilot, lambda: app.current_mode == "workflows" and app.screen.frame is not None,
                           what="the workflows screen, rendered")
            mode = text_of(app.screen.query_one("#wf-mode", Static))
            assert "read-only: guided operations are disabled" in mode and why in mode
            app.screen.query_one("#workflows", KeyedTable).focus()
            for key, what in (("n", "starting a workflow"), ("r", "resuming a workflow"), ("a", "aborting a workflow")):
                assert not said(what)
                await pilot.press(key)
                await pilot.pause()
                assert said(what), (key, [n.message for n in app._notifications])
                assert isinstance(app.screen, WorkflowsScreen)  # no form, no confirmation
            # the wizard's r and a, 3 Queues' w, the workspace detail's w
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen), what="the wizard")
            for key, what in (("r", "resuming workflow abc123"), ("a", "aborting workflow abc123")):
                await pilot.press(key)
                await pilot.pause()
                assert said(what) and isinstance(app.screen, WizardScreen)
            await pilot.press("3")
            await pilot.pause()
            app.screen.query_one("#queues", KeyedTable).focus()
            app.clear_notifications()
            await pilot.press("w")
            await pilot.pause()
            assert said("starting a workflow") and not isinstance(app.screen, NewWorkflowScreen)
            await pilot.press("4")
            await pilot.pause()
            table = app.screen.query_one(KeyedTable)
            table.focus()
            table.move_cursor(row=table.get_row_index("eval"))
            await pilot.press("enter")
            await pilot.pause()
            await pilot.press("w")
            await pilot.pause()
            assert said("supervising the drain") and not isinstance(app.screen, NewWorkflowScreen)
        assert sim.api.writes == {} and not [q for q in sim.api.requests if q.verb == "review"]
        assert r.real_writes() == []
        assert [s["id"] for s in summaries()] == ["abc123"]
        assert Journal.open("abc123").state == "InProgress"  # the a key did not abort it
        await r.source.stop()
        await r.source.target.close()


async def test_abort_while_waiting_stops_at_the_next_wait(rig):
    app = rig.app

    async def frozen(_dt):  # the world does not move: the drain waits until aborted
        await asyncio.sleep(0.25)  # each check redraws the wizard: few checks, cheap redraws

    app.workflows.options.sleep = frozen
    async with app.run_test(size=(120, 36)) as pilot:
        app.post_message(StartWorkflow("hold", {"cqs": ["tau-ws-eval"], "mode": "Hold", "cancel_pending": True}))
        await wait_for(pilot, lambda: isinstance(app.screen, StepConfirmScreen), what="the confirmation")
        await pilot.click("#confirm")
        await wait_for(pilot,
                       lambda: isinstance(app.screen, WizardScreen) and app.screen.model.steps[1].state == "Waiting",
                       what="the drain wait")
        assert app.workflows.live()
        [wid] = app.workflows.live()
        for demo, how in ((True, "the demo cluster ends with the demo: this run cannot be resumed on another one"),
                          (False, f"resume it from 9 Workflows or with `taudash workflow resume {wid}`")):
            with mock.patch.object(Session, "demo", property(lambda _s, d=demo: d)):  # the same run, as on either
                await pilot.press("q")  # quitting while it runs asks first; Cancel keeps the dashboard and the run
                await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen",
                               what="the quit confirmation")
                assert (app.screen.title_text, app.screen.targets[-1]) == (f"Quit while workflow {wid} runs?", how)
            await pilot.press("enter")  # Cancel has the focus
            await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen), what="back to the wizard")
            assert app.is_running and not app._exit and app.workflows.live()
        await pilot.press("a")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the abort confirmation")
        modal = app.screen
        assert modal.title_text == f"Abort workflow {wid} for good" and modal.typed == wid
        said = " ".join(modal.targets)
        assert "ClusterQueue tau-ws-eval is on stopPolicy Hold (it was None before the run)" in said
        assert f"undo: taudash workflow start release --reactivate-from {wid}" in said
        await pilot.press("enter")  # the run's id has the focus: enter with nothing typed does nothing
        await pilot.pause()
        assert app.screen is modal and modal.query_one("#confirm", Button).disabled
        await pilot.press(*wid, "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, WizardScreen) and app.screen.model.state == "Aborted",
                       what="Aborted")
        assert not app.workflows.live() and app.screen.model.steps[1].state == "Stopped"
    assert [r for r in rig.real_writes() if "clusterqueues" in r[1]] == [
        ("patch", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/tau-ws-eval")]
    [row] = summaries()
    assert row["state"] == "Aborted"


async def test_a_real_run_started_after_a_rehearsal_journals_the_rehearsal_id(rig):
    """Run it for real from a rehearsal's report: the journal records which rehearsal it follows, so `workflow
    status` can show prediction beside reality."""
    app = rig.app
    async with app.run_test(size=(120, 36)) as pilot:
        app.post_message(StartWorkflow("hold", {"cqs": ["tau-ws-eval"], "mode": "Hold", "cancel_pending": False},
                                       rehearsal="r0a1b2"))
        await wait_for(pilot, lambda: bool(summaries()), what="the journal of the started run")
        journal = Journal.open(summaries()[0]["id"])
        assert journal.header.get("rehearsal") == "r0a1b2"


async def test_a_run_the_cli_is_running_is_not_resumed_here_too(rig):
    """The CLI runs workflow c0ffee (it holds the run's lock); r → Confirm in the dashboard must not run its
    steps a second time: it says so, and nothing is written."""
    app, sim = rig.app, rig.sim
    journal = Journal.create("c0ffee", "hold", {"cqs": ["tau-ws-eval"], "mode": "Hold", "cancel_pending": False},
                             app.session.actions.context, cluster=app.session.cluster)
    with journal.running():  # as the CLI's runner holds it
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("9")
            await wait_for(pilot, lambda: app.current_mode == "workflows" and app.screen.frame is not None,
                           what="the workflows screen, rendered")
            app.screen.query_one("#workflows", KeyedTable).focus()
            await pilot.press("r")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the confirmation")
            await pilot.press("tab", "enter")
            await wait_for(pilot, lambda: any("c0ffee is running now in another taudash" in str(n.message)
                                              for n in app._notifications), what="the refusal")
            assert not isinstance(app.screen, StepConfirmScreen)
    assert sim.api.writes == {}, sim.api.writes
    assert Journal.open(str(journal.path)).records == journal.records  # nothing journaled in its name


async def test_a_second_hold_of_a_queue_an_unfinished_run_holds_is_refused_in_the_form(rig):
    app, sim = rig.app, rig.sim
    first = Journal.create("beef01", "hold", {"cqs": ["tau-ws-eval"], "mode": "Hold", "cancel_pending": False},
                           app.session.actions.context, cluster=app.session.cluster)  # e.g. left by a crash
    async with app.run_test(size=(120, 36)) as pilot:
        form = await open_hold_form(pilot, app, "tau-ws-eval")
        await pilot.click("#nw-start")
        await wait_for(pilot, lambda: "not finished" in text_of(form.query_one("#nw-error", Static)),
                       what="the refusal in the form")
        said = text_of(form.query_one("#nw-error", Static))
        assert "ClusterQueue tau-ws-eval: workflow beef01 (hold, InProgress)" in said
        assert "taudash workflow abort beef01" in said
        assert app.screen is form  # still on the form: another queue can be chosen
    assert sim.api.writes == {}, sim.api.writes
    assert [r["id"] for r in summaries()] == [first.id]  # no second journal


async def test_abort_of_a_run_the_cli_is_running_is_refused_not_marked(rig):
    app = rig.app
    journal = Journal.create("c0ffee", "hold", {"cqs": ["tau-ws-eval"], "mode": "Hold", "cancel_pending": False},
                             app.session.actions.context, cluster=app.session.cluster)
    with journal.running():  # as the CLI's runner holds it: marking would not stop that process
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("9")
            await wait_for(pilot, lambda: app.current_mode == "workflows" and app.screen.frame is not None,
                           what="the workflows screen, rendered")
            app.screen.query_one("#workflows", KeyedTable).focus()
            await pilot.press("a")
            await wait_for(pilot, lambda: any("c0ffee is running now in another taudash" in str(n.message)
                                              for n in app._notifications), what="the refusal")
            assert type(app.screen).__name__ != "ConfirmScreen"
    assert Journal.open(str(journal.path)).state == "InProgress"
