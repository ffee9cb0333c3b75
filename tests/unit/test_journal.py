import json
import os

import pytest

from taudash.engine.workflows.journal import Journal, JournalError


def test_round_trip_and_private_mode(tmp_path):
    j = Journal.create("abc123", "hold", {"cqs": ["a"]}, "prod", directory=tmp_path)
    j.append("planned", "hold", {"signature": ["patch:ClusterQueue a"]})
    j.append("confirmed", "hold", {})
    j.append("executed", "hold", {"result": {"changed": True}})
    j.append("executed-all", "hold", {})
    assert oct(os.stat(j.path).st_mode & 0o777) == "0o600"
    again = Journal.open("abc123", directory=tmp_path)
    assert (again.id, again.kind, again.params, again.header["context"]) == ("abc123", "hold", {"cqs": ["a"]}, "prod")
    rec = again.steps()["hold"]
    assert rec.confirmed and rec.executed_done and not rec.verified and len(rec.executed) == 1
    assert again.state == "InProgress"


def test_torn_last_record_is_ignored_and_cleaned(tmp_path):
    j = Journal.create("t1", "hold", {}, None, directory=tmp_path)
    j.append("planned", "hold", {})
    with open(j.path, "ab") as fh:
        fh.write(b'{"seq": 2, "event": "confi')  # kill -9 mid-write
    again = Journal.open("t1", directory=tmp_path)
    assert again.torn_tail and [r["event"] for r in again.records] == ["created", "planned"]
    again.append("confirmed", "hold", {})
    lines = again.path.read_text().splitlines()
    assert [json.loads(x)["event"] for x in lines] == ["created", "planned", "confirmed"]


def test_corruption_in_the_middle_is_an_error(tmp_path):
    j = Journal.create("t2", "hold", {}, None, directory=tmp_path)
    j.append("planned", "hold", {})
    text = j.path.read_text().splitlines()
    j.path.write_text(text[0] + "\nnot json\n" + text[1] + "\n")
    with pytest.raises(JournalError, match="corrupt journal record"):
        Journal.open("t2", directory=tmp_path)


def test_states(tmp_path):
    j = Journal.create("t3", "hold", {}, None, directory=tmp_path)
    j.append("failed", "hold", {"error": "boom"})
    assert j.state == "Failed" and j.steps()["hold"].failed == "boom"
    j.append("resumed", None, {})
    assert j.state == "InProgress"
    j.append("completed", None, {})
    assert j.state == "Completed"


def test_unknown_and_duplicate(tmp_path):
    with pytest.raises(JournalError, match="no workflow"):
        Journal.open("nope", directory=tmp_path)
    Journal.create("dup", "hold", {}, None, directory=tmp_path)
    with pytest.raises(JournalError, match="already exists"):
        Journal.create("dup", "hold", {}, None, directory=tmp_path)
    (tmp_path / "x.jsonl").write_text('{"event": "other"}\n')
    with pytest.raises(JournalError, match="not a taudash workflow journal"):
        Journal.open(str(tmp_path / "x.jsonl"))
