"""MultiKueue readiness M1-M5 (DESIGN §5.6, seed 000). Owner: issue 5."""

from __future__ import annotations

from .base import Finding, RuleContext, ViewModel
from .profiles import Check, ProfilesView


class Worker(ViewModel):
    name: str
    active: bool | None = None
    reason: str = ""
    message: str = ""


class MultiKueueView(ViewModel):
    state: str = "NotConfigured"  # NotConfigured | Ready | NotReady
    checks: list[Check] = []
    workers: list[Worker] = []


def derive_multikueue(ctx: RuleContext, profiles: ProfilesView) -> tuple[MultiKueueView, list[Finding]]:
    """TODO(issue 5): implement §5.6."""
    return MultiKueueView(), []
