"""Reusable steps: stop/restore admission, cancel pending work, wait for queues to drain."""

from __future__ import annotations

from ..model import Workload
from ..rules.queues import workload_cluster_queue
from .base import Check, Context, Operation, Plan, Progress, Step


def _cq_checks(ctx: Context, cqs: list[str]) -> list[Check]:
    if not ctx.store.readable("ClusterQueue"):
        return [Check(False, f"clusterqueues are {ctx.store.access('ClusterQueue').state.value}: cannot plan")]
    missing = [n for n in cqs if ctx.store.get("ClusterQueue", n) is None]
    if not cqs:
        return [Check(False, "no ClusterQueue selected")]
    return [Check(not missing, f"ClusterQueue(s) not found: {', '.join(missing)}" if missing else "queues exist")]


class SetStopPolicy(Step):
    """Set `spec.stopPolicy` on the chosen ClusterQueues (Hold, HoldAndDrain, or None to resume)."""

    def __init__(self, step_id: str, cqs: list[str], policy: str, title: str | None = None) -> None:
        self.id = step_id
        self.cqs = sorted(set(cqs))
        self.policy = policy
        self.title = title or (f"Stop admission ({policy})" if policy != "None" else "Restore admission")

    async def plan(self, ctx: Context) -> Plan:
        ops = []
        for name in self.cqs:
            cq = ctx.store.get("ClusterQueue", name)
            current = cq.spec.stop_policy if cq is not None else "?"
            if current == self.policy:
                continue

            def planner(cur: dict, policy=self.policy) -> dict | None:
                have = ((cur.get("spec") or {}).get("stopPolicy")) or "None"
                return None if have == policy else {"spec": {"stopPolicy": policy}}

            ops.append(Operation(
                "patch", "ClusterQueue", None, name,
                f"set stopPolicy {self.policy} on ClusterQueue {name}",
                patch={"spec": {"stopPolicy": self.policy}}, planner=planner,
                destructive=self.policy == "HoldAndDrain",  # evicts admitted work
                before=f"stopPolicy {current}", after=self.policy,
            ))
        notes = []
        if self.policy == "HoldAndDrain":
            notes.append("HoldAndDrain evicts admitted Workloads (their jobs are suspended and requeued) "
                         "and releases every reservation in these queues")
        elif self.policy == "Hold":
            notes.append("Hold: admitted Workloads run to completion; reservations not yet admitted are released")
        return Plan(ops, notes)

    def preconditions(self, ctx: Context, plan: Plan) -> list[Check]:
        return _cq_checks(ctx, self.cqs)

    def progress(self, ctx: Context) -> Progress:
        pending = [n for n in self.cqs if (q := ctx.store.get("ClusterQueue", n)) is not None and q.spec.stop_policy != self.policy]
        if pending:
            return Progress(False, f"waiting for the watch to show stopPolicy {self.policy} on {', '.join(pending)}",
                            remaining=len(pending))
        return Progress(True, f"stopPolicy {self.policy} on {', '.join(self.cqs)}", remaining=0)


def pending_workloads(ctx: Context, cqs: set[str]) -> list[Workload]:
    out = []
    for wl in ctx.store.list("Workload"):
        if wl.finished or wl.quota_reserved or not wl.spec.active:
            continue
        if workload_cluster_queue(ctx, wl) in cqs:  # type: ignore[arg-type]
            out.append(wl)
    return out


class CancelPending(Step):
    """Deactivate pending Workloads of the queues (`spec.active: false`, reversible), then wait
    until pending, reserving and admitted all reach zero."""

    def __init__(self, step_id: str, cqs: list[str], title: str = "Drain") -> None:
        self.id = step_id
        self.cqs = sorted(set(cqs))
        self.title = title

    async def plan(self, ctx: Context) -> Plan:
        ops = []
        for wl in pending_workloads(ctx, set(self.cqs)):
            ops.append(Operation(
                "patch", "Workload", wl.namespace, wl.name,
                f"deactivate pending Workload {wl.namespace}/{wl.name} (reversible: spec.active=false)",
                patch={"spec": {"active": False}},
                planner=lambda cur: {"spec": {"active": False}} if (cur.get("spec") or {}).get("active", True) else None,
                before="active true", after="active false",
            ))
        return Plan(ops, [f"deactivate {len(ops)} pending Workload(s); reactivate them later with "
                          "`taudash workflow start release --reactivate-from <this id>`"] if ops else [])

    def preconditions(self, ctx: Context, plan: Plan) -> list[Check]:
        checks = _cq_checks(ctx, self.cqs)
        for kind in ("Workload", "LocalQueue"):
            if not ctx.store.readable(kind):
                checks.append(Check(False, f"{kind} data is {ctx.store.access(kind).state.value}: cannot see pending work"))
        return checks

    def progress(self, ctx: Context) -> Progress:
        view = ctx.view()
        items, remaining, undone = [], 0, []
        for q in view.cluster_queues:
            if q.name not in self.cqs:
                continue
            obs = q.observed
            p, r, a = (obs.pending, obs.reserving, obs.admitted) if obs else (q.pending, q.reserving, q.admitted)
            items += [(f"{q.name} pending", p, 0), (f"{q.name} reserving", r, 0), (f"{q.name} admitted", a, 0)]
            remaining += p + r + a
            if q.drained is not True:
                undone.append(q.name)
        if undone:
            msg = f"pending+reserving+admitted {remaining} in {', '.join(undone)}"
            # Evicted work comes back as pending (still active): cancel it too, with a new plan.
            fresh = pending_workloads(ctx, set(self.cqs))
            return Progress(False, msg, remaining=remaining, items=items, replan=bool(fresh))
        return Progress(True, f"{', '.join(self.cqs)} drained", remaining=0, items=items)

    def verify(self, ctx: Context) -> list[Check]:
        view = ctx.view()
        return [Check(q.drained is True, f"{q.name} drained" if q.drained else f"{q.name} not drained")
                for q in view.cluster_queues if q.name in self.cqs]


class Reactivate(Step):
    """Reactivate Workloads a previous workflow deactivated (from its journal)."""

    def __init__(self, step_id: str, workloads: list[tuple[str, str]]) -> None:
        self.id = step_id
        self.workloads = sorted(set(workloads))
        self.title = "Reactivate cancelled Workloads"

    async def plan(self, ctx: Context) -> Plan:
        ops = []
        for ns, name in self.workloads:
            wl = ctx.store.get("Workload", name, ns)
            if wl is None or wl.spec.active or wl.finished:
                continue
            ops.append(Operation(
                "patch", "Workload", ns, name, f"reactivate Workload {ns}/{name}",
                patch={"spec": {"active": True}},
                planner=lambda cur: None if (cur.get("spec") or {}).get("active", True) else {"spec": {"active": True}},
                before="active false", after="active true",
            ))
        return Plan(ops)
