"""GPU health and schedulability of one Node, from its conditions, spec and taints (docs/capacity.md,
"What can start now"; facts: TauGrid's metrics collector publishes GPU health as Node conditions).

Classes, worst first: `unhealthy` (a drain-class condition is True: the node's GPUs leave free capacity),
`unknown` (the required exporter is unavailable, or a health condition's status is Unknown: never healthy,
never free), `degraded` (a taint-class condition is True: counted apart, still placeable), `healthy`.
Schedulability is apart: Ready, not cordoned, not being deleted, and no NoSchedule/NoExecute taint a GPU
workload would not tolerate. Which conditions fall in which class and which taints a GPU workload tolerates
is configuration (`CapacityConfig`, the config file's `capacity:` section); the defaults are below.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..model import Node
from ..model.names import (
    DCGM_EXPORTER_UNAVAILABLE,
    DCGM_HEALTH_PROBLEM,
    GPU_DRAIN_CONDITIONS,
    GPU_TAINT_CONDITIONS,
)

HEALTHY = "healthy"
DEGRADED = "degraded"
UNKNOWN = "unknown"
UNHEALTHY = "unhealthy"
HEALTH_CLASSES = (HEALTHY, DEGRADED, UNKNOWN, UNHEALTHY)

GPU_RESOURCE = "nvidia.com/gpu"
CORDON_TAINT = "node.kubernetes.io/unschedulable"  # the cordon's own taint: reported as Cordoned
NOT_READY_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})  # PreferNoSchedule never keeps a Pod off

# Reasons that are not condition types.
NOT_READY = "NotReady"
CORDONED = "Cordoned"
DELETING = "Deleting"


@dataclass(frozen=True)
class CapacityConfig:
    """What the capacity rules treat as unhealthy, degraded and unknown, and which taints a GPU workload
    tolerates (taint keys; `key=value` to tolerate one value only). NPD's `DcgmHealthProblem` is a failed
    DCGM diagnostic: drain class by default (docs/decisions.md, 114)."""

    drain_conditions: tuple[str, ...] = (*GPU_DRAIN_CONDITIONS, DCGM_HEALTH_PROBLEM)
    taint_conditions: tuple[str, ...] = GPU_TAINT_CONDITIONS
    unknown_conditions: tuple[str, ...] = (DCGM_EXPORTER_UNAVAILABLE,)
    tolerated_taints: tuple[str, ...] = (GPU_RESOURCE, "sku=gpu")
    idle_minutes: int = 30  # an allocated GPU idle this long is waste (utilisation, when read)


@dataclass(frozen=True)
class NodeHealth:
    health: str  # one of HEALTH_CLASSES
    reasons: tuple[str, ...]  # condition types True (or Unknown), then NotReady / Cordoned / Deleting / taints
    ready: bool
    cordoned: bool
    deleting: bool
    blocking_taints: tuple[str, ...]  # "key=value:Effect" a GPU workload would not tolerate

    @property
    def schedulable(self) -> bool:
        return self.ready and not self.cordoned and not self.deleting and not self.blocking_taints

    @property
    def placeable(self) -> bool:
        """Its free GPUs count as free capacity: schedulable and healthy or degraded."""
        return self.schedulable and self.health in (HEALTHY, DEGRADED)


def tolerated(config: CapacityConfig, key: str, value: str, extra: Iterable[tuple[str, str]] = ()) -> bool:
    """Whether a GPU workload tolerates the taint `key=value` (config, or the flavor's own tolerations as
    (key, value) pairs, "" = any value)."""
    for entry in config.tolerated_taints:
        k, sep, v = entry.partition("=")
        if k == key and (not sep or v == value):
            return True
    return any(k == key and (not v or v == value) for k, v in extra)


def node_health(node: Node, config: CapacityConfig, flavor_tolerations: Iterable[tuple[str, str]] = ()) -> NodeHealth:
    drain, taint, unknown = set(config.drain_conditions), set(config.taint_conditions), set(config.unknown_conditions)
    classes: set[str] = set()
    reasons: list[str] = []
    for c in node.status.conditions:
        if c.type in drain or c.type in taint or c.type in unknown:
            if c.status == "True":
                classes.add(UNHEALTHY if c.type in drain else UNKNOWN if c.type in unknown else DEGRADED)
                reasons.append(c.type)
            elif c.status != "False":  # Unknown (or garbage): the collector could not say
                classes.add(UNKNOWN)
                reasons.append(f"{c.type}={c.status or 'empty'}")
    health = next((h for h in (UNHEALTHY, UNKNOWN, DEGRADED) if h in classes), HEALTHY)
    ready_cond = node.condition("Ready")
    ready = ready_cond is not None and ready_cond.is_true
    cordoned = node.spec.unschedulable
    deleting = node.deleting
    blocking = []
    extra = tuple(flavor_tolerations)
    for t in node.spec.taints:
        if t.effect not in BLOCKING_EFFECTS or t.key == CORDON_TAINT or t.key in NOT_READY_TAINTS:
            continue  # the cordon and NotReady taints are reported as such
        if not tolerated(config, t.key, t.value, extra):
            blocking.append(f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}")
    if not ready:
        reasons.append(NOT_READY)
    if cordoned:
        reasons.append(CORDONED)
    if deleting:
        reasons.append(DELETING)
    reasons.extend(f"Taint {b}" for b in blocking)
    return NodeHealth(health=health, reasons=tuple(reasons), ready=ready, cordoned=cordoned, deleting=deleting,
                      blocking_taints=tuple(blocking))


__all__ = ["HEALTH_CLASSES", "CapacityConfig", "NodeHealth", "node_health", "tolerated"]
