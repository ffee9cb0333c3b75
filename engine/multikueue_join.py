"""MultiKueue joined up across a fleet (docs/rules.md#multikueue-across-the-fleet).

A pure function over the manager's store and what this session knows of each worker (its store and
whether it can be read from here), the time passed in. For every Workload the manager dispatched:
its nominated workers (`status.nominatedClusterNames`), the worker that admitted it
(`status.clusterName`) and the state of its mirror Workload there; and the mismatches as findings.

Fail closed: a worker that cannot be read from here (unreachable, stale, never synced, not mapped to
a context) makes its mirrors `unknown`, never `gone`; a manager whose Workloads cannot be read is
never said to have stopped tracking a mirror.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from .model import MULTIKUEUE_CONTROLLER, AdmissionCheck, MultiKueueCluster, Workload
from .rules.base import Finding, Severity, ViewModel, finding
from .rules.queue_order import parse_time
from .store import Store

ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"  # what Kueue puts on the mirror Workloads of a worker
GRACE = timedelta(seconds=30)  # dispatch is not atomic across clusters: mismatches younger than this are in flight

UNKNOWN = "unknown"
GONE = "gone"


@dataclass(frozen=True)
class WorkerSide:
    """One MultiKueueCluster of the manager as seen from this session.

    `store`: the worker's store (None when no context maps to it or it never synced); `reachable`:
    its data is current (connected, synced, no watch problems); `why`: what is wrong otherwise."""

    context: str | None
    store: Store | None
    reachable: bool
    why: str = ""

    @property
    def readable(self) -> bool:
        return self.reachable and self.store is not None and self.store.readable("Workload")


class JoinedWorker(ViewModel):
    name: str  # the MultiKueueCluster
    context: str | None = None  # the kube context it maps to (None: none does)
    active: bool | None = None  # its Active condition on the manager
    reason: str = ""
    reach: str = ""  # "live", or why its Workloads cannot be read from here
    mirrors: int | None = None  # mirror Workloads it holds (None: unknown)


class Dispatched(ViewModel):
    namespace: str
    name: str
    nominated: list[str] = []
    cluster_name: str | None = None
    state: str = ""  # the manager Workload's: pending | quotaReserved | admitted | finished
    # the mirror's on cluster_name: pending | quotaReserved | admitted | finished | gone | unknown
    remote_state: str = ""


class Orphan(ViewModel):
    worker: str
    namespace: str
    name: str
    state: str
    why: str


class MultiKueueJoin(ViewModel):
    manager: str = ""  # the manager's context
    unknown: str = ""  # why nothing can be joined (the manager itself is not readable now); "" when joined
    workers: list[JoinedWorker] = []
    dispatched: list[Dispatched] = []
    orphans: list[Orphan] = []
    findings: list[Finding] = []

    def remote_counts(self) -> dict[str, int]:
        """Dispatched Workloads per remote state (for a one-line summary)."""
        out: dict[str, int] = {}
        for d in self.dispatched:
            key = d.remote_state or "nominated"
            out[key] = out.get(key, 0) + 1
        return out


def is_manager(store: Store, last_known: bool = False) -> bool:
    """A MultiKueue AdmissionCheck in the store (`last_known`: also when that data is not current)."""
    return (last_known or store.readable("AdmissionCheck")) and any(
        ac.spec.controller_name == MULTIKUEUE_CONTROLLER for ac in store.list(AdmissionCheck))


def context_of(mk_name: str, mapping: Mapping[str, str], contexts: set[str] | frozenset[str]) -> str | None:
    """The kube context of a MultiKueueCluster: the explicit mapping, else the context of the same name."""
    if mk_name in mapping:
        return mapping[mk_name]
    return mk_name if mk_name in contexts else None


def _older(stamp: str | None, now: datetime, grace: timedelta) -> bool:
    t = parse_time(stamp)
    return t is None or now - t >= grace  # no timestamp: no reason to think it is in flight


def _since(wl: Workload, ctype: str) -> str | None:
    for c in wl.status.conditions:
        if c.type == ctype:
            return c.last_transition_time
    return None


def join_multikueue(manager: Store, workers: Mapping[str, WorkerSide], now: datetime, *, manager_context: str = "",
                    grace: timedelta = GRACE) -> MultiKueueJoin:
    """`workers`: what this session knows of each MultiKueueCluster, by its name (see `context_of`)."""
    findings: list[Finding] = []
    joined: list[JoinedWorker] = []
    names = sorted({*workers, *(mc.name for mc in manager.list(MultiKueueCluster))})
    for n in names:
        side = workers.get(n, WorkerSide(None, None, False, "no context maps to it"))
        mc = manager.get(MultiKueueCluster, n)
        active, reason = None, ""
        if mc is not None:
            c = mc.condition("Active")
            if c is not None:
                active, reason = c.is_true, c.reason
        mirrors = len(side.store.by_label(Workload, ORIGIN_LABEL)) if side.readable and side.store else None
        reach = "live" if side.readable else (side.why or "not readable")
        joined.append(JoinedWorker(name=n, context=side.context, active=active, reason=reason, reach=reach,
                                   mirrors=mirrors))
        if active is True and not side.readable:
            findings.append(finding(
                Severity.WARNING, "MK-WORKER-UNREACHABLE", "MultiKueueCluster", n, None,
                f"MultiKueue worker {n} is Active on the manager but cannot be read from here "
                f"({reach}{f', context {side.context}' if side.context else ''}): the state of its mirrors is unknown",
                "check the network path from here to that cluster, or map the MultiKueueCluster to a context "
                "(docs/fleet.md)"))

    dispatched: list[Dispatched] = []
    manager_readable = manager.readable("Workload")
    for wl in manager.list(Workload) if manager_readable else ():
        st = wl.status
        if not st.cluster_name and not st.nominated_cluster_names:
            continue
        ns, name = wl.metadata.namespace or "", wl.metadata.name
        remote = ""
        if st.cluster_name:
            target = workers.get(st.cluster_name)
            if target is None or not target.readable or target.store is None:
                remote = UNKNOWN
            else:
                mirror = target.store.get(Workload, name, ns)
                remote = GONE if mirror is None else mirror.derived_status
                if mirror is None and not wl.finished and _older(_since(wl, "Admitted"), now, grace):
                    findings.append(finding(
                        Severity.CRITICAL, "MK-REMOTE-GONE", "Workload", name, ns,
                        f"the manager runs {ns}/{name} on worker {st.cluster_name}, which holds no copy of it",
                        "the job is not running where the manager thinks it is: check the worker, and whether "
                        "the mirror Workload was deleted by hand"))
        dispatched.append(Dispatched(namespace=ns, name=name, nominated=list(st.nominated_cluster_names),
                                     cluster_name=st.cluster_name, state=wl.derived_status, remote_state=remote))

    orphans: list[Orphan] = []
    if manager_readable:  # otherwise nothing can be said about what the manager tracks
        for n in names:
            worker = workers.get(n)
            if worker is None or not worker.readable or worker.store is None:
                continue
            for mirror in worker.store.by_label(Workload, ORIGIN_LABEL):
                ns, name = mirror.metadata.namespace or "", mirror.metadata.name
                tracked = manager.get(Workload, name, ns)
                if tracked is None:
                    why = "the manager has no such Workload"
                elif tracked.status.cluster_name and tracked.status.cluster_name != n:
                    why = f"the manager runs it on {tracked.status.cluster_name}"
                elif tracked.finished:
                    why = "it finished on the manager"
                else:
                    continue
                if not _older(mirror.metadata.creation_timestamp, now, grace):
                    continue
                orphans.append(Orphan(worker=n, namespace=ns, name=name, state=mirror.derived_status, why=why))
                findings.append(finding(
                    Severity.WARNING, "MK-REMOTE-ORPHAN", "Workload", name, ns,
                    f"worker {n} holds a mirror of {ns}/{name} that the manager no longer tracks there ({why})",
                    "the manager's MultiKueue garbage collector should remove it: check its logs and the "
                    "worker's connection"))
    dispatched.sort(key=lambda d: (d.namespace, d.name))
    orphans.sort(key=lambda o: (o.worker, o.namespace, o.name))
    findings.sort(key=Finding.sort_key)
    return MultiKueueJoin(manager=manager_context, workers=joined, dispatched=dispatched, orphans=orphans,
                          findings=findings)
