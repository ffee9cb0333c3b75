"""ClusterQueue and LocalQueue detail: one queue's pending Workloads in Kueue's order and its admitted
ones. 3 → Enter on a ClusterQueue opens the ClusterQueue view; `l` there opens the highlighted row's
LocalQueue, and a workspace's detail opens its LocalQueue the same way (one screen class, the
LocalQueue view a subclass). Positions come from Kueue's visibility API when the session can fetch it
(`session.queue_positions`, an async `(cq=… | lq=(ns, name)) → QueuePositions` the live program sets;
the LocalQueue view asks the LocalQueue endpoint), else from queue_order's estimate over the store,
labelled `estimated`; the fetch runs in a worker. Enter on a pending Workload shows why it waits
(engine/rules/why.py).

Fleet scale (a ClusterQueue with 10k pending): the table holds one page (KeyedTable pages by 100),
rows are built lazily (a row's cells are made only when its page is drawn), and the row list is kept
while the positions and the view are the same: a tick sorts and builds nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import cast

from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from taudash.engine.model import ClusterQueue, LocalQueue, Quantity, Workload
from taudash.engine.pod_list import CLUSTER_QUEUE, LOCAL_QUEUE, PodScope
from taudash.engine.rules.base import ObjRef, RuleContext
from taudash.engine.rules.capacity import TopologyWait
from taudash.engine.rules.eta import admission_times, estimate_wait, human
from taudash.engine.rules.queue_order import (
    ESTIMATED,
    FROM_API,
    MAX_LIMIT,
    QueuePositions,
    estimated_positions,
    in_backoff,
    parse_time,
)
from taudash.engine.rules.why import WorkloadWaitReport, why_waiting_report, workload_requests
from taudash.engine.session import Frame, Session
from taudash.engine.text import place
from taudash.engine.view import ClusterView
from taudash.engine.wait_words import report_lines

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.format import short_flavor
from .kit.messages import OpenObject, OpenPods, OpenQueue
from .kit.panel import Panel
from .kit.text import Tones, lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

PENDING_COLS = [
    Col("pos", "#", 4, right=True),
    Col("lqpos", "#lq", 4, right=True),
    Col("name", "workload", 30, ident=True),
    Col("lq", "queue", 10),
    Col("prio", "prio", 6, right=True),
    Col("age", "age", 5, right=True),
    Col("gpus", "GPUs", 7),
    Col("state", "state", 10),
    Col("reason", "reason", flex=True),
]
ADMITTED_COLS = [
    Col("name", "workload", 16, ident=True),
    Col("lq", "local queue", 12),
    Col("prio", "prio", 6, right=True),
    Col("since", "since", 6, right=True),
    Col("flavors", "flavors · GPUs", 22),
    Col("borrow", "queue borrowing", 24),
]
GPU_SUFFIX = "/gpu"


def age_text(then: datetime | None, now: datetime) -> str:
    if then is None:
        return "?"
    s = max(0, int((now - then).total_seconds()))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def gpu_requests(wl) -> str:
    """Requested GPUs by resource (a pending Workload has no flavor yet): "8 gpu"."""
    req = workload_requests(wl)
    parts = [f"{q.human()} {name.rsplit('/', 1)[-1]}" for name, q in sorted(req.items()) if name.endswith(GPU_SUFFIX)]
    return ", ".join(parts) or "–"


def assigned_flavors(wl) -> str:
    """flavor·GPUs of an admitted Workload's assignment: "h100 ×8"."""
    adm = wl.status.admission
    out: dict[str, float] = {}
    for psa in adm.pod_set_assignments if adm is not None else ():
        for res, flavor in psa.flavors.items():
            if not res.endswith(GPU_SUFFIX):
                continue
            q = psa.resource_usage.get(res)
            out[flavor] = out.get(flavor, 0.0) + (q.as_float() if isinstance(q, Quantity) else 0.0)
        if not any(r.endswith(GPU_SUFFIX) for r in psa.flavors):
            for flavor in set(psa.flavors.values()):
                out.setdefault(flavor, 0.0)
    return ", ".join(f"{short_flavor(f)} ×{n:g}" if n else short_flavor(f) for f, n in sorted(out.items())) or "–"


def pending_state(wl, now: datetime, tones: Tones) -> tuple[Text, Text]:
    """(state, reason) of a pending Workload from its own conditions."""
    if wl is None:
        return Text("not in store", style=tones.unknown), Text("")
    qr = wl.condition("QuotaReserved")
    reason = lit(f"{qr.reason}: {qr.message}" if qr is not None and qr.message else (qr.reason if qr else ""))
    if in_backoff(wl, now):
        return Text("backoff", style=tones.warn), reason
    if wl.condition("Evicted") is not None and wl.condition("Evicted").status == "True":
        return Text("requeued", style=tones.warn), reason
    if qr is not None and qr.reason in ("Inadmissible", "Suspended"):
        return Text(qr.reason.lower(), style=tones.bad), reason
    return Text("pending", style=tones.muted), reason


def room_text(wait: TopologyWait, tones: Tones) -> Text:
    """ "WAITING FOR ROOM: quota exists but no domain can place this shape (…): the best … has N free GPUs …" """
    t = span("WAITING FOR ROOM: ", tones.warn)
    t.append(lit(wait.message))
    if wait.from_kueue:
        t.append(" (Kueue: TopologyPlacementFailed)", style=tones.muted)
    return t


def why_text(report: WorkloadWaitReport | None, tones: Tones) -> Text:
    """The wait report as text: the same words `taudash why` prints (engine/wait_words.py), styled."""
    if report is None:
        return Text("the Workload is no longer in the store", style=tones.unknown)
    styles: dict[str, Style | str] = {"heading": tones.heading, "muted": tones.muted, "warn": tones.warn,
                                      "bold": "bold", "": ""}
    d = report.to_contract()
    t = span("Why is ", tones.heading)
    t.append(lit(f"{d['workload']['namespace']}/{d['workload']['name']}", "bold"))
    t.append(" waiting?\n", style=tones.heading)
    for i, line in enumerate(report_lines(d, ahead_shown=10)):
        if i:
            t.append("\n")
        for style, text in line:
            t.append(lit(text, styles.get(style, "")))
    return t


class WhyScreen(Panel):
    """The wait report of one Workload in a modal: esc or q closes it."""

    def __init__(self, text: Text) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(), VerticalScroll():
            yield Static(self.text, id="why-text")


class QueueDetailScreen(DashScreen):
    """One ClusterQueue (`local_queue` None) or one LocalQueue: the same two lists, the LocalQueue view
    narrowed to that LocalQueue's Workloads (LocalQueueDetailScreen)."""

    TITLE_TEXT = "ClusterQueue detail"
    HELP = """\
ClusterQueue detail: one queue's pending Workloads in Kueue's order, and its admitted ones.

PENDING    #: position in the ClusterQueue (#1 = the next head), #lq: position in its LocalQueue,
           priority (with any priority boost), age, requested GPUs, state and the QuotaReserved
           reason. Positions come from Kueue's visibility API when this session can ask it;
           otherwise they are estimated from the objects (priority, then queue-order time) and
           labelled "estimated"; "unknown" when the API is forbidden — never an empty queue.
           A long queue shows 100 rows at a time: ] next page, [ previous, / filters them all.
           "no room": WAITING FOR ROOM — quota exists but no topology domain has the free GPUs its
           gang needs now (Kueue's TopologyPlacementFailed, or the capacity view: see :capacity).
ADMITTED   Workloads holding quota here: since when, flavors and GPUs, and whether the queue is
           borrowing in those flavors.

enter  on a pending Workload: why it waits (ranked reasons, quota, who is ahead, preemption) and
       when it is likely admitted: an 80% interval from the queue's recent admissions, or unknown
l      open the highlighted Workload's LocalQueue (its own pending and admitted lists)
p      the Pods of the Workloads admitted to this ClusterQueue (phase, node, GPUs; l there reads a log)
y      open the ClusterQueue object (YAML)        r  fetch the positions again
o/O    sort by the next column / reverse it
esc    back"""

    BINDINGS = [
        Binding("y", "open_object", "object/YAML", show=False),
        Binding("r", "refresh_positions", "refresh positions", show=False),
        Binding("l", "open_local_queue", "LocalQueue", show=False),
        Binding("p", "pods", "Pods", show=False),
    ]
    FOOTER_KEYS = (("p", "Pods"),)

    def __init__(self, session: Session, name: str, nav: str | None = None,
                 local_queue: tuple[str, str] | None = None) -> None:
        super().__init__(session, nav)
        self.cq_name = name
        self.local_queue = local_queue  # (namespace, name): the LocalQueue view
        self.positions: QueuePositions | None = None
        self.fetches = 0  # positions fetched (the worker's completions)
        self._pending: list[Row] = []  # the pending rows shown, kept while positions and view are the same
        self._pending_for: tuple | None = None
        self._pending_view: ClusterView | None = None
        self._pending_at: dict[str, int] = {}
        self._gpu_text: dict[tuple[str, str], tuple[object, str]] = {}
        self._admitted: list[Row] = []
        self._admitted_for: tuple | None = None
        self._room_for: ClusterView | None = None
        self._room: dict[tuple[str, str], TopologyWait] = {}

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static(id="qd-title", classes="tile")
            yield Section("PENDING (Kueue's order)",
                          KeyedTable(PENDING_COLS, empty="fetching positions…", id="qd-pending"),
                          classes="primary")
            yield Section("ADMITTED", KeyedTable(ADMITTED_COLS, empty="nothing admitted", id="qd-admitted"))

    def on_mount(self) -> None:
        super().on_mount()
        self.action_refresh_positions()

    def action_pods(self) -> None:
        """The Pods of this queue's Workloads (a ClusterQueue's: those admitted to it)."""
        if self.local_queue is not None:
            ns, name = self.local_queue
            self.post_message(OpenPods(PodScope(LOCAL_QUEUE, name, ns)))
        else:
            self.post_message(OpenPods(PodScope(CLUSTER_QUEUE, self.cq_name)))

    # positions ---------------------------------------------------------------------------
    def _which(self) -> dict:
        return {"lq": self.local_queue} if self.local_queue is not None else {"cq": self.cq_name}

    def action_refresh_positions(self) -> None:
        fetch: Callable | None = getattr(self.session, "queue_positions", None)
        if fetch is not None:
            self._fetch_live(fetch)
        else:
            self._estimate()

    @work(exclusive=True, group="queue-positions")
    async def _fetch_live(self, fetch: Callable) -> None:
        # The whole queue (the API's default page is 1000): the table pages it, not the request.
        self._positions_arrived(await fetch(**self._which(), limit=MAX_LIMIT))

    @work(exclusive=True, group="queue-positions", thread=True)
    def _estimate(self) -> None:
        now = self.frame.now if self.frame is not None else datetime.now().astimezone()
        why = f"{self.session.mode.lower()} session: no visibility API to ask"
        with self.session.lock:
            pos = estimated_positions(RuleContext(self.session.store, now, self.session.config), **self._which(),
                                      limit=MAX_LIMIT, access="Absent", why=why)
        self.app.call_from_thread(self._positions_arrived, pos)

    def _positions_arrived(self, pos: QueuePositions) -> None:
        self.positions = pos
        if self.local_queue is not None and pos.cluster_queue:
            self.cq_name = pos.cluster_queue
        self.fetches += 1
        if self.frame is not None:
            self.render_frame(self.frame)

    # rendering ---------------------------------------------------------------------------
    def _title(self, q, tones: Tones) -> Text:
        title = span("ClusterQueue ", tones.heading)
        title.append(lit(self.cq_name, "bold"))
        if q is None:
            title.append("  not in the store (deleted?)", style=tones.warn)
        else:
            title.append(lit(f" · cohort {q.cohort or 'none'} · {q.queueing_strategy} · stopPolicy {q.stop_policy}"))
            title.append(lit(f" · status pnd·rsv·adm {q.pending}·{q.reserving}·{q.admitted}", tones.muted))
        return title

    def render_frame(self, frame: Frame) -> None:
        tones, now = self.tones, frame.now
        if self.local_queue is not None:
            lq = self.session.store.get(LocalQueue, self.local_queue[1], self.local_queue[0])
            if lq is not None and lq.spec.cluster_queue:
                self.cq_name = lq.spec.cluster_queue
        q = next((x for x in frame.view.cluster_queues if x.name == self.cq_name), None)
        title = self._title(q, tones)
        title.append("\n")
        pos = self.positions  # its label says "positions …" or "estimated order": no prefix to repeat it
        if pos is None:
            title.append("fetching positions…", style=tones.muted)
        else:
            style = "" if pos.source == FROM_API else tones.warn if pos.source == ESTIMATED else tones.unknown
            title.append(lit(pos.label, style))
            if pos.items is not None:
                title.append(lit(f" · {len(pos.items)} pending", tones.muted))
        self.query_one("#qd-title", Static).update(title)
        table = self.query_one("#qd-pending", KeyedTable)
        # what an empty list means: not asked yet, asked and empty, or not known (the API refused)
        table.empty_text = ("fetching positions…" if pos is None else
                            "no pending Workloads" if pos.items is not None else pos.label)
        key = (id(pos), tones)
        if key != self._pending_for:  # new positions: one lazy row per item
            self._pending_for, self._pending_view = key, frame.view
            self._pending = self._pending_rows(pos, now, tones)
            self._pending_at = {r.key: i for i, r in enumerate(self._pending)}
            self._gpu_text = {}  # only the Workloads of these positions are looked up again
        elif frame.view is not self._pending_view:
            # The same positions, a newer view: only the rows on screen are made again (their state,
            # reason and age may have moved); the others stay unbuilt until their page is drawn.
            self._pending_view = frame.view
            rows = list(self._pending)
            for k in table.visible_keys():
                i = self._pending_at.get(k)
                if i is not None:
                    old = rows[i]
                    item, ns, name = cast("partial[tuple]", old.cells).args[:3]
                    rows[i] = Row(old.key, partial(self._pending_cells, item, ns, name, now, tones), old.meta)
            self._pending = rows
        table.sync(self._pending)
        akey = (frame.view, tones, self.cq_name)
        if akey != self._admitted_for:
            self._admitted_for, self._admitted = akey, self._admitted_rows(q, now, tones)
        self.query_one("#qd-admitted", KeyedTable).sync(self._admitted)

    def _pending_rows(self, pos: QueuePositions | None, now: datetime, tones: Tones) -> list[Row]:
        """One lazy row per item: a 10k queue builds 10k small Row objects; cells only for the page drawn."""
        if pos is None or pos.items is None:
            return []
        rows = []
        for item in pos.items:
            m = item.get("metadata") or {}
            ns, name = m.get("namespace") or "", m.get("name") or ""
            rows.append(Row(f"wl:{ns}/{name}", partial(self._pending_cells, item, ns, name, now, tones),
                            RowMeta(kind="Workload", name=name, namespace=ns)))
        return rows

    def _pending_cells(self, item: dict, ns: str, name: str, now: datetime, tones: Tones) -> tuple:
        m = item.get("metadata") or {}
        wl = self.session.store.get(Workload, name, ns)
        state, reason = pending_state(wl, now, tones)
        room = self._room_waits().get((ns, name))
        if room is not None:
            state, reason = Text("no room", style=tones.warn), room_text(room, tones)
        label = Text(f"{ns}/", style=tones.muted)
        label.append(lit(name))
        return (
            place(item.get("positionInClusterQueue")),
            place(item.get("positionInLocalQueue")),
            label,
            lit(item.get("localQueueName") or ""),
            str(item.get("priority", "?")),
            age_text(parse_time(m.get("creationTimestamp")), now),
            self._gpus(ns, name, wl),
            state,
            reason,
        )

    def _room_waits(self) -> dict[tuple[str, str], TopologyWait]:
        """The pending Workloads quota would admit but no domain can place (capacity's topology waits), by
        (namespace, name), once per view."""
        view = self.frame.view if self.frame is not None else None
        if view is None:
            return {}
        if self._room_for is not view:
            self._room_for = view
            self._room = {(w.namespace, w.name): w for w in view.capacity.topology_waits}
        return self._room

    def _gpus(self, ns: str, name: str, wl) -> str:
        """gpu_requests, kept while the store holds the same Workload object (a tick remakes the rows on
        screen; their requests rarely change, and summing pod sets is most of a row's cost)."""
        if wl is None:
            return "?"
        hit = self._gpu_text.get((ns, name))
        if hit is None or hit[0] is not wl:
            hit = self._gpu_text[(ns, name)] = (wl, gpu_requests(wl))
        return hit[1]

    def _holders(self) -> list:
        """The Workloads holding quota here, read through the namespace index (a fleet has 100k Workloads):
        the LocalQueue's namespace, or the namespaces of the LocalQueues that name this ClusterQueue. A
        Workload admitted through a LocalQueue since deleted or pointed elsewhere is not listed."""
        store = self.session.store
        if self.local_queue is not None:
            ns, name = self.local_queue
            return [w for w in store.list(Workload, ns) if w.spec.queue_name == name and w.quota_reserved
                    and not w.finished and w.status.admission is not None]
        namespaces = {lq.namespace for lq in store.list(LocalQueue) if lq.spec.cluster_queue == self.cq_name}
        return [w for ns in sorted(n for n in namespaces if n) for w in store.list(Workload, ns)
                if w.quota_reserved and not w.finished and w.status.admission is not None
                and w.status.admission.cluster_queue == self.cq_name]

    def _admitted_rows(self, q, now: datetime, tones: Tones) -> list[Row]:
        borrowing = {fl.name: sum(r.borrowed.as_float() for r in fl.resources if r.name.endswith(GPU_SUFFIX))
                     for fl in (q.flavors if q is not None else ())}
        rows = []
        holders = self._holders()
        for wl in sorted(holders, key=lambda w: (w.namespace or "", w.name)):
            rows.append(Row(f"adm:{wl.namespace}/{wl.name}", partial(self._admitted_cells, wl, borrowing, now, tones),
                            RowMeta(kind="Workload", name=wl.name, namespace=wl.namespace)))
        return rows

    @staticmethod
    def _admitted_cells(wl, borrowing: dict[str, float], now: datetime, tones: Tones) -> tuple:
        qr = wl.condition("QuotaReserved")
        since = parse_time(qr.last_transition_time) if qr is not None else None
        admission = wl.status.admission
        flavors = {f for psa in (admission.pod_set_assignments if admission else ()) for f in psa.flavors.values()}
        borrowed = [f"{short_flavor(f)} +{borrowing[f]:g}" for f in sorted(flavors) if borrowing.get(f)]
        # Kueue marks no Workload as borrowing: the queue borrows in the flavors this one holds
        label = Text(f"{wl.namespace}/", style=tones.muted)
        label.append(lit(wl.name))
        return (
            label,
            lit(wl.spec.queue_name or ""),
            str(wl.spec.priority or 0),
            age_text(since, now),
            lit(assigned_flavors(wl)),
            Text(", ".join(borrowed), style=tones.accent) if borrowed else Text("no", style=tones.muted),
        )

    # keys --------------------------------------------------------------------------------
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        table = event.data_table
        key = event.row_key.value or ""
        if isinstance(table, KeyedTable) and table.id == "qd-pending" and key.startswith("wl:"):
            event.stop()
            event.prevent_default()  # not the object detail as well: admitted rows get it (DashScreen's handler)
            ns, _, name = key[3:].partition("/")
            self.show_why(ns, name)

    @work(exclusive=True, group="why", thread=True)
    def show_why(self, namespace: str, name: str) -> None:
        """The wait report, built off the UI thread (it walks the quota tree), then shown in a modal."""
        now = self.frame.now if self.frame is not None else datetime.now().astimezone()
        item = self.positions.position_of(namespace, name) if self.positions is not None else None
        cq = self.session.store.get(ClusterQueue, self.cq_name)
        with self.session.lock:
            # The ClusterQueue view's own list is the whole queue: the report's positions and "ahead" are
            # Kueue's when it came from the visibility API (a LocalQueue's list is not: estimated there).
            shown = self.positions if self.local_queue is None else None
            report = why_waiting_report(RuleContext(self.session.store, now, self.session.config), namespace, name,
                                        positions=shown)
            eta = estimate_wait(item.get("positionInClusterQueue") if item else None,
                                admission_times(self.session.store).get(self.cq_name, []), now,
                                stopped=cq is not None and (cq.spec.stop_policy or "None") != "None")
        text = why_text(report, self.tones)
        text.append("\n\nlikely admitted in ", style=self.tones.heading)
        text.append(lit(eta.text()))
        if eta.known:
            text.append(lit(f" (from {eta.evidence} admissions in the last {human(eta.window)}; "
                            "an interval, not a promise)", self.tones.muted))
        self.app.call_from_thread(self.app.push_screen, WhyScreen(text))

    def action_open_object(self) -> None:
        self.post_message(OpenObject(ObjRef(kind="ClusterQueue", name=self.cq_name)))

    def action_open_local_queue(self) -> None:
        """The highlighted Workload's LocalQueue (pending: its item's localQueueName; admitted: spec.queueName)."""
        table = next((t for t in self.query(KeyedTable) if t.has_focus), self.query_one("#qd-pending", KeyedTable))
        meta = table.selected_meta()
        if meta is None or meta.kind != "Workload":
            self.notify("highlight a Workload to open its LocalQueue", markup=False)
            return
        wl = self.session.store.get(Workload, meta.name, meta.namespace)
        item = self.positions.position_of(meta.namespace or "", meta.name) if self.positions is not None else None
        lq = (item or {}).get("localQueueName") or (wl.spec.queue_name if wl is not None else None)
        if not lq:
            self.notify(f"{meta.namespace}/{meta.name} names no LocalQueue", markup=False)
            return
        self.post_message(OpenQueue(self.cq_name, local_queue=(meta.namespace or "", lq)))


class LocalQueueDetailScreen(QueueDetailScreen):
    """One LocalQueue: its pending Workloads (positions in the LocalQueue and in its ClusterQueue, from
    the visibility API's LocalQueue endpoint) and its admitted ones; `c` opens its ClusterQueue."""

    TITLE_TEXT = "LocalQueue detail"
    HELP = """\
LocalQueue detail: one LocalQueue's pending Workloads in Kueue's order, and its admitted ones.

PENDING    #: position in the ClusterQueue the LocalQueue feeds (Workloads of other LocalQueues are
           ahead too), #lq: position in this LocalQueue, priority, age, requested GPUs, state and
           the QuotaReserved reason. From the visibility API's LocalQueue endpoint when this session
           can ask it; otherwise estimated from the objects and labelled "estimated"; "unknown" when
           the API is forbidden — never an empty queue.
ADMITTED   this LocalQueue's Workloads holding quota: since when, flavors and GPUs, and whether
           the ClusterQueue is borrowing in those flavors.

enter  on a pending Workload: why it waits, and when it is likely admitted
c      open the ClusterQueue view             y  open the LocalQueue object (YAML)
p      the Pods of this LocalQueue's Workloads  r  fetch the positions again
esc    back"""

    BINDINGS = [
        Binding("c", "open_cluster_queue", "ClusterQueue", show=False),
    ]

    def __init__(self, session: Session, namespace: str, name: str, nav: str | None = None) -> None:
        lq = session.store.get(LocalQueue, name, namespace)
        super().__init__(session, (lq.spec.cluster_queue or "") if lq is not None else "", nav,
                         local_queue=(namespace, name))

    def _title(self, q, tones: Tones) -> Text:
        ns, name = self.local_queue or ("", "")
        lq = self.session.store.get(LocalQueue, name, ns)
        title = span("LocalQueue ", tones.heading)
        title.append(lit(f"{ns}/{name}", "bold"))
        if lq is None:
            title.append("  not in the store (deleted?)", style=tones.warn)
            return title
        title.append(" → ClusterQueue ")
        title.append(lit(f"{self.cq_name or '–'} · stopPolicy {lq.spec.stop_policy or 'None'}"))
        st = lq.status
        title.append(lit(f" · status pnd·rsv·adm {st.pending_workloads or 0}·{st.reserving_workloads or 0}·"
                         f"{st.admitted_workloads or 0}", tones.muted))
        if q is None and self.cq_name:
            title.append("  ClusterQueue not in the store", style=tones.warn)
        elif q is not None:
            title.append("\n")
            title.append(lit(f"ClusterQueue {q.name}: cohort {q.cohort or 'none'} · {q.queueing_strategy} · "
                             f"stopPolicy {q.stop_policy} · status pnd·rsv·adm {q.pending}·{q.reserving}·{q.admitted}",
                             tones.muted))
        return title

    def action_open_object(self) -> None:
        ns, name = self.local_queue or ("", "")
        self.post_message(OpenObject(ObjRef(kind="LocalQueue", namespace=ns, name=name)))

    def action_open_local_queue(self) -> None:
        self.notify("this is the LocalQueue view: c opens its ClusterQueue", markup=False)

    def action_open_cluster_queue(self) -> None:
        if not self.cq_name:
            self.notify("this LocalQueue names no ClusterQueue", markup=False)
            return
        self.post_message(OpenQueue(self.cq_name))
