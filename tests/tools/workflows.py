"""Running a guided workflow in tests against an in-process simulated world: the world is stepped by the
runner's sleep (30 simulated seconds per poll), so waits progress deterministically and fast."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from taudash.engine.workflows import Journal, Runner, artifacts_dir, build, new_id
from taudash.engine.workflows.base import Context
from taudash.live import LiveCluster
from taudash.sim.controllers.scenario import Knobs, Scenario
from taudash.sim.server import SimServer
from taudash.sim.world import World
from tools.claims import claim_request

CQ = "clusterqueues.kueue.x-k8s.io"
TC = "clusters.tau.azure.com"
WL = "workloads.kueue.x-k8s.io"
EVAL = "azure.research.eval.gpu"  # a demo profile whose change holds only tau-ws-eval
QUIET = Scenario(knobs=Knobs(arrivals_per_hour=0, node_flaps_per_hour=0, cordons_per_hour=0))


class Harness:
    def __init__(self, sim, world, live):
        self.sim, self.world, self.live = sim, world, live
        self.confirmations = []

    async def sleep(self, _dt):
        self.world.step(30)
        await asyncio.sleep(0.02)  # let the watch deliver the world's writes

    async def confirm(self, step, plan, op):
        self.confirmations.append((step.id, op.ref if op else None))
        return True

    def context(self) -> Context:
        """A context for parameter builders (no journal): the live store and write path."""
        return Context(store=self.live.store, actions=self.live.actions)

    def eval_placement_change(self, directory) -> dict:
        """Catalog-change parameters that move the demo's eval profile to same-host (holds tau-ws-eval only)."""
        import copy

        import yaml

        from taudash.engine.workflows.params import catalog_params

        profiles = copy.deepcopy(self.sim.db.get(TC, "cluster")["spec"]["workloadProfiles"])
        next(p for p in profiles if p["name"] == EVAL)["placement"] = "same-host"
        path = directory / f"catalog-{new_id()}.yaml"
        path.write_text(yaml.safe_dump(profiles))
        return catalog_params(self.context(), str(path))

    def ctx(self, journal, hooks=None):
        return Context(store=self.live.store, actions=self.live.actions, clock=self.world.clock.now,
                       artifacts_dir=artifacts_dir(journal), hooks=hooks)

    async def run(self, kind, params, hooks=None, journal=None):
        journal = (journal
                   or Journal.create(new_id(), kind, params, self.live.target.context, cluster=self.live.identity))
        runner = Runner(build(kind, journal.params), self.ctx(journal, hooks), journal, self.confirm, poll=0.0,
                        sleep=self.sleep)
        return journal, await runner.run()

    async def settle(self):
        for _ in range(3):
            self.world.step(5)
        await asyncio.sleep(0.1)

    def real_writes(self):
        """(verb, path) of every non-dry-run write of the workflow's steps the server received (the run's
        claims on its targets are left out: `claim_writes`)."""
        return [(r.verb, r.path) for r in self.sim.api.requests
                if r.verb in ("patch", "delete", "create") and not r.dry_run and not claim_request(r)]

    def claim_writes(self):
        """(verb, path) of every non-dry-run write of the run's claims (engine/workflows/claims.py)."""
        return [(r.verb, r.path) for r in self.sim.api.requests
                if r.verb in ("patch", "delete", "create") and not r.dry_run and claim_request(r)]


@asynccontextmanager
async def harness(kueue_version: str | None = None) -> AsyncIterator[Harness]:
    """A quiet simulated demo cluster (no arrivals, no node events), a live connection to it, a runner harness."""
    async with SimServer(**({"kueue_version": kueue_version} if kueue_version else {})) as sim:
        world = World.for_server(sim, QUIET)
        world.step(1)
        async with LiveCluster(None, str(sim.kubeconfig)) as live:
            h = Harness(sim, world, live)
            await h.settle()
            yield h
