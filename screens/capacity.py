""":capacity — what can start now: per GPU flavor, its topology domains drawn as blocks of hosts and GPUs
(free, used, unhealthy, unknown), the gang slots of the ready profiles' shapes and of one the operator types,
the Pods whose GPUs block the next gang, and every GPU node. Enter on a node lists its Pods.

Free figures come from the capacity rule (engine/rules/capacity.py); a typed shape is placed by the same
function on the store, under the session's lock, once per capacity view. Unreadable Pods: "free capacity
unknown", never all free.

A tick draws only what changed (decision 145): the capacity part keeps the object of an unchanged flavor and
node, so a flavor whose object is the one drawn is not redrawn, a node row whose view is the one drawn is the
same Row (the table skips it), and a tick whose capacity view is the one drawn draws nothing. The maps draw at
most a screenful of hosts per flavor and follow the NODES filter (widgets/block_map.py).
"""

from __future__ import annotations

import re
from functools import partial

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from taudash.engine.pod_list import NODE, PodScope
from taudash.engine.rules.base import ObjRef, RuleContext
from taudash.engine.rules.capacity import (
    CapacityFlavor,
    CapacityNode,
    CapacityView,
    Fits,
    capacity_view,
    node_pods,
)
from taudash.engine.rules.gang import PLACEMENTS, Shape, ShapeError, shape
from taudash.engine.session import Frame

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.messages import OpenObject, OpenPods
from .kit.panel import Panel
from .kit.text import Tones, join, lit, span
from .widgets.block_map import BlockMap, free_text, host_cells, legend
from .widgets.filter_bar import FilterBar
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

SHAPE_COLS = [
    Col("flavor", "flavor", 16, ident=True),
    Col("shape", "shape", 14),
    Col("gang", "workers × GPUs, placement", 26),
    Col("count", "fit now", 7, right=True),
    Col("where", "where (gangs · free GPUs)", flex=True),
]
BLOCKER_COLS = [
    Col("pod", "Pod", 20, ident=True),
    Col("node", "node", 12),
    Col("domain", "domain", 10),
    Col("gpus", "GPUs", 4, right=True),
    Col("gain", "+gangs", 6, right=True),
    Col("workload", "Workload / owner", 18),
    Col("shape", "stops", flex=True),
]
NODE_COLS = [
    Col("node", "node", 14, ident=True),
    Col("flavor", "flavor", 10, hide=4),
    Col("domain", "accelerator-domain", 12, hide=5),
    Col("cells", "GPUs", 8, hide=2),
    Col("free", "free", 9, right=True, hide=1),
    Col("pods", "pods", 4, right=True, hide=3),
    Col("health", "health", flex=True),
]
POD_COLS = [
    Col("pod", "namespace/Pod", 20, ident=True, max_width=40),
    Col("phase", "phase", 9),
    Col("gpus", "GPUs", 4, right=True),
    Col("owner", "owner", 16, max_width=30),
    Col("workload", "Workload", flex=True),
]
SHAPE_SYNTAX = re.compile(r"^\s*(\d+)\s*(?:[x×*]\s*(\d+))?\s*([A-Za-z-]*)\s*$")
HEALTH_TONE = {"healthy": "ok", "degraded": "warn", "unknown": "unknown", "unhealthy": "bad"}


def parse_shape(text: str) -> Shape:
    """ "8x2 same-accelerator-domain" (GPUs per worker × workers, then the placement; × and the placement
    optional) as a checked Shape; ShapeError names what is wrong."""
    m = SHAPE_SYNTAX.match(text)
    if m is None:
        raise ShapeError(f"write GPUS[xWORKERS] [PLACEMENT], e.g. 8x2 same-accelerator-domain (got {text!r})")
    return shape(int(m.group(1)), int(m.group(2) or 1), m.group(3) or "")


def shape_label(sh: Shape) -> str:
    return f"{sh.gpus_per_worker}x{sh.workers} {sh.placement}"


class ShapeInput(ModalScreen[str | None]):
    """One line for a gang shape; enter places it, esc cancels."""

    DEFAULT_CSS = """
    ShapeInput { align: center middle; }
    ShapeInput > Vertical {
        width: 72; max-width: 96%; height: auto;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("A gang shape: GPUs per worker x workers, then the placement (empty clears)\n"
                              f"placements: {', '.join(PLACEMENTS)}"))
            yield Input(value=self.current, placeholder="8x2 same-accelerator-domain", id="shape-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class NodePodsScreen(Panel):
    """The Pods bound to one node (GPU holders first); enter opens a Pod, esc closes."""

    def __init__(self, node: str, title: Text, rows: list[Row]) -> None:
        super().__init__()
        self.node, self.title_text, self.rows = node, title, rows

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_text, id="node-pods-title")
            yield KeyedTable(POD_COLS, empty="no Pods on this node", id="node-pods")

    def on_mount(self) -> None:
        self.query_one("#node-pods", KeyedTable).sync(self.rows)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        meta = self.query_one("#node-pods", KeyedTable).meta(event.row_key.value or "")
        if meta is not None and meta.name:
            self.dismiss(None)
            self.app.post_message(OpenObject(ObjRef(kind="Pod", namespace=meta.namespace, name=meta.name)))


class CapacityScreen(DashScreen):
    HELP = """\
Capacity answers "what can start now?" from Nodes and Pods (not quota: that is the Pool screen).

MAP          per GPU flavor, each lowest topology domain (accelerator-domain, under its site ›
             network-domain) as a block, one line per host, one cell per GPU: ■ used  □ free (yellow:
             degraded, still placeable)  ✖ unhealthy  ? health or Pods unknown  ▫ cordoned, NotReady,
             deleting or tainted. A yellow block border: GPUs free, but fewer than 2 on every host.
             At most 64 hosts a flavor are drawn: `/` on NODES narrows the map to the hosts it matches.
GANG SLOTS   how many gangs of each ready profile's shape (and of the shape you typed) fit at once,
             and where: a worker needs its GPUs on one host, a same-<domain> gang all its workers in
             one domain.
BLOCKERS     the Pods whose GPUs, freed, would let the most more gangs start (the shape that is
             short of room).
NODES        every GPU node: its cells, free GPUs, Pods holding GPUs, health and why.
Unreadable Pods: "free capacity unknown" — never all free.

s            type a gang shape: 8x2 same-accelerator-domain (empty clears)
x            clear the typed shape
enter        on a node: its Pods (enter there opens one); on a blocker: the Pod
p            on a node: the Pods view of that node (every Pod bound to it; l there reads a log)
tab          next table (the filter `/` and sort `o` act on the focused one)"""

    DEFAULT_CSS = """
    CapacityScreen #body { height: 1fr; }
    CapacityScreen #cap-maps { height: auto; }
    CapacityScreen #cap-nodes-pane { height: 40%; margin: 0; }
    CapacityScreen #cap-nodes-pane > KeyedTable { height: 1fr; }
    """
    AUTO_FOCUS = "#cap-nodes"
    BINDINGS = [
        Binding("s", "shape", "type a shape", show=False),
        Binding("x", "clear_shape", "clear the shape", show=False),
        Binding("p", "pods", "Pods", show=False),
    ]
    FOOTER_KEYS = (("p", "node's Pods"),)

    def __init__(self, session, nav: str | None = None) -> None:
        super().__init__(session, nav)
        self.asked: Shape | None = None
        self._asked_view: tuple[object, Shape, CapacityView] | None = None  # (capacity, shape, placed) kept
        self._maps: dict[str, BlockMap] = {}
        self._drawn: tuple[CapacityView, CapacityView, Tones] | None = None  # (capacity, placed, tones) on screen
        # per flavor: (the flavor drawn, known, tones, its node rows by name); and the list handed to the table
        self._node_rows: dict[str, tuple[CapacityFlavor, bool, Tones, dict[str, tuple[object, Row]]]] = {}
        self._all_node_rows: tuple[tuple[object, ...], list[Row]] = ((), [])
        self._only: tuple[frozenset[str] | None, frozenset[str] | None] = (None, None)  # filtered keys → names

    def frame_signature(self, frame: Frame) -> tuple | None:
        sig = super().frame_signature(frame)
        return None if sig is None else sig + (self.asked,)

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static(id="cap-note", classes="note")
            yield Vertical(id="cap-maps")
            yield Section("GANG SLOTS", KeyedTable(SHAPE_COLS, empty="no ready profile asks for GPUs · s types a shape",
                                                   id="cap-shapes"))
            yield Section("BLOCKERS", KeyedTable(BLOCKER_COLS, empty="✓ no Pod stops a shape that finds no room",
                                                 id="cap-blockers"))
        # the nodes are a pane of their own below the picture: the focused table's cursor never scrolls it away
        yield Section("NODES", KeyedTable(NODE_COLS, empty="no GPU nodes", id="cap-nodes"), id="cap-nodes-pane")

    # data ---------------------------------------------------------------------------------
    def placed(self, frame: Frame) -> CapacityView:
        """The view, with every flavor's `fits` for the typed shape (placed once per capacity view: the
        part keeps its object while nothing capacity reads changed)."""
        view = frame.view.capacity
        if self.asked is None:
            return view
        kept = self._asked_view
        if kept is not None and kept[0] is view and kept[1] == self.asked:
            return kept[2]
        with self.session.lock:
            placed, _ = capacity_view(RuleContext(self.session.store, frame.now, self.session.config), self.asked)
        self._asked_view = (view, self.asked, placed)
        return placed

    def render_frame(self, frame: Frame) -> None:
        tones = self.tones
        cap = frame.view.capacity  # the maps and nodes: a typed shape changes only the gang slots and blockers
        placed = self.placed(frame)
        drawn = self._drawn
        if drawn is not None and drawn[0] is cap and drawn[1] is placed and drawn[2] == tones:
            return  # another part of the view moved: nothing here did
        self._drawn = (cap, placed, tones)
        self.query_one("#cap-note", Static).update(self._note(cap, tones))
        self.query_one("#cap-shapes", KeyedTable).sync(_shape_rows(placed, tones))
        self.query_one("#cap-blockers", KeyedTable).sync(_blocker_rows(placed, tones))
        self.query_one("#cap-nodes", KeyedTable).sync(self._node_list(cap, tones))
        self._sync_maps(cap)

    def _note(self, cap: CapacityView, tones: Tones) -> Text:
        t = legend(tones)
        if self.asked is not None:
            t.append("   shape ", style=tones.muted)
            t.append(shape_label(self.asked), style=tones.accent)
            t.append(" (x clears)", style=tones.muted)
        if not cap.known:
            t.append("\n⚠ free capacity unknown: ", style=tones.warn)
            t.append(lit(cap.unknown_reason or "not readable", tones.warn))
            t.append(" — no GPU is shown free and no gang is counted", style=tones.muted)
        elif not cap.flavors:
            t.append("\nno node carries a GPU class label (tau.azure.com/gpu-class): no GPU flavor to draw",
                     style=tones.muted)
        return t

    def _sync_maps(self, cap: CapacityView) -> None:
        box = self.query_one("#cap-maps", Vertical)
        names = [f.name for f in cap.flavors]
        for gone in [n for n in self._maps if n not in names]:
            self._maps.pop(gone).remove()
        only = self._filtered_nodes()
        for fl in cap.flavors:
            block = self._maps.get(fl.name)
            if block is None:
                block = self._maps[fl.name] = BlockMap()
                box.mount(block)
            block.show(fl, cap.known, only)

    def _filtered_nodes(self) -> frozenset[str] | None:
        """The node names the NODES filter lets through (None: no filter), for the maps to follow."""
        keys = self.query_one("#cap-nodes", KeyedTable).filtered_keys()
        if keys is not self._only[0]:
            self._only = (keys, None if keys is None else frozenset(k[5:] for k in keys if k.startswith("node:")))
        return self._only[1]

    def _node_list(self, cap: CapacityView, tones: Tones) -> list[Row]:
        """Every GPU node's row; the Row of a node whose view is the one drawn is the same object, and the
        list is the same while every flavor is (the table then diffs nothing)."""
        lists, kept = [], {}
        for fl in cap.flavors:
            last = self._node_rows.get(fl.name)
            if last is not None and last[0] is fl and last[1:3] == (cap.known, tones):
                kept[fl.name] = last
                lists.append(last)
                continue
            old = last[3] if last is not None and last[1:3] == (cap.known, tones) else {}
            rows: dict[str, tuple[object, Row]] = {}
            for n in fl.nodes:
                hit = old.get(n.name)
                if hit is None or hit[0] is not n:
                    hit = (n, _node_row(fl, n, cap.known, tones))
                rows[n.name] = hit
            kept[fl.name] = entry = (fl, cap.known, tones, rows)
            lists.append(entry)
        self._node_rows = kept
        ident, prev = tuple(e[0] for e in lists), self._all_node_rows[0]
        if len(ident) != len(prev) or any(a is not b for a, b in zip(ident, prev, strict=True)):
            self._all_node_rows = (ident, [row for e in lists for _, row in e[3].values()])
        return self._all_node_rows[1]

    def _follow_filter(self) -> None:
        if self._drawn is not None:
            self._sync_maps(self._drawn[0])

    def on_filter_bar_applied(self, event: FilterBar.Applied) -> None:
        super().on_filter_bar_applied(event)
        self._follow_filter()

    def action_back(self) -> None:
        super().action_back()
        self._follow_filter()

    # keys ---------------------------------------------------------------------------------
    def action_shape(self) -> None:
        self.app.push_screen(ShapeInput(shape_label(self.asked) if self.asked else ""), self._shape_typed)

    def _shape_typed(self, text: str | None) -> None:
        if text is None:
            return
        if not text.strip():
            self.action_clear_shape()
            return
        try:
            self.asked = parse_shape(text)
        except ShapeError as exc:
            self.notify(f"bad shape: {exc}", severity="error")
            return
        self._rerender()

    def action_clear_shape(self) -> None:
        if self.asked is not None:
            self.asked = None
            self._rerender()

    def _rerender(self) -> None:
        self.invalidate()
        if self.frame is not None:
            self.show(self.frame)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        table = event.data_table
        key = event.row_key.value or ""
        if isinstance(table, KeyedTable) and table.id == "cap-nodes" and key.startswith("node:"):
            event.stop()
            event.prevent_default()
            self.open_node(key[5:])
            return
        super().on_data_table_row_selected(event)

    def action_pods(self) -> None:
        key = self.query_one("#cap-nodes", KeyedTable).selected_key() or ""
        if not key.startswith("node:"):
            self.notify("no node highlighted (the NODES table)", severity="warning")
            return
        self.post_message(OpenPods(PodScope(NODE, key[5:])))

    def open_node(self, node: str) -> None:
        tones = self.tones
        with self.session.lock:
            pods = node_pods(self.session.store, node)
        cap = self.frame.view.capacity if self.frame is not None else None
        title = span("Pods on ", tones.heading)
        title.append(lit(node, "bold"))
        known = cap is not None and cap.known
        if not known:
            title.append("\n⚠ Pods are not readable: this list may be incomplete", style=tones.warn)
        rows = [Row(f"{p.namespace}/{p.name}", (
            join(span(f"{p.namespace}/", tones.muted), lit(p.name)), lit(p.phase), str(p.gpus) if p.gpus else "–", lit(p.owner or "–"),
            lit(p.workload or "–"),
        ), RowMeta(kind="Pod", namespace=p.namespace, name=p.name, text=f"{p.owner} {p.workload}")) for p in pods]
        self.app.push_screen(NodePodsScreen(node, title, rows))


# --- rows --------------------------------------------------------------------------------------------


def _fits_where(f: Fits, tones: Tones) -> Text:
    if f.count is None:
        return span("? free capacity unknown", tones.unknown)
    if not f.where:
        t = span("no room", tones.warn)
        if f.best_free is not None and f.best_domain:
            t.append(lit(f" · best {f.best_domain}: {f.best_free} free, {f.best_workers or 0}/{f.workers} workers",
                         tones.muted))
        return t
    t = Text(end="")
    for i, w in enumerate(f.where[:4]):
        if i:
            t.append(" · ", style=tones.muted)
        t.append(lit(w.domain or "flavor"))
        t.append(f" {w.count}·{w.free}", style=tones.muted)
    if len(f.where) > 4:
        t.append(f" +{len(f.where) - 4} more", style=tones.muted)
    return t


def _fits_row(fl: CapacityFlavor, f: Fits, tones: Tones) -> Row:
    label = f.profile or "typed"
    count = span("?", tones.unknown) if f.count is None else span(str(f.count), tones.ok if f.count else tones.warn)
    return Row(f"{fl.name}|{label}", (
        lit(fl.name), lit(label, tones.accent if not f.profile else ""),
        f"{f.workers} × {f.gpus_per_worker}, {f.placement}", count, _fits_where(f, tones),
    ), RowMeta(kind="ResourceFlavor", name=fl.name, text=f"{label} {f.placement}"))


def _shape_rows(cap: CapacityView, tones: Tones) -> list[Row]:
    rows = []
    for fl in cap.flavors:
        if fl.fits is not None:
            rows.append(_fits_row(fl, fl.fits, tones))
        rows.extend(_fits_row(fl, f, tones) for f in fl.shapes)
    return rows


def _blocker_rows(cap: CapacityView, tones: Tones) -> list[Row]:
    """The blockers of every shape that fits nowhere (the typed one first), each Pod once."""
    rows, seen = [], set()
    for fl in cap.flavors:
        short = [f for f in ([fl.fits] if fl.fits is not None else []) + list(fl.shapes) if f.count == 0]
        for f in short:
            for b in f.blockers:
                key = f"{b.namespace}/{b.name}"
                if key in seen:
                    continue
                seen.add(key)
                pod = span(f"{b.namespace}/", tones.muted)
                pod.append(lit(b.name))
                rows.append(Row(key, (
                    pod, lit(b.node), lit(b.domain), str(b.gpus), span(f"+{b.slots_gained}", tones.accent),
                    lit(b.workload or b.owner or "–"),
                    lit(f"{f.profile or 'typed'} ({f.workers}×{f.gpus_per_worker})"),
                ), RowMeta(kind="Pod", namespace=b.namespace, name=b.name, text=f"{b.node} {b.workload} {b.owner}")))
    return rows


def _node_row(fl: CapacityFlavor, n: CapacityNode, known: bool, tones: Tones) -> Row:
    """A node's row; its cells and meta are built when the table draws or filters it (one page of thousands)."""

    def cells() -> tuple[Text | str, ...]:
        health = tones.mark(HEALTH_TONE.get(n.health, "unknown"), n.health)
        if n.reasons:
            health.append("  ")
            health.append(lit(", ".join(n.reasons), tones.muted))
        return (lit(n.name), lit(fl.gpu_class), lit(n.domains.get("accelerator-domain") or "–"), host_cells(n, tones),
                free_text(n.free if known else None, n.allocatable, tones),
                str(n.pods) if known else span("?", tones.unknown), health)

    meta = partial(RowMeta, kind="Node", name=n.name, text=f"{fl.name} {n.health} {' '.join(n.reasons)} "
                   f"{' '.join(v for v in n.domains.values() if v)}")
    return Row(f"node:{n.name}", cells, meta)
