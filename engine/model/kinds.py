"""The registry of kinds the engine reads (ARCHITECTURE.md, "Add a kind"): one description per kind that
everything reads.

Group, versions, plural, kind, scope and short names (the live source, the snapshot loader, the
simulator's discovery); whether the kind is high-volume (tens of thousands of objects: the store
keeps no label index and the source no raw copy of them); whether a draining workspace reads it in
its old namespace; the codec that decodes it (a msgspec struct or a pydantic model).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import core, fast, kueue, tau
from .base import KubeObject
from .names import CLAIM_SELECTOR


@dataclass(frozen=True)
class ResourceKind:
    kind: str  # the key used everywhere in the engine, e.g. "ClusterQueue"
    group: str  # "" for the core group
    versions: tuple[str, ...]  # preferred first
    plural: str
    namespaced: bool
    model: type[KubeObject] | type[fast.FastObject]
    optional: bool = False  # an absent API counts as empty (Ray)
    short_names: tuple[str, ...] = ()  # as kubectl accepts them (the simulator's discovery serves them)
    # Tens of thousands of objects whose labels are looked up rarely (a Job's Workloads, from the
    # object view): the store scans them instead of indexing every label (~70 MiB at fleet scale),
    # and the live source keeps only the typed model, not the decoded JSON as well (most of the
    # memory); their YAML view says the raw copy is not kept.
    high_volume: bool = False
    # A draining workspace reads it in its old namespace (docs/rules.md#drain): what still runs or routes there.
    drain: bool = False
    # Work Kueue admits through a Workload it owns (a Job, a RayJob, ...): a drain may delete it.
    workload_source: bool = False
    # Only the objects this label selector matches are read (lists and watches send it): a kind most of
    # whose objects belong to others (the Leases of every node and controller) is read for taudash's own.
    label_selector: str = ""

    @property
    def codec(self) -> str:
        """"msgspec": decoded from bytes straight into a struct (engine/model/fast.py); else "pydantic"."""
        return "msgspec" if issubclass(self.model, fast.FastObject) else "pydantic"

    @property
    def resource(self) -> str:
        """`<plural>.<group>` as kubectl spells it (plain plural for the core group)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.versions[0]}" if self.group else self.versions[0]

    def selects(self, labels: Mapping[str, str]) -> bool:
        """Whether an object with these labels is one taudash reads (the label selector's key=value terms)."""
        for term in filter(None, self.label_selector.split(",")):
            key, _, value = term.partition("=")
            if labels.get(key) != value:
                return False
        return True


KUEUE = "kueue.x-k8s.io"
TAU = "tau.azure.com"
_KQ = ("v1beta2", "v1beta1")

_HV: dict[str, Any] = dict(high_volume=True, drain=True)
_SRC: dict[str, Any] = dict(_HV, workload_source=True)

KINDS: tuple[ResourceKind, ...] = (
    ResourceKind("Node", "", ("v1",), "nodes", False, fast.Node, short_names=("no",)),
    ResourceKind("Namespace", "", ("v1",), "namespaces", False, core.Namespace, short_names=("ns",)),
    # Every Pod of the cluster (150k on a big one): where requests sit on nodes (docs/capacity.md).
    ResourceKind("Pod", "", ("v1",), "pods", True, fast.Pod, short_names=("po",), high_volume=True),
    ResourceKind("ServiceAccount", "", ("v1",), "serviceaccounts", True, core.ServiceAccount, short_names=("sa",)),
    ResourceKind("PersistentVolumeClaim", "", ("v1",), "persistentvolumeclaims", True, core.PersistentVolumeClaim,
                 short_names=("pvc",)),
    ResourceKind("RoleBinding", "rbac.authorization.k8s.io", ("v1",), "rolebindings", True, core.RoleBinding),
    ResourceKind("StorageClass", "storage.k8s.io", ("v1",), "storageclasses", False, core.StorageClass,
                 short_names=("sc",)),
    ResourceKind("CSIDriver", "storage.k8s.io", ("v1",), "csidrivers", False, core.CSIDriver),
    ResourceKind("CSINode", "storage.k8s.io", ("v1",), "csinodes", False, fast.CSINode),
    ResourceKind("PriorityClass", "scheduling.k8s.io", ("v1",), "priorityclasses", False, core.PriorityClass,
                 short_names=("pc",)),
    ResourceKind("Job", "batch", ("v1",), "jobs", True, fast.Job, **_SRC),
    ResourceKind("Deployment", "apps", ("v1",), "deployments", True, core.Deployment, short_names=("deploy",), **_SRC),
    ResourceKind("RayJob", "ray.io", ("v1",), "rayjobs", True, core.RayJob, optional=True, **_SRC),
    ResourceKind("RayService", "ray.io", ("v1",), "rayservices", True, core.RayService, optional=True, **_SRC),
    ResourceKind("ClusterQueue", KUEUE, _KQ, "clusterqueues", False, kueue.ClusterQueue, short_names=("cq",)),
    ResourceKind("LocalQueue", KUEUE, _KQ, "localqueues", True, kueue.LocalQueue,
                 short_names=("queue", "queues", "lq"), drain=True),
    ResourceKind("Cohort", KUEUE, _KQ, "cohorts", False, kueue.Cohort, short_names=("co",)),
    ResourceKind("ResourceFlavor", KUEUE, _KQ, "resourceflavors", False, kueue.ResourceFlavor,
                 short_names=("flavor", "flavors", "rf")),
    ResourceKind("Workload", KUEUE, _KQ, "workloads", True, fast.Workload,
                 short_names=("wl", "kwl", "kueueworkload", "kueueworkloads"), **_HV),
    ResourceKind("AdmissionCheck", KUEUE, _KQ, "admissionchecks", False, kueue.AdmissionCheck, short_names=("ac",)),
    ResourceKind("WorkloadPriorityClass", KUEUE, _KQ, "workloadpriorityclasses", False, kueue.WorkloadPriorityClass,
                 short_names=("wpc",)),
    ResourceKind("Topology", KUEUE, _KQ, "topologies", False, kueue.Topology, short_names=("topo",)),
    ResourceKind("MultiKueueConfig", KUEUE, _KQ, "multikueueconfigs", False, kueue.MultiKueueConfig,
                 short_names=("mkconf",)),
    ResourceKind("MultiKueueCluster", KUEUE, _KQ, "multikueueclusters", False, kueue.MultiKueueCluster,
                 short_names=("mkc",)),
    # The claims of running workflows (engine/workflows/claims.py), wherever they are: never the other Leases.
    ResourceKind("Lease", "coordination.k8s.io", ("v1",), "leases", True, core.Lease, label_selector=CLAIM_SELECTOR),
    ResourceKind("TauCluster", TAU, ("v1alpha1",), "clusters", False, tau.TauCluster, short_names=("tc",)),
    ResourceKind("TauTeam", TAU, ("v1alpha1",), "teams", True, tau.TauTeam, short_names=("tt",)),
    ResourceKind("TauWorkspace", TAU, ("v1alpha1",), "workspaces", True, tau.TauWorkspace, short_names=("tw",)),
)

BY_KIND: dict[str, ResourceKind] = {k.kind: k for k in KINDS}
# Kubernetes objects name their kind ("TauCluster" is served as kind "TauCluster" in tau.azure.com).
_BY_GROUP_KIND: dict[tuple[str, str], ResourceKind] = {(k.group, k.kind): k for k in KINDS}
# TauGrid's CRDs use the plain kinds Cluster/Team/Workspace in some releases' manifests.
_BY_GROUP_KIND[(TAU, "Cluster")] = BY_KIND["TauCluster"]
_BY_GROUP_KIND[(TAU, "Team")] = BY_KIND["TauTeam"]
_BY_GROUP_KIND[(TAU, "Workspace")] = BY_KIND["TauWorkspace"]
BY_RESOURCE: dict[str, ResourceKind] = {k.resource: k for k in KINDS}
# Read from the descriptions above; never written out by hand elsewhere.
HIGH_VOLUME: frozenset[str] = frozenset(k.kind for k in KINDS if k.high_volume)
DRAIN_KINDS: frozenset[str] = frozenset(k.kind for k in KINDS if k.drain)
WORKLOAD_SOURCES: frozenset[str] = frozenset(k.kind for k in KINDS if k.workload_source)
ALL_KINDS: frozenset[str] = frozenset(BY_KIND)


def lookup(api_version: str, kind: str) -> ResourceKind | None:
    """The registered kind for an object's apiVersion/kind, or None when taudash does not read it."""
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return _BY_GROUP_KIND.get((group, kind))


NEVER_READ = frozenset({"Secret"})
