"""5 Sources: Jobs, RayJobs, RayServices, Deployments and Workloads that wait for admission or hold a
drain open — and why each one waits (QuotaReserved/Admitted reason and message, admission checks)."""

from __future__ import annotations

from bisect import bisect_left
from typing import cast

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from taudash.engine.session import Frame

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.format import kv_grid, objname
from .kit.messages import OpenQueue
from .kit.text import Tones, lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

SOURCE_KINDS = {"Job", "RayJob", "RayService", "Deployment", "Workload", "LocalQueue"}
COLS = [
    Col("kind", "kind", 10, hide=2),
    Col("name", "object", 16, ident=True),
    Col("queue", "cluster queue", 16, hide=3),
    Col("state", "state", 13, hide=1),
    Col("why", "why it waits", flex=True),
]
STATE_WORD = {"pending": "pending", "quotaReserved": "checks"}


class _Item:
    """One row: a waiting Workload (shown by its owner) or a source that only blocks a drain. Its
    cells, filter text and detail are built when asked for: at fleet scale ~50k Workloads wait and
    only one page of them is ever drawn."""

    # The item is its own table row (Row's shape: key, cells(), meta(), row_meta()): ~50k of them are
    # built on a first visit, so one small object each.
    __slots__ = ("key", "kind", "namespace", "name", "wl", "blocker", "blocks", "tones")

    def __init__(self, key: str, kind: str, namespace: str, name: str, wl, blocker, blocks: list[tuple[str, str]],
                 tones: Tones) -> None:
        self.key, self.kind, self.namespace, self.name = key, kind, namespace, name
        self.wl, self.blocker, self.blocks, self.tones = wl, blocker, blocks, tones

    def row_meta(self) -> RowMeta:
        return self.meta()

    @property
    def queue(self) -> str:
        if self.wl is not None:
            return self.wl.cluster_queue or "? unknown"
        return self.blocker.route or ""

    def why(self) -> Text:
        why = Text(end="")
        src = self.wl if self.wl is not None else self.blocker
        why.append(lit(src.reason, "bold"))
        if src.message or self.wl is None:
            why.append(": ")
            why.append(lit(src.message))
        return why

    def state(self) -> Text:
        if self.wl is None:
            return Text("⚠ blocks", style=self.tones.warn)
        wl = self.wl
        word = "inactive" if not wl.active else STATE_WORD.get(wl.status, wl.status)
        return _state_text(word, wl.active, bool(self.blocks), self.tones)

    def cells(self) -> tuple[Text, ...]:
        return (lit(self.kind), lit(objname(self.namespace, self.name)), lit(self.queue), self.state(), self.why())

    def meta(self) -> RowMeta:
        return RowMeta(kind=self.kind, namespace=self.namespace, name=self.name,
                       also=("Workload",) if self.wl is not None else (),  # a waiting Workload, shown by its owner
                       text=f"{self.queue} {self.why().plain} {' '.join(ws for ws, _ in self.blocks)}")

    def detail(self) -> list[tuple[str, str]]:
        if self.wl is None:
            b = self.blocker
            out = [("holds route", b.route or "unknown"), ("why", b.message)]
        else:
            wl = self.wl
            out = [
                ("Workload", objname(wl.namespace, wl.name)),
                ("waits on", f"{wl.condition} {wl.reason}"),
                ("message", wl.message),
                ("route", f"LocalQueue {wl.namespace}/{wl.queue_name} → ClusterQueue {wl.cluster_queue or 'unknown'}"),
            ]
        return out + [("blocks drain of", f"{ws}: {action}") for ws, action in self.blocks]


def _wkey(w) -> tuple[str, str]:
    return (w.namespace, w.name)


def _item_wkey(it: _Item) -> tuple[str, str]:
    return (it.namespace, it.wl.name)


def _sort_wkey(it: _Item) -> tuple[str, str]:
    # Where a row sorts among Workloads: its own name, or "<kind>-<name>" as Kueue names the Workload
    # of a source.
    return (it.namespace, it.wl.name if it.wl is not None else f"{it.kind.lower()}-{it.name}")


def _item_of(wl, tones: Tones) -> _Item:
    kind, name = (wl.owner_kind, wl.owner_name) if wl.owner_kind and wl.owner_name else ("Workload", wl.name)
    return _Item(f"{kind}|{wl.namespace}|{name}", kind, wl.namespace, name, wl, None, [], tones)


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
    HELP = """\
Sources: every object that waits — pending Workloads (shown by their owner: Job, RayJob,
RayService, Deployment) and sources that keep a workspace drain open.

why it waits   the Workload's QuotaReserved reason and message (e.g. insufficient quota in a
               flavor), then Admitted, then its admission checks (e.g. a MultiKueue check that no
               worker can satisfy). A deactivated Workload (spec.active=false) is never admitted.
⚠ blocks       the object holds a Required route of a deleting/retargeted workspace open.

Kinds that cannot be read are listed above the table as unknown: their objects are missing from
this list, not absent from the cluster.
enter   open the object (owner, Workload, queue and node links, YAML)
c       the waiting Workload's ClusterQueue: every pending Workload in Kueue's order, and what it admitted
l       its LocalQueue: the same, for the Workloads submitted through that LocalQueue"""

    BINDINGS = [
        Binding("c", "open_cluster_queue", "ClusterQueue", show=False),
        Binding("l", "open_local_queue", "LocalQueue", show=False),
    ]

    _last_rows: list[_Item]

    # A short table takes the height of its rows and the pane explaining the highlighted row the rest (a
    # tall terminal shows it whole); a long one stops at 60 percent of the screen and scrolls.
    DEFAULT_CSS = """
    SourcesScreen .fit { height: auto; margin: 0; }
    SourcesScreen .fit > KeyedTable { height: auto; max-height: 60vh; }
    SourcesScreen .detail-fill { height: 1fr; scrollbar-size-vertical: 1; }
    """
    _overlaid: dict[str, _Item]

    def compose_body(self) -> ComposeResult:
        with Vertical(id="body"):
            yield Static(id="src-unknown", classes="note")
            yield Section("SOURCES — WAITING AND BLOCKING",
                          KeyedTable(COLS, empty="✓ nothing waits for admission or blocks a drain", id="sources"),
                          classes="fit")
            with VerticalScroll(classes="detail-fill"):
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
        table = self.query_one("#sources", KeyedTable)
        rows = self._rows(frame.view, tones)
        table.sync(cast("list[Row]", rows))  # an _Item has Row's shape (one small object per row at fleet scale)
        self._detail(table.selected_key())

    def _rows(self, view, tones: Tones) -> list[_Item]:
        blockers: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
        first: dict[tuple[str, str, str], object] = {}  # the first blocker entry per object
        for w in view.workspaces:
            for b in w.drain.blockers:
                blockers.setdefault((b.kind, b.namespace, b.name), []).append((w.name, b.action or b.message))
                first.setdefault((b.kind, b.namespace, b.name), b)
        # Views share their waiting list until a row changes: the same list, blockers and theme as
        # last tick means the same rows — nothing to walk.
        last = getattr(self, "_sig", None)
        if last is not None and last[0] is view.waiting and last[1] == blockers and last[2] == tones:
            return self._last_rows
        rows = None
        if last is not None and last[2] == tones:
            rows = self._patch(last[0], view.waiting, tones)
        if rows is None:
            rows = self._walk(view.waiting, tones)
        if rows is None:  # several Workloads of one owner: the general walk dedups
            rows = self._collect(view.waiting, blockers, first, tones)
        elif blockers:
            rows = self._overlay(rows, blockers, first, tones)
        else:
            self._overlaid = {}
        self._sig = (view.waiting, blockers, tones)
        self._last_rows = rows
        return rows

    def _overlay(self, rows: list[_Item], blockers, first, tones: Tones) -> list[_Item]:
        """`rows` with the sources that hold a drain open marked, and the ones that only block a drain
        (nothing waits on them) placed where their Workload would sort ("job-<name>")."""
        assert self._plain is not None  # rows from _walk/_patch, which keep it
        by_tkey = self._plain[1]
        rows = list(rows)
        extra = []
        self._overlaid = {}
        for (kind, ns, name), blocks in blockers.items():
            it = by_tkey.get(f"{kind}|{ns}|{name}")
            if it is None and kind == "Workload":
                i = bisect_left(rows, (ns, name), key=_item_wkey)
                it = rows[i] if i < len(rows) and _item_wkey(rows[i]) == (ns, name) else None
            if it is None:
                extra.append(_Item(f"{kind}|{ns}|{name}", kind, ns, name, None, first[(kind, ns, name)], blocks, tones))
                continue
            at = bisect_left(rows, _item_wkey(it), key=_item_wkey)
            cur = rows[at]
            rows[at] = self._overlaid[cur.key] = _Item(cur.key, cur.kind, cur.namespace, cur.name, cur.wl, None,
                                                       cur.blocks + blocks, tones)
        for it in extra:
            self._overlaid[it.key] = it
            rows.insert(bisect_left(rows, _sort_wkey(it), key=_sort_wkey), it)
        return rows

    # Each waiting Workload is one row, in the view's order (namespace, name). `_plain` keeps that list
    # and the rows by table key; under a steady stream of events the session names the few rows that
    # moved and only those are rebuilt (`_patch`), else unchanged rows are reused by identity
    # (`_walk`); drain blockers are laid over it (`_overlay`). Two Workloads of one owner take the
    # general `_collect`.
    def _walk(self, waiting, tones: Tones) -> list[_Item] | None:
        plain = getattr(self, "_plain", None)
        by_id = plain[2] if plain is not None and plain[3] == tones else {}
        items = []
        for wl in waiting:
            it = by_id.get(id(wl))
            items.append(it if it is not None and it.wl is wl else _item_of(wl, tones))
        by_tkey = {it.key: it for it in items}
        if len(by_tkey) != len(items):
            self._plain = None
            return None  # several Workloads of one owner: the general walk dedups
        self._plain = (items, by_tkey, {id(it.wl): it for it in items}, tones)
        return list(items)

    def _patch(self, old, new, tones: Tones) -> list[_Item] | None:
        plain = getattr(self, "_plain", None)
        if plain is None or plain[3] != tones:
            return None
        keys = self.session.waiting_changes(old, new)
        if keys is None or len(keys) > 2_000:  # past this the walk is as cheap
            return None
        items, by_tkey, by_id, _ = plain
        for wkey in keys:
            i = bisect_left(new, wkey, key=_wkey)
            wl = new[i] if i < len(new) and _wkey(new[i]) == wkey else None
            at = bisect_left(items, wkey, key=_item_wkey)
            prev = items[at] if at < len(items) and _item_wkey(items[at]) == wkey else None
            if prev is not None:
                del by_tkey[prev.key]
                by_id.pop(id(prev.wl), None)
            if wl is None:
                if prev is not None:
                    del items[at]
                continue
            it = _item_of(wl, tones)
            if it.key in by_tkey:  # a second Workload of one owner
                self._plain = None
                return None
            by_tkey[it.key] = it
            by_id[id(wl)] = it
            if prev is None:
                items.insert(at, it)
            else:
                items[at] = it
        return list(items)  # a new list: the table tells "unchanged" by identity

    def _collect(self, waiting, blockers, first, tones: Tones) -> list[_Item]:
        blockers = dict(blockers)
        items: dict[str, _Item] = {}
        # An incremental view keeps the same row object for a Workload that did not change: reuse
        # its item (the table then skips redrawing it) instead of rebuilding it.
        cache = getattr(self, "_item_cache", {})
        if getattr(self, "_item_tones", None) != tones:
            cache = {}
        fresh: dict[int, tuple] = {}
        for wl in waiting:
            hit = cache.get(id(wl))
            # The common case at scale: the same row object as last tick and nothing blocks on it.
            if (hit is not None and hit[0] is wl
                    and (not blockers or (hit[2] not in blockers and hit[3] not in blockers))):
                items[hit[1].key] = hit[1]
                fresh[id(wl)] = hit
                continue
            kind, name = (wl.owner_kind, wl.owner_name) if wl.owner_kind and wl.owner_name else ("Workload", wl.name)
            by_owner, by_name = (kind, wl.namespace, name), ("Workload", wl.namespace, wl.name)
            blocks = blockers.pop(by_owner, []) + blockers.pop(by_name, []) if blockers else []
            key = f"{kind}|{wl.namespace}|{name}"
            items[key] = it = _Item(key, kind, wl.namespace, name, wl, None, blocks, tones)
            if not blocks:
                fresh[id(wl)] = (wl, it, by_owner, by_name)
        self._item_cache, self._item_tones = fresh, tones
        # The view lists waiting Workloads by namespace and name, and Kueue names a Workload after its
        # owner ("job-<name>-<hash>"): that order groups each namespace's sources already. Sources that
        # only block a drain are merged in by (namespace, kind, name), which sorts the rest too.
        extra = False
        for (kind, ns, name), blocks in blockers.items():
            key = f"{kind}|{ns}|{name}"
            if key not in items:
                # (a scan of every blocker per blocker was quadratic in a big drain)
                items[key] = _Item(key, kind, ns, name, None, first[(kind, ns, name)], blocks, tones)
                extra = True
        return sorted(items.values(), key=_order) if extra else list(items.values())

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail(event.row_key.value)

    def _selected_waiting(self):
        """The highlighted row's waiting Workload, or None (with a note) for a row that only blocks a drain."""
        table = self.query_one("#sources", KeyedTable)
        key = table.selected_key()
        it = table.row(key) if key else None
        wl = getattr(it, "wl", None)
        if wl is None:
            self.notify("this row does not wait in a queue (it only blocks a drain): no queue to open",
                        severity="warning", markup=False)
        return wl

    def action_open_cluster_queue(self) -> None:
        wl = self._selected_waiting()
        if wl is None:
            return
        if not wl.cluster_queue:
            self.notify(f"{wl.namespace}/{wl.name}: its LocalQueue {wl.queue_name or '?'} leads to no known "
                        "ClusterQueue", severity="warning", markup=False)
            return
        self.post_message(OpenQueue(wl.cluster_queue))

    def action_open_local_queue(self) -> None:
        wl = self._selected_waiting()
        if wl is None:
            return
        if not wl.queue_name:
            self.notify(f"{wl.namespace}/{wl.name} names no LocalQueue", severity="warning", markup=False)
            return
        self.post_message(OpenQueue(wl.cluster_queue or "", local_queue=(wl.namespace, wl.queue_name)))

    def _detail(self, key: str | None) -> None:
        pane = self.query_one("#src-detail", Static)
        plain = getattr(self, "_plain", None)
        it = None
        if key and plain is not None:
            it = (self._overlaid.get(key) if self._sig[1] else None) or plain[1].get(key)
        if it is None and key:
            it = self.query_one("#sources", KeyedTable).row(key)
        if it is None:
            pane.update("")
            return
        tones = self.tones
        t = span(f"{it.kind} ", tones.heading, end="\n")
        t.append(lit(objname(it.namespace, it.name), "bold"))
        rows = [(label, lit(value, tones.accent if label == "blocks drain of" else "")) for label, value in it.detail()]
        pane.update(Group(t, kv_grid(rows, tones.muted)))
