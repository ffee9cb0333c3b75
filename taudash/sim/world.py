"""The simulated world: a clock, a seeded RNG and the controllers that move the ObjectDB (docs/simulator.md).

    world = World.from_snapshot("snapshots/demo.yaml", seed=1)
    world.run_for(30 * 60, dt=10)        # thirty simulated minutes, no asyncio, no sleeping
    world.event_log()                    # [(sim seconds, verb, kind, "ns/name"), ...] of every write
    world.view()                         # engine.incremental.derive() over the current objects

`step(dt)` advances the clock by dt simulated seconds and runs each controller once, in order:
nodes (and the scenario), TauGrid, workloads, garbage collection, pods, Kueue; each sees the writes of
the ones before it. Everything is a function of the seed, the seed objects and the steps taken:
the same inputs give the same event log. `run()` ticks it in real time (`speed` simulated seconds
per wall second) inside `taudash sim serve`; writes go through the ObjectDB's in-process API, so
HTTP watchers see them like any other change.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from taudash.engine.incremental import derive
from taudash.engine.rules.base import RuleConfig
from taudash.engine.store import Store
from taudash.engine.view import ClusterView, SourceInfo
from taudash.sim.clock import DEFAULT_START, SimClock, parse_rfc3339
from taudash.sim.controllers.base import LogEntry, Mirror, Writer
from taudash.sim.controllers.gc import GarbageCollector
from taudash.sim.controllers.kueue import KueueController
from taudash.sim.controllers.nodes import NodesController
from taudash.sim.controllers.pods import PodsController
from taudash.sim.controllers.scenario import Knobs, Scenario
from taudash.sim.controllers.taugrid import TauGridController
from taudash.sim.controllers.workloads import WorkloadsController
from taudash.sim.events import EventRecorder
from taudash.sim.kueue_versions import KueueVersion
from taudash.sim.objects import ObjectDB
from taudash.sim.resources import Registry
from taudash.sim.schema import SchemaSet

log = logging.getLogger(__name__)

CONTROLLERS = (NodesController, TauGridController, WorkloadsController, GarbageCollector, PodsController,
               KueueController)


def start_of(db: ObjectDB, captured_at: str | None = None) -> float:
    """Where simulated time begins: the snapshot's capture time, else its newest timestamp, else a fixed instant."""
    when = parse_rfc3339(captured_at)
    if when is not None:
        return when
    stamps = [parse_rfc3339(o["metadata"].get("creationTimestamp")) for r in db.registry.all for o in db.list(r)]
    return max((s for s in stamps if s is not None), default=DEFAULT_START)


class World:
    def __init__(
        self,
        db: ObjectDB,
        *,
        seed: int = 0,
        speed: float = 1.0,
        start: float | None = None,
        scenario: Scenario | None = None,
        system_namespace: str = "tau-system",
    ) -> None:
        self.db = db
        self.seed = seed
        self.scenario = scenario or Scenario()
        self.knobs: Knobs = self.scenario.knobs
        self.system_namespace = system_namespace
        self.clock = SimClock(start if start is not None else start_of(db), speed)
        db.clock = self.clock.now  # creationTimestamps (HTTP writes included) are simulated time too
        self.mirror = Mirror(db)
        self.writer = Writer(db, self.clock)
        self.events = EventRecorder(db, self.clock)  # core/v1 Events about what the controllers do
        self.controllers = [cls(self) for cls in CONTROLLERS]
        self._inbox: dict[str, list] = {c.name: [] for c in self.controllers}
        self.steps = 0
        self.tick_costs: deque[float] = deque(maxlen=2000)  # wall seconds per step, newest last
        self.errors: list[str] = []  # exceptions the real-time runner survived

    @classmethod
    def from_snapshot(
        cls, path: str | Path, *, seed: int = 0, speed: float = 1.0, scenario: Scenario | None = None, **kwargs: Any
    ) -> World:
        db = ObjectDB(seed=seed, schemas=SchemaSet.shared())
        result = db.seed_from_snapshot(path)
        return cls(db, seed=seed, speed=speed, start=start_of(db, result.captured_at), scenario=scenario, **kwargs)

    @classmethod
    def from_objects(
        cls,
        objects: list[dict],
        *,
        captured_at: str | None = None,
        seed: int = 0,
        speed: float = 1.0,
        scenario: Scenario | None = None,
        kueue: KueueVersion | None = None,
        **kwargs: Any,
    ) -> World:
        """A world seeded from raw objects (copied); `captured_at` dates the start like a snapshot's; `kueue`:
        the Kueue release (and feature gates) it plays (default: the current release, upstream defaults)."""
        db = ObjectDB(seed=seed, schemas=SchemaSet.shared(),
                      registry=Registry.for_kueue(kueue) if kueue is not None else None)
        db.seed(objects)
        return cls(db, seed=seed, speed=speed, start=start_of(db, captured_at), scenario=scenario, **kwargs)

    @classmethod
    def for_server(cls, sim, scenario: Scenario | None = None) -> World:
        """The world of a started SimServer (seeded), with its speed and seed."""
        captured = sim.load_result.captured_at if sim.load_result is not None else None
        start = sim.clock_start if getattr(sim, "clock_start", None) is not None else start_of(sim.db, captured)
        return cls(sim.db, seed=sim.options.seed, speed=sim.options.speed, start=start, scenario=scenario)

    def rng(self, name: str) -> random.Random:
        """An independent stream per controller: a change in one never shifts another's draws."""
        return random.Random(f"{self.seed}/{name}")

    # --- stepping ------------------------------------------------------------------------------------
    def sync(self) -> list:
        events = self.mirror.sync()
        if events:
            for inbox in self._inbox.values():
                inbox.extend(events)
        return events

    def step(self, dt: float) -> None:
        t0 = time.perf_counter()
        self.clock.advance(dt)
        self.sync()
        for c in self.controllers:
            events, self._inbox[c.name] = self._inbox[c.name], []
            c.reconcile(events)
            c.first = False
            self.sync()
        self.steps += 1
        self.tick_costs.append(time.perf_counter() - t0)

    def run_for(self, seconds: float, dt: float = 5.0) -> None:
        end = self.clock.elapsed + seconds
        while self.clock.elapsed + 1e-9 < end:
            self.step(min(dt, end - self.clock.elapsed))

    async def run(self, interval: float = 0.5) -> None:
        """Tick every `interval` wall seconds, `interval * speed` simulated seconds each (a fixed step,
        so a run with the same seed moves the same way whatever the machine's load)."""
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            try:
                self.step(interval * self.clock.speed)
            except Exception as exc:  # keep serving: one bad object must not stop the cluster
                log.exception("simulated world step failed")
                self.errors.append(f"{self.clock.stamp()} {type(exc).__name__}: {exc}")
            due += interval
            if loop.time() > due + interval:
                due = loop.time()  # overloaded: drop the backlog instead of spinning
            await asyncio.sleep(max(0.0, due - loop.time()))

    async def serve(self, sim: Any = None) -> None:
        """A SimServer controller coroutine."""
        await self.run()

    # --- reading -------------------------------------------------------------------------------------
    @property
    def log(self) -> Sequence[LogEntry]:
        return self.writer.log

    def event_log(self) -> list[tuple[float, str, str, str]]:
        return [e.as_tuple() for e in self.writer.log]

    def store(self) -> Store:
        return self.mirror.store

    def view(self, config: RuleConfig | None = None) -> ClusterView:
        config = config or RuleConfig(system_namespace=self.system_namespace)
        return derive(self.mirror.store, self.clock.datetime(), config, SourceInfo(type="sim"))

    def close(self) -> None:
        self.mirror.close()
