"""Kueue's flavor assignment and classical preemption for the simulator (Kueue's flavorassigner
and its preemption concept page).

The quota arithmetic is the engine's (engine/quota.py: the resource-node tree with cohort roll-up,
lending and borrowing limits), so the simulator admits by the same numbers `taudash why` explains.
What is modelled follows Kueue 0.19.2 (`pkg/scheduler/flavorassigner`, `pkg/scheduler/preemption`,
read for the facts, not copied):

- flavors are tried in `resourceGroups` order; a flavor fits a pod set when the pod tolerates its
  NoSchedule/NoExecute `nodeTaints` (the flavor's own `tolerations` count) and the pod's nodeSelector
  and required node affinity, restricted to the flavor's label keys, match its `nodeLabels`;
- per resource: above `potentialAvailable` → NoFit (ExceedsMaxQuota); within `available` → Fit
  (borrowing when above the queue's nominal quota); otherwise preemption is considered when the
  request fits the nominal quota, a subtree could hold it, or `borrowWithinCohort` allows it;
- `flavorFungibility` (whenCanBorrow, whenCanPreempt, preference) decides whether the search stops;
- preemption candidates: same ClusterQueue (`withinClusterQueue`) and borrowing ClusterQueues of the
  cohort tree (`reclaimWithinCohort`, `borrowWithinCohort` + maxPriorityThreshold), ordered evicted
  first, other queues first, lower priority, newest reservation; greedy until the Workload fits, then
  minimised by giving back in reverse.

Not modelled: TAS, partial admission, fair sharing, elastic slices, the flavor scan resuming
from the last tried flavor (docs/simulator.md, "Fidelity").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from taudash.engine.model import ZERO as QZERO
from taudash.engine.model import Quantity
from taudash.engine.model.fast import Workload as FastWorkload
from taudash.engine.model.kueue import ClusterQueue, Cohort
from taudash.engine.model.names import JOB_UID_LABEL
from taudash.engine.quota import (
    QuotaNode,
    QuotaTree,
    add_usage,
    available,
    build_tree,
    local_available,
    potential_available,
    remove_usage,
)
from taudash.engine.rules.queue_order import effective_priority, parse_time, queue_order_time
from taudash.engine.rules.why import reserved_usage
from taudash.sim.controllers.base import Obj, condition, is_true, meta, qfmt, qres
from taudash.sim.placement import requirement_matches, taint_text, tolerates

if TYPE_CHECKING:
    from pydantic import BaseModel

    from taudash.engine.model.fast import FastObject

FR = tuple[str, str]  # (flavor, resource)
ZERO = Decimal(0)

# Preemption reasons (Workload condition Preempted) and their wording in the eviction message.
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
HUMAN_REASON = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}


@dataclass(frozen=True)
class Behaviour:
    """Where Kueue releases differ in what the simulator models.

    `label_keys`: "flavor" (Kueue ≥ 0.18.2 / 0.19: a pod's nodeSelector and required affinity are
    compared with a flavor over that flavor's own `nodeLabels` keys) or "group" (older releases: over
    the union of the label keys of every flavor in the resource group, kubernetes-sigs/kueue#12449)."""

    label_keys: str = "flavor"


DEFAULT_BEHAVIOUR = Behaviour()


# --- quantities ------------------------------------------------------------------------------------


def q(value: Decimal) -> Quantity:
    return Quantity(value)


def _le(a: Quantity, b: Quantity) -> bool:
    return not b < a


def usage_of(wl: Obj) -> dict[FR, Decimal]:
    """What a Workload's admission reserves, per (flavor, resource), as exact decimals (for status)."""
    out: dict[FR, Decimal] = {}
    for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ():
        flavors = psa.get("flavors") or {}
        for r, v in (psa.get("resourceUsage") or {}).items():
            if r in flavors:
                fr = (flavors[r], r)
                out[fr] = out.get(fr, ZERO) + qres(r, v)
    return out


# --- the cluster as the scheduler sees it ------------------------------------------------------------


@dataclass(eq=False)
class Holder:
    """A Workload that holds quota: what preemption may take back."""

    raw: Obj
    model: Any
    cq: str
    usage: dict[FR, Quantity]

    @property
    def uid(self) -> str:
        return meta(self.raw).get("uid") or ""

    @property
    def evicted(self) -> bool:
        return is_true(self.raw, "Evicted")

    @property
    def priority(self) -> int:
        return effective_priority(self.model)

    def reserved_at(self, now: datetime) -> datetime:
        c = condition(self.raw, "QuotaReserved")
        t = parse_time(c.get("lastTransitionTime")) if c and c.get("status") == "True" else None
        return t or now


_MODELS: dict[tuple[type, int], tuple[Obj, Any]] = {}


def _model(cls: type[BaseModel] | type[FastObject], raw: Obj) -> Any:
    """The engine model of a raw object. Cached per object: the ObjectDB replaces an object's dict on
    every write and never mutates one, so the dict's identity is its version."""
    key = (cls, id(raw))
    hit = _MODELS.get(key)
    if hit is None or hit[0] is not raw:
        if len(_MODELS) > 20000:
            _MODELS.clear()
        hit = _MODELS[key] = (raw, cls.model_validate(raw))
    return hit[1]


def workload_model(raw: Obj) -> Any:
    return _model(FastWorkload, raw)


class Cluster:
    """The quota tree (engine/quota.py) of every ClusterQueue and Cohort with the current reservations,
    and the Workloads holding them; changed in place as a scheduling pass admits and preempts."""

    def __init__(self, cluster_queues: list[Obj], cohorts: list[Obj], holders: list[tuple[Obj, str]], now: datetime):
        self.now = now
        self.raw = {meta(c)["name"]: c for c in cluster_queues}
        self.models = {n: _model(ClusterQueue, c) for n, c in self.raw.items()}
        self.holders: dict[str, list[Holder]] = {}
        usage: dict[str, dict[FR, Quantity]] = {}
        for wl, cqn in holders:
            model = workload_model(wl)
            h = Holder(wl, model, cqn, reserved_usage(model))
            self.holders.setdefault(cqn, []).append(h)
            u = usage.setdefault(cqn, {})
            for fr, v in h.usage.items():
                u[fr] = u.get(fr, QZERO) + v
        self.tree: QuotaTree = build_tree(
            self.models.values(), [_model(Cohort, c) for c in cohorts], usage
        )

    def node(self, cq: str) -> QuotaNode:
        return self.tree.cluster_queues[cq]

    def add(self, cq: str, usage: dict[FR, Quantity]) -> None:
        node = self.node(cq)
        for fr, v in usage.items():
            add_usage(node, fr, v)

    def remove(self, cq: str, usage: dict[FR, Quantity]) -> None:
        node = self.node(cq)
        for fr, v in usage.items():
            remove_usage(node, fr, v)

    def admit(self, cq: str, wl: Obj, usage: dict[FR, Quantity]) -> None:
        self.add(cq, usage)
        self.holders.setdefault(cq, []).append(Holder(wl, workload_model(wl), cq, dict(usage)))


# --- the resource-node helpers Kueue's scheduler uses -------------------------------------------------


def cq_available(node: QuotaNode, fr: FR) -> Quantity:
    return available(node, fr).max0()


def _usage(node: QuotaNode, fr: FR) -> Quantity:
    return node.usage.get(fr, QZERO)


def _quota(node: QuotaNode, fr: FR) -> Quantity:
    return node.subtree_quota.get(fr, QZERO)


def borrowing_with(node: QuotaNode, fr: FR, val: Quantity) -> bool:
    """Whether `val` more would take the node past its own (subtree) quota."""
    return _quota(node, fr) < _usage(node, fr) + val


def within_nominal(node: QuotaNode, frs) -> bool:
    return all(_le(_usage(node, fr), _quota(node, fr)) for fr in frs)


def _height(node: QuotaNode) -> int:
    out = min(len(node.children), 1)
    for c in node.children:
        if not c.is_cluster_queue:
            out = max(out, _height(c) + 1)
    return out


def lowest_subtree_that_fits(node: QuotaNode, fr: FR, val: Quantity) -> tuple[int, bool]:
    """(borrowing height, may reclaim in the hierarchy): 0 when the queue's own quota holds `val`."""
    if not borrowing_with(node, fr, val) or node.parent is None:
        return 0, node.parent is not None
    remaining = val - local_available(node, fr)
    for anc in node.ancestors():
        if not borrowing_with(anc, fr, remaining):
            return _height(anc), anc.parent is not None
        remaining = remaining - local_available(anc, fr)
    return _height(node.root()), False


def _fits_in_quota(node: QuotaNode, requests: dict[FR, Quantity]) -> tuple[bool, dict[FR, Quantity]]:
    fits, remaining = True, {}
    for fr, v in requests.items():
        if _quota(node, fr) < _usage(node, fr) + v:
            fits = False
        remaining[fr] = (v - local_available(node, fr)).max0()
    return fits, remaining


# --- classical preemption ------------------------------------------------------------------------------

_NEVER, _WITHIN_CQ, _HIERARCHICAL, _RECLAIM_NO_BORROW, _RECLAIM_WHILE_BORROWING = range(5)
_VARIANT_REASON = {
    _WITHIN_CQ: IN_CLUSTER_QUEUE,
    _HIERARCHICAL: IN_COHORT_RECLAMATION,
    _RECLAIM_NO_BORROW: IN_COHORT_RECLAMATION,
    _RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


@dataclass
class Preemptor:
    cq: str
    model: Any  # the Workload struct (priority, queue-order time)
    frs: set[FR]  # the flavor/resources that need preemption
    usage: dict[FR, Quantity]  # what the Workload would reserve


@dataclass(eq=False)
class Target:
    holder: Holder
    reason: str


def satisfies(policy: str, preemptor, candidate) -> bool:
    p, c = effective_priority(preemptor), effective_priority(candidate)
    if policy == "LowerPriority":
        return p > c
    if policy == "LowerOrNewerEqualPriority":
        return p > c or (p == c and queue_order_time(preemptor) < queue_order_time(candidate))
    return policy == "Any"


def _borrow_policy(cqm) -> tuple[bool, int | None]:
    """(borrowing within the cohort forbidden, maxPriorityThreshold)."""
    bwc = cqm.spec.preemption.borrow_within_cohort
    if bwc is None or bwc.policy == "Never":
        return True, None
    return False, bwc.max_priority_threshold


def _variant(cl: Cluster, p: Preemptor, h: Holder, advantage: bool) -> int:
    if not any(fr in p.frs for fr in h.usage):
        return _NEVER
    cqm = cl.models[p.cq]
    pol = cqm.spec.preemption
    policy = pol.within_cluster_queue if h.cq == p.cq else pol.reclaim_within_cohort
    if not satisfies(policy, p.model, h.model):
        return _NEVER
    if h.cq == p.cq:
        return _WITHIN_CQ
    if advantage:
        return _HIERARCHICAL
    forbidden, threshold = _borrow_policy(cqm)
    if forbidden:
        return _RECLAIM_NO_BORROW
    cand, incoming = h.priority, effective_priority(p.model)
    if cand >= incoming or (threshold is not None and cand > threshold):
        return _RECLAIM_NO_BORROW
    return _RECLAIM_WHILE_BORROWING


@dataclass(eq=False)
class _Candidate:
    holder: Holder
    lca: QuotaNode | None
    variant: int


def _from_cq(cl: Cluster, p: Preemptor, cq: str, lca, advantage: bool) -> list[_Candidate]:
    out = []
    for h in cl.holders.get(cq, []):
        v = _variant(cl, p, h, advantage)
        if v != _NEVER:
            out.append(_Candidate(h, lca, v))
    return out


def _in_subtree(cl: Cluster, p: Preemptor, cur: QuotaNode, root: QuotaNode, skip, advantage: bool, out: list) -> None:
    me = cl.node(p.cq)
    for child in cur.children:
        if child.is_cluster_queue:
            continue
        if child is skip or within_nominal(child, p.frs):
            continue
        _in_subtree(cl, p, child, root, skip, advantage, out)
    for child in cur.children:
        if not child.is_cluster_queue or child is me:
            continue
        if not within_nominal(child, p.frs):
            out += _from_cq(cl, p, child.name, root, advantage)


class _Candidates:
    def __init__(self, cl: Cluster, p: Preemptor) -> None:
        self.cl, self.p = cl, p
        cqm = cl.models[p.cq]
        node = cl.node(p.cq)
        same = _from_cq(cl, p, p.cq, None, False) if cqm.spec.preemption.within_cluster_queue != "Never" else []
        hier: list[_Candidate] = []
        prio: list[_Candidate] = []
        if node.parent is not None and cqm.spec.preemption.reclaim_within_cohort != "Never":
            advantage, remaining = _fits_in_quota(node, p.usage)
            previous = None
            for anc in node.ancestors():
                _in_subtree(cl, p, anc, anc, previous, advantage, hier if advantage else prio)
                fits, remaining = _fits_in_quota(anc, remaining)
                advantage = advantage or fits
                previous = anc

        def key(c: _Candidate):
            h = c.holder
            return (not h.evicted, h.cq == p.cq, h.priority, -h.reserved_at(cl.now).timestamp(), h.uid)

        groups = [sorted(g, key=key) for g in (hier, prio, same)]
        self.items = [c for g in groups for c in g if c.holder.evicted] + [
            c for g in groups for c in g if not c.holder.evicted
        ]
        self.none_from_other_queues = not hier and not prio
        self.none_for_hierarchical_reclaim = not hier

    def valid(self, c: _Candidate, borrow: bool) -> bool:
        if c.holder.cq == self.p.cq:
            return True
        if borrow and c.variant == _RECLAIM_NO_BORROW:
            return False
        node = self.cl.node(c.holder.cq)
        if within_nominal(node, self.p.frs):
            return False
        for anc in node.ancestors():
            if anc is c.lca:
                break
            if within_nominal(anc, self.p.frs):
                return False
        return True


def _fits(cl: Cluster, p: Preemptor, allow_borrowing: bool) -> bool:
    node = cl.node(p.cq)
    for fr, v in p.usage.items():
        if not allow_borrowing and _quota(node, fr) < _usage(node, fr) + v:
            return False
        if cq_available(node, fr) < v:
            return False
    return True


def preemption_targets(cl: Cluster, p: Preemptor) -> list[Target]:
    """The Workloads Kueue's classical preemption would evict so that `p` fits; [] when it cannot."""
    gen = _Candidates(cl, p)
    if not gen.items:
        return []
    node = cl.node(p.cq)
    forbidden, _ = _borrow_policy(cl.models[p.cq])
    under_nominal = all(
        _usage(node, fr) < node.limits(fr).nominal for fr in p.frs
    )
    if gen.none_from_other_queues or (forbidden and not under_nominal):
        attempts = [True]
    elif forbidden and gen.none_for_hierarchical_reclaim:
        attempts = [False, True]
    else:
        attempts = [True, False]
    for borrow in attempts:
        taken: list[_Candidate] = []
        for c in gen.items:
            if not gen.valid(c, borrow):
                continue
            cl.remove(c.holder.cq, c.holder.usage)
            taken.append(c)
            if _fits(cl, p, borrow):
                # give back what is not needed, newest choice first
                for i in range(len(taken) - 2, -1, -1):
                    back = taken[i]
                    cl.add(back.holder.cq, back.holder.usage)
                    if _fits(cl, p, borrow):
                        taken.pop(i)
                    else:
                        cl.remove(back.holder.cq, back.holder.usage)
                for t in taken:
                    cl.add(t.holder.cq, t.holder.usage)
                return [Target(t.holder, _VARIANT_REASON[t.variant]) for t in taken]
        for t in taken:
            cl.add(t.holder.cq, t.holder.usage)
    return []


# --- flavor matching -------------------------------------------------------------------------------


@dataclass
class PodSetRequest:
    name: str
    count: int
    requests: dict[str, Decimal]  # per pod, "pods" excluded
    node_selector: dict[str, str]
    tolerations: list[Obj]
    affinity_terms: list[Obj] | None = None  # requiredDuringScheduling nodeSelectorTerms


def selector_matches(ps: PodSetRequest, labels: dict[str, str], keys: set[str]) -> bool:
    """The pod's nodeSelector and required node affinity, restricted to `keys`, against `labels`."""
    for k, v in ps.node_selector.items():
        if k in keys and labels.get(k) != v:
            return False
    terms: list[list[Obj]] = []
    for t in ps.affinity_terms or ():
        exprs = [e for e in t.get("matchExpressions") or () if e.get("key") in keys]
        if not exprs:  # a term with nothing left matches every node: the affinity says nothing
            terms = []
            break
        terms.append(exprs)
    return not terms or any(all(requirement_matches(e, labels) for e in exprs) for exprs in terms)


def flavor_mismatch(name: str, flavor: Obj | None, ps: PodSetRequest, group_keys: set[str],
                    behaviour: Behaviour) -> str | None:
    """Why a pod set cannot use a ResourceFlavor (Kueue's wording), or None."""
    if flavor is None:
        return f"flavor {name} not found"
    spec = flavor.get("spec") or {}
    tolerations = list(ps.tolerations) + list(spec.get("tolerations") or [])
    for taint in spec.get("nodeTaints") or ():
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return f"untolerated taint {taint_text(taint)} in flavor {name}"
    labels = spec.get("nodeLabels") or {}
    keys = set(labels) if behaviour.label_keys == "flavor" else group_keys
    if not selector_matches(ps, labels, keys):
        return f"flavor {name} doesn't match node affinity"
    return None


# --- flavor assignment ------------------------------------------------------------------------------

# granular modes, worst first (flavorassigner's preemptionMode)
NOFIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)
# per-resource modes (FlavorAssignmentMode)
MODE_NOFIT, MODE_PREEMPT, MODE_FIT = 0, 1, 3
_SEVERITY = {"NoMatchingFlavor": 4, "ExceedsMaxQuota": 3, "WaitingForQuota": 2, "": 0}


def _most_severe(a: str, b: str) -> str:
    return a if _SEVERITY.get(a, 0) >= _SEVERITY.get(b, 0) else b


@dataclass(frozen=True)
class Gran:
    mode: int
    borrow: int


def _preferred(a: Gran, b: Gran, fung: Obj) -> bool:
    if a.mode == NOFIT:
        return False
    if b.mode == NOFIT:
        return True
    if (a.mode == NO_CANDIDATES) != (b.mode == NO_CANDIDATES):
        return a.mode != NO_CANDIDATES
    if fung.get("preference") == "PreemptionOverBorrowing":
        if a.borrow != b.borrow:
            return a.borrow < b.borrow
        return a.mode > b.mode
    if a.mode != b.mode:
        return a.mode > b.mode
    return a.borrow < b.borrow


def _try_next(g: Gran, fung: Obj) -> bool:
    if g.mode in (NOFIT, NO_CANDIDATES):
        return True
    if g.mode in (PREEMPT, RECLAIM) and (fung.get("whenCanPreempt") or "TryNextFlavor") == "TryNextFlavor":
        return True
    return g.borrow > 0 and (fung.get("whenCanBorrow") or "MayStopSearch") == "TryNextFlavor"


@dataclass
class PodSetResult:
    name: str
    count: int
    totals: dict[str, Quantity]
    flavors: dict[str, tuple[str, int]] = field(default_factory=dict)  # resource -> (flavor, mode)
    reasons: list[str] = field(default_factory=list)
    fit: bool = True
    attempts: list[tuple[int, str, str]] = field(default_factory=list)  # (group, flavor, no-fit reason)

    @property
    def mode(self) -> int:
        if self.fit:
            return MODE_FIT
        if not self.flavors:
            return MODE_NOFIT
        return min(m for _, m in self.flavors.values())


@dataclass
class Assignment:
    podsets: list[PodSetResult] = field(default_factory=list)
    usage: dict[FR, Quantity] = field(default_factory=dict)
    borrowing: int = 0

    @property
    def mode(self) -> int:
        if not self.podsets:
            return MODE_NOFIT
        return min(ps.mode for ps in self.podsets)

    @property
    def fits(self) -> bool:
        return self.mode == MODE_FIT

    @property
    def borrows(self) -> bool:
        return self.borrowing > 0

    def message(self) -> str:
        parts = [
            f"couldn't assign flavors to pod set {ps.name}: " + ", ".join(sorted(ps.reasons))
            for ps in self.podsets
            if not ps.fit
        ]
        return "; ".join(parts)

    def no_fit_reason(self) -> str:
        reason = ""
        for ps in self.podsets:
            if ps.mode != MODE_NOFIT:
                continue
            if not ps.attempts:
                reason = _most_severe(reason, "NoMatchingFlavor")
                continue
            per_group: dict[int, str] = {}
            for g, _, why in ps.attempts:
                if g not in per_group or _SEVERITY.get(why, 0) < _SEVERITY.get(per_group[g], 0):
                    per_group[g] = why
            ps_reason = ""
            for why in per_group.values():
                ps_reason = _most_severe(ps_reason, why)
            reason = _most_severe(reason, ps_reason)
        return reason or "NoMatchingFlavor"

    def frs_needing_preemption(self) -> set[FR]:
        return {(fl, r) for ps in self.podsets for r, (fl, m) in ps.flavors.items() if m == MODE_PREEMPT}


class Assigner:
    """Kueue's FlavorAssigner for one Workload against the cluster as it stands."""

    def __init__(self, cl: Cluster, cq: str, wl_model, flavors: dict[str, Obj], fmt: dict[str, str],
                 behaviour: Behaviour = DEFAULT_BEHAVIOUR) -> None:
        self.cl, self.cq, self.wl = cl, cq, wl_model
        self.node = cl.node(cq)
        self.spec = cl.raw[cq].get("spec") or {}
        self.flavors, self.fmt, self.behaviour = flavors, fmt, behaviour
        self.fung = self.spec.get("flavorFungibility") or {}
        self.groups = self.spec.get("resourceGroups") or []
        self.covered = {r: i for i, rg in enumerate(self.groups) for r in rg.get("coveredResources") or ()}
        self.nominal = {fr: lim.nominal for fr, lim in self.node.quotas.items()}
        self.borrowing = 0  # the highest borrowing height among the chosen flavors

    def _fmt(self, r: str, v: Quantity) -> str:
        return qfmt(v.value, self.fmt.get(r, "DecimalSI"))

    def assign(self, podsets: list[PodSetRequest]) -> Assignment:
        out = Assignment()
        for ps in podsets:
            totals = {r: q(v * ps.count) for r, v in ps.requests.items() if v}
            if "pods" in self.covered:
                totals["pods"] = q(Decimal(ps.count))
            res = PodSetResult(ps.name, ps.count, totals)
            failed = False
            for r in sorted(totals):
                if r in res.flavors:
                    continue
                if r not in self.covered:
                    res.reasons.append(f"resource {r} unavailable in ClusterQueue")
                    res.flavors, res.fit, failed = {}, False, True
                    break
                chosen, reasons, fit = self._find(ps, self.covered[r], totals, out.usage, res)
                if not chosen:
                    res.reasons, res.flavors, res.fit, failed = reasons, {}, False, True
                    break
                res.flavors.update(chosen)
                if not fit:
                    res.fit = False
                    res.reasons += reasons
            out.podsets.append(res)
            for r, (fl, _m) in res.flavors.items():
                fr = (fl, r)
                out.usage[fr] = out.usage.get(fr, QZERO) + totals[r]
            if failed:
                return out
        return out

    def _find(self, ps: PodSetRequest, gi: int, totals: dict[str, Quantity], assumed: dict[FR, Quantity],
              res: PodSetResult) -> tuple[dict[str, tuple[str, int]], list[str], bool]:
        rg = self.groups[gi]
        covered = set(rg.get("coveredResources") or ())
        requests = {r: v for r, v in totals.items() if r in covered}
        group_keys = {k for fl in rg.get("flavors") or () for k in
                      ((self.flavors.get(fl["name"]) or {}).get("spec") or {}).get("nodeLabels") or {}}
        reasons: list[str] = []
        best: dict[str, tuple[str, int]] = {}
        best_mode = Gran(NOFIT, 1 << 30)
        for fl in rg.get("flavors") or ():
            name = fl["name"]
            bad = flavor_mismatch(name, self.flavors.get(name), ps, group_keys, self.behaviour)
            if bad:
                reasons.append(bad)
                res.attempts.append((gi, name, "NoMatchingFlavor"))
                continue
            chosen: dict[str, tuple[str, int]] = {}
            rep = Gran(FIT, 0)
            why = ""
            for r in sorted(requests):
                fr = (name, r)
                mode, borrow, msg, nofit = self._fits_quota(fr, assumed.get(fr, QZERO), requests[r])
                if msg:
                    reasons.append(msg)
                    why = _most_severe(why, nofit)
                g = Gran(mode, borrow)
                if _preferred(rep, g, self.fung):
                    rep = g
                if rep.mode == NOFIT:
                    continue
                chosen[r] = (name, MODE_FIT if mode == FIT else (MODE_NOFIT if mode == NOFIT else MODE_PREEMPT))
            if rep.mode == NOFIT:
                res.attempts.append((gi, name, why or "WaitingForQuota"))
            if not _try_next(rep, self.fung):
                best, best_mode = chosen, rep
                break
            if _preferred(rep, best_mode, self.fung):
                best, best_mode = chosen, rep
        if best and best_mode.mode != NOFIT:
            self.borrowing = max(self.borrowing, best_mode.borrow)
        return best, reasons, best_mode.mode == FIT

    def _fits_quota(self, fr: FR, assumed: Quantity, request: Quantity) -> tuple[int, int, str, str]:
        """(mode, borrowing height, message, no-fit reason) of one resource of one flavor."""
        node = self.node
        val = assumed + request
        cap = potential_available(node, fr)
        if cap < val:
            return NOFIT, 0, (
                f"insufficient quota for {fr[1]} in flavor {fr[0]}, previously considered podsets requests "
                f"({self._fmt(fr[1], assumed)}) + current podset request ({self._fmt(fr[1], request)}) > "
                f"maximum capacity ({self._fmt(fr[1], cap)})"
            ), "ExceedsMaxQuota"
        borrow, may_reclaim = lowest_subtree_that_fits(node, fr, val)
        avail = cq_available(node, fr)
        if _le(val, avail):
            return FIT, borrow, "", ""
        msg = f"insufficient unused quota for {fr[1]} in flavor {fr[0]}, {self._fmt(fr[1], val - avail)} more needed"
        forbidden, _ = _borrow_policy(self.cl.models[self.cq])
        if _le(val, self.nominal.get(fr, QZERO)) or may_reclaim or not forbidden:
            p = Preemptor(self.cq, self.wl, {fr}, {fr: val})
            targets = preemption_targets(self.cl, p)
            if not targets:
                return NO_CANDIDATES, borrow, msg, ""
            for t in targets:
                self.cl.remove(t.holder.cq, t.holder.usage)
            after, _ = lowest_subtree_that_fits(node, fr, val)
            for t in targets:
                self.cl.add(t.holder.cq, t.holder.usage)
            same = any(t.holder.cq == self.cq for t in targets)
            return (PREEMPT if same else RECLAIM), after, msg, ""
        return NOFIT, borrow, msg, "WaitingForQuota"


def assign(cl: Cluster, cq: str, wl_model, podsets: list[PodSetRequest], flavors: dict[str, Obj],
           fmt: dict[str, str], behaviour: Behaviour = DEFAULT_BEHAVIOUR) -> Assignment:
    a = Assigner(cl, cq, wl_model, flavors, fmt, behaviour)
    out = a.assign(podsets)
    out.borrowing = a.borrowing
    return out


def fits_now(cl: Cluster, cq: str, usage: dict[FR, Quantity], without: list[Holder]) -> bool:
    """Whether `usage` fits the queue once `without` are gone (Kueue's cq.Fits after removing targets)."""
    for h in without:
        cl.remove(h.cq, h.usage)
    try:
        node = cl.node(cq)
        return all(_le(v, cq_available(node, fr)) for fr, v in usage.items())
    finally:
        for h in without:
            cl.add(h.cq, h.usage)


def preemption_message(preemptor: Obj, reason: str, preemptor_path: str, preemptee_path: str) -> str:
    """Kueue 0.19's eviction message naming the preemptor (pkg/scheduler/preemption)."""
    m = meta(preemptor)
    uid = m.get("uid") or "UNKNOWN"
    job_uid = (m.get("labels") or {}).get(JOB_UID_LABEL) or "UNKNOWN"
    return (
        f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to "
        f"{HUMAN_REASON.get(reason, 'UNKNOWN')}; preemptor path: {preemptor_path or 'UNKNOWN'}; "
        f"preemptee path: {preemptee_path or 'UNKNOWN'}"
    )


def cq_path(cl: Cluster, cq: str) -> str:
    node = cl.tree.cluster_queues.get(cq)
    if node is None:
        return ""
    parts = [a.name for a in reversed(node.ancestors())] + [cq]
    return "/" + "/".join(parts)


__all__ = [
    "Assignment",
    "Behaviour",
    "Cluster",
    "PodSetRequest",
    "Preemptor",
    "Target",
    "assign",
    "fits_now",
    "preemption_message",
    "preemption_targets",
    "usage_of",
]
