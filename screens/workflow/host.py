"""Guided operations inside the dashboard: the app's side, an object the App owns (`app.workflows`).

The single door for workflow writes from the UI. Every request (new, start, resume, abort) is refused
when the session is read-only — and `session.actions` would refuse the write anyway. A started
workflow runs as an async worker on the app's loop (it awaits the store's live updates); the worker
posts `WorkflowEvent`/`WorkflowFinished` messages and never touches a widget. Its `confirm` callback
pushes `StepConfirmScreen` and awaits the operator's answer (`push_screen_wait`, hence the worker).

The App routes the workflow messages (kit/messages.py) here through one-line handlers; screens ask the
host only what `kit/presenters.py RunningWorkflows` names (the journal directory, the runs that are live).
The App also hands the host the screen its runs are listed on (9 Workflows: where the wizard opens), so
the host imports no screen.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from textual.app import App
from textual.notifications import SeverityLevel

from taudash.engine.identity import resume_refusal
from taudash.engine.session import Session
from taudash.engine.workflows import (
    Journal,
    JournalBusy,
    JournalError,
    Runner,
    artifacts_dir,
    build,
    new_id,
    overlap_refusal,
)
from taudash.engine.workflows.base import PAUSE, RETRY, STOP, Context, Operation, Pause, Plan, RunnerEvent, Step
from taudash.engine.workflows.claims import release_finished
from taudash.engine.workflows.journal import RESUMABLE, workflows_dir

from ..kit.confirm import ConfirmScreen
from ..kit.entries import ScreenEntry
from ..kit.messages import NewWorkflow, StartWorkflow, WorkflowEvent, WorkflowFinished
from ..kit.presenters import operations_enabled
from .forms import NewWorkflowScreen
from .model import RunModel
from .wizard import ConfirmRequest, StepConfirmScreen, WizardScreen


@runtime_checkable
class ListsRuns(Protocol):
    """The screen the runs are listed on: told to read the journal again when a run changed."""

    def reload(self) -> None: ...


@dataclass
class RunOptions:
    """How the dashboard runs workflows. Tests pass a `sleep` that steps a simulated world."""

    poll: float = 0.5
    sleep: Callable[[float], Awaitable[None]] | None = None
    clock: Callable[[], float] = time.time
    directory: Path | None = None  # the journal directory; None: <state dir>/workflows (`taudash demo`: its own)
    wait_timeout: float | None = None  # every step's wait deadline; None: each step's own


@dataclass
class SessionContext(Context):
    """A workflow Context whose view is the session's cached derivation (one derive per store revision,
    shared with the dashboard's tick) instead of a fresh derive at every poll."""

    session: Session | None = None

    def view(self):
        if self.session is None:
            return super().view()
        return self.session.view(datetime.fromtimestamp(self.clock(), UTC))


class _Stop(Exception):
    """The operator aborted: stop at this wait or confirmation, for good."""


@dataclass
class _Active:
    journal: Journal
    model: RunModel
    aborting: bool = False  # end for good at the next wait or confirmation
    pausing: bool = False  # pause (resumable) at the next wait or confirmation
    wake: asyncio.Event = field(default_factory=asyncio.Event)  # cuts a wait's sleep short

    def abort(self) -> None:
        self.aborting = True
        self.wake.set()

    def pause(self) -> None:
        self.pausing = True
        self.wake.set()

    def stop_here(self) -> None:
        if self.aborting:
            raise _Stop
        if self.pausing:
            raise Pause("operator", "paused by the operator")


class WorkflowHost:
    """Runs, resumes and aborts guided operations for one App and session (`app.workflows`)."""

    def __init__(self, app: App[Any], session: Session, clock: Callable[[], datetime],
                 options: RunOptions | None = None, *, listed_on: ScreenEntry) -> None:
        self.app = app
        self.session = session
        self.listed_on = listed_on  # the screen that lists the runs (its mode): where the wizard opens
        self.clock = clock
        self.options = options or RunOptions()
        self.models: dict[str, RunModel] = {}  # every run shown in this dashboard, by id
        self._active: dict[str, _Active] = {}  # the run this dashboard runs now (one at a time)

    # queries (screens read these: presenters.RunningWorkflows) ------------------------------------
    def directory(self) -> Path:
        return self.options.directory or workflows_dir()

    def live(self) -> dict[str, str]:
        """The state (Running / Confirm) of each workflow running in this dashboard."""
        return {wid: a.model.state for wid, a in self._active.items()}

    @property
    def writable(self) -> bool:
        return operations_enabled(self.session)[0]

    def _notify(self, text: str, severity: SeverityLevel = "information") -> None:
        self.app.notify(text, severity=severity, markup=False)

    def _refused(self, what: str) -> bool:
        ok, why = operations_enabled(self.session)
        if ok:
            return False
        self._notify(f"read-only: {what} refused — guided operations are disabled ({why})", "warning")
        return True

    def _context_name(self) -> str:
        return self.session.actions.context or self.session.source.context or "?"

    def _open(self, workflow_id: str) -> Journal | None:
        try:
            return Journal.open(workflow_id, self.directory())
        except JournalError as exc:
            self._notify(str(exc), "error")
            return None

    def _store_for(self, journal: Journal) -> object | None:
        """The live store to check a run's leftovers against: only when the run is of this cluster."""
        return None if self._resume_refusal(journal) else self.session.store

    def _model(self, journal: Journal) -> RunModel:
        active = self._active.get(journal.id)
        if active is not None:
            return active.model
        model = RunModel.from_journal(journal, store=self._store_for(journal))
        self.models[journal.id] = model
        return model

    # showing -------------------------------------------------------------------------------------
    def _show_wizard(self, model: RunModel) -> None:
        app = self.app
        mode = self.listed_on.name
        if app.current_mode != mode:
            app.switch_mode(mode)
        top = app.screen
        if isinstance(top, WizardScreen) and top.workflow_id == model.id:
            top.model = model  # a resumed run has a fresh model (read back from its journal)
            top.render_run()
            return
        while len(app.screen_stack) > 1 and not isinstance(app.screen, StepConfirmScreen):
            app.pop_screen()
        app.push_screen(WizardScreen(self.session, model, mode))

    def _refresh_screens(self, workflow_id: str, lists: bool) -> None:
        for screen in self.app.screen_stack:
            if isinstance(screen, WizardScreen) and screen.workflow_id == workflow_id:
                screen.render_run()
            elif lists and isinstance(screen, self.listed_on.cls) and isinstance(screen, ListsRuns):
                screen.reload()

    def open(self, workflow_id: str) -> None:
        """Show a workflow's wizard (OpenWorkflow)."""
        journal = self._open(workflow_id)
        if journal is not None:
            self._show_wizard(self._model(journal))

    # new / start ------------------------------------------------------------------------------------
    def new(self, request: NewWorkflow) -> None:
        """Open the "new workflow" form (NewWorkflow); its Start posts StartWorkflow."""
        if self._refused("a new workflow"):
            return
        app = self.app

        def chosen(result: tuple[str, dict] | None) -> None:
            if result is not None:
                app.post_message(StartWorkflow(*result))

        app.push_screen(NewWorkflowScreen(self.session, request.kind, request.cqs, request.workspace,
                                          self.directory(), reactivate_from=request.reactivate_from), chosen)

    def _busy(self) -> bool:
        if self._active:
            wid = next(iter(self._active))
            self._notify(f"workflow {wid} is running: let it finish or abort it first", "warning")
            return True
        return False

    def start(self, kind: str, params: dict[str, Any], rehearsal: str | None = None) -> None:
        """Journal a new workflow and run it (StartWorkflow); `rehearsal`: the rehearsal it follows."""
        if self._refused(f"starting a {kind} workflow") or self._busy():
            return
        refusal = overlap_refusal(kind, params, self._context_name(), self.session.cluster, self.directory())
        if refusal:  # another unfinished run (here or from the CLI) writes to the same objects
            self._notify(refusal, "error")
            return
        try:
            build(kind, params)
            journal = Journal.create(new_id(), kind, params, self._context_name(), self.directory(),
                                     cluster=self.session.cluster, rehearsal=rehearsal)
        except (JournalError, KeyError, TypeError, ValueError) as exc:
            self._notify(f"could not start the workflow: {exc}", "error")
            return
        self._launch(journal, resumed=False)

    # resume ---------------------------------------------------------------------------------------
    def resume(self, workflow_id: str) -> None:
        """Ask, then continue a journaled workflow of this cluster (ResumeWorkflow)."""
        if self._refused(f"resuming workflow {workflow_id}") or self._busy():
            return
        journal = self._open(workflow_id)
        if journal is None:
            return
        if journal.state not in RESUMABLE:
            self._notify(f"workflow {journal.id} is {journal.state}: nothing to resume")
            return
        here = self._context_name()
        refusal = self._resume_refusal(journal)
        if refusal:
            self._notify(refusal, "error")
            return
        model = self._model(journal)
        left = [f"step {i} {s.title}" for i, s in enumerate(model.steps, start=1) if s.state != "Done"]

        def answered(ok: bool | None) -> None:
            if ok and self.writable and not self._active:
                again = self._open(journal.id)  # re-read: the CLI may have moved it meanwhile
                if again is not None and again.state in RESUMABLE and not self._resume_refusal(again):
                    self._launch(again, resumed=True)

        self._show_wizard(model)
        self.app.push_screen(
            ConfirmScreen(f"Resume {journal.kind} workflow {journal.id} on context {here}",
                          left + ["each step is planned again from live state and asks before it writes"], True),
            answered)

    def _resume_refusal(self, journal: Journal) -> str | None:
        """Only a run journaled on the cluster this dashboard shows resumes here (engine.identity)."""
        return resume_refusal(journal.header, self._context_name(), self.session.cluster)

    # abort / pause ----------------------------------------------------------------------------------
    def abort(self, workflow_id: str) -> None:
        """Ask (the run's id typed), then end a workflow for good (AbortWorkflow); a running one stops at its
        next wait. Nothing in the cluster is undone: the confirmation lists what stays and each undo command."""
        if self._refused(f"aborting workflow {workflow_id}"):
            return
        wid = workflow_id
        active = self._active.get(wid)
        journal = active.journal if active is not None else self._open(wid)
        if journal is None:
            return
        if active is None and journal.terminal:
            self._notify(f"workflow {wid} is already {journal.state}")
            return
        pid = journal.runner_pid() if active is None else None
        if pid is not None:  # the CLI runs it: marking the journal would not stop that process writing
            self._notify(f"workflow {wid} is running now in another taudash{f' (pid {pid})' if pid else ''}: "
                         "pause it there (Ctrl-C); nothing was marked", "error")
            return
        model = self._model(journal)
        model.read_leftovers(journal)
        targets = [f"workflow {wid} ({journal.kind}) ends for good: it can no longer be resumed"
                   + (" — it stops at its next wait or confirmation" if active is not None else ""),
                   "nothing in the cluster is changed or undone; what stays there:"]
        groups: dict[str | None, list[str]] = {}
        for it in model.leftovers:
            groups.setdefault(it.get("undo"), []).append(it["message"])
        for undo, messages in groups.items():
            targets += [f"  {m}" for m in messages]
            targets.append(f"    undo: {undo}" if undo else "    (not reversible by taudash)")
        if not model.leftovers:
            targets.append("  nothing: no change of this run remains in the cluster")
        if journal.resumable:
            targets.append(f"to continue it instead: Keep the run, then r (or `taudash workflow resume {wid}`)")
        targets.append(f"type the run's id {wid} below to enable Abort for good (enter there confirms)")

        def answered(ok: bool | None) -> None:
            if not ok:
                return
            now = self._active.get(wid)
            if now is not None:
                now.abort()
            else:
                j = self._open(wid)
                if j is not None and not j.terminal:
                    j.append("aborted", None, {"by": "operator"})
                    known = self.models.get(wid)
                    if known is not None:
                        known.finished("Aborted", "", self.clock())
                    self._refresh_screens(wid, lists=True)
                    self.app.run_worker(self._give_back(j), group="workflow-claims", exit_on_error=False)

        self.app.push_screen(ConfirmScreen(f"Abort workflow {wid} for good", targets, False, typed=wid,
                                           confirm_label="Abort for good", cancel_label="Keep the run"), answered)

    async def _give_back(self, journal: Journal) -> None:
        """The claims an aborted run still holds on the cluster go back (engine/workflows/claims.py)."""
        if self._resume_refusal(journal):
            return  # another cluster's run: its claims are not on this one
        try:
            problems = await release_finished(self.session.actions, self.session.store, journal,
                                              self.session.config.system_namespace)
        except Exception as exc:  # noqa: BLE001 - the abort stands; the claims go stale instead
            problems = [f"could not give back the claims of workflow {journal.id}: {exc}"]
        for problem in problems:
            self._notify(problem, "warning")

    def pause(self, workflow_id: str) -> None:
        """Pause a workflow running here at its next wait or confirmation (PauseWorkflow): no question asked,
        nothing is undone, and it resumes where it stopped."""
        if self._refused(f"pausing workflow {workflow_id}"):
            return
        active = self._active.get(workflow_id)
        if active is None:
            self._notify(f"workflow {workflow_id} is not running here: nothing to pause")
            return
        active.pause()
        self._notify(f"workflow {workflow_id}: pausing at its next wait or confirmation")

    # running -----------------------------------------------------------------------------------------
    def _launch(self, journal: Journal, resumed: bool) -> None:
        model = RunModel.from_journal(journal, store=self._store_for(journal))
        self.models[journal.id] = model
        active = _Active(journal, model)
        self._active[journal.id] = active
        model.started(self.clock(), resumed)
        self._show_wizard(model)
        self.app.run_worker(self._run(active), group="workflow", name=f"workflow {journal.id}",
                            description=f"{journal.kind} workflow {journal.id}", exit_on_error=False)
        self._refresh_screens(journal.id, lists=True)

    async def _run(self, active: _Active) -> str:
        """The worker: runs the journaled workflow; talks to the UI only through messages (and the
        confirmation it awaits)."""
        journal, opts, session, app = active.journal, self.options, self.session, self.app
        wid = journal.id
        post = app.post_message
        workflow = build(journal.kind, journal.params)
        ctx = SessionContext(store=session.store, actions=session.actions, config=session.config, lock=session.lock,
                             clock=opts.clock, artifacts_dir=artifacts_dir(journal), session=session)
        index = {s.id: i for i, s in enumerate(workflow.steps, start=1)}

        async def sleep(dt: float) -> None:
            active.stop_here()
            if opts.sleep is not None:
                await opts.sleep(dt)
            else:
                try:
                    await asyncio.wait_for(active.wake.wait(), dt)
                except TimeoutError:
                    pass
            active.stop_here()

        async def confirm(step: Step, plan: Plan, op: Operation | None) -> bool | str:
            active.stop_here()
            if not operations_enabled(session)[0]:
                return STOP if plan.question else False  # never reached from a read-only session
            question = plan.question
            if question:  # a stuck wait: Retry runs the blocking step again, Pause stops here (resumable)
                plan = Plan([], [question, f"Retry step {index.get(step.id, 0)}: plan that step again (each change "
                                 "asks again) · Pause: stop here (the workflow is Paused and can be resumed)"])
            checks = [] if question else [(c.ok, c.message) for c in step.preconditions(ctx, plan)]
            ops = [op] if op is not None else plan.operations
            request = ConfirmRequest(
                workflow_id=wid, workflow_title=workflow.title, context=self._context_name(),
                step_no=index.get(step.id, 0), steps=len(workflow.steps), step_title=step.title,
                operations=[o.to_dict() for o in ops], notes=list(plan.notes), checks=checks,
                op_no=plan.operations.index(op) + 1 if op is not None else None,
                op_total=len(plan.operations) if op is not None else None,
                covered=len(set(plan.covers) - set(plan.signature())) if op is None else 0,
                question=bool(question),
            )
            post(WorkflowEvent(wid, RunnerEvent("checks", step.id, "", {"checks": checks})))
            post(WorkflowEvent(wid, RunnerEvent("confirm", step.id, request.summary())))
            answer = await app.push_screen_wait(StepConfirmScreen(request))
            ok = answer is True
            paused = not ok and (answer == PAUSE or op is None)  # a no to a whole plan pauses; to one operation, skips
            word = ("confirmed" if ok else ("paused" if paused else "skipped")) + f": {request.summary()}"
            if question:
                word = f"{'retry' if ok else 'pause'}: {question}"
            post(WorkflowEvent(wid, RunnerEvent("answer", step.id, word, {"ok": ok})))
            active.stop_here()
            if question:
                return RETRY if ok else PAUSE
            return True if ok else (PAUSE if paused else False)

        def on_event(event: RunnerEvent) -> None:
            post(WorkflowEvent(wid, event))

        runner = Runner(workflow, ctx, journal, confirm, on_event=on_event,
                        poll=opts.poll, sleep=sleep, wait_timeout=opts.wait_timeout)
        state, error = "Interrupted", ""
        try:
            state = await runner.run()
        except _Stop:
            journal.append("aborted", None, {"by": "operator"})
            state = "Aborted"
            await self._give_back(journal)  # its runner kept its claims: the run was not finished when it stopped
        except JournalBusy as exc:  # the CLI (or another dashboard) runs it now: this one wrote nothing
            state, error = journal.state, str(exc)
        except Exception as exc:  # an API failure outside a step's action: the journal stays resumable
            error = f"{exc.__class__.__name__}: {exc}"
        await runner.settle_writes()  # what the run leaves is checked against the store: it must show its writes
        post(WorkflowFinished(wid, state, error))
        return state

    def event(self, workflow_id: str, event: RunnerEvent) -> None:
        """One runner event (WorkflowEvent): the run's model moves, its screens redraw."""
        model = self.models.get(workflow_id)
        if model is None:
            return
        model.apply(event, self.clock())
        self._refresh_screens(workflow_id,
                              lists=event.kind in ("verified", "failed", "completed", "aborted", "confirm", "answer"))

    def finished(self, workflow_id: str, state: str, error: str = "") -> None:
        """The runner stopped (WorkflowFinished)."""
        wid = workflow_id
        self._active.pop(wid, None)
        model = self.models.get(wid)
        if model is not None:
            model.finished(state, error, self.clock())
        levels: dict[str, SeverityLevel] = {"Completed": "information", "Aborted": "warning", "Paused": "warning"}
        severity = levels.get(state, "error")
        stays = len(model.leftovers) if model is not None else 0
        said = f" — {stays} thing(s) stay in the cluster: see WHAT STAYS" if stays and state != "Completed" else ""
        self._notify(f"workflow {wid}: {state}" + (f" — {error}" if error else "") + said, severity)
        self._refresh_screens(wid, lists=True)

    # quitting while a workflow runs ---------------------------------------------------------------------
    def quit(self) -> None:
        """Exit the app; while a workflow runs, only after the operator confirms."""
        app = self.app
        if not self._active:
            app.exit()
            return
        wid = next(iter(self._active))

        def answered(ok: bool | None) -> None:
            if ok:
                app.exit()

        app.push_screen(ConfirmScreen(
            f"Quit while workflow {wid} runs?",
            [f"workflow {wid} pauses where it is (Paused); its journal keeps every step done, and what it "
             "changed so far stays in the cluster",
             "the demo cluster ends with the demo: this run cannot be resumed on another one" if self.session.demo
             else f"resume it from {self.listed_on.label} or with `taudash workflow resume {wid}`"], True), answered)
