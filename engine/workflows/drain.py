"""Workspace drain supervision: delete blockers one by one (each confirmed), wait until Clear."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from ..model.kinds import WORKLOAD_SOURCES
from ..rules.workspaces import WorkspaceView
from .base import Check, Context, Operation, Plan, Progress, Step, Workflow
from .kind import Param, ParamError, WorkflowKind

# Blockers an operator can remove by deleting an object. An unfinished Workload is running or
# reserved work: it is waited for (or its owner cancelled by hand), never deleted here.
_DELETABLE = WORKLOAD_SOURCES


def _workspace_view(ctx: Context, name: str) -> WorkspaceView | None:
    return next((w for w in ctx.view().workspaces if w.name == name), None)


def _same_uid(cur: dict[str, Any], uid: str) -> bool:
    """Delete only the object the plan saw (not one re-created under the same name since)."""
    return bool((cur.get("metadata") or {}).get("uid") == uid)


class RemoveBlockers(Step):
    def __init__(self, workspace: str) -> None:
        self.id = "blockers"
        self.workspace = workspace
        self.title = f"Remove drain blockers of workspace {workspace}"

    async def plan(self, ctx: Context) -> Plan:
        ws = _workspace_view(ctx, self.workspace)
        ops, notes = [], []
        if ws is None:
            return Plan([], [f"workspace {self.workspace} not found"])
        for b in ws.drain.blockers:
            if b.kind not in _DELETABLE:
                notes.append(f"{b.kind} {b.namespace}/{b.name}: {b.action or b.reason} (waited for, not deleted)")
                continue
            obj = ctx.store.get(b.kind, b.name, b.namespace)
            uid = obj.uid if obj is not None else ""
            ops.append(Operation(
                "delete", b.kind, b.namespace, b.name,
                b.action or f"delete {b.kind} {b.namespace}/{b.name}",
                still_wanted=partial(_same_uid, uid=uid),
                destructive=True,
            ))
        return Plan(ops, notes, confirm_each=True)

    def preconditions(self, ctx: Context, plan: Plan) -> list[Check]:
        ws = _workspace_view(ctx, self.workspace)
        if ws is None:
            return [Check(False, f"workspace {self.workspace} not found in {ctx.config.system_namespace}")]
        if ws.drain.state == "Unknown":
            why = "; ".join(f"{u.resource}: {u.reason}" for u in ws.drain.unknown)
            return [Check(False, f"the drain state is Unknown ({why}): blockers cannot be trusted")]
        if ws.drain.state == "NotDraining":
            return [Check(False, f"workspace {self.workspace} is not being deleted or retargeted")]
        return [Check(True, f"drain {ws.drain.state}")]


class WaitClear(Step):
    # Running Workloads are waited for, never deleted: they take as long as they run (the demo's take
    # ~35 min). An hour, then Failed and resumable, rather than the 15-minute default.
    wait_timeout = 3600.0
    def __init__(self, workspace: str) -> None:
        self.id = "clear"
        self.workspace = workspace
        self.title = f"Wait until the drain of {workspace} is Clear"

    def progress(self, ctx: Context) -> Progress:
        ws = _workspace_view(ctx, self.workspace)
        if ws is None or ws.drain.state in ("Clear", "NotDraining"):
            return Progress(True, "drain clear: the controller can finish the cleanup", remaining=0)
        n = len(ws.drain.blockers)
        skipped = _skipped(ctx)
        kept = [f"{b.kind} {b.namespace}/{b.name}" for b in ws.drain.blockers
                if (b.kind, b.namespace, b.name) in skipped]
        stuck = (f"the drain of {self.workspace} cannot clear while the skipped blocker(s) remain: {', '.join(kept)}"
                 if kept else "")
        return Progress(False, f"drain {ws.drain.state}: {n} blocker(s): "
                        + ", ".join(f"{b.kind} {b.namespace}/{b.name}" for b in ws.drain.blockers[:5]), remaining=n,
                        stuck=stuck, retry_step="blockers" if stuck else None)


def _skipped(ctx: Context) -> set[tuple[str, str | None, str]]:
    """Blockers the operator declined to delete in this run's journal (and did not delete on a retry)."""
    out: set[tuple[str, str | None, str]] = set()
    for r in ctx.journal.records if ctx.journal is not None else ():
        op = (r.get("data") or {}).get("op")
        if r["event"] != "executed" or r.get("step") != "blockers" or not isinstance(op, dict):
            continue
        key: tuple[str, str | None, str] = (op.get("kind", ""), op.get("namespace"), op.get("name", ""))
        if r["data"].get("skipped"):
            out.add(key)
        else:
            out.discard(key)
    return out


def drain_workflow(params: dict[str, Any]) -> Workflow:
    ws = params["workspace"]
    return Workflow("drain", f"Supervise the drain of workspace {ws}", [RemoveBlockers(ws), WaitClear(ws)], params)


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


def _drain_values(ctx: Context, v: dict[str, Any], directory: Path | None) -> dict[str, Any]:
    return drain_params(ctx, v["workspace"] or "")


def workspace_written(params: dict[str, Any]) -> set[str]:
    """What a drain supervision writes: the workspace it supervises (it deletes that drain's blockers)."""
    return {f"TauWorkspace {params['workspace']}"} if params.get("workspace") else set()


def _describe_drain(params: dict[str, Any]) -> str:
    return f"workspace {params.get('workspace', '?')}"


DRAIN = WorkflowKind(
    name="drain", label="Drain supervision",
    help="supervise a workspace deletion/retarget drain: remove blockers one by one",
    steps="1 delete the drain's blockers, each confirmed on its own · 2 wait until the drain is Clear",
    params=(Param("--workspace", "the TauWorkspace whose deletion or retarget is draining", metavar="NAME",
                  required=True),),
    make_params=_drain_values, build=drain_workflow, targets=workspace_written,
    describe=_describe_drain, form="drain",
)
