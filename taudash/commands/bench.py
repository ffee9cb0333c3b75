"""`taudash bench [--size S|M|L] [--fleet N] [-o json]`: its options, then the benchmark (taudash/bench/run.py,
taudash/bench/fleet.py)."""

from __future__ import annotations

from taudash.bench.generate import SIZES

from ..errors import UsageError
from .options import add_source_args


def register(sub) -> None:
    b = sub.add_parser("bench")
    add_source_args(b, frozenset({"read_only"}))  # the bench brings its own cluster and never writes to one
    b.add_argument("--size", choices=sorted(SIZES), default="S", type=str.upper,
                   help="S: 100 nodes/2k Workloads, M: 1k/20k, L: 5k/100k, XL: 10k/200k (default S)")
    b.add_argument("--seed", type=int, default=0, help="the synthetic cluster is deterministic per seed")
    b.add_argument("-o", "--output", choices=("table", "json"), default="table")
    b.add_argument("--rate", type=float, default=1000.0, help="events per second during the load phase")
    b.add_argument("--stream-seconds", type=float, default=None,
                   help="length of the load phase (default: 6 s for S, 10 s for M and L)")
    b.add_argument("--no-kubectl", action="store_true", help="skip the kubectl peer measurement")
    b.add_argument("--profile", metavar="DIR", help="write a pyinstrument profile of each phase to DIR "
                   "(pip install pyinstrument first; measuring only, never a dependency)")
    b.add_argument("--fleet", type=int, metavar="N", help="N simulated clusters of --size in one fleet dashboard "
                   "session (sync per cluster and total, memory, key → Fleet screen; taudash/bench/fleet.py)")
    b.add_argument("--via", choices=("api", "agents"), default="api",
                   help="with --fleet: api (each cluster synced whole from its API server, the default) or agents "
                        "(each cluster read from its agent's /api/v1/status document; taudash/bench/agents.py)")
    b.add_argument("--soak", type=float, metavar="MINUTES", help="run the dashboard, its recorder and serve for "
                   "MINUTES under faults and report leaks, losses and stalls (taudash/bench/soak.py)")
    b.add_argument("--fault-every", type=float, default=30.0, metavar="SECONDS", help="with --soak (default 30)")
    b.add_argument("--trace-memory", nargs="?", const="allocations", choices=("allocations", "objects"),
                   help="with --soak: what grows, to --out: the allocation sites of the dashboard and serve "
                   "(tracemalloc, slow), or the dashboard's live objects by type (taudash/bench/soak_memory.py)")
    b.add_argument("--out", metavar="DIR", help="with --soak: plots, samples and logs (default: a new state folder)")
    b.set_defaults(func=run_bench)


def run_bench(args) -> int:
    if args.soak is not None:
        from taudash.bench.soak import run_soak

        return run_soak(args)
    if args.fleet is not None:
        if args.fleet < 1:
            raise UsageError(f"--fleet {args.fleet}: at least one cluster")
        if args.via == "agents":
            if args.size not in ("S", "M"):
                raise UsageError("--via agents: --size S or M")
            from taudash.bench.agents import run_agents_bench

            return run_agents_bench(args.size, args.fleet, args.seed, args.output)
        from taudash.bench.fleet import run_fleet_bench

        return run_fleet_bench(args.size, args.fleet, args.seed, args.output)
    if args.via != "api":
        raise UsageError("--via applies to --fleet N")
    from taudash.bench.run import run

    return run(args.size, args.seed, args.rate, args.stream_seconds, not args.no_kubectl, args.profile, args.output)
