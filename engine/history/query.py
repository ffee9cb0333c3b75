"""Reading the history back: series over a range with a step, admission-wait percentiles, eviction and
preemption counts per bucket, the preemption log, findings history and a summary of the file.

Every function takes an open connection (`db.connect(path, write=False)` for readers beside a running
recorder) and epoch seconds; none reads a clock. Times come back as epoch seconds (float).
"""

from __future__ import annotations

import math
import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .db import KEYFRAME_SECONDS, LATEST, file_bytes, schema_version

# How a series is aggregated into a bucket by default (retention.py explains the choice).
DEFAULT_AGG = {
    "budget": "last",
    "reserved": "avg",
    "used": "avg",
    "borrowed": "avg",
    "headroom": "min",
    "pending": "max",
    "reserving": "max",
    "admitted": "max",
    "inactive": "max",
}
AGGREGATES = ("min", "max", "avg", "last")
# Eviction reasons that are preemptions (Kueue: Evicted=True reason=Preempted).
PREEMPTED = "Preempted"


@dataclass
class _Acc:
    lo: float | None = None
    hi: float | None = None
    total: float = 0.0
    n: int = 0  # values (not NULL) in `total`
    last: float | None = None
    last_ts: float = -math.inf

    def add(self, ts: float, lo: float | None, hi: float | None, mean: float | None, n: int,
            last: float | None) -> None:
        if lo is not None:
            self.lo = lo if self.lo is None else min(self.lo, lo)
        if hi is not None:
            self.hi = hi if self.hi is None else max(self.hi, hi)
        if mean is not None and n:
            self.total += mean * n
            self.n += n
        if ts >= self.last_ts:
            self.last, self.last_ts = last, ts

    def value(self, agg: str) -> float | None:
        if agg == "min":
            return self.lo
        if agg == "max":
            return self.hi
        if agg == "avg":
            return self.total / self.n if self.n else None
        return self.last


def passes_table(conn: sqlite3.Connection) -> str:
    """The sample passes, as a table expression: `sample_passes`, or for a file older than v3 read
    without migrating it (every pass sampled every series then) the distinct sample times."""
    return "sample_passes" if schema_version(conn) >= 3 else "(SELECT DISTINCT ts FROM samples)"


def values_at_passes(conn: sqlite3.Connection, samples_where: str, start: str = ":start", end: str = ":end") -> str:
    """A FROM clause whose rows are the sample passes `p.ts` from `start` to before `end` (SQL expressions),
    each with the value `x.value` a series (`x.series_id`) held then (db.py, KEYFRAME_SECONDS: its latest sample at or
    before the pass in the pass's keyframe bucket), for the samples `samples_where` selects (it must take
    them from the keyframe bucket `start` falls in, e.g. `ts >= :lo`, to before `end`). Each stored sample
    is joined to the passes it held for by a range of the passes' primary key — one range per sample,
    bounded by both the sample's span and the range asked for (bounded by the range alone, SQLite would
    scan every pass of the range for every sample). A file older than v3 wrote every value at every pass:
    each sample row is a pass."""
    if schema_version(conn) < 3:
        return f"(SELECT series_id, ts, value FROM samples WHERE {samples_where}) AS x CROSS JOIN" \
               f" (SELECT DISTINCT ts FROM samples) AS p ON p.ts = x.ts AND p.ts >= {start} AND p.ts < {end}"
    key = KEYFRAME_SECONDS
    return (f"(SELECT series_id, ts, value, coalesce(lead(ts) OVER (PARTITION BY series_id, ts / {key} ORDER BY ts),"
            f" (ts / {key} + 1) * {key}) AS until FROM samples WHERE {samples_where}) AS x"
            f" CROSS JOIN sample_passes AS p ON p.ts >= max(x.ts, {start}) AND p.ts < min(x.until, {end})")


def buckets(start: float, end: float, step: float) -> list[float]:
    if step <= 0 or end <= start:
        raise ValueError("a range needs start < end and a positive step")
    return [start + i * step for i in range(math.ceil((end - start) / step))]


def series(
    conn: sqlite3.Connection,
    kind: str,
    name: str,
    metric: str,
    start: float,
    end: float,
    step: float,
    *,
    flavor: str = "",
    resource: str = "",
    agg: str | None = None,
) -> list[tuple[float, float | None]]:
    """One series over [start, end) in buckets of `step` seconds: (bucket start, value), None where
    nothing was recorded (never a made-up zero). Raw samples and 5-minute roll-ups are merged."""
    agg = agg or DEFAULT_AGG.get(metric, "last")
    if agg not in AGGREGATES:
        raise ValueError(f"unknown aggregate {agg!r} (one of {', '.join(AGGREGATES)})")
    starts = buckets(start, end, step)
    accs = [_Acc() for _ in starts]
    row = conn.execute(
        "SELECT id FROM series WHERE kind=? AND name=? AND flavor=? AND resource=? AND metric=?",
        (kind, name, flavor, resource, metric),
    ).fetchone()
    if row is not None:
        # Aggregated per bucket inside SQLite (a day of raw samples is 8,640 passes per series): one pass
        # for min/max/mean/count and one for the value at each bucket's newest time (a bare column
        # beside a single max() comes from that row). The bucket is floor((ts - start) / step). Raw
        # values are the series' value at each sample pass (db.py, KEYFRAME_SECONDS: its latest sample
        # at or before the pass in the same keyframe bucket).
        sid = row[0]
        key = KEYFRAME_SECONDS
        args = {"sid": sid, "start": start, "end": end, "step": step, "lo": int(start) // key * key}
        passes = values_at_passes(conn, "series_id = :sid AND ts >= :lo AND ts < :end")
        raw = "CAST((p.ts - :start) / :step AS INTEGER)"
        bucket = "CAST((ts - :start) / :step AS INTEGER)"
        where = "series_id = :sid AND ts >= :start AND ts < :end"
        for stats_sql, last_sql in (
            (f"SELECT {raw} AS b, min(x.value), max(x.value), avg(x.value), count(x.value) FROM {passes} GROUP BY b",
             f"SELECT {raw} AS b, max(p.ts), x.value FROM {passes} GROUP BY b"),
            (f"SELECT {bucket} AS b, min(min), max(max), sum(avg * n) / nullif(sum(CASE WHEN avg IS NULL THEN 0"
             f" ELSE n END), 0), sum(CASE WHEN avg IS NULL THEN 0 ELSE n END) FROM rollups WHERE {where} GROUP BY b",
             f"SELECT {bucket} AS b, max(ts), last FROM rollups WHERE {where} GROUP BY b"),
        ):
            lasts = {b: (ts, value) for b, ts, value in conn.execute(last_sql, args)}
            for b, lo, hi, mean, n in conn.execute(stats_sql, args):
                ts, last = lasts[b]
                accs[min(max(b, 0), len(accs) - 1)].add(ts, lo, hi, mean, n if mean is not None else 0, last)
    return [(b, a.value(agg) if a.last_ts > -math.inf else None) for b, a in zip(starts, accs, strict=True)]


def flavor_usage(conn: sqlite3.Connection, flavor: str, resource: str, start: float, end: float, step: float,
                 metrics: Iterable[str] = ("budget", "reserved", "used", "headroom")) -> dict[str, list[Any]]:
    """A pool flavor's reserved vs budget (and used, headroom) for one resource."""
    return {m: series(conn, "flavor", flavor, m, start, end, step, flavor=flavor, resource=resource) for m in metrics}


def queue_counts(conn: sqlite3.Connection, cluster_queue: str, start: float, end: float, step: float,
                 metrics: Iterable[str] = ("pending", "reserving", "admitted", "inactive")) -> dict[str, list[Any]]:
    return {m: series(conn, "queue", cluster_queue, m, start, end, step) for m in metrics}


def series_names(conn: sqlite3.Connection, kind: str | None = None) -> list[dict[str, Any]]:
    sql = "SELECT kind, name, flavor, resource, metric FROM series"
    rows = conn.execute(sql + (" WHERE kind=?" if kind else "") + " ORDER BY 1,2,3,4,5", (kind,) if kind else ())
    return [dict(zip(("kind", "name", "flavor", "resource", "metric"), r, strict=True)) for r in rows]


# --- admission waits -----------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float | None:
    """Linear interpolation between the closest ranks (numpy's default); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * p / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def wait_percentiles(conn: sqlite3.Connection, start: float, end: float, by: str = "cluster_queue",
                     percentiles: Iterable[float] = (50, 95)) -> dict[str, dict[str, Any]]:
    """Creation -> Admitted seconds of the Workloads admitted in [start, end), grouped by ClusterQueue,
    team, namespace, queue or flavor: {group: {"count": n, "p50": s, "p95": s}} ("" = unknown group)."""
    if by not in ("cluster_queue", "team", "namespace", "queue", "flavor"):
        raise ValueError(f"cannot group waits by {by!r}")
    groups: dict[str, list[float]] = defaultdict(list)
    rows = conn.execute(
        f"SELECT {by}, admitted - created FROM waits WHERE admitted >= ? AND admitted < ? AND created IS NOT NULL",
        (start, end),
    )
    for group, wait in rows:
        groups[group or ""].append(max(0.0, wait))
    out = {}
    for group, waits in sorted(groups.items()):
        entry: dict[str, Any] = {"count": len(waits)}
        for p in percentiles:
            entry[f"p{p:g}"] = percentile(waits, p)
        out[group] = entry
    return out


# --- evictions and preemptions -------------------------------------------------------------------------


def eviction_counts(conn: sqlite3.Connection, start: float, end: float, step: float,
                    cluster_queue: str | None = None) -> dict[str, list[tuple[float, int]]]:
    """Per bucket: preemptions (reason Preempted) and all evictions (any reason)."""
    starts = buckets(start, end, step)
    pre, ev = [0] * len(starts), [0] * len(starts)
    sql = "SELECT at, reason FROM evictions WHERE at >= ? AND at < ?"
    args: list[Any] = [start, end]
    if cluster_queue is not None:
        sql += " AND cluster_queue = ?"
        args.append(cluster_queue)
    for at, reason in conn.execute(sql, args):
        i = int((at - start) // step)
        ev[i] += 1
        if reason == PREEMPTED:
            pre[i] += 1
    return {"preemptions": list(zip(starts, pre, strict=True)), "evictions": list(zip(starts, ev, strict=True))}


def eviction_totals(conn: sqlite3.Connection, now: float,
                    windows: dict[str, float] | None = None) -> dict[str, dict[str, int]]:
    """Preemptions and evictions in the last hour, day and week (or the given windows) before `now`."""
    windows = windows or {"1h": 3600.0, "24h": 86400.0, "7d": 7 * 86400.0}
    out = {}
    for label, seconds in windows.items():
        n, pre = conn.execute(
            "SELECT count(*), coalesce(sum(reason = ?), 0) FROM evictions WHERE at >= ? AND at <= ?",
            (PREEMPTED, now - seconds, now),
        ).fetchone()
        out[label] = {"preemptions": pre, "evictions": n}
    return out


@dataclass(frozen=True)
class EvictionRecord:
    at: float
    uid: str
    namespace: str
    name: str
    cluster_queue: str | None
    cohort: str | None
    team: str | None
    reason: str
    preemption_reason: str | None
    preemptor_uid: str | None
    preemptor_namespace: str | None
    preemptor_name: str | None
    preemptor_cluster_queue: str | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_EVICTION_COLUMNS = ("at", "uid", "namespace", "name", "cluster_queue", "cohort", "team", "reason",
                     "preemption_reason", "preemptor_uid", "preemptor_namespace", "preemptor_name",
                     "preemptor_cluster_queue", "message")


def preemption_log(conn: sqlite3.Connection, since: float, until: float | None = None, *,
                   all_evictions: bool = False, cluster_queue: str | None = None,
                   limit: int | None = None) -> list[EvictionRecord]:
    """Who was preempted (or, with all_evictions, evicted for any reason), by whom, where, why and
    when, newest first."""
    sql = f"SELECT {', '.join(_EVICTION_COLUMNS)} FROM evictions WHERE at >= ?"
    args: list[Any] = [since]
    if until is not None:
        sql += " AND at < ?"
        args.append(until)
    if not all_evictions:
        sql += " AND reason = ?"
        args.append(PREEMPTED)
    if cluster_queue is not None:
        sql += " AND (cluster_queue = ? OR preemptor_cluster_queue = ?)"
        args += [cluster_queue, cluster_queue]
    sql += " ORDER BY at DESC, namespace, name"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    return [EvictionRecord(*row) for row in conn.execute(sql, args)]


# --- findings and drains -------------------------------------------------------------------------------


def findings_history(conn: sqlite3.Connection, since: float, until: float | None = None,
                     severity: str | None = None) -> list[dict[str, Any]]:
    """Findings opened and closed, oldest first."""
    sql = "SELECT at, event, rule, kind, namespace, name, severity, message FROM finding_events WHERE at >= ?"
    args: list[Any] = [since]
    if until is not None:
        sql += " AND at < ?"
        args.append(until)
    if severity is not None:
        sql += " AND severity = ?"
        args.append(severity)
    keys = ("at", "event", "rule", "kind", "namespace", "name", "severity", "message")
    return [dict(zip(keys, row, strict=True)) for row in conn.execute(sql + " ORDER BY at, id", args)]


def open_findings(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    keys = ("rule", "kind", "namespace", "name", "severity", "message", "since")
    rows = conn.execute(f"SELECT {', '.join(keys)} FROM open_findings ORDER BY since, rule, kind, namespace, name")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def drain_history(conn: sqlite3.Connection, since: float) -> list[dict[str, Any]]:
    keys = ("at", "event", "workspace", "state", "previous", "mode", "old_namespace", "new_namespace")
    rows = conn.execute(f"SELECT {', '.join(keys)} FROM drain_events WHERE at >= ? ORDER BY at, id", (since,))
    return [dict(zip(keys, row, strict=True)) for row in rows]


# --- the file ------------------------------------------------------------------------------------------


def summary(conn: sqlite3.Connection, path: Path | str | None = None) -> dict[str, Any]:
    def one(sql: str) -> Any:
        return conn.execute(sql).fetchone()

    raw_n, raw_lo, raw_hi = one("SELECT count(*), min(ts), max(ts) FROM samples")
    passes = one(f"SELECT count(*) FROM {passes_table(conn)}")[0]
    roll_n, roll_lo, roll_hi = one("SELECT count(*), min(ts), max(ts) FROM rollups")
    stamps = [s for s in (raw_lo, raw_hi, roll_lo, roll_hi) if s is not None]
    out = {
        "schemaVersion": schema_version(conn),
        "schemaKnown": LATEST,
        "series": one("SELECT count(*) FROM series")[0],
        "rawSamples": raw_n,
        "samplePasses": passes,
        "rollups": roll_n,
        "from": min(stamps) if stamps else None,
        "to": max(stamps) if stamps else None,
        "waits": one("SELECT count(*) FROM waits")[0],
        "evictions": one("SELECT count(*) FROM evictions")[0],
        "preemptions": one(f"SELECT count(*) FROM evictions WHERE reason = '{PREEMPTED}'")[0],
        "findingEvents": one("SELECT count(*) FROM finding_events")[0],
        "drainEvents": one("SELECT count(*) FROM drain_events")[0],
        "dataBytes": file_bytes(conn),
    }
    if path is not None:
        p = Path(path)
        out["fileBytes"] = sum(q.stat().st_size for q in (p, Path(f"{p}-wal")) if q.exists())
    return out
