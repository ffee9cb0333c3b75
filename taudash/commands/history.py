"""`taudash history preemptions|waits|summary`: read what the dashboard recorded for a cluster
(engine/history; contract in docs/history.md). Reading never writes: the file is opened read-only, so
it works beside a running dashboard and on a file from a newer taudash."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

from taudash.engine.history import db as hdb
from taudash.engine.history import query
from taudash.engine.text import clean

from ..errors import EXIT_OK, UsageError
from .options import add_source_args

API_VERSION = "taudash/v1"
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def register(sub) -> None:
    h = sub.add_parser("history")
    add_source_args(h, shown=False)
    hs = h.add_subparsers(dest="history_command", metavar="WHAT", required=True)
    p = hs.add_parser("preemptions", help="the preemption log: who was preempted, by whom, where, why, when")
    _common(p)
    p.add_argument("--all-evictions", action="store_true", help="every eviction, not only preemptions")
    p.add_argument("--queue", metavar="CQ", help="only this ClusterQueue (as victim or preemptor)")
    p.set_defaults(func=cmd_preemptions)
    w = hs.add_parser("waits", help="admission wait (creation -> Admitted) percentiles per queue or team")
    _common(w)
    w.add_argument("--by", choices=("cluster_queue", "team", "namespace", "queue", "flavor"), default="cluster_queue")
    w.set_defaults(func=cmd_waits)
    wi = hs.add_parser("whatif", help="what-if predictions beside what happened: flavor, starts now, wait, "
                       "preemptions")
    _common(wi)
    wi.set_defaults(func=cmd_whatif)
    s = hs.add_parser("summary", help="what the history file holds: series, time covered, size")
    _common(s, since=False)
    s.set_defaults(func=cmd_summary)


# Which cluster's history: the global --context/--kubeconfig/--demo (anywhere on the line), or a file key.
HISTORY_USES = frozenset({"read_only", "context", "kubeconfig", "demo"})


def _common(p, since: bool = True) -> None:
    add_source_args(p, HISTORY_USES, helps={"context": "kubeconfig context whose history to read",
                                            "demo": "the history `taudash demo` recorded"})
    g = p.add_argument_group("which history file (instead of a context)")
    g.add_argument("--cluster-key", metavar="KEY", help="the history file's key (see `taudash history summary`)")
    g.add_argument("--db", metavar="FILE", help="a history database file")
    if since:
        p.add_argument("--since", default="24h", metavar="AGE",
                       help="how far back: 30m, 24h, 7d (or an RFC 3339 time); default 24h")
    p.add_argument("-o", "--output", choices=("json", "table"), default="table")


def parse_since(text: str, now: datetime) -> datetime:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text or "")
    if m:
        return datetime.fromtimestamp(now.timestamp() - float(m.group(1)) * UNITS[m.group(2)], UTC)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--since {text!r}: expected an age like 30m, 24h, 7d or an RFC 3339 time") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def resolve(args) -> tuple[str, Path]:
    """(cluster key, database path) from --db | --cluster-key | --demo | --context (default context)."""
    chosen = [x for x in (args.db, args.cluster_key, args.demo or None, args.context) if x]
    if len(chosen) > 1:
        raise UsageError("choose one of --db FILE, --cluster-key KEY, --demo or --context NAME")
    try:
        if args.db:
            return Path(args.db).stem, Path(args.db)
        if args.cluster_key:
            return args.cluster_key, hdb.db_path(args.cluster_key)
        if args.demo:
            return hdb.DEMO_CLUSTER_KEY, hdb.db_path(hdb.DEMO_CLUSTER_KEY)
        key = asyncio.run(_context_key(args.context, args.kubeconfig))
        return key, hdb.db_path(key)
    except hdb.HistoryError as exc:
        raise UsageError(str(exc)) from None


async def _context_key(context: str | None, kubeconfig: str | None) -> str:
    from ..live import cluster_named

    return hdb.cluster_key(*await cluster_named(context, kubeconfig))


def _open(path: Path):
    try:
        return hdb.connect(path, write=False)
    except hdb.HistoryError as exc:
        raise UsageError(str(exc)) from None


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def preemption_item(r: query.EvictionRecord) -> dict:
    preemptor = None
    if r.preemptor_uid or r.preemptor_name:
        preemptor = {"uid": r.preemptor_uid, "namespace": r.preemptor_namespace, "name": r.preemptor_name,
                     "clusterQueue": r.preemptor_cluster_queue}
    return {
        "time": iso(r.at),
        "workload": {"uid": r.uid, "namespace": r.namespace, "name": r.name},
        "clusterQueue": r.cluster_queue,
        "cohort": r.cohort,
        "team": r.team,
        "reason": r.reason,
        "preemptionReason": r.preemption_reason,
        "preemptor": preemptor,
        "message": r.message,
    }


def _dump(doc: dict) -> None:
    json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def _table(headers: list[str], rows: list[list[str]]) -> None:
    # Names and messages come from the cluster: printed inert (control characters made visible).
    cells = [[clean(c) for c in r] for r in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    for r in [headers, *cells]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def cmd_preemptions(args) -> int:
    now = datetime.now(UTC)
    since = parse_since(args.since, now)
    key, path = resolve(args)
    conn = _open(path)
    try:
        records = query.preemption_log(conn, since.timestamp(), all_evictions=args.all_evictions,
                                       cluster_queue=args.queue)
    finally:
        conn.close()
    items = [preemption_item(r) for r in records]
    if args.output == "json":
        _dump({"apiVersion": API_VERSION, "kind": "PreemptionLog", "cluster": key, "since": iso(since.timestamp()),
               "until": iso(now.timestamp()), "allEvictions": bool(args.all_evictions), "items": items})
        return EXIT_OK
    if not items:
        what = "evictions" if args.all_evictions else "preemptions"
        print(f"no {what} recorded since {iso(since.timestamp())}")
        return EXIT_OK
    rows = []
    for i in items:
        p = i["preemptor"]
        by = "-" if p is None else (f"{p['namespace']}/{p['name']}" if p["name"] else f"uid {p['uid']}")
        why = i["reason"] + (f"/{i['preemptionReason']}" if i["preemptionReason"] else "")
        rows.append([i["time"], f"{i['workload']['namespace']}/{i['workload']['name']}", i["clusterQueue"] or "-",
                     i["cohort"] or "-", why, by])
    _table(["TIME", "WORKLOAD", "CLUSTERQUEUE", "COHORT", "WHY", "PREEMPTOR"], rows)
    return EXIT_OK


def cmd_waits(args) -> int:
    now = datetime.now(UTC)
    since = parse_since(args.since, now)
    key, path = resolve(args)
    conn = _open(path)
    try:
        groups = query.wait_percentiles(conn, since.timestamp(), now.timestamp() + 1, by=args.by)
    finally:
        conn.close()
    if args.output == "json":
        _dump({"apiVersion": API_VERSION, "kind": "AdmissionWaits", "cluster": key, "since": iso(since.timestamp()),
               "until": iso(now.timestamp()), "by": args.by,
               "items": [{"group": g or None, "count": v["count"], "p50Seconds": v["p50"], "p95Seconds": v["p95"]}
                         for g, v in groups.items()]})
        return EXIT_OK
    _table([args.by.upper(), "ADMITTED", "P50", "P95"],
           [[g or "-", str(v["count"]), _duration(v["p50"]), _duration(v["p95"])] for g, v in groups.items()])
    return EXIT_OK


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def cmd_whatif(args) -> int:
    """Each kept prediction of the cluster (taudash whatif) beside what the recorded history says happened."""
    from taudash.engine.history import whatif

    now = datetime.now(UTC)
    since = parse_since(args.since, now)
    key, path = resolve(args)
    conn = _open(path) if path.exists() else None
    try:
        items = whatif.outcomes(conn, key, since.timestamp())
    finally:
        if conn is not None:
            conn.close()
    if args.output == "json":
        _dump({"apiVersion": API_VERSION, "kind": "WhatIfOutcomes", "cluster": key, "since": iso(since.timestamp()),
               "historyRecorded": conn is not None, "items": items})
        return EXIT_OK
    _table(list(whatif.OUTCOME_COLUMNS), [whatif.outcome_cells(i) for i in items])
    if not items:
        print("no what-if predictions kept for this cluster in that time", file=sys.stderr)
    return EXIT_OK


def cmd_summary(args) -> int:
    key, path = resolve(args)
    conn = _open(path)
    try:
        s = query.summary(conn, path)
    finally:
        conn.close()
    s = {**s, "from": iso(s["from"]), "to": iso(s["to"])}
    if args.output == "json":
        _dump({"apiVersion": API_VERSION, "kind": "HistorySummary", "cluster": key, "path": str(path), **s})
        return EXIT_OK
    print(f"cluster:   {clean(key)}")
    print(f"file:      {clean(str(path))} ({s.get('fileBytes', 0) / 1048576:.1f} MiB on disk)")
    print(f"schema:    v{s['schemaVersion']} (this taudash knows v{s['schemaKnown']})")
    print(f"covers:    {s['from'] or '-'} .. {s['to'] or '-'}")
    print(f"series:    {s['series']} ({s['rawSamples']} raw samples, {s['rollups']} 5-minute roll-ups)")
    print(f"events:    {s['waits']} admission waits, {s['evictions']} evictions ({s['preemptions']} preemptions), "
          f"{s['findingEvents']} finding events, {s['drainEvents']} drain events")
    return EXIT_OK
