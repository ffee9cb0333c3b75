"""Core, RBAC, storage, scheduling, batch, apps and Ray kinds (only the fields taudash reads)."""

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AliasChoices, BeforeValidator, Field

from .base import (
    BUILT_ON_FIRST_USE,
    Conditions,
    HasConditions,
    KModel,
    KubeObject,
    LabelSelector,
    ObjectMeta,
    QuantityField,
    StrMap,
    _none_to_empty_dict,
    _none_to_empty_list,
)
from .quantity import ZERO, Quantity

ResourceList = Annotated[dict[str, QuantityField], BeforeValidator(_none_to_empty_dict)]


class Taint(KModel):
    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSpec(KModel):
    model_config = BUILT_ON_FIRST_USE
    unschedulable: bool = False
    taints: Annotated[list[Taint], BeforeValidator(_none_to_empty_list)] = []


class NodeSystemInfo(KModel):
    model_config = BUILT_ON_FIRST_USE
    operating_system: str = ""


class NodeStatus(KModel):
    model_config = BUILT_ON_FIRST_USE
    allocatable: ResourceList = {}
    capacity: ResourceList = {}
    conditions: Conditions = []
    node_info: NodeSystemInfo | None = None


class Node(KubeObject):
    model_config = BUILT_ON_FIRST_USE
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)


class NamespaceStatus(KModel):
    phase: str = ""


class Namespace(KubeObject):
    status: NamespaceStatus = NamespaceStatus()


class ServiceAccount(KubeObject):
    pass


class PVCSpec(KModel):
    storage_class_name: str | None = None
    volume_name: str | None = None


class PVCStatus(KModel):
    phase: str = ""


class PersistentVolumeClaim(KubeObject):
    spec: PVCSpec = PVCSpec()
    status: PVCStatus = PVCStatus()


class RoleRef(KModel):
    api_group: str = ""
    kind: str = ""
    name: str = ""


class Subject(KModel):
    kind: str = ""
    name: str = ""
    namespace: str | None = None


class RoleBinding(KubeObject):
    role_ref: RoleRef = RoleRef()
    subjects: Annotated[list[Subject], BeforeValidator(_none_to_empty_list)] = []


class StorageClass(KubeObject):
    provisioner: str = ""


class CSIDriver(KubeObject):
    pass


class CSINodeDriver(KModel):
    model_config = BUILT_ON_FIRST_USE
    name: str
    node_id: str = Field(default="", validation_alias=AliasChoices("nodeID", "nodeId"))


class CSINodeSpec(KModel):
    model_config = BUILT_ON_FIRST_USE
    drivers: Annotated[list[CSINodeDriver], BeforeValidator(_none_to_empty_list)] = []


class CSINode(KubeObject):
    model_config = BUILT_ON_FIRST_USE
    spec: CSINodeSpec = Field(default_factory=CSINodeSpec)


class PriorityClass(KubeObject):
    value: int = 0


class Toleration(KModel):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


class ContainerResources(KModel):
    model_config = BUILT_ON_FIRST_USE
    requests: ResourceList = {}
    limits: ResourceList = {}


class ContainerRequests(KModel):
    """A container as far as quota and room go: its name and resources."""

    model_config = BUILT_ON_FIRST_USE
    name: str = ""
    resources: ContainerResources = Field(default_factory=ContainerResources)


class PodTemplateMeta(KModel):
    labels: StrMap = {}
    annotations: StrMap = {}


class PodTemplate(KModel):
    metadata: PodTemplateMeta = PodTemplateMeta()


class JobSpec(KModel):
    model_config = BUILT_ON_FIRST_USE
    suspend: bool | None = None
    parallelism: int | None = None
    completions: int | None = None
    template: PodTemplate = PodTemplate()


class JobStatus(KModel):
    model_config = BUILT_ON_FIRST_USE
    conditions: Conditions = []
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    ready: int | None = None


class JobAccessors:
    __slots__ = ()
    if TYPE_CHECKING:  # what the host class provides (a field of the model or the struct)

        @property
        def status(self) -> HasConditions: ...

    @property
    def finished(self) -> bool:
        return any(c.type in ("Complete", "Failed") and c.status == "True" for c in self.status.conditions)


class Job(KubeObject, JobAccessors):
    model_config = BUILT_ON_FIRST_USE
    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobStatus = Field(default_factory=JobStatus)


# --- Pod (many per node: a slim struct in fast.py decodes the wire; this model is the schema of record) ---

TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})


class PodSpec(KModel):
    model_config = BUILT_ON_FIRST_USE
    node_name: str = ""
    containers: Annotated[list[ContainerRequests], BeforeValidator(_none_to_empty_list)] = []
    init_containers: Annotated[list[ContainerRequests], BeforeValidator(_none_to_empty_list)] = []
    overhead: ResourceList = {}
    tolerations: Annotated[list[Toleration], BeforeValidator(_none_to_empty_list)] = []
    priority_class_name: str = ""


class ContainerStateDetail(KModel):
    model_config = BUILT_ON_FIRST_USE
    reason: str = ""
    exit_code: int | None = None


class ContainerState(KModel):
    model_config = BUILT_ON_FIRST_USE
    waiting: ContainerStateDetail | None = None
    running: ContainerStateDetail | None = None
    terminated: ContainerStateDetail | None = None


class ContainerStatus(KModel):
    model_config = BUILT_ON_FIRST_USE
    name: str = ""
    ready: bool = False
    restart_count: int = 0
    state: ContainerState = Field(default_factory=ContainerState)


class PodStatus(KModel):
    model_config = BUILT_ON_FIRST_USE
    phase: str = ""
    container_statuses: Annotated[list[ContainerStatus], BeforeValidator(_none_to_empty_list)] = []


class PodAccessors:
    """What rules ask of a Pod; shared by this model and the struct (engine/model/fast.py)."""

    __slots__ = ()
    if TYPE_CHECKING:  # what the host class provides (a field of the model or the struct)

        # PodSpec/PodStatus here, their structs in fast.py: the same field names
        @property
        def spec(self) -> Any: ...
        @property
        def status(self) -> Any: ...

    @property
    def terminal(self) -> bool:
        """Succeeded or Failed: its requests no longer hold room on the node."""
        return self.status.phase in TERMINAL_POD_PHASES

    @property
    def node_name(self) -> str:
        name: str = self.spec.node_name
        return name

    def effective_request(self, resource: str) -> Quantity:
        """The request the scheduler counts for one resource: the larger of the containers' sum and the
        largest init container, plus the pod overhead. A limit stands in for a missing request (the API
        server defaults a request from its limit)."""
        spec = self.spec
        total = ZERO
        for c in spec.containers:
            q = _container_request(c, resource)
            if q is not None:
                total = total + q
        for c in spec.init_containers:
            q = _container_request(c, resource)
            if q is not None and total < q:
                total = q
        extra = spec.overhead.get(resource)
        return total if extra is None else total + extra


def _container_request(c: ContainerRequests, resource: str) -> Quantity | None:
    res = c.resources
    q = res.requests.get(resource)
    return res.limits.get(resource) if q is None else q


class Pod(KubeObject, PodAccessors):
    model_config = BUILT_ON_FIRST_USE
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)


class DeploymentSpec(KModel):
    replicas: int | None = None
    paused: bool = False
    selector: LabelSelector | None = None
    template: PodTemplate = PodTemplate()


class DeploymentStatus(KModel):
    replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    conditions: Conditions = []


class Deployment(KubeObject):
    spec: DeploymentSpec = DeploymentSpec()
    status: DeploymentStatus = DeploymentStatus()


class RayJobSpec(KModel):
    suspend: bool | None = None
    shutdown_after_job_finishes: bool | None = None


class RayJobStatus(KModel):
    job_deployment_status: str = ""
    job_status: str = ""
    reason: str = ""
    message: str = ""
    failed: int | None = None
    succeeded: int | None = None


class RayJob(KubeObject):
    spec: RayJobSpec = RayJobSpec()
    status: RayJobStatus = RayJobStatus()

    @property
    def finished(self) -> bool:
        # Kueue: only the deployment status is terminal; a failed driver may be retried.
        return self.status.job_deployment_status in ("Complete", "Failed")


class RayServiceStatus(KModel):
    conditions: Conditions = []
    service_status: str = ""


class RayService(KubeObject):
    status: RayServiceStatus = RayServiceStatus()


class LeaseSpec(KModel):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None  # MicroTime, RFC 3339 with microseconds
    renew_time: str | None = None
    lease_transitions: int | None = None


class Lease(KubeObject):
    """coordination.k8s.io/v1 Lease: taudash reads only its own (the claims of running workflows)."""

    spec: LeaseSpec = LeaseSpec()


__all__ = [
    "CSIDriver",
    "CSINode",
    "Deployment",
    "Job",
    "Lease",
    "Namespace",
    "Node",
    "ObjectMeta",
    "PersistentVolumeClaim",
    "PriorityClass",
    "RayJob",
    "RayService",
    "RoleBinding",
    "ServiceAccount",
    "StorageClass",
]
