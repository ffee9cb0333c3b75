"""Kueue's quota arithmetic and flavor assignment (reference/kueue.md §4.4-4.6), for the simulator.

A tree of ClusterQueues and Cohorts per (flavor, resource): subtree quota, local (unlendable)
quota, usage bubbling up, `available` bounded by borrowing limits and `potentialAvailable` for
"could this ever fit". Lowering quota never evicts: `available` may go negative and only new
admissions wait. No preemption.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from taudash.sim.controllers.base import Obj, meta, qfmt, qres

FR = tuple[str, str]  # (flavor, resource)
ZERO = Decimal(0)


@dataclass
class QNode:
    name: str
    is_cq: bool
    parent: QNode | None = None
    children: list[QNode] = field(default_factory=list)
    nominal: dict[FR, Decimal] = field(default_factory=dict)
    borrowing: dict[FR, Decimal] = field(default_factory=dict)  # only limits that are set
    lending: dict[FR, Decimal] = field(default_factory=dict)
    usage: dict[FR, Decimal] = field(default_factory=dict)  # a ClusterQueue's own reservations


def quotas(groups: list[Obj] | None, node: QNode) -> None:
    for rg in groups or ():
        for fl in rg.get("flavors") or ():
            for r in fl.get("resources") or ():
                fr = (fl["name"], r["name"])
                node.nominal[fr] = node.nominal.get(fr, ZERO) + qres(r["name"], r.get("nominalQuota", "0"))
                if r.get("borrowingLimit") is not None:
                    node.borrowing[fr] = qres(r["name"], r["borrowingLimit"])
                if r.get("lendingLimit") is not None:
                    node.lending[fr] = qres(r["name"], r["lendingLimit"])


class Capacity:
    """The quota tree of every ClusterQueue and Cohort (explicit or implicit)."""

    def __init__(self, cluster_queues: list[Obj], cohorts: list[Obj]) -> None:
        self.cqs: dict[str, QNode] = {}
        self.cohorts: dict[str, QNode] = {}
        for co in cohorts:
            node = self._cohort(meta(co)["name"])
            quotas((co.get("spec") or {}).get("resourceGroups"), node)
        for co in cohorts:
            parent = (co.get("spec") or {}).get("parentName") or (co.get("spec") or {}).get("parent")
            node = self.cohorts[meta(co)["name"]]
            if parent and not self._cycle(node, parent):
                self._link(node, self._cohort(parent))  # a missing parent is an implicit cohort
        for cq in cluster_queues:
            spec = cq.get("spec") or {}
            node = QNode(meta(cq)["name"], is_cq=True)
            quotas(spec.get("resourceGroups"), node)
            self.cqs[node.name] = node
            cohort = spec.get("cohortName") or spec.get("cohort")
            if cohort:
                self._link(node, self._cohort(cohort))

    def _cohort(self, name: str) -> QNode:
        if name not in self.cohorts:
            self.cohorts[name] = QNode(name, is_cq=False)
        return self.cohorts[name]

    def _cycle(self, node: QNode, parent: str) -> bool:
        seen, cur = {node.name}, parent
        while cur:
            if cur in seen:
                return True
            seen.add(cur)
            p = self.cohorts.get(cur)
            cur = p.parent.name if p is not None and p.parent is not None else ""
        return False

    @staticmethod
    def _link(child: QNode, parent: QNode) -> None:
        child.parent = parent
        parent.children.append(child)

    # the formulas of resource_node.go ----------------------------------------------------------
    def subtree(self, n: QNode, fr: FR) -> Decimal:
        total = n.nominal.get(fr, ZERO)
        for c in n.children:
            sub = self.subtree(c, fr)
            total += min(sub, c.lending[fr]) if fr in c.lending else sub
        return total

    def local(self, n: QNode, fr: FR) -> Decimal:
        return max(ZERO, self.subtree(n, fr) - n.lending[fr]) if fr in n.lending else ZERO

    def used(self, n: QNode, fr: FR) -> Decimal:
        if n.is_cq:
            return n.usage.get(fr, ZERO)
        return sum((max(ZERO, self.used(c, fr) - self.local(c, fr)) for c in n.children), ZERO)

    def available(self, n: QNode, fr: FR) -> Decimal:
        sub, usage = self.subtree(n, fr), self.used(n, fr)
        if n.parent is None:
            return sub - usage
        local = self.local(n, fr)
        above = self.available(n.parent, fr)
        if fr in n.borrowing:
            cap = (sub - local) - max(ZERO, usage - local) + n.borrowing[fr]
            above = min(above, cap)
        return max(ZERO, local - usage) + above

    def potential(self, n: QNode, fr: FR) -> Decimal:
        if n.parent is None:
            return self.subtree(n, fr)
        out = self.local(n, fr) + self.potential(n.parent, fr)
        if fr in n.borrowing:
            out = min(out, self.subtree(n, fr) + n.borrowing[fr])
        return out

    def add(self, cq: str, usage: dict[FR, Decimal]) -> None:
        node = self.cqs[cq]
        for fr, v in usage.items():
            node.usage[fr] = node.usage.get(fr, ZERO) + v


def usage_of(wl: Obj) -> dict[FR, Decimal]:
    out: dict[FR, Decimal] = {}
    for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ():
        flavors = psa.get("flavors") or {}
        for r, v in (psa.get("resourceUsage") or {}).items():
            if r in flavors:
                fr = (flavors[r], r)
                out[fr] = out.get(fr, Decimal(0)) + qres(r, v)
    return out


# --- flavor assignment ---------------------------------------------------------------------------


@dataclass
class PodSetRequest:
    name: str
    count: int
    requests: dict[str, Decimal]  # per pod, "pods" excluded
    node_selector: dict[str, str]
    tolerations: list[Obj]


@dataclass
class Assignment:
    fits: bool
    borrows: bool = False
    flavors: dict[str, dict[str, str]] = field(default_factory=dict)  # podset -> resource -> flavor
    usage: dict[FR, Decimal] = field(default_factory=dict)
    per_podset: dict[str, dict[str, Decimal]] = field(default_factory=dict)  # podset -> resource -> total
    reason: str = ""  # QuotaReserved=False reason when it does not fit
    message: str = ""


def _tolerates(taint: Obj, tolerations: list[Obj]) -> bool:
    if taint.get("effect") not in ("NoSchedule", "NoExecute"):
        return True
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t["key"] == taint.get("key")):
            return True
        if t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def flavor_mismatch(flavor: Obj | None, ps: PodSetRequest) -> str | None:
    """Why a podset cannot use a ResourceFlavor, or None."""
    if flavor is None:
        return "flavor not found"
    spec = flavor.get("spec") or {}
    node_labels = spec.get("nodeLabels") or {}
    for k, v in ps.node_selector.items():
        if k in node_labels and node_labels[k] != v:
            return "doesn't match node affinity"
    tolerations = ps.tolerations + list(spec.get("tolerations") or [])
    if any(not _tolerates(t, tolerations) for t in spec.get("nodeTaints") or ()):
        return "untolerated taint in flavor"
    return None


def assign(
    cq: Obj, podsets: list[PodSetRequest], cap: Capacity, flavors: dict[str, Obj], fmt: dict[str, str]
) -> Assignment:
    """Kueue's flavor walk for one Workload against the current capacity (§4.4)."""
    spec = cq.get("spec") or {}
    node = cap.cqs[meta(cq)["name"]]
    groups = spec.get("resourceGroups") or []
    covered = {r: i for i, rg in enumerate(groups) for r in rg.get("coveredResources") or ()}
    may_stop = ((spec.get("flavorFungibility") or {}).get("whenCanBorrow") or "MayStopSearch") != "TryNextFlavor"
    out = Assignment(fits=True)
    for ps in podsets:
        totals = {r: v * ps.count for r, v in ps.requests.items() if v}
        if "pods" in covered:
            totals["pods"] = Decimal(ps.count)
        out.per_podset[ps.name] = totals
        out.flavors[ps.name] = {}
        missing = sorted(r for r in totals if r not in covered)
        if missing:
            return _nofit(
                out,
                "NoMatchingFlavor",
                f"couldn't assign flavors to pod set {ps.name}: resource {missing[0]} unavailable in ClusterQueue",
            )
        by_group: dict[int, list[str]] = {}
        for r in sorted(totals):
            by_group.setdefault(covered[r], []).append(r)
        for gi, resources in sorted(by_group.items()):
            chosen, why, kinds = None, [], set()
            for fl in groups[gi].get("flavors") or ():
                name = fl["name"]
                bad = flavor_mismatch(flavors.get(name), ps)
                if bad:
                    why.append(f"flavor {name} {bad}")
                    continue
                fit, borrow, reason = True, False, ""
                for r in resources:
                    fr = (name, r)
                    val = out.usage.get(fr, Decimal(0)) + totals[r]
                    if val > cap.potential(node, fr):
                        f_ = fmt.get(r, "DecimalSI")
                        fit, reason = (
                            False,
                            (
                                f"insufficient quota for {r} in flavor {name}, request > maximum capacity "
                                f"({qfmt(val, f_)} > {qfmt(cap.potential(node, fr), f_)})"
                            ),
                        )
                        kinds.add("ExceedsMaxQuota")
                        break
                    avail = cap.available(node, fr)
                    if val > avail:
                        more = qfmt(val - max(avail, Decimal(0)), fmt.get(r, "DecimalSI"))
                        fit, reason = False, f"insufficient unused quota for {r} in flavor {name}, {more} more needed"
                        kinds.add("WaitingForQuota")
                        break
                    borrow = borrow or node.usage.get(fr, Decimal(0)) + val > node.nominal.get(fr, Decimal(0))
                if not fit:
                    why.append(reason)
                    continue
                if chosen is None or (chosen[1] and not borrow):
                    chosen = (name, borrow)
                if may_stop or not borrow:
                    break
            if chosen is None:
                reason = next((k for k in ("WaitingForQuota", "ExceedsMaxQuota") if k in kinds), "NoMatchingFlavor")
                return _nofit(out, reason, f"couldn't assign flavors to pod set {ps.name}: " + ", ".join(why))
            name, borrow = chosen
            out.borrows = out.borrows or borrow
            for r in resources:
                out.flavors[ps.name][r] = name
                out.usage[(name, r)] = out.usage.get((name, r), Decimal(0)) + totals[r]
    return out


def _nofit(out: Assignment, reason: str, message: str) -> Assignment:
    out.fits, out.reason, out.message = False, reason, message
    return out
