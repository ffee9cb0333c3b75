"""Kueue's visibility API (`visibility.kueue.x-k8s.io`) for the simulated API server.

Real Kueue serves it as an aggregated API (APIService `v1beta2.visibility.kueue.x-k8s.io`, and
v1beta1): `GET .../clusterqueues/{cq}/pendingworkloads` and
`.../namespaces/{ns}/localqueues/{lq}/pendingworkloads` answer a PendingWorkloadsSummary with every
pending Workload of the queue, inadmissible ones included, in the scheduler's order, with 0-based
positions (the LocalQueue answer keeps the ClusterQueue-wide position). `limit` defaults to 1000 and
is clamped to 0…100000; `offset` skips. An unknown queue is a 404.

The order is the simulated scheduler's own (engine/rules/queue_order.py's key plus the scheduler's
same-second tie-break on the source object's age), so the head of the list is what it admits next.
The two subresources are pseudo-resources that the fault hooks can forbid:
`faults.forbid(CLUSTERQUEUE_PENDING)` answers 403 like RBAC without `clusterqueues/pendingworkloads`.
Discovery lists only the `*/pendingworkloads` subresources, so `kubectl get clusterqueues` keeps
resolving to kueue.x-k8s.io.
"""

from __future__ import annotations

import weakref
from typing import Any

from taudash.engine.rules.queue_order import (
    VISIBILITY_GROUP,
    VISIBILITY_VERSIONS,
    is_pending,
    order_key,
    order_workloads,
    pending_workloads_summary,
)
from taudash.sim.controllers.admission import workload_model
from taudash.sim.controllers.base import meta
from taudash.sim.errors import BadRequest, NotFound
from taudash.sim.objects import ObjectDB
from taudash.sim.resources import Resource

GROUP = VISIBILITY_GROUP
VERSIONS = VISIBILITY_VERSIONS  # preferred first
_SOURCES = ("Job", "RayJob", "RayService", "Deployment")

CLUSTERQUEUE_PENDING = Resource(kind="PendingWorkloadsSummary", group=GROUP, versions=VERSIONS,
                                plural="clusterqueues/pendingworkloads", namespaced=False, status=False)
LOCALQUEUE_PENDING = Resource(kind="PendingWorkloadsSummary", group=GROUP, versions=VERSIONS,
                              plural="localqueues/pendingworkloads", namespaced=True, status=False)
_CQ = Resource(kind="ClusterQueue", group=GROUP, versions=VERSIONS, plural="clusterqueues", namespaced=False)
_LQ = Resource(kind="LocalQueue", group=GROUP, versions=VERSIONS, plural="localqueues", namespaced=True)


def api_group() -> dict[str, Any]:
    versions = [{"groupVersion": f"{GROUP}/{v}", "version": v} for v in VERSIONS]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": versions,
            "preferredVersion": versions[0]}


def resource_list(version: str) -> dict[str, Any]:
    resources = [{"name": r.plural, "singularName": "", "namespaced": r.namespaced, "kind": r.kind, "verbs": ["get"]}
                 for r in (CLUSTERQUEUE_PENDING, LOCALQUEUE_PENDING)]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/{version}",
            "resources": resources}


def parse(rest: list[str]) -> tuple[str, Resource | None, str | None, str | None]:
    """Path segments after `/apis/visibility.kueue.x-k8s.io` → (version, resource, namespace, name);
    resource None for the group or version discovery documents. Raises NotFound for other paths."""
    if not rest:
        return "", None, None, None
    version = rest[0]
    if version not in VERSIONS:
        raise NotFound.path()
    tail = rest[1:]
    if not tail:
        return version, None, None, None
    if len(tail) == 3 and tail[0] == "clusterqueues" and tail[2] == "pendingworkloads":
        return version, CLUSTERQUEUE_PENDING, None, tail[1]
    if len(tail) == 5 and tail[0] == "namespaces" and tail[2] == "localqueues" and tail[4] == "pendingworkloads":
        return version, LOCALQUEUE_PENDING, tail[1], tail[3]
    raise NotFound.path()


def _int(value: str | None, what: str, default: int) -> int:
    if value in (None, ""):
        return default
    try:
        return int(value)
    except ValueError:
        raise BadRequest(f"invalid {what}: {value!r}") from None


def _key_for(db: ObjectDB):
    """The simulated scheduler's order: queue_order's key with the source's creation time before the UID."""
    def key(wl) -> tuple:
        refs = wl.metadata.owner_references
        o = next((r for r in refs if r.controller), refs[0] if refs else None)
        born = ""
        if o is not None and o.kind in _SOURCES:
            src = db.peek(o.kind, o.name, wl.namespace)
            if src is not None and meta(src).get("uid") == o.uid:
                born = meta(src).get("creationTimestamp") or ""
        base = order_key(wl)
        return (*base[:2], born, *base[2:])
    return key


# Parsed Workloads per database and ClusterQueue, by (namespace, name), kept while their resourceVersion is
# the same: a refresh of a 10k queue parses only what changed (Kueue answers from its in-memory queues).
_MODELS: weakref.WeakKeyDictionary[ObjectDB, dict[str, dict[tuple[Any, Any], tuple[Any, Any]]]] = \
    weakref.WeakKeyDictionary()


def cluster_queue_order(db: ObjectDB, cq: str):
    """The pending order of ClusterQueue `cq` (queue_order.ClusterQueueOrder), None when it does not exist."""
    cq_obj = db.peek("ClusterQueue", cq)
    if cq_obj is None:
        return None
    lqs = {(meta(q).get("namespace"), meta(q)["name"]): q for q in db._select(db.resource("LocalQueue"), None)}
    feeding = {k for k, q in lqs.items() if ((q.get("spec") or {}).get("clusterQueue")) == cq
               and (((q.get("spec") or {}).get("stopPolicy")) or "None") == "None"}
    models = _MODELS.setdefault(db, {}).get(cq, {})
    seen: dict[tuple[Any, Any], tuple[Any, Any]] = {}
    pending: list[tuple[Any, str]] = []
    for raw in db._select(db.resource("Workload"), None):
        m = meta(raw)
        queue = (raw.get("spec") or {}).get("queueName")
        if (m.get("namespace"), queue) not in feeding:
            continue  # routed elsewhere: not parsed (a fleet has 100k Workloads, this queue a few)
        key = (m.get("namespace"), m.get("name"))
        hit = models.get(key)
        if hit is None or hit[0] != m.get("resourceVersion"):
            hit = (m.get("resourceVersion"), workload_model(raw))
        seen[key] = hit
        model = hit[1]
        if not is_pending(model):
            continue
        pending.append((model, queue or ""))
    _MODELS[db][cq] = seen  # this queue's Workloads now: the ones that left are forgotten
    strategy = (cq_obj.get("spec") or {}).get("queueingStrategy") or "BestEffortFIFO"
    return order_workloads(cq, strategy, pending, key=_key_for(db))


def pending_workloads(db: ObjectDB, resource: Resource, version: str, namespace: str | None, name: str,
                      query: Any) -> dict[str, Any]:
    """The PendingWorkloadsSummary for one ClusterQueue or LocalQueue (NotFound for an unknown queue)."""
    limit = _int(query.get("limit"), "limit", 1000)
    offset = max(0, _int(query.get("offset"), "offset", 0))
    if resource is CLUSTERQUEUE_PENDING:
        order = cluster_queue_order(db, name)
        if order is None:
            raise NotFound.of(_CQ, name)
        return pending_workloads_summary(order, limit=limit, offset=offset, api_version=f"{GROUP}/{version}")
    lq = db.peek("LocalQueue", name, namespace)
    if lq is None:
        raise NotFound.of(_LQ, name)
    cq = ((lq.get("spec") or {}).get("clusterQueue")) or ""
    order = cluster_queue_order(db, cq)
    if order is None:  # a LocalQueue pointing nowhere queues nothing
        return {"apiVersion": f"{GROUP}/{version}", "kind": "PendingWorkloadsSummary", "metadata": {}, "items": []}
    return pending_workloads_summary(order, namespace=namespace, local_queue=name, limit=limit, offset=offset,
                                     api_version=f"{GROUP}/{version}")
