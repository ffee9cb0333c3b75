"""ClusterView: the immutable derived state every consumer renders (`engine.incremental.derive()` builds it).

Its fields come from the rule registry (engine/registry.py), in the registry's order, between the
header (apiVersion, kind, source) and the sorted findings: the `status -o json` contract.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import create_model

from .registry import RULES
from .rules.base import Finding, Rule, ViewModel
from .rules.cluster import AccessEntry, _iso


class SourceInfo(ViewModel):
    type: str = "snapshot"  # snapshot | kube | sim | agents (a fleet from agents: nothing read here)
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


# The ClusterStatus fields a fleet's row reads (the agent's `?view=summary`, the programs' agents module): the
# same document with only these top-level fields, so a fleet of large clusters polls summaries, not reports.
SUMMARY_FIELDS = ("apiVersion", "kind", "source", "access", "pool", "clusterQueues", "multikueue", "findings")


def cluster_view_of(rules: Sequence[Rule]) -> type[ClusterViewBase]:
    """A ClusterView class whose fields are the outputs of `rules`, in their order, then the findings.
    Built from the registry it is ClusterView; a deriver given other rules (a test's) builds its own."""
    fields: dict[str, Any] = {f.name: (f.type, f.default) for r in rules for f in r.fields}
    return create_model("ClusterView", __base__=ClusterViewBase, __module__=__name__, **fields,
                        findings=(list[Finding], []))


if TYPE_CHECKING:
    # What a type checker reads: the same class, generated from the registry into cluster_view.pyi
    # (`python tests/unit/test_static_types.py --regen`; that test fails while the two differ).
    from .cluster_view import ClusterView
else:
    ClusterView = cluster_view_of(RULES)
    ClusterView.__doc__ = "The derived cluster state: one field per registered rule output (engine/registry.py)."


__all__ = ["SUMMARY_FIELDS", "AccessEntry", "ClusterView", "ClusterViewBase", "SourceInfo", "_iso", "cluster_view_of"]
