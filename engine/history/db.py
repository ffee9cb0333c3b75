"""The history database: one SQLite file per cluster under the state directory, its schema and migrations.

SQLite from the standard library: no server, one file, readable by the CLI while the dashboard writes
(WAL). `synchronous=NORMAL`: in WAL mode a committed transaction survives the process being killed
(kill -9, a crash); only a power loss may roll back the last few commits, never corrupt the file. History
is sampled every 10 s, so losing seconds of it on a power cut is worth not paying an fsync per batch.

The schema version is `PRAGMA user_version`. MIGRATIONS is ordered; step N brings the file from
version N-1 to N inside one transaction, so a crash mid-migration leaves the previous version. A file
written by a newer taudash is refused for writing (`NewerSchema`) and may still be opened read-only.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

from ..paths import state_dir

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
# `taudash demo` runs a fresh simulator on a random port each time: one stable key for all of them.
DEMO_CLUSTER_KEY = "demo"


class HistoryError(Exception):
    """The history database cannot be used (with a message meant for the operator)."""


class NewerSchema(HistoryError):
    """The file was written by a newer taudash: reading may work, writing must not."""


# --- where -------------------------------------------------------------------------------------------


def cluster_key(context: str | None, server: str | None) -> str:
    """A file-name-safe key for a cluster: the context name plus a short hash of the API server URL
    (two kubeconfigs may name different clusters alike; one cluster may be reached by two names)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", context or "cluster").strip("._") or "cluster"
    digest = hashlib.sha256((server or "").encode("utf-8")).hexdigest()[:8]
    return f"{name[:64]}-{digest}"


def db_path(key: str, base: Path | None = None) -> Path:
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", key) or key.startswith("."):
        raise HistoryError(f"invalid cluster key {key!r} (letters, digits, '.', '_', '-')")
    directory = (base or state_dir()) / "history"
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    return directory / f"{key}.sqlite3"


# --- schema ------------------------------------------------------------------------------------------


def _script(conn: sqlite3.Connection, sql: str) -> None:
    """Statements one by one: `executescript` would COMMIT the migration's transaction first."""
    for statement in sql.split(";"):
        if any(line.strip() and not line.strip().startswith("--") for line in statement.splitlines()):
            conn.execute(statement)


def _v1(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        -- one row per recorded series: what a sample value measures
        CREATE TABLE series (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,        -- flavor | queue | cohort
            name TEXT NOT NULL,        -- the flavor, ClusterQueue or Cohort
            flavor TEXT NOT NULL DEFAULT '',
            resource TEXT NOT NULL DEFAULT '',
            metric TEXT NOT NULL,      -- budget reserved used headroom | pending reserving admitted inactive | borrowed
            UNIQUE (kind, name, flavor, resource, metric)
        );
        -- raw samples (every `interval` seconds), kept one day
        CREATE TABLE samples (
            series_id INTEGER NOT NULL, ts INTEGER NOT NULL, value REAL,
            PRIMARY KEY (series_id, ts)
        ) WITHOUT ROWID;
        CREATE INDEX samples_ts ON samples (ts);
        -- 5-minute roll-ups of older samples, kept thirty days
        CREATE TABLE rollups (
            series_id INTEGER NOT NULL, ts INTEGER NOT NULL,
            min REAL, max REAL, avg REAL, last REAL, n INTEGER NOT NULL,
            PRIMARY KEY (series_id, ts)
        ) WITHOUT ROWID;
        CREATE INDEX rollups_ts ON rollups (ts);
        -- one row per admitted Workload: creation -> QuotaReserved -> Admitted
        CREATE TABLE waits (
            uid TEXT PRIMARY KEY, namespace TEXT NOT NULL, name TEXT NOT NULL,
            queue TEXT, cluster_queue TEXT, team TEXT, flavor TEXT,
            created REAL, reserved REAL, admitted REAL NOT NULL
        );
        CREATE INDEX waits_admitted ON waits (admitted);
        -- one row per eviction (Evicted=True), de-duplicated by the condition's lastTransitionTime
        CREATE TABLE evictions (
            uid TEXT NOT NULL, at REAL NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
            cluster_queue TEXT, team TEXT, reason TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (uid, at)
        );
        CREATE INDEX evictions_at ON evictions (at);
        CREATE TABLE finding_events (
            id INTEGER PRIMARY KEY, at REAL NOT NULL, event TEXT NOT NULL,  -- open | close
            rule TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
            severity TEXT NOT NULL, message TEXT NOT NULL
        );
        CREATE INDEX finding_events_at ON finding_events (at);
        -- findings open at the last record: a restart continues the diff instead of re-opening them all
        CREATE TABLE open_findings (
            rule TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
            severity TEXT NOT NULL, message TEXT NOT NULL, since REAL NOT NULL,
            PRIMARY KEY (rule, kind, namespace, name)
        );
        CREATE TABLE drain_events (
            id INTEGER PRIMARY KEY, at REAL NOT NULL, event TEXT NOT NULL,  -- started | changed | cleared
            workspace TEXT NOT NULL, state TEXT NOT NULL, previous TEXT NOT NULL, mode TEXT,
            old_namespace TEXT, new_namespace TEXT
        );
        CREATE INDEX drain_events_at ON drain_events (at);
        CREATE TABLE drain_state (workspace TEXT PRIMARY KEY, state TEXT NOT NULL, since REAL NOT NULL);
        """
    )


PREEMPTOR_UID = re.compile(r"\(UID: ([^,)\s]+)")


def preemptor_uid(message: str) -> str | None:
    """The preemptor's Workload UID from Kueue's message "Preempted to accommodate a workload (UID: u,
    JobUID: j) due to ..." (older releases write no UID: None)."""
    if "accommodate" not in message:
        return None
    m = PREEMPTOR_UID.search(message)
    return m.group(1) if m and m.group(1) != "UNKNOWN" else None


def _v2(conn: sqlite3.Connection) -> None:
    """v2: evictions say who preempted whom and in which cohort; v1 rows are back-filled from the stored
    condition message (the preemptor's UID; its name stays unknown)."""
    for column in ("cohort TEXT", "preemption_reason TEXT", "preemptor_uid TEXT", "preemptor_namespace TEXT",
                   "preemptor_name TEXT", "preemptor_cluster_queue TEXT"):
        conn.execute(f"ALTER TABLE evictions ADD COLUMN {column}")
    rows = conn.execute("SELECT uid, at, message FROM evictions WHERE reason = 'Preempted'").fetchall()
    for uid, at, message in rows:
        conn.execute("UPDATE evictions SET preemptor_uid = ? WHERE uid = ? AND at = ?",
                     (preemptor_uid(message), uid, at))


# Samples are written when they change (recorder.py): every value at the first sample pass of each
# KEYFRAME_SECONDS bucket, then only the values that changed (NULL when a series ends), and one
# `sample_passes` row per pass. A series' value at a pass is its latest sample at or before it in the
# same bucket, so a bucket's rows alone say every value at every pass, and a pass that is not there
# (nothing was recording) has no value — never a carried-over one.
KEYFRAME_SECONDS = 300


def _v3(conn: sqlite3.Connection) -> None:
    """v3: samples are written when they change; the passes that sampled are their own table. A v2
    file sampled every series at every pass: each distinct sample time was a pass."""
    conn.execute("CREATE TABLE sample_passes (ts INTEGER PRIMARY KEY)")
    conn.execute("INSERT INTO sample_passes SELECT DISTINCT ts FROM samples")


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_v1, _v2, _v3)
LATEST = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, target: int = LATEST) -> int:
    """Apply the missing steps up to `target`, each in its own transaction. Returns the new version."""
    version = schema_version(conn)
    if version > LATEST:
        raise NewerSchema(f"schema v{version} is newer than this taudash knows (v{LATEST})")
    while version < target:
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated between the check and the lock: re-read under it.
            version = schema_version(conn)
            if version >= target:
                conn.execute("ROLLBACK")
                break
            MIGRATIONS[version](conn)
            version += 1
            conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return version


def connect(path: Path | str, *, write: bool = True, target: int = LATEST) -> sqlite3.Connection:
    """Open (and for writing create and migrate) a history database.

    Read-only opens never create or migrate; a file from a newer taudash raises NewerSchema for
    writing and opens fine for reading."""
    path = Path(path)
    if not write:
        if not path.exists():
            raise HistoryError(f"{path}: no history recorded for this cluster yet")
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None,
                               check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("PRAGMA query_only = ON")
        return conn
    fresh = not path.exists()
    if fresh:  # created private: it names the cluster's teams, namespaces and workloads
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout = 5000")
        version = schema_version(conn)
        if version > LATEST:
            raise NewerSchema(
                f"{path}: history schema v{version} was written by a newer taudash (this one knows v{LATEST}); "
                "not recording into it — upgrade taudash, or read it with `taudash history`"
            )
        if version == 0:
            # Only before the first table: lets maintenance hand freed pages back to the file system.
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA journal_size_limit = 16777216")  # the WAL is truncated back to 16 MiB
        migrate(conn, target)
    except BaseException:
        conn.close()
        raise
    return conn


def file_bytes(conn: sqlite3.Connection) -> int:
    """Bytes the database's pages hold (not counting free pages)."""
    page_count = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    return int((page_count - free) * size)
