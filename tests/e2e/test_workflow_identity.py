"""Journals bound to a cluster identity, workflows that always end, plans that see their own writes.

Two simulated clusters with the same context name stand in for `prod` here and `prod` elsewhere.
Waits are driven by an injected clock/sleep (or the simulated world), never by wall time.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections import Counter

import pytest
from tools.claims import claim_request

from taudash.cli import parse_args
from taudash.commands import workflow as wfcli
from taudash.engine.actions import Actions
from taudash.engine.identity import ClusterIdentity, resume_refusal
from taudash.engine.store import Store
from taudash.engine.workflows import Journal, Runner, artifacts_dir, build, new_id, summaries
from taudash.engine.workflows.base import RETRY, STOP, WAIT_ANYWAY, Context, Plan, Progress, Step, Workflow
from taudash.engine.workflows.journal import TERMINAL
from taudash.engine.workflows.runner import version_reached
from taudash.errors import UsageError
from taudash.live import LiveCluster
from taudash.screens.workflow.journals import JournalIndex
from taudash.sim.controllers.scenario import Knobs, Scenario
from taudash.sim.server import SimServer
from taudash.sim.world import World

CQ = "clusterqueues.kueue.x-k8s.io"
QUIET = Scenario(knobs=Knobs(arrivals_per_hour=0, node_flaps_per_hour=0, cordons_per_hour=0))
A = ClusterIdentity("https://10.0.0.1:6443", "uid-a")
B = ClusterIdentity("https://10.0.0.2:6443", "uid-b")


pytestmark = pytest.mark.usefixtures("state_dir")


def writes(sim: SimServer) -> list[tuple[str, str]]:
    """Every write request of the workflows' steps the server received (applied or not, dry-run or not;
    the runs' claims on their targets left out: tests/tools/claims.py)."""
    return [(r.verb, r.path) for r in sim.api.requests
            if r.verb in ("create", "update", "patch", "delete") and not claim_request(r)]


# --- identity rules -----------------------------------------------------------------------------


def test_identity_is_recorded_in_the_journal_header(tmp_path):
    j = Journal.create("id0001", "hold", {"cqs": ["a"]}, "prod", directory=tmp_path, cluster=A)
    again = Journal.open("id0001", directory=tmp_path)
    assert again.header["cluster"] == {"server": A.server, "uid": "uid-a"}
    assert again.cluster == A and again.header["context"] == "prod"
    fallback = ClusterIdentity(A.server, None, "kube-system namespace not readable (HTTP 403)")
    k = Journal.create("id0002", "hold", {}, "prod", directory=tmp_path, cluster=fallback)
    assert Journal.open(str(k.path)).header["cluster"]["note"].startswith("kube-system namespace not readable")
    assert j.cluster is not None


def test_resume_refusal_rules():
    bound = {"id": "w1", "context": "prod", "cluster": A.to_dict()}
    assert resume_refusal(bound, "prod", A) is None
    # the same cluster reached through another URL: the UID decides
    assert resume_refusal(bound, "other-name", ClusterIdentity("https://lb.example:443", "uid-a")) is None
    why = resume_refusal(bound, "prod", B)
    assert why is not None and "uid-a" in why and "uid-b" in why and "nothing was written" in why
    # no UID on one side: only the server URL is left to compare
    url_only = ClusterIdentity(A.server, None, "HTTP 403")
    assert resume_refusal(bound, "prod", url_only) is None
    assert resume_refusal({"id": "w1", "context": "prod", "cluster": url_only.to_dict()}, "prod", B) is not None
    # journaled before identities: context AND server must match; without a server it is refused
    old = {"id": "w0", "context": "prod"}
    assert "before cluster identities" in (resume_refusal(old, "prod", A) or "")
    assert resume_refusal({**old, "server": A.server}, "prod", A) is None
    assert resume_refusal({**old, "server": A.server}, "dev", A) is not None
    # an unknown identity here is never enough
    assert resume_refusal(bound, "prod", None) is not None


def test_version_reached():
    assert version_reached("12", "10") and version_reached("10", "10") and not version_reached("9", "10")
    assert version_reached("opaque-b", "opaque-b")
    assert version_reached("opaque-c", "opaque-b", before="opaque-a")  # moved on from the pre-write version
    assert not version_reached("opaque-a", "opaque-b", before="opaque-a")


async def test_the_simulator_gives_each_run_its_own_cluster_uid():
    seen = []
    for _ in range(2):
        async with SimServer() as sim, LiveCluster(None, str(sim.kubeconfig)) as live:
            assert live.identity.uid == sim.db.get("namespaces", "kube-system")["metadata"]["uid"]
            seen.append(live.identity)
    assert seen[0].uid != seen[1].uid


async def test_an_unreadable_kube_system_falls_back_to_the_server_url_and_says_why():
    async with SimServer() as sim:
        sim.faults.forbid("namespaces")
        async with LiveCluster(None, str(sim.kubeconfig)) as live:
            ident = live.identity
        assert ident.uid is None and ident.server == sim.url and "403" in ident.note
        assert "server URL only" in ident.describe()
        journal = Journal.create(new_id(), "hold", {"cqs": ["a"]}, "taudash-sim", cluster=ident)
        assert journal.header["cluster"] == {"server": sim.url, "uid": None, "note": ident.note}
        # matched on the URL alone: the same server resumes, another one does not
        assert resume_refusal(journal.header, "taudash-sim", ClusterIdentity(sim.url, "any-uid")) is None
        assert resume_refusal(journal.header, "taudash-sim", A) is not None


async def test_resume_on_another_cluster_with_the_same_context_name_is_refused_and_writes_nothing():
    params = {"cqs": ["tau-ws-eval"], "mode": "Hold", "cancel_pending": False}
    async with SimServer() as first, SimServer() as second:
        async with LiveCluster(None, str(first.kubeconfig)) as live:
            here = live.identity
            assert live.target.context == "taudash-sim"
            journal = Journal.create(new_id(), "hold", params, live.target.context, cluster=here)
            old = Journal.create(new_id(), "hold", params, live.target.context)  # journaled before identities
        args = parse_args(["workflow", "resume", journal.id, "--kubeconfig", str(second.kubeconfig),
                                          "--yes", "--poll", "0"])
        with pytest.raises(UsageError) as refused:
            await wfcli._run_live(args)
        assert refused.value.code == 2
        assert here.uid in str(refused.value) and "nothing was written here" in str(refused.value)
        assert writes(second) == []
        assert Journal.open(str(journal.path)).records[-1]["event"] == "created"  # nothing journaled either
        # an old journal on the very same cluster: no server was recorded, so it is refused too
        args = parse_args(["workflow", "resume", old.id, "--kubeconfig", str(first.kubeconfig),
                                          "--yes", "--poll", "0"])
        with pytest.raises(UsageError, match="before cluster identities"):
            await wfcli._run_live(args)
        assert writes(first) == []
        # on its own cluster it resumes and completes
        args = parse_args(["workflow", "resume", journal.id, "--kubeconfig", str(first.kubeconfig),
                                          "--yes", "--poll", "0"])
        assert await wfcli._run_live(args) == 0
        assert first.db.get(CQ, "tau-ws-eval")["spec"]["stopPolicy"] == "Hold"
        assert Journal.open(str(journal.path)).state == "Completed"


def test_dashboard_index_offers_only_this_clusters_journals(tmp_path):
    Journal.create("aaaaaa", "hold", {"cqs": ["a"]}, "prod", directory=tmp_path, cluster=A)
    Journal.create("bbbbbb", "hold", {"cqs": ["b"]}, "prod", directory=tmp_path, cluster=B)
    Journal.create("cccccc", "drain", {"workspace": "w"}, "prod", directory=tmp_path)  # no identity
    index = JournalIndex()
    entries = {e.id: e for e in index.load(tmp_path, A, "prod")}
    assert entries["aaaaaa"].elsewhere == ""
    assert "uid-b" in entries["bbbbbb"].elsewhere and entries["bbbbbb"].server == B.server
    assert "before cluster identities" in entries["cccccc"].elsewhere
    # the same directory seen from cluster B: the roles swap
    entries = {e.id: e for e in index.load(tmp_path, B, "prod")}
    assert entries["bbbbbb"].elsewhere == "" and entries["aaaaaa"].elsewhere


# --- every workflow ends --------------------------------------------------------------------------


class NeverDone(Step):
    id, title = "wait", "Wait for something that never happens"

    def __init__(self, done: bool = False) -> None:
        self.done = done

    def progress(self, ctx):
        return Progress(self.done, "done" if self.done else "still 3 left", remaining=0 if self.done else 3)


class FakeTime:
    def __init__(self) -> None:
        self.now = 1_000.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, dt: float) -> None:
        self.now += 60


async def yes(step, plan, op):
    return True


def ctx_for(journal, clock) -> Context:
    return Context(store=Store(), actions=Actions.read_only("test"), clock=clock, artifacts_dir=artifacts_dir(journal))


async def test_a_wait_past_its_deadline_fails_and_stays_resumable(tmp_path):
    t = FakeTime()
    journal = Journal.create("dead01", "hold", {}, "prod", directory=tmp_path, cluster=A)
    wf = Workflow("test", "test", [NeverDone()], {})
    runner = Runner(wf, ctx_for(journal, t.clock), journal, yes, poll=1, sleep=t.sleep, wait_timeout=300)
    assert await runner.run() == "Failed"
    error = journal.steps()["wait"].failed
    assert "gave up waiting" in error and "limit 300 s" in error and "can be resumed" in error
    assert "taudash workflow resume dead01" in error
    assert journal.state == "Failed" and not journal.terminal
    # the default deadline is minutes, not an hour
    assert NeverDone.wait_timeout <= 900
    # resumed once the condition holds: completes
    again = Journal.open(str(journal.path))
    wf = Workflow("test", "test", [NeverDone(done=True)], {})
    assert await Runner(wf, ctx_for(again, t.clock), again, yes, poll=1, sleep=t.sleep).run() == "Completed"
    assert again.steps()["wait"].failed is None  # the failure was taken up again and is over


def test_terminal_states(tmp_path):
    for event, state in (("completed", "Completed"), ("aborted", "Aborted"), ("rolled-back", "RolledBack"),
                         ("abandoned", "Abandoned")):
        j = Journal.create(f"t-{event}", "hold", {}, "prod", directory=tmp_path, cluster=A)
        j.append(event, None, {})
        j.append("resumed", None, {})  # a stray later record does not reopen it
        assert j.state == state and j.terminal and state in TERMINAL
    j = Journal.create("t-failed", "hold", {}, "prod", directory=tmp_path, cluster=A)
    j.append("failed", "hold", {"error": "x"})
    assert j.state == "Failed" and not j.terminal
    j.append("completed", None, {})
    j.append("rolled-back", None, {"by": "r1"})
    assert j.state == "RolledBack"  # a rollback ends even a completed run


def test_resume_of_a_finished_run_says_its_state_without_connecting(tmp_path, capsys):
    done = Journal.create(new_id(), "hold", {"cqs": ["a"]}, "prod", cluster=A)
    done.append("completed", None, {})
    rolled = Journal.create(new_id(), "catalog", {"cqs": ["a"]}, "prod", cluster=A)
    rolled.append("rolled-back", None, {"by": "x"})
    missing = str(tmp_path / "no-kubeconfig")  # connecting would fail: proves no connection is made
    args = parse_args(["workflow", "resume", done.id, "--kubeconfig", missing, "--yes"])
    assert wfcli.run(args) == 0
    assert "already completed" in capsys.readouterr().err
    args = parse_args(["workflow", "resume", rolled.id, "--kubeconfig", missing, "--yes"])
    with pytest.raises(UsageError, match="is RolledBack") as refused:
        wfcli.run(args)
    assert refused.value.code == 2


async def test_a_completed_rollback_marks_its_source_rolled_back(tmp_path):
    t = FakeTime()
    source = Journal.create("cat001", "catalog", {"cqs": ["a"]}, "prod", directory=tmp_path, cluster=A)
    source.append("planned", "hold", {})  # died mid-way: InProgress
    rb = Journal.create("rb0001", "rollback", {"from": "cat001"}, "prod", directory=tmp_path, cluster=A)
    wf = Workflow("rollback", "Rollback", [NeverDone(done=True)], {"from": "cat001"})
    assert await Runner(wf, ctx_for(rb, t.clock), rb, yes, poll=1, sleep=t.sleep).run() == "Completed"
    assert Journal.open(str(source.path)).state == "RolledBack"
    # a rollback that did not complete leaves the source as it was
    other = Journal.create("cat002", "catalog", {"cqs": ["a"]}, "prod", directory=tmp_path, cluster=A)
    rb2 = Journal.create("rb0002", "rollback", {"from": "cat002"}, "prod", directory=tmp_path, cluster=A)
    wf = Workflow("rollback", "Rollback", [NeverDone()], {"from": "cat002"})
    assert await Runner(wf, ctx_for(rb2, t.clock), rb2, yes, poll=1, sleep=t.sleep, wait_timeout=60).run() == "Failed"
    assert Journal.open(str(other.path)).state == "InProgress"


# --- the CLI's side -----------------------------------------------------------------------------------


def test_ctrl_c_prints_how_to_resume():
    err = io.StringIO()
    assert wfcli.interrupted("abc123", "prod", None, err=err) == 130
    assert err.getvalue().strip() == ("taudash: interrupted; the workflow is paused; resume with: "
                                      "taudash workflow resume abc123 --context prod")
    err = io.StringIO()
    assert wfcli.interrupted(None, None, err=err) == 130
    assert "nothing was written" in err.getvalue()


def test_ctrl_c_during_a_run_exits_130_with_the_hint(monkeypatch, capsys):
    async def interrupted_run(args, running):
        running.update(id="feed01", context="prod")
        raise KeyboardInterrupt

    monkeypatch.setattr(wfcli, "_run_live", interrupted_run)
    args = parse_args(["workflow", "start", "drain", "--workspace", "w", "--yes"])
    assert wfcli.run(args) == 130
    assert "resume with: taudash workflow resume feed01 --context prod" in capsys.readouterr().err


async def test_stuck_question_in_the_cli():
    plan = Plan([], ["blocked"], question="the drain cannot clear", choices=(RETRY, WAIT_ANYWAY, STOP))
    step = NeverDone()
    answers = iter(["maybe", "w"])
    confirm = wfcli._confirmer(True, "prod", ask=lambda _prompt: next(answers))
    assert await confirm(step, plan, None) == WAIT_ANYWAY
    assert await wfcli._confirmer(True, "prod", ask=lambda _p: "r")(step, plan, None) == RETRY
    assert await wfcli._confirmer(False, "prod")(step, plan, None) == STOP  # --yes never waits it out


def test_progress_is_timestamped_and_printed_only_when_it_changes():
    from datetime import datetime

    from taudash.engine.workflows.base import RunnerEvent

    err = io.StringIO()
    on_event = wfcli._printer(now=lambda: datetime(2026, 1, 2, 9, 5, 7), err=err)
    for msg in ("3 left", "3 left", "3 left", "2 left", "2 left"):
        on_event(RunnerEvent("progress", "s", msg, {"done": False}))
    assert err.getvalue().splitlines() == ["09:05:07  … 3 left", "09:05:07  … 2 left"]


def started_at(journal: Journal, at: float) -> None:
    """Rewrite the journal as if it had been created at `at` (epoch seconds)."""
    journal.records[0]["at"] = at
    journal.path.write_text("".join(json.dumps(r) + "\n" for r in journal.records))


def test_list_is_sorted_by_start_with_target_and_cluster(capsys):
    late = Journal.create("late01", "drain", {"workspace": "eval"}, "prod", cluster=A)
    late.append("planned", "blockers", {})
    started_at(late, 2_000_000_000.0)
    early = Journal.create("early1", "hold", {"cqs": ["tau-ws-train"], "mode": "Hold"}, "dev", cluster=B)
    early.append("planned", "hold", {})
    started_at(early, 1_000_000_000.0)  # created second, started first
    rows = summaries()
    assert [r["id"] for r in rows] == ["early1", "late01"]
    assert rows[0]["target"] == "tau-ws-train (Hold)" and rows[1]["target"] == "workspace eval"
    assert rows[0]["cluster"] == {"context": "dev", "server": B.server, "uid": "uid-b"}
    args = parse_args(["workflow", "list", "-o", "json"])
    assert wfcli.run(args) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["early1", "late01"]
    args = parse_args(["workflow", "list"])
    assert wfcli.run(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("early1") and f"dev @ {B.server}" in lines[0] and "tau-ws-train (Hold)" in lines[0]
    assert lines[1].startswith("late01") and "workspace eval" in lines[1]


# --- against the simulated world -----------------------------------------------------------------------


class World2:
    def __init__(self, sim, world, live):
        self.sim, self.world, self.live = sim, world, live
        self.asked: list[tuple[str, str | None]] = []

    async def sleep(self, _dt):
        self.world.step(30)
        await asyncio.sleep(0.02)

    async def run(self, kind, params, confirm, wait_timeout=None):
        journal = Journal.create(new_id(), kind, params, self.live.target.context, cluster=self.live.identity)
        ctx = Context(store=self.live.store, actions=self.live.actions, clock=self.world.clock.now,
                      artifacts_dir=artifacts_dir(journal))
        runner = Runner(build(kind, params), ctx, journal, confirm, poll=0.0, sleep=self.sleep,
                        wait_timeout=wait_timeout)
        return journal, await runner.run()


@pytest.fixture
async def w():
    async with SimServer() as sim:
        world = World.for_server(sim, QUIET)
        world.step(1)
        async with LiveCluster(None, str(sim.kubeconfig)) as live:
            for _ in range(3):
                world.step(5)
            await asyncio.sleep(0.1)
            yield World2(sim, world, live)


async def test_a_hold_proposes_each_workload_exactly_once(w):
    confirmations = []

    async def confirm(step, plan, op):
        confirmations.append((step.id, plan.signature()))
        return True

    journal, state = await w.run("hold", {"cqs": ["tau-ws-train"], "mode": "HoldAndDrain"}, confirm)
    assert state == "Completed", journal.records[-3:]
    proposed = Counter(op["name"] for r in journal.records if r["event"] == "planned" and r["step"] == "drain"
                       for op in r["data"]["operations"] if op["kind"] == "Workload")
    assert proposed, "the demo has pending work in train"
    assert [name for name, n in proposed.items() if n > 1] == []
    asked = Counter(ref for step, sig in confirmations if step == "drain" for ref in sig)
    assert all(n == 1 for n in asked.values()), asked
    assert not any(r["event"] == "warning" for r in journal.records)  # the watch showed every write in time


async def test_a_drain_whose_blockers_were_skipped_says_so_and_stops_under_yes(w):
    async def skip_deletions(step, plan, op):
        if plan.question:
            return True  # a yes-only callback (like --yes) cannot choose: the run stops
        return op is None

    journal, state = await w.run("drain", {"workspace": "eval"}, skip_deletions)
    assert state == "Failed"
    error = journal.steps()["clear"].failed
    assert "cannot clear while the skipped blocker(s) remain" in error
    assert "RayService eval/llm" in error and "Deployment eval/web-ui" in error and "can be resumed" in error
    assert [r["data"]["answer"] for r in journal.records if r["event"] == "stuck"] == [STOP]
    assert writes(w.sim) == [] and not journal.terminal


async def test_a_stuck_drain_retried_deletes_the_blockers_and_completes(w):
    seen = []

    async def skip_then_retry(step, plan, op):
        if plan.question:
            seen.append(plan.question)
            return RETRY
        return op is None or len(seen) > 0  # skip every deletion until asked, then confirm them

    journal, state = await w.run("drain", {"workspace": "eval"}, skip_then_retry)
    assert state == "Completed", journal.records[-3:]
    assert len(seen) == 1 and "RayService eval/llm" in seen[0]
    assert w.sim.db.get("rayservices.ray.io", "llm", "eval") is None


async def test_waiting_anyway_still_ends_at_the_deadline(w):
    async def skip_and_wait(step, plan, op):
        return WAIT_ANYWAY if plan.question else op is None

    journal, state = await w.run("drain", {"workspace": "eval"}, skip_and_wait, wait_timeout=600)
    assert state == "Failed"
    assert "gave up waiting" in journal.steps()["clear"].failed
    assert [r["data"]["answer"] for r in journal.records if r["event"] == "stuck"] == [WAIT_ANYWAY]  # asked once


async def test_one_confirmation_covers_the_workloads_holdanddrain_sends_back_to_pending(w):
    """The drain step's first plan names the admitted Workloads HoldAndDrain is evicting; as they come back
    pending, the later rounds deactivate them without asking again. Anything outside that list still asks."""
    asked = []

    async def confirm(step, plan, op):
        asked.append((step.id, plan.signature(), list(plan.covers)))
        return True

    journal, state = await w.run("hold", {"cqs": ["tau-ws-train"], "mode": "HoldAndDrain"}, confirm)
    assert state == "Completed", journal.records[-3:]
    drain_asks = [(sig, covers) for step, sig, covers in asked if step == "drain"]
    rounds = [r["data"] for r in journal.records if r["event"] == "confirmed" and r["step"] == "drain"]
    covered_rounds = [r for r in rounds if r.get("covered")]
    assert covered_rounds, "evicted Workloads came back pending and were deactivated in later rounds"
    approved = {ref for sig, covers in drain_asks for ref in (*sig, *covers)}
    for r in covered_rounds:  # a round that did not ask only touched what an earlier question named
        assert set(r["signature"]) <= approved
    assert len(drain_asks) < len(rounds)  # fewer questions than rounds of writes
    first_sig, first_covers = drain_asks[0]
    assert first_covers and not set(first_covers) & set(first_sig)  # evicting ≠ pending now: both named
