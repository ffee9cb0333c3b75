"""`taudash export`: capture a cluster (or re-write a snapshot) as a ClusterSnapshot file.

From a live cluster the kinds taudash holds only slim (Workloads, Jobs, Nodes, …) are re-read from
the API at export time, page by page, so the file holds the objects as served
(engine/sources/export.py); from a snapshot the objects are written as they were read.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

from taudash.engine.sources.export import export_snapshot, export_to, kube_relist, relist_kinds, write_envelope

from ..errors import UsageError
from ..loading import load_from_args, report_issues
from .options import add_source_args


def register(sub) -> None:
    e = sub.add_parser("export")
    # A snapshot holds the raw objects: no rules run, so --system-namespace/--pvc do not apply.
    add_source_args(e, frozenset({"read_only", "context", "kubeconfig", "snapshot", "demo"}))
    e.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the snapshot ('-': stdout)")
    e.set_defaults(func=run)


def run(args) -> int:
    snapshot, demo = getattr(args, "snapshot", None), getattr(args, "demo", False)
    if not (snapshot or demo):
        return _run_live(args)
    loaded = load_from_args(args)
    captured = loaded.source.observed_at or _now()
    try:
        n, where = _write(args.output, lambda out: write_envelope(loaded.store, out, loaded.source.context, captured),
                          lambda: export_snapshot(loaded.store, args.output, loaded.source.context, captured))
    finally:
        report_issues(loaded.issues)
    print(f"wrote {n} objects to {where}", file=sys.stderr)
    return 2 if loaded.issues else 0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _write(output: str, to_stream, to_file) -> tuple[int, str]:
    if output == "-":  # the document on stdout, every status line on stderr
        return to_stream(sys.stdout), "stdout"
    try:
        return to_file(), output
    except OSError as exc:
        raise UsageError(f"{output}: cannot write: {exc.strerror}") from None


def _run_live(args) -> int:
    """Connect, sync every kind once, re-read the slim kinds as served, write, disconnect."""
    from ..live import synced_cluster

    async def go() -> tuple[int, str]:
        async with synced_cluster(getattr(args, "context", None), getattr(args, "kubeconfig", None),
                                  getattr(args, "sync_timeout", 30.0)) as live:
            store, source, target = live.store, live.source, live.target
            captured = _now()
            if args.output == "-":
                spooled, failed = await relist_kinds(store, kube_relist(source))
                try:
                    return write_envelope(store, sys.stdout, target.context, captured, spooled, failed), "stdout"
                finally:
                    for spool, _ in spooled.values():
                        spool.close()
            try:
                return await export_to(store, args.output, target.context, captured, kube_relist(source)), args.output
            except OSError as exc:
                raise UsageError(f"{args.output}: cannot write: {exc.strerror}") from None

    n, where = asyncio.run(go())
    print(f"wrote {n} objects to {where}", file=sys.stderr)
    return 0
