"""A write in flight when the process dies: `kill -9` between the request and its answer, at every write of
a hold and of a catalog change, once with the server having applied the write and once without.

The simulated API server holds the answer to the chosen write (after applying it, or before): the CLI is
killed exactly while it waits. Then `workflow status` says the write is in flight and unconfirmed (without
a cluster), or reads the object (with one) without writing anything; `workflow resume` re-reads it, records
it once as done or not done — in the journal and with an outcome line beside its audit intent — and goes on
without sending any write twice: the writes the simulator applied are exactly those of an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from tools.claims import LEASES, claim_record, claim_request
from tools.paths import REPO
from tools.workflows import EVAL, QUIET, TC, WL

from taudash.cli import main
from taudash.engine.actions import AuditLog
from taudash.engine.workflows import Journal
from taudash.engine.workflows.claims import CLAIM_MANAGER
from taudash.engine.workflows.ops import DONE, NOT_DONE, UNCONFIRMED, operation_records
from taudash.sim.apiserver import WRITE_VERBS
from taudash.sim.errors import ApiError
from taudash.sim.server import SimServer

CQ = "clusterqueues.kueue.x-k8s.io"
SPEED = 10  # simulated seconds per second: waits end in moments, and no demo job finishes during a run
RESOURCE = {"ClusterQueue": CQ, "Workload": WL, "TauCluster": TC}
# Writes of an uninterrupted run on the demo cluster (checked against a real run below): the hold sets
# tau-ws-eval's stopPolicy and deactivates its 3 Workloads; the catalog change also patches the TauCluster,
# restores the queue and reactivates the three.
WRITES = {"hold": 4, "catalog": 9}


class AnswerGate:
    """Holds the server's answer to the n-th real (not dry-run) write until released: after applying the
    write (`applied`), or before it (then the write is never applied). The client waits meanwhile."""

    def __init__(self, sim: SimServer, n: int, applied: bool) -> None:
        self.n, self.applied, self.seen = n, applied, 0
        self.reached, self.release = asyncio.Event(), asyncio.Event()
        self.held: tuple[str, str] | None = None
        self._dispatch = sim.api._dispatch
        sim.api._dispatch = self.dispatch  # the one hook into the request path; nothing else changes

    async def dispatch(self, request, target, verb):
        q = request.rel_url.query
        claim = target.resource.qualified == LEASES or q.get("fieldManager") == CLAIM_MANAGER  # not a step's write
        if verb not in WRITE_VERBS or "dryRun" in q or claim:
            return await self._dispatch(request, target, verb)
        self.seen += 1
        try:
            if self.seen != self.n:
                return await self._dispatch(request, target, verb)
            self.held = (verb, request.path)
            answer = await self._dispatch(request, target, verb) if self.applied else None
        except ApiError:
            # Refused (a conflict with the simulated controller's own update, on a busy machine): nothing was
            # applied and the client sends it again; the retry is the run's write, so the count skips this one.
            self.seen -= 1
            raise
        self.reached.set()
        await self.release.wait()
        if answer is None:
            raise ApiError("the server went away before applying this write", code=503)
        return answer


def applied_writes(sim: SimServer) -> Counter:
    """The steps' writes the simulator applied (the run's claims on its targets left out)."""
    return Counter((r.verb, r.path) for r in sim.api.requests
                   if r.verb in WRITE_VERBS and not r.dry_run and 0 < r.status < 400 and not claim_request(r))


async def cli(env: dict, *args: str, within: float = 120) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "taudash.cli", *args, env=env, cwd=REPO,
                                                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), within)
    return proc.returncode or 0, out.decode(), err.decode()


def catalog_file(sim: SimServer, directory: Path) -> str:
    profiles = copy.deepcopy(sim.db.get(TC, "cluster")["spec"]["workloadProfiles"])
    next(p for p in profiles if p["name"] == EVAL)["placement"] = "same-host"
    path = directory / "catalog.yaml"
    path.write_text(yaml.safe_dump(profiles))
    return str(path)


def start_args(kind: str, sim: SimServer, directory: Path) -> list[str]:
    if kind == "hold":
        return ["workflow", "start", "hold", "--cq", "tau-ws-eval"]
    return ["workflow", "start", "catalog", "--catalog", catalog_file(sim, directory)]


def end_state(sim: SimServer) -> dict:
    inactive = sorted((w["metadata"]["namespace"], w["metadata"]["name"]) for w in sim.db.list(WL, "eval")
                      if not w["spec"].get("active", True))
    return {"stopPolicy": sim.db.get(CQ, "tau-ws-eval")["spec"].get("stopPolicy", "None"), "inactive": inactive,
            "catalog": sim.db.get(TC, "cluster")["spec"]["workloadProfiles"]}


async def killed_at(gate: AnswerGate, env: dict, args: list[str]) -> None:
    """Run `taudash ARGS --yes` and SIGKILL it while the server holds the answer to the gated write."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taudash.cli", *args, "--yes", "--poll", "0.1", env=env, cwd=REPO,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    reached = asyncio.ensure_future(gate.reached.wait())
    ended = asyncio.ensure_future(proc.wait())
    try:
        await asyncio.wait([reached, ended], timeout=120, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
        reached.cancel()
    gate.release.set()
    if not gate.reached.is_set():  # say why, rather than a timeout: the run made fewer writes than counted
        err = (await proc.stderr.read()).decode() if proc.stderr else ""
        raise AssertionError(f"write {gate.n} never came ({gate.seen} seen); taudash ended {proc.returncode}:\n{err}")


def env_of(tmp: Path, sim: SimServer) -> dict:
    keep = {k: v for k, v in os.environ.items() if k not in ("TAUDASH_READ_ONLY", "TAUDASH_CONFIG")}
    return {**keep, "TAUDASH_STATE_DIR": str(tmp / "state"), "XDG_CONFIG_HOME": str(tmp / "xdg"),
            "KUBECONFIG": str(sim.kubeconfig), "PYTHONPATH": str(REPO)}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict:
    """Each kind run once without a kill: the writes the simulator applied and the end state."""
    async def run(kind: str) -> dict:
        tmp = tmp_path_factory.mktemp(f"baseline-{kind}")
        async with SimServer(simulate=True, speed=SPEED, scenario=QUIET) as sim:
            code, _, err = await cli(env_of(tmp, sim), *start_args(kind, sim, tmp), "--yes", "--poll", "0.1")
            assert code == 0, err
            return {"writes": applied_writes(sim), "end": end_state(sim)}

    return {kind: asyncio.run(run(kind)) for kind in WRITES}


def test_the_baseline_runs_make_the_writes_this_module_kills_at(uninterrupted):
    for kind, n in WRITES.items():
        assert sum(uninterrupted[kind]["writes"].values()) == n, (kind, uninterrupted[kind]["writes"])


CASES = [pytest.param(kind, n, applied, id=f"{kind}-write{n}-{'applied' if applied else 'not-applied'}")
         for kind, total in WRITES.items() for n in range(1, total + 1) for applied in (True, False)]


async def in_process(monkeypatch, capsys, env: dict, *args: str) -> tuple[int, str]:
    """`taudash ARGS` in this process (status, and the resume after the kill): its exit code and stdout."""
    for key in ("TAUDASH_STATE_DIR", "XDG_CONFIG_HOME", "KUBECONFIG"):
        monkeypatch.setenv(key, env[key])
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(args))
    return code, capsys.readouterr().out


@pytest.mark.parametrize(("kind", "n", "applied"), CASES)
async def test_kill_9_between_a_write_and_its_answer_then_resume_records_it_once(tmp_path, monkeypatch, capsys,
                                                                                 uninterrupted, kind, n, applied):
    async with SimServer(simulate=True, speed=SPEED, scenario=QUIET) as sim:
        env = env_of(tmp_path, sim)
        gate = AnswerGate(sim, n, applied)
        await killed_at(gate, env, start_args(kind, sim, tmp_path))
        (path,) = (tmp_path / "state" / "workflows").glob("*.jsonl")
        wid = path.stem
        [flying] = [r for r in operation_records(Journal.open(str(path))) if r.state == UNCONFIRMED]
        assert gate.held is not None and gate.held[1].endswith(f"/{flying.name}"), (gate.held, flying.ref)

        # status without a cluster: in flight, unconfirmed; never "Planned" for what ran
        before = path.read_bytes()
        code, out = await in_process(monkeypatch, capsys, env, "workflow", "status", wid, "-o", "json")
        doc = json.loads(out)
        assert code == 0 and doc["inFlight"] == 1
        [op] = [o for s in doc["steps"] for o in s["operations"] if o["state"] == UNCONFIRMED]
        assert op["name"] == flying.name and "answer never journaled" in op["note"]
        step = next(s for s in doc["steps"] if s["id"] == flying.step)
        assert step["state"] != "Planned"
        # status given the cluster: reads the object, writes nothing (not to the cluster, not to the journal)
        writes_before = sum(sim.api.writes.values())
        code, out = await in_process(monkeypatch, capsys, env, "workflow", "status", wid, "-o", "json",
                                     "--kubeconfig", str(sim.kubeconfig))
        doc = json.loads(out)
        assert code == 0 and doc["inFlight"] == 0
        [op] = [o for s in doc["steps"] for o in s["operations"] if o.get("live")]
        assert op["name"] == flying.name and op["state"] == (DONE if applied else NOT_DONE), op
        assert sum(sim.api.writes.values()) == writes_before and path.read_bytes() == before

        # resumed as a new process would, in this one: the kill above is what needs a process of its own
        code, out = await in_process(monkeypatch, capsys, env, "workflow", "resume", wid, "--yes", "--poll", "0.1")
        assert code == 0, out
        journal = Journal.open(str(path))
        assert journal.state == "Completed"
        records = operation_records(journal)
        # every write sent is recorded once, as done or not done; the killed one by re-reading it
        assert not [r for r in records if r.state == UNCONFIRMED]
        [again] = [r for r in records if r.reconciled]
        assert (again.step, again.key) == (flying.step, flying.key)
        assert again.state == (DONE if applied else NOT_DONE)
        sent = [r for r in journal.records if r["event"] == "executing"]
        closed = [r for r in journal.records if r["event"] == "executed" and "op" in r["data"]
                  and not r["data"].get("skipped")]
        assert len(sent) == len(closed)
        done = Counter((r.step, r.key) for r in records if r.state == DONE)
        assert max(done.values()) == 1, done
        # the audit log: an intent for every write sent, and one outcome beside each (the killed one reconciled)
        audit = [a for a in AuditLog(tmp_path / "state" / "audit.log").read_all() if not claim_record(a)]
        intents = [a for a in audit if a["result"] == "intent"]
        outcomes = Counter(a["request"] for a in audit if a.get("request") and a["result"] != "intent")
        # a write refused with 409 (the object changed under it: the simulated controllers write Workloads too)
        # is re-read and sent again as a new attempt with its own intent; a 409 to the server dry-run before it
        # sent nothing, so it has no intent of its own
        conflicts = sum(1 for a in audit if a["result"] == "conflict" and not a.get("dry_run"))
        assert len(intents) - conflicts == len(sent)
        assert all(outcomes[a["request"]] == 1 for a in intents), [a for a in intents if outcomes[a["request"]] != 1]
        [late] = [a for a in audit if a.get("reconciled")]
        assert late["name"] == flying.name and late["result"] == ("ok" if applied else "not-applied")
        # no write twice: every write the simulator applied is one the journal records done, once, and the run
        # ends where an uninterrupted one does
        applied = Counter((r.resource, r.namespace, r.name) for r in sim.api.requests
                          if r.verb in WRITE_VERBS and not r.dry_run and 0 < r.status < 400 and not claim_request(r))
        assert applied == Counter((RESOURCE[r.kind], r.namespace, r.name) for r in records if r.state == DONE)
        assert applied_writes(sim) == uninterrupted[kind]["writes"]
        assert end_state(sim) == uninterrupted[kind]["end"]


async def test_a_write_in_flight_is_unconfirmed_until_read_and_never_planned(tmp_path):
    """The status of a run killed mid-write, without resuming: the table says so in words."""
    async with SimServer(simulate=True, speed=SPEED, scenario=QUIET) as sim:
        env = env_of(tmp_path, sim)
        gate = AnswerGate(sim, 2, applied=True)  # the first deactivation
        await killed_at(gate, env, ["workflow", "start", "hold", "--cq", "tau-ws-eval"])
        (path,) = (tmp_path / "state" / "workflows").glob("*.jsonl")
        _, out, _ = await cli(env, "workflow", "status", path.stem)
        lines = out.splitlines()
        assert any(ln.strip().startswith("✓ 1 Stop admission (HoldAndDrain)  [Done]") for ln in lines), out
        assert any("2 Deactivate pending Workloads" in ln and "[Partial]" in ln for ln in lines), out
        assert any(ln.strip().startswith("? ~ Workload eval/") and "in flight, unconfirmed" in ln for ln in lines), out
        assert "[Planned]" not in out
        # what it leaves: the queue on HoldAndDrain (the in-flight deactivation counts as made until read)
        assert "ClusterQueue tau-ws-eval is on stopPolicy HoldAndDrain (it was None before the run)" in out
        assert f"continue it: taudash workflow resume {path.stem}" in out
        _, out, _ = await cli(env, "workflow", "status", path.stem, "--kubeconfig", str(sim.kubeconfig))
        assert ("in flight, unconfirmed" not in out
                and "done (applied: read from the cluster now" in " ".join(out.split()))
