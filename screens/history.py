"""History: what the recorder kept for this cluster over the last hour, day or week — GPUs reserved vs
budget per flavor, pending and admitted per ClusterQueue, admission waits, evictions, and who was
preempted by whom. Reads only through the session's read-only history handle (engine/history/reader.py).
"""

from __future__ import annotations

from functools import partial

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical, VerticalScroll
from textual.widgets import Static

from taudash.engine.history.query import EvictionRecord
from taudash.engine.history.reader import HistoryWindow
from taudash.engine.history.whatif import outcome_cells
from taudash.engine.rules.base import ObjRef
from taudash.engine.session import Frame

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.messages import OpenObject
from .kit.text import lit, span
from .widgets.bars import sparkline
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.plot import Plot, Trace, time_label
from .widgets.section import Section

RANGES: tuple[tuple[str, float], ...] = (("1h", 3600.0), ("24h", 86400.0), ("7d", 7 * 86400.0))
BUCKETS = 120  # points per plotted series (two per character of a 60-character plot)
SPARK = 30  # characters per queue sparkline
RETRY_SECONDS = 5  # how often an empty screen looks again
NO_HISTORY = ("no history recorded yet for this cluster — taudash records while the dashboard or "
              "`taudash serve` runs")

QUEUE_COLS = [Col("cq", "ClusterQueue", 16, ident=True), Col("pending", "pending", SPARK),
              Col("ppeak", "peak", 6, right=True),
              Col("admitted", "admitted", SPARK), Col("apeak", "peak", 6, right=True)]
WAIT_COLS = [Col("by", "by", 6), Col("group", "ClusterQueue / team", 16, ident=True),
             Col("count", "admitted", 9, right=True),
             Col("p50", "wait p50", 10, right=True), Col("p95", "wait p95", 10, right=True)]
WHATIF_COLS = [Col("id", "id", 7), Col("object", "object", 24, ident=True),
               Col("flavor", "flavor: predicted → actual", flex=True), Col("now", "starts now", 12),
               Col("wait", "wait", 16), Col("preempts", "preempts", 10)]
LOG_COLS = [Col("when", "when (UTC)", 11), Col("victim", "preempted", 16, ident=True), Col("cq", "ClusterQueue", 14),
            Col("cohort", "cohort", 15), Col("why", "why", 18), Col("by", "by (preemptor)", flex=True)]


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _downsample(values: list[float | None], n: int) -> list[float | None]:
    """`n` buckets from more: the maximum of each group (the worst backlog), None when all are None."""
    if len(values) <= n:
        return values
    out: list[float | None] = []
    for i in range(n):
        group = [v for v in values[i * len(values) // n:(i + 1) * len(values) // n] if v is not None]
        out.append(max(group) if group else None)
    return out


def _peak(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{max(known):.0f}" if known else "–"


class HistoryScreen(DashScreen):
    AUTO_FOCUS = "#body"  # the page scrolls with the arrows; l (or tab) reaches the preemption log
    BINDINGS = [
        Binding("left_square_bracket", "range(-1)", "shorter range", show=False),
        Binding("right_square_bracket", "range(1)", "longer range", show=False),
        Binding("p", "preemptor", "open the preemptor", show=False),
        Binding("l", "log", "the preemption log", show=False),
    ]
    HELP = """\
History: what taudash recorded for this cluster (while a dashboard or `taudash serve` ran).

RANGE        the last 1 h, 24 h or 7 d before now; [ shorter, ] longer. Times are UTC.
GPUS         per pool flavor: GPUs reserved (line) against the budget (line) over the range.
QUEUES       per ClusterQueue: pending and admitted Workloads (the peak of each bucket).
WAITS        creation → Admitted of the Workloads admitted in the range, p50 and p95, per
             ClusterQueue and per team.
EVICTIONS    preemptions and all evictions per bucket.
PREEMPTIONS  who was preempted, by whom, in which ClusterQueue and cohort, why and when (newest first).
             l jumps to it; enter opens the preempted Workload; p opens the preemptor (when Kueue
             named it and it was still there when the eviction was recorded).
A gap in a plot is a time nothing was recorded, never a zero."""

    DEFAULT_CSS = """
    HistoryScreen #hist-data { height: auto; }
    HistoryScreen #hist-flavors {
        layout: grid;
        grid-size: 2;
        grid-gutter: 0 1;
        height: auto;
    }
    HistoryScreen #hist-none { padding: 1 2; }
    """

    def __init__(self, session, nav: str | None = None) -> None:
        super().__init__(session, nav)
        self.range_index = 0
        self.data: HistoryWindow | None = None
        self._loaded_key: tuple | None = None
        self._loading_key: tuple | None = None
        self.error: str | None = None
        self._records: dict[str, EvictionRecord] = {}

    # composition -------------------------------------------------------------------------
    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static(id="hist-range", classes="tile")
            yield Static(id="hist-none")
            with Vertical(id="hist-data"):
                yield Static(id="hist-gpus-title", classes="section-heading")
                yield Container(id="hist-flavors")
                yield Section("QUEUES", KeyedTable(QUEUE_COLS, empty="no ClusterQueue recorded", id="hist-queues"))
                yield Section("ADMISSION WAITS", KeyedTable(WAIT_COLS, empty="no Workload admitted in this range",
                                                            id="hist-waits"))
                yield Plot(rows=4, id="hist-evictions")
                yield Section("PREEMPTIONS", KeyedTable(LOG_COLS, empty="no preemption recorded in this range",
                                                        id="hist-log"))
                yield Section("WHAT-IF PREDICTIONS", KeyedTable(WHATIF_COLS, empty="", id="hist-whatif"),
                              id="hist-whatif-section")

    @property
    def range_label(self) -> str:
        return RANGES[self.range_index][0]

    @property
    def range_seconds(self) -> float:
        return RANGES[self.range_index][1]

    # keys --------------------------------------------------------------------------------
    def action_range(self, delta: int) -> None:
        index = max(0, min(len(RANGES) - 1, self.range_index + delta))
        if index != self.range_index:
            self.range_index = index
            self.invalidate()
            if self.frame is not None:
                self.show(self.frame)

    def action_log(self) -> None:
        table = self.query_one("#hist-log", KeyedTable)
        if table.display and self.query_one("#hist-data").display:
            table.focus()
            table.scroll_visible(animate=False)

    def action_preemptor(self) -> None:
        table = self.query_one("#hist-log", KeyedTable)
        key = table.selected_key()
        record = self._records.get(key) if key is not None else None
        if record is None:
            self.notify("no preemption selected", severity="warning")
            return
        if not record.preemptor_name:
            who = f"UID {record.preemptor_uid}" if record.preemptor_uid else "no preemptor"
            self.notify(f"the preemptor is not known by name ({who}): it was gone when the eviction was recorded"
                        if record.preemptor_uid else "Kueue named no preemptor for this eviction",
                        severity="warning", markup=False)
            return
        self.post_message(OpenObject(ObjRef(kind="Workload", namespace=record.preemptor_namespace,
                                            name=record.preemptor_name)))

    # data --------------------------------------------------------------------------------
    def _bucket(self, frame: Frame) -> tuple:
        """When to read again: at each new bucket of the range, and every few seconds while nothing
        recorded is shown yet (a recorder that just started appears without waiting for a bucket)."""
        ts = frame.now.timestamp()
        if self._loaded_key is not None and (self.data is None or self.data.empty):
            return (self.range_index, "retry", int(ts // RETRY_SECONDS))
        return (self.range_index, int(ts // (self.range_seconds / BUCKETS)))

    def frame_signature(self, frame: Frame) -> tuple | None:
        # the data moves with time: a new bucket (of this range) is a new picture
        sig = super().frame_signature(frame)
        return None if sig is None else (*sig, self._bucket(frame))

    @property
    def loaded(self) -> bool:
        """The data shown is the current range's (no read in flight)."""
        return self._loading_key is None and self._loaded_key is not None

    def _load(self, frame: Frame) -> HistoryWindow | None:
        """The data to show now; a read of the range's newest bucket runs on a thread (a day of samples of a
        large fleet takes SQLite a second or two: never on the UI loop) and re-renders when it lands."""
        reader = self.session.history_reader
        if reader is None:
            return None
        key = self._bucket(frame)
        if key not in (self._loaded_key, self._loading_key):
            self._loading_key = key
            now, seconds = frame.now.timestamp(), self.range_seconds
            self.run_worker(partial(self._fetch, reader, key, now, seconds), thread=True, exclusive=True,
                            group="history-read", exit_on_error=False, description="read history")
        return self.data if self._loaded_key is not None and self._loaded_key[0] == self.range_index else None

    def _fetch(self, reader, key: tuple, now: float, seconds: float) -> None:
        try:
            data, error = reader.window(now, seconds, BUCKETS), None
        except Exception as exc:  # an unreadable file: said on the screen, retried at the next bucket
            data, error = None, f"{type(exc).__name__}: {exc}"
        self.app.call_from_thread(self._landed, key, data, error)

    def _landed(self, key: tuple, data: HistoryWindow | None, error: str | None) -> None:
        if key != self._loading_key:
            return  # a newer read was asked for
        self._loading_key = None
        self._loaded_key = key
        self.data = data
        self.error = error
        self.invalidate()
        if self.frame is not None and self.is_mounted:
            self.show(self.frame)

    def render_frame(self, frame: Frame) -> None:
        tones = self.tones
        data = self._load(frame)
        head = span("HISTORY ", tones.heading)
        for i, (label, _) in enumerate(RANGES):
            head.append(f" {label} " if i != self.range_index else f"[{label}]",
                        style=tones.accent if i == self.range_index else tones.muted)
            head.append(" ")
        head.append("  [ ] change range", style=tones.muted)
        if data is not None and data.recorded_from is not None and data.recorded_to is not None:
            span_ = data.recorded_to - data.recorded_from
            head.append(f" · recorded {time_label(data.recorded_from, max(span_, 86401))}"
                        f" – {time_label(data.recorded_to, max(span_, 86401))} UTC", style=tones.muted)
        self.query_one("#hist-range", Static).update(head)
        none = self.query_one("#hist-none", Static)
        body = self.query_one("#hist-data", Vertical)
        if self._loading_key is not None:
            head.append(f" · reading the last {self.range_label} …", style=tones.muted)
            self.query_one("#hist-range", Static).update(head)
        if data is None or data.empty:
            if self._loading_key is not None:
                text = f"reading the last {self.range_label} of history …"
            elif self.error is not None:
                text = f"history unreadable: {self.error}"
            elif data is None:
                text = NO_HISTORY
            else:
                text = f"nothing recorded in the last {self.range_label} — taudash records while the dashboard " \
                    "or `taudash serve` runs"
            none.update(lit(text, tones.unknown))
            none.display = True
            body.display = False
            self._records = {}
            self.query_one("#hist-log", KeyedTable).sync([])
            return
        none.display = False
        body.display = True
        gpus = span("GPUS ", tones.heading)
        gpus.append("reserved vs budget per pool flavor", style=tones.muted)
        self.query_one("#hist-gpus-title", Static).update(gpus)
        self._flavors(data)
        self._queues(data)
        self._waits(data)
        ev = data.evictions
        pre = [float(n) for _, n in ev.get("preemptions", [])]
        allev = [float(n) for _, n in ev.get("evictions", [])]
        title = span("EVICTIONS ", tones.heading)
        title.append(f"{plural(int(sum(pre)), 'preemption')} · {plural(int(sum(allev)), 'eviction')} in the last "
                     f"{self.range_label}",
                     style=tones.muted)
        self.query_one("#hist-evictions", Plot).set_data(
            title, [Trace("preemptions", pre, "bad", bars=True), Trace("all evictions", allev, "warn", bars=True)],
            data.start, data.end)
        self._log(data)
        self._whatif(data)

    def _flavors(self, data: HistoryWindow) -> None:
        box = self.query_one("#hist-flavors", Container)
        plots = {p.id: p for p in box.query(Plot)}
        want = [f"hist-flavor-{i}" for i in range(len(data.flavors))]
        for pid in plots.keys() - set(want):
            plots.pop(pid).remove()
        new = [Plot(rows=5, id=pid) for pid in want if pid not in plots]
        if new:
            box.mount_all(new)
            plots.update({p.id: p for p in new})
        if not data.flavors:
            box.display = False
            return
        box.display = True
        tones = self.tones
        for pid, f in zip(want, data.flavors, strict=True):
            title = span(f.name, "bold")
            if f.resource != "nvidia.com/gpu":
                title.append(f" · {f.resource}", style=tones.muted)
            plots[pid].set_data(title, [Trace("reserved", [v for _, v in f.reserved], "bar_fill"),
                                        Trace("budget", [v for _, v in f.budget], "muted")],
                                data.start, data.end)

    def _queues(self, data: HistoryWindow) -> None:
        tones = self.tones
        rows = []
        for q in data.queues:
            pending = [v for _, v in q.pending]
            admitted = [v for _, v in q.admitted]
            rows.append(Row(f"cq:{q.name}", (
                lit(q.name), sparkline(_downsample(pending, SPARK), tones), lit(_peak(pending)),
                sparkline(_downsample(admitted, SPARK), tones), lit(_peak(admitted))),
                RowMeta(kind="ClusterQueue", name=q.name)))
        self.query_one("#hist-queues", KeyedTable).sync(rows)

    def _waits(self, data: HistoryWindow) -> None:
        tones = self.tones
        rows = []
        for by, groups in (("queue", data.waits_by_queue), ("team", data.waits_by_team)):
            for group, w in groups.items():
                meta = RowMeta(kind="ClusterQueue", name=group) if by == "queue" and group else RowMeta(text=group)
                rows.append(Row(f"{by}:{group}", (lit(by, tones.muted), lit(group or "– unknown"), lit(str(w["count"])),
                                                   lit(duration(w.get("p50"))), lit(duration(w.get("p95")))), meta))
        self.query_one("#hist-waits", KeyedTable).sync(rows)

    def _log(self, data: HistoryWindow) -> None:
        tones = self.tones
        rows = []
        self._records = {}
        for e in data.preemptions:
            key = f"{e.uid}@{e.at:.3f}"
            self._records[key] = e
            if e.preemptor_name:
                by = lit(f"{e.preemptor_namespace}/{e.preemptor_name}")
                if e.preemptor_cluster_queue and e.preemptor_cluster_queue != e.cluster_queue:
                    by.append(lit(f" ({e.preemptor_cluster_queue})", tones.muted))
            elif e.preemptor_uid:
                by = lit(f"UID {e.preemptor_uid} (gone)", tones.unknown)
            else:
                by = lit("– not named", tones.unknown)
            rows.append(Row(key, (
                lit(time_label(e.at, 2 * 86400)), lit(f"{e.namespace}/{e.name}"), lit(e.cluster_queue or "–"),
                lit(e.cohort or "–"), lit(e.preemption_reason or e.reason), by),
                RowMeta(kind="Workload", namespace=e.namespace, name=e.name,
                        text=f"{e.message} {e.preemptor_name or ''} {e.team or ''}")))
        self.query_one("#hist-log", KeyedTable).sync(rows)

    def _whatif(self, data: HistoryWindow) -> None:
        """Predictions made in the range (taudash whatif, or W in the dashboard) beside what happened; the
        section is hidden while there are none."""
        tones = self.tones
        rows = []
        for item in reversed(data.whatif):  # newest first
            cells = outcome_cells(item)
            obj = item.get("object") or {}
            styled = [lit(cells[0], tones.muted), lit(cells[1])]
            for c in cells[2:]:
                styled.append(lit(c, tones.bad if c.endswith("✗") else tones.unknown if "…" in c else ""))
            rows.append(Row(f"wi:{item['id']}", tuple(styled),
                            RowMeta(kind=str(obj.get("kind") or ""), namespace=obj.get("namespace"),
                                    name=str(obj.get("name") or ""))))
        self.query_one("#hist-whatif-section").display = bool(rows)
        self.query_one("#hist-whatif", KeyedTable).sync(rows)
