"""Guided operations as resumable step machines.

A workflow is an ordered list of steps. Each step has a plan (the exact objects and patches,
recomputed from live state so that re-planning after a crash never repeats an action), fail-closed
preconditions, an action (the plan's operations, through engine.actions), a wait condition read
from the live store (progress and ETA), and a verification. The runner journals planned /
confirmed / executed / observed / verified for every step.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..actions import Actions, Obj, Result
from ..rules.base import RuleConfig
from ..store import Store
from ..view import ClusterView, derive
from .journal import Journal


class StepFailed(Exception):
    pass


class Crash(BaseException):
    """Raised by test hooks to stop the runner exactly where a kill would."""


@dataclass(frozen=True)
class Check:
    ok: bool
    message: str

    def to_dict(self) -> dict:
        return {"ok": self.ok, "message": self.message}


@dataclass
class Operation:
    """One write: a merge patch (planned from the live object) or a delete."""

    verb: str  # patch | delete
    kind: str
    namespace: str | None
    name: str
    description: str
    patch: Obj | None = None  # for display; `planner` recomputes it from the live object
    planner: Callable[[Obj], Obj | None] | None = None
    still_wanted: Callable[[Obj], bool] | None = None  # delete: re-check before deleting
    destructive: bool = False
    before: str = ""  # a one-line "field: old → new" for the diff
    after: str = ""

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    def diff_line(self) -> str:
        if self.verb == "delete":
            return f"- delete {self.ref}"
        return f"~ {self.ref}: {self.before} → {self.after}" if self.before or self.after else f"~ {self.ref}"

    def to_dict(self) -> dict:
        return {"verb": self.verb, "kind": self.kind, "namespace": self.namespace, "name": self.name,
                "description": self.description, "patch": self.patch, "destructive": self.destructive,
                "diff": self.diff_line()}

    async def execute(self, actions: Actions, reason: str) -> Result:
        if self.verb == "patch":
            planner = self.planner or (lambda _cur, p=self.patch: p)
            return await actions.patch(self.kind, self.name, self.namespace, planner, reason)
        if self.verb == "delete":
            return await actions.delete(self.kind, self.name, self.namespace, self.still_wanted or (lambda _o: True), reason)
        raise ValueError(f"unknown operation {self.verb}")


@dataclass
class Plan:
    operations: list[Operation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    confirm_each: bool = False  # destructive deletes are confirmed one by one

    @property
    def destructive(self) -> bool:
        return any(op.destructive for op in self.operations)

    def diff(self) -> list[str]:
        return [op.diff_line() for op in self.operations]

    def signature(self) -> list[str]:
        return sorted(f"{op.verb}:{op.ref}" for op in self.operations)

    def to_dict(self) -> dict:
        return {"operations": [op.to_dict() for op in self.operations], "notes": self.notes,
                "destructive": self.destructive, "signature": self.signature()}


@dataclass
class Progress:
    done: bool
    message: str
    remaining: float | None = None  # a number that falls to zero as the wait completes (for an ETA)
    replan: bool = False  # new work for this step's action appeared while waiting (plan it again)
    items: list[tuple[str, float, float]] = field(default_factory=list)  # (label, current, target)


Confirm = Callable[["Step", Plan, Operation | None], Awaitable[bool]]


@dataclass
class Context:
    """What steps see: the live store (kept current by a source), the write path, time, files."""

    store: Store
    actions: Actions
    config: RuleConfig = field(default_factory=RuleConfig)
    journal: Journal | None = None
    clock: Callable[[], float] = time.time
    lock: Any = None  # the session lock, when a dashboard reads the same store
    hooks: Callable[[str], None] | None = None
    artifacts_dir: Path | None = None
    state: dict[str, Any] = field(default_factory=dict)  # step-to-step data kept in memory

    def view(self) -> ClusterView:
        now = datetime.fromtimestamp(self.clock(), UTC)
        if self.lock is not None:
            with self.lock:
                return derive(self.store, now, self.config)
        return derive(self.store, now, self.config)

    def hook(self, point: str) -> None:
        if self.hooks is not None:
            self.hooks(point)


class Step:
    id: str = ""
    title: str = ""
    wait_timeout: float = 3600.0

    async def plan(self, ctx: Context) -> Plan:
        return Plan()

    def preconditions(self, ctx: Context, plan: Plan) -> list[Check]:
        return []

    async def run_local(self, ctx: Context) -> dict | None:
        """Work that is not a cluster write (e.g. exporting files); journaled as executed."""
        return None

    def progress(self, ctx: Context) -> Progress:
        return Progress(True, "nothing to wait for")

    def verify(self, ctx: Context) -> list[Check]:
        return []

    def describe(self) -> str:
        return self.title


@dataclass
class Workflow:
    kind: str
    title: str
    steps: list[Step]
    params: dict[str, Any]


@dataclass
class RunnerEvent:
    kind: str  # step-start | plan | confirm | executed | progress | observed | verified | failed | completed | aborted
    step: str | None
    message: str
    data: dict[str, Any] = field(default_factory=dict)


class Runner:
    def __init__(self, workflow: Workflow, ctx: Context, journal: Journal, confirm: Confirm,
                 on_event: Callable[[RunnerEvent], None] | None = None, poll: float = 0.5,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.workflow = workflow
        self.ctx = ctx
        self.journal = journal
        self.confirm = confirm
        self.on_event = on_event or (lambda e: None)
        self.poll = poll
        self.sleep = sleep
        ctx.journal = journal

    def _emit(self, kind: str, step: str | None, message: str, **data: Any) -> None:
        self.on_event(RunnerEvent(kind, step, message, data))

    async def run(self) -> str:
        """Run (or resume) to the end. Returns the final state: Completed, Aborted or Failed."""
        if len(self.journal.records) > 1:
            self.journal.append("resumed", None, {})
        records = self.journal.steps()
        for step in self.workflow.steps:
            rec = records.get(step.id)
            if rec is not None and rec.verified:
                continue
            self._emit("step-start", step.id, step.title)
            try:
                if rec is None or not rec.executed_done:
                    outcome = await self._plan_and_execute(step, rec)
                    if outcome == "aborted":
                        return "Aborted"
                if rec is None or rec.observed is None:
                    while await self._wait(step) == "replan":
                        if await self._plan_and_execute(step, None) == "aborted":
                            return "Aborted"
                checks = step.verify(self.ctx)
                if asyncio.iscoroutine(checks):
                    checks = await checks
                bad = [c for c in checks if not c.ok]
                if bad:
                    raise StepFailed("; ".join(c.message for c in bad))
                self.journal.append("verified", step.id, {"checks": [c.to_dict() for c in checks]})
                self.ctx.hook(f"{step.id}:verified")
                self._emit("verified", step.id, f"{step.title}: done")
            except StepFailed as exc:
                self.journal.append("failed", step.id, {"error": str(exc)})
                self._emit("failed", step.id, str(exc))
                return "Failed"
        self.journal.append("completed", None, {})
        self._emit("completed", None, f"{self.workflow.title}: completed")
        return "Completed"

    async def _plan_and_execute(self, step: Step, rec) -> str:
        self.ctx.hook(f"{step.id}:before-plan")
        plan = await step.plan(self.ctx)
        self.journal.append("planned", step.id, plan.to_dict())
        self._emit("plan", step.id, f"{step.title}: {len(plan.operations)} change(s)", plan=plan.to_dict())
        self.ctx.hook(f"{step.id}:planned")
        checks = step.preconditions(self.ctx, plan)
        bad = [c for c in checks if not c.ok]
        if bad:
            raise StepFailed("precondition failed: " + "; ".join(c.message for c in bad))
        if plan.operations:
            confirmed_before = rec is not None and rec.confirmed and rec.planned is not None and \
                rec.planned.get("signature") == plan.signature()
            if not plan.confirm_each and not confirmed_before:
                if not await self.confirm(step, plan, None):
                    self.journal.append("declined", step.id, {})
                    self.journal.append("aborted", None, {"step": step.id})
                    self._emit("aborted", step.id, f"{step.title}: not confirmed; workflow stopped")
                    return "aborted"
                self.journal.append("confirmed", step.id, {"signature": plan.signature()})
                self.ctx.hook(f"{step.id}:confirmed")
            for i, op in enumerate(plan.operations):
                if plan.confirm_each:
                    if not await self.confirm(step, plan, op):
                        self.journal.append("executed", step.id, {"op": op.to_dict(), "skipped": True})
                        self._emit("executed", step.id, f"skipped: {op.diff_line()}")
                        continue
                    self.journal.append("confirmed", step.id, {"op": op.ref})
                # Intent first: a kill between the server applying the write and the "executed" record
                # below must not lose track of it (a release reads what a hold changed from here).
                self.journal.append("executing", step.id, {"op": op.to_dict()})
                result = await self._execute(step, op)
                self.journal.append("executed", step.id, {"op": op.to_dict(), "result": result.summary()})
                self._emit("executed", step.id, f"{op.diff_line()} ({'done' if result.changed else result.note})")
                self.ctx.hook(f"{step.id}:op{i}")
        local = await step.run_local(self.ctx)
        if local is not None:
            self.journal.append("executed", step.id, {"local": local})
        self.journal.append("executed-all", step.id, {})
        self.ctx.hook(f"{step.id}:executed")
        return "ok"

    async def _execute(self, step: Step, op: Operation) -> Result:
        from ..actions import ConflictPersisted, PermissionDenied, PreconditionFailed, WriteRefused

        try:
            return await op.execute(self.ctx.actions, f"{self.workflow.kind} {self.journal.id}: {step.title}")
        except (WriteRefused, PermissionDenied, PreconditionFailed, ConflictPersisted) as exc:
            raise StepFailed(str(exc)) from None
        except Exception as exc:  # an API failure: stop here, resumable
            raise StepFailed(f"{op.ref}: {exc}") from None

    async def _wait(self, step: Step) -> str:
        start = self.ctx.clock()
        samples: list[tuple[float, float]] = []
        first = True
        while True:
            prog = step.progress(self.ctx)
            now = self.ctx.clock()
            eta = None
            if prog.remaining is not None:
                samples.append((now, prog.remaining))
                samples = samples[-30:]
                eta = _eta(samples)
            self._emit("progress", step.id, prog.message, done=prog.done, eta=eta,
                       items=[list(i) for i in prog.items])
            if prog.done:
                self.journal.append("observed", step.id, {"message": prog.message, "after": now - start})
                self.ctx.hook(f"{step.id}:observed")
                return "done"
            if prog.replan:
                self.journal.append("replan", step.id, {"message": prog.message})
                return "replan"
            if now - start > step.wait_timeout:
                raise StepFailed(f"{step.title}: still waiting after {int(now - start)} s: {prog.message}")
            if first:
                self.ctx.hook(f"{step.id}:mid-wait")
                first = False
            await self.sleep(self.poll)


def _eta(samples: list[tuple[float, float]]) -> float | None:
    """Seconds until `remaining` reaches zero at the recent rate, or None when not falling."""
    if len(samples) < 2:
        return None
    (t0, r0), (t1, r1) = samples[0], samples[-1]
    if t1 <= t0 or r1 >= r0:
        return None
    rate = (r0 - r1) / (t1 - t0)
    return r1 / rate
