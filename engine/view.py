"""ClusterView: the immutable derived state every consumer renders (`engine.incremental.derive()` builds it).

Its fields come from the rule registry (engine/registry.py), in the registry's order, between the
header (apiVersion, kind, source) and the sorted findings: the `status -o json` contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import create_model

from .registry import RULES
from .rules.base import Finding, ViewModel
from .rules.cluster import AccessEntry, _iso


class SourceInfo(ViewModel):
    type: str = "snapshot"  # snapshot | kube | sim
    context: str | None = None
    path: str | None = None
    observed_at: str | None = None


class ClusterViewBase(ViewModel):
    api_version: str = "taudash/v1"
    kind: str = "ClusterStatus"
    source: SourceInfo = SourceInfo()

    def counts(self) -> dict[str, int]:
        out = {"critical": 0, "warning": 0, "info": 0}
        for f in self.findings:  # type: ignore[attr-defined]
            out[f.severity.value] += 1
        return out

    def has_critical(self) -> bool:
        return any(f.severity.value == "critical" for f in self.findings)  # type: ignore[attr-defined]


if TYPE_CHECKING:
    from .rules.claims import ClaimView
    from .rules.cluster import ClusterSummary, TeamSummary
    from .rules.multikueue import MultiKueueView
    from .rules.pool import PoolView
    from .rules.profiles import ProfilesView
    from .rules.queues import ClusterQueueView, CohortView, WaitingWorkload
    from .rules.workspaces import WorkspaceView

    class ClusterView(ClusterViewBase):
        """The class built below from the registry, as a type checker reads it: the same fields, in
        the registry's order (tests/unit/test_static_types.py keeps the two in step)."""

        access: list[AccessEntry]
        cluster: ClusterSummary | None
        teams: list[TeamSummary]
        pool: PoolView
        cohorts: list[CohortView]
        cluster_queues: list[ClusterQueueView]
        workspaces: list[WorkspaceView]
        profiles: ProfilesView
        multikueue: MultiKueueView
        waiting: list[WaitingWorkload]
        claims: list[ClaimView]
        findings: list[Finding]
else:
    _FIELDS: dict[str, Any] = {f.name: (f.type, f.default) for r in RULES for f in r.fields}
    ClusterView = create_model(
        "ClusterView", __base__=ClusterViewBase, __module__=__name__, **_FIELDS, findings=(list[Finding], []))
    ClusterView.__doc__ = "The derived cluster state: one field per registered rule output (engine/registry.py)."


__all__ = ["AccessEntry", "ClusterView", "ClusterViewBase", "SourceInfo", "_iso"]
