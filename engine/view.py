"""ClusterView: the immutable derived state every consumer renders, and `derive()` that builds it."""

from __future__ import annotations

from datetime import datetime

from .model import BY_KIND
from .rules.base import Finding, RuleConfig, RuleContext, ViewModel
from .rules.cluster import ClusterSummary, TeamSummary, access_findings, derive_cluster, derive_teams
from .rules.multikueue import MultiKueueView, derive_multikueue
from .rules.pool import PoolView, derive_pool
from .rules.profiles import ProfilesView, derive_profiles
from .rules.queues import (
    ClusterQueueView,
    CohortView,
    WaitingWorkload,
    all_workload_facts,
    derive_cluster_queues,
    derive_cohorts,
    derive_waiting,
)
from .rules.workspaces import WorkspaceView, derive_workspaces
from .store import Store


class SourceInfo(ViewModel):
    type: str = "snapshot"  # snapshot | kube | sim
    context: str | None = None
    path: str | None = None
    observed_at: str | None = None


class AccessEntry(ViewModel):
    resource: str
    state: str
    since: str | None = None
    message: str = ""


class ClusterView(ViewModel):
    api_version: str = "taudash/v1"
    kind: str = "ClusterStatus"
    source: SourceInfo = SourceInfo()
    access: list[AccessEntry] = []
    cluster: ClusterSummary | None = None
    teams: list[TeamSummary] = []
    pool: PoolView = PoolView()
    cohorts: list[CohortView] = []
    cluster_queues: list[ClusterQueueView] = []
    workspaces: list[WorkspaceView] = []
    profiles: ProfilesView = ProfilesView()
    multikueue: MultiKueueView = MultiKueueView()
    waiting: list[WaitingWorkload] = []
    findings: list[Finding] = []

    def counts(self) -> dict[str, int]:
        out = {"critical": 0, "warning": 0, "info": 0}
        for f in self.findings:
            out[f.severity.value] += 1
        return out

    def has_critical(self) -> bool:
        return any(f.severity.value == "critical" for f in self.findings)


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def derive(store: Store, now: datetime, config: RuleConfig | None = None, source: SourceInfo | None = None) -> ClusterView:
    """Run every rule over the store at time `now` (rules never read a clock)."""
    ctx = RuleContext(store=store, now=now, config=config or RuleConfig())
    findings: list[Finding] = []

    cluster, f = derive_cluster(ctx)
    findings += f
    pool, f = derive_pool(ctx)
    findings += f
    facts = all_workload_facts(ctx)  # one pass over the Workloads for counts and waiting rows
    queues, f = derive_cluster_queues(ctx, facts)
    findings += f
    cohorts = derive_cohorts(ctx, queues)
    workspaces, f = derive_workspaces(ctx)
    findings += f
    profiles, f = derive_profiles(ctx)
    findings += f
    mk, f = derive_multikueue(ctx, profiles)
    findings += f
    findings += access_findings(ctx)

    access = [
        AccessEntry(resource=BY_KIND[k].resource, state=a.state.value, since=_iso(a.since), message=a.message)
        for k, a in store.access_states().items()
    ]
    return ClusterView(
        source=source or SourceInfo(),
        access=sorted(access, key=lambda a: a.resource),
        cluster=cluster,
        teams=derive_teams(ctx),
        pool=pool,
        cohorts=cohorts,
        cluster_queues=queues,
        workspaces=sorted(workspaces, key=lambda w: w.name),
        profiles=profiles,
        multikueue=mk,
        waiting=derive_waiting(ctx, facts),
        findings=sorted(findings, key=Finding.sort_key),
    )
