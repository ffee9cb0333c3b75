"""Kueue's pending order inside a ClusterQueue, estimated from the objects (Kueue's
pkg/cache/queue/cluster_queue.go: StrictFIFO and BestEffortFIFO).

The visibility API is the authority on positions; when it is absent this is the estimate, and the
simulator's visibility endpoint shares it. Order: higher effective priority first (spec.priority plus
the `kueue.x-k8s.io/priority-boost` annotation), then the older queue-order timestamp (creation, or
the Evicted condition's time after a PodsReadyTimeout or AdmissionCheck eviction), then UID.
Positions are 0-based and count inadmissible Workloads too, like the visibility API's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..model import ClusterQueue, LocalQueue, Workload
from ..model.names import ADMISSION_GATED_BY_ANNOTATION as ADMISSION_GATED_BY
from ..model.names import PRIORITY_BOOST_ANNOTATION as PRIORITY_BOOST
from .base import RuleContext

# Evictions after which Kueue queues a Workload by the eviction time, not its creation
# (PodsReadyTimeout: with requeuingTimestamp Eviction, the default since 0.19).
REQUEUE_AT_EVICTION = frozenset({"PodsReadyTimeout", "AdmissionCheck"})
_EPOCH = datetime.min.replace(tzinfo=UTC)
DEFAULT_LIMIT = 1000  # Kueue's visibility API: default and maximum of the `limit` query parameter
MAX_LIMIT = 100_000


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def effective_priority(wl: Workload) -> int:
    base = wl.spec.priority or 0
    boost = wl.metadata.annotations.get(PRIORITY_BOOST, "")
    try:
        return base + int(boost) if boost else base
    except ValueError:
        return base  # Kueue ignores an unparsable boost as well


def queue_order_time(wl: Workload) -> datetime:
    evicted = wl.condition("Evicted")
    if evicted is not None and evicted.status == "True" and evicted.reason in REQUEUE_AT_EVICTION:
        t = parse_time(evicted.last_transition_time)
        if t is not None:
            return t
    return parse_time(wl.metadata.creation_timestamp) or _EPOCH


def order_key(wl: Workload) -> tuple[Any, ...]:
    return (-effective_priority(wl), queue_order_time(wl), wl.uid or "", wl.namespace or "", wl.name)


def is_pending(wl: Workload) -> bool:
    """In Kueue's queues: not finished, holding no quota reservation, active, not admission-gated,
    not being deleted."""
    return (wl.spec.active and not wl.finished and not wl.quota_reserved and not wl.deleting
            and not wl.metadata.annotations.get(ADMISSION_GATED_BY))


def in_backoff(wl: Workload, now: datetime) -> bool:
    """Requeued with a backoff that has not expired: Kueue keeps it out of the heads until requeueAt."""
    rs = wl.status.requeue_state
    at = parse_time(rs.requeue_at) if rs is not None else None
    return at is not None and at > now


@dataclass(frozen=True)
class QueueEntry:
    workload: Workload
    local_queue: str
    position_in_cluster_queue: int
    position_in_local_queue: int


@dataclass
class ClusterQueueOrder:
    cluster_queue: str
    strategy: str  # StrictFIFO | BestEffortFIFO
    entries: list[QueueEntry] = field(default_factory=list)

    def entry(self, namespace: str, name: str) -> QueueEntry | None:
        for e in self.entries:
            if e.workload.name == name and e.workload.namespace == namespace:
                return e
        return None

    def ahead_of(self, namespace: str, name: str) -> list[QueueEntry]:
        e = self.entry(namespace, name)
        if e is None:
            return []
        # By position, not by index: an order read from the visibility API may miss Workloads the
        # store does not hold yet.
        return [x for x in self.entries if x.position_in_cluster_queue < e.position_in_cluster_queue]


def order_workloads(cluster_queue: str, strategy: str, pending: list[tuple[Workload, str]],
                    key: Callable[[Workload], Any] | None = None) -> ClusterQueueOrder:
    """Positions of (Workload, LocalQueue name) pairs already known to be pending in `cluster_queue`.
    `key` replaces order_key (the simulator adds its same-second tie-break)."""
    sort_key = key or order_key
    ordered = sorted(pending, key=lambda p: sort_key(p[0]))
    per_lq: dict[tuple[str, str], int] = {}
    entries = []
    for i, (wl, lq) in enumerate(ordered):
        k = (wl.namespace or "", lq)
        entries.append(QueueEntry(wl, lq, i, per_lq.get(k, 0)))
        per_lq[k] = per_lq.get(k, 0) + 1
    return ClusterQueueOrder(cluster_queue, strategy or "BestEffortFIFO", entries)


def pending_workloads_summary(order: ClusterQueueOrder, *, namespace: str | None = None,
                              local_queue: str | None = None, limit: int = DEFAULT_LIMIT, offset: int = 0,
                              api_version: str = "visibility.kueue.x-k8s.io/v1beta2") -> dict[str, Any]:
    """The visibility API's PendingWorkloadsSummary (visibility.kueue.x-k8s.io/v1beta2) for a ClusterQueue,
    or for one LocalQueue when namespace and local_queue are given: what the simulator serves and
    what the estimated order shows when the real API is absent. `limit` is clamped to 0…MAX_LIMIT
    like Kueue's; the LocalQueue view keeps the ClusterQueue-wide positionInClusterQueue."""
    limit, offset = clamp_limit(limit), max(0, offset)
    entries = [e for e in order.entries
               if local_queue is None or (e.local_queue == local_queue and e.workload.namespace == namespace)]
    items = []
    for e in entries[offset: offset + limit]:
        wl = e.workload
        items.append({
            "metadata": {"name": wl.name, "namespace": wl.namespace, "uid": wl.uid,
                         "creationTimestamp": wl.metadata.creation_timestamp,
                         "ownerReferences": [_owner_ref(r) for r in wl.metadata.owner_references]},
            "priority": effective_priority(wl),
            "localQueueName": e.local_queue,
            "positionInClusterQueue": e.position_in_cluster_queue,
            "positionInLocalQueue": e.position_in_local_queue,
        })
    return {"apiVersion": api_version, "kind": "PendingWorkloadsSummary", "metadata": {}, "items": items}


def clamp_limit(limit: int | None) -> int:
    return DEFAULT_LIMIT if limit is None else max(0, min(int(limit), MAX_LIMIT))


def _owner_ref(r: Any) -> dict[str, Any]:
    out = {"apiVersion": r.api_version, "kind": r.kind, "name": r.name, "uid": r.uid}
    if r.controller is not None:
        out["controller"] = r.controller
    return out


def cluster_queue_orders(ctx: RuleContext, only: str | None = None) -> dict[str, ClusterQueueOrder] | None:
    """Every ClusterQueue's pending order (only ClusterQueue `only` when given: one queue on screen need not
    sort the fleet's); None when Workloads, LocalQueues or ClusterQueues are unreadable (an order from
    part of the queue would be a wrong order)."""
    if ctx.unreadable("Workload", "LocalQueue", "ClusterQueue"):
        return None
    strategies = {cq.name: cq.spec.queueing_strategy for cq in ctx.store.list(ClusterQueue)
                  if only is None or cq.name == only}
    pending: dict[str, list[tuple[Workload, str]]] = {}
    routes: dict[tuple[str | None, str], Any] = {}
    if only is None:
        workloads = ctx.store.list(Workload)
    else:  # only the namespaces whose LocalQueues feed `only` (the namespace index: a fleet has 100k Workloads)
        feeding = sorted({lq.namespace or "" for lq in ctx.store.list(LocalQueue) if lq.spec.cluster_queue == only})
        workloads = [wl for ns in feeding for wl in ctx.store.list(Workload, ns)]
    for wl in workloads:
        if not wl.spec.queue_name or not is_pending(wl):
            continue
        at = (wl.namespace, wl.spec.queue_name)
        lq = routes[at] if at in routes else routes.setdefault(at, ctx.store.get(LocalQueue, wl.spec.queue_name,
                                                                                 wl.namespace))
        # No LocalQueue, or a stopped one: Kueue does not queue the Workload anywhere.
        if lq is None or not lq.spec.cluster_queue or (lq.spec.stop_policy or "None") != "None":
            continue
        if only is not None and lq.spec.cluster_queue != only:
            continue
        pending.setdefault(lq.spec.cluster_queue, []).append((wl, lq.name))
    return {
        name: order_workloads(name, strategies.get(name, "BestEffortFIFO"), pending.get(name, []))
        for name in sorted(set(strategies) | set(pending))
    }


def order_from_items(cluster_queue: str, strategy: str, items: tuple[dict[str, Any], ...] | list[dict[str, Any]],
                     get_workload: Callable[[str, str], Workload | None]) -> ClusterQueueOrder:
    """A ClusterQueue's order as the visibility API gave it (its positions kept); items whose Workload
    the store does not hold (yet) are left out, the positions of the others stay Kueue's."""
    entries = []
    for item in items:
        m = item.get("metadata") or {}
        wl = get_workload(m.get("namespace") or "", m.get("name") or "")
        pcq, plq = item.get("positionInClusterQueue"), item.get("positionInLocalQueue")
        if wl is None or not isinstance(pcq, int) or not isinstance(plq, int):
            continue
        entries.append(QueueEntry(wl, item.get("localQueueName") or wl.spec.queue_name or "", pcq, plq))
    entries.sort(key=lambda e: e.position_in_cluster_queue)
    return ClusterQueueOrder(cluster_queue, strategy or "BestEffortFIFO", entries)


# --- positions for one queue: from Kueue's visibility API, else estimated, else unknown ---------------------

VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_VERSIONS = ("v1beta2", "v1beta1")  # preferred first
FROM_API, ESTIMATED, UNKNOWN = "visibility", "estimated", "unknown"


@dataclass(frozen=True)
class QueuePositions:
    """The pending list of one ClusterQueue or LocalQueue, with where it came from.

    source: `visibility` (Kueue's answer), `estimated` (queue_order over the objects: the API is not
    served or failed) or `unknown` (forbidden, or the objects are unreadable): then `items` is None,
    never an empty list. access: the visibility API's state (Synced, Absent, Forbidden, Error, NotFound)."""

    cluster_queue: str | None
    local_queue: tuple[str, str] | None
    source: str
    access: str
    items: tuple[dict[str, Any], ...] | None
    message: str = ""

    @property
    def label(self) -> str:
        if self.source == FROM_API:
            return "positions from Kueue's visibility API"
        why = f" ({self.message})" if self.message else ""
        return f"estimated order{why}" if self.source == ESTIMATED else f"positions unknown{why}"

    def position_of(self, namespace: str, name: str) -> dict[str, Any] | None:
        for item in self.items or ():
            m = item.get("metadata") or {}
            if m.get("name") == name and m.get("namespace") == namespace:
                return item
        return None


def estimated_positions(ctx: RuleContext, *, cq: str | None = None, lq: tuple[str, str] | None = None,
                        limit: int = DEFAULT_LIMIT, offset: int = 0, access: str = "Absent",
                        why: str = "") -> QueuePositions:
    """queue_order's estimate for one queue in the visibility API's item shape, labelled `estimated`;
    `unknown` (items None) when the objects it needs are unreadable or the queue is not in the store."""
    if ctx.unreadable("Workload", "LocalQueue", "ClusterQueue"):
        bad = ", ".join(f"{r} {reason}" for r, reason in ctx.unreadable("Workload", "LocalQueue", "ClusterQueue"))
        return QueuePositions(cq, lq, UNKNOWN, access, None, f"{why}; cannot estimate: {bad}" if why else bad)
    namespace = local = None
    if lq is not None:
        namespace, local = lq
        obj = ctx.store.get(LocalQueue, local, namespace)
        if obj is None:
            return QueuePositions(cq, lq, UNKNOWN, access, None, f"LocalQueue {namespace}/{local} not found")
        cq = obj.spec.cluster_queue
    order = (cluster_queue_orders(ctx, only=cq or "") or {}).get(cq or "")
    if order is None:
        return QueuePositions(cq, lq, UNKNOWN, access, None, f"ClusterQueue {cq} not found")
    summary = pending_workloads_summary(order, namespace=namespace, local_queue=local, limit=limit, offset=offset)
    return QueuePositions(cq, lq, ESTIMATED, access, tuple(summary["items"]), why)


__all__ = [
    "ESTIMATED",
    "FROM_API",
    "UNKNOWN",
    "VISIBILITY_GROUP",
    "VISIBILITY_VERSIONS",
    "QueuePositions",
    "estimated_positions",
    "ADMISSION_GATED_BY",
    "ClusterQueueOrder",
    "QueueEntry",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "clamp_limit",
    "cluster_queue_orders",
    "effective_priority",
    "in_backoff",
    "is_pending",
    "order_key",
    "order_workloads",
    "order_from_items",
    "parse_time",
    "pending_workloads_summary",
    "queue_order_time",
]
