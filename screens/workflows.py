"""9 Workflows: the guided operations in the journal directory — hold/release of ClusterQueues, the
catalog change and its rollback, workspace drain supervision — with their state and steps.

Starting one is a form (`n`: workflow/forms.py), never a single key that writes; each step then asks for its own
confirmation in the wizard. In a read-only session the list and the status are all there is.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from taudash.engine.session import Frame, Session

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.messages import AbortWorkflow, NewWorkflow, OpenWorkflow, ResumeWorkflow
from .kit.presenters import journal_dir_of, operations_enabled, read_only_line, refuse_read_only, stack, workflows_of
from .kit.text import Tones, lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section
from .workflow.journals import Entry, JournalIndex
from .workflow.model import RESUMABLE, STEP_MARK, STEP_OF_STATUS, STEP_TONE, age_text, run_state_text

COLS = [
    Col("id", "id", 8),
    Col("kind", "kind", 8),
    Col("state", "state", 17),
    Col("steps", "steps", 5, right=True),
    Col("context", "context", 20),
    Col("started", "started", 11),
    Col("about", "about", flex=True),
]


# --- the screen ---------------------------------------------------------------------------


class WorkflowsScreen(DashScreen):
    HELP = """\
Workflows: every guided operation in the journal directory (shared with `taudash workflow`), newest
first — its kind, state, steps done, the context it ran against and what it is about.

n       new workflow: a form (hold or release ClusterQueues, catalog change from a file, rollback of a
        catalog change, drain supervision of a workspace); nothing is written by the form
enter   open the highlighted workflow's wizard: steps, plan, progress, log
r       resume the highlighted workflow (Paused, Failed or InProgress); asks first
a       abort the highlighted workflow: ends it for good once you type its id (nothing in the cluster is
        undone: the detail lists what it leaves there and the command that undoes each)

Every step of a running workflow shows its plan and asks before it writes: the confirmation names
each target, and a destructive step (HoldAndDrain, deletions) asks for the context name. Declining a
step pauses the run (Paused, resumable); so does quitting while it runs.
Also: 3 Queues → w on a ClusterQueue or cohort, and 4 → enter → w on a draining workspace.
In a read-only session guided operations are disabled: n, r and a only say why."""

    BINDINGS = [
        Binding("n", "new", "new workflow", show=False),
        Binding("r", "resume", "resume", show=False),
        Binding("a", "abort", "abort", show=False),
    ]

    def frame_signature(self, frame: Frame) -> tuple | None:
        return None  # draws the workflow runner's state, which moves without the view

    def __init__(self, session: Session, nav: str | None = None) -> None:
        super().__init__(session, nav)
        self.index = JournalIndex()
        self.entries: dict[str, Entry] = {}

    def compose_body(self) -> ComposeResult:
        with Vertical(id="body"):
            yield Static(id="wf-mode", classes="tile")
            yield Section("WORKFLOWS", KeyedTable(COLS, empty="no workflows yet — n starts one", id="workflows"),
                          classes="primary")
            with VerticalScroll(classes="detail-scroll"):
                yield Static(id="wf-detail", classes="detail")

    @property
    def writable(self) -> bool:
        return operations_enabled(self.session)[0]

    def live_states(self) -> dict[str, str]:
        """States of the workflows running in this dashboard (Running / Confirm)."""
        host = workflows_of(self.app)
        return host.live() if host is not None else {}

    # rendering -----------------------------------------------------------------------------
    def render_frame(self, frame: Frame) -> None:
        self.reload()

    def reload(self) -> None:
        if self.frame is None or not self.query("#wf-detail"):
            return  # not composed yet: the first frame renders it
        tones, now = self.tones, self.frame.now.timestamp()
        directory = journal_dir_of(self.app)
        entries = self.index.load(directory, self.session.cluster, self._shown_context(), self.session.store)
        self.entries = {e.id: e for e in entries}
        live = self.live_states()
        self.query_one("#wf-mode", Static).update(self._mode(tones, directory))
        rows = []
        for e in entries:
            state = live.get(e.id, e.state)
            if e.elsewhere:  # another cluster's run: listed, greyed, never resumable here
                rows.append(Row(e.id, (
                    lit(e.id, tones.muted), lit(e.kind, tones.muted), Text("other cluster", style=tones.muted),
                    Text(f"{e.done}/{e.total}" if e.total else "–", style=tones.muted),
                    lit(e.context or "–", tones.muted),
                    Text(age_text(max(0.0, now - e.started)) if e.started else "–", style=tones.muted),
                    lit(f"{e.about}  ({state}, {e.server or 'server unknown'})", tones.muted),
                ), RowMeta(text=f"{e.kind} other cluster {state} {e.context or ''} {e.about}")))
                continue
            rows.append(Row(e.id, (
                lit(e.id, "bold"), lit(e.kind), run_state_text(state, tones),
                f"{e.done}/{e.total}" if e.total else "–", lit(e.context or "–"),
                Text(age_text(max(0.0, now - e.started)) if e.started else "–", style=tones.muted),
                lit(e.about if not e.error else f"{e.about}  ✖ {e.error}".strip()),
            ), RowMeta(text=f"{e.kind} {state} {e.context or ''} {e.about}")))
        table = self.query_one("#workflows", KeyedTable)
        table.sync(rows)
        self._detail(table.selected_key())
        self.refresh_bindings()

    def _shown_context(self) -> str | None:
        return self.session.actions.context or self.session.source.context

    def _mode(self, tones: Tones, directory: Path) -> Text:
        if not self.writable:
            t = read_only_line(self.session, tones)
        else:
            t = Text(end="")
            for i, (k, word) in enumerate((("n", "new workflow"), ("enter", "open"), ("r", "resume"),
                                           ("a", "abort for good…"))):
                if i:
                    t.append(" · ", style=tones.muted)
                t.append(k, style=tones.accent)
                t.append(f" {word}", style=tones.muted)
            t.append("   every write asks first, naming its targets", style=tones.muted)
        t.append("\njournal dir ", style=tones.muted)
        t.append(lit(str(directory), tones.muted))
        if self.session.cluster is not None:  # runs journaled on any other cluster are greyed, never resumed here
            t.append("   cluster ", style=tones.muted)
            t.append(lit(self.session.cluster.describe(), tones.muted if self.session.cluster.uid else tones.warn))
        return t

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail(event.row_key.value)
        self.refresh_bindings()

    def _detail(self, key: str | None) -> None:
        pane = self.query_one("#wf-detail", Static)
        e = self.entries.get(key or "")
        if e is None:
            pane.update(Text("highlight a workflow for its steps", style="dim"))
            return
        pane.update(self._entry_detail(e, self.live_states().get(e.id, e.state), self.tones))

    @staticmethod
    def _entry_detail(e: Entry, state: str, tones: Tones) -> RenderableType:
        head = span(f"{e.kind.upper()} ", tones.heading)
        head.append(lit(f"#{e.id}", "bold"))
        head.append("  ")
        head.append(run_state_text(state, tones))
        head.append("  ")
        head.append(lit(e.about, tones.muted))
        if e.state == "Unreadable":
            return stack(head, lit(e.error, tones.bad), lit(e.path, tones.muted))
        if e.elsewhere:
            head.append("  ")
            head.append(Text("other cluster: not resumable here", style=tones.warn))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(no_wrap=True, justify="right")
        grid.add_column(no_wrap=True, max_width=60, overflow="ellipsis")
        grid.add_column(overflow="fold")
        for i, s in enumerate(e.steps, start=1):
            st = STEP_OF_STATUS.get(s["state"], "Pending")
            tone = tones.of(STEP_TONE.get(st, "muted"))
            obs = (s.get("observed") or {}).get("message", "")
            note = s.get("error") or (obs if obs and obs != "nothing to wait for" else
                                      (f"{len(s['plan'])} change(s) planned" if s["plan"] else ""))
            grid.add_row(Text(STEP_MARK.get(st, " "), style=tone), Text(str(i), style=tone), lit(s["title"]),
                         lit(note, tones.bad if s.get("error") else tones.muted))
        parts: list[RenderableType] = [head, grid]
        if e.elsewhere:
            parts.append(lit(e.elsewhere, tones.muted))
        if e.paused:
            parts.append(lit(f"‖ paused: {e.paused.get('message') or e.paused.get('reason') or ''}", tones.warn))
        if e.leftovers:
            checked = all(it.get("checked") == "cluster" for it in e.leftovers)
            title = span("WHAT STAYS in the cluster", tones.heading)
            title.append("  checked against the cluster now" if checked else "  from the run's journal",
                         style=tones.muted)
            parts.append(title)
            undos: dict[str | None, None] = {}
            for it in e.leftovers:
                parts.append(lit(f"  • {it.get('message', '')}" + (f"  [change {it['of']}]" if it.get("of") else "")))
                undos[it.get("undo")] = None
            for undo in undos:
                parts.append(lit(f"    undo: {undo}" if undo else "    (a deletion is not reversible by taudash)",
                                 tones.muted))
        for name, path in e.artifacts.items():
            parts.append(lit(f"artifact {name}: {path}", tones.muted))
        return stack(*parts)

    # keys -----------------------------------------------------------------------------------
    def _selected(self) -> Entry | None:
        key = self.query_one("#workflows", KeyedTable).selected_key()
        return self.entries.get(key or "")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("new", "resume", "abort"):
            if not self.writable:
                return True  # bound, so that the key says why it is disabled
            if action == "new":
                return True
            e = self._selected() if self.query("#workflows") else None
            if e is None:
                return None
            state = self.live_states().get(e.id, e.state)
            if e.elsewhere:
                return None  # another cluster's run: neither resumed nor marked from here
            if action == "resume":
                return state in RESUMABLE or None
            return state not in ("Completed", "Aborted", "RolledBack", "Abandoned", "Unreadable") or None
        return True

    def action_new(self) -> None:
        if not refuse_read_only(self, "starting a workflow"):
            self.post_message(NewWorkflow())

    def action_resume(self) -> None:
        e = self._selected()
        if not refuse_read_only(self, "resuming a workflow") and e is not None:
            self.post_message(ResumeWorkflow(e.id))

    def action_abort(self) -> None:
        e = self._selected()
        if not refuse_read_only(self, "aborting a workflow") and e is not None:
            self.post_message(AbortWorkflow(e.id))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        if key and key in self.entries and self.entries[key].state != "Unreadable":
            self.post_message(OpenWorkflow(key))
