"""Workload identity and researcher access during a drain (DESIGN §5.4.5). Owner: issue 4."""

from __future__ import annotations

from ..model import TauWorkspace
from .base import Finding, RuleContext, ViewModel
from .drain import DrainView


class IdentityView(ViewModel):
    """Expected vs observed identity and researcher access; fields filled by issue 4."""

    service_account: str | None = None
    state: str = "Unknown"


def derive_identity(ctx: RuleContext, ws: TauWorkspace, drain: DrainView) -> tuple[IdentityView, list[Finding]]:
    """TODO(issue 4): implement §5.4.5."""
    return IdentityView(service_account=ws.spec.workload_identity.service_account_name if ws.spec.workload_identity else None), []
