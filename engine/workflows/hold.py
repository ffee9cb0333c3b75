"""Queue hold / release workflows, and what a workflow deactivated."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..model.names import DEACTIVATED_BY_ANNOTATION as DEACTIVATED_BY
from .base import Context, Step, Workflow
from .journal import Journal, JournalError
from .kind import Param, ParamError, WorkflowKind, open_journal, profile_queues, unknown_queues
from .ops import DONE, operation_records
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


def _is_deactivation(op: dict[str, Any]) -> bool:
    # Journals before the deactivated-by annotation patched only spec.active.
    return op.get("kind") == "Workload" and ((op.get("patch") or {}).get("spec") or {}).get("active") is False


def _is_reactivation(op: dict[str, Any]) -> bool:
    return op.get("kind") == "Workload" and ((op.get("patch") or {}).get("spec") or {}).get("active") is True


def about(journal: Journal) -> str | None:
    """The run a release or rollback undoes (`--reactivate-from`, `--from`), else None."""
    p = journal.params
    ref = p.get("reactivate_from") or (p.get("from") if journal.kind == "rollback" else None)
    return str(ref) if ref else None


def later_runs(journal: Journal, directory: Path | None = None) -> list[Journal]:
    """The runs in the journal directory that undo this one (a release --reactivate-from it, its rollback)."""
    out = []
    for p in sorted((directory or journal.path.parent).glob("*.jsonl")):
        if p == journal.path:
            continue
        try:
            other = Journal.open(str(p))
        except (JournalError, OSError):
            continue
        if about(other) == journal.id:
            out.append(other)
    return out


def deactivated_by(journal: Journal, later: Iterable[Journal] | None = None, store: Any = None) -> list[tuple[str, str]]:
    """Workloads this run (a hold, catalog change or rollback) deactivated that are still deactivated, as
    (namespace, name): its deactivations — done, or in flight when the process died (the server may have
    applied them; reactivating an active Workload is a no-op) — minus what it reactivated itself and what
    the runs that undo it reactivated since (`later`: by default read from the journal directory). With
    `store` (a live store of the same cluster) only those still inactive there and annotated
    `taudash.io/deactivated-by: <this run>` are kept."""
    events: list[tuple[float, int, tuple[str, str], bool]] = []  # (when, order, workload, deactivated?)
    runs = [journal, *(later_runs(journal) if later is None else later)]
    for rank, run in enumerate(runs):
        for rec in operation_records(run):
            if rec.kind != "Workload" or not rec.namespace:
                continue
            key = (rec.namespace, rec.name)
            if run is journal and _is_deactivation(rec.op) and rec.wrote:
                events.append((rec.sent_at or rec.at, rank, key, True))  # when sent (a resume may close it later)
            elif _is_reactivation(rec.op) and rec.state == DONE:  # one in flight may not have landed
                events.append((rec.at, rank, key, False))
    still: dict[tuple[str, str], None] = {}
    for _at, _rank, key, deactivated in sorted(events, key=lambda e: (e[0], e[1])):
        if deactivated:
            still[key] = None
        else:
            still.pop(key, None)
    out = list(still)
    if store is not None:
        out = [key for key in out if _still_ours(store, key, journal.id)]
    return out


def _still_ours(store: Any, key: tuple[str, str], workflow_id: str) -> bool:
    wl = store.get("Workload", key[1], key[0])
    return wl is not None and not wl.finished and not wl.spec.active and \
        wl.metadata.annotations.get(DEACTIVATED_BY) == workflow_id


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
    queues must exist."""
    from .registry import deactivating  # the registry lists this module's kinds: read at call time

    params: dict[str, Any] = {"cqs": sorted(set(cqs))}
    if reactivate_from:
        src = open_journal(reactivate_from, directory)
        kinds = deactivating()
        if src.kind not in kinds:
            raise ParamError(f"workflow {src.id} is a {src.kind}: only a {', '.join(kinds)} "
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


def _hold_values(ctx: Context, v: dict[str, Any], directory: Path | None) -> dict[str, Any]:
    return hold_params(ctx, v["cq"], v["profile"], v["mode"], cancel_pending=not v["keep_pending"])


def _release_values(ctx: Context, v: dict[str, Any], directory: Path | None) -> dict[str, Any]:
    return release_params(v["cq"], v["reactivate_from"], directory, ctx=ctx)


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
    make_params=_hold_values, build=hold_workflow, describe=_describe_hold, deactivates=True,
)

RELEASE = WorkflowKind(
    name="release", label="Release queues",
    help="restore admission (stopPolicy None), optionally reactivating Workloads",
    steps="1 restore admission (stopPolicy None) · 2 reactivate the Workloads a hold, catalog change or "
          "rollback deactivated (optional)",
    params=(
        Param("--cq", "ClusterQueue to release (repeatable)", type="list", metavar="NAME",
              label="ClusterQueues to release", pick="queues"),
        Param("--reactivate-from", "reactivate the Workloads that workflow deactivated", metavar="ID"),
    ),
    make_params=_release_values, build=release_workflow, describe=_describe_release,
)
