"""Resolve `--snapshot F | --context C | --demo` into a ClusterView."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from engine.rules.base import RuleConfig
from engine.sources.snapshot import LoadIssue, SnapshotError, load_snapshot
from engine.store import Store
from engine.view import ClusterView, SourceInfo, derive

from .errors import UsageError

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_SNAPSHOT = REPO_ROOT / "snapshots" / "demo.yaml"


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
    if context:
        raise UsageError(f"--context {context}: the live cluster source is not built yet; use --snapshot or --demo")
    path = Path(snapshot) if snapshot else demo_snapshot_path()
    try:
        result = load_snapshot(path)
    except SnapshotError as exc:
        raise UsageError(str(exc)) from None
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


def report_issues(issues: list[LoadIssue]) -> None:
    for issue in issues:
        print(f"taudash: {issue}", file=sys.stderr)


def view_of(loaded: Loaded, config: RuleConfig, now: datetime | None = None) -> ClusterView:
    return derive(loaded.store, now or datetime.now(UTC), config, loaded.source)
