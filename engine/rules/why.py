"""Why is a Workload waiting? A ranked list of reasons, computed from the objects (docs/queue-insight.md).

Pure: the store and `now` come in through the RuleContext. The quota arithmetic is engine/quota.py,
the pending order engine/rules/queue_order.py. Everything here is an estimate of what Kueue's
scheduler will decide; Kueue's own condition is reported alongside. Unreadable inputs give an
`Unknown` reason and null quantities, never a fit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from ..model import ZERO, ClusterQueue, Cohort, LocalQueue, Namespace, Pod, Quantity, ResourceFlavor, Workload
from ..model.fast import ContainerRequests, PodSet, PodSetPodSpec
from ..model.kueue import ResourceQuota
from ..model.names import DEACTIVATED_BY_ANNOTATION as DEACTIVATED_BY
from ..quota import (
    FlavorResource,
    Limits,
    QuotaNode,
    QuotaTree,
    add_usage,
    available,
    borrowed,
    build_tree,
    from_parent,
    is_borrowing,
    local_available,
    potential_available,
    quotas_of,
    remove_usage,
)
from ..text import plural
from ..units import amount
from .base import QuantityField, RuleContext, ViewModel
from .capacity import TOPOLOGY_FAILED, topology_wait
from .queue_order import (
    ADMISSION_GATED_BY,
    ESTIMATED,
    FROM_API,
    UNKNOWN,
    ClusterQueueOrder,
    QueuePositions,
    cluster_queue_orders,
    effective_priority,
    in_backoff,
    order_from_items,
    parse_time,
    queue_order_time,
)
from .selectors import SelectorError, selector_matches

API_VERSION = "taudash/v1"
KIND = "WorkloadWaitReport"
TOP_RESERVED = 5
PODS = "pods"


class Severity:
    BLOCKING = "blocking"  # nothing changes until this is fixed
    WAITING = "waiting"  # waits for quota or other Workloads; clears by itself
    UNKNOWN = "unknown"  # inputs unreadable: no conclusion
    INFO = "info"


# Rank of each code: lower is the more fundamental reason (shown first).
RANK = {
    "Finished": 0,
    "Admitted": 0,
    "Unknown": 1,
    "Inactive": 2,
    "LocalQueueMissing": 3,
    "ClusterQueueMissing": 3,
    "LocalQueueStopped": 4,
    "ClusterQueueStopped": 4,
    "ClusterQueueInactive": 5,
    "NamespaceNotSelected": 5,
    "AdmissionGated": 6,
    "AdmissionCheckRejected": 6,
    "AdmissionCheckPending": 7,
    "ResourceNotCovered": 8,
    "NoMatchingFlavor": 8,
    "ExceedsMaxQuota": 9,
    "HeadOfLineBlocked": 10,
    "TopologyPlacementFailed": 10,
    "InsufficientQuota": 11,
    "Backoff": 12,
    "QueuedBehind": 13,
    "FitsNow": 14,
    "KueueCondition": 20,
}

# Kueue's specific QuotaReserved/Admitted reasons and the computed codes each agrees with. Its generic
# ones (Pending, Inadmissible, Waiting, NoReservation) agree with any computed reason.
KUEUE_AGREES = {
    "WaitingForQuota": {"InsufficientQuota", "HeadOfLineBlocked", "QueuedBehind"},
    "ExceedsMaxQuota": {"ExceedsMaxQuota"},
    "NoMatchingFlavor": {"NoMatchingFlavor", "ResourceNotCovered"},
    "Suspended": {"ClusterQueueStopped", "LocalQueueStopped", "ClusterQueueInactive", "Inactive"},
    "OnHold": {"ClusterQueueStopped", "LocalQueueStopped", "Inactive"},
    "WaitingForPreemptedWorkloads": {"InsufficientQuota"},
    "UnsatisfiedAdmissionChecks": {"AdmissionCheckPending", "AdmissionCheckRejected"},
    "TopologyPlacementFailed": {"TopologyPlacementFailed"},
}


# --- topology: quota exists, no domain has the room -------------------------------------------


def topology_reason(ctx: RuleContext, wl: Workload, flavors: list[str],
                    kueue: dict[str, str] | None) -> WaitReason | None:
    """`TopologyPlacementFailed` when the quota fits but no domain can place the Workload's shape now: Kueue
    says so (its QuotaReserved=False reason), or the capacity rule finds no room on its flavors."""
    found = topology_wait(ctx, wl, flavors, kueue)
    if found is None:
        return None
    return _reason(TOPOLOGY_FAILED, Severity.WAITING, found.message, bestFree=found.best_free,
                   bestDomain=found.best_domain or None, fromKueue=found.from_kueue)


# --- the report ----------------------------------------------------------------------------


class WaitReason(ViewModel):
    code: str
    severity: str
    rank: int
    message: str
    details: dict[str, Any] = {}


class OwnerRef(ViewModel):
    kind: str
    name: str


class WorkloadRef(ViewModel):
    namespace: str
    name: str
    cluster_queue: str | None = None
    local_queue: str | None = None
    owner: OwnerRef | None = None
    priority: int = 0
    amount: QuantityField | None = None  # of the flavor/resource in question
    requests: dict[str, QuantityField] = {}
    position: int | None = None


class LendingLimit(ViewModel):
    cluster_queue: str
    nominal: QuantityField
    lending_limit: QuantityField
    withheld: QuantityField  # nominal − lendingLimit: guaranteed to that queue, never lent


class FlavorQuota(ViewModel):
    flavor: str
    resource: str
    requested: QuantityField
    available: QuantityField | None  # None: unknown
    potential_available: QuantityField | None
    shortfall: QuantityField | None
    nominal: QuantityField
    borrowing_limit: QuantityField | None  # None: unlimited
    lending_limit: QuantityField | None
    lending_limit_of_others: list[LendingLimit] = []
    cohort_lendable: QuantityField | None  # None: no cohort, or unknown
    reserved_here: QuantityField | None
    borrowed: QuantityField | None
    mode: str  # Fit | Preempt | NoFit | ExceedsMaxQuota | Unknown | NotMatching
    reserved_by: list[WorkloadRef] = []


class QueueInfo(ViewModel):
    local_queue: str | None
    cluster_queue: str | None
    cohort: str | None
    queueing_strategy: str | None
    position_in_cluster_queue: int | None
    position_in_local_queue: int | None
    position_source: str = "estimated"  # visibility (Kueue's API) | estimated | unknown
    position_note: str = ""  # where the positions came from, or why they are unknown


class Preemption(ViewModel):
    possible: bool | None  # None: unknown
    policy: dict[str, Any]
    message: str
    candidates: list[WorkloadRef] = []


class WorkloadSummary(ViewModel):
    namespace: str
    name: str
    uid: str
    owner: OwnerRef | None
    priority: int
    status: str
    active: bool
    created: str | None
    queue_order_time: str | None
    requests: dict[str, QuantityField]
    kueue_condition: dict[str, str] | None


class WorkloadWaitReport(ViewModel):
    api_version: str = API_VERSION
    kind: str = KIND
    workload: WorkloadSummary
    queue: QueueInfo
    reasons: list[WaitReason]
    ahead: list[WorkloadRef] | None  # None: positions unknown (the visibility API forbidden), not "nobody ahead"
    flavors: list[FlavorQuota]
    preemption: Preemption

    @property
    def top(self) -> WaitReason | None:
        return self.reasons[0] if self.reasons else None


# --- requests and usage ----------------------------------------------------------------------


def _pod_requests(spec: PodSetPodSpec) -> dict[str, Quantity]:
    """Per-pod requests as Kueue counts them: containers summed, the largest init container if larger,
    plus the pod overhead; a container's limit stands in for a missing request."""

    def of(c: ContainerRequests) -> dict[str, Quantity]:
        out = dict(c.resources.limits)
        out.update(c.resources.requests)
        return out

    total: dict[str, Quantity] = {}
    for c in spec.containers:
        for r, q in of(c).items():
            total[r] = total.get(r, ZERO) + q
    for c in spec.init_containers:
        for r, q in of(c).items():
            if total.get(r, ZERO) < q:
                total[r] = q
    for r, q in spec.overhead.items():
        total[r] = total.get(r, ZERO) + q
    return total


def pod_set_requests(wl: Workload) -> dict[str, dict[str, Quantity]]:
    """Total requests per pod set: Kueue's `status.resourceRequests` when it wrote them, else count × per pod."""
    written = {r.name: dict(r.resources) for r in wl.status.resource_requests}
    out: dict[str, dict[str, Quantity]] = {}
    for ps in wl.spec.pod_sets:
        if ps.name in written:
            out[ps.name] = written[ps.name]
        else:
            out[ps.name] = {r: q * ps.count for r, q in _pod_requests(ps.template.spec).items()}
    return out


def workload_requests(wl: Workload) -> dict[str, Quantity]:
    total: dict[str, Quantity] = {}
    for res in pod_set_requests(wl).values():
        for r, q in res.items():
            total[r] = total.get(r, ZERO) + q
    return dict(sorted(total.items()))


def reserved_usage(wl: Workload) -> dict[FlavorResource, Quantity]:
    """What a quota-reserved Workload holds, per (flavor, resource), from its admission."""
    out: dict[FlavorResource, Quantity] = {}
    adm = wl.status.admission
    if adm is None:
        return out
    for psa in adm.pod_set_assignments:
        for r, q in psa.resource_usage.items():
            fl = psa.flavors.get(r)
            if fl:
                out[(fl, r)] = out.get((fl, r), ZERO) + q
    return out


def holds_quota(wl: Workload) -> bool:
    return wl.quota_reserved and not wl.finished and wl.status.admission is not None


# --- flavor matching -------------------------------------------------------------------------


def _tolerates(tolerations: Iterable[_Toleration], taint: _Taint) -> bool:
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.operator == "Exists" and (not t.key or t.key == taint.key):
            return True
        if t.key == taint.key and (t.operator or "Equal") == "Equal" and t.value == taint.value:
            return True
    return False


def flavor_mismatch(flavor: ResourceFlavor | None, pod_sets: Iterable[PodSet]) -> str | None:
    """Why a ResourceFlavor cannot host the pod sets (nodeSelector on the flavor's own label keys,
    NoSchedule/NoExecute taints tolerated neither by the pod set nor by the flavor), or None when it can.
    Required node affinity is not evaluated (an estimate that errs toward "matches")."""
    if flavor is None:
        return None
    labels = flavor.spec.node_labels
    for ps in pod_sets:
        spec = ps.template.spec
        for k, v in spec.node_selector.items():
            if k in labels and labels[k] != v:
                return f"pod set {ps.name} selects {k}={v}, the flavor has {k}={labels[k]}"
        for taint in flavor.spec.node_taints:
            tolerations: list[_Toleration] = [*spec.tolerations, *flavor.spec.tolerations]
            if taint.effect in ("NoSchedule", "NoExecute") and not _tolerates(tolerations, taint):
                return (f"pod set {ps.name} does not tolerate the flavor's taint "
                        f"{taint.key}={taint.value}:{taint.effect}")
    return None


# --- assembling ------------------------------------------------------------------------------


class _Toleration(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def operator(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def effect(self) -> str: ...


class _Taint(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def effect(self) -> str: ...


@dataclass
class QuotaInputs:
    """What every report of one store shares: build once with `quota_inputs` when explaining many Workloads."""

    tree: QuotaTree | None
    holders: dict[str, list[Any]]  # cluster queue → quota-holding Workloads
    unknown: list[str]


def _owner(wl: Workload) -> OwnerRef | None:
    o = wl.owner
    return OwnerRef(kind=o.kind, name=o.name) if o is not None else None


def _ref(wl: Workload, cluster_queue: str | None = None, **extra: Any) -> WorkloadRef:
    """A Workload named in a report; its ClusterQueue is the admitting one when it has an admission."""
    adm = wl.status.admission
    return WorkloadRef(
        namespace=wl.namespace or "", name=wl.name, cluster_queue=adm.cluster_queue if adm else cluster_queue,
        local_queue=wl.spec.queue_name or None, owner=_owner(wl), priority=effective_priority(wl), **extra,
    )


def _reason(code: str, severity: str, message: str, **details: Any) -> WaitReason:
    return WaitReason(code=code, severity=severity, rank=RANK[code], message=message, details=details)


def _unreadable(ctx: RuleContext, kinds: tuple[str, ...]) -> list[str]:
    return [f"{res} ({why})" for res, why in ctx.unreadable(*kinds)]


def quota_inputs(ctx: RuleContext) -> QuotaInputs:
    unknown = _unreadable(ctx, ("ClusterQueue", "Workload"))
    cohort_acc = ctx.store.access("Cohort")
    cohorts_ok = cohort_acc.readable or cohort_acc.state.value == "Absent"  # no Cohort API: only implicit cohorts
    if not cohorts_ok:
        unknown += _unreadable(ctx, ("Cohort",))
    holders: dict[str, list[Any]] = {}
    usage: dict[str, dict[FlavorResource, Quantity]] = {}
    for wl in ctx.store.list(Workload):
        adm = wl.status.admission
        if holds_quota(wl) and adm is not None:
            cq = adm.cluster_queue
            holders.setdefault(cq, []).append(wl)
            u = usage.setdefault(cq, {})
            for fr, q in reserved_usage(wl).items():
                u[fr] = u.get(fr, ZERO) + q
    tree = None
    if not unknown:
        tree = build_tree(ctx.store.list(ClusterQueue), ctx.store.list(Cohort) if cohorts_ok else [], usage)
    return QuotaInputs(tree, holders, unknown)


def _group_requests(requests: dict[str, Quantity], covered: list[str], count: int) -> dict[str, Quantity]:
    out = {r: q for r, q in requests.items() if r in covered}
    if PODS in covered and PODS not in requests:
        out[PODS] = Quantity(count)  # Kueue counts pods itself when a queue gives them quota
    return {r: q for r, q in out.items() if not q.is_zero()}


def _row_mode(req: Quantity, av: Quantity | None, pot: Quantity | None) -> str:
    """One resource of one flavor: Fit now, Short now (could fit once others leave), never (ExceedsMaxQuota)."""
    if av is None or pot is None:
        return "Unknown"
    if pot < req:
        return "ExceedsMaxQuota"
    if av < req:
        return "Short"
    return "Fit"


_PREFERENCE = ("Fit", "Short", "Unknown", "ExceedsMaxQuota")  # the flavor Kueue picks, or aims for


def _worst(given: Iterable[str]) -> str:
    modes = set(given)
    for m in reversed(_PREFERENCE):
        if m in modes:
            return m
    return "Fit"


@dataclass
class _Assignment:
    """Kueue's flavor walk, pod set by pod set (Kueue's flavorassigner), against the current quota."""

    groups: dict[int, list[str]]  # resource group → its flavors, in the queue's order
    matching: dict[tuple[int, str], list[str]]  # (group, flavor) → pod sets that can use it
    mismatch: dict[tuple[int, str], str]  # (group, flavor) → why some pod set cannot use it
    requests: dict[tuple[int, str], dict[str, Quantity]]  # (group, pod set) → its request in that group
    chosen: dict[tuple[int, str], tuple[str, str]]  # (group, pod set) → (flavor, mode)
    assumed: dict[FlavorResource, Quantity]  # what the chosen flavors would take, summed over pod sets
    unmatched: list[tuple[int, str]]  # (group, pod set) no flavor can host
    not_covered: list[str]  # requested resources no group covers
    unknown: bool  # quota unknown: no mode can be trusted

    @property
    def modes(self) -> set[str]:
        return {m for _, m in self.chosen.values()}

    @property
    def fits(self) -> bool:
        return (not self.not_covered and not self.unmatched and bool(self.chosen)
                and all(m == "Fit" for _, m in self.chosen.values()))

    def chosen_flavors(self) -> set[tuple[int, str]]:
        return {(g, fl) for (g, _), (fl, _) in self.chosen.items()}


def _assign(wl: Workload, cq: ClusterQueue, node: QuotaNode | None, flavors: dict[str, Any],
            flavors_known: bool) -> _Assignment:
    per_ps = pod_set_requests(wl)
    covered_all = {r for rg in cq.spec.resource_groups for r in rg.covered_resources}
    requested = workload_requests(wl)
    a = _Assignment(
        groups={gi: [fl.name for fl in rg.flavors] for gi, rg in enumerate(cq.spec.resource_groups)},
        matching={}, mismatch={}, requests={}, chosen={}, assumed={}, unmatched=[],
        not_covered=sorted(r for r, q in requested.items() if r not in covered_all and not q.is_zero()),
        unknown=node is None,
    )
    for ps in wl.spec.pod_sets:
        for gi, rg in enumerate(cq.spec.resource_groups):
            req = _group_requests(per_ps.get(ps.name, {}), rg.covered_resources, ps.count)
            if not req:
                continue
            a.requests[(gi, ps.name)] = req
            best: tuple[str, str] | None = None
            for fl in rg.flavors:
                bad = flavor_mismatch(flavors.get(fl.name), [ps]) if flavors_known else None
                if bad:
                    a.mismatch.setdefault((gi, fl.name), bad)
                    continue
                a.matching.setdefault((gi, fl.name), []).append(ps.name)
                modes = []
                for r, q in req.items():
                    fr = (fl.name, r)
                    val = a.assumed.get(fr, ZERO) + q
                    modes.append(_row_mode(val, available(node, fr) if node else None,
                                           potential_available(node, fr) if node else None))
                mode = _worst(modes)
                if best is None or _PREFERENCE.index(mode) < _PREFERENCE.index(best[1]):
                    best = (fl.name, mode)
                if mode == "Fit":
                    break  # the first flavor that fits is taken (whenCanBorrow: MayStopSearch, the default)
            if best is None:
                a.unmatched.append((gi, ps.name))
                continue
            a.chosen[(gi, ps.name)] = best
            for r, q in req.items():
                fr = (best[0], r)
                a.assumed[fr] = a.assumed.get(fr, ZERO) + q
    return a


def _flavor_rows(a: _Assignment, cq: ClusterQueue, node: QuotaNode | None, inputs: QuotaInputs) -> list[FlavorQuota]:
    """One row per flavor × resource the Workload could use: the chosen flavors with what they would
    take, the others with the request of the pod sets that match them (or the whole request, marked
    NotMatching, when none does)."""
    quotas: dict[FlavorResource, ResourceQuota] = {}
    for rg in cq.spec.resource_groups:
        for fl in rg.flavors:
            for quota in fl.resources:
                quotas[(fl.name, quota.name)] = quota
    subtree = node.root().subtree_cluster_queues() if node is not None else []
    chosen = a.chosen_flavors()
    rows = []
    for gi, names in a.groups.items():
        for flavor in names:
            users = a.matching.get((gi, flavor), [])
            if (gi, flavor) in chosen:
                req = {r: a.assumed[(flavor, r)] for (fl, r) in a.assumed if fl == flavor
                       and any(r in a.requests.get((gi, ps), {}) for ps in users)}
            else:
                req = {}
                for (g, ps), rq in a.requests.items():
                    if g == gi and (ps in users or not users):
                        for r, q in rq.items():
                            req[r] = req.get(r, ZERO) + q
            for r, q in sorted(req.items()):
                fr = (flavor, r)
                rows.append(_flavor_row(fr, q, not users, quotas.get(fr), node, subtree, inputs))
    return rows


def _flavor_row(fr: FlavorResource, req: Quantity, not_matching: bool, quota: ResourceQuota | None,
                node: QuotaNode | None,
                subtree: list[QuotaNode], inputs: QuotaInputs) -> FlavorQuota:
    av = available(node, fr) if node is not None else None
    pot = potential_available(node, fr) if node is not None else None
    others = [
        LendingLimit(cluster_queue=o.name, nominal=o.limits(fr).nominal, lending_limit=o.limits(fr).lending_limit,
                     withheld=(o.limits(fr).nominal - o.limits(fr).lending_limit).max0())
        for o in subtree
        if o is not node and o.limits(fr).lending_limit is not None
    ]
    holders = []
    for o in subtree:
        for h in inputs.holders.get(o.name, []):
            amount = reserved_usage(h).get(fr, ZERO)
            if not amount.is_zero():
                holders.append(_ref(h, amount=amount))
    holders.sort(key=lambda h: (-(h.amount or ZERO).as_float(), h.priority, h.namespace, h.name))
    nominal = quota.nominal_quota if quota is not None else ZERO
    return FlavorQuota(
        flavor=fr[0], resource=fr[1], requested=req, available=av, potential_available=pot,
        shortfall=(req - av).max0() if av is not None else None,
        nominal=nominal,
        borrowing_limit=quota.borrowing_limit if quota is not None else None,
        lending_limit=quota.lending_limit if quota is not None else None,
        lending_limit_of_others=others,
        cohort_lendable=from_parent(node, fr) if node is not None and node.parent is not None else None,
        reserved_here=node.usage.get(fr, ZERO) if node is not None else None,
        borrowed=None if node is None else (borrowed(node, fr)),
        mode="NotMatching" if not_matching else _row_mode(req, av, pot).replace("Short", "Preempt"),
        reserved_by=holders[:TOP_RESERVED],
    )


def _short_text(rows: list[FlavorQuota]) -> str:
    text = "; ".join(f"{f.flavor}/{f.resource} requested {amount(f.resource, f.requested)}, available "
                     f"{amount(f.resource, f.available)} ({amount(f.resource, f.shortfall)} more needed)"
                     for f in rows)
    if any(f.available is not None and f.available.negative for f in rows):
        text += (" (a negative availability: quota was lowered below what is already reserved; Kueue does not evict "
                 "for that)")
    return text


def _may_preempt_for(node: QuotaNode, fr: FlavorResource, val: Quantity, nominal: Mapping[FlavorResource, Limits],
                     borrow_ok: bool) -> bool:
    """Whether Kueue's flavor assigner would try preemption for this resource at all (else: wait)."""
    lim = nominal.get(fr)
    if (lim is not None and not lim.nominal < val) or borrow_ok:
        return True
    if node.parent is None:
        return False
    # Reclaim in the hierarchy: the lowest node that would hold the request without borrowing must
    # have a parent (Kueue's FindHeightOfLowestSubtreeThatFits).
    if not node.subtree_quota.get(fr, ZERO) < node.usage.get(fr, ZERO) + val:
        return True
    remaining = val - local_available(node, fr)
    for anc in node.ancestors():
        if not anc.subtree_quota.get(fr, ZERO) < anc.usage.get(fr, ZERO) + remaining:
            return anc.parent is not None
        remaining = remaining - local_available(anc, fr)
    return False


def _satisfies(policy: str, preemptor: Workload, candidate: Workload) -> bool:
    p, c = effective_priority(preemptor), effective_priority(candidate)
    if policy == "LowerPriority":
        return p > c
    if policy == "LowerOrNewerEqualPriority":
        return p > c or (p == c and queue_order_time(preemptor) < queue_order_time(candidate))
    return policy == "Any"


def _preemption(wl: Workload, cq: ClusterQueue, node: QuotaNode | None, a: _Assignment,
                inputs: QuotaInputs) -> Preemption:
    pol = cq.spec.preemption
    bwc = pol.borrow_within_cohort
    policy = {
        "withinClusterQueue": pol.within_cluster_queue,
        "reclaimWithinCohort": pol.reclaim_within_cohort,
        "borrowWithinCohort": {"policy": bwc.policy if bwc else "Never",
                               "maxPriorityThreshold": bwc.max_priority_threshold if bwc else None},
    }
    if node is None or inputs.tree is None:
        return Preemption(possible=None, policy=policy, message="unknown: quota inputs are unreadable")
    if a.not_covered or a.unmatched or not a.chosen:
        return Preemption(possible=False, policy=policy,
                          message="no: no flavor of the queue can take the request; preemption cannot help")
    if "Unknown" in a.modes:
        return Preemption(possible=None, policy=policy, message="unknown: the flavor assignment could not be evaluated")
    if a.fits:
        return Preemption(possible=False, policy=policy, message="not needed: the Workload fits without preempting")
    if "ExceedsMaxQuota" in a.modes:
        return Preemption(possible=False, policy=policy,
                          message="no: the request exceeds the most this queue can ever get; preemption cannot make "
                                  "room")
    needs = dict(a.assumed)
    short = [fr for fr, req in needs.items() if available(node, fr) < req]
    borrow_ok = bwc is not None and bwc.policy != "Never"
    nominal = quotas_of(cq.spec.resource_groups)
    refused = [fr for fr in short if not _may_preempt_for(node, fr, needs[fr], nominal, borrow_ok)]
    if refused:
        return Preemption(possible=False, policy=policy, message=(
            "no: Kueue preempts only for a request that fits the queue's nominal quota (or a sub-cohort's), "
            "or when borrowWithinCohort allows it; " + ", ".join(f"{f}/{r}" for f, r in refused)
            + " would need borrowing, so it waits for quota to be released"))
    candidates = []
    for h in inputs.holders.get(cq.name, []):
        if h.uid != wl.uid and any(not reserved_usage(h).get(fr, ZERO).is_zero() for fr in short) \
                and _satisfies(pol.within_cluster_queue, wl, h):
            candidates.append((0, h, cq.name))
    if node.parent is not None:
        for other in node.root().subtree_cluster_queues():
            if other is node or not any(is_borrowing(other, fr) for fr in short):
                continue
            for h in inputs.holders.get(other.name, []):
                if not any(not reserved_usage(h).get(fr, ZERO).is_zero() for fr in short):
                    continue
                reclaim = _satisfies(pol.reclaim_within_cohort, wl, h)
                while_borrowing = borrow_ok and bwc is not None and _satisfies("LowerPriority", wl, h) and (
                    bwc.max_priority_threshold is None or effective_priority(h) <= bwc.max_priority_threshold)
                if reclaim or while_borrowing:
                    candidates.append((-1, h, other.name))
    if not candidates:
        return Preemption(possible=False, policy=policy,
                          message="no: no admitted Workload that this queue's preemption policy allows it to preempt "
                                  "holds the quota it lacks")

    # Kueue's candidate order: other queues first, lower priority first, most recently reserved first, then UID.
    def reserved_at(h: Workload) -> datetime | None:
        c = h.condition("QuotaReserved")
        return parse_time(c.last_transition_time if c else None)

    def reserved_ts(h: Workload) -> float:
        at = reserved_at(h)
        return at.timestamp() if at else 0

    candidates.sort(key=lambda t: (t[0], effective_priority(t[1]), -reserved_ts(t[1]), t[1].uid or ""))
    sim = inputs.tree.snapshot()
    me = sim.node(cq.name)
    if me is None:  # the queue's own node (found above as `node`) is in every snapshot of its tree
        return Preemption(possible=None, policy=policy, message="unknown: the queue is not in the quota tree")

    def fits() -> bool:
        return all(not available(me, fr) < req for fr, req in needs.items())

    def release(h: Workload, cq_name: str, sign: int = 1) -> None:
        n = sim.node(cq_name)
        if n is None:
            return
        for fr, q in reserved_usage(h).items():
            if sign > 0:
                remove_usage(n, fr, q)
            else:
                add_usage(n, fr, q)

    taken = []
    for _, h, cq_name in candidates:
        release(h, cq_name)
        taken.append((h, cq_name))
        if fits():
            break
    if not fits():
        return Preemption(possible=False, policy=policy,
                          message="no: preempting every allowed candidate would still not free enough quota",
                          candidates=[_ref(h) for h, _ in taken])
    # Give back the ones not needed, newest choice first (Kueue minimises the same way).
    for h, cq_name in list(reversed(taken[:-1])):
        release(h, cq_name, sign=-1)
        if fits():
            taken.remove((h, cq_name))
        else:
            release(h, cq_name)
    victims = [_ref(h, requests={f"{fl}/{r}": q for (fl, r), q in reserved_usage(h).items()}) for h, _ in taken]
    return Preemption(possible=True, policy=policy, candidates=victims,
                      message=f"yes: preempting {len(victims)} Workload(s) would make room (an estimate, not a "
                              "promise: Kueue preempts only for the head of the queue, and the cluster may change "
                              "first)")


_UNSET: Any = object()


def why_waiting_report(ctx: RuleContext, namespace: str, name: str, *, inputs: QuotaInputs | None = None,
                       orders: dict[str, ClusterQueueOrder] | None = _UNSET,
                       positions: QueuePositions | None = None) -> WorkloadWaitReport | None:
    """The wait report of one Workload, or None when the store does not hold it.
    `inputs` (quota_inputs) and `orders` (cluster_queue_orders) may be passed in when the caller
    explains many Workloads of one store; they are computed here otherwise. `positions`: its
    ClusterQueue's pending list as the session read it (KubeSource.pending_workloads): Kueue's
    visibility API answer replaces the estimated order (positionSource `visibility`); `unknown`
    (forbidden) gives null positions and no "ahead" list, never position 0; `estimated` keeps the
    estimate with the reason in positionNote."""
    wl = ctx.store.get(Workload, name, namespace)
    if wl is None:
        return None
    if inputs is None:
        inputs = quota_inputs(ctx)
    reasons: list[WaitReason] = []
    if inputs.unknown:
        reasons.append(_reason("Unknown", Severity.UNKNOWN,
                               "cannot tell: " + ", ".join(inputs.unknown) + " unreadable; "
                               "quota, order and preemption are unknown", unreadable=inputs.unknown))
    lq_known = not ctx.unreadable("LocalQueue")
    lq = ctx.store.get(LocalQueue, wl.spec.queue_name, namespace) if wl.spec.queue_name else None
    adm = wl.status.admission
    cq_name = (adm.cluster_queue if adm is not None and adm.cluster_queue
               else (lq.spec.cluster_queue if lq is not None else None))
    cq = ctx.store.get(ClusterQueue, cq_name) if cq_name else None
    node = inputs.tree.node(cq_name) if inputs.tree is not None and cq_name else None

    # --- state of the Workload itself
    if wl.finished:
        reasons.append(_reason("Finished", Severity.INFO, "finished: it no longer waits and holds no quota"))
    elif wl.admitted:
        reasons.append(_reason("Admitted", Severity.INFO, f"admitted in ClusterQueue {cq_name}: it is not waiting"))
    if not wl.spec.active:
        by = wl.metadata.annotations.get(DEACTIVATED_BY)
        msg = "inactive: spec.active is false, Kueue will not admit it until it is reactivated"
        if by:
            msg += f" (deactivated by taudash workflow {by})"
        reasons.append(_reason("Inactive", Severity.BLOCKING, msg, deactivatedBy=by))

    gate = wl.metadata.annotations.get(ADMISSION_GATED_BY)
    if gate and not wl.quota_reserved and not wl.finished:
        reasons.append(_reason("AdmissionGated", Severity.BLOCKING,
                               f"admission-gated by {gate}: Kueue does not queue it until the annotation is cleared",
                               gatedBy=gate))

    # --- its queues (a finished Workload has none to wait in)
    if wl.finished:
        pass
    elif not wl.spec.queue_name:
        reasons.append(_reason("LocalQueueMissing", Severity.BLOCKING, "spec.queueName is empty: no LocalQueue"))
    elif not lq_known:
        reasons.append(_reason("Unknown", Severity.UNKNOWN, "LocalQueues are unreadable: the queue's state is unknown",
                               unreadable=_unreadable(ctx, ("LocalQueue",))))
    elif lq is None:
        reasons.append(_reason("LocalQueueMissing", Severity.BLOCKING,
                               f"LocalQueue {namespace}/{wl.spec.queue_name} does not exist"))
    elif (lq.spec.stop_policy or "None") != "None":
        reasons.append(_reason("LocalQueueStopped", Severity.BLOCKING,
                               f"LocalQueue {namespace}/{lq.name} is stopped (stopPolicy {lq.spec.stop_policy})",
                               stopPolicy=lq.spec.stop_policy))
    cq_known = not ctx.unreadable("ClusterQueue")
    if wl.finished:
        pass
    elif cq_name and cq_known and cq is None:
        reasons.append(_reason("ClusterQueueMissing", Severity.BLOCKING, f"ClusterQueue {cq_name} does not exist"))
    elif cq is not None and (cq.spec.stop_policy or "None") != "None":
        reasons.append(_reason("ClusterQueueStopped", Severity.BLOCKING,
                               f"ClusterQueue {cq.name} is stopped (stopPolicy {cq.spec.stop_policy}): no new "
                               "admissions",
                               stopPolicy=cq.spec.stop_policy))
    elif cq is not None:
        active = cq.condition("Active")
        if active is not None and active.is_false:
            reasons.append(_reason("ClusterQueueInactive", Severity.BLOCKING,
                                   f"ClusterQueue {cq.name} is inactive ({active.reason}): {active.message}",
                                   reason=active.reason))
    if cq is not None and wl.spec.active and not wl.quota_reserved and not wl.finished:
        reasons += _namespace_reasons(ctx, cq, namespace)
    if node is not None and node.in_cycle:
        reasons.append(_reason("ClusterQueueInactive", Severity.BLOCKING,
                               f"ClusterQueue {cq_name}'s cohorts form a parentName cycle: Kueue admits nothing there"))

    # --- admission checks (after a quota reservation)
    if wl.quota_reserved and not wl.admitted and not wl.finished:
        for c in wl.status.admission_checks:
            if c.state == "Rejected":
                reasons.append(_reason("AdmissionCheckRejected", Severity.BLOCKING,
                                       f"admission check {c.name} rejected it: {c.message}", check=c.name))
            elif c.state != "Ready":
                reasons.append(_reason("AdmissionCheckPending", Severity.WAITING,
                                       f"quota is reserved; admission check {c.name} is {c.state}"
                                       + (f": {c.message}" if c.message else ""),
                                       check=c.name, state=c.state))

    # --- quota and order (only for a pending Workload)
    pending = wl.spec.active and not wl.finished and not wl.quota_reserved and not gate
    flavor_rows: list[FlavorQuota] = []
    ahead: list[WorkloadRef] = []
    pos_cq = pos_lq = None
    pos_source, pos_note = ESTIMATED, ""
    preemption = Preemption(possible=None, policy={}, message="not evaluated: the Workload is not pending")
    if pending and cq is not None:
        rf_known = not ctx.unreadable("ResourceFlavor")
        flavors = {f.name: f for f in ctx.store.list(ResourceFlavor)}
        a = _assign(wl, cq, node, flavors, rf_known)
        if not rf_known:
            reasons.append(_reason("Unknown", Severity.UNKNOWN,
                                   "ResourceFlavors are unreadable: flavor matching not evaluated",
                                   unreadable=_unreadable(ctx, ("ResourceFlavor",))))
        flavor_rows = _flavor_rows(a, cq, node, inputs)
        if a.not_covered:
            reasons.append(_reason("ResourceNotCovered", Severity.BLOCKING,
                                   f"ClusterQueue {cq.name} gives no quota for {', '.join(a.not_covered)}",
                                   resources=a.not_covered))
        if a.unmatched:
            reasons.append(_reason(
                "NoMatchingFlavor", Severity.BLOCKING,
                "no flavor of the queue matches pod set(s) " + ", ".join(sorted({ps for _, ps in a.unmatched}))
                + " (node selectors and tolerations)",
                flavors={fl: why for (_, fl), why in a.mismatch.items()}))
        chosen = a.chosen_flavors()
        if node is not None and "ExceedsMaxQuota" in a.modes:
            rows = [f for f in flavor_rows if f.mode == "ExceedsMaxQuota" and any(fl == f.flavor for _, fl in chosen)]
            reasons.append(_reason(
                "ExceedsMaxQuota", Severity.BLOCKING,
                "the request exceeds the most this queue can ever reserve (nominal + borrowable within limits): "
                + "; ".join(f"{f.flavor}/{f.resource} requested {amount(f.resource, f.requested)} > most "
                            f"{amount(f.resource, f.potential_available)}"
                            for f in rows),
                flavors=[f"{f.flavor}/{f.resource}" for f in rows]))
        elif node is not None and "Short" in a.modes:
            rows = [f for f in flavor_rows if f.mode == "Preempt" and any(fl == f.flavor for _, fl in chosen)]
            reasons.append(_reason(
                "InsufficientQuota", Severity.WAITING,
                "insufficient unused quota: " + _short_text(rows),
                shortfall={f"{f.flavor}/{f.resource}": str(f.shortfall) for f in rows}))
        preemption = _preemption(wl, cq, node, a, inputs)

        if positions is not None and positions.source == FROM_API and positions.items is not None \
                and positions.cluster_queue == cq.name:
            orders = {cq.name: order_from_items(cq.name, cq.spec.queueing_strategy, positions.items,
                                                lambda ns, n: ctx.store.get(Workload, n, ns))}
            pos_source, pos_note = FROM_API, "positions from Kueue's visibility API"
        elif positions is not None and positions.source == UNKNOWN:
            orders, pos_source, pos_note = None, UNKNOWN, positions.message or "positions unknown"
        elif positions is not None and positions.source == ESTIMATED:
            pos_note = positions.message
        if orders is _UNSET:
            orders = cluster_queue_orders(ctx, only=cq.name)
        if inputs.unknown:
            orders = None
            if pos_source != UNKNOWN:
                pos_source, pos_note = UNKNOWN, "inputs unreadable"
        order: ClusterQueueOrder | None = orders.get(cq.name) if orders is not None else None
        entry = order.entry(namespace, name) if order is not None else None
        if order is not None and entry is not None:
            pos_cq, pos_lq = entry.position_in_cluster_queue, entry.position_in_local_queue
            for e in order.ahead_of(namespace, name):
                ahead.append(_ref(e.workload, cq.name, requests=workload_requests(e.workload),
                                  position=e.position_in_cluster_queue))
            if order.strategy == "StrictFIFO" and pos_cq > 0:
                head = order.entries[0].workload
                if not _assign(head, cq, node, flavors, rf_known).fits:
                    reasons.append(_reason(
                        "HeadOfLineBlocked", Severity.WAITING,
                        f"StrictFIFO: the head {head.namespace}/{head.name} (priority {effective_priority(head)}) does "
                        "not fit, and nothing behind it is tried until it is admitted — this Workload waits even if it "
                        "would fit",
                        head=f"{head.namespace}/{head.name}", fitsItself=a.fits))
            if pos_cq > 0 and not any(r.code == "HeadOfLineBlocked" for r in reasons):
                reasons.append(_reason("QueuedBehind", Severity.INFO,
                                       f"{plural(pos_cq, 'Workload')} ahead in ClusterQueue {cq.name} "
                                       f"({order.strategy}: those that fit are admitted first)", count=pos_cq))
        requeue = wl.status.requeue_state
        if requeue is not None and in_backoff(wl, ctx.now):
            reasons.append(_reason("Backoff", Severity.WAITING,
                                   f"requeued with backoff: Kueue retries it at {requeue.requeue_at}",
                                   requeueAt=requeue.requeue_at))
        if node is not None and a.fits:
            topo = topology_reason(ctx, wl, sorted(fl for _, fl in chosen), _kueue_condition(wl))
            if topo is not None:
                reasons.append(topo)
        if node is not None and a.fits and not any(r.severity == Severity.BLOCKING or r.code in (
                "HeadOfLineBlocked", "TopologyPlacementFailed") for r in reasons):
            reasons.append(_reason("FitsNow", Severity.INFO,
                                   "its request fits the unused quota now: Kueue should reserve it in a coming "
                                   "scheduling cycle"))

    # --- Kueue's own word
    kc = _kueue_condition(wl)
    if kc is not None and not wl.admitted and not wl.finished:
        computed = {r.code for r in reasons}
        specific = KUEUE_AGREES.get(kc["reason"])
        agrees = specific is None or bool(specific & computed) or not reasons
        # A disagreement is news: shown right after the top computed reason (the estimate may be stale, or Kueue's).
        top = min((r.rank for r in reasons), default=RANK["KueueCondition"])
        reasons.append(WaitReason(
            code="KueueCondition", severity=Severity.INFO, rank=RANK["KueueCondition"] if agrees else top,
            message=f"Kueue says {kc['type']}={kc['status']} {kc['reason']}: {kc['message']}",
            details={**kc, "agreesWithEstimate": agrees}))

    reasons.sort(key=lambda r: r.rank)
    owner = _owner(wl)
    qt = queue_order_time(wl)
    summary = WorkloadSummary(
        namespace=namespace, name=name, uid=wl.uid, owner=owner, priority=effective_priority(wl),
        status=wl.derived_status, active=wl.spec.active, created=wl.metadata.creation_timestamp,
        queue_order_time=qt.isoformat().replace("+00:00", "Z") if wl.metadata.creation_timestamp else None,
        requests=workload_requests(wl), kueue_condition=kc,
    )
    queue = QueueInfo(local_queue=wl.spec.queue_name or None, cluster_queue=cq_name,
                      cohort=(cq.spec.cohort_name or None) if cq is not None else None,
                      queueing_strategy=cq.spec.queueing_strategy if cq is not None else None,
                      position_in_cluster_queue=pos_cq, position_in_local_queue=pos_lq,
                      position_source=pos_source,
                      position_note=pos_note)
    return WorkloadWaitReport(workload=summary, queue=queue, reasons=reasons,
                              ahead=None if pending and pos_source == UNKNOWN else ahead, flavors=flavor_rows,
                              preemption=preemption)


def _namespace_reasons(ctx: RuleContext, cq: ClusterQueue, namespace: str) -> list[WaitReason]:
    """Kueue admits only from namespaces the ClusterQueue's namespaceSelector selects."""
    if ctx.unreadable("Namespace"):
        return [_reason("Unknown", Severity.UNKNOWN, "Namespaces are unreadable: the namespaceSelector was not checked",
                        unreadable=_unreadable(ctx, ("Namespace",)))]
    ns = ctx.store.get(Namespace, namespace)
    labels = ns.labels if ns is not None else {}
    try:
        selected = selector_matches(cq.spec.namespace_selector, labels)
    except SelectorError as exc:
        return [_reason("Unknown", Severity.UNKNOWN, f"ClusterQueue {cq.name}'s namespaceSelector: {exc}")]
    if selected:
        return []
    sel = cq.spec.namespace_selector
    shown = "null (selects no namespace)" if sel is None else sel.model_dump(by_alias=True, exclude_defaults=True)
    return [_reason("NamespaceNotSelected", Severity.BLOCKING,
                    f"ClusterQueue {cq.name}'s namespaceSelector {shown} does not select namespace {namespace}",
                    namespaceSelector=None if sel is None else sel.model_dump(by_alias=True, exclude_defaults=True))]


def _kueue_condition(wl: Workload) -> dict[str, str] | None:
    c = wl.condition("QuotaReserved")
    if c is not None and c.status == "True":
        c = wl.condition("Admitted") or c
    if c is None:
        return None
    return {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}


__all__ = [
    "DEACTIVATED_BY",
    "QuotaInputs",
    "WaitReason",
    "WorkloadWaitReport",
    "quota_inputs",
    "pod_set_requests",
    "reserved_usage",
    "why_waiting_report",
    "workload_requests",
]


def workloads_for(ctx: RuleContext, namespace: str, name: str) -> list[tuple[str, str]]:
    """What a name that is not a Workload's may mean: the Workloads owned by an object of that name (a Job,
    RayJob, JobSet, … — Kueue names a Workload after its owner, with a suffix), or by a Pod's owner when
    it is a Pod's name. [(owner "Kind/name", Workload name)], sorted; empty when nothing matches."""
    owners = {name}
    pod = ctx.store.get(Pod, name, namespace)
    if pod is not None:
        owners.update(ref.name for ref in pod.metadata.owner_references)
    found = []
    for wl in ctx.store.list(Workload, namespace):
        ref = wl.owner
        if ref is not None and ref.name in owners:
            found.append((f"{ref.kind}/{ref.name}", wl.metadata.name))
    return sorted(found)
