"""Rehearsals (docs/rehearsal.md): a workflow run on a simulated fork predicts the real run, and writes nothing.

The "real" cluster is a simulated one too (the demo, seeded, quiet); the real run steps its world in
the runner's sleep like tests/e2e/test_workflows_e2e.py. The fork is taken from the live store before the
real world has moved, so both start from the same objects with the same seed.
"""

from __future__ import annotations

import asyncio
import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from taudash.cli import parse_args
from taudash.commands import rehearse as rhcli
from taudash.commands import workflow as wfcli
from taudash.engine.workflows import Journal, Runner, artifacts_dir, build, new_id
from taudash.engine.workflows.base import Context
from taudash.engine.workflows.catalog import affected_queues
from taudash.engine.workflows.journal import deactivated_by
from taudash.engine.workflows.params import drain_params, hold_params, release_params, rollback_params
from taudash.errors import UsageError
from taudash.live import LiveCluster
from taudash.rehearse import RehearsalError, fork_store, load, rehearse, render_table, save
from taudash.rehearse.report import _anon, _watched, planned_evictions, written_objects
from taudash.sim.controllers.scenario import Knobs, Scenario
from taudash.sim.server import SimServer
from taudash.sim.world import World

QUIET = Scenario(knobs=Knobs(arrivals_per_hour=0, node_flaps_per_hour=0, cordons_per_hour=0))
STEP = 5.0  # the rehearsal's default simulated seconds per poll; the real run below steps the same
WATCHED = ("ClusterQueue", "Workload", "TauCluster", "LocalQueue", "RayService", "Deployment")


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))


class Real:
    """The cluster taudash is connected to: a seeded simulated one, stepped only by the real run."""

    def __init__(self, sim, world, live):
        self.sim, self.world, self.live = sim, world, live
        self.step = STEP

    def ctx(self, journal=None):
        return Context(store=self.live.store, actions=self.live.actions, clock=self.world.clock.now,
                       artifacts_dir=artifacts_dir(journal) if journal else None)

    async def caught_up(self):
        """Until the live store shows every object of the watched kinds at the server's version."""
        for _ in range(500):
            if all(self._same(k) for k in WATCHED):
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the live store did not catch up with the simulated cluster")

    def _same(self, kind):
        db = {(o["metadata"].get("namespace") or "", o["metadata"]["name"]): o["metadata"]["resourceVersion"]
              for o in self.sim.db.list(kind)}
        st = {(o.namespace or "", o.name): o.metadata.resource_version for o in self.live.store.list(kind)}
        return db == st

    async def sleep(self, _dt):
        self.world.step(self.step)
        await self.caught_up()

    async def run(self, kind, params, rehearsal=None, wait_timeout=None):
        journal = Journal.create(new_id(), kind, params, self.live.target.context, cluster=self.live.identity,
                                 rehearsal=rehearsal)

        async def yes(step, plan, op):
            return "wait" if plan.question else True

        runner = Runner(build(kind, params), self.ctx(journal), journal, yes, poll=self.step, sleep=self.sleep,
                        wait_timeout=wait_timeout)
        return journal, await runner.run()

    async def rehearse(self, kind, params, **kw):
        await self.caught_up()
        fork = fork_store(self.live.store, self.world.clock.now(), self.live.target.context, self.live.identity)
        before = dict(self.sim.api.writes)
        report = await rehearse(kind, params, fork, seed=self.sim.options.seed, step=self.step, **kw)
        assert dict(self.sim.api.writes) == before, "a rehearsal wrote to the real cluster"
        return report


@pytest.fixture
async def real():
    async with SimServer(seed=3) as sim:
        world = World.for_server(sim, QUIET)
        world.step(0)  # settled at its own instant, as a rehearsal settles its fork: an identical start
        async with LiveCluster(None, str(sim.kubeconfig)) as live:
            yield Real(sim, world, live)


def assert_predicted(real: Real, report: dict, journal: Journal, state: str) -> None:
    """The rehearsal's prediction equals the real run: outcome, objects written and their end state,
    deactivations, evictions."""
    res = report["result"]
    assert res["workflowState"] == state, json.dumps(journal.records[-4:])[:3000]
    predicted = {(c["kind"], c["namespace"], c["name"]) for c in res["changes"]}
    actual = {(k, ns, name) for _verb, k, ns, name in written_objects(journal)}
    assert predicted == actual and predicted
    for c in res["changes"]:
        obj = real.sim.db.get(c["kind"], c["name"], c["namespace"])
        if c["verb"] == "delete":
            assert c["deleted"] == (obj is None or bool(obj["metadata"].get("deletionTimestamp"))), c
            continue
        # (an empty diff: written and put back, e.g. a queue held, then restored to its policy)
        have = _watched(obj)
        for d in c["diff"]:
            assert _anon(have.get(d["path"]), journal.id) == d["after"], (c["kind"], c["name"], d)
    assert {(r["namespace"], r["name"]) for r in res["deactivated"]} == set(deactivated_by(journal))
    assert {s["id"]: s["evictions"] for s in res["steps"] if s["evictions"]} == planned_evictions(journal)


async def test_hold_rehearsal_predicts_the_real_run_and_writes_nothing(real):
    params = hold_params(real.ctx(), ["tau-ws-train"])
    report = await real.rehearse("hold", params)
    res = report["result"]
    assert real.sim.api.writes == {} and res["writesToCluster"] == 0
    assert sum(res["forkWrites"].values()) > 0  # the writes went to the fork
    assert res["state"] == "Completed" and res["stalled"] is None
    assert res["evicted"] and all(r["queue"] == "tau-ws-train" and r["team"] == "research" for r in res["evicted"])
    assert res["gpusFreed"] == sum(r["gpus"] for r in res["evicted"] + res["released"]) > 0
    assert res["evictedByQueue"][0]["workloads"] == len(res["evicted"])
    assert res["deactivated"]
    hold = next(s for s in res["steps"] if s["id"] == "hold")
    assert hold["evictions"] == {"tau-ws-train": len(res["evicted"])}
    assert all(s["simulatedSeconds"] is not None for s in res["steps"])
    assert any(f["rule"] == "CQ-STOPPED" and f["name"] == "tau-ws-train" for f in res["findings"]["appeared"])
    cq = next(c for c in res["changes"] if c["kind"] == "ClusterQueue")
    assert cq["diff"] == [{"path": "spec.stopPolicy", "before": "None", "after": "HoldAndDrain"}]
    wl = next(c for c in res["changes"] if c["kind"] == "Workload")
    assert {"path": "spec.active", "before": True, "after": False} in wl["diff"]
    assert res["timing"]["speedFactor"] and res["timing"]["simulatedSeconds"] > 0

    journal, state = await real.run("hold", params)
    assert_predicted(real, report, journal, state)


async def test_release_rehearsal_predicts_the_reactivations(real):
    params = hold_params(real.ctx(), ["tau-ws-train"])
    hold, state = await real.run("hold", params)
    assert state == "Completed" and deactivated_by(hold)
    rel = release_params(reactivate_from=hold.id, ctx=real.ctx())
    report = await real.rehearse("release", rel)
    res = report["result"]
    assert res["state"] == "Completed"
    reactivated = {(c["namespace"], c["name"]) for c in res["changes"] if c["kind"] == "Workload"}
    assert reactivated == set(deactivated_by(hold))
    wl = next(c for c in res["changes"] if c["kind"] == "Workload")
    assert {"path": "spec.active", "before": False, "after": True} in wl["diff"]
    journal, state = await real.run("release", rel)
    assert_predicted(real, report, journal, state)


async def test_catalog_change_and_rollback_rehearsals_predict_the_real_runs(real):
    old = real.sim.db.get("clusters.tau.azure.com", "cluster")["spec"]["workloadProfiles"]
    new = [p for p in old if p["name"] != "azure.research.remote.burst"]
    why = affected_queues(real.ctx(), new, [])
    params = {"catalog": new, "cqs": list(why), "why": why}
    report = await real.rehearse("catalog", params)
    assert report["result"]["state"] == "Completed", report["result"]["steps"]
    tc = next(c for c in report["result"]["changes"] if c["kind"] == "TauCluster")
    assert any(d["path"] == "spec.workloadProfiles" and d["after"] == new for d in tc["diff"])
    shown = render_table(report)  # what `--rehearse` prints: a queue held, then restored, is not a blank diff
    for q in params["cqs"]:
        (line,) = [x for x in shown if x.startswith(f"  ~ ClusterQueue {q}:")]
        assert line == f"  ~ ClusterQueue {q}: written, ends as it was", line
    stopped = [(r["rule"], r["name"]) for r in report["result"]["findings"]["appeared"] if r["rule"] == "CQ-INACTIVE"]
    assert not stopped, stopped  # the queues the last step put back are not predicted to stay stopped
    journal, state = await real.run("catalog", params)
    assert_predicted(real, report, journal, state)

    rb = rollback_params(real.ctx(), journal.id)
    report = await real.rehearse("rollback", rb)
    assert report["result"]["state"] == "Completed", report["result"]["steps"]
    assert Journal.open(str(journal.path)).state == "Completed"  # the rehearsal did not mark it RolledBack
    rb_journal, state = await real.run("rollback", rb)
    assert_predicted(real, report, rb_journal, state)
    assert Journal.open(str(journal.path)).state == "RolledBack"


async def test_drain_rehearsal_predicts_the_deletions(real):
    # The drain also waits for eval's running Workloads to finish: their remaining run times are drawn
    # (not known from the cluster), so both sides get a deadline beyond the longest draw (90 min).
    real.step = 30.0
    params = drain_params(real.ctx(), "eval")
    report = await real.rehearse("drain", params, wait_timeout=6000)
    res = report["result"]
    assert res["state"] == "Completed", res["steps"]
    deleted = {(c["kind"], c["namespace"], c["name"]) for c in res["changes"] if c["verb"] == "delete"}
    assert {("RayService", "eval", "llm"), ("Deployment", "eval", "web-ui")} <= deleted
    assert any(f["rule"].startswith("DRAIN") for f in res["findings"]["cleared"]), res["findings"]
    journal, state = await real.run("drain", params, wait_timeout=6000)
    assert_predicted(real, report, journal, state)


async def test_a_wait_that_outlasts_its_deadline_is_predicted_as_a_stall(real):
    # Hold (not HoldAndDrain) lets admitted work run to completion: minutes, not the 60 s allowed.
    params = hold_params(real.ctx(), ["tau-ws-train"], mode="Hold")
    report = await real.rehearse("hold", params, wait_timeout=60)
    res = report["result"]
    assert res["state"] == "Stalled" and res["stalled"]["step"] == "drain"
    assert res["stalled"]["deadlineSeconds"] == 60 and "admitted" in res["stalled"]["waitingFor"]
    assert res["evicted"] == []  # Hold evicts nothing
    drain = next(s for s in res["steps"] if s["id"] == "drain")
    assert drain["stalled"] and drain["state"] == "Failed" and drain["simulatedSeconds"] >= 60
    lines = "\n".join(render_table(report))
    assert "stalls at step drain" in lines
    journal, state = await real.run("hold", params, wait_timeout=60)
    assert state == "Failed" and "gave up waiting" in journal.steps()["drain"].failed


def _admitted_in(fork, namespace):
    for o in fork.objects:
        conds = {c["type"]: c["status"] for c in (o.get("status") or {}).get("conditions") or []}
        if o["kind"] == "Workload" and o["metadata"]["namespace"] == namespace and conds.get("Admitted") == "True" \
                and conds.get("Finished") != "True":
            return o
    raise AssertionError(f"no admitted Workload in {namespace}")


async def test_workloads_of_owners_the_simulator_does_not_model_are_evicted_too(real):
    # plain-pod Workloads (owned by a Pod) are not driven by the simulated Kueue; the rehearsal's
    # stand-in evicts them as Kueue would, and leaves those of queues that are not held alone
    params = hold_params(real.ctx(), ["tau-ws-train"])
    await real.caught_up()
    fork = fork_store(real.live.store, real.world.clock.now(), "c", real.live.identity)
    held, other = _admitted_in(fork, "train"), _admitted_in(fork, "eval")
    for i, wl in enumerate((held, other)):
        wl["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": f"p-{i}",
                                              "uid": f"pod-uid-{i}", "controller": True}]
    report = await rehearse("hold", params, fork)
    res = report["result"]
    assert res["state"] == "Completed", res["steps"]
    evicted = {(r["namespace"], r["name"]) for r in res["evicted"]}
    assert (held["metadata"]["namespace"], held["metadata"]["name"]) in evicted
    assert (other["metadata"]["namespace"], other["metadata"]["name"]) not in evicted
    assert res["standInEvictions"] >= 1


async def test_unreadable_kinds_carry_over_and_fail_closed(real):
    real.live.store.set_access("Workload", real.live.store.access("Workload").state.__class__("Forbidden"))
    params = hold_params(real.ctx(), ["tau-ws-train"])
    fork = fork_store(real.live.store, real.world.clock.now(), "c", real.live.identity)
    assert fork.access == {"Workload": "Forbidden"} and "Workload" in fork.partial
    report = await rehearse("hold", params, fork)
    res = report["result"]
    assert res["state"] == "Failed" and real.sim.api.writes == {}
    drain = next(s for s in res["steps"] if s["id"] == "drain")
    assert "Workload data is Forbidden" in drain["error"]


# --- the report contract, storage and the CLI ---------------------------------------------------------


REQUIRED = {
    "metadata": ("id", "createdAt", "context", "cluster"),
    "spec": ("workflow", "title", "params", "waitTimeout", "stepSeconds", "seed"),
    "fork": ("objects", "kinds", "partialKinds", "access", "capturedAt"),
    "result": ("state", "workflowState", "stalled", "writesToCluster", "forkWrites", "timing", "predictedSeconds",
               "steps", "evicted", "evictedByQueue", "released", "deactivated", "deactivatedByQueue", "gpusFreed",
               "findings", "changes"),
}


async def test_report_contract_storage_and_cli(real, capsys):
    params = hold_params(real.ctx(), ["tau-ws-eval"], cancel_pending=False)
    report = await real.rehearse("hold", params)
    assert report["apiVersion"] == "taudash/v1" and report["kind"] == "RehearsalReport"
    for part, keys in REQUIRED.items():
        assert set(keys) <= set(report[part]), (part, set(keys) - set(report[part]))
    assert report["notModelled"] and "docs/simulator.md" in report["fidelity"]
    assert set(report["result"]["timing"]) >= {"simulatedSeconds", "runWallSeconds", "speedFactor", "stepSeconds"}
    for s in report["result"]["steps"]:
        assert set(s) >= {"id", "title", "state", "simulatedSeconds", "deadlineSeconds", "stalled", "evictions",
                          "deactivated"}
    json.dumps(report)  # plain JSON
    path = save(report)
    assert path.stat().st_mode & 0o777 == 0o600
    rid = report["metadata"]["id"]
    assert load(rid) == json.loads(json.dumps(report))
    assert rhcli.run(parse_args(["rehearse", "report", rid, "-o", "json"])) == 0
    assert json.loads(capsys.readouterr().out)["metadata"]["id"] == rid
    assert rhcli.run(parse_args(["rehearse", "report", rid])) == 0
    out = capsys.readouterr().out
    assert "nothing was written to the real cluster" in out and "not modelled" in out
    assert rhcli.run(parse_args(["rehearse", "list", "-o", "json"])) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [rid]
    # fail closed: unknown ids, path tricks and foreign documents are refused
    for bad in ("nope", "../x", ""):
        with pytest.raises(RehearsalError):
            load(bad)
    path.write_text(json.dumps({"apiVersion": "taudash/v1", "kind": "WorkflowStatus"}))
    with pytest.raises(RehearsalError, match="not a taudash/v1 RehearsalReport"):
        load(rid)
    with pytest.raises(UsageError):
        rhcli.run(parse_args(["rehearse", "report", rid]))


async def test_workflow_status_shows_prediction_beside_reality(real, capsys):
    params = hold_params(real.ctx(), ["tau-ws-train"])
    report = await real.rehearse("hold", params)
    save(report)
    rid = report["metadata"]["id"]
    journal, state = await real.run("hold", params, rehearsal=rid)
    assert Journal.open(str(journal.path)).header["rehearsal"] == rid
    assert wfcli.run(parse_args(["workflow", "status", journal.id, "-o", "json"])) == 0
    doc = json.loads(capsys.readouterr().out)["rehearsal"]
    assert doc["rehearsal"] == rid and doc["predictedResult"] == "Completed" and doc["actualState"] == state
    rows = {s["id"]: s for s in doc["steps"]}
    assert rows["hold"]["predictedEvictions"] == rows["hold"]["actualEvictions"] > 0
    assert rows["drain"]["predictedDeactivations"] == rows["drain"]["actualDeactivations"] > 0
    assert all(s["predictedSeconds"] is not None and s["actualSeconds"] is not None for s in doc["steps"])
    assert doc["deactivations"]["onlyPredicted"] == doc["deactivations"]["onlyActual"] == []
    assert doc["objects"]["predicted"] == doc["objects"]["actual"]
    assert wfcli.run(parse_args(["workflow", "status", journal.id])) == 0
    table = capsys.readouterr().out
    assert f"rehearsal {rid}: predicted Completed, actual Completed" in table
    assert "duration predicted / actual" in table
    # a journal whose rehearsal report is gone still shows its status, saying so
    (save(report).parent / f"{rid}.json").unlink()
    assert wfcli.run(parse_args(["workflow", "status", journal.id, "-o", "json"])) == 0
    assert "no rehearsal" in json.loads(capsys.readouterr().out)["rehearsal"]["error"]


async def test_cli_rehearse_then_after_rehearsal(real):
    kc = str(real.sim.kubeconfig)
    argv = ["taudash", "workflow", "start", "hold", "--cq", "tau-ws-eval", "--keep-pending", "--rehearse",
            "--kubeconfig", kc, "--read-only"]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert wfcli.run.__name__ == "run"
        code = await wfcli._run_live(parse_args(argv[1:]), {})
        # --read-only is honoured trivially: a rehearsal writes nothing to the cluster
    assert code == 0, err.getvalue()
    assert real.sim.api.writes == {}
    hint = next(line for line in err.getvalue().splitlines() if line.startswith("run it for real: "))
    command = hint.removeprefix("run it for real: ")
    assert "--rehearse" not in command and "--after-rehearsal" in command
    rid = command.split("--after-rehearsal ")[1].split()[0]
    assert load(rid)["spec"]["workflow"] == "hold"
    assert "predicted Completed" in out.getvalue()

    # the same operation with other parameters: refused before anything is journaled or written
    other = ["workflow", "start", "hold", "--cq", "tau-ws-train", "--after-rehearsal", rid, "--kubeconfig", kc,
             "--yes"]
    with pytest.raises(UsageError, match="other parameters"), redirect_stderr(io.StringIO()):
        await wfcli._run_live(parse_args(other), {})
    with pytest.raises(UsageError, match="exclude each other"), redirect_stderr(io.StringIO()):
        await wfcli._run_live(parse_args([*other, "--rehearse"]), {})
    assert real.sim.api.writes == {}

    # for real: the journal records the rehearsal it follows
    same = ["workflow", "start", "hold", "--cq", "tau-ws-eval", "--keep-pending", "--after-rehearsal", rid,
            "--kubeconfig", kc, "--yes", "--poll", "0.01"]
    real.sim.add_controller(_ticker(real.world))
    with redirect_stderr(io.StringIO()) as err2:
        assert await wfcli._run_live(parse_args(same), {}) == 0, err2.getvalue()
    journal = next(Journal.open(str(p)) for p in artifacts_dir_root().glob("*.jsonl"))
    assert journal.header["rehearsal"] == rid and journal.state == "Completed"
    assert real.sim.db.get("ClusterQueue", "tau-ws-eval")["spec"]["stopPolicy"] == "HoldAndDrain"


def artifacts_dir_root():
    from taudash.engine.workflows.journal import workflows_dir

    return workflows_dir()


def _ticker(world):
    async def tick(_sim):
        while True:
            world.step(STEP)
            await asyncio.sleep(0.02)

    return tick


async def test_on_a_terminal_the_rehearsal_asks_before_running_for_real(real):
    kc = str(real.sim.kubeconfig)
    argv = ["workflow", "start", "hold", "--cq", "tau-ws-eval", "--keep-pending", "--rehearse", "--kubeconfig", kc]
    calls = []

    async def for_real(args):
        calls.append((args.rehearse, args.after_rehearsal))
        return 0

    questions = []
    for answer, expected in (("n", []), ("y", [False])):
        calls.clear()
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            code = await rhcli.run_rehearsal(parse_args(argv), wfcli._params, run_for_real=for_real,
                                             ask=lambda q, a=answer: questions.append(q) or a, argv=["taudash", *argv],
                                             interactive=True)
        assert code == 0 and [c[0] for c in calls] == expected
        if calls:  # yes: the real run follows this rehearsal
            assert load(calls[0][1])["spec"]["params"]["cqs"] == ["tau-ws-eval"]
    assert questions == ["run it for real now? [y/N] "] * 2
    assert real.sim.api.writes == {}
