"""`taudash` (no command), `taudash --snapshot FILE`, `taudash demo`: the Textual dashboard.

`taudash demo` starts the simulated TauGrid cluster in-process on a free loopback port (HTTPS +
token) and runs the dashboard against it through the same live source a real cluster uses.
`taudash` / `taudash --context C` open it on a live cluster.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

from taudash.engine.actions import Actions, AuditLog
from taudash.engine.history import DEMO_CLUSTER_KEY, HistoryReader, Recorder, RecorderThread, cluster_key
from taudash.engine.paths import state_dir
from taudash.engine.rules.base import RuleConfig
from taudash.engine.session import HISTORY_WINDOW, Session
from taudash.engine.sources.kube import ConfigError, KubeSource, connect
from taudash.engine.sources.kube import Unreachable as SourceUnreachable
from taudash.engine.store import Store
from taudash.engine.view import SourceInfo

from ..errors import Unreachable, UsageError
from ..loading import DEMO_SNAPSHOT, load_from_args, report_issues


def register(sub, add_source_args) -> None:
    d = sub.add_parser("demo", help="open the dashboard on the embedded simulated cluster")
    d.add_argument("--status", action="store_true", help="print the status once instead of opening the dashboard")
    d.add_argument("-o", "--output", choices=("json", "yaml", "table"), default="table")
    add_source_args(d, frozenset({"read_only", "system_namespace", "pvc", "demo"}))
    d.add_argument("--speed", type=float, default=10.0, help="simulated seconds per wall second (default 10)")
    d.add_argument("--seed", type=int, default=1, help="random seed of the simulated world")
    d.add_argument("--snapshot-only", action="store_true",
                   help="open the demo snapshot file instead of the running simulator (no live changes)")
    d.set_defaults(func=run_demo)


def _config(args) -> RuleConfig:
    return RuleConfig(system_namespace=args.system_namespace, storage_claims=tuple(args.pvc))


def run_demo(args) -> int:
    if args.snapshot_only:
        args.snapshot, args.demo = str(DEMO_SNAPSHOT), False
        if args.status:
            from ..cli import cmd_status

            return cmd_status(args)
        return open_snapshot_dashboard(args, demo=True)
    if not DEMO_SNAPSHOT.exists():
        raise UsageError(f"{DEMO_SNAPSHOT}: the demo cluster is missing from this installation")
    return asyncio.run(_demo(args))


async def _demo(args) -> int:
    from taudash.sim.server import SimServer

    async with SimServer(DEMO_SNAPSHOT, simulate=True, speed=args.speed, seed=args.seed, kueue_version="0.19") as sim:
        if args.status:
            return await asyncio.to_thread(_status_once, args, str(sim.kubeconfig))
        return await _live_dashboard(args, context=None, kubeconfig=str(sim.kubeconfig), demo=True,
                                     source_type="sim")


def _status_once(args, kubeconfig: str) -> int:
    from ..cli import cmd_status

    args.demo, args.kubeconfig = False, kubeconfig
    args.source_type = "sim"
    return cmd_status(args)


def run_default(args) -> int:
    if args.snapshot:
        return open_snapshot_dashboard(args, demo=False)
    return asyncio.run(_live_dashboard(args, context=args.context, kubeconfig=args.kubeconfig, demo=False,
                                       source_type="kube"))


async def _live_dashboard(args, context, kubeconfig, demo: bool, source_type: str) -> int:
    from ..cli import read_only_of

    try:
        target = await connect(context, kubeconfig)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    try:
        asked = read_only_of(args, target.context)  # flag, env, config file (global or this context)
    except UsageError:
        await target.close()
        raise
    store = Store()
    session = Session(
        store,
        SourceInfo(type=source_type, context=target.context, path=target.server,
                   observed_at=datetime.now(UTC).isoformat(timespec="seconds")),
        _config(args),
        read_only=bool(asked),
        demo=demo,
    )
    session.read_only_why = asked.badge  # the header badge says who asked
    source = KubeSource(store, target, lock=session.lock)
    session.queue_positions = source.pending_workloads  # the ClusterQueue detail asks Kueue's visibility API on demand
    try:
        try:
            await source.start()
        except SourceUnreachable as exc:
            raise Unreachable(str(exc)) from None
        print(f"taudash: syncing {target.context} ({target.server}) …", file=sys.stderr)
        await source.wait_synced(30)
        session.cluster = await source.identity()
        if asked:
            session.actions = Actions.read_only(asked.why, target.context)
        else:
            session.actions = Actions.live(target.api_client, target.user or "unknown", target.context,
                                           AuditLog(state_dir() / "audit.log"), versions=source.version_of)
        from taudash.engine.workflows.journal import demo_workflows_dir
        from taudash.screens.workflow_run import RunOptions  # the demo keeps its own journals, apart from `sim serve`'s

        from ..app import TaudashApp

        key = DEMO_CLUSTER_KEY if demo else cluster_key(target.context, target.server)
        attach_history(session, HistoryReader.for_cluster(key), datetime.now(UTC))
        history = RecorderThread(lambda: Recorder.for_cluster(key), session, lambda: datetime.now(UTC)).start()
        try:
            await TaudashApp(session, workflows=RunOptions(directory=demo_workflows_dir()) if demo else None).run_async()
        finally:
            history.stop()
            session.history_reader.close()
            if history.error:
                print(f"taudash: {history.error}", file=sys.stderr)
    finally:
        await source.stop()
        await target.close()
    return 0


def attach_history(session: Session, reader: HistoryReader, now: datetime) -> None:
    """Give the session its cluster's recorded history (the History screen reads it) and start the
    "last 30 min" sparklines from it, so they survive a restart."""
    session.history_reader = reader
    session.seed_history(reader.recent_reserved(now.timestamp(), HISTORY_WINDOW))


def open_snapshot_dashboard(args, demo: bool) -> int:
    loaded = load_from_args(args)
    session = Session(
        loaded.store,
        loaded.source,
        _config(args),
        read_only=True,  # a snapshot is an observed revision: never written back
        demo=demo,
        issues=tuple(str(i) for i in loaded.issues),
    )
    session.actions = Actions.read_only("snapshot source: nothing to write to")
    from ..app import TaudashApp

    TaudashApp(session).run()
    report_issues(loaded.issues)  # after the screen is restored, so they stay readable
    return 0
