"""0 Fleet: every cluster of the session in one table; Enter makes one the subject of the other screens.

The app hands this screen the subject's frame like any other; the rows come from every member's own
session (`app.fleet`, duck-typed: `members` with `context`, `session`, `state`, `error`, and
`subject`). A dashboard on one cluster shows one row, from its own session.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from taudash.engine.session import Frame, Session

from .base import DashScreen
from .filtering import RowMeta
from .format import qty, short_flavor
from .text import lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

GPU = "nvidia.com/gpu"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
COLS = [Col("ctx", "cluster", 18, ident=True), Col("reach", "reach", 14), Col("age", "fresh", 5, right=True),
        Col("pool", "GPU budget/reserved/headroom", flex=True),
        Col("pend", "pend", 5, right=True), Col("adm", "adm", 5, right=True),
        Col("crit", "crit", 5, right=True), Col("drain", "drain", 5, right=True), Col("mk", "MK role", 8)]


def multikueue_role(session: Session, frame: Frame | None) -> str:
    """manager (it dispatches: MultiKueue workers listed), worker (holds mirror Workloads) or none."""
    if frame is not None and frame.view.multikueue.workers:
        return "manager"
    if any(ORIGIN_LABEL in (w.metadata.labels or {}) for w in session.store.list("Workload")):
        return "worker"
    return "none"


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
reach       live · stale (its watches report problems) · connecting · unreachable (the error below)
fresh       seconds since that cluster's last watch event
GPU         per pool flavor: budget / reserved / headroom of nvidia.com/gpu
pend, adm   Workloads pending in its ClusterQueues; admitted Workloads
crit        critical findings (8 Findings lists them for the subject)
drain       ClusterQueues with a stopPolicy that are not drained yet (drains in progress)
MK role     manager (dispatches to workers) · worker (holds mirror Workloads) · none
enter       make that cluster the subject of every other screen"""

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

    def frame_signature(self, frame: Frame) -> tuple | None:
        return None  # the rows come from every member, not only the subject's frame: always redraw

    def _fleet(self) -> tuple[list[Any], str | None]:
        fleet = getattr(self.app, "fleet", None)
        if fleet is None:
            solo = _Solo(self.session)
            return [solo], solo.context
        return list(fleet.members), fleet.subject

    def render_frame(self, frame: Frame) -> None:
        tones = self.tones
        members, subject = self._fleet()
        rows, errors = [], []
        live = 0
        for m in members:
            f = m.session.last_frame if m.state == "live" else None
            live += m.state == "live"
            mark = "▶ " if m.context == subject else "  "
            name = lit(f"{mark}{m.context}", "bold" if m.context == subject else "")
            reach = tones.mark({"live": "ok", "connecting": "partial"}.get(m.state, "bad"), m.state)
            if m.error and m.state != "live":
                errors.append((m.context, m.error))
            if f is not None and f.freshness.problems:
                reach = tones.mark("warn", "stale")
            if f is None:
                cells = (name, reach, lit("–"), lit("–", tones.muted), lit("–"), lit("–"), lit("–"), lit("–"), lit("–"))
            else:
                v = f.view
                age = f.freshness.age
                pool = "  ".join(f"{short_flavor(fl.name)} {qty(fl.budget, GPU)}/{qty(fl.reserved, GPU)}/{qty(fl.headroom, GPU)}"
                                 for fl in v.pool.flavors) or "no pool"
                pending = sum(q.pending for q in v.cluster_queues)
                admitted = sum(q.admitted for q in v.cluster_queues)
                crit = v.counts()["critical"]
                draining = sum(1 for q in v.cluster_queues if q.stop_policy != "None" and q.drained is not True)
                cells = (name, reach, lit("–" if age is None else f"{age:.0f}s"), lit(pool), lit(str(pending)),
                         lit(str(admitted)), lit(str(crit), tones.bad if crit else ""), lit(str(draining)),
                         lit(multikueue_role(m.session, f)))
            rows.append(Row(m.context, cells, RowMeta(name=m.context, text=f"{m.context} {m.state} {m.error or ''}")))
        self.query_one("#fleet", KeyedTable).sync(rows)
        t = span("FLEET ", tones.heading)
        t.append(f"{len(members)} clusters · {live} live")
        if len(members) - live:
            t.append(f" · {len(members) - live} not live", style=tones.bad)
        t.append(lit(f" · showing {subject}", tones.muted))  # names come from kubeconfigs: made inert
        self.query_one("#fleet-state", Static).update(t)
        err = span("", "")
        for ctx, e in errors:
            err.append(lit(f"{ctx}: ", "bold"))
            err.append(lit(e, tones.muted))
            err.append("\n")
        self.query_one("#fleet-errors", Static).update(err)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.SelectCluster(str(event.row_key.value)))
