"""9 Workflows: the guided operations in the journal directory — hold/release of ClusterQueues, the
catalog change and its rollback, workspace drain supervision — with their state and steps.

Starting one is a form (`n`), never a single key that writes; each step then asks for its own
confirmation in the wizard. In a read-only session the list and the status are all there is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import (
    Button,
    ContentSwitcher,
    DataTable,
    Input,
    RadioButton,
    RadioSet,
    Select,
    SelectionList,
    Static,
)
from textual.widgets.selection_list import Selection

from taudash.engine.identity import ClusterIdentity, resume_refusal
from taudash.engine.session import Frame, Session
from taudash.engine.workflows import (
    Journal,
    JournalError,
    Param,
    WorkflowKind,
    build,
    overlap_refusal,
    registry,
    status,
)
from taudash.engine.workflows.base import Context
from taudash.engine.workflows.journal import about, workflows_dir
from taudash.engine.workflows.params import ParamError, describe

from .base import DashScreen
from .filtering import RowMeta
from .messages import AbortWorkflow, NewWorkflow, OpenWorkflow, RehearseWorkflow, ResumeWorkflow
from .presenters import (
    journal_dir_of,
    operations_enabled,
    read_only_line,
    refuse_read_only,
    run_state_text,
    stack,
    workflows_of,
)
from .text import Tones, lit, span
from .widgets.choices import ChoiceSet, MarkedCheckbox, MarkedRadioButton, MarkedSelectionList
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section
from .workflow_model import RESUMABLE, STEP_MARK, STEP_OF_STATUS, STEP_TONE, age_text


def kind_labels() -> dict[str, str]:
    """Every registered workflow kind and its label, in registry order (engine/workflows/registry.py)."""
    return {w.name: w.label for w in registry.kinds()}


def label_of(kind: str) -> str:
    wk = registry.find(kind)
    return wk.label if wk is not None else kind


# The forms drawn by hand below (pickers over queues, journals, workspaces), by the name a kind declares as
# its `form` (engine/workflows/kind.py); a kind whose form is GENERATED, or names none of these, gets a
# section generated from its parameters (`_generated`).
CUSTOM_FORMS = ("hold", "release", "catalog", "rollback", "drain")


def custom_form(kind: str) -> str | None:
    """The hand-drawn form a registered kind declares, or None: its form is generated from its Params."""
    form = registry.get(kind).form
    return form if form in CUSTOM_FORMS else None


COLS = [
    Col("id", "id", 8),
    Col("kind", "kind", 8),
    Col("state", "state", 17),
    Col("steps", "steps", 5, right=True),
    Col("context", "context", 20),
    Col("started", "started", 11),
    Col("about", "about", flex=True),
]


# --- journal entries ----------------------------------------------------------------------


@dataclass
class Entry:
    id: str
    kind: str
    state: str
    done: int
    total: int
    context: str | None
    started: float
    about: str
    path: str
    error: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)  # status(journal)["steps"]
    leftovers: list[dict[str, Any]] = field(default_factory=list)  # status(journal)["leftovers"]
    paused: dict[str, Any] | None = None
    deactivated: int = 0  # Workloads it deactivated that are still deactivated
    artifacts: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    header: dict[str, Any] = field(default_factory=dict)  # the journal's first record (id, context, cluster)
    elsewhere: str = ""  # why it does not belong to the shown cluster (never resumable here); "" when it does

    @property
    def server(self) -> str | None:
        ident = ClusterIdentity.from_dict(self.header.get("cluster"))
        return ident.server if ident else None


class JournalIndex:
    """The journal directory as entries, re-read only for files that changed (stat per tick, no parse) —
    and, when a release or rollback changed, for the run it undoes (what that run leaves depends on it).

    Given the shown cluster (`here`), an entry journaled on another cluster — or one that cannot be
    shown to be on this one — carries `elsewhere` (listed greyed as "other cluster", never resumable).
    With `store` (the shown cluster, live) the leftovers of this cluster's runs are checked against it."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[int, int], Entry]] = {}
        self._journals: dict[str, Journal] = {}  # parsed once per change: what a run leaves reads the runs undoing it

    def load(self, directory: Path, here: ClusterIdentity | None = None, context: str | None = None,
             store: Any = None) -> list[Entry]:
        def ours(header: dict[str, Any]) -> bool:  # only this cluster's runs are checked against its store
            return here is not None and resume_refusal(header, context, here) is None

        entries = self._load(directory, store, ours)
        for e in entries:
            e.elsewhere = "" if here is None or e.state == "Unreadable" else \
                (resume_refusal(e.header, context, here) or "")
        return entries

    def _load(self, directory: Path, store: Any = None, ours: Any = None) -> list[Entry]:
        seen: dict[str, tuple[int, int]] = {}
        try:
            paths = sorted(directory.glob("*.jsonl"))
        except OSError:
            paths = []
        for path in paths:
            try:
                st = path.stat()
            except OSError:
                continue
            seen[str(path)] = (st.st_mtime_ns, st.st_size)
        stale = {p for p, key in seen.items() if p not in self._cache or self._cache[p][0] != key}
        for gone in set(self._cache) - set(seen):
            del self._cache[gone]
            self._journals.pop(gone, None)
        failed: dict[str, str] = {}
        for p in stale:
            try:
                self._journals[p] = Journal.open(p)
            except (JournalError, OSError) as exc:
                self._journals.pop(p, None)
                failed[p] = str(exc)
        undoing: dict[str, list[Journal]] = {}
        for j in self._journals.values():
            ref = about(j)
            if ref:
                undoing.setdefault(ref, []).append(j)
        # a release or rollback that changed: the run it undoes leaves less behind
        stale |= {str(directory / f"{about(self._journals[p])}.jsonl") for p in list(stale)
                  if p in self._journals and about(self._journals[p])} & set(seen)
        for p in stale:
            run = self._journals.get(p)
            entry = _entry(run, undoing.get(run.id, []), store, ours) if run is not None else \
                _unreadable(Path(p), failed.get(p, "not a journal"))
            self._cache[p] = (seen[p], entry)
        out = [self._cache[p][1] for p in sorted(seen)]
        out.sort(key=lambda e: (-e.started, e.id))
        return out


def _unreadable(path: Path, error: str) -> Entry:
    return Entry(path.stem, "?", "Unreadable", 0, 0, None, 0.0, "", str(path), error=error)


def _entry(j: Journal, later: list[Journal], store: Any = None, ours: Any = None) -> Entry:
    try:
        doc = status(j, later, store=store if store is not None and (ours is None or ours(j.header)) else None)
    except (JournalError, KeyError, ValueError, TypeError) as exc:
        return _unreadable(j.path, str(exc))
    steps = doc["steps"]
    err = next((s["error"] for s in steps if s.get("error")), "") if j.state == "Failed" else ""
    return Entry(j.id, j.kind, j.state, sum(1 for s in steps if s["state"] == "Done"), len(steps),
                 j.header.get("context"), float(j.records[0].get("at", 0)), describe(j.kind, j.params), str(j.path),
                 error=err or "", steps=steps, leftovers=doc.get("leftovers") or [], paused=doc.get("paused"),
                 deactivated=len(doc.get("deactivated") or []), artifacts=doc.get("artifacts") or {},
                 params=j.params, header=dict(j.header))


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
                    Text(f"{e.done}/{e.total}" if e.total else "–", style=tones.muted), lit(e.context or "–", tones.muted),
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


# --- the "new workflow" form ---------------------------------------------------------------


class NewWorkflowScreen(ModalScreen[tuple[str, dict] | None]):
    """Choose a workflow and its targets. Start journals it and opens the wizard; the first write
    still waits for the step's own confirmation."""

    DEFAULT_CSS = """
    NewWorkflowScreen { align: center middle; }
    NewWorkflowScreen > Vertical {
        width: 110; max-width: 96%; height: auto; max-height: 94%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    NewWorkflowScreen RadioSet { layout: horizontal; width: 100%; height: auto; border: none; }
    NewWorkflowScreen RadioSet RadioButton { width: auto; margin-right: 1; }
    NewWorkflowScreen RadioSet.-many { layout: grid; grid-size: 3; grid-rows: 1; grid-gutter: 0 1; }
    NewWorkflowScreen ContentSwitcher { height: auto; max-height: 16; }
    NewWorkflowScreen ContentSwitcher > Vertical { height: auto; }
    NewWorkflowScreen SelectionList { height: auto; max-height: 9; }
    NewWorkflowScreen .nw-label { color: $text-muted; margin-top: 1; }
    NewWorkflowScreen #nw-steps { color: $text-muted; margin-top: 1; }
    NewWorkflowScreen #nw-error { color: $error; }
    NewWorkflowScreen Horizontal#nw-buttons { height: auto; align-horizontal: right; margin-top: 1; }
    NewWorkflowScreen Button { margin-left: 2; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, session: Session, kind: str | None = None, cqs: list[str] | None = None,
                 workspace: str | None = None, directory: Path | None = None,
                 reactivate_from: str | None = None) -> None:
        super().__init__()
        self.session = session
        self.kind: str = kind if kind is not None and registry.find(kind) is not None else "hold"
        self.cqs = list(cqs or [])
        self.workspace = workspace
        self.directory = directory
        frame = session.last_frame
        self.queues = list(frame.view.cluster_queues) if frame is not None else []
        self.workspaces = [w for w in frame.view.workspaces if w.drain.state != "NotDraining"] if frame else []
        self.journals = JournalIndex().load(directory or workflows_dir())
        self.reactivation_sources = self._reactivation_sources()
        self.reactivate_from = reactivate_from if reactivate_from in self.reactivation_sources else None
        if self.reactivate_from and not self.cqs:  # the queues that run held: the ones to release
            self.cqs = list(self.reactivation_sources[self.reactivate_from][0].params.get("cqs") or [])

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("New workflow", style="bold"), id="nw-title")
            # Five kinds fit on one line; with more (a registered workflow), they wrap in rows of three.
            with ChoiceSet(id="nw-kind", classes="-many" if len(registry.kinds()) > 5 else ""):
                for kind, label in kind_labels().items():
                    yield MarkedRadioButton(label, value=kind == self.kind, id=f"nw-kind-{kind}")
            with ContentSwitcher(initial=f"nw-{self.kind}"):
                with Vertical(id="nw-hold"):
                    yield Static("ClusterQueues to stop (space toggles)", classes="nw-label")
                    yield MarkedSelectionList[str](*self._queue_options(self.cqs), id="nw-hold-cqs")
                    with ChoiceSet(id="nw-hold-mode"):
                        yield MarkedRadioButton("HoldAndDrain — evicts admitted work", value=True,
                                                id="nw-mode-HoldAndDrain")
                        yield MarkedRadioButton("Hold — admitted work runs to completion", id="nw-mode-Hold")
                    yield MarkedCheckbox("deactivate pending Workloads (reversible: spec.active=false)", value=True,
                                         id="nw-hold-cancel")
                with Vertical(id="nw-release"):
                    yield Static("ClusterQueues to release (stopPolicy None)", classes="nw-label")
                    stopped = self.cqs or [q.name for q in self.queues if q.stop_policy != "None"]
                    yield MarkedSelectionList[str](*self._queue_options(stopped), id="nw-release-cqs")
                    yield Static("reactivate the Workloads a hold, catalog change or rollback deactivated",
                                 classes="nw-label")
                    yield Select(self._reactivation_options(), prompt="no reactivation", id="nw-release-from",
                                 value=self.reactivate_from or Select.NULL)
                with Vertical(id="nw-catalog"):
                    yield Static("new catalog file: a profile list, {workloadProfiles: …} or a TauCluster (YAML)",
                                 classes="nw-label")
                    yield Input(placeholder="path/to/catalog.yaml", id="nw-catalog-file")
                    yield Static("also hold (besides every queue the current and the new catalog route to)",
                                 classes="nw-label")
                    yield MarkedSelectionList[str](*self._queue_options([]), id="nw-catalog-cqs")
                with Vertical(id="nw-rollback"):
                    yield Static("the catalog change to roll back (its exported TauCluster is restored)",
                                 classes="nw-label")
                    yield Select(self._catalog_options(), prompt="choose a catalog change", id="nw-rollback-from")
                with Vertical(id="nw-drain"):
                    yield Static("workspace being deleted or retargeted", classes="nw-label")
                    yield Select(self._workspace_options(), prompt="choose a draining workspace", id="nw-drain-ws",
                                 value=self.workspace if self.workspace in {w.name for w in self.workspaces}
                                 else Select.NULL)
                for wk in registry.kinds():
                    if custom_form(wk.name) is None:
                        yield from self._generated(wk)
            yield Static(self._steps_text(), id="nw-steps")
            yield MarkedCheckbox("Rehearse first on a simulated fork: show the predicted outcome, write nothing",
                                 value=False, id="nw-rehearse")
            yield Static("", id="nw-error")
            with Horizontal(id="nw-buttons"):
                yield Button("Cancel", id="nw-cancel", variant="primary")
                yield Button("Start…", id="nw-start", variant="warning")

    # options ------------------------------------------------------------------------------
    def _queue_options(self, chosen: list[str]) -> list[Selection[str]]:
        out = []
        for q in self.queues:
            t = lit(q.name)
            t.append("  ")
            t.append(lit(f"stopPolicy {q.stop_policy} · pending {q.pending} · reserving {q.reserving} · "
                         f"admitted {q.admitted}", "dim"))
            out.append(Selection(t, q.name, q.name in chosen))
        return out

    def _reactivation_sources(self) -> dict[str, tuple[Entry, int]]:
        """Runs that may have deactivated Workloads (hold, catalog change, rollback), newest first, with
        how many each deactivated (read from its journal)."""
        out: dict[str, tuple[Entry, int]] = {}
        for e in self.journals:
            if e.kind not in registry.deactivating():
                continue
            out[e.id] = (e, e.deactivated)
        return out

    def _reactivation_options(self) -> list[tuple[Text, str]]:
        return [(lit(f"{e.id} · {label_of(e.kind).lower()} · {n} Workload{'' if n == 1 else 's'} deactivated · "
                     f"{e.state} · {e.about}"), e.id)
                for e, n in self.reactivation_sources.values()]

    def _catalog_options(self) -> list[tuple[Text, str]]:
        return [(lit(f"{e.id} · {e.about} · {e.state}" + ("" if "taucluster" in e.artifacts else " · no export")),
                 e.id) for e in self.journals if e.kind == "catalog"]

    def _workspace_options(self) -> list[tuple[Text, str]]:
        return [(lit(f"{w.name} · {w.drain.mode} · drain {w.drain.state} ({len(w.drain.blockers)} blockers)"), w.name)
                for w in self.workspaces]

    def _steps_text(self) -> Text:
        t = Text(f"Steps: {registry.get(self.kind).steps}.\n", end="")
        t.append("Start journals the workflow and opens its wizard; each step shows its plan and asks before it "
                 "writes (destructive steps: type the context name).")
        return t

    # events -------------------------------------------------------------------------------
    def on_mount(self) -> None:
        self.query_one("#nw-cancel", Button).focus()

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        if event.radio_set.id != "nw-kind" or event.pressed.id is None:
            return
        event.stop()
        self.kind = event.pressed.id.removeprefix("nw-kind-")
        self.query_one(ContentSwitcher).current = f"nw-{self.kind}"
        self.query_one("#nw-steps", Static).update(self._steps_text())
        self.query_one("#nw-error", Static).update("")

    def select_kind(self, kind: str) -> None:
        """Choose the workflow kind (what clicking its radio button does)."""
        self.query_one(f"#nw-kind-{kind}", RadioButton).value = True

    def values(self) -> dict[str, Any]:
        """What the form's fields say, by parameter (the same names as `taudash workflow start`'s flags)."""
        kind = custom_form(self.kind)
        if kind is None:
            return self._generated_values(registry.get(self.kind))
        if kind == "hold":
            mode_btn = self.query_one("#nw-hold-mode", RadioSet).pressed_button
            mode = (mode_btn.id or "").removeprefix("nw-mode-") if mode_btn is not None else "HoldAndDrain"
            return {"cq": self.query_one("#nw-hold-cqs", SelectionList).selected, "mode": mode,
                    "keep_pending": not self.query_one("#nw-hold-cancel", MarkedCheckbox).value}
        if kind == "release":
            src = self.query_one("#nw-release-from", Select).value
            return {"cq": self.query_one("#nw-release-cqs", SelectionList).selected,
                    "reactivate_from": src if isinstance(src, str) else None}
        if kind == "catalog":
            return {"catalog": self.query_one("#nw-catalog-file", Input).value.strip(),
                    "cq": self.query_one("#nw-catalog-cqs", SelectionList).selected}
        if kind == "rollback":
            src = self.query_one("#nw-rollback-from", Select).value
            return {"from_id": src if isinstance(src, str) else ""}
        ws = self.query_one("#nw-drain-ws", Select).value
        return {"workspace": ws if isinstance(ws, str) else ""}

    def params(self) -> dict[str, Any]:
        """The chosen parameters, through the same description as `taudash workflow start` (ParamError on bad
        input)."""
        s = self.session
        ctx = Context(store=s.store, actions=s.actions, config=s.config, lock=s.lock)
        return registry.get(self.kind).make(ctx, self.values(), self.directory, registry.kinds())

    # a form section generated from a kind's parameters -------------------------------------------
    def _generated(self, wk: WorkflowKind) -> ComposeResult:
        with Vertical(id=f"nw-{wk.name}"):
            for p in wk.params:
                wid = f"nw-{wk.name}-{p.dest}"
                if p.type == "flag":
                    yield MarkedCheckbox(p.field_label, value=False, id=wid)
                    continue
                yield Static(p.field_label + (" (required)" if p.required else ""), classes="nw-label")
                if p.type == "choice":
                    with ChoiceSet(id=wid):
                        for c in p.choices:
                            yield MarkedRadioButton(c, value=c == p.default, id=f"{wid}-{c}")
                elif p.type == "list" and p.pick == "queues":
                    yield MarkedSelectionList[str](*self._queue_options([]), id=wid)
                else:
                    hint = p.metavar or p.dest
                    yield Input(placeholder=f"{hint}, {hint}, …" if p.type == "list" else hint, id=wid)

    def _generated_values(self, wk: WorkflowKind) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for p in wk.params:
            out[p.dest] = self._generated_value(wk, p)
        return out

    def _generated_value(self, wk: WorkflowKind, p: Param) -> Any:
        wid = f"#nw-{wk.name}-{p.dest}"
        if p.type == "flag":
            return self.query_one(wid, MarkedCheckbox).value
        if p.type == "choice":
            pressed = self.query_one(wid, RadioSet).pressed_button
            return (pressed.id or "").removeprefix(wid[1:] + "-") if pressed is not None else p.default
        if p.type == "list" and p.pick == "queues":
            return list(self.query_one(wid, SelectionList).selected)
        text = self.query_one(wid, Input).value.strip()
        if p.type == "list":
            return [x for x in (part.strip() for part in text.replace(",", " ").split()) if x]
        return text or None

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id != "nw-start":
            self.dismiss(None)
            return
        try:
            params = self.params()
            build(self.kind, params)  # a workflow that cannot be built is refused here, not in the wizard
        except ParamError as exc:
            self.query_one("#nw-error", Static).update(lit(f"✖ {exc}"))
            return
        except (AttributeError, KeyError, TypeError, ValueError) as exc:  # a journal the helpers cannot read
            self.query_one("#nw-error", Static).update(lit(f"✖ {exc.__class__.__name__}: {exc}"))
            return
        rehearse = self.query_one("#nw-rehearse", MarkedCheckbox).value
        s = self.session
        refusal = None if rehearse else overlap_refusal(
            self.kind, params, s.actions.context or s.source.context or "?", s.cluster, self.directory)
        if refusal:  # another unfinished run (this dashboard's or the CLI's) writes to the same objects
            self.query_one("#nw-error", Static).update(lit(f"✖ {refusal}"))
            return
        if rehearse:  # the app rehearses; nothing is started
            self.app.post_message(RehearseWorkflow(self.kind, params))
            self.dismiss(None)
            return
        self.dismiss((self.kind, params))

    def action_cancel(self) -> None:
        self.dismiss(None)


# --- the palette ----------------------------------------------------------------------------


class WorkflowProvider(Provider):
    """"Start workflow: …" commands, only in a session that may write; each opens the form."""

    async def startup(self) -> None:
        session = getattr(self.screen, "session", None) or getattr(self.app, "session", None)
        self.enabled = session is not None and operations_enabled(session)[0]

    def _new(self, kind: str) -> None:
        self.app.post_message(NewWorkflow(kind))

    def _commands(self) -> list[tuple[str, str]]:
        if not getattr(self, "enabled", False):
            return []
        return [(f"Start workflow: {label} …", kind) for kind, label in kind_labels().items()]

    async def discover(self) -> Hits:
        for label, kind in self._commands():
            yield DiscoveryHit(label, partial(self._new, kind), help="opens the form; every step asks before it writes")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for label, kind in self._commands():
            score = matcher.match(label)
            if score > 0:
                yield Hit(score, matcher.highlight(label), partial(self._new, kind), text=label,
                          help="opens the form; every step asks before it writes")
