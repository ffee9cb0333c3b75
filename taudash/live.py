"""A live connection for commands that act: store kept in sync + the guarded write path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from taudash.engine.actions import Actions, AuditLog
from taudash.engine.paths import state_dir
from taudash.engine.sources.client import ClusterTarget, ConfigError, connect
from taudash.engine.sources.client import Unreachable as SourceUnreachable
from taudash.engine.sources.kube import KubeSource
from taudash.engine.store import Store

from .config import ReadOnly, resolve_read_only
from .errors import Unreachable, UsageError


@dataclass
class LiveCluster:
    context: str | None
    kubeconfig: str | None
    # The caller's request (the flag); env and config file are added once the context is known.
    read_only: bool | ReadOnly = False
    sync_timeout: float = 30.0
    lock: Any = None

    async def __aenter__(self) -> LiveCluster:
        try:
            self.target: ClusterTarget = await connect(self.context, self.kubeconfig)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        try:  # read-only for this context, from every source (flag, env, config file)
            self.read_only_state: ReadOnly = resolve_read_only(self.read_only, self.target.context)
        except UsageError:
            await self.target.close()
            raise
        self.store = Store()
        self.source = KubeSource(self.store, self.target, lock=self.lock)
        try:
            await self.source.start()
        except SourceUnreachable as exc:
            await self.target.close()
            raise Unreachable(str(exc)) from None
        await self.source.wait_synced(self.sync_timeout)
        self.identity = await self.source.identity()
        if self.read_only_state:
            self.actions = Actions.read_only(self.read_only_state.why, self.target.context)
        else:
            self.actions = Actions.live(self.target.api_client, self.target.user or "unknown", self.target.context,
                                        AuditLog(state_dir() / "audit.log"), versions=self.source.version_of)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.source.stop()
        await self.target.close()
