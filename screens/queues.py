"""3 Cohorts & queues: each cohort with its member ClusterQueues — quota, reservations, borrowing, limits,
stop policy, Active reason and workload counts. The pane below details the highlighted row."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from taudash.engine.model import ZERO
from taudash.engine.rules.claims import ClaimView
from taudash.engine.rules.queue_order import parse_time
from taudash.engine.rules.queues import ClusterQueueView, CohortView
from taudash.engine.session import Frame

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.format import in_unit, short_flavor, tri, unit_for
from .kit.kueue_facts import kueue_facts
from .kit.messages import NewWorkflow, OpenQueue
from .kit.presenters import refuse_read_only
from .kit.text import Tones, lit, span
from .widgets.columns import fold
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

# the widest a resource name is shown on one line in the cohort pane ("ephemeral-storage" and the GPUs fit)
RESOURCE_ROOM = 24

COLS = [
    Col("name", "cohort / cluster queue", 16, ident=True),
    Col("stop", "stop", 14, hide=4),
    Col("active", "Active", 14, flex=True),  # a condition's reason: cut first ("…"), whole in the pane below
    Col("counts", "pnd·rsv·adm", 11, right=True, hide=1),
    Col("inactive", "inact", 5, right=True, hide=7),
    Col("nominal", "nom", 4, right=True, hide=6),
    Col("reserved", "resv", 4, right=True, hide=2),
    Col("used", "used", 4, right=True, hide=3),
    Col("borrowed", "borrow", 6, right=True, hide=5),
]
NO_COHORT = "(no cohort)"


def _gpu_total(flavors, field: str) -> float:
    total = 0.0
    for fl in flavors:
        for r in fl.resources:
            if r.name.endswith("/gpu"):
                total += getattr(r, field).as_float()
    return total


def _queue_cells(q: ClusterQueueView, branch: str, tones: Tones, claim: ClaimView | None = None) -> tuple:
    name = span(f"  {branch}", tones.muted)
    name.append(lit(q.name))
    if q.workspace and q.workspace not in q.name:  # "tau-ws-eval" names its workspace already
        name.append(lit(f"  ws {q.workspace}", tones.muted))
    borrowed = _gpu_total(q.flavors, "borrowed")
    stop = stop_cell(q.stop_policy, tones)
    if claim is not None:  # a workflow holds the queue (⚠: its run stopped renewing the claim)
        stop.append(f"  {'⚠' if claim.stale else '⚑'} {claim.holder}",
                    style=tones.warn if claim.stale else tones.accent)
    return (
        name,
        stop,
        active_cell(q, tones),
        f"{q.pending}·{q.reserving}·{q.admitted}",
        _inactive_cell(q, tones),
        _num(_gpu_total(q.flavors, "nominal")),
        _num(_gpu_total(q.flavors, "reserved")),
        _num(_gpu_total(q.flavors, "used")),
        Text(_num(borrowed), style=tones.accent if borrowed else ""),
    )


def _queue_row(q: ClusterQueueView, branch: str, tones: Tones, claim: ClaimView | None = None) -> Row:
    return Row(f"cq:{q.name}", partial(_queue_cells, q, branch, tones, claim),
               RowMeta(kind="ClusterQueue", name=q.name, text=" ".join(filter(None, [q.cohort, q.workspace, q.team]))))


def _inactive_cell(q: ClusterQueueView, tones: Tones) -> Text:
    if q.inactive is None:
        return Text("?", style=tones.muted)  # the Workloads cannot be read
    return Text(str(q.inactive), style=tones.warn if q.inactive else tones.muted)


def cohort_tree_order(cohorts: list[CohortView]) -> list[CohortView]:
    """Cohorts depth-first from each root (roots and siblings by name): a parent before its children."""
    by_name = {c.name: c for c in cohorts}
    out: list[CohortView] = []
    seen: set[str] = set()

    def visit(c: CohortView) -> None:
        if c.name in seen:
            return
        seen.add(c.name)
        out.append(c)
        for child in sorted(c.children):
            if child in by_name:
                visit(by_name[child])

    for c in sorted(cohorts, key=lambda c: c.name):
        if c.depth == 0:
            visit(c)
    for c in sorted(cohorts, key=lambda c: c.name):  # cut loose (cycles): still shown
        visit(c)
    return out


def _avail(now, potential, tones: Tones, unit=None) -> Text:
    """available now (/ with nothing else admitted, when that differs)."""
    if now is None:
        return Text("?", style=tones.muted)
    t = Text(in_unit(now, unit), style=tones.bad if now < ZERO else "")
    if potential is not None and potential != now:
        t.append(f" / {in_unit(potential, unit)}", style=tones.muted)
    return t


def _num(v: float) -> str:
    return f"{v:g}"


def _when(value: str | None, now: datetime) -> str:
    """A claim's time as "08:25 UTC, 40 min ago" (the date too when it is not today's)."""
    t = parse_time(value)
    if t is None:
        return "unknown"
    t = t.astimezone(UTC)
    secs = max(0, int((now - t).total_seconds()))
    ago = f"{secs} s" if secs < 120 else f"{secs // 60} min" if secs < 7200 else f"{secs // 3600} h"
    day = "" if t.date() == now.astimezone(UTC).date() else f"{t:%Y-%m-%d} "
    return f"{day}{t:%H:%M} UTC, {ago} ago"


def claim_line(claim: ClaimView, tones: Tones, now: datetime) -> Text:
    """"held by workflow ID (kind, who, since)", or a stale claim and how to resume or take it over."""
    who = " on ".join(x for x in (claim.who, claim.host) if x) or "unknown operator"
    line = span("⚑ held by ", tones.accent, end="\n")
    line.append(lit(f"workflow {claim.holder}", "bold"))
    line.append(lit(f" ({claim.workflow or 'workflow'}, {who}, since {_when(claim.since, now)}): "
                    "no other workflow may write to this queue"))
    if claim.stale:
        line.append(f"\n⚠ stale claim: not renewed since {_when(claim.renewed, now)}: its run stopped. ",
                    style=tones.warn)
        line.append(lit(f"Resume it where it was journaled (taudash workflow resume {claim.holder}), or take it "
                        f"over: taudash workflow start {claim.workflow or '…'} … --take-over {claim.holder}"))
    return line


def stop_cell(stop: str, tones: Tones) -> Text:
    if stop == "None":
        return Text("None", style=tones.muted)
    return Text(f"◐ {stop}", style=tones.warn)


def active_cell(q: ClusterQueueView, tones: Tones) -> Text:
    if q.active is None:
        return tones.mark("unknown", q.active_reason or "unknown")
    if q.active:
        return tones.mark("ok", q.active_reason or "True")
    return tones.mark("bad", q.active_reason or "False")


class QueuesScreen(DashScreen):
    HELP = """\
Queues: every cohort (explicit or only named by a ClusterQueue's cohortName) and its
member ClusterQueues.

GPU nom / resv / used / borrow   GPUs summed over flavors: nominal quota, Kueue reservations,
                                 usage, and borrowed = reservation above nominal.
stop                             the stopPolicy: None admits; Hold and HoldAndDrain stop new admissions.
                                 ⚑ ID: workflow ID holds the queue (its claim, seen by every operator:
                                 no other workflow may write to it); ⚠ ID: a stale claim, that run
                                 stopped renewing it (the pane says how to resume or take it over).
Active                           the ClusterQueue's Active condition reason (✖ admits nothing).
pnd·rsv·adm                      pending, reserving and admitted Workloads from the queue status.
inact                            deactivated Workloads (spec.active false) routed here: not pending,
                                 never admitted until reactivated (? when Workloads are unreadable).

Cohorts form a tree: a child Cohort (spec.parentName) is indented under its parent.

The pane below shows the highlighted row per flavor and resource, its limits, the Active message
and the Workload counts cross-checked against the Workloads in the store; the policies (preemption,
flavorFungibility, fairSharing weight and share, admissionScope); and, on the quota tree, what one
more Workload could reserve now / with nothing else admitted (available). A cohort shows its own
quota, what its children lend it, its subtree quota (lendingLimits applied) and what is available.
enter   on a ClusterQueue: its pending Workloads in Kueue's order and its admitted ones; on a cohort: the object
w       workflow for the highlighted ClusterQueue (a cohort: its member queues): opens the
        "new workflow" form with them chosen — hold, or release a stopped queue. Nothing is written
        until each step is confirmed. In a read-only session it only says why it is disabled."""

    BINDINGS = [Binding("w", "workflow", "workflow…", show=False)]

    # A short table takes the height of its rows and the pane explaining the highlighted row the rest (a
    # tall terminal shows it whole); a long one stops at 60 percent of the screen and scrolls.
    DEFAULT_CSS = """
    QueuesScreen .fit { height: auto; margin: 0; }
    QueuesScreen .fit > KeyedTable { height: auto; max-height: 60vh; }
    QueuesScreen .detail-fill { height: 1fr; scrollbar-size-vertical: 1; }
    """

    def compose_body(self) -> ComposeResult:
        with Vertical(id="body"):
            yield Section("COHORTS AND CLUSTER QUEUES (GPUs)", KeyedTable(COLS, empty="no ClusterQueues", id="queues"),
                          classes="fit")
            with VerticalScroll(classes="detail-fill"):
                yield Static(id="queue-detail", classes="detail")

    def render_frame(self, frame: Frame) -> None:
        view, tones = frame.view, self.tones
        cache = self.row_cache("queues")
        queues = {q.name: q for q in view.cluster_queues}
        claims = {c.target: c for c in view.claims}
        rows: list[Row] = []
        grouped: list[tuple[CohortView | None, list[ClusterQueueView]]] = [
            (c, [queues[m] for m in c.members if m in queues]) for c in cohort_tree_order(view.cohorts)
        ]
        loose = [q for q in view.cluster_queues if not q.cohort]
        if loose:
            grouped.append((None, loose))
        for cohort, members in grouped:
            indent = "  " * cohort.depth if cohort is not None else ""
            if cohort is not None:
                name = Text(f"{indent}▾ ", end="")
                name.append(lit(cohort.name, "bold"))
                tags = []
                if cohort.implicit:
                    tags.append("implicit")
                if cohort.parent:
                    tags.append(f"parent {cohort.parent}")
                if cohort.children:
                    tags.append(f"{len(cohort.children)} child cohort{'s' if len(cohort.children) > 1 else ''}")
                if cohort.managed:
                    tags.append("TauGrid")
                if tags:
                    name.append(lit(f"  {', '.join(tags)}", tones.muted))
                own = sum(r.nominal.as_float() for fl in cohort.flavors for r in fl.resources
                          if r.name.endswith("/gpu"))
                rows.append(Row(f"cohort:{cohort.name}", (
                    name, "", "",
                    Text(f"{len(members)} queues", style=tones.muted),
                    "",
                    _num(own) if own else Text("–", style=tones.muted),
                    _num(_gpu_total(cohort.flavors, "reserved")),
                    _num(_gpu_total(cohort.flavors, "used")),
                    _num(_gpu_total(cohort.flavors, "borrowed")),
                ), RowMeta(kind="Cohort", name=cohort.name, text=" ".join(cohort.members))))
            else:
                rows.append(Row("cohort:", (Text(f"▾ {NO_COHORT}", style=tones.muted), "", "", "", "", "", "", "", ""),
                                RowMeta(text=NO_COHORT)))
            for i, q in enumerate(members):
                branch = indent + ("└ " if i == len(members) - 1 else "├ ")
                # An incremental view keeps the same object for a queue that did not change: so does
                # its row (the table skips redrawing it; 300 queues rebuilt every tick cost ~0.1 s).
                claim = claims.get(f"ClusterQueue {q.name}")
                rows.append(cache.row(f"cq:{q.name}", q, partial(_queue_row, q, branch, tones, claim),
                                      (branch, tones, claim)))
        cache.done()
        table = self.query_one("#queues", KeyedTable)
        table.sync(rows)
        self._detail(table.selected_key())

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail(event.row_key.value)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a ClusterQueue opens its pending and admitted Workloads (queue_detail.py); on a cohort, the
        object."""
        key = event.row_key.value or ""
        if key.startswith("cq:"):
            event.stop()
            event.prevent_default()  # not the object detail as well (DashScreen's handler)
            self.post_message(OpenQueue(key[3:]))

    # guided operations (9 Workflows) -------------------------------------------------------
    def _chosen_queues(self) -> list[str]:
        key = self.query_one("#queues", KeyedTable).selected_key() or ""
        kind, _, name = key.partition(":")
        if kind == "cq":
            return [name]
        if kind == "cohort" and self.frame is not None:
            return [q.name for q in self.frame.view.cluster_queues if q.cohort == name]
        return []

    def action_workflow(self) -> None:
        if refuse_read_only(self, "starting a workflow"):  # bound even when read-only: it says why
            return
        cqs = self._chosen_queues()
        stopped = bool(cqs) and self.frame is not None and all(
            q.stop_policy != "None" for q in self.frame.view.cluster_queues if q.name in cqs)
        self.post_message(NewWorkflow("release" if stopped else "hold", cqs=cqs))

    def _detail(self, key: str | None) -> None:
        pane = self.query_one("#queue-detail", Static)
        if self.frame is None or not key:
            pane.update(Text("highlight a row for its flavors and limits", style="dim"))
            return
        view, tones = self.frame.view, self.tones
        kind, _, name = key.partition(":")
        if kind == "cq":
            q = next((x for x in view.cluster_queues if x.name == name), None)
            if q is not None:
                claim = next((c for c in view.claims if c.target == f"ClusterQueue {name}"), None)
                held = claim_line(claim, tones, self.frame.now) if claim is not None else None
                pane.update(self._cq_detail(q, tones, self.session.get("ClusterQueue", name), held))
                return
        if kind == "cohort":
            c = next((x for x in view.cohorts if x.name == name), None)
            if c is not None:
                pane.update(self._cohort_detail(c, tones, self.session.get("Cohort", name)))
                return
        pane.update(Text("ClusterQueues without a cohort cannot borrow or lend", style="dim"))

    @staticmethod
    def _facts(obj, tones: Tones, skip: tuple[str, ...] = ()) -> Text:
        """Policy lines of the object (preemption, fungibility, fair sharing, admissionScope)."""
        t = Text(end="\n")
        for label, value in kueue_facts(obj) if obj is not None else []:
            if label in skip:
                continue
            t.append(f"{label} ", style=tones.muted)
            t.append(lit(value))
            t.append("\n")
        t.rstrip()
        return t

    @staticmethod
    def _cq_detail(q: ClusterQueueView, tones: Tones, obj=None, claim: Text | None = None) -> Group:
        head = span("ClusterQueue ", tones.heading)
        head.append(lit(q.name, "bold"))
        head.append(" · cohort ")
        head.append(lit(q.cohort or "none"))
        head.append(f" · {q.queueing_strategy} · ")
        head.append(active_cell(q, tones))
        if q.active_message:
            head.append(" ")
            head.append(lit(q.active_message, tones.muted))
        counts = Text(f"status: pending {q.pending} · reserving {q.reserving} · admitted {q.admitted}", end="")
        if q.observed is None:
            counts.append("   store: ? Workloads unreadable", style=tones.unknown)
        else:
            o = q.observed
            same = (o.pending, o.reserving, o.admitted) == (q.pending, q.reserving, q.admitted)
            counts.append(f"   store: {o.pending} · {o.reserving} · {o.admitted}", style="" if same else tones.warn)
            if not same:
                counts.append(" ⚠ differs (status lags or Workloads are missing)", style=tones.warn)
        if q.stop_policy != "None":
            counts.append("   drained: ")
            counts.append(tri(q.drained, tones, "yes", "not yet"))
        if q.admission_checks:
            counts.append("   admission checks: ")
            counts.append(lit(", ".join(q.admission_checks)))
        head.end = counts.end = "\n"
        t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 0, 0, 1), header_style=tones.muted)
        for c in ("flavor", "resource", "nominal", "reserved", "used", "borrowed", "borrow\nlimit", "lend\nlimit",
                  "available"):
            t.add_column(c, justify="left" if c in ("flavor", "resource") else "right",
                         no_wrap=c not in ("flavor", "resource"), overflow="fold",
                         min_width={"flavor": 9, "resource": 12}.get(c))
        for fl in q.flavors:
            for i, r in enumerate(fl.resources):
                # one unit per resource row (5.2Ti never beside 1012.2Gi)
                u = unit_for((r.nominal, r.reserved, r.used, r.borrowed, r.borrowing_limit, r.lending_limit,
                              r.available, r.potential_available))
                t.add_row(
                    lit(short_flavor(fl.name) if i == 0 else ""), lit(r.name), in_unit(r.nominal, u),
                    in_unit(r.reserved, u), in_unit(r.used, u),
                    Text(in_unit(r.borrowed, u), style=tones.accent if r.borrowed else ""),
                    "none" if r.borrowing_limit is None else in_unit(r.borrowing_limit, u),
                    "none" if r.lending_limit is None else in_unit(r.lending_limit, u),
                    _avail(r.available, r.potential_available, tones, u),
                )
        facts = QueuesScreen._facts(obj, tones, skip=("limits",))  # the table has the limits
        held = [claim] if claim is not None else []
        if not q.flavors:
            return Group(head, counts, *held, facts,
                         Text("no resource groups: this queue admits nothing", style=tones.warn))
        return Group(head, counts, *held, facts, t)

    @staticmethod
    def _cohort_detail(c: CohortView, tones: Tones, obj=None) -> Group:
        head = span("Cohort ", tones.heading)
        head.append(lit(c.name, "bold"))
        head.append(" · implicit (named by cohortName only)" if c.implicit else " · Cohort object")
        if c.parent:
            head.append(" · parent ")
            head.append(lit(c.parent))
        if c.children:
            head.append(" · children ")
            head.append(lit(", ".join(c.children)))
        if c.team:
            head.append(" · team ")
            head.append(lit(c.team))
        head.end = "\n"
        t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 0, 0, 1), header_style=tones.muted)
        # The flavor heads its resources on a row of its own: the resource names keep the width a flavor column
        # would take (at 100 columns "ephemeral-storage" stays whole); only a name longer than the room left
        # wraps, after a separator (fold), never a number.
        names = [r.name for fl in c.flavors for r in fl.resources]
        t.add_column("flavor · resource", justify="left", overflow="fold",
                     min_width=min(RESOURCE_ROOM, max((len(n) + 2 for n in names), default=8)))
        for col in ("nominal", "lent in", "subtree", "reserved", "used", "borrowed", "available"):
            t.add_column(col, justify="right", no_wrap=True)
        for fl in c.flavors:
            t.add_row(lit(short_flavor(fl.name), "bold"))
            for r in fl.resources:
                u = unit_for((r.nominal, r.member_nominal, r.subtree_quota, r.reserved, r.used, r.borrowed,
                              r.available))
                t.add_row(fold(lit(f"  {r.name}"), RESOURCE_ROOM), in_unit(r.nominal, u),
                          in_unit(r.member_nominal, u), in_unit(r.subtree_quota, u), in_unit(r.reserved, u),
                          in_unit(r.used, u), Text(in_unit(r.borrowed, u), style=tones.accent if r.borrowed else ""),
                          Text(in_unit(r.available, u), style=tones.bad if r.available < ZERO else ""))
        return Group(head, QueuesScreen._facts(obj, tones), t)
