"""The recorder: what a tick's derived view and store say, written to the history database.

`Recorder.record(view, store, now)` is called per tick with the time (it never reads a clock). It has
two halves so a caller can hold the store's lock only for the cheap one:

* `collect(view, store, now)` reads the view and the Workloads that changed since the last call (the
  store's change feed; a full scan the first time or when the feed no longer reaches back) into an
  `Observation` — plain values, nothing shared with the store;
* `write(observation)` writes it in one transaction: a sample per series when one is due (at most
  every `interval` seconds), and the events seen (admission waits, evictions, findings opened and
  closed, drains started, changed and cleared).

`maintain(now)` applies retention (retention.py) in bounded steps; `record` calls it when due.
`RecorderThread` runs collect+write beside a dashboard Session on its own thread.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Context, Decimal
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model import ClusterQueue, LocalQueue, Workload
from . import db as hdb
from .retention import Retention, maintain
from .writer_lock import RecorderBusy, WriterLock

if TYPE_CHECKING:
    from ..store import Store
    from ..view import ClusterView

SeriesKey = tuple[str, str, str, str, str]  # kind, name, flavor, resource, metric
FindingKey = tuple[str, str, str, str]  # rule, object kind, namespace, name

FLAVOR_METRICS = ("budget", "reserved", "used", "headroom")
QUEUE_METRICS = ("pending", "reserving", "admitted", "inactive")
_ZERO = Decimal(0)
_EXACT = Context(prec=60)  # the quantities' own precision (model/quantity.py): sums stay exact


def epoch(now: datetime | float) -> float:
    return now.timestamp() if isinstance(now, datetime) else float(now)


def parse_time(stamp: str | None) -> float | None:
    """Epoch seconds of a Kubernetes timestamp (RFC 3339), None when absent or unreadable."""
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class Wait:
    uid: str
    namespace: str
    name: str
    queue: str
    cluster_queue: str | None
    team: str | None
    flavor: str | None
    created: float | None
    reserved: float | None
    admitted: float


@dataclass(frozen=True)
class Eviction:
    uid: str
    at: float
    namespace: str
    name: str
    cluster_queue: str | None
    cohort: str | None
    team: str | None
    reason: str
    message: str
    preemption_reason: str | None = None
    preemptor_uid: str | None = None
    preemptor_namespace: str | None = None
    preemptor_name: str | None = None
    preemptor_cluster_queue: str | None = None


@dataclass(frozen=True)
class DrainState:
    state: str
    mode: str | None = None
    old_namespace: str | None = None
    new_namespace: str | None = None


@dataclass
class Observation:
    """One tick, extracted: written by `Recorder.write` without touching the store again."""

    now: float
    revision: int | None = None  # the store revision the Workloads were read at
    samples: dict[SeriesKey, float | None] | None = None  # None: no sample due this tick
    waits: list[Wait] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    findings: dict[FindingKey, tuple[str, str]] = field(default_factory=dict)  # key -> (severity, message)
    drains: dict[str, DrainState] | None = None  # None: workspaces unreadable, keep the last known states


# --- pure extraction -----------------------------------------------------------------------------------


def _num(q: Any) -> float | None:
    return None if q is None else q.as_float()


def flavor_values(f: Any) -> dict[SeriesKey, float | None]:
    """A pool flavor's budget/reserved/used/headroom per resource."""
    out: dict[SeriesKey, float | None] = {}
    maps = {m: getattr(f, m) for m in FLAVOR_METRICS}
    for resource in sorted(set().union(*(m.keys() for m in maps.values()))):
        for metric, values in maps.items():
            out[("flavor", f.name, f.name, resource, metric)] = _num(values.get(resource))
    return out


def queue_values(cq: Any) -> dict[SeriesKey, float | None]:
    """A ClusterQueue's Workload counts (inactive when the view has it, else NULL)."""
    out: dict[SeriesKey, float | None] = {}
    for metric in QUEUE_METRICS:
        value = getattr(cq, metric, None)
        out[("queue", cq.name, "", "", metric)] = None if value is None else float(value)
    return out


def cohort_values(cohort: Any) -> dict[SeriesKey, float | None]:
    """A Cohort's borrowed quantity per flavor and resource."""
    return {("cohort", cohort.name, fl.name, r.name, "borrowed"): _num(r.borrowed)
            for fl in cohort.flavors for r in fl.resources}


def team_values(team: str, queues: Iterable[Any]) -> dict[SeriesKey, float | None]:
    """A team's reserved and used quantity: its workspace queues summed per flavor and resource, exactly
    (the quantities' decimals: a sum kept by adding and removing queues is the same sum)."""
    sums: dict[SeriesKey, Decimal] = {}
    for pq in queues:
        for key, value in _team_terms(team, pq).items():
            sums[key] = _EXACT.add(sums.get(key, _ZERO), value)
    return {key: float(value) for key, value in sums.items()}


def _team_terms(team: str, pq: Any) -> dict[SeriesKey, Decimal]:
    """One workspace queue's part of its team's sums."""
    return {("team", team, flavor, resource, metric): qty.value
            for metric in ("reserved", "used") for flavor, resources in getattr(pq, metric).items()
            for resource, qty in resources.items()}


Shape = tuple[tuple[tuple[str, tuple[str, ...]], ...], ...]  # per metric: (flavor, its resources) in order


def _row_values(pq: Any) -> tuple[Shape, list[Decimal]]:
    """A queue row's reserved and used quantities: which flavors and resources it has, and their values in
    that order (no key built: most of a changed row's values are the ones it had)."""
    shape = []
    values: list[Decimal] = []
    for metric in ("reserved", "used"):
        flavors = getattr(pq, metric)
        shape.append(tuple((flavor, tuple(resources)) for flavor, resources in flavors.items()))
        for resources in flavors.values():
            values.extend([qty.value for qty in resources.values()])
    return tuple(shape), values


def _no_object() -> None:
    return None


def _weak(o: Any) -> Callable[[], Any]:
    try:
        return weakref.ref(o)
    except TypeError:  # an object without weak references (a test's namespace) is never the same one
        return _no_object


class TeamSums:
    """One team's sums kept by its queue rows. A row that is the very object of the last pass counts as it
    did (a weak reference: the recorder keeps no view alive); a new row's values replace its old ones and
    only the values that differ move a sum; a gone row's leave. Exact decimals, so the sums are the ones
    `team_values` makes from nothing."""

    def __init__(self, team: str) -> None:
        self.team = team
        self._rows: dict[str, tuple[Callable[[], Any], Shape, list[Decimal]]] = {}
        self._keys: dict[Shape, list[SeriesKey]] = {}  # a row shape's series keys, in its values' order
        self._sums: dict[SeriesKey, Decimal] = {}
        self._count: dict[SeriesKey, int] = {}  # how many rows add to each sum (a sum no row has goes)

    def update(self, queues: list[Any]) -> dict[SeriesKey, float | None] | None:
        """The team's values after this pass's rows, or None when they are what they were."""
        rows, sums, moved = self._rows, self._sums, False
        names = set()
        for pq in queues:
            name = pq.cluster_queue
            names.add(name)
            row = rows.get(name)
            if row is not None and row[0]() is pq:
                continue
            shape, values = _row_values(pq)
            if row is not None and row[1] == shape:
                if row[2] != values:
                    moved = True
                    for key, was, now in zip(self._keys_of(shape), row[2], values, strict=True):
                        if was != now:
                            sums[key] = _EXACT.add(_EXACT.subtract(sums[key], was), now)
            else:
                moved = True
                if row is not None:
                    self._leave(row[1], row[2])
                self._enter(shape, values)
            rows[name] = (_weak(pq), shape, values)
        for gone in [n for n in rows if n not in names]:
            moved = True
            _, shape, values = rows.pop(gone)
            self._leave(shape, values)
        if not moved:
            return None
        return {key: float(value) for key, value in sums.items()}

    def _keys_of(self, shape: Shape) -> list[SeriesKey]:
        keys = self._keys.get(shape)
        if keys is None:
            if len(self._keys) > 64:  # shapes a team no longer has (flavors come and go over weeks)
                self._keys.clear()
            keys = self._keys[shape] = [("team", self.team, flavor, resource, metric)
                                        for metric, flavors in zip(("reserved", "used"), shape, strict=True)
                                        for flavor, resources in flavors for resource in resources]
        return keys

    def _enter(self, shape: Shape, values: list[Decimal]) -> None:
        sums, count = self._sums, self._count
        for key, value in zip(self._keys_of(shape), values, strict=True):
            count[key] = count.get(key, 0) + 1
            sums[key] = _EXACT.add(sums.get(key, _ZERO), value)

    def _leave(self, shape: Shape, values: list[Decimal]) -> None:
        sums, count = self._sums, self._count
        for key, value in zip(self._keys_of(shape), values, strict=True):
            left = count[key] - 1
            if left:
                count[key] = left
                sums[key] = _EXACT.subtract(sums[key], value)
            else:
                del count[key], sums[key]


def _team_queues(view: Any) -> dict[str, list[Any]]:
    teams: dict[str, list[Any]] = {}
    for pq in view.pool.queues:
        if pq.team:
            teams.setdefault(pq.team, []).append(pq)
    return teams


def view_samples(view: Any) -> dict[SeriesKey, float | None]:
    """Every series value the view holds: per pool flavor and resource budget/reserved/used/headroom,
    per ClusterQueue the Workload counts (inactive when the view has it, else NULL), per Cohort the
    borrowed quantity per flavor and resource, per team the reserved and used quantity of its
    workspace queues per flavor and resource."""
    out: dict[SeriesKey, float | None] = {}
    for f in view.pool.flavors:
        out.update(flavor_values(f))
    for cq in view.cluster_queues:
        out.update(queue_values(cq))
    for cohort in view.cohorts:
        out.update(cohort_values(cohort))
    for team, queues in _team_queues(view).items():
        out.update(team_values(team, queues))
    return out


_queue_counts = attrgetter(*QUEUE_METRICS)  # what queue_values converts of a ClusterQueue view


class SampleValues:
    """`view_samples`, part by part, converting only the parts that changed: a pool flavor, a
    ClusterQueue, a Cohort, a team. The incremental deriver keeps the view objects of what did not
    change (a pool flavor, a Cohort, a team's queue rows: rules/pool.py KeptQueues), so a part whose
    objects are the very ones of the last pass (compared by identity; the parts hold them, so an identity
    is never reused meanwhile) keeps its values. A ClusterQueue's view is rebuilt whenever the quota tree
    moves, so its part is compared by its four counts instead (and holds no view). A team's sums are kept
    by its queue rows (TeamSums): only the rows that are new are converted. Same values as `view_samples`.

    The values of every part are kept merged (`_out`), so a pass touches only the parts that changed
    and the ones that went away, then copies the merged values once."""

    def __init__(self) -> None:
        self._parts: dict[tuple[str, str], tuple[Any, dict[SeriesKey, float | None]]] = {}
        # A fleet's hundreds of ClusterQueues, by name (no key made per queue and pass): (counts, values).
        self._queues: dict[str, tuple[tuple[Any, ...], dict[SeriesKey, float | None]]] = {}
        self._out: dict[SeriesKey, float | None] = {}
        self._teams: dict[str, TeamSums] = {}

    def __call__(self, view: Any) -> dict[SeriesKey, float | None]:
        parts, out = self._parts, self._out
        seen: set[tuple[str, str]] = set()
        fresh: list[tuple[tuple[str, str], Any, dict[SeriesKey, float | None]]] = []
        for kind, objects, convert in (("flavor", view.pool.flavors, flavor_values),
                                       ("cohort", view.cohorts, cohort_values)):
            for o in objects:
                key = (kind, o.name)
                seen.add(key)
                last = parts.get(key)
                if last is None or last[0] is not o:
                    fresh.append((key, o, convert(o)))
        for team, rows in _team_queues(view).items():
            key = ("team", team)
            seen.add(key)
            sums = self._teams.get(team)
            if sums is None:
                sums = self._teams[team] = TeamSums(team)
            values = sums.update(rows)
            if values is not None:
                fresh.append((key, sums, values))
        for gone in [t for t in self._teams if ("team", t) not in seen]:
            del self._teams[gone]
        # What went away or changed first leaves the merged values (a key may move between parts), then
        # the new values go in.
        for key in [k for k in parts if k not in seen]:
            for series in parts.pop(key)[1]:
                out.pop(series, None)
        for key, _, _ in fresh:
            last = parts.get(key)
            if last is not None:
                for series in last[1]:
                    out.pop(series, None)
        for key, kept, values in fresh:
            parts[key] = (kept, values)
            out.update(values)
        self._queue_values(view.cluster_queues, out)
        return dict(out)

    def _queue_values(self, views: list[Any], out: dict[SeriesKey, float | None]) -> None:
        queues = self._queues
        names = set()
        for cq in views:
            names.add(cq.name)
            counts = _queue_counts(cq)
            last = queues.get(cq.name)
            if last is None or last[0] != counts:
                values = queue_values(cq)
                if last is not None:
                    for series in last[1]:
                        out.pop(series, None)
                queues[cq.name] = (counts, values)
                out.update(values)
        if len(names) != len(queues):
            for gone in [n for n in queues if n not in names]:
                for series in queues.pop(gone)[1]:
                    out.pop(series, None)


def view_findings(view: Any) -> dict[FindingKey, tuple[str, str]]:
    out: dict[FindingKey, tuple[str, str]] = {}
    for f in view.findings:  # sorted by severity: the first finding of a key is its worst
        key = (f.rule, f.object.kind, f.object.namespace or "", f.object.name)
        out.setdefault(key, (f.severity.value, f.message))
    return out


def view_drains(view: Any) -> dict[str, DrainState]:
    return {
        ws.name: DrainState(ws.drain.state, ws.drain.mode, ws.drain.old_namespace, ws.drain.new_namespace)
        for ws in view.workspaces
        if ws.drain.state != "NotDraining"
    }


def _gpu_flavor(wl: Workload) -> str | None:
    """The flavor the Workload's GPU request was admitted to (else its first assigned flavor)."""
    first: str | None = None
    admission = wl.status.admission
    for psa in admission.pod_set_assignments if admission else ():
        for resource, flavor in psa.flavors.items():
            if "gpu" in resource:
                return flavor
            first = first or flavor
    return first


def team_of_namespace(view: Any) -> dict[str | None, str | None]:
    return {ws.namespace: ws.team for ws in view.workspaces if ws.namespace}


class _Context:
    """Lookups the Workload extraction needs, built once per collect and only when asked."""

    def __init__(self, view: ClusterView, store: Store, uids: dict[str, tuple[str | None, str]] | None = None,
                 team_of_ns: dict[str | None, str | None] | None = None) -> None:
        self.store = store
        self.team_of_ns = team_of_ns if team_of_ns is not None else team_of_namespace(view)
        self._uids = uids  # uid -> (namespace, name), kept by the recorder from the change feed
        self._by_uid: dict[str, Any] | None = None

    def cohort(self, cluster_queue: str) -> str | None:
        """The queue's Cohort (as its view says: spec.cohort; a lookup, not a map of every queue per pass)."""
        cq = self.store.get(ClusterQueue, cluster_queue)
        return (cq.spec.cohort_name or None) if cq is not None else None

    def cluster_queue(self, wl: Workload) -> str | None:
        if wl.status.admission and wl.status.admission.cluster_queue:
            return wl.status.admission.cluster_queue
        # An evicted Workload has lost its admission: its LocalQueue says where it queues.
        lq = self.store.get(LocalQueue, wl.spec.queue_name, wl.metadata.namespace) if wl.spec.queue_name else None
        return (lq.spec.cluster_queue or None) if lq is not None else None

    def workload(self, uid: str) -> Any:
        if self._uids is not None:  # a lookup, not a scan of every Workload per eviction pass
            key = self._uids.get(uid)
            wl = self.store.get(Workload, key[1], key[0]) if key is not None else None
            return wl if wl is not None and wl.metadata.uid == uid else None
        if self._by_uid is None:
            self._by_uid = {w.metadata.uid: w for w in self.store.list(Workload) if w.metadata.uid}
        return self._by_uid.get(uid)


def workload_wait(wl: Any, ctx: _Context) -> Wait | None:
    """creation -> QuotaReserved -> Admitted of an admitted Workload (None when not admitted)."""
    admitted = wl.condition("Admitted")
    if admitted is None or admitted.status != "True" or not wl.metadata.uid:
        return None
    at = parse_time(admitted.last_transition_time)
    if at is None:
        return None
    reserved = wl.condition("QuotaReserved")
    reserved_at = parse_time(reserved.last_transition_time) if reserved and reserved.status == "True" else None
    ns = wl.metadata.namespace or ""
    return Wait(wl.metadata.uid, ns, wl.metadata.name, wl.spec.queue_name, ctx.cluster_queue(wl),
                ctx.team_of_ns.get(ns), _gpu_flavor(wl), parse_time(wl.metadata.creation_timestamp), reserved_at, at)


def workload_eviction(wl: Any, ctx: _Context) -> Eviction | None:
    """The Workload's current eviction (Evicted=True), with the preemptor when Kueue names it."""
    ev = wl.condition("Evicted")
    if ev is None or ev.status != "True" or not wl.metadata.uid:
        return None
    at = parse_time(ev.last_transition_time)
    if at is None:  # required by the API; without it there is no time and nothing to de-duplicate by
        return None
    ns = wl.metadata.namespace or ""
    cq = ctx.cluster_queue(wl)
    preempted = wl.condition("Preempted")
    preempted = preempted if preempted is not None and preempted.status == "True" else None
    uid = hdb.preemptor_uid(ev.message) or (hdb.preemptor_uid(preempted.message) if preempted else None)
    preemptor = ctx.workload(uid) if uid else None
    return Eviction(
        uid=wl.metadata.uid,
        at=at,
        namespace=ns,
        name=wl.metadata.name,
        cluster_queue=cq,
        cohort=ctx.cohort(cq) if cq else None,
        team=ctx.team_of_ns.get(ns),
        reason=ev.reason,
        message=ev.message,
        preemption_reason=preempted.reason if preempted else None,
        preemptor_uid=uid,
        preemptor_namespace=preemptor.metadata.namespace if preemptor is not None else None,
        preemptor_name=preemptor.metadata.name if preemptor is not None else None,
        preemptor_cluster_queue=ctx.cluster_queue(preemptor) if preemptor is not None else None,
    )


# --- the recorder --------------------------------------------------------------------------------------


class Recorder:
    def __init__(
        self,
        path: Path | str,
        *,
        interval: float = 10.0,
        retention: Retention | None = None,
        maintenance_every: float = 60.0,
        owner: str | None = None,
    ) -> None:
        self.path = Path(path)
        # One recorder per file (writer_lock.py): RecorderBusy while another process records it.
        self._writer = WriterLock(self.path)
        self._writer.acquire(owner)
        try:
            self.conn = hdb.connect(self.path)  # NewerSchema: the caller decides (the dashboard records nothing)
        except BaseException:
            self._writer.release()
            raise
        self.interval = interval
        self.retention = retention or Retention()
        self.maintenance_every = maintenance_every
        self._series: dict[SeriesKey, int] = dict(self._load_series())
        last = self.conn.execute("SELECT max(ts) FROM sample_passes").fetchone()[0]
        self._last_sample: float | None = float(last) if last is not None else None
        self._open: dict[FindingKey, tuple[str, str]] = {
            (r, k, ns, n): (sev, msg)
            for r, k, ns, n, sev, msg in self.conn.execute(
                "SELECT rule, kind, namespace, name, severity, message FROM open_findings")
        }
        self._drains: dict[str, str] = dict(self.conn.execute("SELECT workspace, state FROM drain_state"))
        self._revision: int | None = None  # the store revision the last committed write read up to
        # Per Workload UID while it exists (a deleted one's entries go with it: a console that runs for weeks
        # sees every Workload its cluster ever ran): waits and evictions written, and where it lives
        # (preemptors are named by UID).
        self._waits_seen: set[str] = set()
        self._evictions_seen: dict[str, set[float]] = {}
        self._uids: dict[str, tuple[str | None, str]] = {}
        self._uid_of: dict[tuple[str, str], str] = {}  # (namespace or "", name) -> uid
        self._values = SampleValues()
        self._workspaces: tuple[list[Any], dict[str, DrainState], dict[str | None, str | None]] | None = None
        # What this recorder last wrote per series, and the keyframe bucket of that pass (db.py,
        # KEYFRAME_SECONDS): a pass writes only what changed, a pass in a new bucket every value.
        self._written: dict[SeriesKey, float | None] = {}
        self._keyframe: int | None = None
        self._next_maintenance: float | None = None
        self._lock = threading.Lock()  # write/maintain/close from the recorder thread and its owner

    @classmethod
    def for_cluster(cls, key: str, base: Path | None = None, **kwargs: Any) -> Recorder:
        return cls(hdb.db_path(key, base), **kwargs)

    def _load_series(self) -> Iterable[tuple[SeriesKey, int]]:
        for sid, kind, name, flavor, resource, metric in self.conn.execute(
            "SELECT id, kind, name, flavor, resource, metric FROM series"
        ):
            yield (kind, name, flavor, resource, metric), sid

    # collect ------------------------------------------------------------------------------------------
    def collect(self, view: Any, store: Any, now: datetime | float) -> Observation:
        ts = epoch(now)
        obs = Observation(now=ts, revision=store.revision, findings=view_findings(view))
        if self._last_sample is None or ts - self._last_sample >= self.interval:
            obs.samples = self._values(view)
        if store.readable("TauWorkspace"):
            # The deriver hands on the same list while no workspace moved (engine/parts.py WorkspacesPart).
            obs.drains = self._of_workspaces(view)[1]
        workloads, full, deleted = self._changed_workloads(store)
        if full:
            self._uids, self._uid_of = {}, {}
            alive = {wl.metadata.uid for wl in workloads}
            self._waits_seen &= alive
            self._evictions_seen = {u: at for u, at in self._evictions_seen.items() if u in alive}
        for key in deleted:
            gone = self._uid_of.pop(key, None)
            if gone is not None:
                self._forget(gone)
        for wl in workloads:
            uid = wl.metadata.uid
            if uid:
                key = (wl.metadata.namespace or "", wl.metadata.name)
                before = self._uid_of.get(key)
                if before is not None and before != uid:  # deleted and created again between two passes
                    self._forget(before)
                self._uids[uid] = (wl.metadata.namespace, wl.metadata.name)
                self._uid_of[key] = uid
        ctx = _Context(view, store, self._uids, self._of_workspaces(view)[2])
        for wl in workloads:
            wait = workload_wait(wl, ctx) if wl.metadata.uid not in self._waits_seen else None
            if wait is not None:
                obs.waits.append(wait)
            eviction = workload_eviction(wl, ctx)
            if eviction is not None and eviction.at not in self._evictions_seen.get(eviction.uid, ()):
                obs.evictions.append(eviction)
        return obs

    def _of_workspaces(self, view: Any) -> tuple[list[Any], dict[str, DrainState], dict[str | None, str | None]]:
        """The drains and each namespace's team, made again only when the workspaces moved: the deriver
        hands on the same list while none did (engine/parts.py WorkspacesPart)."""
        if self._workspaces is None or self._workspaces[0] is not view.workspaces:
            self._workspaces = (view.workspaces, view_drains(view), team_of_namespace(view))
        return self._workspaces

    def _forget(self, uid: str) -> None:
        self._uids.pop(uid, None)
        self._waits_seen.discard(uid)
        self._evictions_seen.pop(uid, None)

    def _changed_workloads(self, store: Store) -> tuple[list[Workload], bool, list[tuple[str, str]]]:
        """The Workloads changed since the last committed write, whether that is a full scan, and the
        (namespace, name) of those deleted."""
        # From the revision the last committed write read up to: a failed write is re-read next time.
        changes = store.changes_since(self._revision) if self._revision is not None else None
        if changes is None or any(c.kind == "Workload" and c.type == "RESET" for c in changes):
            return store.list(Workload), True, []
        keys = {(c.namespace, c.name) for c in changes if c.kind == "Workload" and c.type != "DELETED"}
        deleted = [(c.namespace or "", c.name) for c in changes if c.kind == "Workload" and c.type == "DELETED"]
        found = (store.get(Workload, name, ns or None) for ns, name in sorted(keys))
        return [w for w in found if w is not None], False, deleted

    # write --------------------------------------------------------------------------------------------
    def write(self, obs: Observation) -> None:
        with self._lock:
            c = self.conn
            c.execute("BEGIN IMMEDIATE")
            try:
                written = self._write_samples(int(obs.now), obs.samples) if obs.samples is not None else None
                c.executemany(
                    "INSERT OR IGNORE INTO waits VALUES (?,?,?,?,?,?,?,?,?,?)",
                    [(w.uid, w.namespace, w.name, w.queue, w.cluster_queue, w.team, w.flavor, w.created,
                      w.reserved, w.admitted) for w in obs.waits],
                )
                c.executemany(
                    "INSERT OR IGNORE INTO evictions (uid, at, namespace, name, cluster_queue, team, reason, message,"
                    " cohort, preemption_reason, preemptor_uid, preemptor_namespace, preemptor_name,"
                    " preemptor_cluster_queue) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    [(e.uid, e.at, e.namespace, e.name, e.cluster_queue, e.team, e.reason, e.message, e.cohort,
                      e.preemption_reason, e.preemptor_uid, e.preemptor_namespace, e.preemptor_name,
                      e.preemptor_cluster_queue) for e in obs.evictions],
                )
                opened, closed = self._write_findings(obs)
                drains = self._write_drains(obs)
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise
            # Only once committed: a failed batch is retried whole on the next tick.
            if obs.samples is not None:
                self._last_sample = obs.now
            if written is not None:
                self._written, self._keyframe = written
            if obs.revision is not None:
                self._revision = obs.revision
            self._waits_seen.update(w.uid for w in obs.waits)
            for e in obs.evictions:
                self._evictions_seen.setdefault(e.uid, set()).add(e.at)
            for key in closed:
                del self._open[key]
            self._open.update(opened)
            if drains is not None:
                self._drains = drains

    def _write_samples(self, ts: int, samples: dict[SeriesKey, float | None]
                       ) -> tuple[dict[SeriesKey, float | None], int]:
        """One sample pass: a `sample_passes` row, every value in a new keyframe bucket (and the first
        time), else the values that changed since this recorder's last pass and a NULL for each series
        that ended. Returns what is written now and the bucket, for after the commit."""
        bucket = ts // hdb.KEYFRAME_SECONDS
        if bucket != self._keyframe:
            changed = dict(samples)
            if self._keyframe is None:  # this recorder's first pass: another may have written this bucket
                changed.update((k, None) for k in self._held_in_bucket(bucket, ts) if k not in samples)
        else:
            changed = {k: v for k, v in samples.items() if k not in self._written or self._written[k] != v}
            changed.update((k, None) for k, v in self._written.items() if k not in samples and v is not None)
        rows = []
        for key, value in changed.items():
            sid = self._series.get(key)
            if sid is None:
                sid = self.conn.execute(
                    "INSERT INTO series (kind, name, flavor, resource, metric) VALUES (?,?,?,?,?) "
                    "ON CONFLICT DO UPDATE SET kind = kind RETURNING id", key
                ).fetchone()[0]
                self._series[key] = sid
            rows.append((sid, ts, value))
        self.conn.executemany("INSERT OR REPLACE INTO samples VALUES (?,?,?)", rows)
        self.conn.execute("INSERT OR IGNORE INTO sample_passes VALUES (?)", (ts,))
        return dict(samples), bucket

    def _held_in_bucket(self, bucket: int, ts: int) -> list[SeriesKey]:
        """Series whose latest sample in keyframe bucket `bucket` before `ts` holds a value: written by
        a recorder before this one (a restart, or another process that recorded until now). A series
        this pass no longer has must end with a NULL, or that value would carry on to this pass."""
        keys = {sid: key for key, sid in self._series.items()}
        rows = self.conn.execute(
            "SELECT series_id, value, max(ts) FROM samples WHERE ts >= ? AND ts < ? GROUP BY series_id",
            (bucket * hdb.KEYFRAME_SECONDS, ts)).fetchall()
        return [keys[sid] for sid, value, _ in rows if value is not None and sid in keys]

    def _write_findings(self, obs: Observation) -> tuple[dict[FindingKey, tuple[str, str]], list[FindingKey]]:
        opened = {k: v for k, v in obs.findings.items() if k not in self._open}
        closed = [k for k in self._open if k not in obs.findings]
        events = [(obs.now, "open", *k, *v) for k, v in opened.items()]
        events += [(obs.now, "close", *k, *self._open[k]) for k in closed]
        self.conn.executemany(
            "INSERT INTO finding_events (at, event, rule, kind, namespace, name, severity, message)"
            " VALUES (?,?,?,?,?,?,?,?)", events)
        self.conn.executemany("DELETE FROM open_findings WHERE rule=? AND kind=? AND namespace=? AND name=?", closed)
        # OR REPLACE: a file written meanwhile by a taudash without the writer lock may already hold the key.
        self.conn.executemany("INSERT OR REPLACE INTO open_findings VALUES (?,?,?,?,?,?,?)",
                              [(*k, *v, obs.now) for k, v in opened.items()])
        return opened, closed

    def _write_drains(self, obs: Observation) -> dict[str, str] | None:
        if obs.drains is None:
            return None
        events = []
        for ws, st in sorted(obs.drains.items()):
            before = self._drains.get(ws)
            if before != st.state:
                event = "started" if before is None else "changed"
                events.append((obs.now, event, ws, st.state, before or "NotDraining", st.mode, st.old_namespace,
                               st.new_namespace))
        for ws in sorted(set(self._drains) - set(obs.drains)):
            events.append((obs.now, "cleared", ws, "NotDraining", self._drains[ws], None, None, None))
        self.conn.executemany(
            "INSERT INTO drain_events (at, event, workspace, state, previous, mode, old_namespace, new_namespace)"
            " VALUES (?,?,?,?,?,?,?,?)", events)
        if events:
            self.conn.execute("DELETE FROM drain_state")
            self.conn.executemany("INSERT INTO drain_state VALUES (?,?,?)",
                                  [(ws, st.state, obs.now) for ws, st in obs.drains.items()])
        return {ws: st.state for ws, st in obs.drains.items()}

    # record, maintain ---------------------------------------------------------------------------------
    def record(self, view: Any, store: Any, now: datetime | float) -> Observation:
        obs = self.collect(view, store, now)
        self.write(obs)
        self.maintain_if_due(obs.now)
        return obs

    def maintain_if_due(self, now: float) -> bool:
        if self._next_maintenance is not None and now < self._next_maintenance:
            return False
        more = self.maintain(now)
        # Work left over (a backlog of days to roll up, a file over its cap): continue next tick.
        self._next_maintenance = now if more else now + self.maintenance_every
        return more

    def maintain(self, now: datetime | float) -> bool:
        """One bounded step of retention; True when more work remains."""
        with self._lock:
            return maintain(self.conn, epoch(now), self.retention)

    def close(self) -> None:
        with self._lock:
            try:
                self.conn.close()
            finally:
                self._writer.release()


class RecorderThread:
    """Records beside a dashboard: every `period` seconds, collect under the session's lock (the store
    is not thread-safe) and write outside it, on a daemon thread so a slow disk never holds a UI tick.
    The database is opened on the first tick, so a dashboard closed at once leaves no file behind.
    While another process records the file (`taudash serve` on the same cluster) this one stands by —
    `standby` says who records — and tries again each tick, taking over when that one stops."""

    def __init__(self, open_recorder: Callable[[], Recorder], session: Any, clock: Callable[[], datetime],
                 period: float = 5.0) -> None:
        self.open_recorder = open_recorder
        self.recorder: Recorder | None = None
        self.session = session
        self.clock = clock
        self.period = period
        self.costs: list[float] = []  # seconds per tick (the newest 100)
        self.error: str | None = None
        self.standby: str | None = None  # another process records the file (its RecorderBusy message)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="taudash-history", daemon=True)

    def start(self) -> RecorderThread:
        self._thread.start()
        return self

    def tick(self) -> None:
        t0 = time.perf_counter()
        if self.recorder is None:
            try:
                self.recorder = self.open_recorder()
            except RecorderBusy as exc:
                self.standby = str(exc)
                return
            self.standby = None
        now = self.clock()
        with self.session.lock:
            obs = self.recorder.collect(self.session.view(now), self.session.store, now)
        self.recorder.write(obs)
        self.recorder.maintain_if_due(obs.now)
        self.costs = [*self.costs[-99:], time.perf_counter() - t0]

    def _run(self) -> None:
        # Errors are kept in `error` (the dashboard prints it on exit), never written to the terminal
        # the dashboard is drawing on.
        while not self._stop.wait(self.period):
            try:
                self.tick()
                self.error = None
            except hdb.NewerSchema as exc:  # permanent: never write into a newer taudash's file
                self.error = str(exc)
                return
            except Exception as exc:  # a full disk, a locked file, a rule bug: the dashboard goes on, retry later
                self.error = f"history: {type(exc).__name__}: {exc}"

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self.recorder is not None:
            self.recorder.close()
