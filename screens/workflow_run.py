"""Guided operations inside the dashboard: the app's side (a mixin for the App).

The single door for workflow writes from the UI. Every request (new, start, resume, abort) is refused
when the session is read-only — and `session.actions` would refuse the write anyway. A started
workflow runs as an async worker on the app's loop (it awaits the store's live updates); the worker
posts `WorkflowEvent`/`WorkflowFinished` messages and never touches a widget. Its `confirm` callback
pushes `StepConfirmScreen` and awaits the operator's answer (`push_screen_wait`, hence the worker).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from taudash.engine.identity import resume_refusal
from taudash.engine.session import Session
from taudash.engine.workflows import Journal, JournalError, Runner, artifacts_dir, build, new_id
from taudash.engine.workflows.base import RETRY, STOP, Context, Operation, Plan, RunnerEvent, Step
from taudash.engine.workflows.journal import workflows_dir

from .confirm import ConfirmScreen
from .messages import (
    AbortWorkflow,
    NewWorkflow,
    OpenWorkflow,
    ResumeWorkflow,
    StartWorkflow,
    WorkflowEvent,
    WorkflowFinished,
)
from .wizard import ConfirmRequest, StepConfirmScreen, WizardScreen, operations_enabled
from .workflow_model import RunModel
from .workflows import NewWorkflowScreen, WorkflowsScreen

MODE = "workflows"


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
    """The operator aborted: stop at this wait or confirmation."""


@dataclass
class _Active:
    journal: Journal
    model: RunModel
    abort: asyncio.Event = field(default_factory=asyncio.Event)


class WorkflowHost:
    """Mixed into the App (`class TaudashApp(WorkflowHost, App)`); needs `self.session` and `self.clock`."""

    session: Session
    clock: Callable[[], datetime]

    def init_workflows(self, options: RunOptions | None = None) -> None:
        self.workflow_options = options or RunOptions()
        self.workflow_models: dict[str, RunModel] = {}
        self._active: dict[str, _Active] = {}

    # queries (screens read these) ---------------------------------------------------------------
    def workflow_dir(self) -> Path:
        return self.workflow_options.directory or workflows_dir()

    def live_workflows(self) -> dict[str, str]:
        return {wid: a.model.state for wid, a in self._active.items()}

    @property
    def workflows_writable(self) -> bool:
        return operations_enabled(self.session)[0]

    def _refused(self, what: str) -> bool:
        ok, why = operations_enabled(self.session)
        if ok:
            return False
        self.notify(f"read-only: {what} refused — guided operations are disabled ({why})",  # type: ignore[attr-defined]
                    severity="warning", markup=False)
        return True

    def _context_name(self) -> str:
        return self.session.actions.context or self.session.source.context or "?"

    def _open(self, workflow_id: str) -> Journal | None:
        try:
            return Journal.open(workflow_id, self.workflow_dir())
        except JournalError as exc:
            self.notify(str(exc), severity="error", markup=False)  # type: ignore[attr-defined]
            return None

    def _model(self, journal: Journal) -> RunModel:
        active = self._active.get(journal.id)
        if active is not None:
            return active.model
        model = RunModel.from_journal(journal)
        self.workflow_models[journal.id] = model
        return model

    # showing -------------------------------------------------------------------------------------
    def _show_wizard(self, model: RunModel) -> None:
        app: Any = self
        if app.current_mode != MODE:
            app.switch_mode(MODE)
        top = app.screen
        if isinstance(top, WizardScreen) and top.workflow_id == model.id:
            top.model = model  # a resumed run has a fresh model (read back from its journal)
            top.render_run()
            return
        while len(app.screen_stack) > 1 and not isinstance(app.screen, StepConfirmScreen):
            app.pop_screen()
        app.push_screen(WizardScreen(self.session, model, MODE))

    def _refresh_workflow_screens(self, workflow_id: str, lists: bool) -> None:
        app: Any = self
        for screen in app.screen_stack:
            if isinstance(screen, WizardScreen) and screen.workflow_id == workflow_id:
                screen.render_run()
            elif lists and isinstance(screen, WorkflowsScreen):
                screen.reload()

    def on_open_workflow(self, message: OpenWorkflow) -> None:
        journal = self._open(message.workflow_id)
        if journal is not None:
            self._show_wizard(self._model(journal))

    # new / start ------------------------------------------------------------------------------------
    def on_new_workflow(self, message: NewWorkflow) -> None:
        if self._refused("a new workflow"):
            return
        app: Any = self

        def chosen(result: tuple[str, dict] | None) -> None:
            if result is not None:
                app.post_message(StartWorkflow(*result))

        app.push_screen(NewWorkflowScreen(self.session, message.kind, message.cqs, message.workspace,
                                          self.workflow_dir()), chosen)

    def _busy(self) -> bool:
        if self._active:
            wid = next(iter(self._active))
            self.notify(f"workflow {wid} is running: let it finish or abort it first",  # type: ignore[attr-defined]
                        severity="warning", markup=False)
            return True
        return False

    def on_start_workflow(self, message: StartWorkflow) -> None:
        if self._refused(f"starting a {message.kind} workflow") or self._busy():
            return
        try:
            build(message.kind, message.params)
            journal = Journal.create(new_id(), message.kind, message.params, self._context_name(), self.workflow_dir(),
                                     cluster=self.session.cluster)
        except (JournalError, KeyError, TypeError, ValueError) as exc:
            self.notify(f"could not start the workflow: {exc}", severity="error", markup=False)  # type: ignore[attr-defined]
            return
        self._launch(journal, resumed=False)

    # resume ---------------------------------------------------------------------------------------
    def on_resume_workflow(self, message: ResumeWorkflow) -> None:
        if self._refused(f"resuming workflow {message.workflow_id}") or self._busy():
            return
        journal = self._open(message.workflow_id)
        if journal is None:
            return
        if journal.state not in ("InProgress", "Failed"):
            self.notify(f"workflow {journal.id} is {journal.state}: nothing to resume", markup=False)  # type: ignore[attr-defined]
            return
        here = self._context_name()
        refusal = self._resume_refusal(journal)
        if refusal:
            self.notify(refusal, severity="error", markup=False)  # type: ignore[attr-defined]
            return
        model = self._model(journal)
        left = [f"step {i} {s.title}" for i, s in enumerate(model.steps, start=1) if s.state != "Done"]

        def answered(ok: bool | None) -> None:
            if ok and self.workflows_writable and not self._active:
                again = self._open(journal.id)  # re-read: the CLI may have moved it meanwhile
                if again is not None and again.state in ("InProgress", "Failed") and not self._resume_refusal(again):
                    self._launch(again, resumed=True)

        self._show_wizard(model)
        self.push_screen(  # type: ignore[attr-defined]
            ConfirmScreen(f"Resume {journal.kind} workflow {journal.id} on context {here}",
                          left + ["each step is planned again from live state and asks before it writes"], True),
            answered)

    def _resume_refusal(self, journal: Journal) -> str | None:
        """Only a run journaled on the cluster this dashboard shows resumes here (engine.identity)."""
        return resume_refusal(journal.header, self._context_name(), self.session.cluster)

    # abort -----------------------------------------------------------------------------------------
    def on_abort_workflow(self, message: AbortWorkflow) -> None:
        if self._refused(f"aborting workflow {message.workflow_id}"):
            return
        wid = message.workflow_id
        active = self._active.get(wid)
        journal = active.journal if active is not None else self._open(wid)
        if journal is None:
            return
        if active is None and journal.terminal:
            self.notify(f"workflow {wid} is already {journal.state}", markup=False)  # type: ignore[attr-defined]
            return
        targets = [f"workflow {wid} ({journal.kind}) is marked aborted in its journal",
                   "nothing in the cluster is changed or undone (release held queues with a release workflow)"]
        if active is not None:
            targets.insert(1, "it stops at its next wait or confirmation")

        def answered(ok: bool | None) -> None:
            if not ok:
                return
            now = self._active.get(wid)
            if now is not None:
                now.abort.set()
            else:
                j = self._open(wid)
                if j is not None and not j.terminal:
                    j.append("aborted", None, {"by": "operator"})
                    model = self.workflow_models.get(wid)
                    if model is not None:
                        model.finished("Aborted", "", self.clock())
                    self._refresh_workflow_screens(wid, lists=True)

        self.push_screen(ConfirmScreen(f"Abort workflow {wid}", targets, True), answered)  # type: ignore[attr-defined]

    # running -----------------------------------------------------------------------------------------
    def _launch(self, journal: Journal, resumed: bool) -> None:
        model = RunModel.from_journal(journal)
        self.workflow_models[journal.id] = model
        active = _Active(journal, model)
        self._active[journal.id] = active
        model.started(self.clock(), resumed)
        self._show_wizard(model)
        self.run_worker(self._run_workflow(active), group="workflow", name=f"workflow {journal.id}",  # type: ignore[attr-defined]
                        description=f"{journal.kind} workflow {journal.id}", exit_on_error=False)
        self._refresh_workflow_screens(journal.id, lists=True)

    async def _run_workflow(self, active: _Active) -> str:
        """The worker: runs the journaled workflow; talks to the UI only through messages (and the
        confirmation it awaits)."""
        journal, opts, session = active.journal, self.workflow_options, self.session
        wid = journal.id
        post: Callable[[Any], Any] = self.post_message  # type: ignore[attr-defined]
        workflow = build(journal.kind, journal.params)
        ctx = SessionContext(store=session.store, actions=session.actions, config=session.config, lock=session.lock,
                             clock=opts.clock, artifacts_dir=artifacts_dir(journal), session=session)
        index = {s.id: i for i, s in enumerate(workflow.steps, start=1)}

        async def sleep(dt: float) -> None:
            if active.abort.is_set():
                raise _Stop
            if opts.sleep is not None:
                await opts.sleep(dt)
            else:
                try:
                    await asyncio.wait_for(active.abort.wait(), dt)
                except TimeoutError:
                    pass
            if active.abort.is_set():
                raise _Stop

        async def confirm(step: Step, plan: Plan, op: Operation | None) -> bool | str:
            if active.abort.is_set():
                raise _Stop
            if not operations_enabled(session)[0]:
                return STOP if plan.question else False  # never reached from a read-only session
            question = plan.question
            if question:  # a stuck wait: Confirm runs the blocking step again, Cancel stops (Failed)
                plan = Plan([], [question, "Confirm: plan that step again (each change asks again) · "
                                 "Cancel: stop here (the workflow is Failed and can be resumed)"])
            checks = [] if question else [(c.ok, c.message) for c in step.preconditions(ctx, plan)]
            ops = [op] if op is not None else plan.operations
            request = ConfirmRequest(
                workflow_id=wid, workflow_title=workflow.title, context=self._context_name(),
                step_no=index.get(step.id, 0), steps=len(workflow.steps), step_title=step.title,
                operations=[o.to_dict() for o in ops], notes=list(plan.notes), checks=checks,
                op_no=plan.operations.index(op) + 1 if op is not None else None,
                op_total=len(plan.operations) if op is not None else None,
                covered=len(set(plan.covers) - set(plan.signature())) if op is None else 0,
            )
            post(WorkflowEvent(wid, RunnerEvent("checks", step.id, "", {"checks": checks})))
            post(WorkflowEvent(wid, RunnerEvent("confirm", step.id, request.summary())))
            ok = bool(await self.push_screen_wait(StepConfirmScreen(request)))  # type: ignore[attr-defined]
            word = ("confirmed" if ok else ("skipped" if op is not None else "declined")) + f": {request.summary()}"
            if question:
                word = f"{'retry' if ok else 'stop'}: {question}"
            post(WorkflowEvent(wid, RunnerEvent("answer", step.id, word, {"ok": ok})))
            if active.abort.is_set():
                raise _Stop
            if question:
                return RETRY if ok else STOP
            return ok

        runner = Runner(workflow, ctx, journal, confirm, on_event=lambda e: post(WorkflowEvent(wid, e)),
                        poll=opts.poll, sleep=sleep, wait_timeout=opts.wait_timeout)
        state, error = "Interrupted", ""
        try:
            state = await runner.run()
        except _Stop:
            journal.append("aborted", None, {"by": "operator"})
            state = "Aborted"
        except Exception as exc:  # an API failure outside a step's action: the journal stays resumable
            error = f"{exc.__class__.__name__}: {exc}"
        post(WorkflowFinished(wid, state, error))
        return state

    def on_workflow_event(self, message: WorkflowEvent) -> None:
        model = self.workflow_models.get(message.workflow_id)
        if model is None:
            return
        model.apply(message.event, self.clock())
        self._refresh_workflow_screens(message.workflow_id,
                                       lists=message.event.kind in ("verified", "failed", "completed", "aborted",
                                                                    "confirm", "answer"))

    def on_workflow_finished(self, message: WorkflowFinished) -> None:
        wid = message.workflow_id
        self._active.pop(wid, None)
        model = self.workflow_models.get(wid)
        if model is not None:
            model.finished(message.state, message.error, self.clock())
        severity = {"Completed": "information", "Aborted": "warning"}.get(message.state, "error")
        text = f"workflow {wid}: {message.state}" + (f" — {message.error}" if message.error else "")
        self.notify(text, severity=severity, markup=False)  # type: ignore[attr-defined]
        self._refresh_workflow_screens(wid, lists=True)

    # quitting while a workflow runs ---------------------------------------------------------------------
    async def action_quit(self) -> None:
        if not self._active:
            self.exit()  # type: ignore[attr-defined]
            return
        wid = next(iter(self._active))

        def answered(ok: bool | None) -> None:
            if ok:
                self.exit()  # type: ignore[attr-defined]

        self.push_screen(ConfirmScreen(  # type: ignore[attr-defined]
            f"Quit while workflow {wid} runs?",
            [f"workflow {wid} stops where it is; its journal keeps every step done",
             "the demo cluster ends with the demo: this run cannot be resumed on another one" if self.session.demo
             else f"resume it from 9 Workflows or with `taudash workflow resume {wid}`"], True), answered)
