"""`query.series` aggregates its buckets inside SQLite: it must give exactly what folding every raw
value and roll-up row one by one gives (min, max, count-weighted mean, the value at the newest time),
NULLs included, for any range and step. Raw values are stored as the recorder writes them (db.py,
KEYFRAME_SECONDS): every value at the first pass of each keyframe bucket, then only the changes, and
one `sample_passes` row per pass; the fold reads the dense value of every pass."""

from __future__ import annotations

import math
import random

import pytest

from taudash.engine.history import db as hdb
from taudash.engine.history import query as q

T0 = 1_796_000_000


def sparse(raw: list[tuple[int, float | None]]) -> list[tuple[int, float | None]]:
    """The rows the recorder writes for a series sampled at every pass of `raw`: a pass's value when
    it starts a keyframe bucket or differs from the previous pass's."""
    out, last = [], None
    for i, (ts, v) in enumerate(raw):
        first = i == 0 or ts // hdb.KEYFRAME_SECONDS != raw[i - 1][0] // hdb.KEYFRAME_SECONDS
        if first or v != last:
            out.append((ts, v))
        last = v
    return out


def reference(raw, rolled, start, end, step, agg):
    """The per-row fold: raw rows are (ts, value), roll-ups (ts, min, max, avg, n, last)."""
    n_buckets = math.ceil((end - start) / step)
    accs = [q._Acc() for _ in range(n_buckets)]
    rows = [(ts, v, v, v, 1, v) for ts, v in raw] + list(rolled)
    for ts, lo, hi, mean, n, last in rows:
        if start <= ts < end:
            accs[int((ts - start) // step)].add(ts, lo, hi, mean, n if mean is not None else 0, last)
    return [(start + i * step, a.value(agg) if a.last_ts > -math.inf else None) for i, a in enumerate(accs)]


@pytest.mark.parametrize("seed", range(6))
def test_sql_buckets_equal_the_row_by_row_fold(tmp_path, seed):
    rng = random.Random(seed)
    conn = hdb.connect(tmp_path / "q.sqlite3")
    sid = conn.execute("INSERT INTO series (kind, name, flavor, resource, metric) VALUES ('queue','cq','','','pending')"
                       " RETURNING id").fetchone()[0]
    raw, rolled = [], []
    value: float | None = 0.0
    for ts in range(T0 + 86400, T0 + 2 * 86400, 10):  # raw passes, with gaps (nothing recording) and NULLs
        if rng.random() < 0.1:
            continue
        roll = rng.random()  # mostly unchanged from the pass before, as a cluster's figures are
        if roll < 0.05:
            value = None
        elif roll < 0.3 or value is None:
            value = float(rng.randint(0, 50))
        raw.append((ts, value))
    for ts in range(T0, T0 + 86400 + 3600, 300):  # roll-ups, overlapping the raw hour after them
        vals = [rng.randint(0, 50) for _ in range(rng.randint(1, 30))]
        if rng.random() < 0.05:
            rolled.append((ts, None, None, None, len(vals), None))
        else:
            rolled.append((ts, float(min(vals)), float(max(vals)), sum(vals) / len(vals), len(vals), float(vals[-1])))
    stored = sparse(raw)
    assert len(stored) < len(raw) / 2  # the carried values are read, not stored
    conn.executemany("INSERT INTO samples VALUES (?,?,?)", [(sid, ts, v) for ts, v in stored])
    conn.executemany("INSERT INTO sample_passes VALUES (?)", [(ts,) for ts, _ in raw])
    conn.executemany("INSERT INTO rollups (series_id, ts, min, max, avg, n, last) VALUES (?,?,?,?,?,?,?)",
                     [(sid, *r) for r in rolled])
    for start, end, step in ((T0, T0 + 2 * 86400, 720), (T0 + 86400 - 1800, T0 + 86400 + 7200, 30),
                             (T0 + 17, T0 + 2 * 86400 - 13, 5040), (T0 + 86400, T0 + 86400 + 3600, 7)):
        for agg in q.AGGREGATES:
            got = q.series(conn, "queue", "cq", "pending", start, end, step, agg=agg)
            want = reference(raw, rolled, start, end, step, agg)
            assert len(got) == len(want)
            for (b1, v1), (b2, v2) in zip(got, want, strict=True):
                assert b1 == b2
                assert (v1 is None and v2 is None) or (v1 is not None and v2 is not None and
                                                       math.isclose(v1, v2, rel_tol=1e-9, abs_tol=1e-9)), (agg, b1)
    conn.close()
