"""`taudash why NS/NAME`: why is this Workload waiting? (issue 19; contract in docs/queue-insight.md)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.queue_order import parse_time
from taudash.engine.rules.why import why_waiting_report
from taudash.engine.text import clean

from ..cli import rule_config
from ..errors import EXIT_BAD_INPUT, EXIT_OK, UsageError
from ..loading import load_from_args, report_issues

AHEAD_SHOWN = 20


def register(sub, add_source_args) -> None:
    p = sub.add_parser(
        "why",
        help="why is a Workload waiting: ranked reasons, quota per flavor, the Workloads ahead, preemption",
        description="Prints a WorkloadWaitReport (docs/queue-insight.md). Positions and fits are estimates "
        "from the objects (positionSource: estimated); unreadable kinds give an Unknown reason, never a fit. "
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
    loaded = load_from_args(args)
    # A snapshot is judged at its capture time (backoffs, ages), a live cluster now.
    now = parse_time(loaded.source.observed_at) if loaded.source.type == "snapshot" else None
    ctx = RuleContext(store=loaded.store, now=now or datetime.now(UTC), config=rule_config(args))
    report = why_waiting_report(ctx, namespace, name)
    if report is None:
        unreadable = ctx.unreadable("Workload")
        why = f" (workloads unreadable: {unreadable[0][1]})" if unreadable else ""
        raise UsageError(clean(f"Workload {namespace}/{name} not found{why}"))
    data = report.to_contract()
    if args.output == "json":
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        _print_table(data)
    report_issues(loaded.issues)
    return EXIT_BAD_INPUT if loaded.issues else EXIT_OK


def _q(v) -> str:
    return "unknown" if v is None else str(v)


def _print_table(d: dict) -> None:
    # Every string here may come from the cluster: printed inert.
    w, q = d["workload"], d["queue"]
    owner = f"{w['owner']['kind']}/{w['owner']['name']}" if w["owner"] else "-"
    print(clean(f"Workload {w['namespace']}/{w['name']}  owner {owner}  priority {w['priority']}  status {w['status']}"
                + ("" if w["active"] else "  INACTIVE")))
    pos = "-" if q["positionInClusterQueue"] is None else f"{q['positionInClusterQueue']} in ClusterQueue, " \
        f"{q['positionInLocalQueue']} in LocalQueue ({q['positionSource']})"
    print(clean(f"queue    {q['localQueue'] or '-'} -> {q['clusterQueue'] or '-'}  cohort {q['cohort'] or '-'}  "
                f"{q['queueingStrategy'] or ''}  position {pos}"))
    print("reasons:")
    for r in d["reasons"]:
        print(clean(f"  {r['rank']:>2} {r['severity']:<8} {r['code']:<22} {r['message']}"))
    short = [f for f in d["flavors"] if f["mode"] != "NotMatching"]
    if short:
        print("quota (flavor/resource: requested / available now / max ever; nominal, borrowingLimit, cohort lendable):")
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
