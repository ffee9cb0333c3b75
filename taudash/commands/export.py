"""`taudash export`: capture a cluster (or re-write a snapshot) as a ClusterSnapshot file."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

from taudash.engine.sources.export import export_snapshot

from ..errors import UsageError
from ..loading import load_from_args, report_issues


def register(sub, add_source_args) -> None:
    e = sub.add_parser(
        "export",
        help="write a ClusterSnapshot file (objects + access states; never Secrets; mode 0600)",
    )
    add_source_args(e)
    e.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the snapshot")
    e.set_defaults(func=run)


def run(args) -> int:
    loaded = load_from_args(args)
    captured = loaded.source.observed_at or datetime.now(UTC).isoformat(timespec="seconds")
    try:
        n = export_snapshot(loaded.store, args.output, loaded.source.context, captured)
    except OSError as exc:
        raise UsageError(f"{args.output}: cannot write: {exc.strerror}") from None
    report_issues(loaded.issues)
    print(f"wrote {n} objects to {args.output}", file=sys.stderr)
    return 2 if loaded.issues else 0
