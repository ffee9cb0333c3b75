"""`taudash export`: capture a cluster (or re-write a snapshot) as a ClusterSnapshot file."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import yaml

from taudash.engine.sources.export import export_snapshot, snapshot_document

from ..errors import UsageError
from ..loading import load_from_args, report_issues


def register(sub, add_source_args) -> None:
    e = sub.add_parser(
        "export",
        help="write a ClusterSnapshot file (objects + access states; never Secrets; mode 0600)",
    )
    # A snapshot holds the raw objects: no rules run, so --system-namespace/--pvc do not apply.
    add_source_args(e, frozenset({"read_only", "context", "kubeconfig", "snapshot", "demo"}))
    e.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the snapshot ('-': stdout)")
    e.set_defaults(func=run)


def run(args) -> int:
    loaded = load_from_args(args)
    captured = loaded.source.observed_at or datetime.now(UTC).isoformat(timespec="seconds")
    if args.output == "-":  # the document on stdout, every status line on stderr
        doc = snapshot_document(loaded.store, loaded.source.context, captured)
        yaml.safe_dump(doc, sys.stdout, sort_keys=False, allow_unicode=True)
        n, where = len(doc["objects"]), "stdout"
    else:
        try:
            n, where = export_snapshot(loaded.store, args.output, loaded.source.context, captured), args.output
        except OSError as exc:
            raise UsageError(f"{args.output}: cannot write: {exc.strerror}") from None
    report_issues(loaded.issues)
    print(f"wrote {n} objects to {where}", file=sys.stderr)
    return 2 if loaded.issues else 0
