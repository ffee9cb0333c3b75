"""`taudash serve`: the dashboard's engine and live source without a screen, for as long as it runs.

Derives the view on a timer (one derive at a time; a slow one delays the next tick instead of
stacking up), optionally exports it to Prometheus (`--metrics ADDR`), and stops cleanly on SIGINT
or SIGTERM (exit 0). A live cluster's history is recorded into its per-cluster file while serve
runs (docs/history.md; a snapshot is never recorded). Read-only by construction: the session's write
path is `Actions.read_only`, and nothing here builds another.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from taudash.engine.actions import Actions
from taudash.engine.history import DEMO_CLUSTER_KEY, QueuedRecorder, Recorder, cluster_key
from taudash.engine.rules.base import RuleConfig
from taudash.engine.session import Session
from taudash.engine.store import Store
from taudash.engine.view import ClusterView, SourceInfo

from ..errors import Unreachable, UsageError
from ..loading import DEMO_SNAPSHOT, load_from_args, report_issues

if TYPE_CHECKING:
    from ..serve.web import WallboardServer

READ_ONLY_REASON = "taudash serve is read-only by construction"
DEFAULT_INTERVAL = 2.0

TickHook = Callable[[ClusterView, Store, datetime], None]


def register(sub, add_source_args) -> None:
    s = sub.add_parser("serve", help="run headless: derive the view on a timer, export Prometheus metrics")
    add_source_args(s)
    s.add_argument("--metrics", metavar="ADDR",
                   help="serve Prometheus metrics on ADDR: PORT or :PORT (127.0.0.1), or HOST:PORT (default: off)")
    w = s.add_argument_group("wallboard (docs/wallboard.md)")
    w.add_argument("--web", metavar="ADDR",
                   help="show the dashboard to browsers on ADDR: PORT or :PORT (127.0.0.1), or HOST:PORT "
                        "(off loopback only with a token); read-only by construction (default: off)")
    w.add_argument("--web-token", metavar="TOKEN",
                   help="access token the browsers must present (default: $TAUDASH_WEB_TOKEN; prefer the "
                        "variable: a command line is visible to every user of the machine)")
    w.add_argument("--kiosk", metavar="SCREENS",
                   help="rotate every browser through these screens, comma-separated (e.g. overview,queues,pool)")
    w.add_argument("--kiosk-interval", type=float, default=30.0, metavar="SECONDS",
                   help="seconds on each kiosk screen (default 30)")
    s.add_argument("--interval", type=float, default=DEFAULT_INTERVAL, metavar="SECONDS",
                   help=f"seconds between derivations (default {DEFAULT_INTERVAL:g})")
    s.add_argument("--speed", type=float, default=10.0, help="with --demo: simulated seconds per wall second")
    s.add_argument("--seed", type=int, default=1, help="with --demo: random seed of the simulated world")
    s.set_defaults(func=run_serve)


def run_serve(args) -> int:
    from ..serve.exporter import AddressError, parse_address

    if not args.interval > 0:
        raise UsageError("--interval must be a positive number of seconds")
    chosen = [x for x in (args.snapshot, args.context, args.demo or None) if x]
    if len(chosen) > 1:
        raise UsageError("choose one source: --snapshot FILE, --context NAME or --demo")
    address = None
    if args.metrics is not None:
        try:
            address = parse_address(args.metrics)
        except AddressError as exc:
            raise UsageError(str(exc)) from None
    return asyncio.run(Serve(args, address, web_options(args)).main())


def web_options(args):
    """The wallboard's options from the command line, or None without --web (UsageError when unusable)."""
    from ..serve.exporter import AddressError, parse_address
    from ..serve.web import OptionsError, WebOptions, parse_kiosk, token_from

    if args.web is None:
        if args.web_token or args.kiosk:
            raise UsageError("--web-token and --kiosk apply to the wallboard: add --web ADDR")
        return None
    try:
        address = parse_address(args.web)
    except AddressError as exc:
        raise UsageError(str(exc).replace("--metrics", "--web")) from None
    try:
        return WebOptions(address, token_from(args.web_token), parse_kiosk(args.kiosk), args.kiosk_interval)
    except OptionsError as exc:
        raise UsageError(str(exc)) from None


class Serve:
    def __init__(self, args, address, web=None) -> None:
        self.args = args
        self.address = address
        self.web_options = web
        self.web: WallboardServer | None = None  # the wallboard's server, once bound
        self.config = RuleConfig(system_namespace=args.system_namespace, storage_claims=tuple(args.pvc))
        # --- per-tick hooks -----------------------------------------------------------------
        # Called after every derive, in the derive's worker thread, under the session lock (the
        # store matches the view). The history recorder attaches here; a failing hook is reported
        # and never stops the service.
        self.on_tick: list[TickHook] = []
        self.recorder: QueuedRecorder | None = None  # live sources record history (set once synced)
        from ..serve.metrics import Latest

        self.latest = Latest()
        self._stop = asyncio.Event()

    async def main(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._stop.set)
        # A kubeconfig problem is said before anything is bound or announced (one line, exit 2); the ports
        # are bound before the sync: a port in use fails at once, not after a 30 s sync.
        live = not (self.args.demo or self.args.snapshot)
        target = await _connect(self.args.context, self.args.kubeconfig) if live else None
        self.metrics = None
        try:
            self.metrics = self._start_metrics("sim" if self.args.demo else "snapshot" if self.args.snapshot else "kube")
            await self._start_web()
            if self.args.demo:
                return await self._demo()
            if self.args.snapshot:
                return await self._snapshot()
            return await self._live(target, "kube", demo=False)
        finally:
            if target is not None:
                await target.close()
            if self.web is not None:
                await self.web.stop()
            if self.metrics is not None:
                self.metrics.stop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    async def _demo(self) -> int:
        from taudash.sim.server import SimServer

        if not DEMO_SNAPSHOT.exists():
            raise UsageError(f"{DEMO_SNAPSHOT}: the demo cluster is missing from this installation")
        async with SimServer(DEMO_SNAPSHOT, simulate=True, speed=self.args.speed, seed=self.args.seed) as sim:
            target = await _connect(None, str(sim.kubeconfig))
            try:
                return await self._live(target, "sim", demo=True)
            finally:
                await target.close()

    async def _snapshot(self) -> int:
        loaded = await asyncio.to_thread(load_from_args, self.args)
        report_issues(loaded.issues)
        session = Session(loaded.store, loaded.source, self.config, read_only=True,
                          issues=tuple(str(i) for i in loaded.issues))
        session.actions = Actions.read_only(READ_ONLY_REASON)
        return await self._run(session)

    async def _live(self, target, source_type: str, demo: bool) -> int:
        from taudash.engine.sources.kube import KubeSource
        from taudash.engine.sources.kube import Unreachable as SourceUnreachable

        session = Session(
            Store(),
            SourceInfo(type=source_type, context=target.context, path=target.server,
                       observed_at=datetime.now(UTC).isoformat(timespec="seconds")),
            self.config,
            read_only=True,
            demo=demo,
        )
        session.actions = Actions.read_only(READ_ONLY_REASON, target.context)
        source = KubeSource(session.store, target, lock=session.lock)
        try:
            try:
                await source.start()
            except SourceUnreachable as exc:
                raise Unreachable(str(exc)) from None
            _say(f"syncing {target.context} ({target.server}) …")
            if not await self._unless_stopped(source.wait_synced(30)):
                _say("stopped")
                return 0
            recorder = self._record(DEMO_CLUSTER_KEY if demo else cluster_key(target.context, target.server))
            try:
                return await self._run(session)
            finally:
                self.on_tick.remove(recorder.hook)
                await asyncio.to_thread(recorder.stop)
        finally:
            await source.stop()

    def _record(self, key: str) -> QueuedRecorder:
        """Continuous history for a live cluster (never a snapshot): collected in the tick hook, written on
        the recorder's own thread (docs/history.md)."""
        recorder = QueuedRecorder(lambda: Recorder.for_cluster(key), say=_say).start()
        self.recorder = recorder
        self.on_tick.append(recorder.hook)
        return recorder

    async def _unless_stopped(self, work) -> bool:
        """Await `work` unless a stop signal comes first (then cancel it): True when it finished."""
        task = asyncio.ensure_future(work)
        stop = asyncio.ensure_future(self._stop.wait())
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if task.done():
            task.result()
            return True
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        return False

    async def _start_web(self) -> None:
        if self.web_options is None:
            return
        from ..serve.web import WallboardServer

        server = WallboardServer(None, self.web_options, _say)
        try:
            await server.start()
        except OSError as exc:
            raise UsageError(f"--web {self.args.web}: cannot listen: {exc.strerror or exc}") from None
        self.web = server
        opts = self.web_options
        if not opts.address.loopback:
            _say(f"warning: the wallboard listens on {opts.address.host}, reachable beyond this machine; "
                 "browsers need the access token")
        kiosk = f"; kiosk: {', '.join(opts.kiosk)} every {opts.kiosk_interval:g} s" if opts.kiosk else ""
        _say(f"wallboard on {server.url()} (read-only){kiosk}")

    async def _run(self, session: Session) -> int:
        if self.web is not None:
            self.web.attach(session)  # read-only by construction: the header says so, with the reason
        if self.collector is not None:
            self.collector.context = session.source.context
        _say(f"serving {session.source.context or session.source.path or session.source.type}"
             f" every {self.args.interval:g} s (read-only); stop with Ctrl-C or SIGTERM")
        loop = asyncio.get_running_loop()
        while not self._stop.is_set():
            started = loop.time()
            await asyncio.to_thread(self._tick, session)  # never two at once: the loop awaits each
            wait = max(0.0, self.args.interval - (loop.time() - started))
            try:
                await asyncio.wait_for(self._stop.wait(), wait)
            except TimeoutError:
                pass
        _say("stopped")
        return 0

    def _start_metrics(self, source_type: str):
        self.collector = None
        if self.address is None:
            return None
        from ..serve.exporter import MetricsServer
        from ..serve.metrics import TaudashCollector

        self.collector = TaudashCollector(self.latest, source_type, None)
        server = MetricsServer(self.address, self.collector)
        try:
            port = server.start()
        except OSError as exc:
            raise UsageError(f"--metrics {self.args.metrics}: cannot listen: {exc.strerror or exc}") from None
        if not self.address.loopback:
            _say(f"warning: the metrics endpoint listens on {self.address.host}, reachable beyond this machine; "
                 "its series name cluster objects: restrict access to the port")
        _say(f"metrics on {self.address.url(port)}")
        return server

    def _tick(self, session: Session) -> None:
        from ..serve.metrics import sample_of

        now = datetime.now(UTC)
        try:
            with session.lock:
                # A whole frame (view, freshness, history): the wallboard's tabs render this one.
                view = session.frame(now).view
                self.latest.publish(sample_of(view, session.store, now.timestamp()))
                for hook in self.on_tick:
                    try:
                        hook(view, session.store, now)
                    except Exception as exc:  # one hook's failure must not stop the service or the others
                        _say(f"tick hook {getattr(hook, '__name__', hook)!r} failed: {type(exc).__name__}: {exc}")
        except Exception as exc:
            self.latest.failed()
            _say(f"derive failed: {type(exc).__name__}: {exc}")


async def _connect(context, kubeconfig):
    from taudash.engine.sources.kube import ConfigError, connect

    try:
        return await connect(context, kubeconfig)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _say(text: str) -> None:
    from taudash.engine.text import clean

    # one write per line: the history writer thread says things too, and print writes the newline apart
    print(f"taudash serve: {clean(text)}\n", end="", file=sys.stderr, flush=True)
