"""Queue hold / release workflows, and what a workflow deactivated."""

from __future__ import annotations

from typing import Any

from .base import Step, Workflow
from .journal import Journal
from .steps import DeactivatePending, Reactivate, RestoreStopPolicy, SetStopPolicy

# Workflows whose drain step deactivates pending Workloads (release --reactivate-from accepts them).
DEACTIVATING_KINDS = ("hold", "catalog", "rollback")


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


def deactivated_by(journal: Journal) -> list[tuple[str, str]]:
    """Workloads a workflow (hold, catalog change or rollback) deactivated, read from its journal:
    those executed with a change, and those whose write was started but whose result was never
    recorded (the process died in between: the server may have applied it; a resume then finds it
    already inactive). Reactivating one the server never changed is a no-op: it is still active."""
    out: dict[tuple[str, str], None] = {}
    open_: dict[tuple[str, str], None] = {}
    for r in journal.records:
        if r["event"] == "resumed":  # whatever was in flight when the process died stays a candidate
            out.update(open_)
            open_.clear()
            continue
        op = (r.get("data") or {}).get("op")
        if not isinstance(op, dict) or not _is_deactivation(op):  # a confirm-each record names its op as a string
            continue
        key = (op["namespace"], op["name"])
        if r["event"] == "executing":
            open_[key] = None
        elif r["event"] == "executed":
            open_.pop(key, None)
            if ((r.get("data") or {}).get("result") or {}).get("changed"):
                out[key] = None
    return list({**out, **open_})
