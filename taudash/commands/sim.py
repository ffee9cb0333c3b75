"""`taudash sim serve`: the simulated TauGrid cluster behind a Kubernetes API on loopback (docs/simulator.md)."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import signal
import sys

from ..errors import EXIT_OK, UsageError
from .options import add_source_args

# taudash.sim.kueue_versions.VERSIONS and DEFAULT_VERSION, spelled out so that `taudash --help`
# does not import the simulator (a test keeps them equal).
KUEUE_VERSIONS = ("0.14", "0.15", "0.19")
DEFAULT_KUEUE_VERSION = "0.19"

_SERVE_HELP = """\
Serve a simulated TauGrid cluster on https://127.0.0.1 (a per-run certificate, a bearer token)
and write a kubeconfig for kubectl and taudash. Runs until Ctrl-C.

The cluster is seeded from --snapshot (default: the demo scenario) and moved by the simulated
controllers (TauGrid, Kueue, workloads, nodes) on a simulated clock: --speed simulated seconds
per wall second, every random choice from --seed (same seed and snapshot, same story).
--scenario FILE scripts events and knobs (docs/simulator.md); --no-controllers serves the
snapshot frozen, changing only when a client writes."""


def second_terminal(kubeconfig) -> str:
    """How another terminal reaches the cluster: its kubeconfig as the environment variable."""
    return f"export KUBECONFIG={shlex.quote(str(kubeconfig))}"


FAULT_HELP = ("a fault on one cluster of the fleet (repeatable): CLUSTER=down (API server stopped), =hang "
              "(accepts, never answers), =slow:DURATION, =forbidden:KIND[,KIND] (403); CLUSTER is manager, "
              "worker-N or a context name; e.g. --fault worker-1=down --fault worker-2=slow:5s "
              "--fault manager=forbidden:Workload. Change them while it runs by editing the control file it names")


def add_fault_arg(p) -> None:
    p.add_argument("--fault", action="append", default=[], metavar="CLUSTER=FAULT", help=FAULT_HELP)


def faults_of(args, workers: int | None) -> list:
    """The --fault values, parsed and checked against a fleet of `workers` workers (exit 2 naming the bad part)."""
    from taudash.sim.faults import FaultSpecError, parse_fault
    from taudash.sim.fleet import SimFleet

    specs = getattr(args, "fault", None) or []
    if specs and workers is None:
        raise UsageError(f"--fault {specs[0]}: faults are per cluster of a fleet; add --fleet N")
    try:
        faults = [parse_fault(s) for s in specs]
        SimFleet.check_faults(faults, workers or 0)
    except FaultSpecError as exc:
        raise UsageError(f"--fault {exc}") from None
    return faults


def print_control(fleet, out=None) -> None:
    """Where and how to change the faults while the fleet runs."""
    out = out or sys.stdout
    print(f"faults:     {' '.join(str(f) for f in fleet.faults) or 'none'}; change them while it runs:", file=out,
          flush=True)
    print(f"            echo worker-1=down > {shlex.quote(str(fleet.control))}   (one a line: down, hang, "
          "slow:5s, forbidden:KIND; empty: all healthy)", file=out, flush=True)


def add_clock_arg(p) -> None:
    p.add_argument("--clock", choices=("now", "snapshot"), default="now",
                   help="now (default): the snapshot's timestamps are moved so its capture time is the moment the "
                        "simulator starts, and simulated time runs from there (ages read as kubectl shows them); "
                        "snapshot: simulated time starts at the capture time, as the file says")


def register(sub) -> None:
    p = sub.add_parser("sim", description="The simulated TauGrid cluster.")
    add_source_args(p, frozenset(), shown=False)
    ssub = p.add_subparsers(dest="sim_command", metavar="SUBCOMMAND", parser_class=type(p))
    s = ssub.add_parser("serve", help="run the simulated cluster's API server until Ctrl-C", description=_SERVE_HELP,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    # --snapshot (global) seeds the cluster (default: the demo scenario). --read-only is a client's
    # setting: the simulator itself serves writes, so it is refused here rather than ignored.
    add_source_args(s, frozenset({"snapshot"}),
                    helps={"snapshot": "seed the cluster from this snapshot (default: the demo scenario)"})
    s.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (default 0: a free port)")
    s.add_argument("--speed", type=float, default=1.0,
                   help="simulated seconds per wall-clock second, for the controllers (default 1)")
    s.add_argument("--seed", type=int, default=0,
                   help="random seed of the simulation, for the controllers (default 0)")
    add_clock_arg(s)
    s.add_argument("--scenario", metavar="FILE", help="scripted events and knobs for the controllers (YAML)")
    s.add_argument("--no-controllers", action="store_true", help="serve the snapshot frozen: no simulated controllers")
    s.add_argument("--kubeconfig-out", metavar="FILE",
                   help="write the kubeconfig here (mode 0600; default: a private temp dir removed on exit)")
    s.add_argument("--context-name", default="taudash-sim", metavar="NAME", help="context name in the kubeconfig")
    s.add_argument("--no-ray", action="store_true", help="do not serve the ray.io API (an optional API, absent)")
    s.add_argument("--user", action="append", default=[], metavar="NAME",
                   help="one more operator (repeatable): a token of its own and a kubeconfig context "
                        "<context-name>-NAME; SelfSubjectReview (the audit log's \"who\") answers NAME")
    s.add_argument("--rbac", action="store_true",
                   help="enforce RBAC: stored Roles, ClusterRoles and bindings decide every request but the "
                        "kubeconfig administrator's; `kubectl create token SA -n NS` issues ServiceAccount tokens")
    s.add_argument("--kueue-version", choices=KUEUE_VERSIONS, default=DEFAULT_KUEUE_VERSION, metavar="VERSION",
                   help="the Kueue release to play: 0.14 (v1beta1 only), 0.15 (v1beta1 stored, v1beta2 served "
                        f"by conversion) or 0.19 (v1beta2 stored, v1beta1 served); default {DEFAULT_KUEUE_VERSION}")
    s.add_argument("--fleet", type=int, metavar="N",
                   help="serve a MultiKueue fleet: a manager (the snapshot) and N worker clusters, each its own "
                        "API server, in one kubeconfig (contexts taudash-manager, taudash-worker-1, ...)")
    add_fault_arg(s)
    s.add_argument("--node-fault", action="append", default=[], metavar="NODE=CONDITION",
                   help="hold GPU health Node conditions True on a node for the whole run (repeatable): one of "
                        "TauGrid's 20 GPU health conditions or DcgmExporterUnavailable, e.g. --node-fault "
                        "aks-h100-27604139-vmss000003=XIDError79 (drain class: unhealthy), "
                        "NODE=GPUThermalViolation (taint class: degraded); several: NODE=A,B")
    s.add_argument("--dcgm-exporter", type=int, nargs="?", const=0, default=None, metavar="PORT",
                   help="also serve a simulated NVIDIA dcgm-exporter's /metrics on 127.0.0.1:PORT (default 0: a free "
                        "port): one series per GPU, the holding Pod's labels, idle or busy from the cluster's state")
    s.add_argument("--idle-share", type=float, default=None, metavar="F",
                   help="with --dcgm-exporter: the share of GPU-holding Pods whose GPUs sit idle, picked by the seed "
                        "(0 to 1; default 0.25)")
    s.add_argument("--forbid-logs", action="store_true",
                   help="answer 403 to every Pod log read (pods/log), as RBAC without that subresource does; the "
                        "Pods themselves stay readable")
    s.add_argument("--bookmark-interval", type=float, default=None, metavar="SECONDS",
                   help="seconds between BOOKMARK events on an idle watch (default 15; taudash counts a watch "
                        "fresh while they arrive)")
    s.set_defaults(func=cmd_serve)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def cmd_serve(args) -> int:
    if args.port < 0 or args.port > 65535:
        raise UsageError(f"--port {args.port}: not a TCP port")
    if args.speed <= 0:
        raise UsageError(f"--speed {args.speed}: must be greater than 0")
    out = getattr(args, "kubeconfig_out", None)
    if out == "-":  # clients read it by path while the server runs: stdout is no place for it
        raise UsageError("--kubeconfig-out -: name a file (clients read the kubeconfig from it while serving)")
    if out:
        from pathlib import Path

        p = Path(out)
        if p.is_dir():  # missing parent directories are created by the server
            raise UsageError(f"--kubeconfig-out {out}: is a directory; name a file")
    fleet = getattr(args, "fleet", None)
    if fleet is not None and fleet < 1:
        raise UsageError(f"--fleet {fleet}: a fleet has at least one worker")
    if fleet is not None and getattr(args, "rbac", False):
        raise UsageError("--rbac applies to one cluster: leave out --fleet")
    _check_dcgm(args)
    _bookmarks(args)  # refused before serving
    args.faults = faults_of(args, fleet)
    args.node_faults = _node_faults(args)
    _users(args)  # refused before serving
    if fleet is not None:
        return asyncio.run(_serve_fleet(args))
    return asyncio.run(_serve(args))


def _bookmarks(args) -> float:
    every = getattr(args, "bookmark_interval", None)
    if every is None:
        from taudash.sim.apiserver import BOOKMARK_INTERVAL

        return BOOKMARK_INTERVAL
    if not 0.01 <= every <= 3600:
        raise UsageError(f"--bookmark-interval {every}: seconds from 0.01 to 3600")
    return float(every)


def _check_dcgm(args) -> None:
    port, share = getattr(args, "dcgm_exporter", None), getattr(args, "idle_share", None)
    if share is not None and port is None:
        raise UsageError("--idle-share: add --dcgm-exporter (it sets how busy the simulated GPUs are)")
    if port is not None and not 0 <= port <= 65535:
        raise UsageError(f"--dcgm-exporter {port}: not a TCP port")
    if share is not None and not 0.0 <= share <= 1.0:
        raise UsageError(f"--idle-share {share}: a share from 0 to 1")
    if port is not None and getattr(args, "fleet", None) is not None:
        raise UsageError("--dcgm-exporter: one simulated cluster only (not with --fleet)")


async def _start_dcgm(args, sim):
    """The simulated dcgm-exporter beside the cluster (docs/simulator.md, "The DCGM exporter"), or None."""
    if getattr(args, "dcgm_exporter", None) is None:
        return None
    from taudash.sim.dcgm import DEFAULT_IDLE_SHARE, DcgmExporter

    share = DEFAULT_IDLE_SHARE if args.idle_share is None else args.idle_share
    exporter = DcgmExporter(sim.db, port=args.dcgm_exporter, seed=args.seed, idle_share=share)
    try:
        await exporter.start()
    except OSError as exc:
        raise UsageError(f"--dcgm-exporter: cannot serve on 127.0.0.1:{args.dcgm_exporter}: "
                         f"{exc.strerror or exc}") from None
    series = exporter.series()
    held = [s for s in series if s.allocated]
    print(f"dcgm:       {exporter.url}  ({len(series)} GPUs, {len(held)} allocated, "
          f"{sum(s.idle for s in held)} of them idle: idle share {share:g}, seed {args.seed})", flush=True)
    return exporter


def _users(args) -> list[str]:
    """The --user names: each a DNS label (it becomes part of a context name), the administrator's excluded."""
    import re

    users = list(dict.fromkeys(getattr(args, "user", None) or []))
    for u in users:
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?", u):
            raise UsageError(f"--user {u!r}: lower-case letters, digits and '-' (up to 32)")
    if users and getattr(args, "fleet", None) is not None:
        raise UsageError("--user: one simulated cluster only (not with --fleet)")
    return users


def _node_faults(args) -> list:
    """The --node-fault values, parsed (exit 2 naming the bad part); a node's existence is checked once seeded."""
    from taudash.sim.faults import FaultSpecError, parse_node_fault

    specs = getattr(args, "node_fault", None) or []
    if specs and getattr(args, "fleet", None) is not None:
        raise UsageError("--node-fault: one simulated cluster only (not with --fleet)")
    try:
        return [parse_node_fault(s) for s in specs]
    except FaultSpecError as exc:
        raise UsageError(f"--node-fault {exc}") from None


async def _wait_for_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - not on the main thread / Windows
            pass
    await stop.wait()


async def _serve_fleet(args) -> int:
    """A manager and N workers (taudash.sim.fleet); the manager is served frozen, moved only by
    the fleet's MultiKueue controller and by clients (docs/simulator.md, "A simulated fleet")."""
    from taudash.engine.sources.snapshot import SnapshotError
    from taudash.sim.fleet import SimFleet
    from taudash.sim.server import default_snapshot
    from taudash.sim.tls import TlsError

    fleet = SimFleet(args.fleet, snapshot=args.snapshot or default_snapshot(), kubeconfig=args.kubeconfig_out,
                     bookmark_interval=_bookmarks(args))
    try:
        await fleet.start()
    except (SnapshotError, TlsError) as exc:
        raise UsageError(str(exc)) from None
    try:
        await fleet.set_faults(args.faults)
        fleet.on_control = lambda status: print(f"taudash sim: faults {status}", flush=True)
        print(f"taudash sim: serving a fleet of {1 + len(fleet.workers)} clusters", flush=True)
        print(f"{second_terminal(fleet.kubeconfig)}   (in a second terminal: kubectl and taudash reach every "
              "context below)", flush=True)
        print(f"export TAUDASH_CONFIG={shlex.quote(str(fleet.config))}   # maps the MultiKueueClusters to these "
              "contexts", flush=True)
        for s in (fleet.manager, *fleet.workers):
            role = "manager" if s is fleet.manager else f"worker (MultiKueueCluster {fleet.mk_name_of(s)})"
            print(f"context:    {s.context:<20} {fleet.url_of(s)}  {role}", flush=True)
        print(f"try:        taudash status {' '.join('--context ' + c for c in fleet.contexts)}", flush=True)
        print_control(fleet)
        print("Ctrl-C to stop.", flush=True)
        await _wait_for_signal()
    finally:
        await fleet.stop()
    return EXIT_OK


async def _serve(args) -> int:
    from taudash.engine.sources.snapshot import SnapshotError
    from taudash.sim.controllers.scenario import Scenario, ScenarioError
    from taudash.sim.server import SimServer, default_snapshot
    from taudash.sim.tls import TlsError

    snapshot = args.snapshot or default_snapshot()
    try:
        scenario = Scenario.load(args.scenario) if getattr(args, "scenario", None) else None
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    sim = SimServer(snapshot, port=args.port, kubeconfig=args.kubeconfig_out, context=args.context_name,
                    ray=not args.no_ray, speed=args.speed, seed=args.seed,
                    simulate=not getattr(args, "no_controllers", False), scenario=scenario,
                    kueue_version=getattr(args, "kueue_version", None), users=_users(args),
                    real_clock=getattr(args, "clock", "now") == "now", bookmark_interval=_bookmarks(args),
                    rbac=getattr(args, "rbac", False))
    try:
        await sim.start()
    except SnapshotError as exc:
        raise UsageError(str(exc)) from None
    except TlsError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot serve on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - not on the main thread / Windows
            pass
    exporter = None
    try:
        from taudash.sim.faults import apply_node_faults

        problems = apply_node_faults(sim.db, getattr(args, "node_faults", None) or [])
        if problems:
            raise UsageError(f"--node-fault: {problems[0]}")
        if getattr(args, "forbid_logs", False):
            sim.faults.forbid_logs()
        result = sim.load_result
        seeded = f"{result.objects} objects from {snapshot}" if result is not None else "an empty cluster"
        for issue in result.issues if result is not None else ():
            print(f"taudash: {issue}", file=sys.stderr)
        print(f"taudash sim: serving {seeded} at {sim.url}", flush=True)
        print(f"kubeconfig: {sim.kubeconfig}", flush=True)
        if getattr(args, "rbac", False):
            print("rbac:       enforced for every token but the kubeconfig's administrator "
                  "(kubectl create token SA -n NS)", flush=True)
        print(f"try:        kubectl --kubeconfig {sim.kubeconfig} get clusterqueues", flush=True)
        print(f"or:         {second_terminal(sim.kubeconfig)}   (in a second terminal: kubectl and taudash "
              "then reach this cluster)", flush=True)
        for user in sim.user_tokens:
            print(f"user:       {user:<12} --context {sim.context_of(user)}", flush=True)
        k = sim.kueue
        print(f"kueue:      {k.name} ({k.release}): serves {', '.join(k.served)}, stores {k.storage}", flush=True)
        print(f"validation: {sim.validation}", flush=True)
        if getattr(args, "node_faults", None):
            print(f"node faults: {' '.join(str(f) for f in args.node_faults)} (held for the whole run)", flush=True)
        exporter = await _start_dcgm(args, sim)
        if sim.world is not None:
            print(f"simulating: from {sim.world.clock.stamp()} at {args.speed:g}x, seed {args.seed}", flush=True)
        print("Ctrl-C to stop.", flush=True)
        await stop.wait()
    finally:
        if exporter is not None:
            await exporter.stop()
        await sim.stop()
    return EXIT_OK
