import json
import os

import pytest

from taudash.engine.store import Store
from taudash.engine.workflows.base import Context, Operation, Plan, Progress, Step, Workflow
from taudash.engine.workflows.journal import Journal, JournalError
from taudash.engine.workflows.runner import Runner


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


class _NoWrites:
    """The write path for a runner test: records what it was asked to patch, changes nothing."""

    def __init__(self):
        self.patched = []

    async def patch(self, kind, name, namespace, planner, reason, subresource=None):
        from taudash.engine.actions import Result

        self.patched.append(f"{namespace}/{name}")
        return Result(False, "patch", kind, namespace, name, note="test: not sent")


class _Rounds(Step):
    """A step whose action is planned again while it waits: one round of Workloads per plan."""

    id = "drain"
    title = "deactivate in rounds"

    def __init__(self, rounds, covers):
        self.rounds, self.covers, self.planned = rounds, covers, 0

    async def plan(self, ctx):
        names = self.rounds[min(self.planned, len(self.rounds) - 1)]
        self.planned += 1
        ops = [Operation("patch", "Workload", "ns", n, f"deactivate {n}", patch={"spec": {"active": False}})
               for n in names]
        return Plan(ops, covers=[f"patch:Workload ns/{n}" for n in self.covers] if self.planned == 1 else [])

    def progress(self, ctx):
        return Progress(self.planned >= len(self.rounds), "waiting", replan=self.planned < len(self.rounds))


async def _run_rounds(tmp_path, rounds, covers):
    asked = []

    async def confirm(step, plan, op):
        asked.append(sorted(o.name for o in plan.operations))
        return True

    journal = Journal.create("r0", "hold", {}, "ctx", directory=tmp_path)
    actions = _NoWrites()
    ctx = Context(store=Store(), actions=actions)
    state = await Runner(Workflow("hold", "t", [_Rounds(rounds, covers)], {}), ctx, journal, confirm, poll=0).run()
    return state, asked, actions.patched


async def test_a_covered_replan_runs_without_asking_again(tmp_path):
    state, asked, patched = await _run_rounds(tmp_path, [["a"], ["b", "c"]], covers=["b", "c"])
    assert state == "Completed"
    assert asked == [["a"]]  # one question; the second round was named by it
    assert patched == ["ns/a", "ns/b", "ns/c"]


async def test_a_replan_outside_what_was_confirmed_asks_again(tmp_path):
    state, asked, patched = await _run_rounds(tmp_path, [["a"], ["b", "x"]], covers=["b"])
    assert state == "Completed"
    assert asked == [["a"], ["b", "x"]]  # x was never named: the operator is asked
    assert patched == ["ns/a", "ns/b", "ns/x"]


async def test_nothing_is_covered_without_a_confirmation(tmp_path):
    state, asked, _ = await _run_rounds(tmp_path, [[], ["b"]], covers=["b"])  # the first plan had no operations
    assert state == "Completed" and asked == [["b"]]
