""":pods / :po — the cluster's Pods (or one namespace's, `:pods NS`), and pushed from a Workload, a node, a workspace
or a queue: the Pods of that object. Phase, node, GPUs, restarts, age (as kubectl prints it) and the Workload the
Pod's job runs under; `/` filters, Enter opens the Pod (YAML, Events), `l` reads its log.

Rows come from engine/pod_list.py on the store, under the session's lock, once per view. Unreadable Pods are said
("Pods are not readable"), never an empty list.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from taudash.engine.pod_list import ALL, NAMESPACE, PodRow, PodScope, list_pods
from taudash.engine.rules.base import ObjRef
from taudash.engine.session import Frame, Session
from taudash.engine.store import AccessState

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.format import kube_age
from .kit.messages import OpenLogs
from .kit.text import Tones, join, lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

COLS = [
    Col("pod", "namespace/Pod", 30, ident=True),
    Col("phase", "phase", 9),
    Col("node", "node", 30),  # a node's name whole before the Workload's (the pane below shows that whole)
    Col("gpus", "GPUs", 4, right=True),
    Col("restarts", "restarts", 8, right=True),
    Col("age", "age", 5, right=True),
    Col("workload", "Workload", flex=True),  # in the Pod's namespace: its name only
]
PHASE_TONE = {"Running": "ok", "Succeeded": "muted", "Failed": "bad", "Unknown": "unknown"}


class PodsScreen(DashScreen):
    TITLE_TEXT = "Pods"
    HELP = """\
Pods: every Pod taudash reads (`:pods`, `:po`), one namespace's (`:pods NAMESPACE`), or — pushed with p from a
Workload, a node (Capacity NODES), a workspace or a queue — that object's Pods.

phase      the Pod's phase; a Pending Pod shows why it waits (ContainerCreating, unscheduled)
node       where it is bound ("–": not scheduled)
GPUs       the GPUs it requests · restarts: its containers' restarts · age: since it was created
Workload   the Workload its job (its controller) runs under

/          filter: ns:train, kind:, or any text (phase, node, owner, Workload)
o / O      sort by the next column / reverse it
enter      open the Pod (conditions, related objects, Events, YAML)
l          read the Pod's log (follow, previous container, wrap, timestamps, search, save)
esc        back"""
    BINDINGS = [Binding("l", "logs", "logs", show=False)]
    FOOTER_KEYS = (("l", "logs"),)
    DRAW_WHEN_COMPOSED_HIDDEN = False  # the list walks every Pod under the session's lock (150k at L)
    DEFAULT_CSS = """
    PodsScreen #body { height: 1fr; }
    PodsScreen #body > Section { height: 1fr; }
    PodsScreen #body > Section > KeyedTable { height: 1fr; }
    PodsScreen #pods-detail { height: auto; }
    """

    def __init__(self, session: Session, nav: str | None = None, scope: PodScope | None = None,
                 title: str = "") -> None:
        super().__init__(session, nav)
        self.scope = scope or PodScope()
        self.title = title
        self._rows: tuple[object, PodScope, list[PodRow]] | None = None  # (view, scope, rows), kept per view

    def frame_signature(self, frame: Frame) -> tuple | None:
        sig = super().frame_signature(frame)
        return None if sig is None else sig + (self.scope,)

    def compose_body(self) -> ComposeResult:
        with Vertical(id="body"):
            yield Static(id="pods-note", classes="tile")
            yield Section("PODS", KeyedTable(COLS, empty="no Pods", id="pods"))
            yield Static(id="pods-detail", classes="detail")

    def jump_to(self, arg: str) -> str:
        """`:pods` (every namespace), `:pods NAMESPACE`, `:pods all`: the error to show, "" when done."""
        self.scope = PodScope() if arg in ("", "all", "-A", "*") else PodScope(NAMESPACE, arg)
        self.title = ""
        self.invalidate()
        if self.frame is not None:
            self.show(self.frame)
        return ""

    # data ---------------------------------------------------------------------------------
    def pods(self, frame: Frame) -> list[PodRow]:
        kept = self._rows
        if kept is not None and kept[0] is frame.view and kept[1] == self.scope:
            return kept[2]
        with self.session.lock:
            rows = list_pods(self.session.store, self.scope)
        self._rows = (frame.view, self.scope, rows)
        return rows

    def render_frame(self, frame: Frame) -> None:
        tones = self.tones
        pods = self.pods(frame)
        access = self.session.store.access("Pod")
        note = span("Pods of ", tones.muted)
        note.append(lit(self.title or self.scope.label, "bold"))
        note.append(f"  {len(pods)} Pod{'s' if len(pods) != 1 else ''}", style=tones.muted)
        note.append("   enter opens a Pod · l its log", style=tones.muted)
        table = self.query_one("#pods", KeyedTable)
        if access.state is not AccessState.SYNCED:
            why = access.message or access.state.value
            note.append("\n⚠ Pods are not readable: ", style=tones.warn)
            note.append(lit(f"{access.state.value} ({why})" if access.message else why, tones.warn))
            note.append(" — this list may be incomplete", style=tones.muted)
            table.empty_text = f"Pods not readable ({access.state.value}): none to show"
        else:
            table.empty_text = ("no Pods in the cluster" if self.scope.kind == ALL
                                else f"no Pods of {self.title or self.scope.label}")
        self.query_one("#pods-note", Static).update(note)
        table.sync([pod_row(p, frame, tones) for p in pods])
        self._detail(table.selected_key())

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail(event.row_key.value)

    def _row(self, key: str | None) -> PodRow | None:
        return next((p for p in (self._rows[2] if self._rows else ()) if f"{p.namespace}/{p.name}" == key), None)

    def _detail(self, key: str | None) -> None:
        """The highlighted Pod's owner, Workload and containers, whole (the table cuts the Workload)."""
        pane = self.query_one("#pods-detail", Static)
        p = self._row(key)
        if p is None:
            pane.update("")
            return
        tones = self.tones
        t = lit(f"{p.namespace}/{p.name}", "bold")
        for label, value in (("owner", p.owner or "none"), ("Workload", p.workload or "none"),
                             ("containers", ", ".join(p.containers) or "none")):
            t.append(f"  {label} ", style=tones.muted)
            t.append(lit(value))
        pane.update(t)

    # keys ---------------------------------------------------------------------------------
    def action_logs(self) -> None:
        table = self.query_one("#pods", KeyedTable)
        row = self._row(table.selected_key())
        if row is None:
            self.notify("no Pod highlighted", severity="warning")
            return
        self.post_message(OpenLogs(ObjRef(kind="Pod", namespace=row.namespace, name=row.name), row.containers,
                                   row.started))


def pod_row(p: PodRow, frame: Frame, tones: Tones) -> Row:
    """A Pod's row with its cells and filter text made when read: the table draws one page, and at L the
    Text of 150k Pods built on every view was most of the dashboard's memory."""
    return Row(f"{p.namespace}/{p.name}", partial(pod_cells, p, frame.now, tones), partial(pod_meta, p))


def pod_cells(p: PodRow, now: datetime, tones: Tones) -> tuple:
    phase_tone = PHASE_TONE.get(p.phase, "warn")
    phase = lit(p.phase, tones.of(phase_tone))
    restarts = span(str(p.restarts), tones.warn) if p.restarts else str(p.restarts)
    node = lit(p.node) if p.node else span("– unscheduled", tones.warn)
    workload = p.workload.partition("/")[2] if p.workload.startswith(f"{p.namespace}/") else p.workload
    return (join(span(f"{p.namespace}/", tones.muted), lit(p.name)), phase, node,
            str(p.gpus) if p.gpus else "–", restarts, kube_age(p.created, now), lit(workload or "–"))


def pod_meta(p: PodRow) -> RowMeta:
    return RowMeta(kind="Pod", namespace=p.namespace, name=p.name,
                   text=f"{p.phase} {p.node or 'unscheduled'} {p.owner} {p.workload}")
