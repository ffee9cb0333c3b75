"""Several clusters in one session: load every context concurrently, each failure isolated (issue 21).

`taudash status --context a --context b` prints a FleetStatus (docs/fleet.md):

    apiVersion: taudash/v1
    kind: FleetStatus
    clusters:
    - context: a
      reachable: true
      error: null
      multikueue: {role: manager, dispatched: [{namespace, name, clusterName}]}
      status: <the ClusterStatus of `taudash status --context a -o json`>
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from taudash.engine.model.names import MULTIKUEUE_CONTROLLER
from taudash.engine.rules.base import RuleConfig
from taudash.engine.sources.kube import kubeconfig_path
from taudash.engine.view import ClusterView

from .errors import Unreachable, UsageError
from .loading import Loaded, load_live_async, view_of

ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"  # what Kueue puts on a worker's mirror Workloads


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
    """Every context of the kubeconfig (the first existing file of KUBECONFIG / --kubeconfig), in file order."""
    path = kubeconfig_path(kubeconfig)
    for p in path.split(":"):
        f = Path(p).expanduser()
        if p and f.is_file():
            try:
                doc = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise UsageError(f"kubeconfig {p}: {exc}") from None
            names = [str(c["name"]) for c in doc.get("contexts") or () if isinstance(c, dict) and c.get("name")]
            if not names:
                raise UsageError(f"kubeconfig {p}: no contexts")
            return list(dict.fromkeys(names))
    raise UsageError(f"kubeconfig {path}: no such file (use --kubeconfig or KUBECONFIG)")


async def _load_one(context: str, kubeconfig: str | None, sync_timeout: float) -> ClusterResult:
    try:
        return ClusterResult(context, loaded=await load_live_async(context, kubeconfig, sync_timeout))
    except Unreachable as exc:
        return ClusterResult(context, error=str(exc))
    except UsageError:
        raise
    except Exception as exc:  # one cluster's failure never hides the others
        return ClusterResult(context, error=f"{type(exc).__name__}: {exc}")


async def load_fleet_async(contexts: list[str], kubeconfig: str | None, sync_timeout: float = 30.0) -> list[ClusterResult]:
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


def multikueue_of(r: ClusterResult) -> dict:
    """The cluster's MultiKueue role: manager (a MultiKueue AdmissionCheck; its dispatched Workloads with
    their worker, status.clusterName), worker (holds mirror Workloads) or none."""
    if r.loaded is None:
        return {"role": "unknown", "dispatched": []}
    store = r.loaded.store
    if any(ac.spec.controller_name == MULTIKUEUE_CONTROLLER for ac in store.list("AdmissionCheck")):
        dispatched = [{"namespace": w.namespace, "name": w.name, "clusterName": w.status.cluster_name}
                      for w in store.list("Workload") if w.status.cluster_name]
        return {"role": "manager", "dispatched": sorted(dispatched, key=lambda d: (d["namespace"], d["name"]))}
    if any(ORIGIN_LABEL in (w.metadata.labels or {}) for w in store.list("Workload")):
        return {"role": "worker", "dispatched": []}
    return {"role": "none", "dispatched": []}


def fleet_contract(results: list[ClusterResult]) -> dict:
    return {
        "apiVersion": "taudash/v1",
        "kind": "FleetStatus",
        "clusters": [
            {
                "context": r.context,
                "reachable": r.reachable,
                "error": r.error,
                "multikueue": multikueue_of(r),
                "status": r.view.to_contract() if r.view is not None else None,
            }
            for r in results
        ],
    }


# --- the fleet dashboard: one live source per cluster, each its own failure domain ----------------

FLEET_READ_ONLY = "fleet view: open one cluster (taudash --context NAME) to act on it"


class FleetMember:
    """One cluster of a fleet dashboard: its own store, session and connection.

    `state`: connecting (never synced yet), live (synced; later outages show as the session's sync
    problems) or unreachable (`error` says why; retried in the background)."""

    def __init__(self, context: str, config: RuleConfig | None = None, source_type: str = "kube") -> None:
        from taudash.engine.actions import Actions
        from taudash.engine.session import Session
        from taudash.engine.store import Store
        from taudash.engine.view import SourceInfo

        self.context = context
        self.session = Session(Store(), SourceInfo(type=source_type, context=context), config, read_only=True)
        self.session.read_only_why = "fleet view"
        self.session.actions = Actions.read_only(FLEET_READ_ONLY, context)
        self.state = "connecting"
        self.error: str | None = None

    async def run(self, kubeconfig: str | None, retry: float = 5.0, sync_timeout: float = 30.0) -> None:
        """Connect, sync and keep watching until cancelled; an unreachable cluster is retried every `retry` s."""
        from taudash.engine.sources.kube import ConfigError, KubeSource, connect
        from taudash.engine.sources.kube import Unreachable as SourceUnreachable

        while True:
            try:
                target = await connect(self.context, kubeconfig)
            except ConfigError as exc:
                self.state, self.error = "unreachable", str(exc)
                return  # a kubeconfig problem does not heal by retrying
            source = KubeSource(self.session.store, target, lock=self.session.lock)
            try:
                try:
                    await source.start()
                except SourceUnreachable as exc:
                    self.state, self.error = "unreachable", str(exc)
                    await asyncio.sleep(retry)
                    continue
                await source.wait_synced(sync_timeout)
                self.session.cluster = await source.identity()
                self.state, self.error = "live", None
                await asyncio.Event().wait()  # watched by the source's own tasks until cancelled
            finally:
                await source.stop()
                await target.close()


class Fleet:
    """The clusters of one dashboard and which of them the other screens show (`subject`)."""

    def __init__(self, members: list[FleetMember]) -> None:
        if not members:
            raise ValueError("a fleet has at least one cluster")
        self.members = members
        self.subject = members[0].context
        self._tasks: list[asyncio.Task] = []

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
