"""Retention with an injected clock: raw samples for a day, 5-minute roll-ups for thirty days, events
for thirty days, a size cap; every maintenance call does bounded work."""

from __future__ import annotations

import math
import random
import sqlite3

import pytest

from taudash.engine.history import Recorder, Retention
from taudash.engine.history import query as q
from taudash.engine.history.db import file_bytes
from taudash.engine.history.recorder import Eviction, Observation
from taudash.engine.history.retention import DAY

T0 = 1_800_000_000  # a multiple of 300: buckets start on it
STEP = 10
KEY_A = ("flavor", "h100", "h100", "nvidia.com/gpu", "reserved")
KEY_B = ("queue", "tau-ws-train", "", "", "pending")


def value_a(ts: int) -> float:
    return float((ts // 10) % 37)


def value_b(ts: int) -> float | None:
    return None if (ts // 10) % 50 == 0 else float((ts * 7919) % 13)  # some NULLs: "not known"


def synthetic(tmp_path, days: float, **retention) -> tuple[Recorder, list[int]]:
    """A recorder whose file holds `days` of 10 s samples of two series (written through the recorder)."""
    rec = Recorder(tmp_path / "h.sqlite3", retention=Retention(**retention))
    stamps = list(range(T0, T0 + int(days * DAY), STEP))
    rec.write(Observation(now=stamps[0], samples={KEY_A: value_a(stamps[0]), KEY_B: value_b(stamps[0])}))
    ids = [rec._series[KEY_A], rec._series[KEY_B]]
    # The rest in bulk: a recorder writing every 10 s for days would make the test slow, not better.
    rec.conn.execute("BEGIN")
    rec.conn.executemany("INSERT INTO samples VALUES (?,?,?)",
                         [(ids[0], ts, value_a(ts)) for ts in stamps[1:]]
                         + [(ids[1], ts, value_b(ts)) for ts in stamps[1:]])
    rec.conn.executemany("INSERT INTO sample_passes VALUES (?)", [(ts,) for ts in stamps[1:]])  # each a pass
    rec.conn.execute("COMMIT")
    return rec, stamps


def expected_bucket(fn, bucket: int) -> dict:
    values = [fn(ts) for ts in range(bucket, bucket + 300, STEP)]
    known = [v for v in values if v is not None]
    return {"min": min(known, default=None), "max": max(known, default=None),
            "avg": sum(known) / len(known) if known else None, "last": values[-1], "n": len(values)}


def run_maintenance(rec: Recorder, now: float, limit: int = 10_000) -> int:
    calls = 1
    while rec.maintain(now):
        calls += 1
        assert calls < limit
    return calls


def test_samples_older_than_a_day_become_exact_5_minute_rollups_in_bounded_steps(tmp_path):
    rec, stamps = synthetic(tmp_path, days=2.5, rollup_chunk=3600)
    now = stamps[-1] + STEP
    cutoff = int(now - DAY) // 300 * 300

    assert rec.maintain(now) is True  # one chunk (an hour) per call, more to do
    assert rec.conn.execute("SELECT count(*), max(ts) FROM rollups").fetchone() == (2 * 12, T0 + 3600 - 300)
    calls = run_maintenance(rec, now)
    # the backlog took many bounded calls (an hour each), not one big one — nor a call per freed page
    assert (cutoff - T0) // 3600 - 1 <= calls <= (cutoff - T0) // 3600 + 5

    # raw samples from the last day only; every older bucket rolled up exactly once
    assert rec.conn.execute("SELECT min(ts) FROM samples").fetchone()[0] == cutoff
    buckets = list(range(T0, cutoff, 300))
    for key, fn in ((KEY_A, value_a), (KEY_B, value_b)):
        sid = rec._series[key]
        rows = rec.conn.execute("SELECT ts, min, max, avg, last, n FROM rollups WHERE series_id=? ORDER BY ts",
                                (sid,)).fetchall()
        assert [r[0] for r in rows] == buckets
        for ts, lo, hi, mean, last, n in rows[:: max(1, len(rows) // 40)]:
            exp = expected_bucket(fn, ts)
            assert (lo, hi, last, n) == (exp["min"], exp["max"], exp["last"], exp["n"])
            assert mean == pytest.approx(exp["avg"])

    # the read API merges both tiers: hourly averages equal the raw data's whatever tier holds them
    got = q.series(rec.conn, "flavor", "h100", "reserved", T0, now, 3600, flavor="h100", resource="nvidia.com/gpu")
    for start, v in got:
        raw = [value_a(ts) for ts in range(start, min(start + 3600, now), STEP)]
        assert v == pytest.approx(sum(raw) / len(raw))
    peaks = q.series(rec.conn, "queue", "tau-ws-train", "pending", T0, now, 3600)  # counts: max per bucket
    for start, v in peaks:
        assert v == max(x for ts in range(start, min(start + 3600, now), STEP) if (x := value_b(ts)) is not None)
    rec.close()


def test_rollups_and_events_expire_after_thirty_days_oldest_first(tmp_path):
    rec, stamps = synthetic(tmp_path, days=2, batch_rows=50)
    run_maintenance(rec, stamps[-1] + STEP)
    rolled = rec.conn.execute("SELECT count(*) FROM rollups").fetchone()[0]
    assert rolled > 0
    # events at 40, 31, 29 and 1 days before a later "now"
    later = T0 + 32 * DAY
    ages = [40, 31, 29, 1]
    for i, age in enumerate(ages):
        at = later - age * DAY
        rec.write(Observation(now=at, evictions=[Eviction(f"uid-{i}", at, "train", f"wl-{i}", "cq", None, None,
                                                          "Preempted", "m")],
                              findings={("R", "ClusterQueue", "", f"cq{i}"): ("warning", "m")}))
    assert rec.maintain(later) is True  # 50 rows per table per call: more remains
    run_maintenance(rec, later)
    left = [r[0] for r in rec.conn.execute("SELECT uid FROM evictions ORDER BY at")]
    assert left == ["uid-2", "uid-3"]
    assert all(at >= later - 30 * DAY for (at,) in rec.conn.execute("SELECT at FROM finding_events"))
    assert rec.conn.execute("SELECT count(*) FROM finding_events").fetchone()[0] >= 2
    # the synthetic samples (2 days from T0) are all older than thirty days by now
    assert rec.conn.execute("SELECT count(*) FROM rollups").fetchone()[0] == 0
    assert rec.conn.execute("SELECT count(*) FROM samples").fetchone()[0] == 0
    rec.close()


def test_the_size_cap_drops_the_oldest_data_and_hands_pages_back(tmp_path):
    rec, stamps = synthetic(tmp_path, days=0.9)  # all raw: nothing is old enough to roll up
    before = file_bytes(rec.conn)
    pages_before = rec.conn.execute("PRAGMA page_count").fetchone()[0]
    cap = before // 3
    rec.retention = Retention(max_bytes=cap, batch_rows=2000)
    now = stamps[-1] + STEP
    calls = run_maintenance(rec, now)
    assert calls > 2  # bounded: several calls to get under the cap
    assert file_bytes(rec.conn) <= cap
    assert rec.conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
    assert rec.conn.execute("PRAGMA page_count").fetchone()[0] < pages_before  # the file shrank
    lo, hi = rec.conn.execute("SELECT min(ts), max(ts) FROM samples").fetchone()
    assert hi == stamps[-1] and lo > stamps[0]  # the newest kept, the oldest dropped
    rec.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert (tmp_path / "h.sqlite3").stat().st_size < pages_before * 4096
    rec.close()


def test_under_the_cap_and_within_retention_nothing_is_deleted(tmp_path):
    rec, stamps = synthetic(tmp_path, days=0.2)
    n = rec.conn.execute("SELECT count(*) FROM samples").fetchone()[0]
    assert rec.maintain(stamps[-1] + STEP) is False
    assert rec.conn.execute("SELECT count(*) FROM samples").fetchone()[0] == n
    rec.close()


def test_series_buckets_without_data_are_none_not_zero(tmp_path):
    rec, stamps = synthetic(tmp_path, days=0.05)
    end = stamps[-1] + STEP
    got = q.series(rec.conn, "flavor", "h100", "reserved", end - 600, end + 600, 300, flavor="h100",
                   resource="nvidia.com/gpu")
    assert [v is None for _, v in got] == [False, False, True, True]
    assert q.series(rec.conn, "flavor", "nope", "reserved", T0, end, 300) == [(b, None) for b in range(T0, end, 300)]
    with pytest.raises(ValueError):
        q.series(rec.conn, "flavor", "h100", "reserved", end, T0, 300)
    with pytest.raises(ValueError):
        q.series(rec.conn, "flavor", "h100", "reserved", T0, end, 300, agg="median")
    rec.close()


def test_percentiles_match_the_definition():
    rng = random.Random(3)
    values = [rng.uniform(0, 1000) for _ in range(101)]
    ordered = sorted(values)
    assert q.percentile(values, 50) == ordered[50]
    assert q.percentile(values, 95) == ordered[95]
    assert q.percentile([1.0, 2.0], 50) == 1.5
    assert q.percentile([], 50) is None
    assert math.isclose(q.percentile([5.0], 95), 5.0)


def test_wait_and_eviction_counts_group_per_bucket(tmp_path):
    from taudash.engine.history.recorder import Wait

    rec = Recorder(tmp_path / "h.sqlite3")
    waits = [Wait(f"u{i}", "train", f"w{i}", "jobqueue", "cq-a" if i % 2 else "cq-b", "research", "h100",
                  T0 + i, T0 + i + 5, T0 + i + 10 * (i + 1)) for i in range(20)]
    evs = [Eviction(f"e{i}", T0 + i * 1800, "train", f"v{i}", "cq-a", "co", "research",
                    "Preempted" if i % 3 else "PodsReadyTimeout", "m") for i in range(8)]
    rec.write(Observation(now=T0, waits=waits, evictions=evs))
    by_cq = q.wait_percentiles(rec.conn, T0, T0 + DAY)
    assert by_cq["cq-a"]["count"] == 10 and by_cq["cq-b"]["count"] == 10
    a = sorted(10.0 * (i + 1) for i in range(20) if i % 2)
    assert by_cq["cq-a"]["p50"] == q.percentile(a, 50) and by_cq["cq-a"]["p95"] == q.percentile(a, 95)
    assert q.wait_percentiles(rec.conn, T0, T0 + DAY, by="team")["research"]["count"] == 20
    assert q.wait_percentiles(rec.conn, T0 + DAY, T0 + 2 * DAY) == {}
    counts = q.eviction_counts(rec.conn, T0, T0 + 4 * 3600, 3600)
    assert [n for _, n in counts["evictions"]] == [2, 2, 2, 2]
    assert [n for _, n in counts["preemptions"]] == [1, 1, 2, 1]  # evictions 0, 3 and 6 timed out
    totals = q.eviction_totals(rec.conn, T0 + 7 * 1800)  # evictions at T0 .. T0 + 3.5 h, every 30 min
    assert totals == {"1h": {"preemptions": 2, "evictions": 3}, "24h": {"preemptions": 5, "evictions": 8},
                      "7d": {"preemptions": 5, "evictions": 8}}
    assert q.eviction_totals(rec.conn, T0 - 1) == {w: {"preemptions": 0, "evictions": 0} for w in ("1h", "24h", "7d")}
    with pytest.raises(ValueError):
        q.wait_percentiles(rec.conn, T0, T0 + 1, by="uid; DROP TABLE waits")
    rec.close()
    assert sqlite3.connect(tmp_path / "h.sqlite3").execute("SELECT count(*) FROM waits").fetchone()[0] == 20


def test_rollups_of_changed_only_samples_equal_those_of_every_value_at_every_pass(tmp_path):
    """The recorder writes a value when it changes (and at each 5-minute keyframe); a roll-up weighs each
    stored value by the passes it held for, so it is the fold of every pass's value (db.py KEYFRAME_SECONDS)."""
    rec = Recorder(tmp_path / "h.sqlite3", retention=Retention(rollup_chunk=3600))
    key = ("queue", "slow", "", "", "pending")
    passes = [ts for ts in range(T0, T0 + 3600, STEP) if not T0 + 900 <= ts < T0 + 1020]  # a 2-minute gap

    def value(ts: int) -> float | None:
        return None if T0 + 2000 <= ts < T0 + 2200 else float((ts // 60) % 5)  # a minute per value, a NULL spell

    for ts in passes:
        rec.write(Observation(now=ts, samples={key: value(ts)}))
    stored = rec.conn.execute("SELECT count(*) FROM samples").fetchone()[0]
    assert stored < len(passes) / 4  # most passes wrote nothing: the value had not changed
    run_maintenance(rec, T0 + 3600 + DAY + 300)
    rows = rec.conn.execute("SELECT ts, min, max, avg, last, n FROM rollups WHERE series_id = ? ORDER BY ts",
                            (rec._series[key],)).fetchall()
    assert rec.conn.execute("SELECT count(*) FROM samples").fetchone()[0] == 0
    assert [r[0] for r in rows] == list(range(T0, T0 + 3600, 300))
    for ts, lo, hi, avg, last, n in rows:
        values = [value(p) for p in passes if ts <= p < ts + 300]
        known = [v for v in values if v is not None]
        assert (lo, hi, last, n) == (min(known, default=None), max(known, default=None), values[-1], len(values)), ts
        assert (avg is None and not known) or math.isclose(avg, sum(known) / len(known)), ts
    rec.close()
