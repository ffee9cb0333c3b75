"""How much an admitted object borrows from its cohort tree, and from whom (the quota tree of
engine/quota.py, as the simulated Kueue left it after the admission)."""

from __future__ import annotations

from typing import Any

from taudash.engine.model import ZERO, Quantity
from taudash.sim.controllers.admission import FR, Cluster, usage_of
from taudash.sim.controllers.base import Obj


def borrows_of(cl: Cluster, cq: str | None, mine: list[Obj]) -> list[dict[str, Any]]:
    """Per (flavor, resource) the object uses where its ClusterQueue is now above its own quota: the object's
    part of the amount above it, and the queues (and cohorts with quota of their own) whose unused quota it draws on."""
    if cq is None or cq not in cl.tree.cluster_queues:
        return []
    node = cl.node(cq)
    mine_usage: dict[FR, Any] = {}
    for w in mine:
        for fr, v in usage_of(w).items():
            mine_usage[fr] = mine_usage.get(fr, 0) + v
    out = []
    for fr in sorted(mine_usage):
        quota = node.subtree_quota.get(fr, ZERO)
        used = node.usage.get(fr, ZERO)
        if not quota < used:
            continue
        lenders = []
        for other in _tree_nodes(node.root()):
            if other is node:
                continue
            lim = other.quotas.get(fr)
            if lim is None:
                continue
            own = other.usage.get(fr, ZERO) if other.is_cluster_queue else ZERO
            unused = (lim.nominal - own).max0()
            if lim.lending_limit is not None and lim.lending_limit < unused:
                unused = lim.lending_limit
            if ZERO < unused:
                lenders.append({"kind": other.kind, "name": other.name, "unused": str(unused)})
        # the object's share of the queue's borrowing: what it added above the queue's own quota
        amount = min(used - quota, Quantity(mine_usage[fr]))
        out.append({"flavor": fr[0], "resource": fr[1], "amount": str(amount), "from": lenders})
    return out


def _tree_nodes(root) -> list:
    out, todo = [], [root]
    while todo:
        n = todo.pop()
        out.append(n)
        todo.extend(n.children)
    return sorted(out, key=lambda n: (n.kind, n.name))
