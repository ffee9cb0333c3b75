"""`taudash why NS/NAME`: why is this Workload waiting? (contract in docs/queue-insight.md)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from taudash.engine.model import LocalQueue, Workload
from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.queue_order import MAX_LIMIT, QueuePositions, is_pending, parse_time
from taudash.engine.rules.why import why_waiting_report, workloads_for
from taudash.engine.store import Store
from taudash.engine.text import clean
from taudash.engine.wait_words import plain, report_lines

from ..errors import EXIT_BAD_INPUT, EXIT_OK, UsageError
from ..live import synced_cluster
from ..loading import load_from_args, report_issues
from .options import add_source_args, rule_config

AHEAD_SHOWN = 20


def register(sub) -> None:
    p = sub.add_parser(
        "why",
        description="Prints a WorkloadWaitReport (docs/queue-insight.md). On a live cluster the positions come "
        "from Kueue's visibility API when it is served (positionSource: visibility), else they are estimated "
        "from the objects (estimated); forbidden: unknown (null, never 0). Fits are estimates from the objects; "
        "unreadable kinds give an Unknown reason, never a fit. "
        "Exit 0 with a report, 2 when the Workload is not found or the snapshot had unreadable objects.",
    )
    p.add_argument("workload", metavar="NS/NAME", help="the Workload (kueue.x-k8s.io), namespace/name")
    add_source_args(p)
    p.add_argument("-o", "--output", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def run(args) -> int:
    namespace, sep, name = args.workload.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise UsageError(f"{args.workload!r}: expected NAMESPACE/NAME")
    if getattr(args, "context", None) or not (getattr(args, "snapshot", None) or getattr(args, "demo", False)):
        import asyncio

        # A live cluster: Kueue's visibility API is asked for the ClusterQueue's positions.
        report, unreadable, candidates, issues = asyncio.run(_live_report(args, namespace, name))
    else:
        loaded = load_from_args(args)
        issues = loaded.issues
        # A snapshot is judged at its capture time (backoffs, ages).
        now = parse_time(loaded.source.observed_at) or datetime.now(UTC)
        ctx = RuleContext(store=loaded.store, now=now, config=rule_config(args))
        name, candidates = _resolve(ctx, namespace, name)
        report = why_waiting_report(ctx, namespace, name)
        unreadable = ctx.unreadable("Workload")
    if report is None:
        why = f" (workloads unreadable: {unreadable[0][1]})" if unreadable else ""
        hint = ""
        if candidates:  # a Job's, RayJob's or Pod's name: the Workloads it owns
            hint = "; it names " + ", ".join(f"{owner} → Workload {namespace}/{wl}" for owner, wl in candidates) + \
                ": ask `taudash why` for one of those"
        raise UsageError(clean(f"Workload {namespace}/{name} not found{why}{hint}"))
    data = report.to_contract()
    if issues is not None and data["queue"]["positionSource"] == "estimated" and not data["queue"]["positionNote"]:
        data["queue"]["positionNote"] = "a snapshot: no visibility API to ask"
    if args.output == "json":
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        _print_table(data)
    report_issues(issues or [])
    return EXIT_BAD_INPUT if issues else EXIT_OK


async def _live_report(args, namespace: str, name: str):
    """(report, unreadable Workloads, None) from a live cluster: synced once, then the Workload's
    ClusterQueue's pending list from the visibility API (KubeSource.pending_workloads: served →
    Kueue's positions; not served → the estimate, labelled; forbidden → unknown)."""
    _check_source_flags(args)
    async with synced_cluster(getattr(args, "context", None), getattr(args, "kubeconfig", None),
                              getattr(args, "sync_timeout", 30.0)) as live:
        ctx = RuleContext(store=live.store, now=datetime.now(UTC), config=rule_config(args))
        name, candidates = _resolve(ctx, namespace, name)
        positions = await _positions(live.store, live.source, namespace, name)
        return (why_waiting_report(ctx, namespace, name, positions=positions), ctx.unreadable("Workload"), candidates,
                None)


async def _positions(store: Store, source, namespace: str, name: str) -> QueuePositions | None:
    wl = store.get(Workload, name, namespace)
    if wl is None or not is_pending(wl) or not wl.spec.queue_name:
        return None  # not queued: no position to ask for
    lq = store.get(LocalQueue, wl.spec.queue_name, namespace)
    if lq is None or not lq.spec.cluster_queue:
        return None
    # The ClusterQueue's whole list: the Workloads ahead come from other LocalQueues too.
    return await source.pending_workloads(cq=lq.spec.cluster_queue, limit=MAX_LIMIT)


def _check_source_flags(args) -> None:
    """The source flags' rules (one of --snapshot/--context/--demo; --kubeconfig only for a live cluster)."""
    if getattr(args, "snapshot", None) or getattr(args, "demo", False):
        load_from_args(args)  # raises UsageError for the combination


def _resolve(ctx: RuleContext, namespace: str, name: str) -> tuple[str, list[tuple[str, str]]]:
    """The Workload a name means: itself when it is one; the one Workload a Job, RayJob or Pod of that name
    owns (said on stderr); else the name unchanged, with the candidates when several match."""
    if ctx.store.get(Workload, name, namespace) is not None:
        return name, []
    found = workloads_for(ctx, namespace, name)
    if len(found) == 1:
        owner, wl = found[0]
        print(clean(f"taudash: {owner} → Workload {namespace}/{wl}"), file=sys.stderr)
        return wl, []
    return name, found


def _print_table(d: dict) -> None:
    # Every string here may come from the cluster: report_lines prints it inert.
    print(plain(report_lines(d, ahead_shown=AHEAD_SHOWN)))
