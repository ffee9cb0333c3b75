"""The audit log rotates at its size cap and keeps a fixed number of generations; it records what a write
changed (a JSON merge patch), not the objects (docs/reliability.md, "The audit log")."""

from __future__ import annotations

import os
import stat

from taudash.engine.actions import AUDIT_KEEP, AUDIT_MAX_BYTES, AuditLog, merge_diff


def record(i: int) -> dict:
    return {"result": "ok", "request": f"r{i:04d}", "pad": "x" * 80}


def test_the_log_rotates_before_a_record_would_pass_the_cap_and_keeps_its_generations(tmp_path):
    log = AuditLog(tmp_path / "audit.log", max_bytes=1000, keep=3)
    for i in range(60):  # ~120 bytes a record: several rotations
        log.record(record(i))
    files = log.generations()
    assert [p.name for p in files] == ["audit.log.3", "audit.log.2", "audit.log.1", "audit.log"]
    assert all(p.stat().st_size <= 1000 for p in files)
    assert not (tmp_path / "audit.log.4").exists()  # the oldest generation is dropped
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)
    kept = [r["request"] for r in log.read_all()]
    assert kept == sorted(kept) and kept[-1] == "r0059"  # oldest first, nothing reordered
    assert len(kept) == len(set(kept)) and len(kept) < 60  # the first records went with the dropped file
    assert [r["request"] for r in log.read()] == kept[-len(log.read()):]  # read(): the current file


def test_a_record_is_never_split_across_generations_and_a_torn_tail_stays_skipped(tmp_path):
    log = AuditLog(tmp_path / "audit.log", max_bytes=400, keep=2)
    log.record(record(1))
    with open(log.path, "ab") as fh:  # a kill -9 mid-record
        fh.write(b'{"result":"ok","requ')
    for i in range(2, 8):
        log.record(record(i))
    assert [r["request"] for r in log.read_all()][-3:] == ["r0005", "r0006", "r0007"]
    for p in log.generations():
        lines = p.read_bytes().split(b"\n")
        assert lines[-1] == b""  # every file ends on a whole record


def test_defaults_are_a_megabyte_and_five_generations(tmp_path):
    log = AuditLog(tmp_path / "audit.log")
    assert (log.max_bytes, log.keep) == (AUDIT_MAX_BYTES, AUDIT_KEEP) == (1024 * 1024, 5)
    log.record(record(0))
    assert log.generations() == [log.path] and os.path.getsize(log.path) < 200


def test_keep_zero_truncates_instead_of_rotating(tmp_path):
    log = AuditLog(tmp_path / "audit.log", max_bytes=300, keep=0)
    for i in range(10):
        log.record(record(i))
    assert log.generations() == [log.path] and log.read()[-1]["request"] == "r0009"


def test_the_diff_is_a_merge_patch_without_the_servers_bookkeeping():
    before = {"metadata": {"name": "q", "resourceVersion": "7", "generation": 3, "managedFields": [{"m": 1}],
                           "annotations": {"keep": "1", "gone": "2"}},
              "spec": {"stopPolicy": "None", "cohort": "c", "groups": [1, 2]}, "status": {"pending": 4}}
    after = {"metadata": {"name": "q", "resourceVersion": "9", "generation": 4, "managedFields": [{"m": 2}],
                          "annotations": {"keep": "1", "new": "3"}},
             "spec": {"stopPolicy": "HoldAndDrain", "cohort": "c", "groups": [1, 2, 3]}, "status": {"pending": 4}}
    assert merge_diff(before, after) == {
        "metadata": {"annotations": {"gone": None, "new": "3"}},
        "spec": {"stopPolicy": "HoldAndDrain", "groups": [1, 2, 3]},
    }
    assert merge_diff(after, after) == {}
    created = merge_diff({}, {"metadata": {"name": "l", "resourceVersion": "1"}, "spec": {"holderIdentity": "a"}})
    assert created == {"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}}
