"""What a type checker reads for engine.view.ClusterView, which is built at run time from the rule
registry (engine/registry.py). Generated: `python tests/unit/test_static_types.py --regen`;
tests/unit/test_static_types.py fails while it differs from the registry. Do not edit."""

from .rules.base import Finding
from .rules.capacity import CapacityView
from .rules.claims import ClaimView
from .rules.cluster import AccessEntry, ClusterSummary, TeamSummary
from .rules.multikueue import MultiKueueView
from .rules.pool import PoolView
from .rules.profiles import ProfilesView
from .rules.queues import ClusterQueueView, CohortView, WaitingWorkload
from .rules.utilisation import UtilisationView
from .rules.workspaces import WorkspaceView
from .view import ClusterViewBase

class ClusterView(ClusterViewBase):
    """The derived cluster state: one field per registered rule output."""

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
    capacity: CapacityView
    utilisation: UtilisationView
    findings: list[Finding]
