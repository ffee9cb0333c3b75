"""TauGrid kinds: TauCluster, TauTeam, TauWorkspace (tau.azure.com/v1alpha1)."""

from typing import Annotated

from pydantic import AliasChoices, BeforeValidator, Field

from .base import Conditions, KModel, KubeObject, QuantityField, StrMap
from .base import _none_to_empty_list as _listify


class NameRef(KModel):
    name: str = ""


class TauResourceQuota(KModel):
    flavor: str
    resource: str
    nominal_quota: QuantityField
    borrowing_limit: QuantityField | None = None
    lending_limit: QuantityField | None = None


Quotas = Annotated[list[TauResourceQuota], BeforeValidator(_listify)]


# --- workload profiles ---------------------------------------------------------------


class ProfileApplicability(KModel):
    teams: Annotated[list[str], BeforeValidator(_listify)] = []
    lanes: Annotated[list[str], BeforeValidator(_listify)] = []
    namespaces: Annotated[list[str], BeforeValidator(_listify)] = []


class ProfilePriorities(KModel):
    workload_priority_class_name: str = ""
    pod_priority_class_name: str = ""
    disable_default_priorities: bool = False


class WorkloadProfile(KModel):
    name: str
    description: str = ""
    applicability: ProfileApplicability = ProfileApplicability()
    gpus_per_worker: int = 0
    worker_count: int = 1
    mode: str = ""
    placement: str = ""
    default_local_queue: str = ""
    execution_target: str = ""
    priorities: ProfilePriorities = ProfilePriorities()


class ResolvedLocalQueue(KModel):
    namespace: str = ""
    name: str = ""
    cluster_queue: str = ""


class ResolvedWorkloadProfile(WorkloadProfile):
    local_queues: Annotated[list[ResolvedLocalQueue], BeforeValidator(_listify)] = []
    cluster_queues: Annotated[list[str], BeforeValidator(_listify)] = []
    resource_flavors: Annotated[list[str], BeforeValidator(_listify)] = []
    topologies: Annotated[list[str], BeforeValidator(_listify)] = []
    workload_priority_classes: Annotated[list[str], BeforeValidator(_listify)] = []
    pod_priority_classes: Annotated[list[str], BeforeValidator(_listify)] = []
    conditions: Conditions = []


class ProfileSetStatus(KModel):
    observed_generation: int = 0
    observed: int = 0
    ready: int = 0
    drifted: int = 0
    profile_set_hash: str = ""
    profiles: Annotated[list[ResolvedWorkloadProfile], BeforeValidator(_listify)] = []


# --- TauCluster ----------------------------------------------------------------------


class ClusterNodes(KModel):
    selector: StrMap = {}


class SharedLocalQueue(KModel):
    namespace: str = ""
    name: str = ""


class ClusterQueues(KModel):
    ownership: str = "External"
    capacity_team_ref: NameRef | None = None
    shared_local_queues: Annotated[list[SharedLocalQueue], BeforeValidator(_listify)] = []


class WorkspaceDefaults(KModel):
    default_queue: str = "jobqueue"


class TauClusterSpec(KModel):
    management_mode: str = "Observe"
    nodes: ClusterNodes = ClusterNodes()
    queues: ClusterQueues = ClusterQueues()
    workspace_defaults: WorkspaceDefaults = WorkspaceDefaults()
    workload_profiles: Annotated[list[WorkloadProfile], BeforeValidator(_listify)] = []


class TauClusterStatus(KModel):
    phase: str = ""
    observed_generation: int = 0
    workload_profiles: ProfileSetStatus | None = None
    conditions: Conditions = []


class TauCluster(KubeObject):
    spec: TauClusterSpec = TauClusterSpec()
    status: TauClusterStatus = TauClusterStatus()

    @property
    def capacity_team(self) -> str | None:
        ref = self.spec.queues.capacity_team_ref
        return ref.name if ref and ref.name else None


# --- TauTeam -------------------------------------------------------------------------


class TauTeamSpec(KModel):
    quota: Quotas = []


class TauTeamStatus(KModel):
    phase: str = ""
    observed_generation: int = 0
    cohort: str = ""
    cohort_uid: str = Field(default="", validation_alias=AliasChoices("cohortUID", "cohortUid", "cohort_uid"))
    conditions: Conditions = []


class TauTeam(KubeObject):
    spec: TauTeamSpec = TauTeamSpec()
    status: TauTeamStatus = TauTeamStatus()


# --- TauWorkspace --------------------------------------------------------------------


class Authorization(KModel):
    mode: str = "workspace-rbac"


class KubernetesSubject(KModel):
    kind: str = ""
    name: str = ""


class WorkspaceTarget(KModel):
    namespace: str = ""
    create_namespace: bool = False


class WorkloadIdentity(KModel):
    service_account_name: str = ""
    client_id: str = Field(default="", validation_alias=AliasChoices("clientId", "clientID", "client_id"))


class TauWorkspaceSpec(KModel):
    authorization: Authorization = Authorization()
    principal_ref: StrMap = {}
    kubernetes_subject: KubernetesSubject | None = None
    role: str = ""
    target: WorkspaceTarget = WorkspaceTarget()
    queue: str = ""
    workload_identity: WorkloadIdentity | None = None
    team_ref: NameRef | None = None
    quota: Quotas = []


class ResolvedTarget(KModel):
    resolved_namespace: str = ""


class WorkspaceQueueStatus(KModel):
    local_queue: str = ""
    cluster_queue: str = ""
    cluster_queue_uid: str = Field(
        default="", validation_alias=AliasChoices("clusterQueueUID", "clusterQueueUid", "cluster_queue_uid")
    )


class TauWorkspaceStatus(KModel):
    phase: str = ""
    observed_generation: int = 0
    target: ResolvedTarget = ResolvedTarget()
    queue: WorkspaceQueueStatus = WorkspaceQueueStatus()
    conditions: Conditions = []


class TauWorkspace(KubeObject):
    spec: TauWorkspaceSpec = TauWorkspaceSpec()
    status: TauWorkspaceStatus = TauWorkspaceStatus()

    @property
    def desired_namespace(self) -> str:
        return self.spec.target.namespace or self.name

    @property
    def team(self) -> str | None:
        return self.spec.team_ref.name if self.spec.team_ref and self.spec.team_ref.name else None
