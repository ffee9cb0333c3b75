"""Workspace deletion and retarget drain (DESIGN §5.4.1-4, seeds 001 and 002). Owner: issue 4."""

from __future__ import annotations

from ..model import TauWorkspace
from .base import Finding, RuleContext, ViewModel


class DrainRoute(ViewModel):
    local_queue: str | None = None
    cluster_queue: str
    state: str  # Required | SelectorIndependent | NotRouted | Missing | Unknown
    uid_continuity: str | None = None  # Unchanged | Changed | None (not recorded)


class DrainBlocker(ViewModel):
    kind: str
    namespace: str
    name: str
    reason: str
    route: str | None = None


class UnknownInput(ViewModel):
    resource: str
    reason: str


class DrainView(ViewModel):
    state: str = "NotDraining"  # NotDraining | Clear | Blocked | Unknown
    mode: str | None = None  # Deletion | Retarget
    old_namespace: str | None = None
    new_namespace: str | None = None
    routes: list[DrainRoute] = []
    blockers: list[DrainBlocker] = []
    unknown: list[UnknownInput] = []


def derive_drain(ctx: RuleContext, ws: TauWorkspace) -> tuple[DrainView, list[Finding]]:
    """TODO(issue 4): implement §5.4.1-4."""
    return DrainView(), []
