"""Queue hold / release workflows."""

from __future__ import annotations

from .base import Workflow
from .steps import CancelPending, Reactivate, SetStopPolicy


def hold_workflow(params: dict) -> Workflow:
    cqs = params["cqs"]
    mode = params.get("mode", "HoldAndDrain")
    steps = [SetStopPolicy("hold", cqs, mode)]
    if params.get("cancel_pending", True):
        steps.append(CancelPending("drain", cqs))
    return Workflow("hold", f"Hold {', '.join(cqs)} ({mode})", steps, params)


def release_workflow(params: dict) -> Workflow:
    cqs = params["cqs"]
    steps = [SetStopPolicy("restore", cqs, "None")]
    if params.get("reactivate"):
        steps.append(Reactivate("reactivate", [tuple(x) for x in params["reactivate"]]))
    return Workflow("release", f"Release {', '.join(cqs)}", steps, params)


def deactivated_by(journal) -> list[tuple[str, str]]:
    """Workloads a workflow deactivated, read from its journal."""
    out = []
    for r in journal.records:
        op = (r.get("data") or {}).get("op") or {}
        res = (r.get("data") or {}).get("result") or {}
        if r["event"] == "executed" and op.get("kind") == "Workload" and op.get("patch") == {"spec": {"active": False}} \
                and res.get("changed"):
            out.append((op["namespace"], op["name"]))
    return out
