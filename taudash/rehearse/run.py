"""Run a workflow on an in-process simulated fork, as fast as the machine allows.

The fork is served by a SimServer (the real write path, schema validation included) with the
simulated world's controllers stepped by the Runner's own sleep: each poll advances the simulated
clock by `step` seconds, so a 20-minute drain takes as long as the controllers need to compute it.
The store the steps read is the world's mirror of the fork (in-process, current after every step
and every write), so what a step sees is a function of the fork, the seed and the steps taken.

The only Actions in here write to the fork's own loopback API server: a rehearsal is never given
the real cluster's Actions, so it cannot write there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from taudash.engine.actions import Actions
from taudash.engine.incremental import IncrementalDeriver
from taudash.engine.rules.base import RuleConfig
from taudash.engine.sources.client import connect
from taudash.engine.store import AccessState
from taudash.engine.workflows import Journal, Runner, build, new_id
from taudash.engine.workflows.base import WAIT_ANYWAY, Context, Operation, Plan, RunnerEvent, Step
from taudash.sim.controllers.scenario import Knobs, Scenario
from taudash.sim.server import SimServer
from taudash.sim.world import World

from . import standin
from .fork import Fork
from .report import build_report

# No synthetic arrivals, flaps or cordons: the fork moves only by what the workflow does and what
# the controllers do in answer (running jobs still finish at their drawn times).
QUIET = Scenario(knobs=Knobs(arrivals_per_hour=0, node_flaps_per_hour=0, cordons_per_hour=0))
DEFAULT_STEP = 5.0  # simulated seconds per poll: the resolution of the predicted durations

# The kinds a workflow writes, whose objects are remembered from before the run for the diff.
WRITTEN_KINDS = ("ClusterQueue", "Workload", "TauCluster", "LocalQueue", "RayService", "Deployment", "Job", "RayJob")


@dataclass
class _ForkContext(Context):
    """The view, kept current change by change (engine/incremental.py: the same rules as `derive`,
    re-run only for what changed): a fleet-sized fork is not re-derived from scratch at every poll."""

    deriver: IncrementalDeriver | None = None

    def view(self):
        if self.deriver is None or self.deriver.store is not self.store:
            self.deriver = IncrementalDeriver(self.store, self.config)
        return self.deriver.view(datetime.fromtimestamp(self.clock(), UTC))


class _ForkStore:
    """The mirror's Store, kept current, with the forked cluster's access states laid over it."""

    def __init__(self, world: World, access: dict[str, str]) -> None:
        self.world = world
        self.access = access
        self._applied: Any = None

    def current(self):
        store = self.world.mirror.store  # applies the events synced since the last call
        if store is not self._applied:
            for kind, state in self.access.items():
                store.set_access(kind, AccessState(state), "as in the forked cluster")
            self._applied = store
        return store


async def rehearse(kind: str, params: dict[str, Any], fork: Fork, *, config: RuleConfig | None = None,
                   wait_timeout: float | None = None, step: float = DEFAULT_STEP, seed: int = 0,
                   rehearsal_id: str | None = None, on_event: Callable[[RunnerEvent], None] | None = None,
                   on_sim: Callable[[SimServer], None] | None = None) -> dict[str, Any]:
    """Run workflow `kind` with `params` on a simulated copy of `fork`; return the RehearsalReport.
    Every confirmation is answered yes; a stuck wait is waited out to its deadline (a stall).
    `on_sim` (tests) sees the fork's SimServer once it serves."""
    config = config or RuleConfig()
    rid = rehearsal_id or new_id()
    wall0 = time.perf_counter()
    build(kind, params)  # a workflow that cannot be built fails here, before any server starts
    tmp = Path(tempfile.mkdtemp(prefix="taudash-rehearsal-"))
    # Plain HTTP on loopback: a throwaway in-process server reached by this process only (no key to
    # generate, no TLS on the rehearsal's few hundred requests).
    sim = SimServer(snapshot=None, objects=fork.objects, seed=seed, context="taudash-rehearsal", tls=False)
    target = None
    keeper: asyncio.Task | None = None
    quiet = _Quiet()
    try:
        quiet.__enter__()
        phases: dict[str, float] = {}
        mark = time.perf_counter()

        def phase(name: str) -> None:
            nonlocal mark
            now = time.perf_counter()
            phases[name] = round(now - mark, 3)
            mark = now

        await sim.start()
        sim.db.add_admission(standin.refuse_incomplete_workloads)
        phase("seed")
        if on_sim is not None:
            on_sim(sim)
        world = World(sim.db, seed=seed, start=fork.now, scenario=QUIET, system_namespace=config.system_namespace)
        phase("world")
        # A write the schema refuses is dropped and counted, never raised: partial copies (slim kinds)
        # can make a controller's derived object incomplete, which says nothing about the workflow.
        world.writer.strict = False
        # One reconcile at the copy's own instant (no time passes): what the controllers would change
        # anyway on first sight of the copy belongs to the baseline, not to the workflow's effects.
        world.step(0)
        standin.reconcile(world)
        world.sync()
        phase("settle")
        fstore = _ForkStore(world, fork.access)
        store = fstore.current()
        phase("store")
        ctx = _ForkContext(store=store, actions=Actions.read_only("not connected yet"), config=config,
                           clock=world.clock.now, artifacts_dir=tmp / "artifacts")
        before_view = ctx.view()
        before = {k: {_key(o): o for o in world.mirror.list(k)} for k in WRITTEN_KINDS}
        phase("view")
        setup_wall = time.perf_counter() - wall0

        target = await connect(None, str(sim.kubeconfig))
        actions = Actions.live(target.api_client, "taudash-rehearsal", target.context, audit=None)
        jdir = tmp / "journal"
        jdir.mkdir(mode=0o700)
        journal = Journal.create(rid, kind, params, f"rehearsal of {fork.context or '?'}", jdir)
        ctx.actions = actions

        def refresh() -> None:
            world.sync()
            ctx.store = fstore.current()

        async def keep_current() -> None:
            # The runner's own writes reach the fork's database at once; mirror them promptly so that
            # its "did the watch show my write" check passes as it would against a live watch.
            while True:
                refresh()
                await asyncio.sleep(0.005)

        keeper = asyncio.create_task(keep_current(), name="taudash-rehearsal-mirror")
        timeline: dict[str, dict[str, Any]] = {}
        steps_taken = {"n": 0}

        def record(e: RunnerEvent) -> None:
            t = world.clock.now()
            if e.step is not None:
                row = timeline.setdefault(e.step, {"start": t})
                if e.kind in ("verified", "failed", "aborted"):
                    row["end"] = t
                    row["outcome"] = e.kind
                    row["message"] = e.message
                elif e.kind == "progress":
                    row["last"] = e.message
            if on_event is not None:
                on_event(e)

        stand_in = {"n": 0}

        async def sleep(_dt: float) -> None:
            world.step(step)
            stand_in["n"] += standin.reconcile(world)  # Workloads of owners the simulator does not model
            steps_taken["n"] += 1
            refresh()
            await asyncio.sleep(0)

        async def confirm(_step: Step, plan: Plan, _op: Operation | None) -> bool | str:
            return WAIT_ANYWAY if plan.question else True  # yes to every change; a stuck wait runs out

        runner = Runner(build(kind, params), ctx, journal, confirm, record, poll=step, sleep=sleep,
                        wait_timeout=wait_timeout, claims=False)  # a throwaway copy: nobody else to hold off
        sim_start, run_wall0 = world.clock.now(), time.perf_counter()
        state = await runner.run()
        run_wall = time.perf_counter() - run_wall0
        keeper.cancel()
        # The controllers' first look at the run's last writes, with no time passing (as at the start): a
        # queue the last step put back is Active again, not "Stopped" as of just before that write.
        world.step(0)
        standin.reconcile(world)
        refresh()
        after_view = ctx.view()
        return build_report(
            rid=rid, kind=kind, params=params, fork=fork, state=state, journal=journal, world=world,
            before=before, before_view=before_view, after_view=after_view, timeline=timeline,
            timing={"simulatedSeconds": round(world.clock.now() - sim_start, 3), "runWallSeconds": round(run_wall, 3),
                    "setupWallSeconds": round(setup_wall, 3), "totalWallSeconds": round(time.perf_counter() - wall0, 3),
                    "stepSeconds": step, "worldSteps": steps_taken["n"], "setupPhases": phases},
            stand_in=stand_in["n"],
            wait_timeout=wait_timeout, fork_writes=dict(sim.api.writes), seed=seed,
            refused=list(world.writer.errors))
    finally:
        quiet.__exit__()
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        if target is not None:
            await target.close()
        await sim.stop()
        shutil.rmtree(tmp, ignore_errors=True)


class _Quiet:
    """The simulated controllers log each refused write; a rehearsal counts them in its report instead."""

    def __enter__(self) -> None:
        self.logger = logging.getLogger("taudash.sim.controllers.base")
        self.level = self.logger.level
        self.logger.setLevel(logging.ERROR)

    def __exit__(self, *exc: object) -> None:
        self.logger.setLevel(self.level)


def _key(obj: dict) -> tuple[str, str]:
    m = obj.get("metadata") or {}
    return (m.get("namespace") or "", m.get("name", ""))
