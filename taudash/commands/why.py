"""`taudash why NS/NAME`: why is this Workload waiting? (contract in docs/queue-insight.md)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from taudash.engine.model import LocalQueue, Workload
from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.queue_order import MAX_LIMIT, QueuePositions, is_pending, parse_time
from taudash.engine.rules.why import why_waiting_report
from taudash.engine.store import Store
from taudash.engine.text import clean

from ..errors import EXIT_BAD_INPUT, EXIT_OK, UsageError
from ..live import synced_cluster
from ..loading import load_from_args, report_issues
from .options import add_source_args, rule_config

AHEAD_SHOWN = 20
SOURCE_WORDS = {"visibility": "from Kueue's visibility API", "estimated": "estimated"}


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
        report, unreadable, issues = asyncio.run(_live_report(args, namespace, name))
    else:
        loaded = load_from_args(args)
        issues = loaded.issues
        # A snapshot is judged at its capture time (backoffs, ages).
        now = parse_time(loaded.source.observed_at) or datetime.now(UTC)
        ctx = RuleContext(store=loaded.store, now=now, config=rule_config(args))
        report = why_waiting_report(ctx, namespace, name)
        unreadable = ctx.unreadable("Workload")
    if report is None:
        why = f" (workloads unreadable: {unreadable[0][1]})" if unreadable else ""
        raise UsageError(clean(f"Workload {namespace}/{name} not found{why}"))
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
        positions = await _positions(live.store, live.source, namespace, name)
        return why_waiting_report(ctx, namespace, name, positions=positions), ctx.unreadable("Workload"), None


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


def _q(v) -> str:
    return "unknown" if v is None else str(v)


def _print_table(d: dict) -> None:
    # Every string here may come from the cluster: printed inert.
    w, q = d["workload"], d["queue"]
    owner = f"{w['owner']['kind']}/{w['owner']['name']}" if w["owner"] else "-"
    print(clean(f"Workload {w['namespace']}/{w['name']}  owner {owner}  priority {w['priority']}  status {w['status']}"
                + ("" if w["active"] else "  INACTIVE")))
    if q["positionInClusterQueue"] is not None:
        pos = f"{q['positionInClusterQueue']} in ClusterQueue, {q['positionInLocalQueue']} in LocalQueue " \
            f"({SOURCE_WORDS.get(q['positionSource'], q['positionSource'])})"
    elif q["positionSource"] == "unknown" and w["status"] == "pending":
        pos = f"unknown ({q['positionNote'] or 'not readable'})"
    else:
        pos = "-"
    print(clean(f"queue    {q['localQueue'] or '-'} -> {q['clusterQueue'] or '-'}  cohort {q['cohort'] or '-'}  "
                f"{q['queueingStrategy'] or ''}  position {pos}"))
    print("reasons:")
    for r in d["reasons"]:
        print(clean(f"  {r['rank']:>2} {r['severity']:<8} {r['code']:<22} {r['message']}"))
    short = [f for f in d["flavors"] if f["mode"] != "NotMatching"]
    if short:
        print("quota (flavor/resource: requested / available now / max ever; nominal, borrowingLimit, cohort "
              "lendable):")
        for f in short:
            print(clean(f"  {f['flavor']}/{f['resource']}: {f['requested']} / {_q(f['available'])} / "
                        f"{_q(f['potentialAvailable'])}; nominal {f['nominal']}, borrowingLimit "
                        f"{f['borrowingLimit'] or 'none'}, cohort {_q(f['cohortLendable'])}  [{f['mode']}]"))
            for o in f["lendingLimitOfOthers"]:
                print(clean(f"      {o['clusterQueue']} withholds {o['withheld']} (lendingLimit {o['lendingLimit']})"))
            if f["mode"] != "Fit":
                for h in f["reservedBy"]:
                    print(clean(f"      held by {h['namespace']}/{h['name']} in {h['clusterQueue']}: {h['amount']} "
                                f"(priority {h['priority']})"))
    if d["ahead"]:
        print(f"ahead ({len(d['ahead'])}):")
        for a in d["ahead"][:AHEAD_SHOWN]:
            owner = f"{a['owner']['kind']}/{a['owner']['name']}" if a["owner"] else "-"
            print(clean(f"  {a['position']:>3} {a['namespace']}/{a['name']}  {owner}  priority {a['priority']}"))
        if len(d["ahead"]) > AHEAD_SHOWN:
            print(f"  ... {len(d['ahead']) - AHEAD_SHOWN} more (-o json lists them all)")
    p = d["preemption"]
    print(clean(f"preemption: {p['message']}"))
    for c in p["candidates"]:
        print(clean(f"  victim {c['namespace']}/{c['name']} in {c['clusterQueue']} (priority {c['priority']})"))
