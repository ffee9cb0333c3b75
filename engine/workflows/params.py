"""Parameters of a new workflow, built from what an operator chose (CLI flags or the dashboard's form).

One place for both front ends, so `taudash workflow start hold --cq X` and the dashboard's "new
workflow" form journal exactly the same parameters. Every problem is a `ParamError` with a
one-line reason; nothing here writes to the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from .base import Context
from .catalog import CatalogError, affected_queues, load_catalog
from .hold import deactivated_by
from .journal import Journal, JournalError

KINDS = ("hold", "release", "catalog", "rollback", "drain")
HOLD_MODES = ("HoldAndDrain", "Hold")


class ParamError(ValueError):
    """The chosen parameters cannot make a workflow (one line, shown as is)."""


def open_journal(workflow_id: str, directory: Path | None = None) -> Journal:
    try:
        return Journal.open(workflow_id, directory)
    except JournalError as exc:
        raise ParamError(str(exc)) from None


def profile_queues(ctx: Context, profile: str) -> list[str]:
    """The ClusterQueues a resolved workload profile routes to."""
    tc = ctx.store.get("TauCluster", "cluster")
    profiles = tc.status.workload_profiles.profiles if tc and tc.status.workload_profiles else []
    prof = next((p for p in profiles if p.name == profile), None)
    if prof is None:
        raise ParamError(f"profile {profile!r} is not in TauCluster cluster's resolved profiles")
    return list(prof.cluster_queues)


def hold_params(ctx: Context, cqs: Iterable[str] = (), profiles: Iterable[str] = (), mode: str = "HoldAndDrain",
                cancel_pending: bool = True) -> dict[str, Any]:
    if mode not in HOLD_MODES:
        raise ParamError(f"hold mode must be one of {', '.join(HOLD_MODES)}, not {mode!r}")
    chosen = list(cqs)
    for p in profiles:
        chosen += profile_queues(ctx, p)
    if not chosen:
        raise ParamError("choose at least one ClusterQueue (or a profile)")
    return {"cqs": sorted(set(chosen)), "mode": mode, "cancel_pending": cancel_pending}


def release_params(cqs: Iterable[str] = (), reactivate_from: str | None = None,
                   directory: Path | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"cqs": sorted(set(cqs))}
    if reactivate_from:
        src = open_journal(reactivate_from, directory)
        params["reactivate"] = deactivated_by(src)
        if not params["cqs"]:
            params["cqs"] = src.params.get("cqs", [])
    if not params["cqs"]:
        raise ParamError("choose at least one ClusterQueue (or a hold to reactivate the Workloads of)")
    return params


def catalog_params(ctx: Context, catalog_file: str, extra_cqs: Iterable[str] = ()) -> dict[str, Any]:
    if not str(catalog_file).strip():
        raise ParamError("name the new catalog file")
    try:
        catalog = load_catalog(catalog_file)
    except CatalogError as exc:
        raise ParamError(str(exc)) from None
    return {"catalog": catalog, "catalog_file": str(catalog_file),
            "cqs": affected_queues(ctx, catalog, list(extra_cqs))}


def rollback_params(ctx: Context, from_id: str, directory: Path | None = None) -> dict[str, Any]:
    if not from_id:
        raise ParamError("choose the catalog change to roll back")
    src = open_journal(from_id, directory)
    if src.kind != "catalog":
        raise ParamError(f"workflow {from_id} is a {src.kind}, not a catalog change")
    art = src.artifacts()
    if "taucluster" not in art:
        raise ParamError(f"workflow {from_id} never exported the previous catalog: nothing to roll back to")
    try:
        with open(art["taucluster"], encoding="utf-8") as fh:
            prev = yaml.safe_load(fh) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ParamError(f"{art['taucluster']}: cannot read the exported TauCluster ({exc.__class__.__name__})") from None
    previous = (prev.get("spec") or {}).get("workloadProfiles") or []
    prev_hash = next((r["data"].get("hash") for r in src.records
                      if r["event"] == "artifact" and r["data"].get("name") == "profiles"), None)
    return {"from": src.id, "previous_catalog": previous, "previous_hash": prev_hash,
            "cqs": sorted(set(src.params.get("cqs", [])) | set(affected_queues(ctx, previous, [])))}


def drain_params(workspace: str) -> dict[str, Any]:
    if not workspace:
        raise ParamError("choose the workspace whose drain to supervise")
    return {"workspace": workspace}


def describe(kind: str, params: dict[str, Any]) -> str:
    """What a workflow is about, in one line (lists and the wizard's title)."""
    cqs = ", ".join(params.get("cqs") or [])
    if kind == "hold":
        extra = "" if params.get("cancel_pending", True) else ", pending kept"
        return f"{cqs} ({params.get('mode', 'HoldAndDrain')}{extra})"
    if kind == "release":
        n = len(params.get("reactivate") or [])
        return cqs + (f", reactivate {n} Workload(s)" if n else "")
    if kind == "catalog":
        return f"{params.get('catalog_file') or 'new catalog'} · hold {cqs or 'no queue'}"
    if kind == "rollback":
        return f"undo {params.get('from', '?')} · hold {cqs or 'no queue'}"
    if kind == "drain":
        return f"workspace {params.get('workspace', '?')}"
    return ""
