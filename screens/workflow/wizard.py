"""The step wizard of one guided operation: its steps (✓ done, ▶ current, ◐ waiting, ✖ failed), the
current step's plan as a diff with its preconditions, live progress with an ETA, and the event log.

The wizard only renders a `RunModel`; the runner's worker moves the model along through messages
the app handles. `StepConfirmScreen` is the confirmation the runner awaits before any write: it
names every target, says what earlier steps already wrote, and for a destructive step asks for the
context name to be typed (its input has the focus).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Static

from taudash.engine.session import Frame, Session
from taudash.engine.text import plural
from taudash.engine.workflows import Journal, JournalError
from taudash.engine.workflows.base import PAUSE

from ..kit.base import DashScreen
from ..kit.messages import AbortWorkflow, NewWorkflow, PauseWorkflow, ResumeWorkflow
from ..kit.presenters import operations_enabled, read_only_line, refuse_read_only, stack, workflows_of
from ..kit.text import Tones, app_tones, lit, span
from ..widgets.bars import bar
from ..widgets.gated import TypedConfirm
from ..widgets.header_bar import HeaderBar
from .model import STEP_MARK, STEP_TONE, RunModel, eta_text, run_state_text, written_by

LOG_SHOWN = 40
WRITTEN_SHOWN = 8  # earlier writes listed in a confirmation (the wizard's log has them all)
DEACTIVATED_SHOWN = 30


def preconditions_line(checks: list[tuple[bool, str]], tones: Tones) -> Text:
    """`PRECONDITIONS ✓ a · ✖ b`: the step's checks, as the confirmation and the wizard both show them."""
    line = span("PRECONDITIONS ", tones.heading)
    for i, (ok, msg) in enumerate(checks):
        if i:
            line.append(" · ")
        line.append(tones.mark("ok" if ok else "bad", msg))
    return line


def op_line(op: dict[str, Any], tones: Tones) -> Text:
    """One planned operation as a diff line; destructive ones marked ⚠."""
    t = Text(end="")
    if op.get("destructive"):
        t.append("⚠ ", style=tones.bad)
        t.append(lit(op.get("diff", ""), tones.bad))
    else:
        t.append("  ")
        t.append(lit(op.get("diff", "")))
    return t


# --- the confirmation --------------------------------------------------------------------


@dataclass(frozen=True)
class ConfirmRequest:
    """Everything the operator is asked to confirm, as plain data (built by the runner's confirm callback)."""

    workflow_id: str
    workflow_title: str
    context: str
    step_no: int
    steps: int
    step_title: str
    operations: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    checks: list[tuple[bool, str]] = field(default_factory=list)
    op_no: int | None = None  # confirm_each plans: this operation's number …
    op_total: int | None = None  # … of how many
    written: list[str] | None = None  # changes the workflow already made (None: read from its journal)
    covered: int = 0  # operations this confirmation approves in advance (named in the notes), for later rounds
    question: bool = False  # a stuck wait: confirming runs the blocking step again (no operation listed)

    @property
    def destructive(self) -> bool:
        return any(op.get("destructive") for op in self.operations)

    @property
    def each(self) -> bool:
        return self.op_no is not None

    def summary(self) -> str:
        what = f"operation {self.op_no} of {self.op_total}" if self.each else f"{len(self.operations)} change(s)"
        return f"step {self.step_no} {self.step_title}: {what}"


def targets_of(operations: list[dict[str, Any]]) -> list[str]:
    """The distinct objects the operations touch, in order ("ClusterQueue tau-ws-train")."""
    out: dict[str, None] = {}
    for op in operations:
        name = f"{op.get('namespace')}/{op.get('name')}" if op.get("namespace") else str(op.get("name", "?"))
        out[f"{op.get('kind', '?')} {name}"] = None
    return list(out)


class StepConfirmScreen(TypedConfirm[bool | str]):
    """The answer to one confirmation: True (confirm), PAUSE (pause the run here, resumable) or, for one
    operation of a confirm-each plan, False (skip it). No button ends a run for good.

    A destructive step focuses the context-name input (its Confirm stays disabled until the name is
    typed; enter there confirms); any other step focuses "Pause (resume later)", so enter alone never
    writes and never ends the run. Escape pauses (skips, for one operation of a confirm-each plan)."""

    DEFAULT_CSS = """
    StepConfirmScreen { align: center middle; }
    StepConfirmScreen > Vertical {
        width: 110; max-width: 96%; height: auto; max-height: 94%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    StepConfirmScreen.-destructive > Vertical { border: thick $error; }
    StepConfirmScreen #sc-body { height: auto; max-height: 18; scrollbar-size-vertical: 1; }
    StepConfirmScreen #sc-ask { margin-top: 1; }
    StepConfirmScreen Input { margin: 0 0; }
    StepConfirmScreen Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    StepConfirmScreen Button { margin-left: 2; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, request: ConfirmRequest) -> None:
        super().__init__(classes="-destructive" if request.destructive else None)
        self.request = request
        self.written: list[str] | None = request.written

    def _read_written(self) -> list[str] | None:
        """What the workflow already changed, from its journal (None: unknown)."""
        host = workflows_of(self.app)
        if host is None:
            return None
        try:
            return written_by(Journal.open(self.request.workflow_id, host.directory()))
        except (JournalError, OSError):
            return None

    def compose(self) -> ComposeResult:
        r = self.request
        tones = app_tones(self.app)
        if self.written is None:
            self.written = self._read_written()
        with Vertical():
            head = span("Confirm ", "bold")
            head.append(f"step {r.step_no} of {r.steps} · ", style="bold")
            head.append(lit(r.step_title, "bold"))
            if r.each:
                head.append(f"  — operation {r.op_no} of {r.op_total}", style="bold")
            head.append("\n")
            head.append("workflow ", style=tones.muted)
            head.append(lit(f"{r.workflow_title} #{r.workflow_id}"))
            head.append(" · context ", style=tones.muted)
            head.append(lit(r.context, "bold"))
            yield Static(head, id="sc-head")
            with VerticalScroll(id="sc-body", can_focus=False):  # tab goes context name → Cancel → Confirm
                yield Static(self._body(tones), id="sc-targets")
            yield Static(self._ask(tones), id="sc-ask")
            if r.destructive:
                yield Input(placeholder=f"type {r.context} to confirm", id="sc-context", select_on_focus=False)
            with Horizontal():
                if r.each:
                    yield Button("Skip this one", id="cancel", variant="default")
                yield Button("Pause (resume later)", id="pause", variant="primary")
                yield Button(self.confirm_label, id="confirm", variant="error" if r.destructive else "warning",
                             disabled=r.destructive)

    @property
    def confirm_label(self) -> str:
        r = self.request
        if r.question:
            return f"Retry step {r.step_no}"
        if r.each:
            return "Delete" if any(op.get("verb") == "delete" for op in r.operations) else "Confirm"
        return f"Confirm step {r.step_no}"

    def _body(self, tones: Tones) -> RenderableType:
        r = self.request
        parts: list[RenderableType] = []
        if r.notes:  # first and in full (they wrap): e.g. which admitted Workloads HoldAndDrain evicts
            # one mark for the step, not one per note: a ⚠ on every line stops being read
            head = span("WHAT THIS MEANS", tones.heading)
            if r.destructive:
                head.append("  ⚠", style=tones.bad)
            parts.append(head)
            for n in r.notes:
                note = span("• ", tones.muted)
                note.append(lit(n, tones.bad if r.destructive else tones.warn))
                parts.append(note)
        targets = targets_of(r.operations)
        title = span(f"CHANGES · {plural(len(r.operations), 'operation')} on {plural(len(targets), 'object')}",
                     tones.heading)
        if r.destructive:
            title.append("  ⚠ destructive", style=tones.bad)
        parts.append(title)
        for op in r.operations:
            line = op_line(op, tones)
            # why this object goes (a patch's diff says it all)
            if op.get("verb") == "delete" and op.get("description"):
                line.append("\n    ")
                line.append(lit(op["description"], tones.muted))
            parts.append(line)
        if self.written:
            head = span(f"ALREADY WRITTEN by this workflow ({len(self.written)})", tones.heading)
            head.append("  pausing here does not undo these", style=tones.muted)
            parts.append(head)
            for diff in self.written[:WRITTEN_SHOWN]:
                parts.append(lit(f"  ✓ {diff}", tones.muted))
            if len(self.written) > WRITTEN_SHOWN:
                parts.append(Text(f"  … and {len(self.written) - WRITTEN_SHOWN} more (the wizard's log lists all)",
                                  style=tones.muted))
        if r.checks:
            parts.append(preconditions_line(r.checks, tones))
        return stack(*parts)

    def _ask(self, tones: Tones) -> Text:
        r = self.request
        count = plural(len(r.operations), "operation")
        targets = plural(len(targets_of(r.operations)), "object")
        if r.destructive:
            t = span(f"⚠ Destructive: {count} on {targets} — type the context name ", tones.bad)
            t.append(lit(r.context, "bold"))
            t.append(" to enable ", style=tones.bad)
            t.append(self.confirm_label, style="bold")
            t.append(" (enter confirms). Each write is a server dry-run first, then the request with a "
                     "resourceVersion precondition. ", style=tones.muted)
        else:
            t = span(f"Confirm sends exactly the {count} above to {targets}", tones.warn)
            if r.covered:
                t.append(f", and later the {plural(r.covered, 'operation')} named under WHAT THIS MEANS as they "
                         "become due, without asking again", style=tones.warn)
            t.append(" (server dry-run first, resourceVersion preconditions). ", style=tones.muted)
        t.append(self._if_not(), style=tones.muted)
        return t

    def _if_not(self) -> str:
        """What answering no leaves behind — true for this step and what the workflow already wrote."""
        r, written = self.request, self.written
        pause = (f"Pause stops the workflow here, resumable (r in the wizard, or `taudash workflow resume "
                 f"{r.workflow_id}`)")
        if r.each:
            return f"Skip leaves this object as it is and asks about the next one. {pause}."
        if written:
            return (f"{pause}: this step writes nothing, and the {plural(len(written), 'change')} already written "
                    "(listed above) stay as they are.")
        if written is None and r.step_no > 1:  # no journal to read: say only what is certain
            return f"{pause}: this step writes nothing; whatever steps 1–{r.step_no - 1} changed stays as it is."
        return f"{pause}; nothing has been written."

    def on_mount(self) -> None:
        if self.request.destructive:
            self.query_one("#sc-context", Input).focus()  # type the context name at once
        else:
            self.query_one("#pause", Button).focus()  # safe, and says what enter does

    def typed_ok(self) -> bool:
        if not self.request.destructive:
            return True
        return self.query_one("#sc-context", Input).value.strip() == self.request.context

    def confirmed(self) -> bool | str:
        return True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "pause":
            self.dismiss(PAUSE)
        elif event.button.id == "cancel":
            self.dismiss(False)  # skip this one (confirm-each)
        elif self.typed_ok():
            self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False if self.request.each else PAUSE)


# --- the wizard --------------------------------------------------------------------------


class WizardScreen(DashScreen):
    TITLE_TEXT = "Workflow wizard"
    AUTO_FOCUS = None
    HELP = """\
Workflow wizard: one guided operation, step by step, as its journal and the runner report it.

STEPS      ✓ done · ▶ current · ◐ waiting for the cluster · ◑ partly sent · ✖ failed · ‖ paused · ■ aborted.
PLAN       the current step's changes as a diff (⚠ marks a destructive one), its notes and its
           preconditions. Nothing is written before you confirm: the dialog names every target, and a
           destructive step asks you to type the context name. Plans that delete confirm each object.
PROGRESS   what the step waits for, each count falling to its target, a bar and an ETA from the rate.
LOG        every plan, confirmation, change, observation and verification, oldest first.
WHAT STAYS once the run stopped (paused, failed, aborted or done): what it leaves in the cluster — queues
           on Hold/HoldAndDrain, Workloads still deactivated, the catalog it applied, objects it deleted —
           each with the command that undoes it; checked against the cluster this dashboard shows.

A confirmation's "Pause (resume later)" (the focused button), Esc and q pause the run: it is Paused and
resumes where it stopped. Only a (typing the run's id) ends a run for good.

p      pause the running workflow at its next wait (resumable)
r      resume this workflow (asks first; each remaining step still asks before it writes)
a      abort: end it for good — type its id to confirm; nothing in the cluster is undone (see WHAT STAYS)
l      release and reactivate: opens the release form with reactivate-from this run (each step asks)
esc    back to the list (a running workflow keeps running)
In a read-only session p, r, a and l only say why they are disabled: the wizard only shows."""

    BINDINGS = [
        Binding("p", "pause", "pause", show=False),
        Binding("r", "resume", "resume", show=False),
        Binding("a", "abort", "abort", show=False),
        Binding("l", "reactivate", "release / reactivate…", show=False),
    ]

    def frame_signature(self, frame: Frame) -> tuple | None:
        return None  # draws the workflow runner's state, which moves without the view

    def __init__(self, session: Session, model: RunModel, nav: str | None = None) -> None:
        super().__init__(session, nav)
        self.model = model

    @property
    def workflow_id(self) -> str:
        return self.model.id

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static(id="wz-title", classes="tile")
            yield Static(id="wz-mode", classes="tile")
            yield Static(id="wz-steps", classes="tile")
            yield Static(id="wz-plan", classes="detail")
            yield Static(id="wz-progress", classes="detail")
            yield Static(id="wz-leftovers", classes="detail")
            yield Static(id="wz-log", classes="tile")

    def on_mount(self) -> None:
        super().on_mount()
        self.render_run()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        self.render_run()

    def show(self, frame: Frame) -> None:
        if not self.query(HeaderBar):
            return  # pushed a moment ago and not composed yet: on_mount renders the newest frame
        super().show(frame)

    def render_frame(self, frame: Frame) -> None:
        self._follow_journal()
        self.render_run()

    def _follow_journal(self) -> None:
        """A run not running here is read again when its journal changes (the CLI resumed, paused or
        aborted it meanwhile): its state and what it leaves stay true (a stat per tick, no parse)."""
        if self._is_running():
            return
        try:
            st = os.stat(self.model.journal_path)
        except OSError:
            return
        key = (st.st_mtime_ns, st.st_size)
        seen = getattr(self, "_journal_key", None)
        if seen is None:
            self._journal_key = key
        now = time.monotonic()
        if seen is None or seen == key or now - getattr(self, "_journal_read_at", 0.0) < 1.0:
            return  # unchanged, or read a moment ago (a run another process runs changes it at every record)
        self._journal_key, self._journal_read_at = key, now
        try:
            self.model = RunModel.from_journal(Journal.open(self.model.journal_path), store=self.model.store)
        except (JournalError, OSError, KeyError, ValueError):
            return

    # actions ------------------------------------------------------------------------------
    def _is_running(self) -> bool:
        return self.model.state in ("Running", "Confirm")

    def _can_reactivate(self) -> bool:
        return any(it.get("kind") in ("queue-held", "workloads-deactivated") and "release" in (it.get("undo") or "")
                   for it in self.model.leftovers) and not self._is_running()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("pause", "resume", "abort", "reactivate"):
            if not operations_enabled(self.session)[0]:
                return True  # bound, so that the key says why it is disabled
            if action == "pause":
                return self._is_running()
            if action == "resume":
                return not self._is_running() and self.model.resumable
            if action == "reactivate":
                return self._can_reactivate()
            return self.model.state not in ("Completed", "Aborted", "RolledBack", "Abandoned")
        return True

    def action_pause(self) -> None:
        if not refuse_read_only(self, f"pausing workflow {self.model.id}"):
            self.post_message(PauseWorkflow(self.model.id))

    def action_resume(self) -> None:
        if not refuse_read_only(self, f"resuming workflow {self.model.id}"):
            self.post_message(ResumeWorkflow(self.model.id))

    def action_abort(self) -> None:
        if not refuse_read_only(self, f"aborting workflow {self.model.id}"):
            self.post_message(AbortWorkflow(self.model.id))

    def action_reactivate(self) -> None:
        """The release form, pre-filled to reactivate what this run deactivated; Start journals it."""
        if refuse_read_only(self, "reactivating Workloads") or not self._can_reactivate():
            return
        self.post_message(NewWorkflow("release", reactivate_from=self.model.id))  # the app's host opens the form

    # rendering ----------------------------------------------------------------------------
    def render_run(self) -> None:
        if not self.query("#wz-log"):
            return  # not composed yet: on_mount renders
        tones, m = self.tones, self.model
        self.query_one("#wz-title", Static).update(self._title(m, tones))
        self.query_one("#wz-mode", Static).update(self._mode(m, tones))
        self.query_one("#wz-steps", Static).update(self._steps(m, tones))
        plan = self.query_one("#wz-plan", Static)
        plan.display = m.current is not None or bool(m.error)
        plan.update(self._plan(m, tones))
        prog = self.query_one("#wz-progress", Static)
        prog.display = bool(m.items) or bool(m.progress and m.progress != "nothing to wait for" and m.current)
        prog.update(self._progress(m, tones))
        stays = self.query_one("#wz-leftovers", Static)
        stays.display = not self._is_running() and (bool(m.leftovers) or m.state in ("Paused", "Aborted", "Failed"))
        if stays.display:
            stays.update(self._leftovers(m, tones))
        self.query_one("#wz-log", Static).update(self._log(m, tones))
        self.refresh_bindings()

    def _title(self, m: RunModel, tones: Tones) -> Text:
        t = span(f"{m.kind.upper()} ", tones.heading)
        t.append(lit(f"#{m.id}", "bold"))
        t.append("  ")
        t.append(lit(m.title))
        t.append("   context ", style=tones.muted)
        t.append(lit(m.context or "–", "bold"))
        t.append("   ")
        t.append(run_state_text(m.state, tones, wide=True))
        t.append(f"   {m.done}/{len(m.steps)} steps", style=tones.muted)
        t.append("\njournal ", style=tones.muted)
        t.append(lit(m.journal_path, tones.muted))
        return t

    def _mode(self, m: RunModel, tones: Tones) -> Text:
        ok, _ = operations_enabled(self.session)
        if not ok:
            return read_only_line(self.session, tones)
        t = Text(end="")
        if m.state == "Confirm":
            t.append("◐ waiting for your confirmation: ", style=tones.warn)
            t.append(lit(m.asking, tones.warn))
            return t
        keys: list[tuple[str, str]] = []
        if self._is_running():
            keys.append(("p", "pause at the next wait"))
            keys.append(("a", "abort for good…"))
            keys.append(("esc", "back to the list (it keeps running)"))
        else:
            if m.resumable:
                keys.append(("r", "resume (asks first)"))
            if m.state not in ("Completed", "Aborted", "RolledBack", "Abandoned"):
                keys.append(("a", "abort for good… (type its id)"))
            if self._can_reactivate():
                keys.append(("l", f"release / reactivate the {plural(len(m.deactivated), 'Workload')}…"
                             if m.deactivated else "release the held queues…"))
            keys.append(("esc", "back to the list"))
        for i, (k, word) in enumerate(keys):
            if i:
                t.append(" · ", style=tones.muted)
            t.append(k, style=tones.accent)
            t.append(f" {word}", style=tones.muted)
        return t

    def _steps(self, m: RunModel, tones: Tones) -> Table:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(no_wrap=True, justify="right")
        grid.add_column(no_wrap=True, max_width=58, overflow="ellipsis")
        grid.add_column(overflow="fold")
        for i, s in enumerate(m.steps, start=1):
            tone = tones.of(STEP_TONE.get(s.state, "muted"))
            note: Text = lit(s.note, tones.muted)
            if s.id == m.current and m.items and m.remaining:
                first, now = m.remaining
                note = bar(first - now, first, 12, tones) if first else bar(1, 1, 12, tones)
                note.append(f"  {now:g} left  {eta_text(m.eta)}")
            elif s.id == m.current and s.state == "Failed" and m.error:
                note = lit(m.error, tones.bad)
            grid.add_row(Text(STEP_MARK.get(s.state, " "), style=tone), Text(str(i), style=tone),
                         lit(s.title, tone if s.id == m.current else ""), note)
        return grid

    def _plan(self, m: RunModel, tones: Tones) -> RenderableType:
        parts: list[RenderableType] = []
        idx = m.index(m.plan_step or m.current)
        title = span(f"PLAN · step {idx} ", tones.heading)
        title.append(lit(m.step(m.plan_step or m.current).title, tones.heading))
        if m.plan is None:
            title.append("   not planned yet" if m.state in ("Running", "Confirm") else
                         "   planned again from live state when resumed", style=tones.muted)
            parts.append(title)
        else:
            ops = m.plan.get("operations") or []
            title.append(f"   {len(ops)} change(s)", style=tones.muted)
            if m.plan.get("destructive"):
                title.append("  ⚠ destructive: confirming asks for the context name", style=tones.bad)
            parts.append(title)
            if not ops:
                parts.append(Text("  nothing to change in the cluster", style=tones.muted))
            # once sent, the plan gives way to the progress (small terminals): its first lines, then a count
            step = m.step(m.plan_step)
            sent = step.state in ("Waiting", "Done") or bool(ops) and all(op.get("diff") in step.sent for op in ops)
            shown = 3 if sent else 30
            for op in ops[:shown]:
                parts.append(op_line(op, tones))
            if len(ops) > shown:
                more = "sent (see the log)" if sent else "(the confirmation lists all)"
                parts.append(Text(f"  … and {len(ops) - shown} more {more}", style=tones.muted))
            for n in m.plan.get("notes") or []:
                parts.append(lit(f"  note: {n}", tones.muted))
        if m.checks:
            parts.append(preconditions_line(m.checks, tones))
        if m.error:
            err = span("✖ ", tones.bad)
            err.append(lit(m.error, tones.bad))
            if m.resumable:
                err.append("  (fix the cause, then r resumes: the step is planned again from live state)",
                           style=tones.muted)
            parts.append(err)
        return stack(*parts)

    def _progress(self, m: RunModel, tones: Tones) -> RenderableType:
        title = span(f"PROGRESS · step {m.index(m.current)}  " if m.current else "PROGRESS · last wait  ",
                     tones.heading)
        title.append(lit(m.progress))
        parts: list[RenderableType] = [title]
        if m.items:
            grid = Table.grid(padding=(0, 1))
            grid.add_column(no_wrap=True, max_width=44, overflow="ellipsis")
            grid.add_column(no_wrap=True, justify="right")
            grid.add_column(no_wrap=True)
            grid.add_column(no_wrap=True)
            for it in m.items.values():
                frac = it.fraction
                grid.add_row(lit(f"  {it.label}"), f"{it.current:g} → {it.target:g}",
                             bar(None if frac is None else frac, 1.0, 10, tones),
                             Text(f"from {it.first:g}", style=tones.muted))
            parts.append(grid)
        if m.remaining:
            first, now = m.remaining
            total = Text("  total ", end="")
            total.append(bar(first - now, first, 24, tones) if first else bar(1, 1, 24, tones))
            total.append(f"  {now:g} of {first:g} left   ")
            total.append("done" if now == 0 else eta_text(m.eta), style="bold")
            parts.append(total)
        return stack(*parts)

    def _leftovers(self, m: RunModel, tones: Tones) -> RenderableType:
        """WHAT STAYS: what the stopped run leaves in the cluster, each under the command that undoes it."""
        head = span("WHAT STAYS in the cluster", tones.heading)
        head.append("  checked against the cluster now" if m.checked_live else "  from the run's journal",
                    style=tones.muted)
        parts: list[RenderableType] = [head]
        if m.paused:
            where = m.index(m.paused.get("step")) if m.paused.get("step") else 0
            said = span("‖ paused", tones.warn)
            said.append(f" at step {where}" if where else "", style=tones.warn)
            said.append(lit(f": {m.paused.get('message') or m.paused.get('reason') or ''}", tones.warn))
            parts.append(said)
        if not m.leftovers:
            parts.append(Text("  nothing: no change this run made remains in the cluster", style=tones.muted))
        groups: dict[str | None, list[dict[str, Any]]] = {}
        for it in m.leftovers:
            groups.setdefault(it.get("undo"), []).append(it)
        writable = operations_enabled(self.session)[0]
        for undo, items in groups.items():
            for it in items:
                line = span("  • ", tones.warn)
                if it.get("kind") == "workloads-deactivated":
                    names = list(it.get("objects") or [])
                    line.append(lit(f"{len(names)} Workload(s) deactivated (spec.active=false: out of admission "
                                    "until reactivated)"))
                    parts.append(line)
                    flow = Text(end="")  # whole names, wrapped between them (never cut: they are what to look for)
                    for i, name in enumerate(names[:DEACTIVATED_SHOWN]):
                        flow.append("     " if not i else "   ")
                        flow.append(lit(name))
                    if len(names) > DEACTIVATED_SHOWN:
                        flow.append(f"  … and {len(names) - DEACTIVATED_SHOWN} more (the release form reactivates all)",
                                    style=tones.muted)
                    parts.append(flow)
                    continue
                line.append(lit(it.get("message", "")))
                if it.get("of"):
                    line.append(lit(f"  [change {it['of']}]", tones.muted))
                parts.append(line)
            how = Text("    undo: " if undo else "    not reversible by taudash", style=tones.muted)
            if undo:
                how.append(lit(undo, "bold"))
                if writable and "release --reactivate-from" in undo and self._can_reactivate():
                    how.append("   ", style=tones.muted)
                    how.append("l", style=tones.accent)
                    how.append(" opens this release form (each step asks)", style=tones.muted)
            parts.append(how)
        if m.resumable:
            more = Text("  r", style=tones.accent)
            more.append(f" resumes where it stopped (or `taudash workflow resume {m.id}`) · ", style=tones.muted)
            more.append("a", style=tones.accent)
            more.append(" ends it for good (these stay as listed)", style=tones.muted)
            parts.append(more)
        return stack(*parts)

    def _log(self, m: RunModel, tones: Tones) -> RenderableType:
        head = span("LOG", tones.heading)
        lines = list(m.log)[-LOG_SHOWN:]
        if len(m.log) > LOG_SHOWN:
            head.append(f"  last {LOG_SHOWN} of {len(m.log)}", style=tones.muted)
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True, style=tones.muted)
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold")
        for line in lines:
            style = tones.of(line.tone) if line.tone and line.tone != "muted" else (tones.muted if line.tone else "")
            grid.add_row(line.at.strftime("%H:%M:%S"), Text(line.mark, style=style), lit(line.text, style))
        return stack(head, grid)
