"""The Pods a Pods view lists, with what an operator reads first: phase, node, GPUs, restarts, age and the
Workload its job runs under. Pure: the store in, rows out (a screen calls it under the session's lock,
once per view, only while it shows).

A scope narrows the list to one namespace, node, Workload, ClusterQueue or LocalQueue: a Workload's Pods
are those its owner (the Job, RayJob, … Kueue made the Workload for) controls; a queue's are those of its
Workloads (a ClusterQueue's: the Workloads admitted to it).
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Pod, Workload
from .rules.capacity import pod_gpus
from .store import Store

ALL, NAMESPACE, NODE, WORKLOAD, CLUSTER_QUEUE, LOCAL_QUEUE = "", "Namespace", "Node", "Workload", "ClusterQueue", \
    "LocalQueue"
SCOPES = (ALL, NAMESPACE, NODE, WORKLOAD, CLUSTER_QUEUE, LOCAL_QUEUE)


@dataclass(frozen=True)
class PodScope:
    """Which Pods to list: every one (kind ""), or those of one object."""

    kind: str = ALL
    name: str = ""
    namespace: str | None = None  # a Workload's or a LocalQueue's

    def __post_init__(self) -> None:
        if self.kind not in SCOPES:
            raise ValueError(f"a Pods scope is one of {', '.join(s or 'all' for s in SCOPES)}, not {self.kind!r}")

    @property
    def label(self) -> str:
        """"all namespaces", "namespace train", "Workload train/job-a", "node gpu-3"."""
        if self.kind == ALL:
            return "all namespaces"
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{'namespace' if self.kind == NAMESPACE else 'node' if self.kind == NODE else self.kind} {where}"


@dataclass(frozen=True)
class PodRow:
    namespace: str
    name: str
    phase: str  # the Pod's phase, or a waiting container's reason (ContainerCreating) as kubectl shows it
    node: str  # "" while not scheduled
    gpus: int
    restarts: int
    created: str | None  # metadata.creationTimestamp
    owner: str  # "Kind/name" of its controller, "" when none
    workload: str  # "namespace/name" of the Workload its owner runs under, "" when none
    containers: tuple[str, ...]
    started: bool  # some container runs or ran: it has a log to read


def _controller(p: Pod) -> tuple[str, str, str]:
    refs = p.metadata.owner_references
    ref = next((r for r in refs if r.controller), refs[0] if refs else None)
    return ("", "", "") if ref is None else (ref.kind, ref.name, ref.uid)


def _phase(p: Pod) -> tuple[str, bool]:
    started = False
    waiting = ""
    for c in p.status.container_statuses:
        st = c.state
        if st.running is not None or st.terminated is not None:
            started = True
        elif st.waiting is not None and st.waiting.reason and not waiting:
            waiting = st.waiting.reason
    phase = p.status.phase or "Unknown"
    return (waiting if phase == "Pending" and waiting else phase), started


def list_pods(store: Store, scope: PodScope = PodScope()) -> list[PodRow]:
    """The Pods in `scope`, by namespace and name."""
    pods = store.list(Pod)
    if scope.kind == NAMESPACE:
        pods = [p for p in pods if p.namespace == scope.name]
    elif scope.kind == NODE:
        pods = [p for p in pods if p.node_name == scope.name]
    workload_of: dict[str, str] = {}  # owner uid → Workload
    wanted: set[str] | None = None  # the owner uids a Workload or queue scope keeps
    if scope.kind in (WORKLOAD, CLUSTER_QUEUE, LOCAL_QUEUE):
        wanted = set()
    for wl in store.list(Workload):
        owner = wl.owner
        if owner is None or not owner.uid:
            continue
        workload_of.setdefault(owner.uid, f"{wl.namespace}/{wl.name}")
        if wanted is not None and _in_scope(wl, scope):
            wanted.add(owner.uid)
    rows = []
    for p in pods:
        kind, name, uid = _controller(p)
        if wanted is not None and uid not in wanted:
            continue
        phase, started = _phase(p)
        rows.append(PodRow(
            namespace=p.namespace or "", name=p.name, phase=phase, node=p.node_name, gpus=pod_gpus(p),
            restarts=sum(c.restart_count for c in p.status.container_statuses),
            created=p.metadata.creation_timestamp, owner=f"{kind}/{name}" if kind else "",
            workload=workload_of.get(uid, ""), containers=tuple(c.name for c in p.spec.containers), started=started))
    rows.sort(key=lambda r: (r.namespace, r.name))
    return rows


def _in_scope(wl: Workload, scope: PodScope) -> bool:
    if scope.kind == WORKLOAD:
        return wl.name == scope.name and wl.namespace == scope.namespace
    if scope.kind == LOCAL_QUEUE:
        return wl.spec.queue_name == scope.name and wl.namespace == scope.namespace
    admission = wl.status.admission
    return admission is not None and admission.cluster_queue == scope.name
