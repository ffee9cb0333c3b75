"""The history file: schema migrations (v1 -> v2 with data kept), a newer schema refused for writing,
and kill -9 while recording leaves a consistent database holding every committed batch."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from taudash.engine.history import NewerSchema, Recorder
from taudash.engine.history import db as hdb
from taudash.engine.history import query as q

PREEMPTED_MSG = ("Preempted to accommodate a workload (UID: 5c1e-preemptor, JobUID: 77aa-job) due to "
                 "prioritization in the ClusterQueue")


def v1_database(path) -> None:
    """A file as taudash with schema v1 left it, with a sample, a preemption and an eviction."""
    conn = hdb.connect(path, target=1)
    assert hdb.schema_version(conn) == 1
    conn.execute("INSERT INTO series (id, kind, name, flavor, resource, metric) VALUES "
                 "(1, 'flavor', 'h100', 'h100', 'nvidia.com/gpu', 'reserved')")
    conn.execute("INSERT INTO samples VALUES (1, 1000, 12.0)")
    conn.execute("INSERT INTO evictions (uid, at, namespace, name, cluster_queue, team, reason, message) VALUES "
                 "('victim', 990.0, 'train', 'wl-a', 'tau-ws-train', 'research', 'Preempted', ?)", (PREEMPTED_MSG,))
    conn.execute("INSERT INTO evictions (uid, at, namespace, name, cluster_queue, team, reason, message) VALUES "
                 "('other', 995.0, 'train', 'wl-b', 'tau-ws-train', 'research', 'PodsReadyTimeout', 'timeout')")
    conn.close()


def test_a_file_older_than_v3_reads_without_migrating(tmp_path):
    """A read-only reader (taudash history, the History screen) never migrates: before v3 every pass wrote
    every value, so each sample row is a pass."""
    path = tmp_path / "h.sqlite3"
    v1_database(path)
    conn = hdb.connect(path, write=False)
    assert hdb.schema_version(conn) == 1
    assert q.series(conn, "flavor", "h100", "reserved", 990, 1020, 10, flavor="h100", resource="nvidia.com/gpu") == [
        (990, None), (1000, 12.0), (1010, None)]
    assert q.summary(conn)["samplePasses"] == 1
    conn.close()


def test_a_v1_database_is_migrated_to_the_latest_with_its_data_kept_and_back_filled(tmp_path):
    path = tmp_path / "h.sqlite3"
    v1_database(path)
    with pytest.raises(sqlite3.OperationalError):  # v1 has no preemptor columns
        sqlite3.connect(path).execute("SELECT preemptor_uid FROM evictions").fetchall()

    rec = Recorder(path)
    assert hdb.schema_version(rec.conn) == hdb.LATEST == 3
    assert rec.conn.execute("SELECT ts, value FROM samples").fetchall() == [(1000, 12.0)]
    assert rec.conn.execute("SELECT ts FROM sample_passes").fetchall() == [(1000,)]  # v3: each sample time a pass
    assert rec._series[("flavor", "h100", "h100", "nvidia.com/gpu", "reserved")] == 1
    log = q.preemption_log(rec.conn, 0, all_evictions=True)
    assert [(r.uid, r.reason, r.preemptor_uid) for r in log] == [
        ("other", "PodsReadyTimeout", None), ("victim", "Preempted", "5c1e-preemptor")]
    assert log[1].message == PREEMPTED_MSG and log[1].cluster_queue == "tau-ws-train"
    rec.close()
    # migrating again is a no-op
    again = hdb.connect(path)
    assert hdb.schema_version(again) == 3 and again.execute("SELECT count(*) FROM evictions").fetchone()[0] == 2
    again.close()


def test_a_failed_migration_step_leaves_the_previous_version(tmp_path, monkeypatch):
    path = tmp_path / "h.sqlite3"
    v1_database(path)

    def broken(conn):
        conn.execute("ALTER TABLE evictions ADD COLUMN cohort TEXT")
        raise RuntimeError("disk full, say")

    monkeypatch.setattr(hdb, "MIGRATIONS", (hdb.MIGRATIONS[0], broken))
    with pytest.raises(RuntimeError):
        hdb.connect(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert "cohort" not in {r[1] for r in conn.execute("PRAGMA table_info(evictions)")}  # rolled back
    assert conn.execute("SELECT count(*) FROM evictions").fetchone()[0] == 2
    conn.close()


def test_a_database_from_a_newer_taudash_is_refused_for_writing_and_read_only_works(tmp_path):
    path = tmp_path / "h.sqlite3"
    Recorder(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {hdb.LATEST + 1}")
    conn.close()
    with pytest.raises(NewerSchema, match=r"newer taudash.*upgrade taudash"):
        Recorder(path)
    ro = hdb.connect(path, write=False)
    assert q.summary(ro)["schemaVersion"] == hdb.LATEST + 1
    assert q.preemption_log(ro, 0) == []
    with pytest.raises(sqlite3.OperationalError):  # read-only really is
        ro.execute("INSERT INTO meta VALUES ('k', 'v')")
    ro.close()
    assert hdb.schema_version(sqlite3.connect(path)) == hdb.LATEST + 1  # untouched


def test_a_missing_file_is_not_created_by_a_reader(tmp_path):
    with pytest.raises(hdb.HistoryError, match="no history recorded"):
        hdb.connect(tmp_path / "nope.sqlite3", write=False)
    assert not (tmp_path / "nope.sqlite3").exists()


def test_the_file_is_private_and_in_wal_mode(tmp_path):
    rec = Recorder.for_cluster(hdb.cluster_key("aks-prod", "https://x:443"), base=tmp_path)
    assert rec.path.parent == tmp_path / "history"
    assert rec.path.name.startswith("aks-prod-") and rec.path.suffix == ".sqlite3"
    assert (rec.path.stat().st_mode & 0o777) == 0o600
    assert rec.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert rec.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    rec.close()
    assert hdb.cluster_key("aks-prod", "https://x:443") != hdb.cluster_key("aks-prod", "https://y:443")
    assert hdb.cluster_key("a/b c", "s").startswith("a_b_c-")


WRITER = textwrap.dedent(
    """
    import sys
    from taudash.engine.history import Recorder, Retention
    from taudash.engine.history.recorder import Eviction, Observation

    path, series = sys.argv[1], int(sys.argv[2])
    # short retention so roll-ups and deletions run between the writes too
    rec = Recorder(path, interval=10, retention=Retention(raw_seconds=600, rollup_chunk=300),
                   maintenance_every=30)
    ts = (rec._last_sample or 1_000_000) + 10
    while True:
        samples = {("queue", f"cq{i}", "", "", "pending"): float(ts % 97 + i) for i in range(series)}
        ev = Eviction(f"uid-{ts}", float(ts), "ns", f"wl-{ts}", "cq0", None, None, "Preempted", "m")
        rec.write(Observation(now=float(ts), samples=samples, evictions=[ev]))
        print(int(ts), flush=True)  # committed
        rec.maintain_if_due(float(ts))
        ts += 10
    """
)


def test_kill_9_while_recording_keeps_the_file_consistent_and_every_committed_batch(tmp_path):
    path = tmp_path / "h.sqlite3"
    series = 40
    rng = random.Random(11)
    committed: list[int] = []
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(series)],
                                stdout=subprocess.PIPE, text=True)
        target = len(committed) + rng.randint(5, 60)
        for line in proc.stdout:
            committed.append(int(line))
            if len(committed) >= target:
                break
        time.sleep(rng.uniform(0, 0.05))  # somewhere in the middle of a later write
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL

        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # every batch reported committed is there, whole: its eviction, and its samples unless rolled up
        have = {r[0] for r in conn.execute("SELECT at FROM evictions")}
        assert {float(t) for t in committed} <= have
        raw_min = conn.execute("SELECT min(ts) FROM samples").fetchone()[0]
        for ts, n in conn.execute("SELECT ts, count(*) FROM samples GROUP BY ts"):
            assert n == series, f"a partial batch at {ts}"
        assert conn.execute("SELECT max(ts) FROM samples").fetchone()[0] >= committed[-1]
        rolled = conn.execute("SELECT count(*) FROM rollups").fetchone()[0]
        assert raw_min is not None and (raw_min <= committed[0] or rolled > 0)
        conn.close()
    assert len(committed) >= 25 and len(set(committed)) == len(committed)  # restarts continue, never rewrite
    assert committed == sorted(committed)
