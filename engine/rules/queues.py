"""Cohorts and ClusterQueues (DESIGN §5.3): quotas, reservations, borrowing, stop state, why work waits.

Capacity arithmetic is kept here, apart from I/O, in the spirit of Kueue's resource_node.go.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import Field

from ..model import ZERO, ClusterQueue, Quantity, Workload
from ..model.names import MANAGED_BY_LABEL as MANAGED_BY
from ..model.names import TEAM_LABEL, WORKSPACE_LABEL
from .base import Finding, QuantityField, RuleContext, Severity, ViewModel, finding


class QueueResource(ViewModel):
    name: str
    nominal: QuantityField = ZERO
    borrowing_limit: QuantityField | None = None
    lending_limit: QuantityField | None = None
    reserved: QuantityField = ZERO
    used: QuantityField = ZERO
    borrowed: QuantityField = ZERO


class QueueFlavor(ViewModel):
    name: str
    resources: list[QueueResource] = []


class ObservedCounts(ViewModel):
    pending: int = 0
    reserving: int = 0
    admitted: int = 0
    # deactivated and holding no quota; shown as ClusterQueueView.inactive (Kueue's status has no such count)
    inactive: int = Field(0, exclude=True)


class ClusterQueueView(ViewModel):
    name: str
    cohort: str | None = None
    stop_policy: str = "None"
    active: bool | None = None
    active_reason: str = ""
    active_message: str = ""
    pending: int = 0
    reserving: int = 0
    admitted: int = 0
    # unfinished Workloads routed here with spec.active false and no quota (None: Workloads unreadable);
    # not in `pending`, which counts only what Kueue may still admit
    inactive: int | None = None
    drained: bool | None = False
    observed: ObservedCounts | None = None  # counted from the Workloads the store holds
    queueing_strategy: str = "BestEffortFIFO"
    managed: bool = False
    team: str | None = None
    workspace: str | None = None
    admission_checks: list[str] = []
    flavors: list[QueueFlavor] = []


class CohortResource(ViewModel):
    name: str
    nominal: QuantityField = ZERO  # the Cohort object's own nominal quota
    member_nominal: QuantityField = ZERO
    reserved: QuantityField = ZERO
    used: QuantityField = ZERO
    borrowed: QuantityField = ZERO


class CohortFlavor(ViewModel):
    name: str
    resources: list[CohortResource] = []


class CohortView(ViewModel):
    name: str
    implicit: bool
    parent: str | None = None
    members: list[str] = []
    children: list[str] = []
    managed: bool = False
    team: str | None = None
    flavors: list[CohortFlavor] = []


class WaitingWorkload(ViewModel):
    namespace: str
    name: str
    queue_name: str = ""
    cluster_queue: str | None = None
    owner_kind: str | None = None
    owner_name: str | None = None
    status: str  # pending | quotaReserved (admission checks outstanding)
    condition: str
    reason: str
    message: str
    active: bool = True


TAU_MANAGER = "tau-core-controller"


def _usage(entries) -> dict[tuple[str, str], Quantity]:
    out: dict[tuple[str, str], Quantity] = {}
    for fl in entries:
        for r in fl.resources:
            out[(fl.name, r.name)] = out.get((fl.name, r.name), ZERO) + r.total
    return out


def cq_flavors(cq: ClusterQueue) -> list[QueueFlavor]:
    reserved = _usage(cq.status.flavors_reservation)
    used = _usage(cq.status.flavors_usage)
    flavors: list[QueueFlavor] = []
    for rg in cq.spec.resource_groups:
        for fl in rg.flavors:
            res = []
            for r in fl.resources:
                rv = reserved.get((fl.name, r.name), ZERO)
                borrowed = (rv - r.nominal_quota).max0() if cq.spec.cohort_name else ZERO
                res.append(
                    QueueResource.trusted(  # quantities straight from the (validated) ClusterQueue
                        name=r.name,
                        nominal=r.nominal_quota,
                        borrowing_limit=r.borrowing_limit,
                        lending_limit=r.lending_limit,
                        reserved=rv,
                        used=used.get((fl.name, r.name), ZERO),
                        borrowed=borrowed,
                    )
                )
            flavors.append(QueueFlavor.trusted(name=fl.name, resources=sorted(res, key=lambda x: x.name)))
    return flavors


def workload_cluster_queue(ctx: RuleContext, wl: Workload) -> str | None:
    """The ClusterQueue a Workload is admitted to, else the one its LocalQueue points at."""
    if wl.status.admission and wl.status.admission.cluster_queue:
        return wl.status.admission.cluster_queue
    lq = ctx.store.get("LocalQueue", wl.spec.queue_name, wl.namespace) if wl.spec.queue_name else None
    return lq.spec.cluster_queue if lq is not None and lq.spec.cluster_queue else None


Bucket = tuple[str, int, int, int, int]  # (queue, pending, reserving, admitted, inactive)


def observed_bucket(ctx: RuleContext, wl: Workload) -> Bucket | None:
    """What one Workload adds to its ClusterQueue's observed counts."""
    return workload_facts(ctx, wl)[0]


def workload_facts(ctx: RuleContext, wl: Workload) -> tuple[Bucket | None, WaitingWorkload | None]:
    """Everything the rules read from one Workload, in one pass over its conditions: its observed-count
    bucket (`observed_bucket`) and its waiting row (`waiting_workload`). A fleet has 100k of them."""
    finished = admitted = qr = None
    for c in wl.status.conditions:  # the first condition of each type counts
        t = c.type
        if t == "Finished":
            finished = c if finished is None else finished
        elif t == "Admitted":
            admitted = c if admitted is None else admitted
        elif t == "QuotaReserved":
            qr = c if qr is None else qr
    if finished is not None and finished.status == "True":
        return None, None
    reserved = qr is not None and qr.status == "True"
    is_admitted = admitted is not None and admitted.status == "True"
    active = wl.spec.active
    cq = workload_cluster_queue(ctx, wl)
    bucket: Bucket | None = None
    if cq is not None:
        if reserved:  # deactivated but still holding quota (being evicted) stays reserving until released
            bucket = (cq, 0, 1, 1 if is_admitted else 0, 0)
        else:  # deactivated and holding no quota: Kueue does not count it pending; it never will run as is
            bucket = (cq, 1, 0, 0, 0) if active else (cq, 0, 0, 0, 1)
    if is_admitted:
        return bucket, None
    why = _why(wl, active, qr, admitted)
    owner = wl.owner
    return bucket, WaitingWorkload.trusted(
        namespace=wl.namespace or "",
        name=wl.name,
        queue_name=wl.spec.queue_name,
        cluster_queue=cq,
        owner_kind=owner.kind if owner else None,
        owner_name=owner.name if owner else None,
        status="quotaReserved" if reserved else "pending",
        condition=why[0],
        reason=why[1],
        message=why[2],
        active=active,
    )


Facts = list[tuple[Bucket | None, "WaitingWorkload | None"]]


def all_workload_facts(ctx: RuleContext) -> Facts:
    """`workload_facts` of every Workload, computed once for both the counts and the waiting list."""
    return [workload_facts(ctx, wl) for wl in ctx.store.list("Workload")]


def observed_counts(ctx: RuleContext, facts: Facts | None = None) -> dict[str, ObservedCounts]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for b, _ in facts if facts is not None else all_workload_facts(ctx):
        if b is None:
            continue
        c = counts[b[0]]
        c[0] += b[1]
        c[1] += b[2]
        c[2] += b[3]
        c[3] += b[4]
    return {k: observed(v) for k, v in counts.items()}


def observed(counts: list[int]) -> ObservedCounts:
    """ObservedCounts from [pending, reserving, admitted, inactive]."""
    return ObservedCounts(pending=counts[0], reserving=counts[1], admitted=counts[2], inactive=counts[3])


def derive_cluster_queues(ctx: RuleContext, facts: Facts | None = None) -> tuple[list[ClusterQueueView], list[Finding]]:
    findings: list[Finding] = []
    views: list[ClusterQueueView] = []
    workloads_readable = ctx.store.readable("Workload") and ctx.store.readable("LocalQueue")
    observed = observed_counts(ctx, facts) if workloads_readable else {}
    for cq in ctx.store.list("ClusterQueue"):
        obs = observed.get(cq.name, ObservedCounts()) if workloads_readable else None
        view, f = cluster_queue_view(cq, obs)
        views.append(view)
        findings += f
    return views, findings


def cluster_queue_view(
    cq: ClusterQueue, obs: ObservedCounts | None, flavors: list[QueueFlavor] | None = None
) -> tuple[ClusterQueueView, list[Finding]]:
    """One ClusterQueue's view and findings; `obs` None when the Workloads cannot be read.
    `flavors`: cq_flavors(cq) when the caller already has it (it depends on `cq` alone)."""
    findings: list[Finding] = []
    active = cq.condition("Active")
    st = cq.status
    stop = cq.spec.stop_policy or "None"
    zero_status = st.pending_workloads == st.reserving_workloads == st.admitted_workloads == 0
    if stop == "None" or not zero_status:
        drained: bool | None = False
    elif obs is None:
        drained = None  # status says zero but the Workloads cannot be read: unknown
    else:
        drained = obs.pending == obs.reserving == obs.admitted == 0
    labels = cq.labels
    view = ClusterQueueView(
        name=cq.name,
        cohort=cq.spec.cohort_name or None,
        stop_policy=stop,
        active=None if active is None or active.status not in ("True", "False") else active.is_true,
        active_reason=active.reason if active else "",
        active_message=active.message if active else "",
        pending=st.pending_workloads,
        reserving=st.reserving_workloads,
        admitted=st.admitted_workloads,
        inactive=obs.inactive if obs is not None else None,
        drained=drained,
        observed=obs,
        queueing_strategy=cq.spec.queueing_strategy,
        managed=labels.get(MANAGED_BY) == TAU_MANAGER,
        team=labels.get(TEAM_LABEL),
        workspace=labels.get(WORKSPACE_LABEL),
        admission_checks=cq.spec.admission_check_names,
        flavors=cq_flavors(cq) if flavors is None else flavors,
    )
    if stop != "None":
        state = "drained" if drained else ("drain state unknown" if drained is None else "draining")
        findings.append(
            finding(
                Severity.INFO,
                "CQ-STOPPED",
                "ClusterQueue",
                cq.name,
                None,
                f"stopPolicy {stop}: no new admissions; pending {st.pending_workloads}, reserving "
                f"{st.reserving_workloads}, admitted {st.admitted_workloads} ({state})",
                "set stopPolicy: None to restore admission when the change is done",
            )
        )
    elif active is not None and active.is_false:
        findings.append(
            finding(
                Severity.WARNING,
                "CQ-INACTIVE",
                "ClusterQueue",
                cq.name,
                None,
                f"Active=False {active.reason}: {active.message}",
                "the queue admits nothing until the named problem is fixed",
            )
        )
    return view, findings


def derive_cohorts(ctx: RuleContext, queues: list[ClusterQueueView]) -> list[CohortView]:
    explicit = {c.name: c for c in ctx.store.list("Cohort")}
    names = set(explicit) | {q.cohort for q in queues if q.cohort}
    names |= {c.spec.parent_name for c in explicit.values() if c.spec.parent_name}
    members: dict[str, list[ClusterQueueView]] = defaultdict(list)
    for q in queues:
        if q.cohort:
            members[q.cohort].append(q)
    children: dict[str, list[str]] = defaultdict(list)
    for c in explicit.values():
        if c.spec.parent_name:
            children[c.spec.parent_name].append(c.name)

    out: list[CohortView] = []
    for name in sorted(names):
        obj = explicit.get(name)
        acc: dict[tuple[str, str], dict[str, Quantity]] = {}

        def slot(fl: str, res: str, acc=acc) -> dict[str, Quantity]:
            return acc.setdefault((fl, res), {k: ZERO for k in ("nominal", "member", "reserved", "used", "borrowed")})

        if obj is not None:
            for rg in obj.spec.resource_groups:
                for fl in rg.flavors:
                    for r in fl.resources:
                        s = slot(fl.name, r.name)
                        s["nominal"] = s["nominal"] + r.nominal_quota
        for q in members.get(name, []):
            for fl in q.flavors:
                for r in fl.resources:
                    s = slot(fl.name, r.name)
                    s["member"] = s["member"] + r.nominal
                    s["reserved"] = s["reserved"] + r.reserved
                    s["used"] = s["used"] + r.used
                    s["borrowed"] = s["borrowed"] + r.borrowed
        by_flavor: dict[str, list[CohortResource]] = defaultdict(list)
        for (fl, res), s in sorted(acc.items()):
            by_flavor[fl].append(
                CohortResource(
                    name=res,
                    nominal=s["nominal"],
                    member_nominal=s["member"],
                    reserved=s["reserved"],
                    used=s["used"],
                    borrowed=s["borrowed"],
                )
            )
        labels = obj.labels if obj is not None else {}
        out.append(
            CohortView(
                name=name,
                implicit=obj is None,
                parent=(obj.spec.parent_name or None) if obj is not None else None,
                members=sorted(q.name for q in members.get(name, [])),
                children=sorted(children.get(name, [])),
                managed=labels.get(MANAGED_BY) == TAU_MANAGER,
                team=labels.get(TEAM_LABEL),
                flavors=[CohortFlavor(name=f, resources=r) for f, r in sorted(by_flavor.items())],
            )
        )
    return out


def why_waiting(wl: Workload) -> tuple[str, str, str] | None:
    """(condition, reason, message) explaining why an unfinished Workload is not admitted, else None."""
    if wl.finished or wl.admitted:
        return None
    return _why(wl, wl.spec.active, wl.condition("QuotaReserved"), wl.condition("Admitted"))


def _why(wl: Workload, active: bool, qr, adm) -> tuple[str, str, str]:
    if not active:
        return ("Active", "Deactivated", "spec.active is false: the Workload is deactivated and will not be admitted")
    if qr is None:
        return ("QuotaReserved", "Pending", "no QuotaReserved condition yet: waiting for the scheduler")
    if qr.status != "True":
        return ("QuotaReserved", qr.reason or "Pending", qr.message)
    outstanding = [c for c in wl.status.admission_checks if c.state != "Ready"]
    if outstanding:
        detail = "; ".join(f"admission check {c.name}: {c.state}" + (f" ({c.message})" if c.message else "") for c in outstanding)
        return ("Admitted", adm.reason if adm else "UnsatisfiedAdmissionChecks", detail)
    if adm is not None:
        return ("Admitted", adm.reason, adm.message)
    return ("Admitted", "NoReservation", "waiting for admission")


def derive_waiting(ctx: RuleContext, facts: Facts | None = None) -> list[WaitingWorkload]:
    return [w for _, w in (facts if facts is not None else all_workload_facts(ctx)) if w is not None]


def waiting_workload(ctx: RuleContext, wl: Workload) -> WaitingWorkload | None:
    """The waiting row of one Workload, or None when it does not wait."""
    return workload_facts(ctx, wl)[1]
