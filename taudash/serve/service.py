"""`taudash serve`: the dashboard's engine and live source without a screen, for as long as it runs.

Derives the view on a timer (one derive at a time; a slow one delays the next tick instead of
stacking up), optionally exports it to Prometheus (`--metrics ADDR`) and shows it to browsers (`--web
ADDR`, serve/web.py), and stops cleanly on SIGINT or SIGTERM (exit 0). A live cluster's history is
recorded into its per-cluster file while serve runs (docs/history.md; a snapshot is never recorded).
Read-only by construction: the cluster is opened with `never_writes` (its write path holds no client),
the session is built read-only (taudash/compose.py), and nothing here builds another. The command line
is parsed in taudash/commands/serve.py.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from taudash.engine.history import DEMO_CLUSTER_KEY, QueuedRecorder, Recorder, cluster_key
from taudash.engine.session import Session
from taudash.engine.store import Store
from taudash.engine.view import ClusterView

from .. import compose
from ..config import rule_config
from ..errors import UsageError
from ..live import LiveCluster
from ..loading import DEMO_SNAPSHOT, load_from_args, report_issues
from .access import token_from

if TYPE_CHECKING:
    from .web import WallboardServer

READ_ONLY_REASON = "taudash serve is read-only by construction"

TickHook = Callable[[ClusterView, Store, datetime], None]


class Serve:
    def __init__(self, args, address, web=None) -> None:
        self.args = args
        self.address = address
        self.web_options = web
        self.web: WallboardServer | None = None  # the wallboard's server, once bound
        self.config = rule_config(args)  # the same rule settings as every command (the config's capacity section)
        # Why nothing is written, as every refused write says it (and the wallboard's header, with --web).
        self.reason, self.badge = READ_ONLY_REASON, ""
        if web is not None:
            from .web import WEB_REASON

            self.reason = self.badge = WEB_REASON
        # --- per-tick hooks -----------------------------------------------------------------
        # Called after every derive, in the derive's worker thread, under the session lock (the
        # store matches the view). The history recorder attaches here; a failing hook is reported
        # and never stops the service.
        self.on_tick: list[TickHook] = []
        self.recorder: QueuedRecorder | None = None  # live sources record history (set once synced)
        from .metrics import Latest

        self.latest = Latest()
        from .agent import StatusDocument

        self.status = StatusDocument()  # GET /api/v1/status beside /metrics: the agent's ClusterStatus
        self._stop = asyncio.Event()
        self.ready = threading.Event()  # /readyz: set after the first derive over a synced source

    async def main(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._stop.set)
        # A kubeconfig problem is said before anything is bound or announced (one line, exit 2); the ports
        # are bound before the sync: a port in use fails at once, not after a 30 s sync.
        live = None if self.args.demo or self.args.snapshot else self._cluster(self.args.context, self.args.kubeconfig)
        if live is not None:
            await live.connect()
        self.metrics = None
        try:
            self.metrics = self._start_metrics("sim" if self.args.demo else "snapshot" if self.args.snapshot
                                               else "kube")
            await self._start_web()
            if self.args.demo:
                return await self._demo()
            if self.args.snapshot:
                return await self._snapshot()
            assert live is not None
            return await self._live(live, "kube", demo=False)
        finally:
            if live is not None:
                await live.close()
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
            live = self._cluster(None, str(sim.kubeconfig))
            await live.connect()
            try:
                return await self._live(live, "sim", demo=True)
            finally:
                await live.close()

    async def _snapshot(self) -> int:
        loaded = await asyncio.to_thread(load_from_args, self.args)
        report_issues(loaded.issues)
        return await self._run(compose.snapshot_session(loaded, self.config, why=self.reason, badge=self.badge))

    def _cluster(self, context: str | None, kubeconfig: str | None) -> LiveCluster:
        """The cluster, opened so that it cannot be written: its write path holds no client."""
        return LiveCluster(context, kubeconfig, never_writes=self.reason, say=_say)

    async def _live(self, live: LiveCluster, source_type: str, demo: bool) -> int:
        await live.start()
        if not await self._unless_stopped(live.wait_synced()):
            _say("stopped")
            return 0
        session = compose.serve_session(live, self.config, demo=demo, source_type=source_type, badge=self.badge)
        recorder = self._record(DEMO_CLUSTER_KEY if demo else cluster_key(live.target.context, live.target.server))
        try:
            return await self._run(session)
        finally:
            self.on_tick.remove(recorder.hook)
            await asyncio.to_thread(recorder.stop)

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
        from .web import WallboardServer

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
        from .agent import status_app
        from .exporter import MetricsServer
        from .metrics import TaudashCollector

        self.collector = TaudashCollector(self.latest, source_type, None)
        token = token_from(getattr(self.args, "web_token", None))
        server = MetricsServer(self.address, self.collector, ready=self.ready.is_set,
                               status=status_app(self.status, token, self.address.loopback))
        try:
            port = server.start()
        except OSError as exc:
            raise UsageError(f"--metrics {self.args.metrics}: cannot listen: {exc.strerror or exc}") from None
        if not self.address.loopback:
            _say(f"warning: the metrics endpoint listens on {self.address.host}, reachable beyond this machine; "
                 "its series name cluster objects: restrict access to the port")
        _say(f"metrics on {self.address.url(port)}")
        _say(f"the agent's status on {self.address.url(port).removesuffix('/metrics')}/api/v1/status"
             + (" (bearer token)" if token else " (loopback, no token)" if self.address.loopback
                else " (answered 403: no token set)"))
        return server

    def _tick(self, session: Session) -> None:
        from .metrics import sample_of

        now = datetime.now(UTC)
        try:
            with session.lock:
                # A whole frame (view, freshness, history): the wallboard's tabs render this one.
                frame = session.frame(now)
                view = frame.view
                self.latest.publish(sample_of(view, session.store, now.timestamp()))
                self.status.publish(view, frame.freshness, now.timestamp())
                self.ready.set()  # the first view of a synced source is published: /readyz answers 200
                for hook in self.on_tick:
                    try:
                        hook(view, session.store, now)
                    except Exception as exc:  # one hook's failure must not stop the service or the others
                        _say(f"tick hook {getattr(hook, '__name__', hook)!r} failed: {type(exc).__name__}: {exc}")
        except Exception as exc:
            self.latest.failed()
            _say(f"derive failed: {type(exc).__name__}: {exc}")


def _say(text: str) -> None:
    from taudash.engine.text import clean

    # one write per line: the history writer thread says things too, and print writes the newline apart
    print(f"taudash serve: {clean(text)}\n", end="", file=sys.stderr, flush=True)
