"""Core, RBAC, storage, scheduling, batch, apps and Ray kinds (only the fields taudash reads)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import AliasChoices, BeforeValidator, Field

from .base import (
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

ResourceList = Annotated[dict[str, QuantityField], BeforeValidator(_none_to_empty_dict)]


class Taint(KModel):
    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSpec(KModel):
    unschedulable: bool = False
    taints: Annotated[list[Taint], BeforeValidator(_none_to_empty_list)] = []


class NodeSystemInfo(KModel):
    operating_system: str = ""


class NodeStatus(KModel):
    allocatable: ResourceList = {}
    capacity: ResourceList = {}
    conditions: Conditions = []
    node_info: NodeSystemInfo | None = None


class Node(KubeObject):
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()


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
    name: str
    node_id: str = Field(default="", validation_alias=AliasChoices("nodeID", "nodeId"))


class CSINodeSpec(KModel):
    drivers: Annotated[list[CSINodeDriver], BeforeValidator(_none_to_empty_list)] = []


class CSINode(KubeObject):
    spec: CSINodeSpec = CSINodeSpec()


class PriorityClass(KubeObject):
    value: int = 0


class PodTemplateMeta(KModel):
    labels: StrMap = {}
    annotations: StrMap = {}


class PodTemplate(KModel):
    metadata: PodTemplateMeta = PodTemplateMeta()


class JobSpec(KModel):
    suspend: bool | None = None
    parallelism: int | None = None
    completions: int | None = None
    template: PodTemplate = PodTemplate()


class JobStatus(KModel):
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
    spec: JobSpec = JobSpec()
    status: JobStatus = JobStatus()


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
