"""Storage readiness per workspace namespace (DESIGN §5.7, seed 001). Owner: issue 4."""

from __future__ import annotations

from ..model import TauWorkspace
from .base import Finding, RuleContext, ViewModel


class StorageView(ViewModel):
    claims: list[dict] = []


def derive_storage(ctx: RuleContext, ws: TauWorkspace) -> tuple[StorageView, list[Finding]]:
    """TODO(issue 4): implement §5.7."""
    return StorageView(), []
