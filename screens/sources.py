"""5 Sources: Jobs, RayJobs, RayServices, Deployments and Workloads that wait for admission or hold a
drain open — and why each one waits (QuotaReserved/Admitted reason and message, admission checks)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from engine.session import Frame

from .base import DashScreen
from .filtering import RowMeta
from .format import kv_grid, objname
from .text import Tones, lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

SOURCE_KINDS = {"Job", "RayJob", "RayService", "Deployment", "Workload", "LocalQueue"}
COLS = [
    Col("kind", "kind", 10),
    Col("name", "object", 24),
    Col("queue", "cluster queue", 16),
    Col("state", "state", 13),
    Col("why", "why it waits", flex=True),
]
STATE_WORD = {"pending": "pending", "quotaReserved": "checks"}


@dataclass
class _Item:
    key: str
    kind: str
    namespace: str
    name: str
    queue: str
    state: Text | Callable[[], Text]  # waiting Workloads build their Text only when their row is drawn
    why: Text | Callable[[], Text]
    detail: list[tuple[str, str]]
    blocks: list[str]
    row: Row | None = None  # built once per item: an unchanged Workload costs nothing next tick
    why_plain: str = ""

    def cells(self) -> tuple[Text, ...]:
        state = self.state() if callable(self.state) else self.state
        why = self.why() if callable(self.why) else self.why
        return (lit(self.kind), lit(objname(self.namespace, self.name)), lit(self.queue), state, why)


def _order(it: _Item) -> tuple[str, str, str]:
    return (it.namespace, it.kind, it.name)


def _state_text(word: str, active: bool, blocks: bool, tones: Tones) -> Text:
    if blocks:
        return span(f"⚠ {word[:4]}·blocks", tones.warn)
    return Text(f"◐ {word}", style=tones.warn if active else tones.muted, end="")


def _why_text(reason: str, message: str) -> Text:
    why = Text(end="")
    why.append(lit(reason, "bold"))
    if message:
        why.append(": ")
        why.append(lit(message))
    return why


class SourcesScreen(DashScreen):
    NAV = "sources"
    HELP = """\
Sources: every object that waits — pending Workloads (shown by their owner: Job, RayJob,
RayService, Deployment) and sources that keep a workspace drain open.

why it waits   the Workload's QuotaReserved reason and message (e.g. insufficient quota in a
               flavor), then Admitted, then its admission checks (e.g. a MultiKueue check that no
               worker can satisfy). A deactivated Workload (spec.active=false) is never admitted.
⚠ blocks       the object holds a Required route of a deleting/retargeted workspace open.

Kinds that cannot be read are listed above the table as unknown: their objects are missing from
this list, not absent from the cluster.
enter   open the object (owner, Workload, queue and node links, YAML)"""

    def compose_body(self) -> ComposeResult:
        with Vertical(id="body"):
            yield Static(id="src-unknown", classes="note")
            yield Section("WAITING AND BLOCKING", KeyedTable(COLS, empty="✓ nothing waits for admission or blocks a drain",
                                                             id="sources"), classes="primary")
            with VerticalScroll(classes="detail-scroll"):
                yield Static(id="src-detail", classes="detail")

    def render_frame(self, frame: Frame) -> None:
        tones = self.tones
        unknown = [p for p in frame.freshness.problems if p.kind in SOURCE_KINDS]
        note = self.query_one("#src-unknown", Static)
        note.display = bool(unknown)
        if unknown:
            t = span("? unknown: ", tones.warn)
            t.append(lit(" · ".join(p.describe(frame.now.timestamp()) for p in unknown), tones.warn))
            t.append(" — objects of these kinds cannot be listed here", style=tones.muted)
            note.update(t)
        self._items = self._collect(frame, tones)
        rows = []
        for it in self._items.values():
            if it.row is None:
                it.row = Row(it.key, it.cells,
                             RowMeta(kind=it.kind, namespace=it.namespace, name=it.name,
                                     text=f"{it.queue} {it.why_plain} {' '.join(it.blocks)}"))
            rows.append(it.row)
        table = self.query_one("#sources", KeyedTable)
        table.sync(rows)
        self._detail(table.selected_key())

    def _collect(self, frame: Frame, tones: Tones) -> dict[str, _Item]:
        view = frame.view
        blockers: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
        first: dict[tuple[str, str, str], object] = {}  # the first blocker entry per object
        for w in view.workspaces:
            for b in w.drain.blockers:
                blockers.setdefault((b.kind, b.namespace, b.name), []).append((w.name, b.action or b.message))
                first.setdefault((b.kind, b.namespace, b.name), b)
        items: dict[str, _Item] = {}
        # Thousands of Workloads wait at fleet scale, and an incremental view keeps the same row object
        # for a Workload that did not change: reuse its item instead of rebuilding every Text each tick.
        cache = getattr(self, "_item_cache", {})
        if getattr(self, "_item_tones", None) != tones:
            cache = {}
        fresh: dict[int, tuple] = {}
        for wl in view.waiting:
            hit = cache.get(id(wl))
            # The common case at scale: the same row object as last tick and nothing blocks on it.
            if hit is not None and hit[0] is wl and (not blockers or (hit[2] not in blockers and hit[3] not in blockers)):
                items[hit[1].key] = hit[1]
                fresh[id(wl)] = hit
                continue
            kind, name = (wl.owner_kind, wl.owner_name) if wl.owner_kind and wl.owner_name else ("Workload", wl.name)
            by_owner, by_name = (kind, wl.namespace, name), ("Workload", wl.namespace, wl.name)
            blocks = blockers.pop(by_owner, []) + blockers.pop(by_name, [])
            key = f"{kind}|{wl.namespace}|{name}"
            word = "inactive" if not wl.active else STATE_WORD.get(wl.status, wl.status)
            state = partial(_state_text, word, wl.active, bool(blocks), tones)
            why = partial(_why_text, wl.reason, wl.message)
            queue = wl.cluster_queue or "? unknown"
            detail = [
                ("Workload", objname(wl.namespace, wl.name)),
                ("waits on", f"{wl.condition} {wl.reason}"),
                ("message", wl.message),
                ("route", f"LocalQueue {wl.namespace}/{wl.queue_name} → ClusterQueue {wl.cluster_queue or 'unknown'}"),
            ]
            detail += [("blocks drain of", f"{ws}: {action}") for ws, action in blocks]
            items[key] = _Item(key, kind, wl.namespace, name, queue, state, why, detail, [ws for ws, _ in blocks],
                               why_plain=f"{wl.reason}: {wl.message}" if wl.message else wl.reason)
            if not blocks:
                fresh[id(wl)] = (wl, items[key], by_owner, by_name)
        self._item_cache, self._item_tones = fresh, tones
        for (kind, ns, name), blocks in blockers.items():
            key = f"{kind}|{ns}|{name}"
            if key in items:
                continue
            b = first[(kind, ns, name)]  # (a scan of every blocker per blocker was quadratic in a big drain)
            why = Text(end="")
            why.append(lit(b.reason, "bold"))
            why.append(": ")
            why.append(lit(b.message))
            detail = [("holds route", b.route or "unknown"), ("why", b.message)]
            detail += [("blocks drain of", f"{ws}: {action}") for ws, action in blocks]
            items[key] = _Item(key, kind, ns, name, b.route or "", Text("⚠ blocks", style=tones.warn), why, detail,
                               [ws for ws, _ in blocks], why_plain=why.plain)
        return {it.key: it for it in sorted(items.values(), key=_order)}

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail(event.row_key.value)

    def _detail(self, key: str | None) -> None:
        pane = self.query_one("#src-detail", Static)
        it = getattr(self, "_items", {}).get(key or "")
        if it is None:
            pane.update("")
            return
        tones = self.tones
        t = span(f"{it.kind} ", tones.heading, end="\n")
        t.append(lit(objname(it.namespace, it.name), "bold"))
        rows = [(label, lit(value, tones.accent if label == "blocks drain of" else "")) for label, value in it.detail]
        pane.update(Group(t, kv_grid(rows, tones.muted)))
