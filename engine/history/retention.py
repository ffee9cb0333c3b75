"""Retention: raw samples for a day, 5-minute roll-ups for thirty days, events for thirty days, and a
cap on the file's size. Every call does a bounded amount of work (one chunk of each step) so a
recording tick never stalls on a backlog; it says whether work remains.

A roll-up keeps min, max, avg and last of its 5-minute bucket (and the sample count), so each series
can be read back with the aggregate that suits it (query.py `DEFAULT_AGG`): capacity (budget) as its
last value, usage (reserved, used, borrowed) as the average, headroom as the minimum (the tightest
moment), Workload counts (pending, reserving, admitted, inactive) as the maximum (the worst backlog).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from .db import DEFAULT_MAX_BYTES, KEYFRAME_SECONDS, file_bytes

DAY = 86400.0
EVENT_TABLES = (("waits", "admitted"), ("evictions", "at"), ("finding_events", "at"), ("drain_events", "at"))


@dataclass(frozen=True)
class Retention:
    raw_seconds: float = DAY
    rollup_step: int = 300
    rollup_seconds: float = 30 * DAY
    event_seconds: float = 30 * DAY
    max_bytes: int = DEFAULT_MAX_BYTES
    batch_rows: int = 5000  # rows deleted per table per call
    rollup_chunk: int = 3600  # seconds of raw samples rolled up per call
    vacuum_pages: int = 2048  # pages handed back to the file system per call

    def __post_init__(self) -> None:
        if self.rollup_step <= 0 or self.rollup_step % KEYFRAME_SECONDS:
            # a roll-up bucket holds whole keyframe buckets: its samples alone give every value (db.py)
            raise ValueError(f"rollup_step must be a multiple of {KEYFRAME_SECONDS} s")


def maintain(conn: sqlite3.Connection, now: float, r: Retention) -> bool:
    more = _transaction(conn, lambda: _roll_up(conn, now, r))
    more |= _transaction(conn, lambda: _expire(conn, now, r))
    if file_bytes(conn) > r.max_bytes:
        _transaction(conn, lambda: _drop_oldest(conn, r))
        more = True
    if conn.execute("PRAGMA freelist_count").fetchone()[0] > 0:
        # The pragma frees one page per step of its statement and `execute` steps it once:
        # `executescript` runs it to the end (no transaction is open here for it to commit).
        conn.executescript(f"PRAGMA incremental_vacuum({int(r.vacuum_pages)});")
        more |= conn.execute("PRAGMA freelist_count").fetchone()[0] > 0
    return more


def _transaction(conn: sqlite3.Connection, step: Callable[[], bool]) -> bool:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = step()
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return result


def _roll_up(conn: sqlite3.Connection, now: float, r: Retention) -> bool:
    """Roll up the oldest chunk of whole 5-minute buckets older than the raw retention, then drop those
    samples and passes (same transaction: a sample is in exactly one of the two tables).

    A roll-up is over the series' value at each sample pass of its bucket (db.py, KEYFRAME_SECONDS):
    a stored sample holds from its pass until the series' next sample in its keyframe bucket (or the
    bucket's end), so it counts once for every pass in that span — min, max and last of those values,
    their mean weighted by the passes, and `n` the passes (as when every pass wrote every value)."""
    oldest = min((t for t in (conn.execute("SELECT min(ts) FROM samples").fetchone()[0],
                              conn.execute("SELECT min(ts) FROM sample_passes").fetchone()[0]) if t is not None),
                 default=None)
    step = r.rollup_step
    cutoff = int(now - r.raw_seconds) // step * step
    if oldest is None or oldest >= cutoff:
        return False
    start = oldest // step * step
    end = min(cutoff, start + max(step, r.rollup_chunk // step * step))
    key = KEYFRAME_SECONDS
    conn.execute(
        f"""
        INSERT OR REPLACE INTO rollups (series_id, ts, min, max, avg, last, n)
        WITH held AS (
            SELECT series_id, ts, value, (ts / :step) * :step AS bucket,
                   coalesce(lead(ts) OVER (PARTITION BY series_id, ts / {key} ORDER BY ts),
                            (ts / {key} + 1) * {key}) AS until
            FROM samples WHERE ts >= :start AND ts < :end),
        counted AS (
            SELECT held.*, (SELECT count(*) FROM sample_passes AS p WHERE p.ts >= held.ts AND p.ts < held.until) AS n,
                   row_number() OVER (PARTITION BY series_id, bucket ORDER BY ts DESC) AS newest
            FROM held)
        SELECT series_id, bucket, min(value), max(value),
               sum(value * n) / nullif(sum(CASE WHEN value IS NULL THEN 0 ELSE n END), 0),
               max(CASE WHEN newest = 1 THEN value END), sum(n)
        FROM counted GROUP BY series_id, bucket HAVING sum(n) > 0
        """,
        {"step": step, "start": start, "end": end},
    )
    conn.execute("DELETE FROM samples WHERE ts >= ? AND ts < ?", (start, end))
    conn.execute("DELETE FROM sample_passes WHERE ts >= ? AND ts < ?", (start, end))
    return bool(end < cutoff)


def _expire(conn: sqlite3.Connection, now: float, r: Retention) -> bool:
    more = _delete_before(conn, "rollups", "ts", now - r.rollup_seconds, r.batch_rows, keyed=True)
    for table, column in EVENT_TABLES:
        more |= _delete_before(conn, table, column, now - r.event_seconds, r.batch_rows)
    return more


def _delete_before(conn: sqlite3.Connection, table: str, column: str, cutoff: float, limit: int,
                   keyed: bool = False) -> bool:
    """Delete at most `limit` rows older than `cutoff`, oldest first; True when the limit was hit."""
    # `rollups` and `samples` have no rowid: their primary key picks the rows instead.
    pick, columns = ("(series_id, ts)", "series_id, ts") if keyed else ("rowid", "rowid")
    cur = conn.execute(
        f"DELETE FROM {table} WHERE {pick} IN (SELECT {columns} FROM {table} WHERE {column} < ? "
        f"ORDER BY {column} LIMIT ?)",
        (cutoff, limit),
    )
    return cur.rowcount >= limit


def oldest_time(conn: sqlite3.Connection) -> float | None:
    stamps = [conn.execute("SELECT min(ts) FROM samples").fetchone()[0],
              conn.execute("SELECT min(ts) FROM rollups").fetchone()[0]]
    stamps += [conn.execute(f"SELECT min({column}) FROM {table}").fetchone()[0] for table, column in EVENT_TABLES]
    present = [s for s in stamps if s is not None]
    return min(present) if present else None


def _drop_oldest(conn: sqlite3.Connection, r: Retention) -> bool:
    """Over the size cap: delete the oldest hour of everything (bounded per table), whatever its kind."""
    oldest = oldest_time(conn)
    if oldest is None:
        return False
    cutoff = oldest + 3600
    more = _delete_before(conn, "samples", "ts", cutoff, r.batch_rows, keyed=True)
    more |= _delete_before(conn, "sample_passes", "ts", cutoff, r.batch_rows)
    more |= _delete_before(conn, "rollups", "ts", cutoff, r.batch_rows, keyed=True)
    for table, column in EVENT_TABLES:
        more |= _delete_before(conn, table, column, cutoff, r.batch_rows)
    return more
