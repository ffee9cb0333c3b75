"""AuditLog.reconciled: the outcome of a write whose answer never came, found by re-reading the object, is
recorded once under its intent's request id; intents with a real answer, of other objects or from before
the write was sent are left alone; a rotation between the intent and the outcome loses nothing."""

from __future__ import annotations

from taudash.engine.actions import AuditLog


def intent(request: str, name: str, at: float, **extra) -> dict:
    return {"at": at, "who": "alice", "user": "alice@example", "context": "prod", "verb": "patch",
            "kind": "Workload", "namespace": "train", "name": name, "result": "intent", "request": request,
            "patch": {"spec": {"active": False}}, "reason": "hold abc123: drain", **extra}


def test_an_unanswered_intent_gets_one_outcome_with_its_writer(tmp_path):
    log = AuditLog(tmp_path / "audit.log")
    log.record(intent("r1", "a", 10.0))
    assert log.reconciled("patch", "Workload", "train", "a", True, "applied: re-read", since=9.0, at=20.0) == 1
    assert log.reconciled("patch", "Workload", "train", "a", True, "applied: re-read", since=9.0, at=21.0) == 0
    [_, outcome] = log.read()
    assert (outcome["request"], outcome["result"], outcome["reconciled"], outcome["at"]) == ("r1", "ok", True, 20.0)
    assert (outcome["who"], outcome["user"], outcome["reason"]) == ("alice", "alice@example", "hold abc123: drain")
    assert "patch" not in outcome


def test_answered_other_and_older_intents_are_left_alone_and_no_answer_is_not_an_answer(tmp_path):
    log = AuditLog(tmp_path / "audit.log")
    log.record(intent("old", "a", 1.0))  # before this write was sent: another attempt's business
    log.record(intent("done", "a", 10.0))
    log.record({**intent("done", "a", 10.5), "result": "ok"})
    log.record(intent("other", "b", 11.0))
    log.record(intent("cut", "a", 12.0))
    log.record({**intent("cut", "a", 12.5), "result": "failed", "note": "no answer (CancelledError: ): may be applied"})
    assert log.reconciled("patch", "Workload", "train", "a", False, "not applied: re-read", since=5.0, at=30.0) == 1
    [closed] = [r for r in log.read() if r.get("reconciled")]
    assert (closed["request"], closed["result"]) == ("cut", "not-applied")


def test_a_rotation_between_the_intent_and_its_outcome_loses_nothing(tmp_path):
    log = AuditLog(tmp_path / "audit.log", max_bytes=600, keep=3)
    log.record(intent("r1", "a", 10.0))
    for i in range(6):  # other writes push the intent into an older generation
        log.record({**intent(f"x{i}", "z", 11.0 + i), "result": "ok"})
    assert all(r.get("request") != "r1" for r in log.read())
    assert log.reconciled("patch", "Workload", "train", "a", True, "applied", since=9.0, at=40.0) == 1
    assert [r["request"] for r in log.read_all() if r.get("reconciled")] == ["r1"]
