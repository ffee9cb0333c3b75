"""The resources the simulated API server serves: the engine's KINDS plus what discovery needs.

Short names and printer columns follow the real CRDs and built-ins. The kueue.x-k8s.io resources
follow one Kueue release (taudash/sim/kueue_versions.py): its served versions (preferred first),
its storage version and its CRDs' short names — `resources_for(kueue_version("0.15"))`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from taudash.engine.model.kinds import KINDS, KUEUE, NEVER_READ, ResourceKind, lookup
from taudash.sim.kueue_versions import HUB, KueueVersion, kueue_version

# Getter of one table cell from a raw object.
Cell = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # "string" | "integer" | "date" (Table columnDefinitions)
    cell: Cell
    priority: int = 0


@dataclass(frozen=True)
class Resource:
    kind: str  # the kind served on the wire, e.g. "TauWorkspace"
    group: str
    versions: tuple[str, ...]  # served; the first is preferred
    plural: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    status: bool = True  # has the /status subresource
    optional: bool = False  # an API a cluster may not have (Ray)
    engine_kind: str = ""  # the key in engine.model.KINDS
    columns: tuple[Column, ...] = field(default=(), compare=False, repr=False)
    storage: str = ""  # the version objects are stored in (default: the preferred one)
    hub: str = ""  # the internal version in-process readers and writers use (default: storage)

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def qualified(self) -> str:
        """`plural.group` as the apiserver names a resource in messages (plain plural for core)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def storage_version(self) -> str:
        return self.storage or self.versions[0]

    @property
    def internal_version(self) -> str:
        """The shape in-process readers (the simulated controllers) see and write."""
        return self.hub or self.storage_version

    @property
    def converts(self) -> bool:
        """Objects are stored in another version than the internal one (converted at the store)."""
        return self.internal_version != self.storage_version

    @property
    def known_versions(self) -> tuple[str, ...]:
        """Versions an object may name: the served ones and the internal one."""
        return self.versions if self.internal_version in self.versions else (*self.versions, self.internal_version)

    def api_version(self, version: str | None = None) -> str:
        v = version or self.storage_version
        return f"{self.group}/{v}" if self.group else v

    @property
    def builtin(self) -> bool:
        """Built-in APIs accept strategic-merge patches; CRDs answer 415 like the real server."""
        return self.group in _BUILTIN_GROUPS


_BUILTIN_GROUPS = frozenset({"", "apps", "batch", "rbac.authorization.k8s.io", "storage.k8s.io", "scheduling.k8s.io",
                             "coordination.k8s.io"})


# --- table cells ---------------------------------------------------------------------------------


def path(*alternatives: str) -> Cell:
    """First non-empty value among dotted paths; `conditions[T]` picks condition T's status."""

    def get(obj: dict[str, Any]) -> Any:
        for alt in alternatives:
            cur: Any = obj
            for part in alt.split("."):
                if cur is None:
                    break
                if part.startswith("conditions[") and part.endswith("]"):
                    want = part[len("conditions["):-1]
                    cur = next((c.get("status") for c in cur.get("conditions") or [] if c.get("type") == want), None)
                else:
                    cur = cur.get(part) if isinstance(cur, dict) else None
            if cur not in (None, ""):
                return cur
        return None

    return get


def _node_status(obj: dict[str, Any]) -> str:
    ready = path("status.conditions[Ready]")(obj)
    text = "Ready" if ready == "True" else "NotReady" if ready == "False" else "Unknown"
    if (obj.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _pod_ready(obj: dict[str, Any]) -> str:
    statuses = path("status.containerStatuses")(obj) or ()
    containers = path("spec.containers")(obj) or ()
    return f"{sum(1 for c in statuses if c.get('ready'))}/{len(containers)}"


_COLUMNS: dict[str, tuple[Column, ...]] = {
    "Node": (Column("Status", "string", _node_status),),
    "Namespace": (Column("Status", "string", path("status.phase")),),
    "Job": (Column("Status", "string", path("status.conditions[Complete]")),),
    "Deployment": (Column("Ready", "string",
                          lambda o: f"{path('status.readyReplicas')(o) or 0}/{path('spec.replicas')(o) or 0}"),),
    "RayJob": (Column("Job Status", "string", path("status.jobStatus")),
               Column("Deployment Status", "string", path("status.jobDeploymentStatus"))),
    "RayService": (Column("Service Status", "string", path("status.serviceStatus")),),
    "ClusterQueue": (Column("Cohort", "string", path("spec.cohortName", "spec.cohort")),
                     Column("Stop Policy", "string", path("spec.stopPolicy")),
                     Column("Pending Workloads", "integer", path("status.pendingWorkloads")),
                     Column("Admitted Workloads", "integer", path("status.admittedWorkloads"))),
    "LocalQueue": (Column("ClusterQueue", "string", path("spec.clusterQueue")),
                   Column("Pending Workloads", "integer", path("status.pendingWorkloads")),
                   Column("Admitted Workloads", "integer", path("status.admittedWorkloads"))),
    "Workload": (Column("Queue", "string", path("spec.queueName")),
                 Column("Reserved in", "string", path("status.admission.clusterQueue")),
                 Column("Admitted", "string", path("status.conditions[Admitted]")),
                 Column("Finished", "string", path("status.conditions[Finished]"))),
    "Lease": (Column("Holder", "string", path("spec.holderIdentity")),),
    "Pod": (Column("Ready", "string", lambda o: _pod_ready(o)),
            Column("Status", "string", path("status.phase")),
            Column("Restarts", "integer", lambda o: sum(int(c.get("restartCount") or 0)
                                                        for c in path("status.containerStatuses")(o) or ())),
            Column("Node", "string", path("spec.nodeName"), priority=1)),
    "TauCluster": (Column("Mode", "string", path("spec.managementMode")),
                   Column("Phase", "string", path("status.phase"))),
    "TauTeam": (Column("Phase", "string", path("status.phase")),
                Column("Cohort", "string", path("status.cohort"))),
    "TauWorkspace": (Column("Phase", "string", path("status.phase")),
                     Column("Namespace", "string", path("status.target.resolvedNamespace")),
                     Column("Queue", "string", path("spec.queue"))),
}

# Kinds whose real API has no /status subresource.
_NO_STATUS = frozenset({
    "ServiceAccount", "RoleBinding", "StorageClass", "CSIDriver", "CSINode", "PriorityClass",
    "ResourceFlavor", "WorkloadPriorityClass", "Topology", "MultiKueueConfig", "Lease",
})


def _from_kind(k: ResourceKind, kueue: KueueVersion) -> Resource:
    is_kueue = k.group == KUEUE
    return Resource(
        kind=k.kind,
        group=k.group,
        versions=kueue.served if is_kueue else k.versions,
        plural=k.plural,
        namespaced=k.namespaced,
        singular=k.kind.lower(),
        status=k.kind not in _NO_STATUS,
        optional=k.optional,
        engine_kind=k.kind,
        short_names=kueue.short(k.kind) if is_kueue else k.short_names,
        columns=_COLUMNS.get(k.kind, ()),
        storage=kueue.storage if is_kueue else "",
        hub=HUB if is_kueue else "",
    )


# core/v1 Events: served (kubectl, the object detail's on-demand watch) but not a kind the engine stores.
EVENT = Resource(
    kind="Event", group="", versions=("v1",), plural="events", namespaced=True, singular="event",
    short_names=("ev",), status=False,
    columns=(Column("Type", "string", path("type")), Column("Reason", "string", path("reason")),
             Column("Object", "string", lambda o: f"{path('involvedObject.kind')(o) or ''}/"
                                                  f"{path('involvedObject.name')(o) or ''}"),
             Column("Message", "string", path("message"))),
)


# core/v1 Pods: the simulated Kueue's admitted Workloads run as Pods bound to Nodes (controllers/pods.py).
# Served as a simulator built-in while the engine has no Pod kind; once it has one, the engine's entry
# (with these columns) is served instead and this one is dropped.
POD = Resource(
    kind="Pod", group="", versions=("v1",), plural="pods", namespaced=True, singular="pod",
    short_names=("po",), status=True, columns=_COLUMNS["Pod"],
)

# Served beside the engine's kinds for RBAC (taudash/sim/rbac.py decides requests from them with --rbac) and
# for `taudash deploy manifests` applied as it stands (its Service).
RBAC_GROUP = "rbac.authorization.k8s.io"
ROLE = Resource(kind="Role", group=RBAC_GROUP, versions=("v1",), plural="roles", namespaced=True, singular="role",
                status=False)
CLUSTER_ROLE = Resource(kind="ClusterRole", group=RBAC_GROUP, versions=("v1",), plural="clusterroles",
                        namespaced=False, singular="clusterrole", status=False)
CLUSTER_ROLE_BINDING = Resource(kind="ClusterRoleBinding", group=RBAC_GROUP, versions=("v1",),
                                plural="clusterrolebindings", namespaced=False, singular="clusterrolebinding",
                                status=False)
SERVICE = Resource(kind="Service", group="", versions=("v1",), plural="services", namespaced=True, singular="service",
                   short_names=("svc",), status=True)

# Kinds served beside the engine's that the simulated controllers read (their mirror keeps them).
SIM_KINDS = frozenset({"Pod"})


def resources_for(kueue: KueueVersion | str | None = None) -> tuple[Resource, ...]:
    """The served resources with kueue.x-k8s.io as Kueue release `kueue` plays it (default 0.19), core/v1
    Events, core/v1 Pods (the engine's entry when it has one), Services, Roles, ClusterRoles and
    ClusterRoleBindings."""
    version = kueue if isinstance(kueue, KueueVersion) else kueue_version(kueue)
    engine = tuple(_from_kind(k, version) for k in KINDS)
    extra = tuple(r for r in (POD,) if all(e.kind != r.kind for e in engine))
    return (*engine, *extra, EVENT, SERVICE, ROLE, CLUSTER_ROLE, CLUSTER_ROLE_BINDING)


RESOURCES: tuple[Resource, ...] = resources_for()


class Registry:
    """Lookup of served resources by (group, plural), kind name, `plural.group`, or short name."""

    def __init__(self, resources: tuple[Resource, ...] = RESOURCES, kueue: KueueVersion | None = None) -> None:
        if any(r.kind in NEVER_READ or r.plural == "secrets" for r in resources):
            raise ValueError("the simulator never holds Secrets")
        self.all = resources
        self.kueue = kueue or kueue_version()  # the Kueue release the kueue.x-k8s.io resources follow
        self._by_key = {r.key: r for r in resources}
        self._by_name: dict[str, Resource] = {}
        for r in resources:
            for alias in (r.kind, r.kind.lower(), r.qualified, r.plural, r.singular, *r.short_names):
                self._by_name.setdefault(alias, r)

    @classmethod
    def for_kueue(cls, kueue: KueueVersion | str | None = None) -> Registry:
        """The registry with kueue.x-k8s.io as Kueue release `kueue` plays it (default 0.19)."""
        version = kueue if isinstance(kueue, KueueVersion) else kueue_version(kueue)
        return cls(resources_for(version), version)

    def get(self, group: str, plural: str) -> Resource | None:
        return self._by_key.get((group, plural))

    def resolve(self, ref: str | Resource) -> Resource:
        """`"ClusterQueue"`, `"clusterqueues.kueue.x-k8s.io"`, `"cq"` or a Resource → Resource."""
        if isinstance(ref, Resource):
            return ref
        r = self._by_name.get(ref)
        if r is None:
            raise KeyError(f"unknown resource {ref!r}")
        return r

    def for_object(self, obj: dict[str, Any]) -> Resource:
        """The resource an object belongs to, from its apiVersion and kind (accepts TauGrid's plain kinds)."""
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        info = lookup(api_version, kind)
        r = self.resolve(info.kind) if info is not None else self._builtin(api_version, kind)
        if r is None:
            raise KeyError(f"{kind} {api_version} is not a resource the simulator serves")
        return r

    def _builtin(self, api_version: str, kind: str) -> Resource | None:
        """A resource served beside the engine's kinds (Pods, Events), by its exact apiVersion and kind."""
        r = self._by_name.get(kind)
        if r is None or r.engine_kind or r.kind != kind:
            return None
        return r if api_version in {r.api_version(v) for v in r.versions} else None

    def groups(self) -> list[str]:
        """API groups in first-appearance order (core "" first)."""
        seen: dict[str, None] = {}
        for r in self.all:
            seen.setdefault(r.group, None)
        return list(seen)
