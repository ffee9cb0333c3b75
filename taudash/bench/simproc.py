"""The bench's simulated API server, in its own process so the client under test has a core to itself.

    python -m engine.bench.simproc --size M --seed 0 --kubeconfig PATH

Prints `READY <url> <objects>` once serving; then reads commands on stdin, one per line:
`stream RATE SECONDS` writes Workload/ClusterQueue changes through `sim.db` (what watchers see) at
RATE per second and answers `STREAMED <writes> <seconds>`; `rss` answers `RSS <peak KiB>`; `quit` stops.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import sys
import time

from taudash.bench.generate import QUEUE, generate
from taudash.bench.stream import Mutator
from taudash.sim.server import SimServer


async def _serve(args: argparse.Namespace) -> None:
    objects = generate(args.size, args.seed)
    n = len(objects)
    # History sized for a long stream; a tiny bookmark interval is not needed for the bench.
    sim = SimServer(snapshot=None, objects=objects, kubeconfig=args.kubeconfig, history=200_000,
                    bookmark_interval=30.0)
    del objects
    await sim.start()
    gc.freeze()  # the seeded cluster is long-lived: keep collections from re-traversing it per request
    mutator = Mutator(sim.db, seed=args.seed, queue=QUEUE)
    print(f"READY {sim.url} {n}", flush=True)
    try:
        while True:
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line:
                break
            cmd = line.split()
            if not cmd:
                continue
            if cmd[0] == "quit":
                break
            if cmd[0] == "stream":
                writes, secs = await mutator.stream(float(cmd[1]), float(cmd[2]))
                print(f"STREAMED {writes} {secs:.3f}", flush=True)
            elif cmd[0] == "rss":
                print(f"RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", flush=True)
    finally:
        await sim.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="serve a synthetic bench cluster")
    p.add_argument("--size", default="S")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kubeconfig", required=True)
    args = p.parse_args(argv)
    t = time.perf_counter()
    asyncio.run(_serve(args))
    print(f"BYE {time.perf_counter() - t:.1f}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
