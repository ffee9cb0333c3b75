"""What taudash reads from a cluster, in RBAC's words: the one list a least-privilege role is built from
(taudash/deploy/manifests.py) and checked against (tests/unit/test_deploy_manifests.py).

Every kind of the registry (engine/model/kinds.py: listed and watched by the informers, fetched whole
by the object view) plus the reads made on demand: core/v1 Events (ondemand.py) and Kueue's pending
workloads (visibility.py, a GET of a queue's `pendingworkloads` subresource). Only get, list and
watch: taudash's own writes go through engine/actions.py with the operator's credentials, never a
deployed ServiceAccount's. Secrets are never read (kinds.NEVER_READ).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import kinds
from ..model.kinds import NEVER_READ
from ..rules.queue_order import VISIBILITY_GROUP

READ_VERBS: tuple[str, ...] = ("get", "list", "watch")


@dataclass(frozen=True)
class ApiRead:
    group: str  # "" for the core group
    resource: str  # the plural, or `plural/subresource`
    verbs: tuple[str, ...] = READ_VERBS
    why: str = ""  # who reads it (the role's comment and docs/deploy.md)


ON_DEMAND: tuple[ApiRead, ...] = (
    ApiRead("", "events", why="an object's Events in its detail view (ondemand.py)"),
    ApiRead(VISIBILITY_GROUP, "clusterqueues/pendingworkloads", ("get",),
            why="Kueue's pending positions of a ClusterQueue (visibility.py)"),
    ApiRead(VISIBILITY_GROUP, "localqueues/pendingworkloads", ("get",),
            why="Kueue's pending positions of a LocalQueue (visibility.py)"),
)


def kind_reads() -> tuple[ApiRead, ...]:
    """One read per registered kind: listed and watched by the informers, fetched by the object view."""
    return tuple(ApiRead(k.group, k.plural, why=f"{k.kind} (kinds.py)") for k in kinds.KINDS)


def all_reads() -> tuple[ApiRead, ...]:
    """Everything a least-privilege role grants (read when asked: the registry as it is now)."""
    reads = (*kind_reads(), *ON_DEMAND)
    if any(r.resource.split("/")[0] == "secrets" or r.resource in NEVER_READ for r in reads):
        raise AssertionError("taudash never reads Secrets")
    return reads
