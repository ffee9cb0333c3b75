"""Kueue's quota arithmetic over the ClusterQueue/Cohort tree, apart from any I/O.

One node per ClusterQueue and per Cohort (explicit object or a bare name), per (flavor, resource):
- subtree quota: the node's own nominal plus what each child can lend (its subtree quota minus the
  part its lendingLimit keeps private);
- local quota: the part a lendingLimit keeps private (nominal − lendingLimit), guaranteed to the node;
- usage: a ClusterQueue's reserved quota; a Cohort's is the sum of its children's usage past their
  local quota.
`available` is what one more Workload in a ClusterQueue could reserve now; `potential_available`
what it could reserve with nothing else admitted. Same semantics as Kueue's resource_node.go
(pkg/cache/scheduler); written from a description of it, not copied.

A quantity of None means unlimited for a limit. The tree never guesses: callers check that the
ClusterQueues, Cohorts and Workloads were readable before building one (engine/rules/why.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .model import ZERO, Quantity
from .model.kueue import ResourceGroup

FlavorResource = tuple[str, str]  # (flavor, resource)


@dataclass(frozen=True)
class Limits:
    nominal: Quantity = ZERO
    borrowing_limit: Quantity | None = None  # None: unlimited
    lending_limit: Quantity | None = None  # None: everything can be lent


_NO_LIMITS = Limits()


@dataclass(eq=False)
class QuotaNode:
    name: str
    kind: str  # "ClusterQueue" | "Cohort"
    quotas: dict[FlavorResource, Limits] = field(default_factory=dict)
    parent: QuotaNode | None = None
    children: list[QuotaNode] = field(default_factory=list)
    explicit: bool = True  # a Cohort object exists (False: a name only)
    in_cycle: bool = False
    subtree_quota: dict[FlavorResource, Quantity] = field(default_factory=dict)
    usage: dict[FlavorResource, Quantity] = field(default_factory=dict)

    @property
    def is_cluster_queue(self) -> bool:
        return self.kind == "ClusterQueue"

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def ancestors(self) -> list[QuotaNode]:
        out, node = [], self.parent
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def subtree_cluster_queues(self) -> list[QuotaNode]:
        if self.is_cluster_queue:
            return [self]
        out: list[QuotaNode] = []
        for c in self.children:
            out += c.subtree_cluster_queues()
        return out

    def limits(self, fr: FlavorResource) -> Limits:
        return self.quotas.get(fr) or _NO_LIMITS


# --- the formulas --------------------------------------------------------------------------


def local_quota(node: QuotaNode, fr: FlavorResource) -> Quantity:
    """Capacity a lendingLimit keeps inside this node's subtree (0 without a lending limit)."""
    lending = node.limits(fr).lending_limit
    if lending is None:
        return ZERO
    return (node.subtree_quota.get(fr, ZERO) - lending).max0()


def local_available(node: QuotaNode, fr: FlavorResource) -> Quantity:
    """Unused guaranteed (private) quota of this node."""
    return (local_quota(node, fr) - node.usage.get(fr, ZERO)).max0()


def borrow_cap(node: QuotaNode, fr: FlavorResource) -> Quantity | None:
    """The most this node may still take from its parent (None: no borrowingLimit)."""
    limit = node.limits(fr).borrowing_limit
    if limit is None:
        return None
    lq = local_quota(node, fr)
    stored_in_parent = node.subtree_quota.get(fr, ZERO) - lq
    used_in_parent = (node.usage.get(fr, ZERO) - lq).max0()
    return stored_in_parent - used_in_parent + limit


def from_parent(node: QuotaNode, fr: FlavorResource) -> Quantity:
    """What the parent tree can give this node now, within its borrowing limit."""
    assert node.parent is not None
    parent_available = available(node.parent, fr)
    cap = borrow_cap(node, fr)
    return parent_available if cap is None else min(parent_available, cap)


def available(node: QuotaNode, fr: FlavorResource) -> Quantity:
    """What can still be reserved at `node`; negative after overadmission (quota shrunk under usage)."""
    if node.parent is None:
        return node.subtree_quota.get(fr, ZERO) - node.usage.get(fr, ZERO)
    return local_available(node, fr) + from_parent(node, fr)


def potential_available(node: QuotaNode, fr: FlavorResource) -> Quantity:
    """The most `node` could ever reserve: nothing else admitted, borrowing limits respected."""
    if node.parent is None:
        return node.subtree_quota.get(fr, ZERO)
    avail = local_quota(node, fr) + potential_available(node.parent, fr)
    limit = node.limits(fr).borrowing_limit
    if limit is not None:
        avail = min(avail, node.subtree_quota.get(fr, ZERO) + limit)
    return avail


def borrowed(node: QuotaNode, fr: FlavorResource) -> Quantity:
    """Usage beyond the node's own subtree quota (0 for a root: there is nobody to borrow from)."""
    if node.parent is None:
        return ZERO
    return (node.usage.get(fr, ZERO) - node.subtree_quota.get(fr, ZERO)).max0()


def is_borrowing(node: QuotaNode, fr: FlavorResource) -> bool:
    return not borrowed(node, fr).is_zero()


def add_usage(node: QuotaNode, fr: FlavorResource, value: Quantity) -> None:
    """Reserve `value` at `node`; what its private quota cannot hold counts against the parent."""
    spare = local_available(node, fr)
    node.usage[fr] = node.usage.get(fr, ZERO) + value
    if node.parent is not None and spare < value:
        add_usage(node.parent, fr, value - spare)


def remove_usage(node: QuotaNode, fr: FlavorResource, value: Quantity) -> None:
    """Release `value` at `node`, and what of it was held in the parent."""
    stored_in_parent = node.usage.get(fr, ZERO) - local_quota(node, fr)
    node.usage[fr] = node.usage.get(fr, ZERO) - value
    if node.parent is None or not ZERO < stored_in_parent:
        return
    remove_usage(node.parent, fr, min(value, stored_in_parent))


# --- building the tree ---------------------------------------------------------------------


@dataclass
class QuotaTree:
    cluster_queues: dict[str, QuotaNode]
    cohorts: dict[str, QuotaNode]
    # (cohort node, flavor/resource) → its available / potential_available, once read by `figures`
    _memo: dict[tuple[int, int, FlavorResource], Quantity] = field(default_factory=dict, repr=False, compare=False)

    def node(self, cluster_queue: str) -> QuotaNode | None:
        return self.cluster_queues.get(cluster_queue)

    def figures(self, node: QuotaNode, fr: FlavorResource) -> tuple[Quantity, Quantity, Quantity]:
        """`borrowed`, `available` and `potential_available` of a node of this tree, with the cohorts'
        figures worked out once for all their queues. Only for a tree that is not changed afterwards
        (what-if changes go to a `snapshot()`, which starts without them)."""
        return borrowed(node, fr), self.available_of(node, fr), self.potential_of(node, fr)

    def available_of(self, node: QuotaNode, fr: FlavorResource) -> Quantity:  # `available`, memoised above the leaves
        if node.parent is None:
            return node.subtree_quota.get(fr, ZERO) - node.usage.get(fr, ZERO)
        key = (0, id(node.parent), fr)
        parent_available = self._memo.get(key)
        if parent_available is None:
            parent_available = self._memo[key] = self.available_of(node.parent, fr)
        cap = borrow_cap(node, fr)
        return local_available(node, fr) + (parent_available if cap is None else min(parent_available, cap))

    def potential_of(self, node: QuotaNode, fr: FlavorResource) -> Quantity:  # `potential_available`, memoised
        if node.parent is None:
            return node.subtree_quota.get(fr, ZERO)
        key = (1, id(node.parent), fr)
        parent = self._memo.get(key)
        if parent is None:
            parent = self._memo[key] = self.potential_of(node.parent, fr)
        avail = local_quota(node, fr) + parent
        limit = node.limits(fr).borrowing_limit
        if limit is not None:
            avail = min(avail, node.subtree_quota.get(fr, ZERO) + limit)
        return avail

    def snapshot(self) -> QuotaTree:
        """A copy whose usage can be changed (what-if: remove a victim, add a Workload)."""
        mapping: dict[int, QuotaNode] = {}

        def copy(n: QuotaNode) -> QuotaNode:
            hit = mapping.get(id(n))
            if hit is None:
                hit = mapping[id(n)] = QuotaNode(
                    name=n.name, kind=n.kind, quotas=n.quotas, explicit=n.explicit, in_cycle=n.in_cycle,
                    subtree_quota=n.subtree_quota, usage=dict(n.usage),
                )
            return hit

        for n in [*self.cluster_queues.values(), *self.cohorts.values()]:
            c = copy(n)
            c.parent = copy(n.parent) if n.parent is not None else None
            c.children = [copy(x) for x in n.children]
        return QuotaTree(
            cluster_queues={k: mapping[id(v)] for k, v in self.cluster_queues.items()},
            cohorts={k: mapping[id(v)] for k, v in self.cohorts.items()},
        )


def quotas_of(resource_groups: Iterable[ResourceGroup]) -> dict[FlavorResource, Limits]:
    out: dict[FlavorResource, Limits] = {}
    for rg in resource_groups:
        for fl in rg.flavors:
            for r in fl.resources:
                out[(fl.name, r.name)] = Limits(r.nominal_quota, r.borrowing_limit, r.lending_limit)
    return out


@dataclass(frozen=True)
class QueueInput:
    """What the tree reads of one ClusterQueue: its cohort, quotas and reserved usage. Computed once per
    ClusterQueue object (QueuesPart keeps it while the object stands); `key` compares two of them exactly,
    formats included (a quantity's format shows in the figures)."""

    name: str
    cohort: str
    quotas: dict[FlavorResource, Limits]
    usage: dict[FlavorResource, Quantity]

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.cohort,
                tuple((fr, _qkey(lim.nominal), _qkey(lim.borrowing_limit), _qkey(lim.lending_limit))
                      for fr, lim in self.quotas.items()),
                tuple((fr, _qkey(q)) for fr, q in self.usage.items()))


def _qkey(q: Quantity | None) -> tuple[Any, str] | None:
    return None if q is None else (q.value, q.format)


def queue_input(cq: Any, usage: Mapping[FlavorResource, Quantity]) -> QueueInput:
    return QueueInput(cq.name, cq.spec.cohort_name, quotas_of(cq.spec.resource_groups), dict(usage))


def build_tree(cluster_queues: Iterable[Any], cohorts: Iterable[Any],
               usage: Mapping[str, Mapping[FlavorResource, Quantity]]) -> QuotaTree:
    """The tree from ClusterQueue and Cohort models and each ClusterQueue's reserved usage.

    A cohortName or parentName without a Cohort object is an implicit cohort (no quota, a root).
    Cohorts in a parent cycle are marked `in_cycle` (Kueue admits nothing in them) and cut loose."""
    return tree_of([queue_input(cq, usage.get(cq.name, {})) for cq in cluster_queues], cohorts)


def tree_of(queues: Iterable[QueueInput], cohorts: Iterable[Any]) -> QuotaTree:
    """`build_tree` from ClusterQueue inputs already read (see QueueInput)."""
    cohorts = list(cohorts)
    cohort_nodes: dict[str, QuotaNode] = {}
    for co in cohorts:
        cohort_nodes[co.name] = QuotaNode(co.name, "Cohort", quotas_of(co.spec.resource_groups))
    parents = {co.name: co.spec.parent_name for co in cohorts if co.spec.parent_name}

    def cohort(name: str) -> QuotaNode:
        node = cohort_nodes.get(name)
        if node is None:
            node = cohort_nodes[name] = QuotaNode(name, "Cohort", explicit=False)
        return node

    for parent in parents.values():
        cohort(parent)
    for name in list(cohort_nodes):
        seen, cur = [], name
        while cur in parents and cur not in seen:
            seen.append(cur)
            cur = parents[cur]
        if cur in seen:  # the walk came back: every cohort of the loop is in a cycle
            for c in seen[seen.index(cur):]:
                cohort_nodes[c].in_cycle = True
    for child, parent in parents.items():
        if cohort_nodes[child].in_cycle:
            continue
        cohort_nodes[child].parent = cohort_nodes[parent]
        cohort_nodes[parent].children.append(cohort_nodes[child])

    cq_nodes: dict[str, QuotaNode] = {}
    for q in queues:
        node = QuotaNode(q.name, "ClusterQueue", q.quotas)
        node.usage = dict(q.usage)
        if q.cohort:
            parent = cohort(q.cohort)
            node.in_cycle = parent.in_cycle or any(a.in_cycle for a in parent.ancestors())
            node.parent = parent
            parent.children.append(node)
        cq_nodes[q.name] = node

    roots = {id(n.root()): n.root() for n in [*cq_nodes.values(), *cohort_nodes.values()]}
    for root in roots.values():
        _accumulate(root)
    return QuotaTree(cq_nodes, cohort_nodes)


def _accumulate(node: QuotaNode) -> None:
    """Subtree quota and usage, bottom-up (a ClusterQueue's usage is its own)."""
    node.subtree_quota = {fr: lim.nominal for fr, lim in node.quotas.items()}
    if node.is_cluster_queue:
        return
    node.usage = {}
    for child in node.children:
        _accumulate(child)
        for fr, q in child.subtree_quota.items():
            node.subtree_quota[fr] = node.subtree_quota.get(fr, ZERO) + (q - local_quota(child, fr))
        for fr, u in child.usage.items():
            over = (u - local_quota(child, fr)).max0()
            node.usage[fr] = node.usage.get(fr, ZERO) + over


__all__ = [
    "FlavorResource",
    "Limits",
    "QuotaNode",
    "QuotaTree",
    "QueueInput",
    "add_usage",
    "available",
    "borrow_cap",
    "borrowed",
    "build_tree",
    "from_parent",
    "is_borrowing",
    "local_available",
    "local_quota",
    "potential_available",
    "queue_input",
    "remove_usage",
    "tree_of",
]
