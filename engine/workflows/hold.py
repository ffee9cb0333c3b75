"""Queue hold / release workflows."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .base import Context, Step, Workflow
from .journal import deactivated_by
from .kind import Param, ParamError, RunOf, WorkflowKind, open_journal, profile_queues, unknown_queues
from .steps import DeactivatePending, Reactivate, RestoreStopPolicy, SetStopPolicy, previous_stop_policies

HOLD_MODES = ("HoldAndDrain", "Hold")


def hold_workflow(params: dict[str, Any]) -> Workflow:
    cqs = params["cqs"]
    mode = params.get("mode", "HoldAndDrain")
    steps: list[Step] = [SetStopPolicy("hold", cqs, mode, why=params.get("why"))]
    if params.get("cancel_pending", True):
        steps.append(DeactivatePending("drain", cqs))
    return Workflow("hold", f"Hold {', '.join(cqs)} ({mode})", steps, params)


def release_workflow(params: dict[str, Any]) -> Workflow:
    cqs = params["cqs"]
    if params.get("restore_to") is not None:  # releasing another workflow's queues: back to what they were
        steps: list[Step] = [RestoreStopPolicy("restore", cqs, targets=params["restore_to"])]
    else:
        steps = [SetStopPolicy("restore", cqs, "None")]
    if params.get("reactivate"):
        steps.append(Reactivate("reactivate", [tuple(x) for x in params["reactivate"]],
                                source=params.get("reactivate_from")))
    return Workflow("release", f"Release {', '.join(cqs)}", steps, params)


# --- parameters -------------------------------------------------------------------------------------


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
    queues must exist. That the workflow is of a kind that deactivates is checked before, against
    the registry, by WorkflowKind.make (RELEASE's `--reactivate-from`)."""
    params: dict[str, Any] = {"cqs": sorted(set(cqs))}
    if reactivate_from:
        src = open_journal(reactivate_from, directory)
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


def _hold_values(ctx: Context, v: dict[str, Any], directory: Path | None) -> dict[str, Any]:
    return hold_params(ctx, v["cq"], v["profile"], v["mode"], cancel_pending=not v["keep_pending"])


def _release_values(ctx: Context, v: dict[str, Any], directory: Path | None) -> dict[str, Any]:
    return release_params(v["cq"], v["reactivate_from"], directory, ctx=ctx)


def queues_written(params: dict[str, Any]) -> set[str]:
    """What a hold or a release writes: its ClusterQueues (a release of another run's queues: those too)."""
    return {f"ClusterQueue {q}" for q in [*(params.get("cqs") or []), *(params.get("restore_to") or {})]}


def _describe_hold(params: dict[str, Any]) -> str:
    extra = "" if params.get("cancel_pending", True) else ", pending kept"
    return f"{', '.join(params.get('cqs') or [])} ({params.get('mode', 'HoldAndDrain')}{extra})"


def _describe_release(params: dict[str, Any]) -> str:
    n = len(params.get("reactivate") or [])
    return ", ".join(params.get("cqs") or []) + (f", reactivate {n} Workload(s)" if n else "")


HOLD = WorkflowKind(
    name="hold", label="Hold queues",
    help="HoldAndDrain (or Hold) chosen ClusterQueues and wait until drained",
    steps="1 stop admission (stopPolicy) · 2 deactivate pending Workloads, wait until pending, reserving and "
          "admitted reach 0",
    params=(
        Param("--cq", "ClusterQueue (repeatable)", type="list", metavar="NAME", pick="queues"),
        Param("--profile", "every queue this profile resolves to", type="list", metavar="P"),
        Param("--mode", "HoldAndDrain evicts admitted Workloads; Hold lets them run to completion",
              type="choice", choices=HOLD_MODES, default="HoldAndDrain"),
        Param("--keep-pending", "do not deactivate pending Workloads", type="flag"),
    ),
    make_params=_hold_values, build=hold_workflow, targets=queues_written, describe=_describe_hold,
    deactivates=True, form="hold",
)

RELEASE = WorkflowKind(
    name="release", label="Release queues",
    help="restore admission (stopPolicy None), optionally reactivating Workloads",
    steps="1 restore admission (stopPolicy None) · 2 reactivate the Workloads a hold, catalog change or "
          "rollback deactivated (optional)",
    params=(
        Param("--cq", "ClusterQueue to release (repeatable)", type="list", metavar="NAME",
              label="ClusterQueues to release", pick="queues"),
        Param("--reactivate-from", "reactivate the Workloads that workflow deactivated", metavar="ID",
              run_of=RunOf(lambda kind: kind.deactivates, "deactivates Workloads")),
    ),
    make_params=_release_values, build=release_workflow, targets=queues_written, describe=_describe_release,
    form="release", undoes="reactivate_from",
)
