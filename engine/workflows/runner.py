"""The runner: runs (or resumes) one workflow's steps against the cluster, journaling every move.

Per step: plan (recomputed from the live store after the run's own writes are seen), preconditions,
confirmation, the writes (intent journaled before each request), the wait, the verification. A run
holds claims on what it writes while it runs (claims.py); what its kind declares about its runs
(engine/workflows/kind.py, read from the registry) is all it knows of the kind.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from ..actions import Result
from ..store import AccessState
from . import registry
from .base import (
    PAUSE,
    RETRY,
    SETTLE_TIMEOUT,
    STOP,
    WAIT_ANYWAY,
    Confirm,
    Context,
    Operation,
    Pause,
    Plan,
    Progress,
    RunnerEvent,
    Step,
    StepFailed,
    Workflow,
)
from .claims import Claims, holding
from .journal import Journal, StepRecord
from .ops import in_flight, landed


@dataclass
class _Written:
    """A write this run made, to be seen in the store before the next plan or progress check."""

    kind: str
    namespace: str | None
    name: str
    deleted: bool
    resource_version: str = ""  # the server's answer (patch)
    before_version: str = ""  # the object's version before the write


class Runner:
    def __init__(self, workflow: Workflow, ctx: Context, journal: Journal, confirm: Confirm,
                 on_event: Callable[[RunnerEvent], None] | None = None, poll: float = 0.5,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, wait_timeout: float | None = None,
                 settle_timeout: float = SETTLE_TIMEOUT, take_over: str | None = None, claims: bool = True) -> None:
        self.workflow = workflow
        self.ctx = ctx
        self.journal = journal
        self.confirm = confirm
        self.on_event = on_event or (lambda e: None)
        self.poll = poll
        self.sleep = sleep
        self.wait_timeout = wait_timeout  # None: each step's own
        self.settle_timeout = settle_timeout
        self._written: list[_Written] = []
        self._current: str | None = None  # the step being run (where a pause or interruption stops it)
        ctx.journal = journal
        # The run's claims on the cluster (claims.py): `take_over` names a stale holder to replace;
        # `claims=False` for a run on a throwaway copy of the cluster (a rehearsal's fork).
        self.take_over = take_over
        self.claims = claims
        self._claims: Claims | None = None

    def _emit(self, kind: str, step: str | None, message: str, **data: Any) -> None:
        self.on_event(RunnerEvent(kind, step, message, data))

    async def run(self) -> str:
        """Run (or resume) to the end. Returns the final state: Completed, Paused (declined, or paused by
        the operator; resumable) or Failed (resumable), or the state another process left it in.
        JournalBusy when another runner runs it now: nothing is written. Interrupted (Ctrl-C, the task
        cancelled), the run is journaled Paused and the interruption goes on."""
        with self.journal.running():
            self.journal.reload()  # what another process did before this one took the run over
            if self.journal.terminal:
                return self.journal.state
            async with holding(self) as claims:  # ClaimRefused: another workflow holds a target
                self._claims = claims
                try:
                    return await self._run()
                except (asyncio.CancelledError, KeyboardInterrupt):  # journaled before the claims are let go
                    self._pause(Pause("interrupted", "interrupted (Ctrl-C, a closed terminal or the dashboard quit)"))
                    raise

    async def _run(self) -> str:
        if len(self.journal.records) > 1:
            self.journal.append("resumed", None, {})
            try:
                await self._reconcile()
            except StepFailed as exc:
                return self._failed(self._current, str(exc))
        records = self.journal.steps()
        for step in self.workflow.steps:
            rec = records.get(step.id)
            if rec is not None and rec.verified:
                continue
            self._current = step.id
            self._emit("step-start", step.id, step.title)
            try:
                if rec is None or not rec.executed_done:
                    await self._plan_and_execute(step, rec)
                if rec is None or rec.observed is None:
                    while (outcome := await self._wait(step)) != "done":
                        again = step if outcome == "replan" else self._step(outcome)
                        await self._plan_and_execute(again, None)
                verified = step.verify(self.ctx)
                checks = verified if isinstance(verified, list) else await verified
                bad = [c for c in checks if not c.ok]
                if bad:
                    raise StepFailed("; ".join(c.message for c in bad))
                self.journal.append("verified", step.id, {"checks": [c.to_dict() for c in checks]})
                self.ctx.hook(f"{step.id}:verified")
                self._emit("verified", step.id, f"{step.title}: done")
            except StepFailed as exc:
                return self._failed(step.id, str(exc))
            except Pause as pause:
                self._pause(pause)
                return "Paused"
        self._current = None
        self.journal.append("completed", None, {})
        self._emit("completed", None, f"{self.workflow.title}: completed")
        self._mark_rolled_back()
        return "Completed"

    def _failed(self, step_id: str | None, error: str) -> str:
        self.journal.append("failed", step_id, {"error": error})
        self._emit("failed", step_id, error)
        return "Failed"

    def _pause(self, pause: Pause) -> None:
        """Journal the pause (once: an interruption that follows the operator's pause adds nothing)."""
        last = self.journal.records[-1] if self.journal.records else {}
        if last.get("event") == "paused":
            return
        step = self._current
        title = self._step(step).title if step else ""
        self.journal.append("paused", None, {"step": step, "reason": pause.reason, "message": pause.message})
        where = f"{title}: " if title else ""
        self._emit("paused", step, f"{where}{pause.message}; paused (resume with `taudash workflow resume "
                                   f"{self.journal.id}`)", reason=pause.reason)

    async def _reconcile(self) -> None:
        """Writes in flight when the run stopped (sent, never answered): re-read each object and record, in
        the journal and in the audit log, whether the server applied it, before anything is planned again."""
        audit = getattr(self.ctx.actions, "audit", None)
        for rec in in_flight(self.journal):
            step = self._find(rec.step)
            self._current = rec.step
            try:
                obj = await self.ctx.actions.read(rec.kind, rec.name, rec.namespace)
            except Exception as exc:  # noqa: BLE001 - unreadable: nothing can be confirmed, so nothing is planned
                raise StepFailed(f"cannot re-read {rec.ref} to find out whether the write in flight when the run "
                                 f"stopped was applied ({exc}); resume again once the cluster answers") from None
            done = step.landed(rec.op, obj) if step is not None else landed(rec.op, obj)
            note = ("applied" if done else "not applied") + ": found by re-reading the object after the run stopped"
            self.journal.append("executed", rec.step, {"op": rec.op, "result": {
                "verb": rec.verb, "kind": rec.kind, "namespace": rec.namespace, "name": rec.name,
                "changed": done, "note": note, "reconciled": True}})
            if audit is not None and rec.sent_at is not None:
                audit.reconciled(rec.verb, rec.kind, rec.namespace, rec.name, done, note, since=rec.sent_at,
                                 at=time.time())
            self._emit("executed", rec.step, f"{rec.diff} ({'done' if done else 'not done'}: the write was in "
                                             "flight when the run stopped; re-read now)")
        self._current = None

    def _find(self, step_id: str | None) -> Step | None:
        return next((s for s in self.workflow.steps if s.id == step_id), None)

    def _step(self, step_id: str) -> Step:
        return next(s for s in self.workflow.steps if s.id == step_id)

    def _mark_rolled_back(self) -> None:
        """A completed run of a kind that rolls back (WorkflowKind.rolls_back: a rollback) ends the run it
        undid: that run becomes RolledBack (never resumable)."""
        kind = registry.find(self.workflow.kind)
        source_id = self.workflow.params.get(kind.undoes) if kind is not None and kind.rolls_back else None
        if not source_id:
            return
        try:
            source = Journal.open(str(source_id), self.journal.path.parent)
        except Exception as exc:  # noqa: BLE001 - a missing source journal must not fail a completed rollback
            self.journal.append("warning", None, {"message": f"could not mark workflow {source_id} rolled back: {exc}"})
            return
        if source.state != "RolledBack":  # whatever it was (even Completed or Aborted), it is undone now
            source.append("rolled-back", None, {"by": self.journal.id})

    async def _plan_and_execute(self, step: Step, rec: StepRecord | None) -> None:
        self.ctx.hook(f"{step.id}:before-plan")
        await self._settle(step)
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
            covered = not plan.confirm_each and not confirmed_before and self._covered(step, plan)
            if covered:
                self.journal.append("confirmed", step.id, {"signature": plan.signature(), "covered": True})
                self._emit("plan", step.id, f"{step.title}: {len(plan.operations)} change(s) already approved "
                           "with this step's first confirmation")
            elif not plan.confirm_each and not confirmed_before:
                if not _approved(await self.confirm(step, plan, None)):
                    self.journal.append("declined", step.id, {})
                    raise Pause("declined", "not confirmed")
                self.journal.append("confirmed", step.id, {"signature": plan.signature(),
                                                           "covers": sorted(set(plan.covers) | set(plan.signature()))})
                self.ctx.hook(f"{step.id}:confirmed")
            for i, op in enumerate(plan.operations):
                if plan.confirm_each:
                    answer = await self.confirm(step, plan, op)
                    if answer == PAUSE:
                        raise Pause("declined", f"paused before {op.ref}")
                    if not _approved(answer):
                        self.journal.append("executed", step.id, {"op": op.to_dict(), "skipped": True})
                        self._emit("executed", step.id, f"skipped: {op.diff_line()}")
                        continue
                    self.journal.append("confirmed", step.id, {"op": op.ref})
                # Intent first: a kill between the server applying the write and the "executed" record
                # below must not lose track of it (a release reads what a hold changed from here).
                self.journal.append("executing", step.id, {"op": op.to_dict()})
                before = self.ctx.store.get(op.kind, op.name, op.namespace)
                result = await self._execute(step, op)
                self._remember(op, result, before)
                self.journal.append("executed", step.id, {"op": op.to_dict(), "result": result.summary()})
                self._emit("executed", step.id, f"{op.diff_line()} ({'done' if result.changed else result.note})")
                self.ctx.hook(f"{step.id}:op{i}")
        local = await step.run_local(self.ctx)
        if local is not None:
            self.journal.append("executed", step.id, {"local": local})
            said = step.local_summary(local)
            if said:  # e.g. where an export saved its files
                self._emit("executed", step.id, said, local=local)
        self.journal.append("executed-all", step.id, {})
        self.ctx.hook(f"{step.id}:executed")

    def _covered(self, step: Step, plan: Plan) -> bool:
        """Every operation of `plan` was approved in advance by an earlier confirmation of this step (its
        `covers`, kept in the journal so a resumed run honours it too)."""
        approved: set[str] = set()
        for r in self.journal.records:
            if r["event"] == "confirmed" and r["step"] == step.id:
                approved.update((r.get("data") or {}).get("covers") or ())
        return bool(approved) and set(plan.signature()) <= approved

    async def _execute(self, step: Step, op: Operation) -> Result:
        from ..actions import ConflictPersisted, PermissionDenied, PreconditionFailed, WriteRefused

        if self._claims is not None and self._claims.lost:
            raise StepFailed(self._claims.lost)
        try:
            return await op.execute(self.ctx.actions, f"{self.workflow.kind} {self.journal.id}: {step.title}")
        except (WriteRefused, PermissionDenied, PreconditionFailed, ConflictPersisted) as exc:
            raise StepFailed(str(exc)) from None
        except Exception as exc:  # an API failure: stop here, resumable
            raise StepFailed(f"{op.ref}: {exc}") from None

    def _remember(self, op: Operation, result: Result, before: Any) -> None:
        if not result.changed:
            return
        before_rv = getattr(getattr(before, "metadata", None), "resource_version", "") or ""
        if result.verb == "delete":
            self._written.append(_Written(op.kind, op.namespace, op.name, True, before_version=before_rv))
            return
        rv = str(((result.after or {}).get("metadata") or {}).get("resourceVersion") or "")
        self._written.append(_Written(op.kind, op.namespace, op.name, False, rv, before_rv))

    def _seen(self, w: _Written) -> bool:
        obj = self.ctx.store.get(w.kind, w.name, w.namespace)
        if w.deleted:
            return obj is None or bool(getattr(obj, "deleting", False))  # gone, or going (finalizers)
        if obj is None:
            return True  # deleted since by someone else: nothing of ours left to see
        have = getattr(getattr(obj, "metadata", None), "resource_version", "") or ""
        return version_reached(have, w.resource_version, w.before_version)

    async def settle_writes(self) -> None:
        """Wait (bounded) until the store shows this run's own writes: a front end that reads the store once
        the run stopped (what it leaves behind) sees them too."""
        await self._settle(None)

    async def _settle(self, step: Step | None) -> None:
        """Wait (bounded) until the store, fed by the watch, shows this run's own writes, so that a plan
        or a progress check never acts on the state from before them (e.g. proposes the same change twice)."""
        if not self._written:
            return
        deadline = time.monotonic() + self.settle_timeout
        while True:
            unseen = [w for w in self._written if not self._seen(w)]
            if not unseen:
                break
            if time.monotonic() >= deadline:
                refs = ", ".join(f"{w.kind} {w.namespace + '/' if w.namespace else ''}{w.name}" for w in unseen[:5])
                message = (f"the watch did not show {len(unseen)} of this run's writes within "
                           f"{self.settle_timeout:g} s ({refs}); planning from what it shows")
                self.journal.append("warning", step.id if step else None, {"message": message})
                self._emit("warning", step.id if step else None, message)
                break
            await asyncio.sleep(0.02)  # the watch is real time even when the runner's sleep is simulated
        self._written.clear()

    async def _ask(self, step: Step, prog: Progress) -> str:
        plan = Plan([], [prog.stuck], question=prog.stuck, choices=(RETRY, WAIT_ANYWAY, STOP))
        answer = await self.confirm(step, plan, None)
        if answer == PAUSE:
            self.journal.append("stuck", step.id, {"message": prog.stuck, "answer": PAUSE})
            raise Pause("declined", prog.stuck)
        # A yes/no callback (e.g. `--yes`) cannot choose: stopping is the only answer that never waits forever.
        choice = answer if answer in (RETRY, WAIT_ANYWAY, STOP) else STOP
        self.journal.append("stuck", step.id, {"message": prog.stuck, "answer": choice})
        return choice

    async def _wait(self, step: Step) -> str:
        start = self.ctx.clock()
        timeout = self.wait_timeout if self.wait_timeout is not None else step.wait_timeout
        samples: list[tuple[float, float]] = []
        first = True
        waiting_anyway = False
        while True:
            await self._settle(step)
            if first:  # a crash here: executed, not yet observed (a step whose wait ends at once has it too)
                self.ctx.hook(f"{step.id}:mid-wait")
                first = False
            prog = step.progress(self.ctx)
            now = self.ctx.clock()
            lost = None if prog.done else _unreachable(self.ctx.store, now)
            if lost:  # what the wait reads is stale: say so, rather than a state like "drain Unknown: 0 blocker(s)"
                prog = replace(prog, message=f"{lost}; {prog.message} (as last seen)")
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
            if prog.stuck and not waiting_anyway:
                choice = await self._ask(step, prog)
                if choice == RETRY:
                    return prog.retry_step or "replan"
                if choice == STOP:
                    raise StepFailed(f"{prog.stuck}; stopped (the workflow is Failed and can be resumed: "
                                     f"`taudash workflow resume {self.journal.id}`)")
                waiting_anyway = True
            if now - start > timeout:
                raise StepFailed(f"{step.title}: gave up waiting after {int(now - start)} s (limit {timeout:g} s): "
                                 f"{prog.message}; the workflow is Failed and can be resumed "
                                 f"(`taudash workflow resume {self.journal.id}`, optionally with a longer "
                                 "--wait-timeout)")
            await self.sleep(self.poll)


def _unreachable(store: Any, now: float) -> str | None:
    """One line when reading the cluster fails now (the API server went away, a network error), else None."""
    failing = {k: a for k, a in store.access_states().items() if a.state is AccessState.ERROR}
    if not failing:
        return None
    first = min(failing.values(), key=lambda a: a.since if a.since is not None else now)
    since = f" for {int(now - first.since)} s" if first.since is not None and now >= first.since else ""
    why = f" ({first.message})" if first.message else ""
    return (f"cannot read the cluster{since}{why}: waiting for it to come back; the wait's deadline still counts, "
            "and the run stays resumable")


def _approved(answer: bool | str) -> bool:
    """A yes to a plan or an operation: an answer meant for a question (a str) never approves a write."""
    return bool(answer) and not isinstance(answer, str)


def version_reached(have: str, written: str, before: str = "") -> bool:
    """Whether an object at resourceVersion `have` reflects a write the server answered with `written`.
    Versions are opaque strings; compare as integers when both parse (etcd's are), else the object
    must be at the written version or at least have moved from the one before the write."""
    if not written:
        return bool(have) and have != before if before else True
    try:
        return int(have) >= int(written)
    except ValueError:
        return have == written or (bool(before) and have != before)


def _eta(samples: list[tuple[float, float]]) -> float | None:
    """Seconds until `remaining` reaches zero at the recent rate, or None when not falling."""
    if len(samples) < 2:
        return None
    (t0, r0), (t1, r1) = samples[0], samples[-1]
    if t1 <= t0 or r1 >= r0:
        return None
    rate = (r0 - r1) / (t1 - t0)
    return r1 / rate
