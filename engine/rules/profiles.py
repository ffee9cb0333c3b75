"""Workload profile readiness and selection (DESIGN §5.5, seed 000). Owner: issue 5."""

from __future__ import annotations

from .base import Finding, RuleContext, ViewModel


class Check(ViewModel):
    id: str
    ok: bool
    message: str


class ProfileRow(ViewModel):
    name: str
    ready: bool
    reason: str = ""
    execution_target: str = ""
    placement: str = ""
    default_local_queue: str = ""


class Selection(ViewModel):
    namespace: str
    team: str
    lane: str
    profile: str | None = None
    error: str | None = None


class ProfilesView(ViewModel):
    usable: bool = False
    generation: int | None = None
    profile_set_hash: str | None = None
    computed_hash: str | None = None
    checks: list[Check] = []
    profiles: list[ProfileRow] = []
    selections: list[Selection] = []


def derive_profiles(ctx: RuleContext) -> tuple[ProfilesView, list[Finding]]:
    """TODO(issue 5): implement §5.5."""
    return ProfilesView(), []
