"""Cohorts and ClusterQueues (docs/rules.md#cohorts-and-queues): quotas, reservations, borrowing, stop state,
why work waits.

Capacity arithmetic is kept here, apart from I/O, in the spirit of Kueue's resource_node.go.
"""

from collections import defaultdict
from collections.abc import Iterable

from pydantic import Field

from .. import quota
from ..model import ZERO, ClusterQueue, Cohort, LocalQueue, Quantity, Workload
from ..model.base import ConditionLike
from ..model.kueue import FlavorUsage
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
    # On the ClusterQueue/Cohort quota tree (engine/quota.py): what one more Workload could reserve
    # now, and with nothing else admitted (None until the tree is applied: apply_quota_tree).
    available: QuantityField | None = None
    potential_available: QuantityField | None = None


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
    """One (flavor, resource) of a Cohort on the quota tree (Kueue's resource_node semantics)."""

    name: str
    nominal: QuantityField = ZERO  # the Cohort object's own nominal quota
    member_nominal: QuantityField = ZERO  # what its children lend it: subtree quota − own nominal
    reserved: QuantityField = ZERO  # every ClusterQueue of the subtree (child cohorts included)
    used: QuantityField = ZERO
    borrowed: QuantityField = ZERO  # what its direct children take beyond their own subtree quota
    subtree_quota: QuantityField = ZERO  # own nominal + what each child can lend (lendingLimit applied)
    usage: QuantityField = ZERO  # children's usage past their private (lendingLimit-kept) quota
    available: QuantityField = ZERO  # what can still be reserved at this cohort (negative: over-admitted)


class CohortFlavor(ViewModel):
    name: str
    resources: list[CohortResource] = []


class CohortView(ViewModel):
    name: str
    implicit: bool
    parent: str | None = None
    root: str | None = None  # the top of its tree (None: it is a root)
    depth: int = 0
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


def _usage(entries: Iterable[FlavorUsage]) -> dict[tuple[str, str], Quantity]:
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
                        available=None,  # every field given: no model_construct
                        potential_available=None,
                    )
                )
            flavors.append(QueueFlavor.trusted(name=fl.name, resources=sorted(res, key=lambda x: x.name)))
    return flavors


def workload_cluster_queue(ctx: RuleContext, wl: Workload) -> str | None:
    """The ClusterQueue a Workload is admitted to, else the one its LocalQueue points at."""
    if wl.status.admission and wl.status.admission.cluster_queue:
        return wl.status.admission.cluster_queue
    lq = ctx.store.get(LocalQueue, wl.spec.queue_name, wl.namespace) if wl.spec.queue_name else None
    return lq.spec.cluster_queue if lq is not None and lq.spec.cluster_queue else None


Bucket = tuple[str, int, int, int, int]  # (queue, pending, reserving, admitted, inactive)


class FactsMemo:
    """What `workload_facts` remembers for the rest of one pass (the store does not change during one):
    each LocalQueue's ClusterQueue, and each queue's four buckets (shared: 100k Workloads hold four
    kinds of bucket per queue)."""

    __slots__ = ("routes", "buckets")

    def __init__(self) -> None:
        self.routes: dict[tuple[str | None, str], str | None] = {}
        self.buckets: dict[str, tuple[Bucket, Bucket, Bucket, Bucket]] = {}

    def of(self, cq: str) -> tuple[Bucket, Bucket, Bucket, Bucket]:
        """(reserving and admitted, reserving, pending, inactive)."""
        out = self.buckets[cq] = ((cq, 0, 1, 1, 0), (cq, 0, 1, 0, 0), (cq, 1, 0, 0, 0), (cq, 0, 0, 0, 1))
        return out


def observed_bucket(ctx: RuleContext, wl: Workload) -> Bucket | None:
    """What one Workload adds to its ClusterQueue's observed counts."""
    return workload_facts(ctx, wl)[0]


_PENDING_WHY = ("QuotaReserved", "Pending", "no QuotaReserved condition yet: waiting for the scheduler")
_INACTIVE_WHY = ("Active", "Deactivated", "spec.active is false: the Workload is deactivated and will not be admitted")
_new_row = object.__new__
_set = object.__setattr__
_ROW_FIELDS = frozenset(WaitingWorkload.model_fields)


def workload_facts(ctx: RuleContext, wl: Workload, memo: FactsMemo | None = None
                   ) -> tuple[Bucket | None, WaitingWorkload | None]:
    """Everything the rules read from one Workload, in one pass over its conditions: its observed-count
    bucket (`observed_bucket`) and its waiting row (`waiting_workload`). A fleet has 100k of them, so
    this is written for speed: `memo` keeps what one pass has already looked up (FactsMemo), and the
    row is made without validation."""
    status = wl.status
    finished = admitted = qr = None
    for c in status.conditions:  # the first condition of each type counts
        t = c.type
        if t == "Finished":
            if finished is None:
                finished = c
        elif t == "Admitted":
            if admitted is None:
                admitted = c
        elif t == "QuotaReserved":
            if qr is None:
                qr = c
    if finished is not None and finished.status == "True":
        return None, None
    reserved = qr is not None and qr.status == "True"
    is_admitted = admitted is not None and admitted.status == "True"
    spec = wl.spec
    active = spec.active
    meta = wl.metadata
    adm = status.admission
    cq = adm.cluster_queue if adm is not None else None
    if not cq:
        qname = spec.queue_name
        if not qname:
            cq = None
        elif memo is None:
            lq = ctx.store.get(LocalQueue, qname, meta.namespace)
            cq = (lq.spec.cluster_queue or None) if lq is not None else None
        else:
            routes = memo.routes
            rkey = (meta.namespace, qname)
            if rkey in routes:
                cq = routes[rkey]
            else:
                lq = ctx.store.get(LocalQueue, qname, meta.namespace)
                cq = routes[rkey] = (lq.spec.cluster_queue or None) if lq is not None else None
    bucket: Bucket | None = None
    if cq is not None:
        kinds = (memo.buckets.get(cq) or memo.of(cq)) if memo is not None else FactsMemo().of(cq)
        if reserved:  # deactivated but still holding quota (being evicted) stays reserving until released
            bucket = kinds[0] if is_admitted else kinds[1]
        else:  # deactivated and holding no quota: Kueue does not count it pending; it never will run as is
            bucket = kinds[2] if active else kinds[3]
    if is_admitted:
        return bucket, None
    if not active:
        why = _INACTIVE_WHY
    elif qr is None:
        why = _PENDING_WHY
    else:
        why = _why(wl, active, qr, admitted)
    refs = meta.owner_references  # wl.owner, inlined: the controller reference, else the first
    owner = None
    for ref in refs:
        if ref.controller:
            owner = ref
            break
    else:
        if refs:
            owner = refs[0]
    row = _new_row(WaitingWorkload)  # WaitingWorkload.trusted, every field given, inlined
    _set(row, "__dict__", {
        "namespace": meta.namespace or "",
        "name": meta.name,
        "queue_name": spec.queue_name,
        "cluster_queue": cq,
        "owner_kind": owner.kind if owner else None,
        "owner_name": owner.name if owner else None,
        "status": "quotaReserved" if reserved else "pending",
        "condition": why[0],
        "reason": why[1],
        "message": why[2],
        "active": active,
    })
    _set(row, "__pydantic_fields_set__", _ROW_FIELDS)
    _set(row, "__pydantic_extra__", None)
    _set(row, "__pydantic_private__", None)
    return bucket, row


Facts = list[tuple[Bucket | None, "WaitingWorkload | None"]]


def all_workload_facts(ctx: RuleContext) -> Facts:
    """`workload_facts` of every Workload, computed once for both the counts and the waiting list."""
    return [workload_facts(ctx, wl) for wl in ctx.store.list(Workload)]


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
    return ObservedCounts.trusted(pending=counts[0], reserving=counts[1], admitted=counts[2], inactive=counts[3])


def derive_cluster_queues(ctx: RuleContext, facts: Facts | None = None) -> tuple[list[ClusterQueueView], list[Finding]]:
    findings: list[Finding] = []
    views: list[ClusterQueueView] = []
    workloads_readable = ctx.store.readable("Workload") and ctx.store.readable("LocalQueue")
    observed = observed_counts(ctx, facts) if workloads_readable else {}
    for cq in ctx.store.list(ClusterQueue):
        obs = observed.get(cq.name, ObservedCounts()) if workloads_readable else None
        view, f = cluster_queue_view(cq, obs)
        views.append(view)
        findings += f
    return apply_quota_tree(ctx, views), findings


def queue_input(cq: ClusterQueue) -> quota.QueueInput:
    """What the quota tree reads of one ClusterQueue (its reserved quota is its usage)."""
    return quota.queue_input(cq, _usage(cq.status.flavors_reservation))


def quota_tree(ctx: RuleContext, inputs: Iterable[quota.QueueInput] | None = None) -> quota.QuotaTree:
    """The ClusterQueue/Cohort tree with each ClusterQueue's reserved quota as its usage (status).
    `inputs`: every ClusterQueue's `queue_input`, when the caller keeps them."""
    if inputs is None:
        inputs = [queue_input(cq) for cq in ctx.store.list(ClusterQueue)]
    cohorts = ctx.store.list(Cohort) if ctx.store.readable("Cohort") else []
    return quota.tree_of(inputs, cohorts)


_RESOURCE_FIELDS = frozenset(QueueResource.model_fields)


def tree_flavors(tree: quota.QuotaTree, node: quota.QuotaNode, flavors: list[QueueFlavor]) -> list[QueueFlavor]:
    """A queue's flavor rows with borrowed, available and potentialAvailable read off its tree node."""
    out = []
    for fl in flavors:
        rows = []
        for r in fl.resources:
            borrowed, available, potential = tree.figures(node, (fl.name, r.name))
            row = _new_row(QueueResource)  # r.model_copy(update=...) without its per-field bookkeeping
            _set(row, "__dict__", {**r.__dict__, "borrowed": borrowed, "available": available,
                                   "potential_available": potential})
            _set(row, "__pydantic_fields_set__", _RESOURCE_FIELDS)
            _set(row, "__pydantic_extra__", None)
            _set(row, "__pydantic_private__", None)
            rows.append(row)
        out.append(QueueFlavor.trusted(name=fl.name, resources=rows))
    return out


def apply_quota_tree(ctx: RuleContext, views: list[ClusterQueueView],
                     tree: quota.QuotaTree | None = None) -> list[ClusterQueueView]:
    """The views with borrowed, available and potentialAvailable read off the quota tree."""
    tree = tree or quota_tree(ctx)
    out = []
    for v in views:
        node = tree.node(v.name)
        out.append(v if node is None else v.replaced(flavors=tree_flavors(tree, node, v.flavors)))
    return out


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
    view = ClusterQueueView.trusted(  # every field given, each of its type: no validation (a view per event)
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


def derive_cohorts(ctx: RuleContext, queues: list[ClusterQueueView],
                   tree: quota.QuotaTree | None = None) -> list[CohortView]:
    """Every Cohort (object or bare name) with its figures on the quota tree: subtree quota rolled up
    from child cohorts, lendingLimits applied, reservations of the whole subtree. `tree`: the
    `quota_tree` of the same store, when the caller has it."""
    explicit = {c.name: c for c in ctx.store.list(Cohort)}
    tree = tree or quota_tree(ctx)
    views = {q.name: q for q in queues}
    out: list[CohortView] = []
    for name in sorted(tree.cohorts):
        node = tree.cohorts[name]
        obj = explicit.get(name)
        own = {fr: lim.nominal for fr, lim in node.quotas.items()}
        reserved: dict[tuple[str, str], Quantity] = defaultdict(lambda: ZERO)
        used: dict[tuple[str, str], Quantity] = defaultdict(lambda: ZERO)
        for leaf in node.subtree_cluster_queues():
            q = views.get(leaf.name)
            for fl in q.flavors if q is not None else []:
                for r in fl.resources:
                    reserved[(fl.name, r.name)] += r.reserved
                    used[(fl.name, r.name)] += r.used
        keys = set(own) | set(node.subtree_quota) | set(reserved) | set(used)
        by_flavor: dict[str, list[CohortResource]] = defaultdict(list)
        for fr in sorted(keys):
            sub = node.subtree_quota.get(fr, ZERO)
            mine = own.get(fr, ZERO)
            borrowed = ZERO
            for child in node.children:
                borrowed = borrowed + quota.borrowed(child, fr)
            by_flavor[fr[0]].append(CohortResource(
                name=fr[1],
                nominal=mine,
                member_nominal=sub - mine,
                reserved=reserved.get(fr, ZERO),
                used=used.get(fr, ZERO),
                borrowed=borrowed,
                subtree_quota=sub,
                usage=node.usage.get(fr, ZERO),
                available=tree.available_of(node, fr),
            ))
        labels = obj.labels if obj is not None else {}
        ancestors = node.ancestors()
        out.append(
            CohortView(
                name=name,
                implicit=obj is None,
                parent=(obj.spec.parent_name or None) if obj is not None else None,
                root=ancestors[-1].name if ancestors else None,
                depth=len(ancestors),
                members=sorted(c.name for c in node.children if c.is_cluster_queue),
                children=sorted(c.name for c in node.children if not c.is_cluster_queue),
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


def _why(wl: Workload, active: bool, qr: ConditionLike | None, adm: ConditionLike | None) -> tuple[str, str, str]:
    if not active:
        return ("Active", "Deactivated", "spec.active is false: the Workload is deactivated and will not be admitted")
    if qr is None:
        return ("QuotaReserved", "Pending", "no QuotaReserved condition yet: waiting for the scheduler")
    if qr.status != "True":
        return ("QuotaReserved", qr.reason or "Pending", qr.message)
    outstanding = [c for c in wl.status.admission_checks if c.state != "Ready"]
    if outstanding:
        detail = "; ".join(f"admission check {c.name}: {c.state}" + (f" ({c.message})" if c.message else "")
                           for c in outstanding)
        return ("Admitted", adm.reason if adm else "UnsatisfiedAdmissionChecks", detail)
    if adm is not None:
        return ("Admitted", adm.reason, adm.message)
    return ("Admitted", "NoReservation", "waiting for admission")


def derive_waiting(ctx: RuleContext, facts: Facts | None = None) -> list[WaitingWorkload]:
    return [w for _, w in (facts if facts is not None else all_workload_facts(ctx)) if w is not None]


def waiting_workload(ctx: RuleContext, wl: Workload) -> WaitingWorkload | None:
    """The waiting row of one Workload, or None when it does not wait."""
    return workload_facts(ctx, wl)[1]
