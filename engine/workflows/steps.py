"""Reusable steps: stop admission (remembering each queue's policy) and restore it, deactivate
pending work and wait for the queues to drain, reactivate what a workflow deactivated."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any

from ..model import ClusterQueue, Workload
from ..model.names import (
    # set on every Workload a workflow deactivates, removed on reactivation
    DEACTIVATED_BY_ANNOTATION as DEACTIVATED_BY,
)
from ..rules.base import RuleContext
from ..rules.queues import workload_cluster_queue
from .base import Check, Context, Operation, Plan, Progress, Step
from .journal import Journal, deactivated_by

# Journal event holding each queue's stopPolicy from before a hold step first changed it.
PREVIOUS_POLICIES = "stop-policies"

_LIST_NAMES = 10  # names shown per queue in a note; the count is always complete


def _cq_checks(ctx: Context, cqs: list[str]) -> list[Check]:
    if not ctx.store.readable("ClusterQueue"):
        return [Check(False, f"clusterqueues are {ctx.store.access('ClusterQueue').state.value}: cannot plan")]
    missing = [n for n in cqs if ctx.store.get(ClusterQueue, n) is None]
    if not cqs:
        return [Check(True, "no ClusterQueue to change")]
    return [Check(not missing, f"ClusterQueue(s) not found: {', '.join(missing)}" if missing else "queues exist")]


def _names(refs: list[str]) -> str:
    more = len(refs) - _LIST_NAMES
    return ", ".join(refs[:_LIST_NAMES]) + (f" … and {more} more" if more > 0 else "")


def previous_stop_policies(journal: Journal | None, step_id: str = "hold") -> dict[str, str]:
    """Each queue's stopPolicy from before `step_id` first planned to change it (read from the journal)."""
    out: dict[str, str] = {}
    for r in journal.records if journal is not None else []:
        if r["event"] == PREVIOUS_POLICIES and r["step"] == step_id:
            for name, policy in ((r.get("data") or {}).get("previous") or {}).items():
                out.setdefault(name, policy)  # the first record wins: later plans see our own writes
    return out


def _deactivate_if_active(cur: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any] | None:
    return patch if (cur.get("spec") or {}).get("active", True) else None


def _stop_policy_op(name: str, current: str, target: str) -> Operation:
    def planner(cur: dict[str, Any], policy: str = target) -> dict[str, Any] | None:
        have = ((cur.get("spec") or {}).get("stopPolicy")) or "None"
        return None if have == policy else {"spec": {"stopPolicy": policy}}

    return Operation(
        "patch", "ClusterQueue", None, name, f"set stopPolicy {target} on ClusterQueue {name}",
        patch={"spec": {"stopPolicy": target}}, planner=planner,
        destructive=target == "HoldAndDrain",  # evicts admitted work
        before=f"stopPolicy {current}", after=target,
    )


def stop_policy_written(op: dict[str, Any]) -> str | None:
    """The stopPolicy a journaled operation sets on a ClusterQueue (None: it is not such an operation)."""
    if op.get("kind") != "ClusterQueue" or op.get("verb") != "patch":
        return None
    policy = ((op.get("patch") or {}).get("spec") or {}).get("stopPolicy")
    return str(policy) if policy else None


def _held_work(ctx: Context, cqs: set[str]) -> dict[str, tuple[list[str], list[str]]]:
    """Per queue: (admitted, reserving-but-not-admitted) unfinished Workloads, as ns/name."""
    out: dict[str, tuple[list[str], list[str]]] = {n: ([], []) for n in cqs}
    for wl in ctx.store.list(Workload):
        if wl.finished or not wl.quota_reserved:
            continue
        cq = workload_cluster_queue(ctx, wl)  # type: ignore[arg-type]
        if cq in out:
            out[cq][0 if wl.admitted else 1].append(f"{wl.namespace}/{wl.name}")
    return {n: (sorted(a), sorted(r)) for n, (a, r) in out.items()}


class SetStopPolicy(Step):
    """Set `spec.stopPolicy` on the chosen ClusterQueues (Hold or HoldAndDrain; None for a release).

    A hold records each queue's stopPolicy before its first plan (journal event `stop-policies`),
    so `RestoreStopPolicy` can put back exactly what was there. A queue already on the target is
    not written, but its previous policy is still recorded."""

    def __init__(self, step_id: str, cqs: list[str], policy: str, title: str | None = None,
                 why: dict[str, list[str]] | None = None) -> None:
        self.id = step_id
        self.cqs = sorted(set(cqs))
        self.policy = policy
        self.why = why or {}
        self.title = title or (f"Stop admission ({policy})" if policy != "None" else "Restore admission")

    def _record_previous(self, ctx: Context) -> dict[str, str]:
        known = previous_stop_policies(ctx.journal, self.id)
        fresh = {}
        for name in self.cqs:
            cq = ctx.store.get(ClusterQueue, name)
            if name not in known and cq is not None:
                fresh[name] = cq.spec.stop_policy or "None"
        if fresh and ctx.journal is not None:
            ctx.journal.append(PREVIOUS_POLICIES, self.id, {"previous": fresh})
        return {**fresh, **known}

    async def plan(self, ctx: Context) -> Plan:
        previous = self._record_previous(ctx) if self.policy != "None" else {}
        ops, notes, untouched = [], [], []
        for name in self.cqs:
            cq = ctx.store.get(ClusterQueue, name)
            current = cq.spec.stop_policy if cq is not None else "?"
            if current == self.policy:
                untouched.append(name)
                continue
            ops.append(_stop_policy_op(name, current, self.policy))
        for name in self.cqs:
            if name in self.why:
                notes.append(f"{name}: " + "; ".join(self.why[name]))
        if previous:
            notes.append("previous stopPolicy (restored at the end): "
                         + ", ".join(f"{n} {p}" for n, p in sorted(previous.items())))
        if untouched:
            notes.append(f"already on {self.policy}, not written: {', '.join(untouched)}")
        changing = {op.name for op in ops}
        work = _held_work(ctx, changing) if self.policy in ("Hold", "HoldAndDrain") and changing else {}
        if self.policy == "HoldAndDrain":
            notes.append("HoldAndDrain evicts admitted Workloads (their jobs are suspended and requeued) "
                         "and releases every reservation in these queues")
            for name in sorted(work):
                admitted, reserving = work[name]
                if admitted:
                    notes.append(f"evicts {len(admitted)} admitted Workload(s) in {name}: {_names(admitted)}")
                if reserving:
                    notes.append(f"releases {len(reserving)} reserving Workload(s) in {name}: {_names(reserving)}")
        elif self.policy == "Hold":
            notes.append("Hold: admitted Workloads run to completion; reservations not yet admitted are released")
            for name in sorted(work):
                if work[name][1]:
                    notes.append(f"releases {len(work[name][1])} reserving Workload(s) in {name}: "
                                 f"{_names(work[name][1])}")
        return Plan(ops, notes)

    def preconditions(self, ctx: Context, plan: Plan) -> list[Check]:
        return _cq_checks(ctx, self.cqs)

    def landed(self, op: dict[str, Any], obj: dict[str, Any] | None) -> bool:
        target = stop_policy_written(op)
        if target is None or obj is None:
            return super().landed(op, obj)
        return bool(((obj.get("spec") or {}).get("stopPolicy") or "None") == target)  # absent means None

    def _target(self, name: str) -> str:
        return self.policy

    def progress(self, ctx: Context) -> Progress:
        pending = [n for n in self.cqs
                   if (q := ctx.store.get(ClusterQueue, n)) is not None and q.spec.stop_policy != self._target(n)]
        if pending:
            return Progress(False, "waiting for the watch to show "
                            + ", ".join(f"stopPolicy {self._target(n)} on {n}" for n in pending),
                            remaining=len(pending))
        if not self.cqs:
            return Progress(True, "no ClusterQueue to change", remaining=0)
        return Progress(True, ", ".join(f"{n} stopPolicy {self._target(n)}" for n in self.cqs), remaining=0)


class RestoreStopPolicy(SetStopPolicy):
    """Put each queue back to the stopPolicy it had before the hold step `from_step` (a queue that
    was on Hold stays on Hold). A queue with no record (a journal from before this was recorded)
    goes back to None, as a release would."""

    def __init__(self, step_id: str, cqs: list[str], from_step: str = "hold",
                 title: str = "Restore admission (each queue's previous stopPolicy)",
                 targets: dict[str, str] | None = None) -> None:
        super().__init__(step_id, cqs, "None", title)
        self.from_step = from_step
        self.targets = targets  # read from another workflow's journal (a release of that workflow)
        self._previous: dict[str, str] = dict(targets or {})

    def _target(self, name: str) -> str:
        return self._previous.get(name, "None")

    async def plan(self, ctx: Context) -> Plan:
        if self.targets is None:
            self._previous = previous_stop_policies(ctx.journal, self.from_step)
        ops, notes = [], []
        for name in self.cqs:
            cq = ctx.store.get(ClusterQueue, name)
            current = cq.spec.stop_policy if cq is not None else "?"
            target = self._target(name)
            if name not in self._previous:
                notes.append(f"{name}: no previous stopPolicy recorded: restored to None")
            if current == target:
                notes.append(f"{name}: already on {target}, not written")
                continue
            ops.append(_stop_policy_op(name, current, target))
        return Plan(ops, notes)

    def progress(self, ctx: Context) -> Progress:
        if self.targets is None and not self._previous:  # a resume that starts at the wait
            self._previous = previous_stop_policies(ctx.journal, self.from_step)
        return super().progress(ctx)


def pending_workloads(ctx: Context, cqs: set[str]) -> list[Workload]:
    out = []
    rules = RuleContext(store=ctx.store, now=datetime.fromtimestamp(ctx.clock(), UTC), config=ctx.config)
    for wl in ctx.store.list(Workload):
        if wl.finished or wl.quota_reserved or not wl.spec.active:
            continue
        cq = workload_cluster_queue(rules, wl)
        if cq is not None and cq in cqs:
            out.append(wl)
    return out


def evicted_by_hold(ctx: Context, cqs: set[str]) -> list[Workload]:
    """Active Workloads holding quota in those of `cqs` that are on HoldAndDrain: Kueue evicts them and they
    come back pending (still active) unless deactivated."""
    draining = {n for n in cqs if (q := ctx.store.get(ClusterQueue, n)) is not None
                and q.spec.stop_policy == "HoldAndDrain"}
    out: list[Workload] = []
    rules = RuleContext(store=ctx.store, now=datetime.fromtimestamp(ctx.clock(), UTC), config=ctx.config)
    for wl in ctx.store.list(Workload):
        if wl.finished or not wl.quota_reserved or not wl.spec.active:
            continue
        if workload_cluster_queue(rules, wl) in draining:
            out.append(wl)
    return sorted(out, key=lambda w: (w.namespace or "", w.name))


def deactivation_patch(workflow_id: str) -> dict[str, Any]:
    return {"spec": {"active": False}, "metadata": {"annotations": {DEACTIVATED_BY: workflow_id}}}


REACTIVATION_PATCH = {"spec": {"active": True}, "metadata": {"annotations": {DEACTIVATED_BY: None}}}


class DeactivatePending(Step):
    """Deactivate pending Workloads of the queues (`spec.active: false`, reversible, annotated with
    the workflow id), then wait until pending, reserving and admitted all reach zero."""

    def __init__(self, step_id: str, cqs: list[str],
                 title: str = "Deactivate pending Workloads, then wait for the queues to drain") -> None:
        self.id = step_id
        self.cqs = sorted(set(cqs))
        self.title = title

    async def plan(self, ctx: Context) -> Plan:
        wid = ctx.journal.id if ctx.journal is not None else "taudash"
        patch = deactivation_patch(wid)
        ops = []
        for wl in pending_workloads(ctx, set(self.cqs)):
            ops.append(Operation(
                "patch", "Workload", wl.namespace, wl.name,
                f"deactivate pending Workload {wl.namespace}/{wl.name} (reversible: spec.active=false, "
                f"annotated {DEACTIVATED_BY}={wid})",
                patch=patch,
                planner=partial(_deactivate_if_active, patch=patch),
                before="active true", after="active false",
            ))
        notes = [f"deactivate {len(ops)} pending Workload(s); reactivate them later with "
                 f"`taudash workflow start release --reactivate-from {wid}`"] if ops else []
        # HoldAndDrain sends admitted and reserving Workloads back to pending; they would be proposed in
        # later rounds. Name them now so one confirmation covers them (anything else still asks).
        evicting = evicted_by_hold(ctx, set(self.cqs))
        covers = [f"patch:Workload {wl.namespace}/{wl.name}" for wl in evicting]
        if evicting:
            names = ", ".join(f"{wl.namespace}/{wl.name}" for wl in evicting[:10])
            more = f" … and {len(evicting) - 10} more" if len(evicting) > 10 else ""
            notes.append(f"HoldAndDrain is evicting {len(evicting)} Workload(s) that come back pending: confirming "
                         f"also deactivates them as they do, without asking again: {names}{more}")
        return Plan(ops, notes, covers=covers)

    def preconditions(self, ctx: Context, plan: Plan) -> list[Check]:
        checks = _cq_checks(ctx, self.cqs)
        for kind in ("Workload", "LocalQueue"):
            if not ctx.store.readable(kind):
                checks.append(Check(False,
                                    f"{kind} data is {ctx.store.access(kind).state.value}: cannot see pending work"))
        return checks

    def progress(self, ctx: Context) -> Progress:
        view = ctx.view()
        items: list[tuple[str, float, float]] = []
        remaining, undone = 0, []
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
            # Evicted work comes back as pending (still active): deactivate it too, with a new plan.
            fresh = pending_workloads(ctx, set(self.cqs))
            return Progress(False, msg, remaining=remaining, items=items, replan=bool(fresh))
        return Progress(True, f"{', '.join(self.cqs) or 'no queue'} drained", remaining=0, items=items)

    def verify(self, ctx: Context) -> list[Check]:
        view = ctx.view()
        checks = [Check(q.drained is True, f"{q.name} drained" if q.drained else f"{q.name} not drained")
                  for q in view.cluster_queues if q.name in self.cqs]
        if ctx.journal is not None:
            done = [f"{ns}/{name}" for ns, name in deactivated_by(ctx.journal)]
            checks.append(Check(True, f"deactivated {len(done)} Workload(s)" + (
                f": {_names(done)}; reactivate with `taudash workflow start release --reactivate-from "
                f"{ctx.journal.id}`" if done else "")))
        return checks


class Reactivate(Step):
    """Reactivate Workloads a previous workflow deactivated (from its journal), removing the
    deactivated-by annotation. One another workflow has deactivated since is left alone."""

    def __init__(self, step_id: str, workloads: list[tuple[str, str]], source: str | None = None,
                 title: str = "Reactivate the Workloads the workflow deactivated", own: bool = False) -> None:
        self.id = step_id
        self.workloads = sorted(set(workloads))
        self.source = source
        self.title = title
        self.own = own  # also what this run deactivated itself (read from its journal at plan time)

    async def plan(self, ctx: Context) -> Plan:
        ops, notes, gone, others = [], [], 0, []
        workloads = list(self.workloads)
        allowed = {self.source} if self.source else set()
        if self.own and ctx.journal is not None:
            workloads = sorted(set(workloads) | {(w[0], w[1]) for w in deactivated_by(ctx.journal)})
            allowed.add(ctx.journal.id)
        for ns, name in workloads:
            wl = ctx.store.get(Workload, name, ns)
            if wl is None or wl.finished:
                gone += 1
                continue
            if wl.spec.active:
                continue
            by = wl.metadata.annotations.get(DEACTIVATED_BY)
            if allowed and by and by not in allowed:
                others.append(f"{ns}/{name} ({by})")
                continue
            ops.append(Operation(
                "patch", "Workload", ns, name, f"reactivate Workload {ns}/{name}",
                patch=REACTIVATION_PATCH,
                planner=lambda cur: None if (cur.get("spec") or {}).get("active", True) else REACTIVATION_PATCH,
                before="active false", after="active true",
            ))
        if ops:
            notes.append(f"reactivate {len(ops)} Workload(s)"
                         + (f" deactivated by workflow {self.source}" if self.source else ""))
        if gone:
            notes.append(f"{gone} Workload(s) no longer exist or have finished: nothing to reactivate")
        if others:
            notes.append(f"left inactive (deactivated since by another workflow): {_names(others)}")
        return Plan(ops, notes)
