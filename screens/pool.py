"""2 Pool: how much GPU capacity each flavor has, what the budget is, who reserves and borrows it."""

from __future__ import annotations

from functools import partial

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from taudash.engine.rules.base import ObjRef
from taudash.engine.session import Frame

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.format import column_of, gpu_of, in_unit, qfloat, qty, ref_meta, ref_text, short_flavor, unit_for
from .kit.presenters import pool_summary
from .kit.text import Tones, lit, span
from .widgets.bars import bar, sparkline
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

EXCLUSION_TEXT = {
    "NotLinux": "not a Linux node",
    "SelectorMismatch": "does not match TauCluster spec.nodes.selector",
    "NotReady": "condition Ready is not True",
    "Unschedulable": "cordoned (spec.unschedulable)",
    "Deleting": "being deleted",
}

INVENTORY_COLS = [
    Col("flavor", "flavor", 16, ident=True),
    Col("nodes", "nodes", 7, right=True),
    Col("gpu", "GPUs", 5, right=True),
    Col("cpu", "CPU", 6, right=True, hide=3),
    Col("mem", "memory", 8, right=True, hide=2),
    Col("rdma", "RDMA", 5, right=True, hide=4),
    Col("budget", "budget", 7, right=True),
    Col("observed", "in Cohort", 11, hide=1),
]
RESERVE_COLS = [
    Col("flavor", "flavor", 16, ident=True),
    Col("bar", "reserved of budget", 18),
    Col("res", "reserved", 9, right=True),
    Col("used", "used", 5, right=True),
    Col("head", "headroom", 9, right=True),
    Col("spark", "last 30 min", 16),
]
EXCLUDED_COLS = [Col("node", "node", 16, ident=True), Col("flavor", "flavor", 12), Col("reason", "reason", flex=True)]
CONFLICT_COLS = [Col("code", "conflict", 20), Col("object", "object", 20, ident=True),
                 Col("message", "message and who fixes it", flex=True)]
HEALTH_COLS = [
    Col("node", "node", 16, ident=True),
    Col("flavor", "flavor", 12),
    Col("state", "state", 11),
    Col("gpus", "GPUs", 4, right=True),
    Col("reasons", "why (conditions, cordon, taints)", flex=True),
]
HEALTH_TONES = {"unhealthy": "bad", "unknown": "unknown", "degraded": "warn"}
QUEUE_COLS = [
    Col("queue", "workspace queue", 16, ident=True),
    Col("ws", "workspace", 12),
    Col("res", "reserved", 8, right=True),
    Col("used", "used", 5, right=True),
    Col("borrow", "borrowed", 8, right=True),
    Col("flavors", "GPUs per flavor (reserved/used)", flex=True),
]


def _res_pick(m, *names: str) -> str | None:
    for n in names:
        if n in m:
            return n
    return next((k for k in m if "rdma" in k), None) if "rdma" in names else None


class PoolScreen(DashScreen):
    HELP = """\
Pool answers "how much GPU capacity does each flavor have, and who uses it?".

INVENTORY      counted pool nodes per flavor (counted/candidates) and the sum of their allocatable
               resources. Inventory is allocatable capacity, not free capacity: running pods are not
               subtracted. "budget" is what the controller should publish; "in Cohort" what the
               team's root Cohort holds now (⚠ when they differ).
RESERVATIONS   Kueue reservations of the team's workspace queues against the budget, used, and
               headroom (budget − reserved). Negative headroom means overcommitted: nothing is
               evicted, new admissions wait. The sparkline shows reserved GPUs over 30 minutes
               (blank before the dashboard saw a sample).
EXCLUDED NODES  candidates that do not count, with the first failing reason.
GPU HEALTH     per flavor, GPUs not placeable or at risk (unhealthy, degraded, health unknown, cordoned,
               NotReady) and the nodes behind them; hidden while every GPU node is healthy. The
               Capacity screen (`:capacity`) draws them in their domains.
CONFLICTS      why the pool is invalid, and who owns the fix (TauGrid never rewrites others' budgets).
QUEUES         what each workspace queue reserves and borrows from the pool.

enter          open the object of the highlighted row"""

    def frame_signature(self, frame: Frame) -> tuple | None:
        sig = super().frame_signature(frame)
        # the sparklines move with time, not only with the view (None: always rendered)
        return None if sig is None else sig + (frame.history,)

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static(id="pool-summary", classes="tile")
            yield Static(id="pool-note", classes="note")
            yield Section("INVENTORY", KeyedTable(INVENTORY_COLS, empty="no pool flavors", id="pool-inventory"))
            yield Section("RESERVATIONS (GPUs)", KeyedTable(RESERVE_COLS, empty="no pool flavors", id="pool-reserved"))
            yield Section("EXCLUDED NODES",
                          KeyedTable(EXCLUDED_COLS, empty="✓ every candidate node counts", id="pool-excluded"))
            yield Section("GPU HEALTH", KeyedTable(HEALTH_COLS, empty="✓ every GPU node is healthy",
                                                   id="pool-health"), id="pool-health-section")
            yield Section("CONFLICTS", KeyedTable(CONFLICT_COLS, empty="✓ none", id="pool-conflicts"))
            yield Section("WORKSPACE QUEUES", KeyedTable(QUEUE_COLS, empty="no workspace queues", id="pool-queues"))

    def render_frame(self, frame: Frame) -> None:
        view, tones = frame.view, self.tones
        pool = view.pool
        self.query_one("#pool-summary", Static).update(pool_summary(view, tones))
        note = Text("inventory is allocatable capacity, not free capacity · a reservation is not proof that work runs",
                    style=tones.muted)
        if pool.mode == "None":
            note = Text(
                "TauCluster sets no spec.queues.capacityTeamRef and no team declares quota: "
                "there is no shared GPU pool to show. Cohorts and queues are on screen 3.",
                style=tones.muted,
            )
        for u in pool.unknown:
            note.append("\n⚠ unknown: ", style=tones.warn)
            note.append(lit(f"{u.resource} ({u.reason})", tones.warn))
            note.append(" — numbers that need it are hidden", style=tones.muted)
        self.query_one("#pool-note", Static).update(note)

        inv_rows, res_rows, exc_rows = [], [], []
        # one unit per column, chosen from the column's values (never "5.2Ti" above "1012.2Gi")
        inventories = [f.inventory for f in pool.flavors]
        cpu_col, mem_col = column_of(inventories, "cpu"), column_of(inventories, "memory")
        rdma_unit = unit_for(inv.get(_res_pick(inv, "rdma/ib", "rdma") or "") for inv in inventories)
        for f in pool.flavors:
            meta = RowMeta(kind="ResourceFlavor", name=f.name, text=f.gpu_class)
            gpu = gpu_of(f.inventory, f.budget, f.reserved)
            rdma = _res_pick(f.inventory, "rdma/ib", "rdma")
            name = lit(f.name)
            if f.disappeared:
                name.append(" (nodes gone)", style=tones.warn)
            observed = span("–", tones.unknown)
            if f.observed_budget:
                same = f.observed_budget.get(gpu or "") == f.budget.get(gpu or "")
                observed = Text(qty(f.observed_budget, gpu), end="")
                observed.append(" ✓" if same else " ⚠ drift", style=tones.ok if same else tones.warn)
            elif pool.mode == "Automatic":
                observed = span("? no Cohort", tones.warn)
            inv_rows.append(Row(f.name, (
                name,
                Text(f"{f.nodes}/{f.nodes + len(f.excluded)}", style=tones.warn if f.excluded else ""),
                qty(f.inventory, gpu),
                cpu_col(f.inventory),
                mem_col(f.inventory),
                in_unit(f.inventory.get(rdma or ""), rdma_unit),
                qty(f.budget, gpu),
                observed,
            ), meta))
            budget = f.observed_budget or f.budget
            res_v = qfloat(f.reserved, gpu)
            res_v = 0.0 if res_v is None and gpu else res_v
            head = f.headroom.get(gpu) if gpu else None
            head_t = span("–", tones.unknown) if head is None else Text(head.human(), end="")
            if head is not None and head.negative:
                head_t = span(f"{head.human()} ⚠", tones.warn)
            reserved = qty(f.reserved, gpu) if gpu in f.reserved else "0"
            res_rows.append(Row(f.name, (
                lit(f.name),
                bar(res_v, qfloat(budget, gpu), 18, tones),
                f"{reserved}/{qty(budget, gpu)}",
                qty(f.used, gpu) if gpu in f.used else "0",
                head_t,
                sparkline(frame.history.get(f.name, ()), tones, ceiling=qfloat(budget, gpu)),
            ), meta))
            for e in f.excluded:
                exc_rows.append(Row(e.node, (
                    lit(e.node),
                    lit(short_flavor(f.name)),
                    _exclusion(e.reason, tones),
                ), RowMeta(kind="Node", name=e.node, text=f"{f.name} {e.reason}")))
        self.query_one("#pool-inventory", KeyedTable).sync(inv_rows)
        self.query_one("#pool-reserved", KeyedTable).sync(res_rows)
        self.query_one("#pool-excluded", KeyedTable).sync(exc_rows)
        self._health(frame, tones)

        hints = {(f.object.kind, f.object.name): f.hint for f in view.findings if f.rule == "POOL-CONFLICT"}
        conflict_rows = []
        for c in pool.conflicts:
            ref = ObjRef(kind=c.kind, name=c.name)
            msg = lit(c.message)
            hint = hints.get((c.kind, c.name))
            if hint:
                msg.append(" → ", style=tones.muted)
                msg.append(lit(hint, tones.accent))
            conflict_rows.append(Row(f"{c.code}|{c.kind}|{c.name}", (
                Text(f"✖ {c.code}", style=tones.bad), ref_text(ref), msg,
            ), ref_meta(ref, c.code, c.message)))
        self.query_one("#pool-conflicts", KeyedTable).sync(conflict_rows)
        self.query_one("#pool-queues", KeyedTable).sync(self._queue_rows(frame, tones))

    def _health(self, frame: Frame, tones: Tones) -> None:
        """GPU HEALTH: shown only when some GPU is not healthy and placeable, or capacity is unknown."""
        cap = frame.view.capacity
        rows = []
        counts = []
        for f in cap.flavors:
            g = f.gpus
            parts = [f"{n} {w}" for n, w in ((g.unhealthy, "unhealthy"), (g.degraded, "degraded"),
                                              (g.unknown_health, "unknown"), (g.cordoned, "cordoned"),
                                              (g.not_ready, "NotReady")) if n]
            if parts:
                counts.append(f"{short_flavor(f.name)}: {', '.join(parts)}")
            for n in f.nodes:
                if n.health == "healthy" and n.schedulable and not n.reasons:
                    continue
                state = n.health if n.health != "healthy" else "cordoned" if not n.schedulable else "off"
                if n.health == "healthy" and "NotReady" in n.reasons:
                    state = "NotReady"
                rows.append(Row(n.name, (
                    lit(n.name), lit(short_flavor(f.name)),
                    tones.mark(HEALTH_TONES.get(n.health, "warn"), state), str(n.allocatable),
                    lit(", ".join(n.reasons) or "–"),
                ), RowMeta(kind="Node", name=n.name, text=f"{f.name} {state} {' '.join(n.reasons)}")))
        section = self.query_one("#pool-health-section", Section)
        section.display = bool(rows) or not cap.known
        section.set_note(" · ".join(counts) if cap.known else f"? unknown: {cap.unknown_reason}")
        self.query_one("#pool-health", KeyedTable).sync(rows)

    def _queue_rows(self, frame: Frame, tones: Tones) -> list[Row]:
        # 300 workspace queues at fleet scale: a row is rebuilt only when its queue's view object is new.
        cache = self.row_cache("queues")
        rows = [cache.row(q.cluster_queue, q, partial(_queue_row, q, tones), tones) for q in frame.view.pool.queues]
        cache.done()
        return rows


def _gpu_sum(m) -> float:
    return sum(v.as_float() for res in m.values() for k, v in res.items() if k.endswith("/gpu"))


def _queue_cells(q, tones: Tones) -> tuple:
    per = Text(end="")
    for i, fl in enumerate(sorted(set(q.reserved) | set(q.used))):
        g = gpu_of(q.reserved.get(fl, {}), q.used.get(fl, {}))
        if i:
            per.append(" · ")
        per.append(lit(short_flavor(fl)))
        per.append(f" {qty(q.reserved.get(fl, {}), g) if g in q.reserved.get(fl, {}) else '0'}"
                   f"/{qty(q.used.get(fl, {}), g) if g in q.used.get(fl, {}) else '0'}")
    name = lit(q.cluster_queue)
    if q.missing:
        name = span("✖ ", tones.bad)
        name.append(lit(q.cluster_queue))
        per = span("the ClusterQueue named by the workspace does not exist", tones.bad)
    return (name, lit(q.workspace or "–"), f"{_gpu_sum(q.reserved):g}", f"{_gpu_sum(q.used):g}",
            f"{_gpu_sum(q.borrowed):g}", per)


def _queue_row(q, tones: Tones) -> Row:
    return Row(q.cluster_queue, partial(_queue_cells, q, tones),
               RowMeta(kind="ClusterQueue", name=q.cluster_queue, text=q.workspace or ""))


def _exclusion(reason: str, tones: Tones) -> Text:
    t = span(f"⚠ {reason}", tones.warn)
    explain = EXCLUSION_TEXT.get(reason)
    if explain:
        t.append(f"  {explain}", style=tones.muted)
    return t
