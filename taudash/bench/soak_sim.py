"""The soak's simulated cluster, in its own process: the bench's generated cluster with churn, and faults on
command (taudash/bench/soak.py drives it).

    python -m taudash.bench.soak_sim --size S --seed 0 --kubeconfig PATH [--rate 20]

Prints `READY <url> <objects>` once serving, then reads one command a line on stdin and answers one line:

    fault restart SECONDS   the API server stops and serves again on its port after SECONDS
    fault gone COUNT        a watch 410 storm: history forgotten, watches dropped, the next COUNT watches 410
    fault 5xx PROBABILITY   every request answers 503 with that probability (seeded)
    fault forbid RESOURCE   403 on every verb of RESOURCE (a kind, plural or short name); watches dropped
    fault hang SECONDS      every request waits SECONDS before it is answered; watches dropped (they reconnect
                            into the wait)
    fault slow SECONDS      every request waits SECONDS (slow answers)
    clear                   every fault ends (watches dropped after a 403, so clients meet its end at once)
    churn on|off            the Workload and ClusterQueue changes (`rate` per second) go on or pause
    state PATH              the server's objects as (namespace, name, resourceVersion) per kind, to PATH (JSON)
    rss                     this process's resident memory, KiB
    quit

Answers: `OK …`, `STATE <objects>`, `RSS <KiB>`, `ERROR <text>`.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import re
import resource
import sys
import time
from pathlib import Path
from typing import Any

from taudash.bench.generate import QUEUE, generate
from taudash.bench.stream import Mutator
from taudash.engine.model import KINDS
from taudash.sim.server import SimServer


def server_state(sim: SimServer) -> dict[str, list[tuple[str, str, str]]]:
    """(namespace, name, resourceVersion) of every object per kind the taudash model knows, as the server
    holds it now (its ObjectDB: not through the API, so a fault cannot bend the answer)."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for k in KINDS:
        try:
            objs = sim.db.list(k.resource)
        except Exception:  # a resource this simulator does not serve
            continue
        out[k.kind] = sorted((o["metadata"].get("namespace") or "", o["metadata"]["name"],
                              o["metadata"]["resourceVersion"]) for o in objs)
    return out


class SteadyMutator(Mutator):
    """The bench's writes with the cluster's size *and shape* held, so memory that keeps growing over a soak is
    a leak, not a different cluster. The bench's own mix adds Workloads faster than it deletes them (+42 %
    objects in an hour at M), and it drifts: it finishes and deletes admitted Workloads and creates pending ones
    that nothing admits, so an hour's cluster is all pending — waiting-list rows and drain lists that grew with
    it (the soak's dashboard rose ~4 MiB a minute at S with no fault at all). Here no Workload changes state:
    a pending one gets a new Pending message (the bench's move), a running one's Pods turn ready or not, and a
    finished one — or, for the bench's creations, any one — is replaced by a new Workload like it (the same
    owner, spec and status; a new name and uid), as finished Jobs are cleaned up and new ones arrive."""

    def __init__(self, db: Any, seed: int = 0, queue: str = "jobqueue") -> None:
        super().__init__(db, seed=seed, queue=queue)
        self.replaced = 0

    def _create(self) -> None:
        if not self.workloads:
            super()._create()
            return
        self._replace(self.rng.randrange(len(self.workloads)))

    def _move(self) -> None:
        i = self.rng.randrange(len(self.workloads))
        ns, name = self.workloads[i]
        cur = self.db.peek(self.wl, name, ns)
        conds = {c.get("type"): c.get("status") for c in ((cur or {}).get("status") or {}).get("conditions") or ()}
        if conds.get("Finished") == "True":
            self._replace(i)  # a finished Job's Workload goes, a new one like it comes
        elif conds.get("Admitted") == "True" and cur is not None:
            self._pods_ready(ns, name, cur, conds.get("PodsReady") != "True")  # running: its Pods come and go
        else:
            self._move_at(i)  # pending: a new Pending message (the bench's move)

    def _pods_ready(self, ns: str, name: str, cur: dict[str, Any], ready: bool) -> None:
        keep = [c for c in (cur.get("status") or {}).get("conditions") or () if c.get("type") != "PodsReady"]
        pods = {"type": "PodsReady", "status": "True" if ready else "False",
                "reason": "PodsReady" if ready else "PodsNotReady", "message": "", "lastTransitionTime": self._ts()}
        self.db.patch_merge(self.wl, name, {"status": {"conditions": [*keep, pods]}}, ns, subresource="status")

    def _replace(self, i: int) -> None:
        ns, name = self.workloads[i]
        cur = self.db.peek(self.wl, name, ns)
        if cur is None:
            self.workloads[i] = self.workloads[-1]
            self.workloads.pop()
            return
        self._remove(ns, name)
        self.replaced += 1
        meta = cur["metadata"]
        status = copy.deepcopy(cur.get("status") or {})
        fresh = f"{re.sub(r'-r[0-9]+$', '', name)}-r{self.replaced}"
        obj = {"apiVersion": cur["apiVersion"], "kind": "Workload",
               "metadata": {"name": fresh, "namespace": ns,
                            **{k: copy.deepcopy(meta[k]) for k in ("labels", "annotations", "ownerReferences")
                               if k in meta}},
               "spec": copy.deepcopy(cur["spec"]), "status": status}
        self.db.create(obj, with_status=True)
        self.workloads[i] = (ns, fresh)


class Controls:
    def __init__(self, sim: SimServer, mutator: Mutator, rate: float) -> None:
        self.sim = sim
        self.mutator = mutator
        self.rate = rate
        self.churning = asyncio.Event()
        self.churning.set()
        self.writes = 0
        self.forbidden = False
        self._restart: asyncio.Task[None] | None = None

    async def churn(self) -> None:
        while True:
            await self.churning.wait()  # writes go on while the API server is down, as a cluster's do
            done, _ = await self.mutator.stream(self.rate, 1.0)
            self.writes += done

    async def command(self, cmd: list[str]) -> str:
        faults = self.sim.faults
        match cmd:
            case ["fault", "restart", seconds]:
                self._restart = asyncio.ensure_future(self.sim.api.restart(down=float(seconds)))
            case ["fault", "gone", count]:
                faults.gone_storm(count=int(count))
            case ["fault", "5xx", probability]:
                faults.fail(503, probability=float(probability))
            case ["fault", "forbid", name]:
                faults.forbid(name)
                self.forbidden = True
                faults.drop_watches()
            case ["fault", "hang" | "slow" as kind, seconds]:
                faults.latency(float(seconds))
                if kind == "hang":
                    faults.drop_watches(abort=True)
            case ["clear"]:
                if self._restart is not None:
                    await self._restart
                    self._restart = None
                faults.clear()
                if self.forbidden:
                    self.forbidden = False
                    faults.drop_watches()
            case ["churn", "on"]:
                self.churning.set()
            case ["churn", "off"]:
                self.churning.clear()
            case ["state", path]:
                state = server_state(self.sim)
                await asyncio.to_thread(Path(path).write_text, json.dumps(state))
                return f"STATE {sum(len(v) for v in state.values())}"
            case ["rss"]:
                return f"RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}"
            case _:
                return f"ERROR unknown command {' '.join(cmd)!r}"
        return f"OK {' '.join(cmd)} (writes {self.writes})"


async def _serve(args: argparse.Namespace) -> None:
    objects = generate(args.size, args.seed)
    n = len(objects)
    sim = SimServer(snapshot=None, objects=objects, kubeconfig=args.kubeconfig, history=200_000, seed=args.seed,
                    bookmark_interval=30.0)
    del objects
    await sim.start()
    gc.freeze()  # the seeded cluster is long-lived: keep collections from re-traversing it per request
    controls = Controls(sim, SteadyMutator(sim.db, seed=args.seed, queue=QUEUE), args.rate)
    churn = asyncio.ensure_future(controls.churn())
    print(f"READY {sim.url} {n}", flush=True)
    try:
        while True:
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line:
                break
            cmd = line.split()
            if not cmd:
                continue
            if cmd == ["quit"]:
                break
            try:
                answer = await controls.command(cmd)
            except Exception as exc:  # a bad argument: said, the server goes on
                answer = f"ERROR {type(exc).__name__}: {exc}"
            print(answer, flush=True)
    finally:
        churn.cancel()
        await asyncio.gather(churn, return_exceptions=True)
        await sim.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="serve the soak's simulated cluster, with churn and faults on command")
    p.add_argument("--size", default="S")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rate", type=float, default=20.0, help="changes per second (the churn)")
    p.add_argument("--kubeconfig", required=True)
    args = p.parse_args(argv)
    t = time.perf_counter()
    asyncio.run(_serve(args))
    print(f"BYE {time.perf_counter() - t:.1f}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

