"""0 Fleet: every cluster of the session in one table; Enter makes one the subject of the other screens.

The app hands this screen the subject's frame like any other; the rows come from every member's own
session (`app.fleet`, duck-typed: `members` with `context`, `session`, `state`, `error`, and
`subject`). A dashboard on one cluster shows one row, from its own session.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from taudash.engine.multikueue_join import MultiKueueJoin, is_manager
from taudash.engine.session import Frame, Session

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.format import qty, short_flavor
from .kit.text import MARK, lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

GPU = "nvidia.com/gpu"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
COLS = [Col("ctx", "cluster", 18, ident=True), Col("reach", "reach", 14), Col("age", "fresh", 5, right=True),
        Col("pool", "GPU budget/resv/headroom", flex=True),
        Col("pend", "pend", 5, right=True), Col("adm", "adm", 5, right=True),
        Col("crit", "crit", 5, right=True), Col("drain", "drain", 5, right=True), Col("mk", "MultiKueue", 20)]
DISPATCHED_COLS = [Col("wl", "dispatched Workload", flex=True), Col("mgr", "manager", 12), Col("state", "state", 13),
                   Col("nom", "nominated", 10), Col("worker", "worker → context", 28), Col("remote", "remote", 11)]
WORKER_COLS = [Col("mgr", "manager", 16), Col("name", "MultiKueueCluster", 18), Col("wctx", "context", 18),
               Col("active", "Active on manager", 24), Col("reach", "from here", flex=True),
               Col("mirrors", "mirrors", 7, right=True)]
REMOTE_TONE = {"admitted": "ok", "finished": "ok", "quotaReserved": "partial", "pending": "partial",
               "gone": "bad", "unknown": "unknown"}
SEVERITY_TONE = {"critical": "bad", "warning": "warn", "info": "info"}


def multikueue_role(session: Session, frame: Frame | None) -> str:
    """manager (it dispatches: MultiKueue workers listed), worker (holds mirror Workloads) or none."""
    if frame is not None and frame.view.multikueue.workers or is_manager(session.store, last_known=True):
        return "manager"
    if session.labelled("Workload", ORIGIN_LABEL):  # counted once, then followed (not a scan per tick)
        return "worker"
    return "none"


SLOW_PROBE = 2.0  # seconds: a live cluster whose liveness probe took this long reads "slow Ns"


def stale_text(f: Frame) -> str:
    """'stale since 13:58:02 (no answer for 9 s (…))' — when its data stopped being current, and why."""
    fresh = f.freshness
    if fresh.unreachable_since is None:
        return f"stale ({fresh.unreachable_why})" if fresh.unreachable_why else "stale"
    at = datetime.fromtimestamp(fresh.unreachable_since, f.now.tzinfo or datetime.now().astimezone().tzinfo)
    zone = "Z" if at.utcoffset() is not None and not at.utcoffset() else ""  # as the header says it
    return (f"stale since {at.strftime('%H:%M:%S')}{zone}"
            + (f" ({fresh.unreachable_why})" if fresh.unreachable_why else ""))


class _Solo:
    """A one-cluster dashboard seen as a fleet of one."""

    def __init__(self, session: Session) -> None:
        self.context = session.source.context or session.source.path or "this cluster"
        self.session = session
        self.state = "live"
        self.error = None


class FleetScreen(DashScreen):
    HELP = """\
Fleet: every cluster this session watches, one row each; each has its own connection, so one
unreachable cluster never stalls the others.

cluster     ▶ marks the cluster the other screens show (the header names it)
reach       live · slow Ns (its liveness probe took N s) · stale (its watches report problems, or it stopped
            answering: "stale since HH:MM:SS (no answer for N s)" below) · connecting · unreachable
fresh       seconds since that cluster's last watch event
GPU         per pool flavor: budget / reserved / headroom of nvidia.com/gpu
pend, adm   Workloads pending in its ClusterQueues; admitted Workloads
crit        critical findings (8 Findings lists them for the subject)
drain       ClusterQueues with a stopPolicy that are not drained yet (drains in progress)
MultiKueue  manager ⇢N (N Workloads dispatched; then how many run on their worker ✓, are gone there ✖,
            or cannot be checked from here ?; ! a mismatch) · worker (a manager here maps to it, or it
            holds mirror Workloads) · none

MULTIKUEUE  every Workload a manager dispatched: nominated workers, the worker that admitted it, its
            context, and the state of the mirror Workload there (unknown when that worker cannot be
            read from here: never taken for gone); then each worker as the manager and this session
            see it, and the mismatches (orphaned mirrors, copies gone, workers unreachable from here).
            Workers map to contexts by name or by fleet.multiKueueClusters in the config file.
enter       make that cluster the subject of every other screen (on a dispatched Workload or a
            worker: that worker's cluster)"""

    DEFAULT_CSS = """
    FleetScreen #mk-findings, FleetScreen #fleet-errors { padding: 0 1; }
    """

    class SelectCluster(Message):
        """Make `context` the subject of every other screen (the app decides how)."""

        def __init__(self, context: str) -> None:
            super().__init__()
            self.context = context

    @property
    def session(self) -> Session:
        """The subject's session: the app's, which changes when another cluster is selected."""
        try:
            app_session = getattr(self.app, "session", None)
        except Exception:  # no running app (a screen built in a test)
            app_session = None
        return app_session if isinstance(app_session, Session) else self._own_session

    @session.setter
    def session(self, value: Session) -> None:
        self._own_session = value

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static(id="fleet-state", classes="tile")
            yield Section("CLUSTERS", KeyedTable(COLS, empty="no clusters", id="fleet"))
            yield Static(id="fleet-errors")
            yield Section("MULTIKUEUE", KeyedTable(DISPATCHED_COLS, empty="none dispatched",
                                                   id="mk-dispatched"))
            yield Section("MULTIKUEUE WORKERS", KeyedTable(WORKER_COLS, empty="no manager", id="mk-workers"))
            yield Static(id="mk-findings")

    def frame_signature(self, frame: Frame) -> tuple | None:
        return None  # the rows come from every member, not only the subject's frame: always redraw

    def _fleet(self) -> tuple[list[Any], str | None]:
        fleet = getattr(self.app, "fleet", None)
        if fleet is None:
            solo = _Solo(self.session)
            return [solo], solo.context
        return list(fleet.members), fleet.subject

    def _joins(self) -> dict[str, MultiKueueJoin]:
        fleet = getattr(self.app, "fleet", None)
        return dict(getattr(fleet, "joins", None) or {})

    def render_frame(self, frame: Frame) -> None:
        tones = self.tones
        members, subject = self._fleet()
        joins = self._joins()
        worker_of = {w.context: m for m, j in joins.items() for w in j.workers if w.context}
        rows, errors = [], []
        live = stale = 0
        for m in members:
            f = m.session.last_frame if m.state == "live" else None
            is_stale = f is not None and bool(f.freshness.problems or f.freshness.unreachable or f.freshness.stale_watches)
            live += m.state == "live" and not is_stale
            stale += is_stale
            mark = "▶ " if m.context == subject else "  "
            name = lit(f"{mark}{m.context}", "bold" if m.context == subject else "")
            reach = tones.mark({"live": "ok", "connecting": "partial"}.get(m.state, "bad"), m.state)
            if m.error and m.state != "live":
                errors.append((m.context, m.error))
            if is_stale:
                assert f is not None
                reach = tones.mark("warn", "stale")
                if f.freshness.unreachable:
                    errors.append((m.context, stale_text(f)))
            elif f is not None and (getattr(m, "probe_seconds", None) or 0) >= SLOW_PROBE:
                reach = tones.mark("partial", f"slow {m.probe_seconds:.0f}s")
            if f is None:
                cells = (name, reach, lit("–"), lit("–", tones.muted), lit("–"), lit("–"), lit("–"), lit("–"), lit("–"))
            else:
                v = f.view
                age = f.freshness.age
                pool = "  ".join(f"{short_flavor(fl.name)} "
                                 f"{qty(fl.budget, GPU)}/{qty(fl.reserved, GPU)}/{qty(fl.headroom, GPU)}"
                                 for fl in v.pool.flavors) or "no pool"
                pending = sum(q.pending for q in v.cluster_queues)
                admitted = sum(q.admitted for q in v.cluster_queues)
                crit = v.counts()["critical"] + sum(f.severity.value == "critical"
                                                    for f in (joins[m.context].findings if m.context in joins else ()))
                draining = sum(1 for q in v.cluster_queues if q.stop_policy != "None" and q.drained is not True)
                cells = (name, reach, lit("–" if age is None else f"{age:.0f}s"), lit(pool), lit(str(pending)),
                         lit(str(admitted)), lit(str(crit), tones.bad if crit else ""), lit(str(draining)),
                         self._mk_cell(m, f, joins.get(m.context), m.context in worker_of))
            rows.append(Row(m.context, cells, RowMeta(name=m.context, text=f"{m.context} {m.state} {m.error or ''}")))
        self.query_one("#fleet", KeyedTable).sync(rows)
        t = span("FLEET ", tones.heading)
        t.append(f"{len(members)} clusters · {live} live")
        if stale:
            t.append(f" · {stale} stale", style=tones.warn)
        if len(members) - live - stale:
            t.append(f" · {len(members) - live - stale} not live", style=tones.bad)
        if subject:
            t.append(lit(f" · showing {subject}", tones.muted))  # names come from kubeconfigs: made inert
        self.query_one("#fleet-state", Static).update(t)
        err = span("", "")
        for ctx, e in errors:
            err.append(lit(f"{ctx}: ", "bold"))
            err.append(lit(e, tones.muted))
            err.append("\n")
        self.query_one("#fleet-errors", Static).update(err)
        self._render_join(joins, len(members) > 1)

    def _mk_cell(self, m: Any, f: Frame | None, join: MultiKueueJoin | None, mapped: bool) -> Text:
        tones = self.tones
        if join is not None and join.unknown:
            return lit("manager ⇢?", tones.muted)
        if join is not None:
            t = lit(f"manager ⇢{len(join.dispatched)}")
            counts = join.remote_counts()
            for states, tone in ((("admitted", "finished"), "ok"), (("gone",), "bad"), (("unknown",), "unknown")):
                n = sum(counts.get(x, 0) for x in states)
                if n:
                    t.append(f" {MARK[tone]}{n}", style=tones.of(tone))
            if join.findings:
                t.append(" !", style=tones.bad)
            return t
        role = multikueue_role(m.session, f)
        return lit("worker" if mapped and role == "none" else role)

    def _render_join(self, joins: dict[str, MultiKueueJoin], several: bool) -> None:
        tones = self.tones
        self._targets = {}
        drows: list[Row] = []
        wrows: list[Row] = []
        for mgr, j in joins.items():
            ctx_of = {w.name: w.context for w in j.workers}
            for d in j.dispatched:
                key = f"{mgr}/{d.namespace}/{d.name}"
                target = ctx_of.get(d.cluster_name or "")
                if target:
                    self._targets[key] = target
                remote = (tones.mark(REMOTE_TONE.get(d.remote_state, "unknown"), d.remote_state) if d.remote_state
                          else lit("not yet", tones.muted))
                if not d.cluster_name:
                    worker = lit("–", tones.muted)
                elif target is None:
                    worker = lit(f"{d.cluster_name} (no context)", tones.muted)
                else:
                    worker = lit(d.cluster_name if target == d.cluster_name else f"{d.cluster_name} → {target}")
                drows.append(Row(key, (lit(f"{d.namespace}/{d.name}"), lit(mgr), lit(d.state),
                                       lit(", ".join(d.nominated) or "–", "" if d.nominated else tones.muted),
                                       worker, remote),
                                 RowMeta(name=d.name, namespace=d.namespace,
                                         text=f"{d.namespace}/{d.name} {mgr} {d.cluster_name or ''} {d.remote_state}")))
            for w in j.workers:
                key = f"{mgr}/{w.name}"
                if w.context:
                    self._targets[key] = w.context
                active = (tones.mark("ok", "Active") if w.active else
                          tones.mark("bad", f"not Active {w.reason}".strip()) if w.active is False
                          else tones.mark("unknown", "no Active condition"))
                reach = tones.mark("ok", "live") if w.reach == "live" else tones.mark("unknown", w.reach)
                wrows.append(Row(key, (lit(mgr), lit(w.name), lit(w.context or "–", "" if w.context else tones.muted),
                                       active, reach, lit("?" if w.mirrors is None else str(w.mirrors))),
                                 RowMeta(name=w.name, text=f"{mgr} {w.name} {w.context or ''} {w.reach}")))
        self.query_one("#mk-dispatched", KeyedTable).sync(drows)
        self.query_one("#mk-workers", KeyedTable).sync(wrows)
        out = span("", "")
        findings = [(mgr, f) for mgr, j in joins.items() for f in j.findings]
        for m in self._fleet()[0]:  # the managers' own: a disconnected worker is a finding, not a green check
            frame = m.session.last_frame if m.context in joins and m.state == "live" else None
            findings += [(m.context, f) for f in (frame.view.findings if frame else ()) if f.rule.startswith("MK-")]
        for mgr, j in joins.items():
            if j.unknown:
                out.append(tones.mark("unknown", f"{mgr}: the manager cannot be read now ({j.unknown}): "
                                                 "its dispatched Workloads and their workers are unknown"))
                out.append("\n")
        note = getattr(getattr(self.app, "fleet", None), "join_note", None)  # why no join is made (agents)
        if not joins and note:
            out.append(lit(note, tones.muted))
        elif not joins:
            out.append(lit("open several contexts (a manager and its workers) to join MultiKueue across them"
                           if not several else "no cluster here is a MultiKueue manager", tones.muted))
        elif not findings and not any(j.unknown for j in joins.values()):
            out.append(tones.mark("ok", "no MultiKueue findings: every worker connected and readable from here, "
                                        "no orphaned mirror, no copy gone"))
        for mgr, f in findings:
            out.append(tones.mark(SEVERITY_TONE.get(f.severity.value, "unknown"), f.rule))
            out.append("  ")
            out.append(lit(f"{mgr}: {f.message}"))
            out.append("\n")
        self.query_one("#mk-findings", Static).update(out)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        if key is None:
            return
        if event.data_table.id == "fleet":
            self.post_message(self.SelectCluster(str(key)))
        elif str(key) in getattr(self, "_targets", {}):  # a dispatched Workload or a worker: its cluster
            self.post_message(self.SelectCluster(self._targets[str(key)]))
