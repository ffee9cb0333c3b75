"""`taudash` (no command), `taudash --snapshot FILE`, `taudash demo`: the Textual dashboard.

`taudash demo` starts the simulated TauGrid cluster in-process on a free loopback port (HTTPS +
token) and runs the dashboard against it through the same live source a real cluster uses.
`taudash` / `taudash --context C` open it on a live cluster.
"""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from taudash.engine.history import HistoryReader, Recorder, RecorderThread
from taudash.engine.paths import state_dir
from taudash.engine.session import Session

from .. import compose
from ..config import ReadOnly
from ..errors import UsageError
from ..live import LiveCluster
from ..loading import DEMO_SNAPSHOT, load_from_args, report_issues
from .options import add_prometheus_arg, add_source_args, rule_config


def register(sub) -> None:
    d = sub.add_parser("demo")
    d.add_argument("--status", action="store_true", help="print the status once instead of opening the dashboard")
    d.add_argument("-o", "--output", choices=("json", "yaml", "table"), default="table")
    add_source_args(d, frozenset({"read_only", "system_namespace", "pvc", "demo"}))
    add_prometheus_arg(d)
    d.add_argument("--speed", type=float, default=10.0, help="simulated seconds per wall second (default 10)")
    d.add_argument("--seed", type=int, default=1, help="random seed of the simulated world")
    d.add_argument("--snapshot-only", action="store_true",
                   help="open the demo snapshot file instead of the running simulator (no live changes)")
    d.add_argument("--fleet", type=int, nargs="?", const=2, metavar="N",
                   help="a simulated MultiKueue fleet: the demo as manager and N workers (default 2), "
                        "opened on the Fleet screen")
    from .sim import add_clock_arg, add_fault_arg

    add_fault_arg(d)
    add_clock_arg(d)
    d.set_defaults(func=run_demo)


# What `taudash demo` parses, for `taudash --demo` (the dashboard's parser has none of these options).
DEMO_DEFAULTS = {"status": False, "output": "table", "speed": 10.0, "seed": 1, "snapshot_only": False, "fleet": None,
                 "fault": None}


def run_demo(args) -> int:
    if getattr(args, "fleet", None) is not None:
        if args.fleet < 1 or args.snapshot_only or args.status:
            raise UsageError("--fleet N: N ≥ 1, without --snapshot-only or --status")
        from .sim import faults_of

        args.faults = faults_of(args, args.fleet)
        return asyncio.run(_demo_fleet(args))
    if getattr(args, "fault", None):
        from .sim import faults_of

        faults_of(args, None)  # refused: faults are per cluster of a fleet
    if args.snapshot_only:
        args.snapshot, args.demo = str(DEMO_SNAPSHOT), False
        if args.status:
            from .status import cmd_status

            return cmd_status(args)
        return open_snapshot_dashboard(args, demo=True)
    if not DEMO_SNAPSHOT.exists():
        raise UsageError(f"{DEMO_SNAPSHOT}: the demo cluster is missing from this installation")
    return asyncio.run(_demo(args))


def demo_kubeconfig() -> tuple[Path, int | None]:
    """Where the demo writes its cluster's kubeconfig, and the lock that keeps it: the same private path
    every run (a 0700 directory under the state dir; the file is 0600, it holds the bearer token), so a
    second terminal can keep `export KUBECONFIG=` pointing at it. While one demo runs it holds that path
    (an flock on `kubeconfig.lock`); a second demo beside it writes `kubeconfig-<pid>` instead of
    overwriting the first's; each removes its own file when it ends."""
    import fcntl

    d = state_dir() / "demo"
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(d, 0o700)
    fd = os.open(d / "kubeconfig.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return d / f"kubeconfig-{os.getpid()}", None
    return d / "kubeconfig", fd


def reach_notice(kubeconfig: Path) -> str:
    from .sim import second_terminal

    return (f"the demo cluster from a second terminal: {second_terminal(kubeconfig)} "
            "(then kubectl get clusterqueues, or taudash)")


async def _demo(args) -> int:
    path, lock = demo_kubeconfig()
    try:
        return await _demo_at(args, path)
    finally:
        if lock is not None:
            os.close(lock)  # the lock goes with the file descriptor


async def _demo_at(args, path: Path) -> int:
    from taudash.sim.server import SimServer

    async with SimServer(DEMO_SNAPSHOT, simulate=True, speed=args.speed, seed=args.seed, kueue_version="0.19",
                         kubeconfig=path, real_clock=getattr(args, "clock", "now") == "now") as sim:
        try:
            if args.status:
                return await asyncio.to_thread(_status_once, args, str(sim.kubeconfig))
            print(f"taudash: {reach_notice(path)}", file=sys.stderr)
            return await _live_dashboard(args, context=None, kubeconfig=str(sim.kubeconfig), demo=True,
                                         source_type="sim", notices=(reach_notice(path),))
        finally:
            _remove_if_ours(path, sim.api.token)


def _remove_if_ours(path: Path, token: str | None) -> None:
    """The cluster is gone with the demo: remove its kubeconfig, unless another demo wrote it since."""
    try:
        if token and token in path.read_text(encoding="utf-8"):
            path.unlink()
    except OSError:
        pass


def _status_once(args, kubeconfig: str) -> int:
    from .status import cmd_status

    args.demo, args.kubeconfig = False, kubeconfig
    args.source_type = "sim"
    return cmd_status(args)


async def _demo_fleet(args) -> int:
    from taudash.sim.fleet import SimFleet

    async with SimFleet(args.fleet) as fleet:
        from .sim import print_control, second_terminal

        await fleet.set_faults(getattr(args, "faults", None) or [])
        print(f"taudash: the demo fleet from a second terminal: {second_terminal(fleet.kubeconfig)} "
              f"(contexts {', '.join(fleet.contexts)})", file=sys.stderr)
        print_control(fleet, sys.stderr)

        def tell(app) -> None:  # the dashboard owns the terminal: what the control file did is a notification
            fleet.on_control = lambda status: app.notify(f"faults {status}", title="simulated fleet", markup=False,
                                                         severity="error" if status.startswith(("rejected", "failed"))
                                                         else "information")

        return await fleet_dashboard(args, fleet.contexts, str(fleet.kubeconfig), source_type="sim",
                                     mapping=fleet.mapping, on_app=tell)


async def fleet_dashboard(args, contexts: list[str], kubeconfig: str | None, source_type: str = "kube",
                          retry: float = 5.0, mapping: dict[str, str] | None = None, on_app=None) -> int:
    """One live source per cluster, each in its own task (docs/fleet.md); every session read-only."""
    from ..fleet import Fleet, FleetMember, check_contexts, freshness_bound, multikueue_mapping
    from ..fleet_app import FleetApp

    check_contexts(contexts, kubeconfig)  # a kubeconfig problem is exit 2 before the screen opens, not a row
    fleet = Fleet([FleetMember(c, rule_config(args), source_type) for c in contexts],
                  mapping=multikueue_mapping() if mapping is None else mapping, freshness_bound=freshness_bound())
    fleet.start(kubeconfig, retry)
    try:
        app = FleetApp(fleet)
        if on_app is not None:
            on_app(app)
        await app.run_async()
    finally:
        await fleet.stop()
    return 0


async def agents_dashboard(args, agents) -> int:
    """The Fleet screen over agents' documents (taudash/agents.py): one poll loop per agent; a cluster is
    opened live only on Enter, with a known kubeconfig context."""
    from ..agents import AgentFleet, AgentMember, agent_token
    from ..fleet import freshness_bound
    from ..fleet_app import AgentFleetApp

    bound = freshness_bound()
    fleet = AgentFleet([AgentMember(a, bound) for a in agents], config=rule_config(args), kubeconfig=args.kubeconfig)
    fleet.start(agent_token())
    try:
        await AgentFleetApp(fleet).run_async()
    finally:
        await fleet.stop()
    return 0


def run_default(args) -> int:
    if getattr(args, "fleet_from", None):
        from .status import agents_of_args

        return asyncio.run(agents_dashboard(args, agents_of_args(args)))
    if args.demo:  # `taudash --demo` is `taudash demo` with its defaults
        if args.snapshot or args.contexts or args.kubeconfig:
            raise UsageError("choose one source: --snapshot FILE, --context NAME or --demo")
        for name, value in DEMO_DEFAULTS.items():
            setattr(args, name, getattr(args, name, value))
        return run_demo(args)
    if args.snapshot:
        return open_snapshot_dashboard(args, demo=False)
    if len(getattr(args, "contexts", None) or ()) > 1:
        return asyncio.run(fleet_dashboard(args, args.contexts, args.kubeconfig))
    return asyncio.run(_live_dashboard(args, context=args.context, kubeconfig=args.kubeconfig, demo=False,
                                       source_type="kube"))


class LiveSessions:
    """The live clusters one dashboard shows: the one it opened on, then each kubeconfig context `:ctx`
    switches to (the app's ContextSwitcher, taudash/app.py). Each is a LiveCluster with its own session,
    history recorder and reader; one is closed once the dashboard has left it.

    Read-only mode is sticky: a context is opened with every source that asked for read-only mode on the
    clusters shown before (the flag, the environment, the config file, for any context), plus those that
    ask for it on this one. No journal is carried: each session holds its own cluster's identity, which
    the workflow host binds runs to (engine/identity.py)."""

    def __init__(self, args, kubeconfig: str | None, demo: bool, source_type: str) -> None:
        self.args = args
        self.kubeconfig = kubeconfig
        self.demo = demo
        self.source_type = source_type
        self.read_only: bool | ReadOnly = bool(args.read_only)  # grows with each cluster shown, never shrinks
        self._first: str | None = None  # the context the dashboard opened on (the demo's, when it is the demo)
        self._held: dict[int, tuple[LiveCluster, RecorderThread]] = {}
        self.said: list[str] = []  # printed when the dashboard ends (the terminal is the dashboard's until then)

    async def open(self, context: str | None, say=None) -> Session:
        live = LiveCluster(context, self.kubeconfig, read_only=self.read_only, say=say)
        await live.__aenter__()
        try:
            if self._first is None:
                self._first = live.target.context
            demo = self.demo and live.target.context == self._first
            key = compose.history_key(live, demo)
            session = compose.dashboard_session(live, rule_config(self.args), demo=demo, source_type=self.source_type,
                                                history_reader=HistoryReader.for_cluster(key), now=datetime.now(UTC))
            history = RecorderThread(lambda: Recorder.for_cluster(key), session, lambda: datetime.now(UTC)).start()
        except BaseException:
            await live.close()
            raise
        self.read_only = live.read_only_state  # what asked here (it already holds what asked before)
        self._held[id(session)] = (live, history)
        return session

    async def retire(self, session: Session) -> None:
        held = self._held.pop(id(session), None)
        if held is None:
            return
        live, history = held
        history.stop()
        if session.history_reader is not None:
            session.history_reader.close()
        if history.error or history.standby:  # standby: another taudash recorded this cluster
            self.said.append(f"{live.target.context}: {history.error or history.standby}")
        await live.close()

    async def close(self) -> None:
        """Every cluster still open (the one shown when the dashboard ends)."""
        for _, history in list(self._held.values()):
            await self.retire(history.session)


async def _live_dashboard(args, context, kubeconfig, demo: bool, source_type: str,
                          notices: tuple[str, ...] = ()) -> int:
    sessions = LiveSessions(args, kubeconfig, demo, source_type)
    session = await sessions.open(context, say=lambda text: print(f"taudash: {text}", file=sys.stderr))
    from ..app import TaudashApp

    try:
        # The demo's runs share the CLI's journal folder: a CLI run on the demo cluster and one from the
        # dashboard see each other (journals stay bound to the cluster's identity: docs/decisions.md 99).
        await TaudashApp(session, notices=notices, contexts=sessions).run_async()
    finally:
        await sessions.close()
        for text in sessions.said:
            print(f"taudash: {text}", file=sys.stderr)
    return 0


def open_snapshot_dashboard(args, demo: bool) -> int:
    loaded = load_from_args(args)
    session = compose.snapshot_session(loaded, rule_config(args), demo=demo)
    from ..app import TaudashApp

    TaudashApp(session).run()
    report_issues(loaded.issues)  # after the screen is restored, so they stay readable
    return 0
