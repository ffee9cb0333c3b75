"""THE rule registry: every part of the ClusterView, what it reads, what it needs, which fields it fills.

This list is the only place a rule is wired in. `engine.view.ClusterView` gets its fields from it (in
this order: the order of the `status -o json` contract), and `engine.incremental.IncrementalDeriver`
runs it — both for the full derivation (`engine.incremental.derive`: a deriver started from an empty view)
and for the dashboard's updates, recomputing a rule only when a kind it `reads` or a rule it
`needs` changed. A rule reading a kind it does not declare fails (incremental.UndeclaredRead).

Adding a rule: write engine/rules/<area>.py (a view model and `derive_<area>(ctx) -> (view, findings)`)
and add one `Rule(...)` line below. See ARCHITECTURE.md, "Recipes".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .model import ClusterQueue, Workload
from .model.kinds import DRAIN_KINDS
from .model.names import DEACTIVATED_BY_ANNOTATION, JOB_UID_LABEL
from .parts import QueuesPart, WorkloadsPart, WorkspacesPart
from .rules.base import Finding, Rule, RuleContext, ViewField
from .rules.capacity import READS as CAPACITY_READS
from .rules.capacity import CapacityView
from .rules.capacity_part import CapacityPart
from .rules.claims import ClaimsPart, ClaimView, local_queue_print, workload_print
from .rules.cluster import (
    AccessEntry,
    ClusterSummary,
    TeamSummary,
    access_entries,
    access_findings,
    derive_cluster,
    derive_teams,
)
from .rules.multikueue import MultiKueueView, derive_multikueue
from .rules.pool import PoolPart, PoolView
from .rules.profiles import ProfilesView, derive_profiles
from .rules.queues import ClusterQueueView, CohortView, WaitingWorkload
from .rules.utilisation import READS as UTILISATION_READS
from .rules.utilisation import UtilisationPart, UtilisationView
from .rules.utilisation import pod_print as utilisation_pod_print
from .rules.utilisation import workload_print as utilisation_workload_print
from .rules.workspaces import WorkspaceView

_WORKSPACE_READS = frozenset({
    "TauWorkspace", "TauCluster", "Namespace", "ServiceAccount", "RoleBinding", "PersistentVolumeClaim",
    "StorageClass", "CSINode", "Node", "ClusterQueue",
}) | DRAIN_KINDS  # read in a draining workspace's old namespace


def pool_print(cq: ClusterQueue) -> tuple[Any, ...]:
    """What the pool rules read of a ClusterQueue (not its counts, which Kueue rewrites constantly).
    Plain tuples, strings and numbers: compared in C, where the models' own == walks them in Python
    (and ignores a quantity's format, which the view shows)."""
    spec, st = cq.spec, cq.status
    return (cq.labels, spec.cohort_name, _groups(spec.resource_groups), _usages(st.flavors_reservation),
            _usages(st.flavors_usage), cq.metadata.deletion_timestamp)


def drain_print(cq: ClusterQueue) -> tuple[Any, ...]:
    """What a workspace drain reads of a ClusterQueue."""
    sel = cq.spec.namespace_selector
    return (cq.uid, None if sel is None else (
        sel.match_labels, tuple((e.key, e.operator, tuple(e.values)) for e in sel.match_expressions)))


def drain_workload_print(wl: Workload) -> tuple[Any, ...]:
    """What a workspace drain reads of a Workload (rules/drain.py): whether and how it runs, its routes, its
    owners and job uid; not a pending Workload's message, which Kueue rewrites constantly."""
    adm = wl.status.admission
    return (wl.spec.active, wl.derived_status, wl.spec.queue_name, adm.cluster_queue if adm else None,
            wl.metadata.annotations.get(DEACTIVATED_BY_ANNOTATION), wl.labels.get(JOB_UID_LABEL),
            tuple((r.kind, r.uid, r.name, r.controller) for r in wl.metadata.owner_references))


def _q(q: Any) -> Any:
    return None if q is None else (q.value, q.format)


def _groups(groups: Any) -> tuple[Any, ...]:
    return tuple((tuple(rg.covered_resources), tuple(
        (fl.name,
         tuple((r.name, _q(r.nominal_quota), _q(r.borrowing_limit), _q(r.lending_limit)) for r in fl.resources))
        for fl in rg.flavors)) for rg in groups)


def _usages(usages: Any) -> tuple[Any, ...]:
    return tuple((fl.name, tuple((r.name, _q(r.total), _q(r.borrowed)) for r in fl.resources)) for fl in usages)


def capacity_workload_print(wl: Workload) -> tuple[Any, ...]:
    """What capacity reads of a Workload: which job it runs, whether it is admitted, reserved and running, and
    its pod sets' topology requests (a waiting gang is listed)."""
    owner = wl.owner
    gang = any(ps.topology_request for ps in wl.spec.pod_sets)
    qr = wl.condition("QuotaReserved") if gang else None
    return (wl.namespace, wl.name, owner.uid if owner is not None else "", wl.admitted, wl.quota_reserved,
            wl.finished, repr(wl.spec.pod_sets) if gang else None, qr.reason if qr is not None else None)


def _no_findings(fn: Callable[..., Any]) -> Callable[..., tuple[Any, list[Finding]]]:
    def derive(ctx: RuleContext, *needed: Any) -> tuple[Any, list[Finding]]:
        return fn(ctx, *needed), []
    derive.__name__ = fn.__name__
    return derive


def _access(ctx: RuleContext) -> tuple[list[AccessEntry], list[Finding]]:
    return access_entries(ctx), access_findings(ctx)


RULES: tuple[Rule, ...] = (
    # Access states are every rule's input (a change of one rebuilds the whole view): reads no objects,
    # but says for how long data has been stale (the clock).
    Rule("access", frozenset(), (ViewField("access", list[AccessEntry], []),), derive=_access, every_view=True),
    Rule("cluster", frozenset({"TauCluster"}), (ViewField("cluster", ClusterSummary | None, None),),
         derive=derive_cluster),
    Rule("teams", frozenset({"TauTeam"}), (ViewField("teams", list[TeamSummary], []),),
         derive=_no_findings(derive_teams)),
    Rule("pool", frozenset({"TauCluster", "Node", "ClusterQueue", "Cohort", "ResourceFlavor", "TauTeam",
                            "TauWorkspace"}),
         (ViewField("pool", PoolView, PoolView()),), part=PoolPart, fingerprints={"ClusterQueue": pool_print}),
    Rule("queues", frozenset({"ClusterQueue", "Cohort"}),
         (ViewField("cohorts", list[CohortView], []), ViewField("cluster_queues", list[ClusterQueueView], [])),
         part=QueuesPart, needs=("workloads",)),
    Rule("workspaces", _WORKSPACE_READS, (ViewField("workspaces", list[WorkspaceView], []),),
         part=WorkspacesPart, fingerprints={"ClusterQueue": drain_print, "Workload": drain_workload_print}),
    # TauTeam: profiles and MultiKueue say "not applicable" when TauGrid is not installed at all.
    Rule("profiles", frozenset({"TauCluster", "TauTeam", "TauWorkspace"}),
         (ViewField("profiles", ProfilesView, ProfilesView()),),
         derive=derive_profiles),
    Rule("multikueue", frozenset({"TauCluster", "TauTeam", "TauWorkspace", "AdmissionCheck", "MultiKueueConfig",
                                  "MultiKueueCluster"}),
         (ViewField("multikueue", MultiKueueView, MultiKueueView()),), derive=derive_multikueue, needs=("profiles",)),
    Rule("workloads", frozenset({"Workload", "LocalQueue"}), (ViewField("waiting", list[WaitingWorkload], []),),
         part=WorkloadsPart),
    # Claims go stale with the clock alone: every view; the Workload scan only when what it reads moved.
    Rule("claims", frozenset({"Lease", "Workload", "LocalQueue"}), (ViewField("claims", list[ClaimView], []),),
         part=ClaimsPart, every_view=True, fingerprints={"Workload": workload_print, "LocalQueue": local_queue_print}),
    Rule("capacity", CAPACITY_READS, (ViewField("capacity", CapacityView, CapacityView()),), part=CapacityPart,
         fingerprints={"Workload": capacity_workload_print}),
    # Readings from Prometheus arrive on their own cadence: every view asks the feed (an unchanged one costs nothing).
    Rule("utilisation", UTILISATION_READS, (ViewField("utilisation", UtilisationView, UtilisationView()),),
         part=UtilisationPart, every_view=True,
         fingerprints={"Pod": utilisation_pod_print, "Workload": utilisation_workload_print}),
)

__all__ = ["RULES", "capacity_workload_print", "drain_print", "drain_workload_print", "pool_print"]
