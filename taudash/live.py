"""A live cluster, the one way every program reaches one: connect → sync → identity → the write path.

`async with LiveCluster(context, kubeconfig, read_only=...) as live` does it all (the commands that act:
workflows, rehearsals); the programs that hold a cluster for as long as they run take the steps one by one
(`connect`, `start`, `wait_synced`, `read_identity`, `close`): serve connects before it binds its ports and
can be stopped during the sync, a fleet member retries an unreachable cluster, the bench times the sync.
A bad kubeconfig or context is a UsageError (exit 2), no API server an Unreachable (exit 3). The Session a
program shows is built from a LiveCluster in taudash/compose.py.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from taudash.engine.actions import Actions, AuditLog
from taudash.engine.identity import ClusterIdentity
from taudash.engine.paths import state_dir
from taudash.engine.sources.client import ClusterTarget, ConfigError, connect
from taudash.engine.sources.client import Unreachable as SourceUnreachable
from taudash.engine.sources.kube import KubeSource
from taudash.engine.store import Store
from taudash.engine.view import SourceInfo

from .config import ReadOnly, resolve_read_only
from .errors import Unreachable, UsageError

PageHook = Callable[[str, bytes], None]


class LiveCluster:
    """One live cluster: its connection, the store its source keeps in sync, its identity and write path.

    `read_only`: the caller's request (the flag, or a ReadOnly); the environment and the config file are
    added once the context is known. `never_writes`: a program that cannot write at all (serve, a fleet
    view, a one-shot read) — its reason; the read-only settings are then not consulted. `store`/`lock`: a
    program that keeps its store across reconnections (a fleet member) passes its own; the source applies
    its writes under `lock`, which the Session shares. `on_page`: told every list page (the bench)."""

    def __init__(self, context: str | None, kubeconfig: str | None, read_only: bool | ReadOnly = False,
                 sync_timeout: float = 30.0, lock: threading.RLock | None = None, *, never_writes: str | None = None,
                 store: Store | None = None, on_page: PageHook | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.context = context
        self.kubeconfig = kubeconfig
        self.read_only = read_only
        self.sync_timeout = sync_timeout
        self.lock = lock if lock is not None else threading.RLock()
        self.never_writes = never_writes
        self.store = store if store is not None else Store()
        self.on_page = on_page
        self.say = say  # told "syncing CONTEXT (SERVER) …" once the source has started
        self._target: ClusterTarget | None = None
        self._source: KubeSource | None = None
        self._identity: ClusterIdentity | None = None
        self._actions: Actions | None = None
        self.read_only_state = ReadOnly()
        self.connected_at: str | None = None  # when the connection was made (ISO 8601, seconds)

    # the steps ----------------------------------------------------------------------------------
    async def connect(self) -> ClusterTarget:
        """Resolve the kubeconfig context and open a client (nothing is sent yet), then decide read-only
        mode for that context from every source (flag, env, config file)."""
        try:
            self._target = await connect(self.context, self.kubeconfig)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        self.connected_at = datetime.now(UTC).isoformat(timespec="seconds")
        if self.never_writes is not None:
            self.read_only_state = ReadOnly.asked(self.never_writes)
            return self._target
        try:
            self.read_only_state = resolve_read_only(self.read_only, self._target.context)
        except UsageError:
            await self.close()
            raise
        return self._target

    async def start(self) -> KubeSource:
        """Start the informers (the first request fails fast on an unreachable server)."""
        target = self.target
        self._source = KubeSource(self.store, target, lock=self.lock, on_page=self.on_page)
        try:
            await self._source.start()
        except SourceUnreachable as exc:
            raise Unreachable(str(exc)) from None
        if self.say is not None:
            self.say(f"syncing {target.context} ({target.server}) …")
        return self._source

    async def wait_synced(self, within: float | None = None) -> bool:
        """Until every kind has settled once (bounded): False when the bound ran out first."""
        return await self.source.wait_synced(self.sync_timeout if within is None else within)

    async def read_identity(self) -> ClusterIdentity:
        """The cluster's identity (server URL + kube-system UID), read once."""
        if self._identity is None:
            self._identity = await self.source.identity()
        return self._identity

    async def close(self) -> None:
        if self._source is not None:
            await self._source.stop()
        if self._target is not None:
            await self._target.close()

    async def __aenter__(self) -> LiveCluster:
        await self.connect()
        try:
            await self.start()
            await self.wait_synced()
            await self.read_identity()
            self._actions = self._write_path()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # what the steps gave -----------------------------------------------------------------------
    @property
    def target(self) -> ClusterTarget:
        if self._target is None:
            raise RuntimeError("not connected: await connect() first")
        return self._target

    @property
    def source(self) -> KubeSource:
        if self._source is None:
            raise RuntimeError("not started: await start() first")
        return self._source

    @property
    def identity(self) -> ClusterIdentity:
        if self._identity is None:
            raise RuntimeError("identity not read: await read_identity() first")
        return self._identity

    @property
    def actions(self) -> Actions:
        """The write path for this cluster (built once the context is known)."""
        if self._actions is None:
            self._actions = self._write_path()
        return self._actions

    def _write_path(self) -> Actions:
        """Read-only (no client at all) when anyone asked for read-only mode or the program never writes;
        else guarded, audited, and writing at the API versions the source reads."""
        target = self.target
        if self.read_only_state:
            why = self.never_writes if self.never_writes is not None else self.read_only_state.why
            return Actions.read_only(why, target.context)
        return Actions.live(target.api_client, target.user or "unknown", target.context,
                            AuditLog(state_dir() / "audit.log"), versions=self.source.version_of)

    def source_info(self, source_type: str = "kube", observed_at: str | None = None) -> SourceInfo:
        """What the view says about this source: its type, context and server, and when it was read."""
        target = self.target
        return SourceInfo(type=source_type, context=target.context, path=target.server,
                          observed_at=observed_at or self.connected_at)


@asynccontextmanager
async def synced_cluster(context: str | None, kubeconfig: str | None,
                         sync_timeout: float = 30.0) -> AsyncIterator[LiveCluster]:
    """For one-shot reads: connect, sync every kind once (bounded) and stop watching; the cluster while
    open (its store as synced, its client still open for re-reads), the connection closed after."""
    live = LiveCluster(context, kubeconfig, sync_timeout=sync_timeout, never_writes="a one-shot read")
    await live.connect()
    try:
        await live.start()
        await live.wait_synced()
        await live.source.stop()  # the store stays as synced; the client stays open for re-reads
        yield live
    finally:
        await live.close()


async def cluster_named(context: str | None, kubeconfig: str | None) -> tuple[str, str]:
    """(context, server) the kubeconfig names, read from the kubeconfig only: nothing is sent to the cluster."""
    live = LiveCluster(context, kubeconfig, never_writes="the kubeconfig only")
    target = await live.connect()
    await live.close()
    return target.context, target.server
