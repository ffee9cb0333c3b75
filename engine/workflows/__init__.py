"""Guided operations: resumable, journaled step machines (see base.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..identity import ClusterIdentity, resume_refusal
from . import registry
from .base import Context, Runner, Workflow
from .claims import ClaimRefused, targets
from .hold import deactivated_by
from .journal import TERMINAL, Journal, JournalBusy, JournalError, new_id, workflows_dir
from .kind import Param, ParamError, WorkflowKind
from .params import describe


def build(kind: str, params: dict[str, Any]) -> Workflow:
    """The step machine of a kind (KeyError for a kind no module registers: engine/workflows/registry.py)."""
    return registry.get(kind).build(params)


def artifacts_dir(journal: Journal) -> Path:
    return journal.path.parent / journal.id


def cluster_of(journal: Journal) -> dict[str, Any]:
    """Where a run ran: its context and the cluster identity it was bound to (None when journaled before)."""
    ident = journal.cluster
    return {"context": journal.header.get("context"), "server": ident.server if ident else None,
            "uid": ident.uid if ident else None}


def summaries(directory: Path | None = None) -> list[dict[str, Any]]:
    """Every journal in the directory, oldest start first."""
    out: list[dict[str, Any]] = []
    for p in sorted((directory or workflows_dir()).glob("*.jsonl")):
        try:
            j = Journal.open(str(p))
        except JournalError as exc:
            out.append({"id": p.stem, "kind": "?", "state": "Unreadable", "error": str(exc)})
            continue
        steps = j.steps()
        done = sum(1 for s in steps.values() if s.verified)
        try:
            target = describe(j.kind, j.params)
        except (AttributeError, TypeError, ValueError):
            target = ""
        out.append({"id": j.id, "kind": j.kind, "context": j.header.get("context"), "state": j.state,
                    "startedAt": j.records[0]["at"], "stepsDone": done,
                    "steps": len(build(j.kind, j.params).steps) if registry.find(j.kind) else None,
                    "target": target, "cluster": cluster_of(j), "terminal": j.state in TERMINAL})
    out.sort(key=lambda r: (r.get("startedAt") or 0.0, r["id"]))
    return out


def status(journal: Journal) -> dict[str, Any]:
    wf = build(journal.kind, journal.params)
    recs = journal.steps()
    steps = []
    for s in wf.steps:
        r = recs.get(s.id)
        if r is None:
            state = "Pending"
        elif r.failed:
            state = "Failed"
        elif r.verified:
            state = "Done"
        elif r.observed is not None or r.executed_done:
            state = "Waiting"
        elif r.planned is not None:
            state = "Planned"
        else:
            state = "Pending"
        steps.append({
            "id": s.id, "title": s.title, "state": state,
            "plan": (r.planned or {}).get("operations", []) if r else [],
            "executed": [e.get("result") or e.get("local") for e in (r.executed if r else [])],
            "observed": r.observed if r else None, "error": r.failed if r else None,
        })
    return {"apiVersion": "taudash/v1", "kind": "WorkflowStatus", "id": journal.id, "workflow": journal.kind,
            "context": journal.header.get("context"), "cluster": cluster_of(journal), "state": journal.state, "params": _public_params(journal.params),
            "artifacts": journal.artifacts(), "steps": steps, "journal": str(journal.path),
            "deactivated": [f"{ns}/{name}" for ns, name in deactivated_by(journal)]
            if journal.kind in registry.deactivating() else []}


def overlap_refusal(params: dict[str, Any], context: str | None, here: ClusterIdentity | None,
                    directory: Path | None = None) -> str | None:
    """Why a new run must not start while an unfinished run (InProgress or Failed) of the same cluster
    writes to one of the same objects, or None. Two runs on one queue undo each other: the second hold
    records the first one's HoldAndDrain as the queue's "previous" stopPolicy, so its release leaves the
    queue held. The run a release or rollback is about (`--reactivate-from`, `--from`) does not count."""
    mine = targets(params)
    about = {params.get("reactivate_from"), params.get("from")} - {None}
    if not mine:
        return None
    for p in sorted((directory or workflows_dir()).glob("*.jsonl")):
        try:
            j = Journal.open(str(p))
        except JournalError:
            continue
        if j.terminal or j.id in about:
            continue
        same = (resume_refusal(j.header, context, here) is None if here is not None
                else j.header.get("context") == context)
        common = sorted(mine & targets(j.params)) if same else []
        if common:
            return (f"{', '.join(common)}: workflow {j.id} ({j.kind}, {j.state}) is not finished and writes to "
                    f"{'it' if len(common) == 1 else 'them'} too: resume it (`taudash workflow resume {j.id}`) or "
                    f"mark it aborted (`taudash workflow abort {j.id}`) first; nothing was written")
    return None


def _public_params(params: dict[str, Any]) -> dict[str, Any]:
    out = dict(params)
    for key in ("catalog", "previous_catalog"):
        if key in out:
            out[key] = [p.get("name") for p in out[key]]
    return out


__all__ = ["TERMINAL", "ClaimRefused", "Context", "Journal", "JournalBusy", "JournalError", "Param", "ParamError", "Runner", "Workflow",
           "WorkflowKind", "artifacts_dir", "build", "cluster_of", "new_id", "overlap_refusal", "registry", "status",
           "summaries", "targets"]
