"""Resolve `--snapshot F | --context C | --demo` into a loaded store (one-shot commands) and its ClusterView."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from taudash.engine.incremental import derive
from taudash.engine.rules.base import RuleConfig
from taudash.engine.sources.snapshot import LoadIssue, SnapshotError, load_snapshot
from taudash.engine.store import Store
from taudash.engine.view import ClusterView, SourceInfo

from .data import demo_snapshot
from .errors import UsageError

DEMO_SNAPSHOT = demo_snapshot()


@dataclass
class Loaded:
    store: Store
    source: SourceInfo
    issues: list[LoadIssue] = field(default_factory=list)


def demo_snapshot_path() -> Path:
    if not DEMO_SNAPSHOT.exists():
        raise UsageError(f"{DEMO_SNAPSHOT}: the demo snapshot is missing from this installation")
    return DEMO_SNAPSHOT


def load_from_args(args) -> Loaded:
    snapshot = getattr(args, "snapshot", None)
    context = getattr(args, "context", None)
    demo = getattr(args, "demo", False)
    chosen = [x for x in (snapshot, context, demo or None) if x]
    if len(chosen) > 1:
        raise UsageError("choose one source: --snapshot FILE, --context NAME or --demo")
    if (snapshot or demo) and getattr(args, "kubeconfig", None):
        raise UsageError(f"--kubeconfig applies to a live cluster, not to {'--snapshot' if snapshot else '--demo'}")
    if context or not (snapshot or demo):
        return load_live(context, getattr(args, "kubeconfig", None), getattr(args, "sync_timeout", 30.0),
                         getattr(args, "source_type", "kube"))
    path = Path(snapshot) if snapshot else demo_snapshot_path()
    try:
        result = load_snapshot(path)
    except SnapshotError as exc:
        raise UsageError(str(exc)) from None
    if result.issues and not result.objects:
        # Nothing loadable: no status of an empty cluster, just why (one bad object among good
        # ones is reported after the output instead, exit 2).
        more = f" (and {len(result.issues) - 1} more problem(s))" if len(result.issues) > 1 else ""
        raise UsageError(f"{result.issues[0]}{more}; nothing in {path} could be loaded")
    return Loaded(
        store=result.store,
        source=SourceInfo(
            type="snapshot",
            context=result.context,
            path=str(path),
            observed_at=result.captured_at,
        ),
        issues=result.issues,
    )


def load_live(context: str | None, kubeconfig: str | None, sync_timeout: float = 30.0,
              source_type: str = "kube") -> Loaded:
    """Connect, sync every kind once (bounded), disconnect: for one-shot commands."""
    import asyncio

    return asyncio.run(load_live_async(context, kubeconfig, sync_timeout, source_type))


async def load_live_async(context: str | None, kubeconfig: str | None, sync_timeout: float = 30.0,
                          source_type: str = "kube") -> Loaded:
    """load_live inside a running loop (the fleet loads several clusters concurrently)."""
    from .live import synced_cluster

    async with synced_cluster(context, kubeconfig, sync_timeout) as live:
        return Loaded(store=live.store,
                      source=live.source_info(source_type, observed_at=datetime.now(UTC).isoformat(timespec="seconds")))


def report_issues(issues: list[LoadIssue]) -> None:
    for issue in issues:
        print(f"taudash: {issue}", file=sys.stderr)


def view_of(loaded: Loaded, config: RuleConfig, now: datetime | None = None) -> ClusterView:
    return derive(loaded.store, now or datetime.now(UTC), config, loaded.source)
