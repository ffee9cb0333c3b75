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
from .catalog import CatalogError, affected_queues, catalog_diff, catalog_problems, declared_catalog, load_catalog
from .hold import DEACTIVATING_KINDS, deactivated_by
from .journal import Journal, JournalError
from .steps import previous_stop_policies

KINDS = ("hold", "release", "catalog", "rollback", "drain")
HOLD_MODES = ("HoldAndDrain", "Hold")


class ParamError(ValueError):
    """The chosen parameters cannot make a workflow (one line, shown as is). `problems`, when
    given, lists every problem found (a front end may show them one per line)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        self.headline = message
        self.problems = list(problems or [])
        super().__init__(message + (": " + "; ".join(self.problems) if self.problems else ""))


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


def unknown_queues(ctx: Context, cqs: Iterable[str]) -> None:
    """Refuse queues that do not exist (or cannot be read) before anything is journaled."""
    names = sorted(set(cqs))
    if names and not ctx.store.readable("ClusterQueue"):
        raise ParamError(f"clusterqueues are {ctx.store.access('ClusterQueue').state.value}: "
                         f"cannot check {', '.join(names)}")
    missing = [n for n in names if ctx.store.get("ClusterQueue", n) is None]
    if missing:
        raise ParamError(f"ClusterQueue(s) not found: {', '.join(missing)}")


def hold_params(ctx: Context, cqs: Iterable[str] = (), profiles: Iterable[str] = (), mode: str = "HoldAndDrain",
                cancel_pending: bool = True) -> dict[str, Any]:
    if mode not in HOLD_MODES:
        raise ParamError(f"hold mode must be one of {', '.join(HOLD_MODES)}, not {mode!r}")
    why: dict[str, list[str]] = {}
    for q in cqs:
        why.setdefault(q, ["chosen explicitly (--cq or the form)"])
    for p in profiles:
        for q in profile_queues(ctx, p):
            why.setdefault(q, []).append(f"profile {p} routes to it (--profile {p})")
    if not why:
        raise ParamError("choose at least one ClusterQueue (or a profile)")
    unknown_queues(ctx, why)
    return {"cqs": sorted(why), "mode": mode, "cancel_pending": cancel_pending,
            "why": {q: why[q] for q in sorted(why)}}


def release_params(cqs: Iterable[str] = (), reactivate_from: str | None = None,
                   directory: Path | None = None, ctx: Context | None = None) -> dict[str, Any]:
    """Restore admission (stopPolicy None on the named queues); with `reactivate_from`, also
    reactivate what that hold, catalog change or rollback deactivated. Named no queue, it releases
    that workflow's queues back to the stopPolicy each had before it (a queue that was on Hold
    stays on Hold; after a completed catalog change nothing is left to write). With `ctx`, the
    queues must exist."""
    params: dict[str, Any] = {"cqs": sorted(set(cqs))}
    if reactivate_from:
        src = open_journal(reactivate_from, directory)
        if src.kind not in DEACTIVATING_KINDS:
            raise ParamError(f"workflow {src.id} is a {src.kind}: only a {', '.join(DEACTIVATING_KINDS)} "
                             "deactivates Workloads")
        params["reactivate"] = [list(x) for x in deactivated_by(src)]
        params["reactivate_from"] = src.id
        if not params["cqs"]:
            params["cqs"] = sorted(src.params.get("cqs", []))
            before = previous_stop_policies(src, "hold")
            params["restore_to"] = {q: before.get(q, "None") for q in params["cqs"]}
    if not params["cqs"]:
        raise ParamError("choose at least one ClusterQueue (or a hold to reactivate the Workloads of)")
    if ctx is not None:
        unknown_queues(ctx, params["cqs"])
    return params


def catalog_params(ctx: Context, catalog_file: str, extra_cqs: Iterable[str] = ()) -> dict[str, Any]:
    """Step 0 of the change procedure: the whole catalog is checked before anything is journaled
    (every problem is reported, each naming its profile and field); the +/− diff and, per queue,
    why it is held come with the parameters so the confirmations can show them."""
    if not str(catalog_file).strip():
        raise ParamError("name the new catalog file")
    try:
        catalog = load_catalog(catalog_file)
    except CatalogError as exc:
        raise ParamError(str(exc)) from None
    problems = catalog_problems(ctx, catalog)
    extra = sorted(set(extra_cqs))
    missing = [n for n in extra if ctx.store.get("ClusterQueue", n) is None]
    problems += [f"--cq {n}: ClusterQueue not found" for n in missing]
    if problems:
        raise ParamError(f"{catalog_file}: the catalog cannot be applied ({len(problems)} problem(s))", problems)
    current = declared_catalog(ctx)
    diff = catalog_diff(current, catalog)
    if not diff and not extra:
        raise ParamError(f"{catalog_file}: declares the same profiles as TauCluster cluster: nothing to change")
    why = affected_queues(ctx, catalog, extra)
    return {"catalog": catalog, "catalog_file": str(catalog_file), "cqs": list(why), "why": why, "diff": diff}


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
    if not isinstance(previous, list) or not previous:
        raise ParamError(f"{art['taucluster']}: the exported TauCluster declares no workload profiles")
    problems = catalog_problems(ctx, previous)
    if problems:
        raise ParamError(f"the catalog exported by {src.id} cannot be restored now ({len(problems)} problem(s))",
                         problems)
    prev_hash = next((r["data"].get("hash") for r in src.records
                      if r["event"] == "artifact" and r["data"].get("name") == "profiles"), None)
    why = affected_queues(ctx, previous)
    for q in src.params.get("cqs", []):  # what the change held, unless it no longer exists
        if ctx.store.get("ClusterQueue", q) is not None:
            why.setdefault(q, []).append(f"held by catalog change {src.id}")
    why = {q: why[q] for q in sorted(why)}
    return {"from": src.id, "previous_catalog": previous, "previous_hash": prev_hash, "cqs": list(why), "why": why,
            "diff": catalog_diff(declared_catalog(ctx), previous),
            "reactivate": [list(x) for x in deactivated_by(src)]}


def drain_params(ctx: Context, workspace: str) -> dict[str, Any]:
    """Supervise a drain that is happening: the workspace must exist and be draining."""
    if not workspace:
        raise ParamError("choose the workspace whose drain to supervise")
    ws = next((w for w in ctx.view().workspaces if w.name == workspace), None)
    if ws is None:
        raise ParamError(f"workspace {workspace!r} not found in {ctx.config.system_namespace}")
    if ws.drain.state == "NotDraining":
        raise ParamError(f"workspace {workspace!r} is not draining (NotDraining): it is neither being deleted "
                         "nor retargeted, so there is nothing to supervise")
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
