"""Two operators never undo each other (docs/workflows.md#claims): a workflow claims what it writes on the
cluster itself, so a second workflow over an overlapping target is refused from another state folder and
another identity — every pair of workflow kinds the registry lists, both ways — and a stale claim is taken
over only when named (`--take-over ID`, confirmed). Who did it is the identity the cluster authenticated."""

from __future__ import annotations

import asyncio
import copy
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from test_workflow_user_sessions import Terminal
from tools.paths import DEMO, REPO

from taudash.engine.actions import AuditLog
from taudash.engine.model.names import HELD_BY_ANNOTATION
from taudash.engine.workflows import Journal, Runner, build, new_id, registry, targets
from taudash.engine.workflows.base import Context
from taudash.engine.workflows.claims import ClaimRefused, micro_time, release_finished
from taudash.live import LiveCluster
from taudash.sim.server import SimServer

CQ = "clusterqueues.kueue.x-k8s.io"
TC = "clusters.tau.azure.com"
LEASES = "leases.coordination.k8s.io"
EVAL = "azure.research.eval.gpu"
HOST = socket.gethostname()

pytestmark = pytest.mark.usefixtures("state_dir")  # the in-process runs' audit log: never the real home


def holders(sim) -> dict[str, str]:
    """Claim target → holding workflow id, as the cluster stores them."""
    return {lease["metadata"]["annotations"]["taudash.io/claim-target"]: lease["spec"]["holderIdentity"]
            for lease in sim.db.list(LEASES)}


def marked(sim) -> dict[str, str]:
    """Objects carrying the held-by mark → the workflow id."""
    out = {}
    for res, kind in ((CQ, "ClusterQueue"), (TC, "TauCluster"), ("workspaces.tau.azure.com", "TauWorkspace")):
        for o in sim.db.list(res):
            if HELD_BY_ANNOTATION in (o["metadata"].get("annotations") or {}):
                out[f"{kind} {o['metadata']['name']}"] = o["metadata"]["annotations"][HELD_BY_ANNOTATION]
    return out


async def eventually(cond, what: str, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


# --- in-process: every pair of kinds, two operators, two journal folders --------------------------------------


class Operator:
    """One operator: their own identity (token and context) and their own journal folder."""

    def __init__(self, name: str, live: LiveCluster, folder: Path) -> None:
        self.name, self.live, self.folder = name, live, folder
        folder.mkdir(mode=0o700, parents=True)

    def ctx(self) -> Context:
        return Context(store=self.live.store, actions=self.live.actions)

    def params(self, kind: str, values: dict) -> dict:
        return registry.get(kind).make(self.ctx(), values, self.folder, registry.kinds())

    def journal(self, kind: str, params: dict) -> Journal:
        return Journal.create(new_id(), kind, params, self.live.target.context, self.folder, cluster=self.live.identity)

    def catalog_source(self, sim) -> str:
        """A catalog change of this operator's that exported the current TauCluster (what a rollback undoes)."""
        tc = sim.db.get(TC, "cluster")
        path = self.folder / "taucluster-gen1.yaml"
        path.write_text(yaml.safe_dump(tc))
        j = self.journal("catalog", {"catalog": tc["spec"]["workloadProfiles"], "cqs": ["tau-ws-eval"]})
        j.append("artifact", "export", {"name": "taucluster", "path": str(path), "generation": 1})
        j.append("failed", "apply", {"error": "stopped for the test"})
        return j.id


def kind_values(op: Operator, sim, tmp: Path) -> dict[str, dict]:
    """What an operator chooses for each registered kind, all about workspace eval's queue tau-ws-eval."""
    new = copy.deepcopy(sim.db.get(TC, "cluster")["spec"]["workloadProfiles"])
    next(p for p in new if p["name"] == EVAL)["placement"] = "same-host"  # affects tau-ws-eval only
    catalog = tmp / f"catalog-{op.name}.yaml"
    catalog.write_text(yaml.safe_dump(new))
    return {"hold": {"cq": ["tau-ws-eval"]}, "release": {"cq": ["tau-ws-eval"]},
            "catalog": {"catalog": str(catalog)}, "rollback": {"from_id": op.catalog_source(sim)},
            "drain": {"workspace": "eval"}}


async def blocked(op: Operator, kind: str, params: dict) -> tuple[Journal, asyncio.Task]:
    """A run of `kind` by `op`, stopped at its first confirmation (its claims held, nothing of its own written)."""
    journal = op.journal(kind, params)

    async def never(step, plan, o):
        await asyncio.Event().wait()

    task = asyncio.create_task(Runner(build(kind, params), op.ctx(), journal, never, poll=0.05).run())
    return journal, task


def planning(journal: Journal) -> bool:
    """The run is past taking its claims: its first step is planned (or it ended)."""
    return any(r["event"] in ("planned", "aborted") for r in journal.records)


async def stop(op: Operator, journal: Journal, task: asyncio.Task, sim) -> None:
    """Stop a blocked run from outside, as the dashboard's abort does (its claims stay: the runner did not see
    it finish), mark it Aborted, and give its claims back as such a host does (`release_finished`)."""
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert journal.id in holders(sim).values()  # stopped from outside, not finished: still held
    journal.append("aborted", None, {"by": "test"})
    want = {(t, h) for t, h in holders(sim).items() if h == journal.id}
    await eventually(lambda: {x for x in holders_of(op) if x[1] == journal.id} == want, "the watch")
    assert await release_finished(op.live.actions, op.live.store, journal, "tau-system") == []


def holders_of(op: Operator) -> set[tuple[str, str]]:
    return {(lease.metadata.annotations.get("taudash.io/claim-target", ""), lease.spec.holder_identity or "")
            for lease in op.live.store.list("Lease")}


async def test_every_overlapping_pair_of_workflow_kinds_is_refused_from_either_side(tmp_path, state_dir):
    async with SimServer(DEMO, users=("alice", "bob")) as sim:
        sim.db.patch_merge(CQ, "tau-ws-eval", {"spec": {"stopPolicy": "Hold"}})  # so a release has work to do
        async with LiveCluster(sim.context_of("alice"), str(sim.kubeconfig)) as a_live, \
                LiveCluster(sim.context_of("bob"), str(sim.kubeconfig)) as b_live:
            alice, bob = Operator("alice", a_live, tmp_path / "alice"), Operator("bob", b_live, tmp_path / "bob")
            values = {op.name: kind_values(op, sim, tmp_path) for op in (alice, bob)}
            params = {op.name: {k.name: op.params(k.name, values[op.name][k.name]) for k in registry.kinds()}
                      for op in (alice, bob)}
            kinds = registry.names()
            assert set(kinds) == {"hold", "release", "catalog", "rollback", "drain"}  # the table covers them all
            # The pair table, from the registry: which kinds write to a common object.
            overlap = {(a, b): bool(targets(a, params["alice"][a]) & targets(b, params["bob"][b]))
                       for a in kinds for b in kinds}
            queue_kinds = {"hold", "release", "catalog", "rollback"}
            assert {p for p, o in overlap.items() if o} == {(a, b) for a in queue_kinds for b in queue_kinds} | {
                ("drain", "drain")}
            for first, second in ((alice, bob), (bob, alice)):  # from either side
                for a in kinds:
                    for b in kinds:
                        held, task = await blocked(first, a, params[first.name][a])
                        want = {t: held.id for t in targets(a, params[first.name][a])}
                        await eventually(lambda j=held: planning(j), f"{a} past its claims")
                        assert holders(sim) == want and marked(sim) == want, a
                        other, second_task = await blocked(second, b, params[second.name][b])
                        if overlap[(a, b)]:
                            with pytest.raises(ClaimRefused) as refused:
                                await second_task
                            text = str(refused.value)
                            assert f"workflow {held.id} ({a}, {first.name} on {HOST}, since " in text, (a, b, text)
                            assert "which is running" in text and "nothing was written" in text
                            assert other.state == "Aborted" and len(other.records) == 2  # created, aborted
                            assert holders(sim) == want and marked(sim) == want, (a, b)  # nothing of the second
                        else:  # disjoint targets: both run side by side
                            both = want | {t: other.id for t in targets(b, other.params)}
                            await eventually(lambda j=other: planning(j), f"{b} beside {a}")
                            assert holders(sim) == both and marked(sim) == both, (a, b)
                            await stop(second, other, second_task, sim)
                        await stop(first, held, task, sim)
                        await eventually(lambda: holders(sim) == {} and marked(sim) == {}, "the claims given back")
    # every claim write is on record under the user the cluster authenticated, from this host
    records = AuditLog(state_dir / "audit.log").read_all()
    assert {r["who"] for r in records} == {"alice", "bob"}
    assert ({r["identity"]["source"] for r in records} == {"SelfSubjectReview"} and {r["host"] for r in records}
            == {HOST})


# --- separate processes: two operators, two state folders, one `sim serve`-like cluster -------------------------


@pytest.fixture(scope="module")
def cluster():
    """The demo cluster frozen, with operators alice and bob, served from its own event loop thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = SimServer(DEMO, users=("alice", "bob"))
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(60)
    server.loop = loop
    yield server
    asyncio.run_coroutine_threadsafe(server.stop(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def on_loop(sim, fn):
    """Run `fn()` on the simulator's own loop (its database is not thread-safe)."""
    async def call():
        return fn()
    return asyncio.run_coroutine_threadsafe(call(), sim.loop).result(30)


def env_of(sim, tmp_path: Path, who: str) -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ("TAUDASH_READ_ONLY", "TAUDASH_CONFIG")}
    return {**e, "TAUDASH_STATE_DIR": str(tmp_path / who), "XDG_CONFIG_HOME": str(tmp_path / f"{who}-xdg"),
            "KUBECONFIG": str(sim.kubeconfig), "PYTHONPATH": str(REPO)}


def taudash(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "taudash.cli", *args], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def journal_of(env: dict) -> Journal:
    (path,) = sorted((Path(env["TAUDASH_STATE_DIR"]) / "workflows").glob("*.jsonl"))
    return Journal.open(str(path))


def claims_seen_by(env: dict, who: str) -> list[dict]:
    done = taudash(env, "--context", f"taudash-sim-{who}", "status", "-o", "json")
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)["claims"]


def age_claim(sim, holder: str, minutes: int = 10) -> None:
    """The holder stopped renewing `minutes` ago (time passing, which a test cannot wait for)."""
    then = micro_time((datetime.now(UTC) - timedelta(minutes=minutes)).timestamp())

    def age():
        for lease in sim.db.list(LEASES):
            if lease["spec"]["holderIdentity"] == holder:
                sim.db.patch_merge(LEASES, lease["metadata"]["name"], {"spec": {"renewTime": then}},
                                   lease["metadata"]["namespace"])
    on_loop(sim, age)


def test_two_processes_of_two_operators_refuse_each_other_and_show_the_holder(cluster, tmp_path):
    alice, bob = env_of(cluster, tmp_path, "alice"), env_of(cluster, tmp_path, "bob")
    for me, them, queue in ((alice, bob, "tau-ws-vision"), (bob, alice, "tau-ws-train")):
        me_name, them_name = ("alice", "bob") if me is alice else ("bob", "alice")
        term = Terminal(me, "--context", f"taudash-sim-{me_name}", "workflow", "start", "hold", "--cq", queue,
                        "--mode", "Hold")
        try:
            term.wait_for("apply? [y/N]")
            first = journal_of(me)
            second = taudash(them, "--context", f"taudash-sim-{them_name}", "workflow", "start", "release",
                             "--cq", queue, "--yes")
            assert second.returncode == 2, second.stderr
            assert (f"ClusterQueue {queue} is claimed by workflow {first.id} (hold, {me_name} on {HOST}, since "
                    in second.stderr), second.stderr
            assert "which is running" in second.stderr and "nothing was written" in second.stderr
            assert not (Path(them["TAUDASH_STATE_DIR"]) / "workflows").exists() or not list(
                (Path(them["TAUDASH_STATE_DIR"]) / "workflows").glob("*.jsonl"))  # no journal for the refused run
            (claim,) = [c for c in claims_seen_by(them, them_name) if c["target"] == f"ClusterQueue {queue}"]
            assert (claim["holder"], claim["workflow"], claim["who"], claim["host"], claim["stale"]) == (
                first.id, "hold", me_name, HOST, False)
        finally:
            term.type("n")
            assert term.close() == 4  # declined: Paused, resumable — and so still claimed
        (kept,) = [c for c in claims_seen_by(them, them_name) if c["target"] == f"ClusterQueue {queue}"]
        assert kept["holder"] == first.id
        # ended for good on its cluster: the claim goes back
        ended = taudash(me, "--context", f"taudash-sim-{me_name}", "workflow", "abort", first.id, "--yes")
        assert ended.returncode == 0, ended.stderr
        assert [c for c in claims_seen_by(them, them_name) if c["target"] == f"ClusterQueue {queue}"] == []
        for state_dir in (me, them):  # cleaned for the next side
            for p in (Path(state_dir["TAUDASH_STATE_DIR"]) / "workflows").glob("*"):
                if p.is_file():
                    p.unlink()


def test_a_crashed_runs_stale_claim_is_taken_over_only_when_named_and_confirmed(cluster, tmp_path):
    alice, bob = env_of(cluster, tmp_path, "alice"), env_of(cluster, tmp_path, "bob")
    on_loop(cluster, lambda: cluster.db.patch_merge(CQ, "tau-ws-eval", {"spec": {"stopPolicy": "Hold"}}))
    # alice's release of tau-ws-eval dies at its first confirmation: its claim stays
    term = Terminal(alice, "--context", "taudash-sim-alice", "workflow", "start", "release", "--cq", "tau-ws-eval")
    term.wait_for("apply? [y/N]")
    crashed = journal_of(alice)
    term.proc.send_signal(signal.SIGKILL)
    term.close()
    assert holders(cluster) == {"ClusterQueue tau-ws-eval": crashed.id}
    bob_release = ("--context", "taudash-sim-bob", "workflow", "start", "release", "--cq", "tau-ws-eval", "--yes")
    # still renewed a moment ago: a take-over is refused even when named
    fresh = taudash(bob, *bob_release, "--take-over", crashed.id)
    assert fresh.returncode == 2 and "which is running" in fresh.stderr, fresh.stderr
    age_claim(cluster, crashed.id)
    (claim,) = claims_seen_by(bob, "bob")
    assert claim["stale"] is True and claim["holder"] == crashed.id
    status = json.loads(taudash(bob, "--context", "taudash-sim-bob", "status", "-o", "json").stdout)
    (finding,) = [f for f in status["findings"] if f["rule"] == "CLAIM-STALE"]
    assert f"--take-over {crashed.id}" in finding["hint"]
    # stale, but not named: refused, saying how
    refused = taudash(bob, *bob_release)
    assert refused.returncode == 2 and f"take its claim over explicitly with --take-over {crashed.id}" in refused.stderr
    wrong = taudash(bob, *bob_release, "--take-over", "000000")
    assert wrong.returncode == 2 and "workflow 000000 holds no claim" in wrong.stderr
    # named, but declined at the question: nothing taken
    asked = Terminal(bob, *bob_release[:-1], "--take-over", crashed.id)
    asked.wait_for(f"take over workflow {crashed.id}'s stale claim(s)? [y/N]")
    asked.type("n")
    assert asked.close() == 2 and holders(cluster) == {"ClusterQueue tau-ws-eval": crashed.id}
    # named and confirmed: bob's run takes it, this time crashing at its own first confirmation
    taking = Terminal(bob, *bob_release[:-1], "--take-over", crashed.id)
    taking.wait_for("[y/N]")
    taking.type("y")
    taking.wait_for("apply? [y/N]")
    taker = journal_of(bob)
    assert holders(cluster) == {"ClusterQueue tau-ws-eval": taker.id}
    taking.proc.send_signal(signal.SIGKILL)
    taking.close()
    # alice resumes hers: bob's claim (now stale) refuses it until she names it
    age_claim(cluster, taker.id)
    resume = ("--context", "taudash-sim-alice", "workflow", "resume", crashed.id, "--yes")
    again = taudash(alice, *resume)
    assert again.returncode == 2 and f"workflow {taker.id} (release, bob on {HOST}" in again.stderr, again.stderr
    done = taudash(alice, *resume, "--take-over", taker.id)
    assert done.returncode == 0, done.stderr
    assert f"workflow {crashed.id}: Completed" in done.stderr
    assert holders(cluster) == {} and marked(cluster) == {}  # a completed run gives its claims back
    assert on_loop(cluster, lambda: cluster.db.get(CQ, "tau-ws-eval"))["spec"]["stopPolicy"] == "None"
    # who did it: the audit logs name the users the cluster authenticated, and what changed
    bob_log = AuditLog(Path(bob["TAUDASH_STATE_DIR"]) / "audit.log").read_all()
    take = [r for r in bob_log if r["kind"] == "Lease" and r["result"] == "ok" and r["verb"] == "patch"]
    assert take and take[0]["who"] == "bob" and take[0]["identity"]["source"] == "SelfSubjectReview"
    assert take[0]["diff"]["spec"]["holderIdentity"] == taker.id
    assert take[0]["diff"]["metadata"]["annotations"]["taudash.io/claim-taken-from"] == crashed.id
    alice_log = AuditLog(Path(alice["TAUDASH_STATE_DIR"]) / "audit.log").read_all()
    assert {r["who"] for r in alice_log} == {"alice"} and all(r["host"] == HOST and r["osUser"] for r in alice_log)
    assert not [r for r in alice_log + bob_log if "before" in r or "after" in r]  # diffs, never whole objects


async def test_a_run_renews_its_claims_and_writes_nothing_once_another_took_them(tmp_path):
    async with SimServer(DEMO, users=("alice",)) as sim, \
            LiveCluster(sim.context_of("alice"), str(sim.kubeconfig)) as live:
        alice = Operator("alice", live, tmp_path / "alice")
        params = alice.params("hold", {"cq": ["tau-ws-train"]})
        journal = alice.journal("hold", params)
        go = asyncio.Event()

        async def confirm(step, plan, op):
            await go.wait()
            return True

        runner = Runner(build("hold", params), alice.ctx(), journal, confirm, poll=0.05)
        task = asyncio.create_task(runner.run())
        await eventually(lambda: planning(journal), "the claim")
        (lease,) = sim.db.list(LEASES)
        before = lease["spec"]["renewTime"]
        await asyncio.sleep(0.01)
        await runner._claims.renew()  # what the run does every RENEW_EVERY seconds
        (lease,) = sim.db.list(LEASES)
        assert lease["spec"]["renewTime"] > before and lease["spec"]["holderIdentity"] == journal.id
        # someone takes the claim while the run waits at its confirmation (a partition, a mistaken take-over)
        sim.db.patch_merge(LEASES, lease["metadata"]["name"], {"spec": {"holderIdentity": "zzzzzz"}}, "tau-system")
        await runner._claims.renew()
        assert "no longer holds its claim on ClusterQueue tau-ws-train" in runner._claims.lost
        go.set()
        assert await task == "Failed"
        assert "no longer holds its claim" in journal.steps()["hold"].failed
        assert sim.db.get(CQ, "tau-ws-train")["spec"].get("stopPolicy", "None") == "None"  # not written
        assert holders(sim) == {"ClusterQueue tau-ws-train": "zzzzzz"}  # and the other holder's claim untouched


def test_status_lists_each_claim_whole_with_its_holder(fixtures_dir):
    from rich.console import Console

    from taudash.engine.incremental import derive
    from taudash.engine.sources.snapshot import load_snapshot
    from taudash.report import render_table

    view = derive(load_snapshot(fixtures_dir / "claims.yaml").store, datetime(2026, 11, 30, 9, 30, tzinfo=UTC))
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(render_table(view))
    text = " ".join(console.export_text().split())
    assert ("⚑ ClusterQueue train-cq: workflow a1b2c3 (hold, alice@example.com on laptop-1), since 2026-11-30 "
            "09:10:00 UTC, renewed 2026-11-30 09:29:45 UTC PROFILES") in text  # renewed 15 s ago: not stale
    assert ("⚠ ClusterQueue eval-cq: workflow 0ld0ne (catalog, bob (kubeconfig user, not verified) on ops-2), since "
            "2026-11-30 06:30:00 UTC, renewed 2026-11-30 07:30:00 UTC — stale: its run stopped renewing it") in text
    assert "someone-elses" not in text  # another controller's Lease is never read
