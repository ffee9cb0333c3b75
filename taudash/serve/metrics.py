"""The Prometheus collector: metric families from the latest derived view, never a derivation.

A scrape reads one `Sample` (view + store facts taken at the tick that derived it) and turns it
into gauges. Everything is bounded by cluster configuration (flavors, ClusterQueues, workspaces,
profiles, workers, resources), never by workload count: no per-Workload series, and findings are
capped. Values a rule could not determine (None) are left out, never exported as 0.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from taudash import __version__
from taudash.engine.model import BY_KIND
from taudash.engine.store import WATCH_BOUND, AccessState, Store, WatchHealth, watch_freshness
from taudash.engine.view import ClusterView

PREFIX = "taudash_"
LABEL_VALUE_MAX = 128  # cluster strings as label values: never interpreted, always cut to this length
FINDING_SERIES_MAX = 500  # most severe first; the per-severity counts stay exact

DRAIN_STATES = ("NotDraining", "Clear", "Blocked", "Unknown")
STOP_POLICIES = ("None", "Hold", "HoldAndDrain")
MULTIKUEUE_STATES = ("NotConfigured", "Ready", "NotReady")
ACCESS_STATES = tuple(s.value for s in AccessState)
SEVERITIES = ("critical", "warning", "info")
POOL_AMOUNTS = ("inventory", "budget", "observed_budget", "reserved", "used", "headroom")


def label(value: object) -> str:
    """A label value: the cluster's string as is (the exposition format escapes it), length-capped."""
    s = "" if value is None else str(value)
    return s if len(s) <= LABEL_VALUE_MAX else s[: LABEL_VALUE_MAX - 1] + "…"


@dataclass(frozen=True)
class Sample:
    """What one tick observed: the derived view and the store facts a scrape needs."""

    view: ClusterView
    derived_at: float  # epoch seconds of the derive
    last_event_at: float | None  # the last watch event the store applied; None: none yet (snapshots)
    access: dict[str, tuple[str, float | None]] = field(default_factory=dict)  # resource -> (state, since)
    watches: dict[str, WatchHealth] = field(default_factory=dict)  # kind -> its watch (a live source's only)
    watch_bound: float = WATCH_BOUND


def sample_of(view: ClusterView, store: Store, derived_at: float) -> Sample:
    """Read under the same lock as the derive, so the facts match the view."""
    access = {BY_KIND[k].resource: (a.state.value, a.since) for k, a in store.access_states().items()}
    return Sample(view=view, derived_at=derived_at, last_event_at=store.last_event_at, access=access,
                  watches=store.watch_health(), watch_bound=store.watch_bound)


class Latest:
    """The newest Sample, handed from the tick loop to scrapes (another thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sample: Sample | None = None
        self.derivations = 0
        self.errors = 0

    def publish(self, sample: Sample) -> None:
        with self._lock:
            self._sample = sample
            self.derivations += 1

    def failed(self) -> None:
        with self._lock:
            self.errors += 1

    def read(self) -> tuple[Sample | None, int, int]:
        with self._lock:
            return self._sample, self.derivations, self.errors


def _gauge(name: str, doc: str, labels: Iterable[str] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, labels=list(labels))


def _bool(v: bool) -> float:
    return 1.0 if v else 0.0


class TaudashCollector(Collector):
    def __init__(self, latest: Latest, source_type: str, context: str | None, clock=None) -> None:
        import time

        self.latest = latest
        self.source_type = source_type
        self.context = context
        self._clock = clock or time.time

    def collect(self) -> Iterator[Metric]:
        sample, derivations, errors = self.latest.read()
        info = _gauge("build_info", "taudash build; always 1", ["version"])
        info.add_metric([__version__], 1)
        yield info
        src = _gauge("source_info", "the cluster source taudash serve reads; always 1", ["type", "context"])
        src.add_metric([label(self.source_type), label(self.context or "")], 1)
        yield src
        up = _gauge("up", "1 when a derived view of the cluster is available, 0 before the first one")
        up.add_metric([], _bool(sample is not None))
        yield up
        c = CounterMetricFamily(PREFIX + "ticks", "ticks that published a view since start")
        c.add_metric([], derivations)
        yield c
        c = CounterMetricFamily(PREFIX + "tick_errors", "ticks whose derivation failed since start")
        c.add_metric([], errors)
        yield c
        if sample is None:
            return
        yield from _freshness(sample, self._clock())
        yield from _findings(sample.view)
        yield from _pool(sample.view)
        yield from _queues(sample.view)
        yield from _workspaces(sample.view)
        yield from _profiles(sample.view)
        yield from _multikueue(sample.view)
        yield from _utilisation(sample.view)


def _freshness(s: Sample, now: float) -> Iterator[Metric]:
    g = _gauge("last_derive_timestamp_seconds", "when the exported view was derived (unix time)")
    g.add_metric([], s.derived_at)
    yield g
    if s.last_event_at is not None:
        g = _gauge("last_event_timestamp_seconds", "when the last watch event was applied (unix time)")
        g.add_metric([], s.last_event_at)
        yield g
    # Freshness is watch health: data age counts from the last event or bookmark, not the last change.
    health = watch_freshness(s.watches, now, s.watch_bound) if s.watches else None
    age = health.age if health is not None else None if s.last_event_at is None else max(0.0, now - s.last_event_at)
    if age is not None:
        g = _gauge("data_age_seconds", "seconds since the stalest watch was last heard from (an event or a bookmark)")
        g.add_metric([], age)
        yield g
    if health is not None:
        stale = set(health.stale)
        healthy = _gauge("watch_healthy", "per resource: 1 while its watch is open and heard from within the "
                                          "bound, 0 when broken or silent beyond it", ["resource"])
        heard = _gauge("watch_last_heard_timestamp_seconds", "per resource: the last event or bookmark on its "
                                                             "watch (unix time)", ["resource"])
        for kind, w in sorted(s.watches.items()):
            if w.heard_at is None:
                continue
            healthy.add_metric([label(BY_KIND[kind].resource)], _bool(kind not in stale))
            heard.add_metric([label(BY_KIND[kind].resource)], w.heard_at)
        yield healthy
        yield heard
        g = _gauge("watch_bound_seconds", "silence on a watch beyond this many seconds counts stale")
        g.add_metric([], s.watch_bound)
        yield g
    state = _gauge("access_state", "per resource: 1 for its current access state, 0 for the others",
                   ["resource", "state"])
    since = _gauge("access_state_since_timestamp_seconds",
                   "per resource: when its data became stale or unreadable (unix time)", ["resource"])
    for resource, (current, at) in sorted(s.access.items()):
        for st in ACCESS_STATES:
            state.add_metric([label(resource), st], _bool(st == current))
        if current not in ACCESS_STATES:  # a state this build does not know: still shown, as a string
            state.add_metric([label(resource), label(current)], 1)
        if at is not None:
            since.add_metric([label(resource)], at)
    yield state
    yield since


def _findings(view: ClusterView) -> Iterator[Metric]:
    counts = _gauge("findings", "number of findings per severity", ["severity"])
    for sev, n in view.counts().items():
        counts.add_metric([sev], n)
    yield counts
    g = _gauge("finding", "one series per finding (most severe first, capped); always 1",
               ["rule", "severity", "kind", "namespace", "name"])
    keys: dict[tuple[str, ...], None] = {}  # distinct series in order: two findings of a rule on an object are one
    for f in view.findings:  # sorted most severe first by derive()
        keys[(label(f.rule), f.severity.value, label(f.object.kind), label(f.object.namespace or ""),
              label(f.object.name))] = None
    kept = list(keys)[:FINDING_SERIES_MAX]
    for key in kept:
        g.add_metric(list(key), 1)
    yield g
    d = _gauge("finding_series_dropped", "findings left out of taudash_finding by the series cap")
    d.add_metric([], len(keys) - len(kept))
    yield d


def _pool(view: ClusterView) -> Iterator[Metric]:
    p = view.pool
    g = _gauge("pool_info", "the GPU pool's mode, team and cohort; always 1", ["mode", "team", "cohort"])
    g.add_metric([label(p.mode), label(p.team or ""), label(p.cohort or "")], 1)
    yield g
    if p.valid is not None:
        g = _gauge("pool_valid", "1 when the pool configuration is valid, 0 when it is not")
        g.add_metric([], _bool(p.valid))
        yield g
    for name, doc, value in (
        ("pool_established", "1 when the pool has been established", p.established),
        ("pool_zeroed", "1 when the pool budget was zeroed by a conflict", p.zeroed),
    ):
        g = _gauge(name, doc)
        g.add_metric([], _bool(value))
        yield g
    for name, doc, n in (
        ("pool_conflicts", "pool conflicts (each zeroes the budget until resolved)", len(p.conflicts)),
        ("pool_unknown_inputs", "pool inputs that cannot be read (amounts that need them are left out)",
         len(p.unknown)),
    ):
        g = _gauge(name, doc)
        g.add_metric([], n)
        yield g
    nodes = _gauge("pool_nodes", "nodes counted in each pool flavor", ["flavor"])
    excluded = _gauge("pool_excluded_nodes", "GPU-class nodes left out of each pool flavor", ["flavor"])
    for f in p.flavors:
        nodes.add_metric([label(f.name)], f.nodes)
        excluded.add_metric([label(f.name)], len(f.excluded))
    yield nodes
    yield excluded
    for amount in POOL_AMOUNTS:
        g = _gauge(f"pool_{amount}", f"pool {amount.replace('_', ' ')} per flavor and resource, in the resource's "
                   "base unit (cpu in cores, memory and storage in bytes, devices as counts)", ["flavor", "resource"])
        for f in p.flavors:
            for resource, q in sorted(getattr(f, amount).items()):
                g.add_metric([label(f.name), label(resource)], q.as_float())
        yield g


def _queues(view: ClusterView) -> Iterator[Metric]:
    counts = {
        state: _gauge(f"cluster_queue_{state}_workloads", f"{state} Workloads per ClusterQueue (its status)",
                      ["cluster_queue"])
        for state in ("pending", "reserving", "admitted", "inactive")
    }
    stop = _gauge("cluster_queue_stop_policy", "per ClusterQueue: 1 for its stopPolicy, 0 for the others",
                  ["cluster_queue", "policy"])
    drained = _gauge("cluster_queue_drained", "1 when a held ClusterQueue has no admitted Workloads left",
                     ["cluster_queue"])
    active = _gauge("cluster_queue_active", "the ClusterQueue's Active condition (1 true, 0 false)", ["cluster_queue"])
    for q in view.cluster_queues:
        cq = label(q.name)
        for state in ("pending", "reserving", "admitted", "inactive"):
            n = getattr(q, state, None)  # `inactive` exists only on views that count it
            if n is not None:
                counts[state].add_metric([cq], n)
        for policy in STOP_POLICIES:
            stop.add_metric([cq, policy], _bool(q.stop_policy == policy))
        if q.stop_policy not in STOP_POLICIES:
            stop.add_metric([cq, label(q.stop_policy)], 1)
        if q.drained is not None:
            drained.add_metric([cq], _bool(q.drained))
        if q.active is not None:
            active.add_metric([cq], _bool(q.active))
    yield from counts.values()
    yield stop
    yield drained
    yield active


def _workspaces(view: ClusterView) -> Iterator[Metric]:
    state = _gauge("workspace_drain_state", "per workspace: 1 for its drain state, 0 for the others",
                   ["workspace", "state"])
    blockers = _gauge("workspace_drain_blockers", "objects holding a workspace's drain", ["workspace"])
    unknown = _gauge("workspace_drain_unknown_inputs", "inputs a workspace's drain verdict cannot read",
                     ["workspace"])
    stale = _gauge("workspace_stale", "1 when the controller has not observed the workspace's latest generation",
                   ["workspace"])
    for w in view.workspaces:
        ws = label(w.name)
        for st in DRAIN_STATES:
            state.add_metric([ws, st], _bool(w.drain.state == st))
        if w.drain.state not in DRAIN_STATES:
            state.add_metric([ws, label(w.drain.state)], 1)
        if w.drain.draining:
            blockers.add_metric([ws], len(w.drain.blockers))
            unknown.add_metric([ws], len(w.drain.unknown))
        stale.add_metric([ws], _bool(w.stale))
    yield state
    yield blockers
    yield unknown
    yield stale


def _profiles(view: ClusterView) -> Iterator[Metric]:
    p = view.profiles
    for name, doc, value in (
        ("profiles_usable", "1 when the workload profile set passes every check", _bool(p.usable)),
        ("profiles", "workload profiles in the published set", len(p.profiles)),
        ("profiles_ready", "ready workload profiles", sum(1 for r in p.profiles if r.ready)),
    ):
        g = _gauge(name, doc)
        g.add_metric([], value)
        yield g
    if p.generation is not None:
        g = _gauge("profiles_generation", "generation of the published profile set")
        g.add_metric([], p.generation)
        yield g
    if p.profile_set_hash is not None and p.computed_hash is not None:
        g = _gauge("profiles_hash_match", "1 when the published profileSetHash matches the recomputed one")
        g.add_metric([], _bool(p.profile_set_hash == p.computed_hash))
        yield g
    g = _gauge("profiles_check_ok", "each profile-set check: 1 ok, 0 failed", ["check"])
    for c in p.checks:
        g.add_metric([label(c.id)], _bool(c.ok))
    yield g


def _multikueue(view: ClusterView) -> Iterator[Metric]:
    mk = view.multikueue
    g = _gauge("multikueue_state", "1 for MultiKueue's readiness state, 0 for the others", ["state"])
    for st in MULTIKUEUE_STATES:
        g.add_metric([st], _bool(mk.state == st))
    yield g
    g = _gauge("multikueue_ready", "1 when every MultiKueue readiness check holds")
    g.add_metric([], _bool(mk.state == "Ready"))
    yield g
    g = _gauge("multikueue_check_ok", "each MultiKueue readiness check: 1 ok, 0 failed", ["check"])
    for c in mk.checks:
        g.add_metric([label(c.id)], _bool(c.ok))
    yield g
    g = _gauge("multikueue_worker_active", "each MultiKueue worker cluster's Active condition (1 true, 0 false)",
               ["worker"])
    for w in mk.workers:
        if w.active is not None:
            g.add_metric([label(w.name)], _bool(w.active))
    yield g


def _utilisation(view: ClusterView) -> Iterator[Metric]:
    """Idle allocated GPUs per team (docs/rules.md#utilisation): only when Prometheus is configured, and the
    amounts only while utilisation is known (unknown is no series, never 0)."""
    u = view.utilisation
    if not u.enabled:
        return
    g = _gauge("utilisation_known", "1 when GPU utilisation from Prometheus is known, 0 when it is not")
    g.add_metric([], _bool(u.known))
    yield g
    if not u.known or u.gpus is None:
        return
    g = _gauge("utilisation_allocated_gpus", "GPUs held by bound, non-terminal Pods")
    g.add_metric([], u.gpus.allocated)
    yield g
    idle = _gauge("utilisation_idle_gpus", "allocated GPUs idle for at least the idle minutes, per team", ["team"])
    hours = _gauge("utilisation_idle_gpu_hours", "idle GPU-hours of those GPUs so far, per team", ["team"])
    for t in u.teams:
        idle.add_metric([label(t.team)], t.idle_gpus)
        hours.add_metric([label(t.team)], t.idle_gpu_hours)
    yield idle
    yield hours
