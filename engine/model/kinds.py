"""The registry of kinds the engine reads (DESIGN §4)."""

from __future__ import annotations

from dataclasses import dataclass

from . import core, fast, kueue, tau
from .base import KubeObject


@dataclass(frozen=True)
class ResourceKind:
    kind: str  # the key used everywhere in the engine, e.g. "ClusterQueue"
    group: str  # "" for the core group
    versions: tuple[str, ...]  # preferred first
    plural: str
    namespaced: bool
    model: type[KubeObject] | type[fast.FastObject]
    optional: bool = False  # an absent API counts as empty (Ray)

    @property
    def resource(self) -> str:
        """`<plural>.<group>` as kubectl spells it (plain plural for the core group)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.versions[0]}" if self.group else self.versions[0]


KUEUE = "kueue.x-k8s.io"
TAU = "tau.azure.com"
_KQ = ("v1beta2", "v1beta1")

KINDS: tuple[ResourceKind, ...] = (
    ResourceKind("Node", "", ("v1",), "nodes", False, fast.Node),
    ResourceKind("Namespace", "", ("v1",), "namespaces", False, core.Namespace),
    ResourceKind("ServiceAccount", "", ("v1",), "serviceaccounts", True, core.ServiceAccount),
    ResourceKind("PersistentVolumeClaim", "", ("v1",), "persistentvolumeclaims", True, core.PersistentVolumeClaim),
    ResourceKind("RoleBinding", "rbac.authorization.k8s.io", ("v1",), "rolebindings", True, core.RoleBinding),
    ResourceKind("StorageClass", "storage.k8s.io", ("v1",), "storageclasses", False, core.StorageClass),
    ResourceKind("CSIDriver", "storage.k8s.io", ("v1",), "csidrivers", False, core.CSIDriver),
    ResourceKind("CSINode", "storage.k8s.io", ("v1",), "csinodes", False, fast.CSINode),
    ResourceKind("PriorityClass", "scheduling.k8s.io", ("v1",), "priorityclasses", False, core.PriorityClass),
    ResourceKind("Job", "batch", ("v1",), "jobs", True, fast.Job),
    ResourceKind("Deployment", "apps", ("v1",), "deployments", True, core.Deployment),
    ResourceKind("RayJob", "ray.io", ("v1",), "rayjobs", True, core.RayJob, optional=True),
    ResourceKind("RayService", "ray.io", ("v1",), "rayservices", True, core.RayService, optional=True),
    ResourceKind("ClusterQueue", KUEUE, _KQ, "clusterqueues", False, kueue.ClusterQueue),
    ResourceKind("LocalQueue", KUEUE, _KQ, "localqueues", True, kueue.LocalQueue),
    ResourceKind("Cohort", KUEUE, _KQ, "cohorts", False, kueue.Cohort),
    ResourceKind("ResourceFlavor", KUEUE, _KQ, "resourceflavors", False, kueue.ResourceFlavor),
    ResourceKind("Workload", KUEUE, _KQ, "workloads", True, fast.Workload),
    ResourceKind("AdmissionCheck", KUEUE, _KQ, "admissionchecks", False, kueue.AdmissionCheck),
    ResourceKind("WorkloadPriorityClass", KUEUE, _KQ, "workloadpriorityclasses", False, kueue.WorkloadPriorityClass),
    ResourceKind("Topology", KUEUE, _KQ, "topologies", False, kueue.Topology),
    ResourceKind("MultiKueueConfig", KUEUE, _KQ, "multikueueconfigs", False, kueue.MultiKueueConfig),
    ResourceKind("MultiKueueCluster", KUEUE, _KQ, "multikueueclusters", False, kueue.MultiKueueCluster),
    ResourceKind("TauCluster", TAU, ("v1alpha1",), "clusters", False, tau.TauCluster),
    ResourceKind("TauTeam", TAU, ("v1alpha1",), "teams", True, tau.TauTeam),
    ResourceKind("TauWorkspace", TAU, ("v1alpha1",), "workspaces", True, tau.TauWorkspace),
)

BY_KIND: dict[str, ResourceKind] = {k.kind: k for k in KINDS}
# Kubernetes objects name their kind ("TauCluster" is served as kind "TauCluster" in tau.azure.com).
_BY_GROUP_KIND: dict[tuple[str, str], ResourceKind] = {(k.group, k.kind): k for k in KINDS}
# TauGrid's CRDs use the plain kinds Cluster/Team/Workspace in some releases' manifests.
_BY_GROUP_KIND[(TAU, "Cluster")] = BY_KIND["TauCluster"]
_BY_GROUP_KIND[(TAU, "Team")] = BY_KIND["TauTeam"]
_BY_GROUP_KIND[(TAU, "Workspace")] = BY_KIND["TauWorkspace"]
BY_RESOURCE: dict[str, ResourceKind] = {k.resource: k for k in KINDS}


def lookup(api_version: str, kind: str) -> ResourceKind | None:
    """The registered kind for an object's apiVersion/kind, or None when taudash does not read it."""
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return _BY_GROUP_KIND.get((group, kind))


NEVER_READ = frozenset({"Secret"})
