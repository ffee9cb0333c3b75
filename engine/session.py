"""Session: what the dashboard reads through — the store, its source, the rule config, a cached view.

Headless (no Textual). A live source will mutate the store on the event loop while the dashboard
derives views in a worker thread, so store reads and writes share `lock`: writers apply a batch of
events under it, `view()` derives under it. The derived view is cached per store revision and access
states, so an idle cluster costs nothing per tick.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from . import heap
from .identity import ClusterIdentity
from .incremental import IncrementalDeriver, derive
from .model import BY_KIND, KINDS, ClusterQueue, Cohort, LocalQueue, Node, ResourceFlavor, TauWorkspace, Workload
from .model.kinds import TAU, WORKLOAD_SOURCES
from .model.names import GPU_CLASS_LABEL, JOB_UID_LABEL, QUEUE_NAME_LABEL, TEAM_LABEL, WORKSPACE_LABEL
from .rules.base import ObjRef, RuleConfig
from .rules.cluster import api_outage
from .store import AccessState, Store
from .view import ClusterView, SourceInfo

if TYPE_CHECKING:
    from .actions import Actions
    from .rules.queue_order import QueuePositions
    from .sources.ondemand import OnDemand

DeriveFn = Callable[[Store, datetime, RuleConfig, SourceInfo], ClusterView]
# Kueue's positions for one queue: `await fetch(cq=NAME | lq=(NAMESPACE, NAME), limit=N)`.
PositionsFetch = Callable[..., Awaitable["QueuePositions"]]

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "gpu.nvidia.com")


def gpu_resource(keys: Iterable[str]) -> str | None:
    """The GPU resource name among a flavor's resources, if any (NVIDIA first)."""
    keys = set(keys)
    for k in GPU_RESOURCES:
        if k in keys:
            return k
    return next((k for k in sorted(keys) if k.endswith("/gpu")), None)


@dataclass(frozen=True)
class SyncProblem:
    """A kind whose data cannot be trusted right now; verdicts that need it are Unknown."""

    kind: str
    resource: str
    state: str
    since: float | None = None
    message: str = ""

    def describe(self, now: float | None = None) -> str:
        text = f"{self.resource} {self.state.lower()}"
        if self.since is not None and now is not None and self.state in ("Error", "Forbidden"):
            text += f" (stale {max(0, int(now - self.since))} s)"
        return text


@dataclass(frozen=True)
class Freshness:
    mode: str  # LIVE | SNAPSHOT | DEMO | AGENTS (a fleet read from agents: no cluster of its own)
    read_only: bool
    # Live: seconds since the stalest watched kind was last heard from (an event or a bookmark); without
    # watches, since the last event. None: nothing heard yet, or a snapshot.
    age: float | None
    observed_at: str | None  # a snapshot's capture time
    revision: int
    problems: tuple[SyncProblem, ...] = ()
    read_only_why: str = ""  # who asked for read-only mode (flag, env, config file); "" for a snapshot
    # The whole API lost (every kind failing, none readable): the first moment data went stale (epoch
    # seconds) and why. Every figure derived from the store is then last-known or unknown.
    unreachable: bool = False
    unreachable_since: float | None = None
    unreachable_why: str = ""
    # Freshness is watch health (engine/store.py): the kinds whose watch is broken or silent past the bound.
    stale_watches: tuple[str, ...] = ()
    watch_bound: float | None = None  # seconds; None: no watches (a snapshot)

    @property
    def watched(self) -> bool:
        return self.watch_bound is not None

    @property
    def fresh(self) -> bool:
        """Every watch open and heard from within the bound (a quiet healthy cluster stays fresh)."""
        return self.watched and self.age is not None and not self.stale_watches and not self.unreachable


@dataclass(frozen=True)
class Frame:
    """One tick's worth of data for every screen: built off the UI thread, read on it."""

    view: ClusterView
    freshness: Freshness
    now: datetime
    revision: int
    # reserved GPUs per pool flavor, one value per time bucket (None: no sample yet, never zero)
    history: dict[str, tuple[float | None, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Related:
    relation: str  # "owner", "workload", "local queue", ...
    ref: ObjRef


HISTORY_WINDOW = 1800.0  # seconds shown by the sparklines (30 min)
HISTORY_BUCKETS = 16
_RELATED_LIMIT = 50


@dataclass(frozen=True)
class SessionStats:
    """A read-only snapshot of how the session has been deriving (what benchmarks and tests observe).

    Taken under the session's lock, so its fields agree with each other."""

    incremental: bool  # views are kept current from the store's change feed (no custom derive)
    incremental_ready: bool  # the next view is a small incremental update (cheap enough to run inline)
    full_builds: int  # full derivations by the incremental deriver (a first view, a re-list, ...)
    updates: int  # incremental updates applied
    views: int  # views derived (the cache missed: the store or its access states changed)
    last_derive_seconds: float | None  # how long the newest derived view took; None before the first
    derive_seconds_total: float
    revision: int  # the store's revision now
    view_revision: int | None  # the store revision the cached view shows; None before the first view
    pending_changes: int | None  # store changes since the cached view (revisions count one per change); None before it
    last_event_at: float | None  # when the source last changed the store (epoch seconds)
    history_samples: int  # sparkline samples kept


class Session:
    """What every screen reads through. Built whole by the program (taudash/compose.py): its collaborators —
    the write path, the reads made on demand, the recorded history, the cluster's identity — are given to the
    constructor and never replaced (read-only properties)."""

    def __init__(
        self,
        store: Store,
        source: SourceInfo,
        config: RuleConfig | None = None,
        *,
        read_only: bool = False,
        read_only_why: str = "",
        demo: bool = False,
        derive_fn: DeriveFn | None = None,
        issues: tuple[str, ...] = (),
        lock: threading.RLock | None = None,
        actions: Actions | None = None,
        cluster: ClusterIdentity | Callable[[], ClusterIdentity | None] | None = None,
        queue_positions: PositionsFetch | None = None,
        on_demand: OnDemand | None = None,
        history_reader: Any = None,
    ) -> None:
        self._store = store
        self._source = source
        self._config = config or RuleConfig()
        # A snapshot is an observed revision, never something to write back to.
        self._read_only = read_only or source.type == "snapshot"
        self._read_only_why = read_only_why
        self._demo = demo
        self._issues = issues
        if actions is None:
            from .actions import Actions  # the only way to write; a read-only session holds one with no client

            actions = Actions.read_only("read-only session" if self._read_only else "no write path configured")
        self._actions = actions
        # Shared with the live source that writes the store: it applies its batches under this lock.
        self._lock = lock if lock is not None else threading.RLock()
        self._cluster = cluster
        self._queue_positions = queue_positions
        self._on_demand = on_demand
        self._history_reader = history_reader
        self._derive = derive_fn or derive
        # Without a custom derive, views are kept current from the store's change feed: a burst of
        # events re-derives only what it touched (engine.incremental), never every rule.
        self._incremental = IncrementalDeriver(store, self._config, source) if derive_fn is None else None
        self._cache_key: tuple[Any, ...] | None = None
        self._cache: ClusterView | None = None
        self._history_lock = threading.Lock()
        self._samples: deque[tuple[float, dict[str, float]]] = deque(maxlen=4096)
        self.last_frame: Frame | None = None
        self._labelled: dict[tuple[str, str], set[tuple[str, str]]] = {}  # see labelled()
        self._views = 0
        self._derive_last: float | None = None
        self._derive_total = 0.0

    # what the program gave it (never replaced) -------------------------------------------
    @property
    def store(self) -> Store:
        return self._store

    @property
    def source(self) -> SourceInfo:
        return self._source

    @property
    def config(self) -> RuleConfig:
        return self._config

    @property
    def lock(self) -> threading.RLock:
        """Store reads and the live source's writes share it (see the module's docstring)."""
        return self._lock

    @property
    def read_only(self) -> bool:
        return self._read_only

    @property
    def read_only_why(self) -> str:
        """Who asked for read-only mode, when an operator did (the header badge shows it)."""
        return self._read_only_why

    @property
    def demo(self) -> bool:
        return self._demo

    @property
    def issues(self) -> tuple[str, ...]:
        """Objects the source could not load ("file:line: why"), shown once."""
        return self._issues

    @property
    def actions(self) -> Actions:
        """The only way to write (engine/actions.py); a read-only session's holds no client at all."""
        return self._actions

    @property
    def cluster(self) -> ClusterIdentity | None:
        """The cluster this session shows, once known: workflows journaled on another cluster are never
        offered for resume here. A fleet member's session exists before its cluster answers: it is given
        a function that returns the identity once read."""
        return self._cluster() if callable(self._cluster) else self._cluster

    @property
    def queue_positions(self) -> PositionsFetch | None:
        """Kueue's queue positions for one queue, fetched on demand (the live source's pending_workloads);
        None (a snapshot): the Queue screen estimates the order itself."""
        return self._queue_positions

    @property
    def on_demand(self) -> OnDemand | None:
        """Reads for the one object a detail screen shows — its whole document, its Events — asked while the
        screen is open (engine/sources/ondemand.py); None: a snapshot, nothing to ask."""
        return self._on_demand

    @property
    def history_reader(self) -> Any:
        """A read-only handle on this cluster's recorded history (engine/history/reader.py); None: the
        History screen says nothing is recorded."""
        return self._history_reader

    # mode -------------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        if self.demo or self.source.type == "sim":
            return "DEMO"
        if self.source.type == "agents":  # a fleet read from agents' documents (the programs' agents module)
            return "AGENTS"
        return "LIVE" if self.source.type == "kube" else "SNAPSHOT"

    @contextmanager
    def writing(self) -> Iterator[Store]:
        """For live sources: apply a batch of events while no derive reads the store."""
        with self.lock:
            yield self.store

    # derived state -----------------------------------------------------------------------
    def _key(self) -> tuple[Any, ...]:
        acc = tuple((k, a.state.value, a.since) for k, a in sorted(self.store.access_states().items()))
        # a new utilisation reading from Prometheus moves the view without any object changing
        return (self.store.revision, acc, self._config.utilisation.revision())

    def view(self, now: datetime) -> ClusterView:
        """The derived view; re-derived only when the store's revision or access states changed."""
        with self.lock:
            key = self._key()
            if key != self._cache_key or self._cache is None:
                started = time.perf_counter()
                if self._incremental is not None:
                    builds = self._incremental.full_builds
                    self._cache = self._incremental.view(now)
                    if self._incremental.full_builds != builds:
                        # A full build makes ~10 objects per Workload that live until the next one:
                        # the program's memory policy may move them out of the cyclic GC's reach.
                        heap.current().settled()
                else:
                    self._cache = self._derive(self.store, now, self.config, self.source)
                took = time.perf_counter() - started
                self._views += 1
                self._derive_last = took
                self._derive_total += took
                self._cache_key = key
                self._sample(now.timestamp(), self._cache)
            return self._cache

    def labelled(self, kind: str, label: str) -> int:
        """How many `kind` objects carry `label` (any value). The first call scans the kind once; the
        count then follows the store's change feed, so a screen that asks every tick (the Fleet's
        MultiKueue role over 100k Workloads) does not scan every tick."""
        with self.lock:
            keys = self._labelled.get((kind, label))
            if keys is None:
                keys = self._labelled[(kind, label)] = {
                    (o.metadata.namespace or "", o.metadata.name) for o in self.store.list(kind)
                    if label in (o.metadata.labels or {})}
                self.store.subscribe(partial(self._follow_label, kind, label, keys))
            return len(keys)

    def _follow_label(self, kind: str, label: str, keys: set[tuple[str, str]], change: Any) -> None:
        if change.kind != kind:
            return
        if change.type == "RESET":
            keys.clear()
            keys.update((o.metadata.namespace or "", o.metadata.name) for o in self.store.list(kind)
                        if label in (o.metadata.labels or {}))
            return
        key = (change.namespace or "", change.name)
        obj = self.store.get(kind, change.name, change.namespace or None) if change.type != "DELETED" else None
        if obj is not None and label in (obj.metadata.labels or {}):
            keys.add(key)
        else:
            keys.discard(key)

    def waiting_changes(self, old: list[Any], new: list[Any]) -> set[tuple[str, str]] | None:
        """(namespace, name) of the waiting rows that differ between two views' waiting lists, or None
        when the session cannot tell (the caller then compares them whole)."""
        with self.lock:
            return self._incremental.waiting_changes(old, new) if self._incremental is not None else None

    def stats(self) -> SessionStats:
        """How the session has been deriving, as one consistent snapshot (see SessionStats)."""
        with self.lock:
            inc = self._incremental
            shown = self._cache_key[0] if self._cache_key is not None else None
            with self._history_lock:
                samples = len(self._samples)
            return SessionStats(
                incremental=inc is not None,
                incremental_ready=inc is not None and self._cache is not None and inc.cheap(),
                full_builds=inc.full_builds if inc is not None else 0,
                updates=inc.updates if inc is not None else 0,
                views=self._views,
                last_derive_seconds=self._derive_last,
                derive_seconds_total=self._derive_total,
                revision=self.store.revision,
                view_revision=shown,
                pending_changes=None if shown is None else self.store.revision - shown,
                last_event_at=self.store.last_event_at,
                history_samples=samples,
            )

    def freshness(self, now: datetime) -> Freshness:
        ts = now.timestamp()
        last = self.store.last_event_at
        watches = self.store.watch_health()
        health = self.store.watch_freshness(ts) if watches else None
        problems = []
        states = self.store.access_states()
        outage = api_outage(states)
        for kind, acc in sorted(states.items()):
            info = BY_KIND[kind]
            if acc.state is AccessState.SYNCED or (acc.state is AccessState.ABSENT and info.optional):
                continue
            problems.append(SyncProblem(kind, info.resource, acc.state.value, acc.since, acc.message))
        return Freshness(
            mode=self.mode,
            read_only=self.read_only,
            age=health.age if health is not None else None if last is None else max(0.0, ts - last),
            observed_at=self.source.observed_at,
            revision=self.store.revision,
            problems=tuple(problems),
            read_only_why=self.read_only_why if self.read_only else "",
            unreachable=outage is not None,
            unreachable_since=outage[0] if outage else None,
            unreachable_why=outage[1] if outage else "",
            stale_watches=health.stale if health is not None else (),
            watch_bound=health.bound if health is not None else None,
        )

    def frame(self, now: datetime) -> Frame:
        """Everything a tick renders. Safe to call from a worker thread."""
        view = self.view(now)
        fr = Frame(
            view=view,
            freshness=self.freshness(now),
            now=now,
            revision=self.store.revision,
            history=self.history(now.timestamp(), [f.name for f in view.pool.flavors]),
        )
        self.last_frame = fr
        return fr

    # history ------------------------------------------------------------------------------
    def _sample(self, ts: float, view: ClusterView) -> None:
        values: dict[str, float] = {}
        for f in view.pool.flavors:
            gpu = gpu_resource(f.reserved.keys() | f.inventory.keys() | f.budget.keys())
            if gpu is not None:
                q = f.reserved.get(gpu)
                values[f.name] = q.as_float() if q is not None else 0.0
        with self._history_lock:
            self._samples.append((ts, values))

    def seed_history(self, samples: list[tuple[float, dict[str, float]]]) -> None:
        """Start the sparklines from recorded samples (time, {flavor: reserved GPUs}), oldest first,
        so they survive a restart; live samples continue after them."""
        with self._history_lock:
            live = list(self._samples)
            self._samples.clear()
            self._samples.extend(s for s in samples if not live or s[0] < live[0][0])
            self._samples.extend(live)

    def history(
        self, now: float, flavors: list[str], buckets: int = HISTORY_BUCKETS, window: float = HISTORY_WINDOW
    ) -> dict[str, tuple[float | None, ...]]:
        """Reserved GPUs per flavor in time buckets ending at `now`: each bucket holds the last value
        sampled at or before its end; buckets before the first sample are None (not zero)."""
        with self._history_lock:
            samples = list(self._samples)
        step = window / buckets
        ends = [now - window + step * (i + 1) for i in range(buckets)]
        out: dict[str, tuple[float | None, ...]] = {}
        for name in flavors:
            series: list[float | None] = []
            j, last = 0, None
            for end in ends:
                while j < len(samples) and samples[j][0] <= end:
                    last = samples[j][1].get(name, last)
                    j += 1
                series.append(last)
            out[name] = tuple(series)
        return out

    # objects ------------------------------------------------------------------------------
    def get(self, kind: str, name: str, namespace: str | None = None) -> Any:
        if kind not in BY_KIND:
            return None
        return self.store.get(kind, name, namespace)

    def raw(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        if kind not in BY_KIND:
            return None
        return self.store.raw(kind, name, namespace)

    def yaml_source(self, kind: str, name: str,
                    namespace: str | None = None) -> tuple[Any, dict[str, Any] | None, bool]:
        """What the object view shows as YAML: (the object, its document, whether the document is whole).
        Kinds the source keeps no raw copy of (tens of thousands of Workloads) show the fields taudash reads."""
        obj = self.get(kind, name, namespace)
        raw = self.raw(kind, name, namespace)
        if raw is not None or obj is None:
            return obj, raw, raw is not None
        return obj, obj.model_dump(by_alias=True, mode="json", exclude_none=True), False

    def labels(self, kind: str, name: str, namespace: str | None = None) -> dict[str, str]:
        obj = self.get(kind, name, namespace)
        return dict(obj.metadata.labels) if obj is not None else {}

    def objects(self) -> list[ObjRef]:
        """Every object the store holds (palette search), grouped by kind."""
        with self.lock:
            return [
                ObjRef(kind=k.kind, namespace=o.metadata.namespace, name=o.metadata.name)
                for k in KINDS
                for o in self.store.list(k.kind)
            ]

    def related(self, ref: ObjRef) -> list[Related]:
        """Objects linked to `ref`: owners and owned, Workload ↔ queues ↔ flavors ↔ nodes, workspace ↔ namespace."""
        with self.lock:
            return _related(self, ref)


def _ref(kind: str, name: str, namespace: str | None = None) -> ObjRef:
    return ObjRef(kind=kind, namespace=namespace or None, name=name)


def _related(s: Session, ref: ObjRef) -> list[Related]:
    store = s.store
    obj = s.get(ref.kind, ref.name, ref.namespace)
    if obj is None:
        return []
    out: list[Related] = []
    seen: set[tuple[Any, ...]] = set()

    def add(relation: str, kind: str, name: str | None, ns: str | None = None) -> None:
        if not name or kind not in BY_KIND:
            return
        ns = ns if BY_KIND[kind].namespaced else None
        key = (kind, ns, name)  # one row per object: the first (most direct) relation wins
        if key in seen or (kind, ns or None, name) == (ref.kind, ref.namespace, ref.name):
            return
        seen.add(key)
        if len(out) < _RELATED_LIMIT * 4:
            out.append(Related(relation, _ref(kind, name, ns)))

    ns = obj.metadata.namespace
    for o in obj.metadata.owner_references:
        kind = _owner_kind(o.kind, o.api_version)
        add("owner", kind, o.name, ns)
    if obj.metadata.uid:
        for child in store.by_owner(obj.metadata.uid)[:_RELATED_LIMIT]:
            add("owns", _kind_name(child), child.name, child.namespace)

    kind = ref.kind
    sysns = s.config.system_namespace
    if kind in WORKLOAD_SOURCES:
        q = obj.labels.get(QUEUE_NAME_LABEL)
        if kind == "Deployment":
            q = q or obj.spec.template.metadata.labels.get(QUEUE_NAME_LABEL)
        add("local queue", "LocalQueue", q, ns)
        if obj.metadata.uid:
            for wl in store.by_label(Workload, JOB_UID_LABEL, obj.metadata.uid, ns):
                add("workload", "Workload", wl.name, ns)
    elif kind == "Workload":
        add("local queue", "LocalQueue", obj.spec.queue_name, ns)
        lq = store.get(LocalQueue, obj.spec.queue_name, ns) if obj.spec.queue_name else None
        if obj.status.admission and obj.status.admission.cluster_queue:
            add("cluster queue (admitted)", "ClusterQueue", obj.status.admission.cluster_queue)
            for psa in obj.status.admission.pod_set_assignments:
                for flavor in sorted(set(psa.flavors.values())):
                    add("flavor", "ResourceFlavor", flavor)
                    for node in _flavor_nodes(s, flavor)[:_RELATED_LIMIT]:
                        add("node (of flavor)", "Node", node)
        elif lq is not None:
            add("cluster queue", "ClusterQueue", lq.spec.cluster_queue)
    elif kind == "LocalQueue":
        add("cluster queue", "ClusterQueue", obj.spec.cluster_queue)
        for wl in store.list(Workload, ns):
            if wl.spec.queue_name == obj.name:
                add("workload", "Workload", wl.name, ns)
        add("namespace", "Namespace", ns)
    elif kind == "ClusterQueue":
        add("cohort", "Cohort", obj.spec.cohort_name)
        for lq in store.list(LocalQueue):
            if lq.spec.cluster_queue == obj.name:
                add("local queue", "LocalQueue", lq.name, lq.namespace)
        for ac in obj.spec.admission_check_names:
            add("admission check", "AdmissionCheck", ac)
        for rg in obj.spec.resource_groups:
            for fl in rg.flavors:
                add("flavor", "ResourceFlavor", fl.name)
        ws = obj.labels.get(WORKSPACE_LABEL)
        add("workspace", "TauWorkspace", ws, sysns)
    elif kind == "Cohort":
        add("parent", "Cohort", obj.spec.parent_name)
        for cq in store.list(ClusterQueue):
            if cq.spec.cohort_name == obj.name:
                add("member", "ClusterQueue", cq.name)
        for c in store.list(Cohort):
            if c.spec.parent_name == obj.name:
                add("child", "Cohort", c.name)
        add("team", "TauTeam", obj.labels.get(TEAM_LABEL), sysns)
    elif kind == "ResourceFlavor":
        for node in _flavor_nodes(s, obj.name)[:_RELATED_LIMIT]:
            add("node", "Node", node)
    elif kind == "Node":
        cls = obj.labels.get(GPU_CLASS_LABEL)
        if cls:
            add("pool flavor", "ResourceFlavor", f"taugrid-gpu-{cls}")
        add("csi node", "CSINode", obj.name)
    elif kind == "TauWorkspace":
        target = obj.status.target.resolved_namespace or obj.desired_namespace
        add("namespace", "Namespace", target)
        if obj.desired_namespace != target:
            add("new namespace", "Namespace", obj.desired_namespace)
        add("team", "TauTeam", obj.team, sysns)
        add("local queue", "LocalQueue", obj.status.queue.local_queue or obj.spec.queue, target)
        add("cluster queue", "ClusterQueue", obj.status.queue.cluster_queue)
        if obj.spec.workload_identity:
            add("service account", "ServiceAccount", obj.spec.workload_identity.service_account_name, target)
    elif kind == "TauTeam":
        add("cohort", "Cohort", obj.status.cohort or f"tau-team-{obj.name}")
        for ws in store.list(TauWorkspace, sysns):
            if ws.team == obj.name:
                add("workspace", "TauWorkspace", ws.name, sysns)
    elif kind == "Namespace":
        for ws in store.list(TauWorkspace, sysns):
            if obj.name in (ws.status.target.resolved_namespace, ws.desired_namespace):
                add("workspace", "TauWorkspace", ws.name, sysns)
        for lq in store.list(LocalQueue, obj.name):
            add("local queue", "LocalQueue", lq.name, obj.name)
    elif kind == "AdmissionCheck":
        params = obj.spec.parameters
        if params is not None and params.kind == "MultiKueueConfig":
            add("config", "MultiKueueConfig", params.name)
    elif kind == "MultiKueueConfig":
        for c in obj.spec.clusters:
            add("worker", "MultiKueueCluster", c)
    elif kind == "PersistentVolumeClaim":
        add("storage class", "StorageClass", obj.spec.storage_class_name)
    return out


def _flavor_nodes(s: Session, flavor: str) -> list[str]:
    rf = s.store.get(ResourceFlavor, flavor)
    if flavor.startswith("taugrid-gpu-"):
        cls = flavor[len("taugrid-gpu-") :]
        return [n.name for n in s.store.by_label(Node, GPU_CLASS_LABEL, cls)]
    if rf is None or not rf.spec.node_labels:
        return []  # empty nodeLabels select every node: too broad to list as "related"
    return [n.name for n in s.store.list(Node) if all(n.labels.get(k) == v for k, v in rf.spec.node_labels.items())]


def _owner_kind(kind: str, api_version: str) -> str:
    if api_version.startswith(TAU + "/") and kind in ("Cluster", "Team", "Workspace"):
        return "Tau" + kind
    return kind


def _kind_name(obj: Any) -> str:
    for k in KINDS:
        if type(obj) is k.model:
            return k.kind
    return type(obj).__name__
