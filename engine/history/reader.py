"""A read-only handle on one cluster's history file, for the dashboard (History screen, sparklines).

`HistoryReader(path)` never creates, migrates or writes the file: it opens it read-only (query_only)
on first use — the recorder creates it on its first pass, so a reader made at start-up finds it later.
`window(now, seconds)` gathers what the History screen draws over one range, through query.py;
`recent_reserved(now, seconds)` gives the raw reserved-GPU samples per pool flavor the session's
"last 30 min" sparklines are seeded from after a restart.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import db as hdb
from . import query
from . import whatif as predictions

GPU_SUFFIXES = ("nvidia.com/gpu", "amd.com/gpu", "gpu.nvidia.com")
PREEMPTION_LOG_LIMIT = 500


def gpu_of(resources: list[str]) -> str | None:
    """The GPU resource among a flavor's recorded resources (NVIDIA first), None without one."""
    for r in GPU_SUFFIXES:
        if r in resources:
            return r
    return next((r for r in sorted(resources) if r.endswith("/gpu")), None)


Series = list[tuple[float, float | None]]


@dataclass(frozen=True)
class FlavorSeries:
    name: str
    resource: str
    budget: Series
    reserved: Series


@dataclass(frozen=True)
class QueueSeries:
    name: str
    pending: Series
    admitted: Series


@dataclass(frozen=True)
class HistoryWindow:
    """Everything the History screen shows for one range [start, end) in `len(buckets)` buckets."""

    start: float
    end: float
    step: float
    recorded_from: float | None  # the file's oldest and newest sample (None: no samples at all)
    recorded_to: float | None
    flavors: list[FlavorSeries] = field(default_factory=list)
    queues: list[QueueSeries] = field(default_factory=list)
    waits_by_queue: dict[str, dict[str, Any]] = field(default_factory=dict)
    waits_by_team: dict[str, dict[str, Any]] = field(default_factory=dict)
    evictions: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    preemptions: list[query.EvictionRecord] = field(default_factory=list)
    whatif: list[dict[str, Any]] = field(default_factory=list)  # predictions made in the range, beside what happened

    @property
    def empty(self) -> bool:
        """Nothing recorded in this range (the screen says so instead of drawing zeros)."""
        has_samples = any(v is not None for f in self.flavors for _, v in (*f.budget, *f.reserved)) or any(
            v is not None for q in self.queues for _, v in (*q.pending, *q.admitted))
        return not (has_samples or self.waits_by_queue or self.preemptions or self.whatif
                    or any(n for _, n in self.evictions.get("evictions", ())))


class HistoryReader:
    """Read-only access to one history file; safe to call from any thread (one query at a time)."""

    def __init__(self, path: Path | str, key: str | None = None, base: Path | None = None) -> None:
        self.path = Path(path)
        self.key = key  # the cluster key: where its what-if predictions are kept (None: none read)
        self._base = base
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @classmethod
    def for_cluster(cls, key: str, base: Path | None = None) -> HistoryReader:
        return cls(hdb.db_path(key, base), key, base)

    def keep_prediction(self, doc: dict[str, Any]) -> Path | None:
        """Keep a what-if prediction made in the dashboard beside this cluster's history (None: the reader
        has no cluster key). A local file: never a write to the cluster."""
        return None if self.key is None else predictions.record(doc, self.key, self._base)

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is None:
            if not self.path.exists():
                return None
            try:
                self._conn = hdb.connect(self.path, write=False)
            except (hdb.HistoryError, sqlite3.Error):
                return None
        return self._conn

    def available(self) -> bool:
        """True once the file exists and holds at least one sample or event."""
        with self._lock:
            conn = self._connection()
            if conn is None:
                return False
            try:
                s = query.summary(conn)
            except sqlite3.Error:  # a file still being created by the recorder's first pass
                return False
            return bool(s["rawSamples"] or s["rollups"] or s["waits"] or s["evictions"])

    def window(self, now: float, seconds: float, buckets: int = 120) -> HistoryWindow | None:
        """The History screen's data for the `seconds` before `now`; None when nothing is recorded."""
        with self._lock:
            conn = self._connection()
            if conn is None:
                return None
            try:
                return self._window(conn, now, seconds, buckets)
            except sqlite3.OperationalError:  # schema not there yet (the recorder's first pass)
                return None

    def _window(self, conn: sqlite3.Connection, now: float, seconds: float, buckets: int) -> HistoryWindow | None:
        s = query.summary(conn)
        if not (s["rawSamples"] or s["rollups"] or s["waits"] or s["evictions"]):
            return None
        step = seconds / buckets
        end = float(now)
        start = end - step * buckets
        names = query.series_names(conn)
        resources: dict[str, list[str]] = {}
        queues: set[str] = set()
        for n in names:
            if n["kind"] == "flavor":
                resources.setdefault(n["name"], []).append(n["resource"])
            elif n["kind"] == "queue":
                queues.add(n["name"])
        flavors = []
        for name in sorted(resources):
            gpu = gpu_of(resources[name])
            if gpu is None:
                continue
            use = query.flavor_usage(conn, name, gpu, start, end, step, metrics=("budget", "reserved"))
            flavors.append(FlavorSeries(name, gpu, use["budget"], use["reserved"]))
        qs = []
        for name in sorted(queues):
            c = query.queue_counts(conn, name, start, end, step, metrics=("pending", "admitted"))
            qs.append(QueueSeries(name, c["pending"], c["admitted"]))
        return HistoryWindow(
            start=start, end=end, step=step, recorded_from=s["from"], recorded_to=s["to"],
            flavors=flavors, queues=qs,
            waits_by_queue=query.wait_percentiles(conn, start, end, by="cluster_queue"),
            waits_by_team=query.wait_percentiles(conn, start, end, by="team"),
            evictions=query.eviction_counts(conn, start, end, step),
            preemptions=query.preemption_log(conn, start, end, limit=PREEMPTION_LOG_LIMIT),
            whatif=predictions.outcomes(conn, self.key, start, self._base) if self.key is not None else [],
        )

    def recent_reserved(self, now: float, seconds: float) -> list[tuple[float, dict[str, float]]]:
        """Raw reserved-GPU samples per pool flavor in [now - seconds, now], oldest first, as
        (time, {flavor: GPUs}) — the shape the session's sparkline samples have. NULLs are left out."""
        with self._lock:
            conn = self._connection()
            if conn is None:
                return []
            try:
                # The value at each sample pass: the latest sample at or before it in its keyframe bucket.
                key = hdb.KEYFRAME_SECONDS
                passes = query.values_at_passes(
                    conn, "series_id IN (SELECT id FROM series WHERE kind = 'flavor' AND metric = 'reserved')"
                    " AND ts >= :lo AND ts < :until", ":since", ":until")
                rows = conn.execute(
                    f"SELECT s.name, s.resource, p.ts, x.value FROM {passes} JOIN series s ON s.id = x.series_id"
                    " WHERE x.value IS NOT NULL ORDER BY p.ts",
                    {"since": now - seconds, "until": int(now) + 1, "lo": int(now - seconds) // key * key},
                ).fetchall()
            except sqlite3.OperationalError:
                return []
        by_flavor: dict[str, list[str]] = {}
        for name, resource, _, _ in rows:
            by_flavor.setdefault(name, [])
            if resource not in by_flavor[name]:
                by_flavor[name].append(resource)
        gpu = {name: gpu_of(res) for name, res in by_flavor.items()}
        out: dict[float, dict[str, float]] = {}
        for name, resource, ts, value in rows:
            if resource == gpu[name]:
                out.setdefault(float(ts), {})[name] = float(value)
        return sorted(out.items())

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
