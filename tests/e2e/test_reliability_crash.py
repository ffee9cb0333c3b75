"""Crash safety: `kill -9` of a running workflow at random moments (several seeds), then `resume`,
reaches the same end state with no write repeated, and the journal still lists every Workload the
hold deactivated (so a release can restore them all). A write the server applied just before the
process died, with no journal record yet, is recovered on resume. Exported files are replaced
atomically: a reader or a crash never sees half a file."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from tools.claims import claim_request
from tools.paths import DEMO, REPO

from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.workflows import Journal, Runner, artifacts_dir, build, new_id
from taudash.engine.workflows.base import Context, Crash
from taudash.engine.workflows.journal import deactivated_by
from taudash.live import LiveCluster
from taudash.sim.controllers.scenario import Knobs, Scenario
from taudash.sim.server import SimServer

CQ = "clusterqueues.kueue.x-k8s.io"
WL = "workloads.kueue.x-k8s.io"
QUIET = Scenario(knobs=Knobs(arrivals_per_hour=0, node_flaps_per_hour=0, cordons_per_hour=0))


def applied_writes(sim: SimServer) -> Counter:
    """Successful non-dry-run writes of the workflow's steps per (verb, path) the server received (the
    world's own controllers write in-process and are not in this log; the run's claims, renewed on each
    resume, are left out: tests/tools/claims.py)."""
    return Counter((r.verb, r.path) for r in sim.api.requests
                   if r.verb in ("create", "update", "patch", "delete") and not r.dry_run and 0 < r.status < 400
                   and not claim_request(r))


def inactive_train_workloads(sim: SimServer) -> set[tuple[str, str]]:
    return {("train", w["metadata"]["name"]) for w in sim.db.list(WL, "train") if not w["spec"].get("active", True)}


async def taudash(env: dict, *args: str, kill_when=None, within: float = 120) -> tuple[int, bool]:
    """Run the CLI; SIGKILL it as soon as `kill_when()` holds (polled every 5 ms). (returncode, killed)"""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "taudash.cli", *args, env=env, cwd=REPO,
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    deadline = time.monotonic() + within
    while proc.returncode is None and time.monotonic() < deadline:
        if kill_when is not None and kill_when():
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            return proc.returncode, True
        try:
            await asyncio.wait_for(proc.wait(), 0.005)
        except TimeoutError:
            pass
    if proc.returncode is None:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"taudash {' '.join(args)} did not finish in {within} s")
    return proc.returncode, False


def journal_lines(state: Path) -> int:
    files = list((state / "workflows").glob("*.jsonl")) if (state / "workflows").is_dir() else []
    return sum(len(f.read_bytes().split(b"\n")) - 1 for f in files)


@pytest.mark.parametrize("seed", [3, 11, 29])
async def test_kill_9_at_random_moments_then_resume(tmp_path, seed):
    rng = random.Random(seed)
    state = tmp_path / "state"
    env = {**os.environ, "TAUDASH_STATE_DIR": str(state), "PYTHONPATH": str(REPO)}
    async with SimServer(simulate=True, speed=60, seed=seed, scenario=QUIET) as sim:
        kc = str(sim.kubeconfig)
        inactive_before = inactive_train_workloads(sim)
        conn = ("--kubeconfig", kc, "--yes", "--poll", "0.1")
        kills = 0
        # the first kill lands at a random journal record (a step boundary or mid-step), plus a random
        # delay that can put it inside an HTTP call; the resume is killed once more on some seeds
        target = rng.randrange(2, 30)
        delay = rng.uniform(0, 0.15)
        seen: dict[str, float] = {}

        def at_record(n):
            def when():
                if journal_lines(state) >= n:
                    seen.setdefault(str(n), time.monotonic())
                    return time.monotonic() - seen[str(n)] >= delay
                return False
            return when

        code, killed = await taudash(env, "workflow", "start", "hold", "--cq", "tau-ws-train", *conn,
                                     kill_when=at_record(target))
        kills += killed
        (journal_file,) = (state / "workflows").glob("*.jsonl")
        wid = journal_file.stem
        if killed and rng.random() < 0.5:
            again = journal_lines(state) + rng.randrange(1, 8)
            code, killed = await taudash(env, "workflow", "resume", wid, *conn, kill_when=at_record(again))
            kills += killed
        if killed:
            code, _ = await taudash(env, "workflow", "resume", wid, *conn)
        assert code == 0
        assert kills >= 1
        journal = Journal.open(str(journal_file))
        assert journal.state == "Completed"
        # the same end state as an uninterrupted hold
        cq = sim.db.get(CQ, "tau-ws-train")
        assert cq["spec"]["stopPolicy"] == "HoldAndDrain"
        st = cq["status"]
        assert ((st.get("pendingWorkloads", 0), st.get("reservingWorkloads", 0), st.get("admittedWorkloads", 0))
                == (0, 0, 0))
        # no write applied twice
        writes = applied_writes(sim)
        assert writes and max(writes.values()) == 1, [w for w, n in writes.items() if n > 1]
        # every Workload the hold deactivated is in its journal: a release can bring them all back
        deactivated = inactive_train_workloads(sim) - inactive_before
        assert deactivated <= set(map(tuple,
                                      deactivated_by(journal))), deactivated - set(map(tuple, deactivated_by(journal)))


class DiesAfterTheWrite:
    """Actions whose process 'dies' right after the server applied a write, before the runner could
    journal it: the window a kill -9 can hit between the HTTP answer and the journal's fsync."""

    def __init__(self, actions, after: int) -> None:
        self.actions, self.after, self.n = actions, after, 0
        self.real_patch = actions.patch

    async def patch(self, *a, **k):
        result = await self.real_patch(*a, **k)
        self.n += 1
        if self.n == self.after:
            raise Crash("killed after the write, before the journal")
        return result


@pytest.mark.parametrize("after", [1, 2])
async def test_write_applied_but_not_journaled_is_recovered_on_resume(tmp_path, monkeypatch, after):
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))
    async with SimServer(simulate=True, speed=60, scenario=QUIET) as sim, \
            LiveCluster(None, str(sim.kubeconfig)) as live:
        inactive_before = inactive_train_workloads(sim)
        params = {"cqs": ["tau-ws-train"], "mode": "HoldAndDrain", "cancel_pending": True}
        journal = Journal.create(new_id(), "hold", params, live.target.context)
        dying = DiesAfterTheWrite(live.actions, after)
        monkeypatch.setattr(live.actions, "patch", dying.patch)

        async def confirm(*_):
            return True

        ctx = Context(store=live.store, actions=live.actions, artifacts_dir=artifacts_dir(journal))
        with pytest.raises(Crash):
            await Runner(build("hold", params), ctx, journal, confirm, poll=0.1).run()
        monkeypatch.setattr(live.actions, "patch", dying.real_patch)
        resumed = Journal.open(str(journal.path))  # what a new process reads
        ctx = Context(store=live.store, actions=live.actions, artifacts_dir=artifacts_dir(resumed))
        assert await Runner(build("hold", params), ctx, resumed, confirm, poll=0.1).run() == "Completed"
        writes = applied_writes(sim)
        assert max(writes.values()) == 1
        deactivated = inactive_train_workloads(sim) - inactive_before
        assert deactivated and deactivated <= set(map(tuple, deactivated_by(resumed)))


# --- atomic files -------------------------------------------------------------------------------------

WRITER = """
import sys
from taudash.engine.sources.export import export_snapshot
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.workflows.journal import Journal
store = load_snapshot(sys.argv[1]).store
print("ready", flush=True)
i = 0
while True:
    i += 1
    export_snapshot(store, sys.argv[2], "ctx", f"2026-11-30T09:00:{i % 60:02d}+00:00")
"""


@pytest.mark.parametrize("seed", [1, 2])
def test_export_killed_mid_write_leaves_a_whole_file(tmp_path, seed):
    """A process exporting in a loop is SIGKILLed at a random moment: the target is always a
    complete snapshot (the old one or the new one), never a prefix."""
    rng = random.Random(seed)
    target = tmp_path / "export.yaml"
    demo = DEMO
    expected = load_snapshot(demo).objects
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(demo), str(target)], cwd=REPO, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout.readline().strip() == b"ready"
    while not target.exists():
        time.sleep(0.005)
    time.sleep(rng.uniform(0.05, 0.6))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    result = load_snapshot(target)
    assert result.objects == expected and not result.issues
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    # a killed writer may leave its hidden temp file behind, never a partial target
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".export.yaml.")] == ["export.yaml"]


def test_torn_journal_is_rewritten_privately_and_atomically(tmp_path, monkeypatch):
    """Opening a journal whose last record was torn by a kill rewrites it through the atomic
    writer: 0600 from the first byte, and no fixed temp name two processes could share."""
    j = Journal.create("tt0001", "hold", {"cqs": ["a"]}, "ctx", directory=tmp_path)
    j.append("planned", "hold", {"operations": []})
    with open(j.path, "ab") as fh:
        fh.write(b'{"seq": 2, "event": "confi')  # the kill landed mid-record
    created = []
    real_mkstemp = __import__("tempfile").mkstemp

    def mkstemp(*a, **k):
        fd, name = real_mkstemp(*a, **k)
        created.append((name, os.stat(name).st_mode & 0o777))
        return fd, name

    monkeypatch.setattr("tempfile.mkstemp", mkstemp)
    again = Journal.open(str(j.path))
    assert again.torn_tail and [r["event"] for r in again.records] == ["created", "planned"]
    assert created and all(mode == 0o600 for _, mode in created)
    assert oct(j.path.stat().st_mode & 0o777) == "0o600"
    assert yaml.safe_load(j.path.read_text().splitlines()[-1])["event"] == "planned"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tt0001.jsonl"]
