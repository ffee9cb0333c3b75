"""Kueue kinds. Both v1beta2 and v1beta1 field spellings are accepted (the v1beta1 → v1beta2 renames
of Kueue 0.15: apis/kueue/v1beta1 against apis/kueue/v1beta2)."""

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AliasChoices, BeforeValidator, Field

from .base import (
    BUILT_ON_FIRST_USE,
    Conditions,
    HasConditions,
    KModel,
    KubeObject,
    LabelSelector,
    MetaWithOwners,
    OwnerRefLike,
    QuantityField,
    StrMap,
    _none_to_empty_list,
)
from .core import ContainerRequests, PodTemplate, ResourceList, Taint, Toleration
from .names import MULTIKUEUE_CONTROLLER
from .quantity import Quantity


def _listify(v: Any) -> Any:
    return [] if v is None else v


class ResourceQuota(KModel):
    name: str
    nominal_quota: QuantityField = Field(default_factory=lambda: _zero())
    borrowing_limit: QuantityField | None = None
    lending_limit: QuantityField | None = None


def _zero() -> Quantity:
    return Quantity(0)


class FlavorQuotas(KModel):
    name: str
    resources: Annotated[list[ResourceQuota], BeforeValidator(_listify)] = []


class ResourceGroup(KModel):
    covered_resources: Annotated[list[str], BeforeValidator(_listify)] = []
    flavors: Annotated[list[FlavorQuotas], BeforeValidator(_listify)] = []


class ResourceUsage(KModel):
    name: str
    total: QuantityField = Field(default_factory=lambda: _zero())
    borrowed: QuantityField = Field(default_factory=lambda: _zero())


class FlavorUsage(KModel):
    name: str
    resources: Annotated[list[ResourceUsage], BeforeValidator(_listify)] = []


FlavorUsages = Annotated[list[FlavorUsage], BeforeValidator(_listify)]


class AdmissionCheckStrategyRule(KModel):
    name: str
    on_flavors: Annotated[list[str], BeforeValidator(_listify)] = []


class AdmissionChecksStrategy(KModel):
    admission_checks: Annotated[list[AdmissionCheckStrategyRule], BeforeValidator(_listify)] = []


class BorrowWithinCohort(KModel):
    policy: str = "Never"
    max_priority_threshold: int | None = None


class ClusterQueuePreemption(KModel):
    """spec.preemption; Kueue's defaults when absent (clusterqueue_types.go)."""

    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: BorrowWithinCohort | None = None
    within_cluster_queue: str = "Never"


class FlavorFungibility(KModel):
    """spec.flavorFungibility; None fields are Kueue's defaults (MayStopSearch / TryNextFlavor)."""

    when_can_borrow: str | None = None
    when_can_preempt: str | None = None
    preference: str | None = None


class FairSharing(KModel):
    """spec.fairSharing: the weight (a quantity; Kueue's default is 1)."""

    weight: QuantityField | None = None


class FairSharingStatus(KModel):
    weighted_share: int | None = None


class AdmissionScope(KModel):
    admission_mode: str = ""


class ClusterQueueSpec(KModel):
    cohort_name: str = Field(default="", validation_alias=AliasChoices("cohortName", "cohort", "cohort_name"))
    # None (absent or null) matches no namespace; {} matches every namespace.
    namespace_selector: LabelSelector | None = None
    queueing_strategy: str = "BestEffortFIFO"
    resource_groups: Annotated[list[ResourceGroup], BeforeValidator(_listify)] = []
    stop_policy: str = "None"
    admission_checks: Annotated[list[str], BeforeValidator(_listify)] = []  # v1beta1
    admission_checks_strategy: AdmissionChecksStrategy | None = None  # v1beta2
    preemption: ClusterQueuePreemption = ClusterQueuePreemption()
    flavor_fungibility: FlavorFungibility | None = None
    fair_sharing: FairSharing | None = None
    admission_scope: AdmissionScope | None = None

    @property
    def admission_check_names(self) -> list[str]:
        names = list(self.admission_checks)
        if self.admission_checks_strategy:
            names += [r.name for r in self.admission_checks_strategy.admission_checks]
        return names


class ClusterQueueStatus(KModel):
    pending_workloads: int = 0
    reserving_workloads: int = 0
    admitted_workloads: int = 0
    flavors_reservation: FlavorUsages = []
    flavors_usage: FlavorUsages = []
    conditions: Conditions = []
    fair_sharing: FairSharingStatus | None = None


class ClusterQueue(KubeObject):
    spec: ClusterQueueSpec = ClusterQueueSpec()
    status: ClusterQueueStatus = ClusterQueueStatus()


class CohortSpec(KModel):
    parent_name: str = Field(default="", validation_alias=AliasChoices("parentName", "parent", "parent_name"))
    resource_groups: Annotated[list[ResourceGroup], BeforeValidator(_listify)] = []
    fair_sharing: FairSharing | None = None


class CohortStatus(KModel):
    fair_sharing: FairSharingStatus | None = None


class Cohort(KubeObject):
    spec: CohortSpec = CohortSpec()
    status: CohortStatus = CohortStatus()


class LocalQueueSpec(KModel):
    cluster_queue: str = ""
    stop_policy: str = "None"
    fair_sharing: FairSharing | None = None


class LocalQueueStatus(KModel):
    pending_workloads: int = 0
    reserving_workloads: int = 0
    admitted_workloads: int = 0
    flavors_reservation: FlavorUsages = []
    flavors_usage: FlavorUsages = Field(
        default=[], validation_alias=AliasChoices("flavorsUsage", "flavorUsage", "flavors_usage")
    )
    conditions: Conditions = []
    fair_sharing: FairSharingStatus | None = None


class LocalQueue(KubeObject):
    spec: LocalQueueSpec = LocalQueueSpec()
    status: LocalQueueStatus = LocalQueueStatus()


class ResourceFlavorSpec(KModel):
    node_labels: StrMap = {}
    node_taints: Annotated[list[Taint], BeforeValidator(_listify)] = []
    tolerations: Annotated[list[Toleration], BeforeValidator(_listify)] = []  # taints matched here are ignored
    topology_name: str | None = None


class ResourceFlavor(KubeObject):
    spec: ResourceFlavorSpec = ResourceFlavorSpec()


class PodSetPodSpec(KModel):
    """What Kueue reads of a pod set's pod spec to count quota and match flavors."""

    model_config = BUILT_ON_FIRST_USE
    containers: Annotated[list[ContainerRequests], BeforeValidator(_listify)] = []
    init_containers: Annotated[list[ContainerRequests], BeforeValidator(_listify)] = []
    overhead: ResourceList = {}
    node_selector: StrMap = {}
    tolerations: Annotated[list[Toleration], BeforeValidator(_listify)] = []


class PodSetTemplate(PodTemplate):
    model_config = BUILT_ON_FIRST_USE
    spec: PodSetPodSpec = Field(default_factory=PodSetPodSpec)


class PodSet(KModel):
    model_config = BUILT_ON_FIRST_USE
    name: str = "main"
    count: int = 1
    min_count: int | None = None
    template: PodSetTemplate = Field(default_factory=PodSetTemplate)
    topology_request: dict[str, Any] | None = None  # TAS: required/preferred/unconstrained level, slices


class PriorityClassRef(KModel):
    model_config = BUILT_ON_FIRST_USE
    group: str = ""
    kind: str = ""
    name: str = ""


class WorkloadSpec(KModel):
    model_config = BUILT_ON_FIRST_USE
    queue_name: str = ""
    active: bool = True
    pod_sets: Annotated[list[PodSet], BeforeValidator(_listify)] = []
    priority: int | None = None
    priority_class_ref: PriorityClassRef | None = None  # v1beta2
    priority_class_name: str = ""  # v1beta1
    priority_class_source: str = ""  # v1beta1


class PodSetAssignment(KModel):
    model_config = BUILT_ON_FIRST_USE
    name: str = "main"
    flavors: StrMap = {}
    resource_usage: ResourceList = {}
    count: int | None = None
    topology_assignment: dict[str, Any] | None = None  # TAS: levels and the domains the pods were placed in
    delayed_topology_request: str | None = None


class Admission(KModel):
    model_config = BUILT_ON_FIRST_USE
    cluster_queue: str = ""
    pod_set_assignments: Annotated[list[PodSetAssignment], BeforeValidator(_listify)] = []


class AdmissionCheckState(KModel):
    model_config = BUILT_ON_FIRST_USE
    name: str
    state: str = "Pending"
    message: str = ""
    last_transition_time: str | None = None


class RequeueState(KModel):
    model_config = BUILT_ON_FIRST_USE
    count: int | None = None
    requeue_at: str | None = None


class PodSetRequest(KModel):
    """status.resourceRequests[]: a pod set's total requests as Kueue counted them (non-admitted Workloads)."""

    model_config = BUILT_ON_FIRST_USE
    name: str = "main"
    resources: ResourceList = {}


class EvictionStat(KModel):
    """status.schedulingStats.evictions[]: how often the Workload was evicted, by reason."""

    model_config = BUILT_ON_FIRST_USE
    reason: str = ""
    underlying_cause: str = ""
    count: int = 0


class SchedulingStats(KModel):
    model_config = BUILT_ON_FIRST_USE
    evictions: Annotated[list[EvictionStat], BeforeValidator(_listify)] = []


class WorkloadStatus(KModel):
    model_config = BUILT_ON_FIRST_USE
    admission: Admission | None = None
    conditions: Conditions = []
    admission_checks: Annotated[list[AdmissionCheckState], BeforeValidator(_listify)] = []
    requeue_state: RequeueState | None = None
    resource_requests: Annotated[list[PodSetRequest], BeforeValidator(_listify)] = []
    cluster_name: str | None = None  # MultiKueue: the worker cluster the Workload runs on
    nominated_cluster_names: Annotated[list[str], BeforeValidator(_listify)] = []  # MultiKueue: workers tried
    scheduling_stats: SchedulingStats | None = None


class WorkloadAccessors:
    """Kueue's reading of a Workload's state; shared by the pydantic model and the struct."""

    __slots__ = ()
    if TYPE_CHECKING:  # what the host class provides (a field of the model or the struct)

        @property
        def status(self) -> HasConditions: ...
        @property
        def metadata(self) -> MetaWithOwners: ...

    def _is(self, ctype: str) -> bool:
        # Hot at fleet scale (several calls per Workload per derive): one plain loop, first match wins.
        for c in self.status.conditions:
            if c.type == ctype:
                return c.status == "True"
        return False

    @property
    def finished(self) -> bool:
        return self._is("Finished")

    @property
    def admitted(self) -> bool:
        return self._is("Admitted")

    @property
    def quota_reserved(self) -> bool:
        return self._is("QuotaReserved")

    @property
    def derived_status(self) -> str:
        """kueuectl's view: finished, admitted, quotaReserved or pending."""
        if self.finished:
            return "finished"
        if self.admitted:
            return "admitted"
        if self.quota_reserved:
            return "quotaReserved"
        return "pending"

    @property
    def owner(self) -> OwnerRefLike | None:
        refs = self.metadata.owner_references
        for ref in refs:
            if ref.controller:
                return ref
        return refs[0] if refs else None


class Workload(KubeObject, WorkloadAccessors):
    model_config = BUILT_ON_FIRST_USE
    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)
    status: WorkloadStatus = Field(default_factory=WorkloadStatus)


class AdmissionCheckParameters(KModel):
    api_group: str = ""
    kind: str = ""
    name: str = ""


class AdmissionCheckSpec(KModel):
    controller_name: str = ""
    parameters: AdmissionCheckParameters | None = None


class AdmissionCheckStatus(KModel):
    conditions: Conditions = []


class AdmissionCheck(KubeObject):
    spec: AdmissionCheckSpec = AdmissionCheckSpec()
    status: AdmissionCheckStatus = AdmissionCheckStatus()


class WorkloadPriorityClass(KubeObject):
    value: int = 0
    description: str = ""


class TopologyLevel(KModel):
    node_label: str = ""


class TopologySpec(KModel):
    levels: Annotated[list[TopologyLevel], BeforeValidator(_listify)] = []


class Topology(KubeObject):
    spec: TopologySpec = TopologySpec()


class MultiKueueConfigSpec(KModel):
    clusters: Annotated[list[str], BeforeValidator(_listify)] = []


class MultiKueueConfig(KubeObject):
    spec: MultiKueueConfigSpec = MultiKueueConfigSpec()


class MultiKueueClusterStatus(KModel):
    conditions: Conditions = []


class MultiKueueCluster(KubeObject):
    status: MultiKueueClusterStatus = MultiKueueClusterStatus()


__all__ = [
    "MULTIKUEUE_CONTROLLER",
    "AdmissionCheck",
    "ClusterQueue",
    "Cohort",
    "FlavorQuotas",
    "LocalQueue",
    "MultiKueueCluster",
    "MultiKueueConfig",
    "ResourceFlavor",
    "ResourceGroup",
    "Topology",
    "Workload",
    "WorkloadPriorityClass",
    "_none_to_empty_list",
]
