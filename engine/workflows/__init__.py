"""Guided operations: resumable, journaled step machines (see base.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..identity import ClusterIdentity, resume_refusal
from . import registry
from .base import Context, Workflow
from .claims import ClaimRefused, about
from .journal import TERMINAL, Journal, JournalBusy, JournalError, new_id, workflows_dir
from .kind import Param, ParamError, WorkflowKind
from .params import describe
from .registry import targets
from .runner import Runner
from .summary import cluster_of, leftovers, status


def build(kind: str, params: dict[str, Any]) -> Workflow:
    """The step machine of a kind (KeyError for a kind no module registers: engine/workflows/registry.py)."""
    return registry.get(kind).build(params)


def artifacts_dir(journal: Journal) -> Path:
    return journal.path.parent / journal.id


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




def overlap_refusal(kind: str, params: dict[str, Any], context: str | None, here: ClusterIdentity | None,
                    directory: Path | None = None) -> str | None:
    """Why a new run of `kind` must not start while an unfinished run (InProgress or Failed) of the same
    cluster writes to one of the same objects (the targets each kind declares), or None. Two runs on one
    queue undo each other: the second hold records the first one's HoldAndDrain as the queue's "previous"
    stopPolicy, so its release leaves the queue held. The run a release or rollback is about
    (`--reactivate-from`, `--from`) does not count; nor does a run of a kind this taudash does not know."""
    mine = targets(kind, params)
    undone = about(params)
    if not mine:
        return None
    for p in sorted((directory or workflows_dir()).glob("*.jsonl")):
        try:
            j = Journal.open(str(p))
        except JournalError:
            continue
        if j.terminal or j.id in undone or registry.find(j.kind) is None:
            continue
        same = (resume_refusal(j.header, context, here) is None if here is not None
                else j.header.get("context") == context)
        common = sorted(mine & targets(j.kind, j.params)) if same else []
        if common:
            return (f"{', '.join(common)}: workflow {j.id} ({j.kind}, {j.state}) is not finished and writes to "
                    f"{'it' if len(common) == 1 else 'them'} too: resume it (`taudash workflow resume {j.id}`) or "
                    f"end it for good (`taudash workflow abort {j.id}`) first; nothing was written")
    return None


__all__ = ["TERMINAL", "ClaimRefused", "Context", "Journal", "JournalBusy", "JournalError", "Param", "ParamError",
           "Runner", "Workflow", "WorkflowKind", "artifacts_dir", "build", "cluster_of", "leftovers", "new_id",
           "overlap_refusal", "registry", "status", "summaries", "targets"]
