"""Several clusters in one session: load every context concurrently, each failure isolated (docs/fleet.md).

`taudash status --context a --context b` prints a FleetStatus (docs/fleet.md):

    apiVersion: taudash/v1
    kind: FleetStatus
    clusters:
    - context: a
      reachable: true
      error: null
      multikueue: {role: manager, dispatched: [...], workers: [...], orphans: [...], findings: [...]}
      status: <the ClusterStatus of `taudash status --context a -o json`>
    findings: [{context, ...Finding}]   # the MultiKueue join's, across clusters

The MultiKueue join (engine/multikueue_join.py) maps each MultiKueueCluster of a manager to a kube
context: `fleet.multiKueueClusters` of the config file, else the context of the same name; never the
kubeconfig Secrets the manager holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from taudash.engine.identity import ClusterIdentity
from taudash.engine.model import MultiKueueCluster, MultiKueueConfig, Workload
from taudash.engine.multikueue_join import (
    ORIGIN_LABEL,
    MultiKueueJoin,
    WorkerSide,
    context_of,
    is_manager,
    join_multikueue,
)
from taudash.engine.rules.base import Finding, RuleConfig
from taudash.engine.session import Frame
from taudash.engine.sources.client import kubeconfig_path
from taudash.engine.store import Store
from taudash.engine.view import ClusterView

from .errors import Unreachable, UsageError
from .loading import Loaded, load_live_async, view_of

DEFAULT_FRESHNESS_BOUND = 15.0
PROBE_WINDOW = 3  # answered probes whose fastest says how slow the server is (decision 161)


def freshness_bound(environ: Mapping[str, str] | None = None) -> float:
    """Seconds within which a cluster that stops answering is shown stale (docs/fleet.md; the config
    file's schema checks it is a number from 2 to 3600):

        fleet:
          freshnessBound: 15
    """
    from .config import load_config

    bound = load_config(environ).freshness_bound
    return DEFAULT_FRESHNESS_BOUND if bound is None else bound


def multikueue_mapping(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """MultiKueueCluster name → kube context, from the config file (docs/fleet.md):

        fleet:
          multiKueueClusters:
            westus-2: prod-westus-2
    """
    from .config import load_config

    return dict(load_config(environ).multikueue_clusters)


def worker_names(manager: Store) -> list[str]:
    """The manager's MultiKueueClusters and the names its MultiKueueConfigs list."""
    names = [mc.name for mc in manager.list(MultiKueueCluster)]
    for cfg in manager.list(MultiKueueConfig):
        names += cfg.spec.clusters
    return sorted(set(names))


def join_fleet(clusters: Mapping[str, tuple[Store | None, bool, str]], mapping: Mapping[str, str],
               now: datetime) -> dict[str, MultiKueueJoin]:
    """The MultiKueue join of every manager among `clusters` (context → (store, reachable, why not)),
    its workers looked up by context (`context_of`)."""
    contexts = frozenset(clusters)
    out: dict[str, MultiKueueJoin] = {}
    for ctx, (store, reachable, why) in clusters.items():
        if store is None or not is_manager(store, last_known=True):
            continue
        if not reachable or not is_manager(store):  # a manager not readable now: nothing joined, said so
            out[ctx] = MultiKueueJoin(manager=ctx, unknown=why or "not readable")
            continue
        sides: dict[str, WorkerSide] = {}
        for name in worker_names(store):
            wctx = context_of(name, mapping, contexts)
            if wctx is None:
                sides[name] = WorkerSide(None, None, False, "no context maps to it")
            elif wctx not in clusters:
                sides[name] = WorkerSide(wctx, None, False, "its context is not read here")
            else:
                wstore, wreach, why = clusters[wctx]
                sides[name] = WorkerSide(wctx, wstore, wreach, why)
        out[ctx] = join_multikueue(store, sides, now, manager_context=ctx)
    return out


def _result_sides(results: list[ClusterResult]) -> dict[str, tuple[Store | None, bool, str]]:
    return {r.context: (r.loaded.store if r.loaded else None, r.loaded is not None,
                        "" if r.loaded else f"unreachable: {r.error or ''}") for r in results}


@dataclass
class ClusterResult:
    context: str
    loaded: Loaded | None = None
    error: str | None = None
    view: ClusterView | None = None

    @property
    def reachable(self) -> bool:
        return self.loaded is not None


def all_contexts(kubeconfig: str | None) -> list[str]:
    """Every context of the kubeconfig (every existing file of KUBECONFIG / --kubeconfig, merged), in file order."""
    from taudash.engine.sources.kubeconfig import ConfigError, context_names

    try:
        return context_names(kubeconfig_path(kubeconfig))
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def check_contexts(contexts: list[str], kubeconfig: str | None) -> None:
    """Bad input before a fleet opens: each context must exist and its cluster and user be usable (the
    kubeconfig's own checks; an exec plugin is only run when its cluster connects)."""
    from taudash.engine.sources.kubeconfig import ConfigError, resolve

    for context in contexts:
        try:
            resolve(kubeconfig_path(kubeconfig), context)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None


async def _load_one(context: str, kubeconfig: str | None, sync_timeout: float) -> ClusterResult:
    try:
        return ClusterResult(context, loaded=await load_live_async(context, kubeconfig, sync_timeout))
    except Unreachable as exc:
        return ClusterResult(context, error=str(exc))
    except UsageError:
        raise
    except Exception as exc:  # one cluster's failure never hides the others
        return ClusterResult(context, error=f"{type(exc).__name__}: {exc}")


async def load_fleet_async(contexts: list[str], kubeconfig: str | None,
                           sync_timeout: float = 30.0) -> list[ClusterResult]:
    """One connection per cluster, all at once; the results in the order given."""
    results = await asyncio.gather(*(_load_one(c, kubeconfig, sync_timeout) for c in contexts),
                                   return_exceptions=True)
    for r in results:  # a bad context name is bad input for the whole command
        if isinstance(r, UsageError):
            raise r
    return [r if isinstance(r, ClusterResult) else ClusterResult(c, error=str(r)) for c, r in zip(contexts, results,
                                                                                                   strict=True)]


def load_fleet(contexts: list[str], kubeconfig: str | None, config: RuleConfig,
               sync_timeout: float = 30.0) -> list[ClusterResult]:
    results = asyncio.run(load_fleet_async(contexts, kubeconfig, sync_timeout))
    now = datetime.now(UTC)
    for r in results:
        if r.loaded is not None:
            r.view = view_of(r.loaded, config, now)
    return results


def multikueue_of(r: ClusterResult, joins: Mapping[str, MultiKueueJoin] | None = None) -> dict:
    """The cluster's MultiKueue role and, for a manager, the join (docs/fleet.md): manager (a MultiKueue
    AdmissionCheck), worker (a manager here maps a MultiKueueCluster to it, or it holds mirror Workloads),
    none; unknown when not reachable."""
    joins = joins or {}
    if r.loaded is None:
        return {"role": "unknown", "dispatched": []}
    store = r.loaded.store
    j = joins.get(r.context)
    if j is not None:
        doc = j.to_contract()
        doc.pop("manager", None)
        return {"role": "manager", **doc}
    managers = [{"context": m, "multiKueueCluster": w.name} for m, mj in joins.items() for w in mj.workers
                if w.context == r.context]
    if is_manager(store):
        return {"role": "manager", "dispatched": []}
    if managers or any(ORIGIN_LABEL in (w.metadata.labels or {}) for w in store.list(Workload)):
        return {"role": "worker", "dispatched": [], "managers": managers}
    return {"role": "none", "dispatched": []}


def fleet_findings(joins: Mapping[str, MultiKueueJoin]) -> list[tuple[str, Finding]]:
    """The join's findings across the fleet, each with the manager's context."""
    return [(ctx, f) for ctx, j in joins.items() for f in j.findings]


def joins_of(results: list[ClusterResult], mapping: Mapping[str, str] | None = None,
             now: datetime | None = None) -> dict[str, MultiKueueJoin]:
    return join_fleet(_result_sides(results), mapping or {}, now or datetime.now(UTC))


def fleet_contract(results: list[ClusterResult], joins: Mapping[str, MultiKueueJoin] | None = None) -> dict:
    joins = joins_of(results) if joins is None else joins
    return {
        "apiVersion": "taudash/v1",
        "kind": "FleetStatus",
        "clusters": [
            {
                "context": r.context,
                "reachable": r.reachable,
                "error": r.error,
                "multikueue": multikueue_of(r, joins),
                "status": r.view.to_contract() if r.view is not None else None,
            }
            for r in results
        ],
        "findings": [{"context": ctx, **f.to_contract()} for ctx, f in fleet_findings(joins)],
    }


# --- the fleet dashboard: one live source per cluster, each its own failure domain ----------------



class FleetMember:
    """One cluster of a fleet dashboard: its own store, session and connection.

    `state`: connecting (never synced yet), live (synced; later outages show as the session's sync
    problems) or unreachable (`error` says why; retried in the background).

    Once live, a liveness probe (its own connection: a GET /version every bound/5 s, answered within
    bound/2 s) watches that the API server still answers: watches on a server that hangs (accepts,
    never answers) stay open and silent for minutes, so without it a hung cluster would look live.
    A probe not answered marks the member stale ("no answer for N s") until one is answered again;
    `frame()` shows it as the frame's outage (`freshness.unreachable`), which the header, the Fleet
    row and the MultiKueue join read. Worst case from the last answer to stale: bound/5 + bound/2."""

    def __init__(self, context: str, config: RuleConfig | None = None, source_type: str = "kube",
                 freshness_bound: float = DEFAULT_FRESHNESS_BOUND) -> None:
        from .compose import fleet_member_session

        self.context = context
        self.identity: ClusterIdentity | None = None  # read by each connection once synced
        self.session = fleet_member_session(context, config, source_type, cluster=lambda: self.identity)
        self.state = "connecting"
        self.error: str | None = None
        self.synced_after: float | None = None  # seconds from start to the first complete sync (the bench)
        self.freshness_bound = freshness_bound
        self.last_answer: float | None = None  # epoch seconds of the last probe answered
        self.probe_error: str | None = None  # why the last probe failed; None once one is answered
        # How long the server takes to answer: the fastest of the last few answered probes (decision 161), so
        # one answer delayed by the client's own busy loop or a just-restored server does not read "slow".
        self.probe_seconds: float | None = None
        self._probe_times: deque[float] = deque(maxlen=PROBE_WINDOW)

    def stale_why(self, now: float) -> tuple[float, str] | None:
        """(since, why) when the liveness probe says this cluster stopped answering; else None."""
        if self.probe_error is None or self.last_answer is None:
            return None
        return self.last_answer, f"no answer for {max(0.0, now - self.last_answer):.0f} s; {self.probe_error}"

    def frame(self, now: datetime) -> Frame:
        """The session's frame, with the probe's verdict: a cluster that stopped answering is an outage
        even while the store's watches (silent, not failed) say nothing."""
        f = self.session.frame(now)
        stale = self.stale_why(now.timestamp())
        if stale is not None and not f.freshness.unreachable:
            since, why = stale
            f = dataclasses.replace(f, freshness=dataclasses.replace(
                f.freshness, unreachable=True, unreachable_since=since, unreachable_why=why))
            self.session.last_frame = f
        return f

    def answered_probe(self, seconds: float) -> None:
        """Record one answered probe; probe_seconds is the fastest of the window once it holds two answers."""
        self._probe_times.append(seconds)
        self.probe_seconds = min(self._probe_times) if len(self._probe_times) >= 2 else None

    def failed_probe(self, why: str) -> None:
        """An unanswered probe: the answers before the outage say nothing of the server after it."""
        self.probe_error = why
        self._probe_times.clear()
        self.probe_seconds = None

    async def probe(self, kubeconfig: str | None) -> None:
        """GET /version on its own connection every bound/5 s; each answered within bound/2 s, else failed.
        Any HTTP answer counts (a 401 is an answer: the server lives; the watches report access)."""
        import time

        from taudash.engine.sources.client import connect

        every, timeout = self.freshness_bound / 5, self.freshness_bound / 2
        try:
            target = await connect(self.context, kubeconfig)
        except Exception:  # noqa: BLE001 - the source connected with the same kubeconfig: no probe, no verdict
            return
        self.last_answer, self.probe_error = time.time(), None
        try:
            while True:
                t = time.monotonic()
                try:
                    async with asyncio.timeout(timeout):
                        resp = await target.api_client.call_api(
                            "/version", "GET", header_params={"Accept": "application/json"},
                            auth_settings=["BearerToken"], _preload_content=False, _return_http_data_only=True,
                            _request_timeout=timeout)
                        try:
                            await resp.read()
                        finally:
                            resp.release()
                    self.last_answer, self.probe_error = time.time(), None
                    self.answered_probe(time.monotonic() - t)
                except TimeoutError:
                    self.failed_probe(f"probe unanswered after {timeout:g} s")
                except Exception as exc:  # noqa: BLE001 - refused, reset, TLS: all say "no answer"
                    self.failed_probe((f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)[:160])
                await asyncio.sleep(max(0.0, every - (time.monotonic() - t)))
        finally:
            await target.close()

    async def run(self, kubeconfig: str | None, retry: float = 5.0, sync_timeout: float = 30.0) -> None:
        """Connect, sync and keep watching until cancelled; an unreachable cluster is retried every `retry` s."""
        import time

        from .compose import FLEET_READ_ONLY
        from .live import LiveCluster

        started = time.perf_counter()
        while True:
            # Every attempt fills the member's own store under its session's lock: the screens keep their session.
            live = LiveCluster(self.context, kubeconfig, sync_timeout=sync_timeout, never_writes=FLEET_READ_ONLY,
                               store=self.session.store, lock=self.session.lock)
            try:
                await live.connect()
            except UsageError as exc:
                self.state, self.error = "unreachable", str(exc)
                return  # a kubeconfig problem does not heal by retrying
            prober: asyncio.Task | None = None
            try:
                try:
                    await live.start()
                except Unreachable as exc:
                    self.state, self.error = "unreachable", str(exc)
                    await asyncio.sleep(retry)
                    continue
                await live.wait_synced()
                self.identity = await live.read_identity()
                self.state, self.error = "live", None
                if self.synced_after is None:
                    self.synced_after = time.perf_counter() - started
                prober = asyncio.create_task(self.probe(kubeconfig), name=f"fleet-probe-{self.context}")
                await prober  # runs until cancelled; the source's own tasks watch meanwhile
                await asyncio.Event().wait()  # (a probe that could not start: keep watching, unprobed)
            finally:
                if prober is not None:
                    prober.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await prober
                await live.close()


    def side(self) -> tuple[Store | None, bool, str]:
        """What the MultiKueue join may read of this cluster: its store, whether its data is current
        (synced, connected: a stale or lost connection reads as unknown, never as empty), why not."""
        if self.state != "live":
            return (self.session.store if self.state != "connecting" else None, False,
                    f"{self.state}" + (f": {self.error}" if self.error else ""))
        f = self.session.last_frame
        if f is not None and (f.freshness.unreachable or any(p.kind == "Workload" for p in f.freshness.problems)):
            return self.session.store, False, "stale"
        return self.session.store, True, ""


class Fleet:
    """The clusters of one dashboard and which of them the other screens show (`subject`).

    `mapping`: MultiKueueCluster name → context (the config file's, or the simulated fleet's); a name
    without one maps to the context of the same name."""

    JOIN_EVERY = 5.0  # seconds: the join is recomputed at least this often (its grace is time-based)

    def __init__(self, members: list[FleetMember], mapping: Mapping[str, str] | None = None,
                 freshness_bound: float | None = None) -> None:
        if not members:
            raise ValueError("a fleet has at least one cluster")
        self.members = members
        if freshness_bound is not None:
            for m in members:
                m.freshness_bound = freshness_bound
        self.subject = members[0].context
        self.mapping = dict(mapping or {})
        self.joins: dict[str, MultiKueueJoin] = {}
        self.join_error: str | None = None
        self._join_key: tuple | None = None
        self._tasks: list[asyncio.Task] = []

    def join(self, now: datetime) -> dict[str, MultiKueueJoin]:
        """The MultiKueue join of every manager, recomputed when a cluster changed (or every JOIN_EVERY s).
        Reads every member's store under its session lock (taken in member order: no lock cycle)."""
        sides = {m.context: m.side() for m in self.members}
        key = (tuple((c, s[1], s[2], s[0].revision if s[0] is not None else -1) for c, s in sides.items()),
               int(now.timestamp() // self.JOIN_EVERY))
        if key == self._join_key:
            return self.joins
        with contextlib.ExitStack() as stack:
            for m in self.members:
                stack.enter_context(m.session.lock)
            self.joins = join_fleet(sides, self.mapping, now)
        self._join_key, self.join_error = key, None
        return self.joins

    def member(self, context: str) -> FleetMember | None:
        return next((m for m in self.members if m.context == context), None)

    def start(self, kubeconfig: str | None, retry: float = 5.0) -> None:
        """One task per cluster, on the running loop: none waits for another."""
        self._tasks = [asyncio.create_task(m.run(kubeconfig, retry), name=f"fleet-{m.context}") for m in self.members]

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except asyncio.CancelledError:
                pass
            except Exception:  # noqa: BLE001 - one member's failure must not block the shutdown of the others
                pass
        self._tasks.clear()
