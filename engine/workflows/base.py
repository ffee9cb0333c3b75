"""Guided operations as resumable step machines.

A workflow is an ordered list of steps. Each step has a plan (the exact objects and patches,
recomputed from live state so that re-planning after a crash never repeats an action), fail-closed
preconditions, an action (the plan's operations, through engine.actions), a wait condition read
from the live store (progress and ETA), and a verification. The runner journals planned /
confirmed / executed / observed / verified for every step.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from ..actions import Actions, Obj, Result
from ..incremental import IncrementalDeriver
from ..rules.base import RuleConfig
from ..store import Store
from ..view import ClusterView
from .journal import Journal
from .ops import landed


class StepFailed(Exception):
    pass


class Pause(Exception):  # noqa: N818 - an instruction to the runner, not an error
    """Stop the run where it is, resumable (state Paused): raised by a confirm callback (a mistyped context
    name) or a front end's sleep (the operator paused it). The runner journals it; nothing is undone."""

    def __init__(self, reason: str, message: str = "") -> None:
        super().__init__(message or reason)
        self.reason = reason
        self.message = message or reason


class Crash(BaseException):
    """Raised by test hooks to stop the runner exactly where a kill would."""


@dataclass(frozen=True)
class Check:
    ok: bool
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "message": self.message}


def _fixed_patch(cur: Obj, patch: Obj | None) -> Obj | None:
    return patch


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

    def to_dict(self) -> dict[str, Any]:
        return {"verb": self.verb, "kind": self.kind, "namespace": self.namespace, "name": self.name,
                "description": self.description, "patch": self.patch, "destructive": self.destructive,
                "diff": self.diff_line()}

    async def execute(self, actions: Actions, reason: str) -> Result:
        if self.verb == "patch":
            planner = self.planner or partial(_fixed_patch, patch=self.patch)
            return await actions.patch(self.kind, self.name, self.namespace, planner, reason)
        if self.verb == "delete":
            return await actions.delete(self.kind, self.name, self.namespace, self.still_wanted or (lambda _o: True),
                                        reason)
        raise ValueError(f"unknown operation {self.verb}")


@dataclass
class Plan:
    operations: list[Operation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    confirm_each: bool = False  # destructive deletes are confirmed one by one
    # A question instead of changes (no operations): the confirm callback answers with one of
    # `choices` (a callback that only says yes/no answers True/False: see Runner._ask).
    question: str = ""
    choices: tuple[str, ...] = ()
    # Operations (as "verb:ref", like `signature`) the operator approves in advance with this plan: a
    # later re-plan of the same step whose every operation is covered runs without asking again.
    covers: list[str] = field(default_factory=list)

    @property
    def destructive(self) -> bool:
        return any(op.destructive for op in self.operations)

    def diff(self) -> list[str]:
        return [op.diff_line() for op in self.operations]

    def signature(self) -> list[str]:
        return sorted(f"{op.verb}:{op.ref}" for op in self.operations)

    def to_dict(self) -> dict[str, Any]:
        return {"operations": [op.to_dict() for op in self.operations], "notes": self.notes,
                "destructive": self.destructive, "signature": self.signature(), "covers": sorted(self.covers)}


@dataclass
class Progress:
    done: bool
    message: str
    remaining: float | None = None  # a number that falls to zero as the wait completes (for an ETA)
    replan: bool = False  # new work for this step's action appeared while waiting (plan it again)
    items: list[tuple[str, float, float]] = field(default_factory=list)  # (label, current, target)
    # The wait cannot end as things stand (e.g. the operator skipped a drain blocker): why, and which
    # step's action a retry runs again. The runner asks instead of waiting out the deadline.
    stuck: str = ""
    retry_step: str | None = None


Confirm = Callable[["Step", Plan, Operation | None], Awaitable[bool | str]]

# Answers to a stuck wait (Plan.question): run the blocking step's action again, keep waiting until
# the deadline, or stop (the run is Failed and stays resumable).
RETRY, WAIT_ANYWAY, STOP = "retry", "wait", "stop"
# An answer to any confirmation: pause the run here (Paused, resumable). A plain no to a plan pauses too;
# to one operation of a confirm-each plan a no skips that operation and PAUSE pauses.
PAUSE = "pause"

DEFAULT_WAIT_TIMEOUT = 900.0  # per step: minutes, not hours; `--wait-timeout` overrides it
SETTLE_TIMEOUT = 10.0  # how long a plan waits for the watch to show the run's own writes


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
    # Where views come from: a session (anything with `view(now)`, e.g. engine.session.Session, whose
    # cached view a dashboard shares), or else the context's own incremental deriver over `store`.
    # Either way a poll re-derives only what changed since the last one, never every rule.
    session: Any = None
    _deriver: IncrementalDeriver | None = field(default=None, init=False, repr=False, compare=False)

    def view(self) -> ClusterView:
        now = datetime.fromtimestamp(self.clock(), UTC)
        if self.session is not None:
            view: ClusterView = self.session.view(now)
            return view
        with self.lock if self.lock is not None else nullcontext():
            if self._deriver is None or self._deriver.store is not self.store or self._deriver.config != self.config:
                self._deriver = IncrementalDeriver(self.store, self.config)
            return self._deriver.view(now)

    def hook(self, point: str) -> None:
        if self.hooks is not None:
            self.hooks(point)


class Step:
    id: str = ""
    title: str = ""
    wait_timeout: float = DEFAULT_WAIT_TIMEOUT

    async def plan(self, ctx: Context) -> Plan:
        return Plan()

    def preconditions(self, ctx: Context, plan: Plan) -> list[Check]:
        return []

    async def run_local(self, ctx: Context) -> dict[str, Any] | None:
        """Work that is not a cluster write (e.g. exporting files); journaled as executed."""
        return None

    def local_summary(self, result: dict[str, Any]) -> str:
        """What `run_local` did, in one line for the operator ("" says nothing)."""
        return ""

    def progress(self, ctx: Context) -> Progress:
        return Progress(True, "nothing to wait for")

    def verify(self, ctx: Context) -> list[Check] | Awaitable[list[Check]]:  # a step may verify asynchronously
        return []

    def landed(self, op: dict[str, Any], obj: Obj | None) -> bool:
        """Whether the object as read now (None: gone) shows this step's journaled operation `op` applied:
        how a write in flight when the run stopped is found done or not done."""
        return landed(op, obj)

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
    kind: str  # step-start | plan | confirm | executed | progress | observed | verified | failed | completed | paused
    step: str | None
    message: str
    data: dict[str, Any] = field(default_factory=dict)
