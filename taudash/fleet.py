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
            names = [c.get("name") for c in doc.get("contexts") or () if isinstance(c, dict) and c.get("name")]
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
