"""Automatic shared team capacity (DESIGN §5.2, seed 001). Owner: capacity work (issue 3)."""

from __future__ import annotations

from .base import Finding, QtyMap, RuleContext, ViewModel


class PoolConflict(ViewModel):
    code: str
    kind: str
    name: str
    message: str


class ExcludedNode(ViewModel):
    node: str
    reason: str


class PoolFlavor(ViewModel):
    name: str
    gpu_class: str
    nodes: int
    excluded: list[ExcludedNode] = []
    inventory: QtyMap = {}
    budget: QtyMap = {}
    observed_budget: QtyMap = {}
    reserved: QtyMap = {}
    used: QtyMap = {}
    headroom: QtyMap = {}
    disappeared: bool = False


class PoolQueue(ViewModel):
    cluster_queue: str
    workspace: str | None = None
    reserved: dict[str, QtyMap] = {}
    used: dict[str, QtyMap] = {}


class PoolView(ViewModel):
    mode: str = "None"  # Automatic | Explicit | None
    team: str | None = None
    cohort: str | None = None
    valid: bool | None = None
    established: bool = False
    zeroed: bool = False
    conflicts: list[PoolConflict] = []
    flavors: list[PoolFlavor] = []
    queues: list[PoolQueue] = []


def derive_pool(ctx: RuleContext) -> tuple[PoolView, list[Finding]]:
    """TODO(issue 3): implement §5.2. Until then the section is present and empty."""
    return PoolView(), []
