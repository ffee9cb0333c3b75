"""A toy workflow kind as a newcomer would add one: this module (steps, builder, description) plus one
line in engine/workflows/registry.py — which the tests stand in for with `registered_toy` (the list with
this kind appended). It writes nothing, and says so (`targets=NO_TARGETS`: it claims nothing and overlaps no
other run): it waits until a ClusterQueue exists and verifies it is there. Its dashboard form is generated
from its parameters (it declares no `form`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taudash.engine.model import ClusterQueue
from taudash.engine.workflows import Param, WorkflowKind, registry
from taudash.engine.workflows.base import Check, Context, Progress, Step, Workflow
from taudash.engine.workflows.kind import NO_TARGETS, unknown_queues


class QueueThere(Step):
    def __init__(self, cq: str) -> None:
        self.id = "there"
        self.cq = cq
        self.title = f"Check that ClusterQueue {cq} is there"

    def progress(self, ctx: Context) -> Progress:
        there = ctx.store.get(ClusterQueue, self.cq) is not None
        return Progress(there, f"ClusterQueue {self.cq} {'found' if there else 'not there yet'}")

    def verify(self, ctx: Context) -> list[Check]:
        return [Check(ctx.store.get(ClusterQueue, self.cq) is not None, f"ClusterQueue {self.cq} is there")]


def queue_check_workflow(params: dict[str, Any]) -> Workflow:
    return Workflow("queue-check", f"Check {params['cq']}", [QueueThere(params["cq"])], params)


def queue_check_params(ctx: Context, v: dict[str, Any], directory: Path | None) -> dict[str, Any]:
    unknown_queues(ctx, [v["cq"]])
    return {"cq": v["cq"], "loud": v["loud"]}


QUEUE_CHECK = WorkflowKind(
    name="queue-check", label="Queue check",
    help="a toy: check that a ClusterQueue is there (writes nothing)",
    steps="1 wait until the ClusterQueue is there",
    params=(Param("--cq", "the ClusterQueue to look for", metavar="NAME", required=True),
            Param("--loud", "say more", type="flag")),
    make_params=queue_check_params, build=queue_check_workflow, targets=NO_TARGETS,
    describe=lambda p: f"queue {p.get('cq', '?')}",
)


def registered_toy(monkeypatch) -> None:
    """The one registry line: WORKFLOWS = [..., QUEUE_CHECK]."""
    monkeypatch.setattr(registry, "WORKFLOWS", [*registry.WORKFLOWS, QUEUE_CHECK])
