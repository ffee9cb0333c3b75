"""What an operator does with two terminals (or a terminal and the dashboard) on one cluster, with real
processes: one run waits at its confirmation prompt on a terminal while the operator, in another, resumes
that same run or starts a second one on the same queue. Neither may write: the first would run every
step twice at once, the second would record the first one's hold as the queue's "previous" stopPolicy
(so its release leaves the queue held). Each refusal says why and how to go on."""

from __future__ import annotations

import asyncio
import os
import pty
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tools.claims import LEASES, claim_request
from tools.paths import DEMO, REPO

from taudash.cli import main
from taudash.engine.workflows import Journal, registry
from taudash.sim.server import SimServer

CQ = "clusterqueues.kueue.x-k8s.io"


def total(writes) -> int:
    return sum(dict(writes).values())


def step_writes_since(sim, t0: float) -> list[tuple[str, str]]:
    """Write requests since `t0` other than the runs' claims (tests/tools/claims.py): what a step wrote."""
    return [(r.verb, r.path) for r in sim.api.requests
            if r.at >= t0 and r.verb in ("create", "update", "patch", "delete") and not claim_request(r)]


class Terminal:
    """`taudash ARGS` on a pseudo-terminal, as an operator runs it (interactive prompts)."""

    def __init__(self, env: dict, *args: str) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "taudash.cli", *args], env=env, cwd=REPO,
                                     stdin=slave, stdout=slave, stderr=slave, close_fds=True)
        os.close(slave)
        self.seen = b""

    def wait_for(self, text: str, within: float = 60) -> str:
        deadline = time.monotonic() + within
        while text.encode() not in self.seen:
            if time.monotonic() > deadline or self.proc.poll() is not None and not self._read(0.05):
                raise AssertionError(f"no {text!r} on the terminal; it shows:\n{self.seen.decode(errors='replace')}")
            self._read(0.1)
        return self.seen.decode(errors="replace")

    def _read(self, timeout: float) -> bool:
        import select

        # poll, not select: late in a long suite the terminal's descriptor can be above select's 1024 limit
        poller = select.poll()
        poller.register(self.master, select.POLLIN)
        if not poller.poll(timeout * 1000):
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # the process closed the terminal
            return False
        self.seen += chunk
        return bool(chunk)

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\r")

    def close(self) -> int:
        try:
            rc = self.proc.wait(60)
        finally:
            os.close(self.master)
        return rc


@pytest.fixture
def env(tmp_path, demo_sim) -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ("TAUDASH_READ_ONLY", "TAUDASH_CONFIG")}
    return {**e, "TAUDASH_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "KUBECONFIG": str(demo_sim.kubeconfig), "PYTHONPATH": str(REPO)}


def cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "taudash.cli", *args], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def end_for_good(env: dict, workflow_id: str) -> None:
    """`workflow abort ID --yes` on its cluster: the run is over and its claims go back (the module's tests
    share one simulated cluster, each with its own state folder, as separate operators would)."""
    done = cli(env, "workflow", "abort", workflow_id, "--yes", "--kubeconfig", env["KUBECONFIG"])
    assert done.returncode == 0, done.stderr


def journals(env: dict) -> list[Path]:
    return sorted((Path(env["TAUDASH_STATE_DIR"]) / "workflows").glob("*.jsonl"))


def held_at_the_prompt(env: dict, cq: str) -> tuple[Terminal, Journal]:
    """A Hold of `cq` started on a terminal, now asking before its first write."""
    term = Terminal(env, "workflow", "start", "hold", "--cq", cq, "--mode", "Hold")
    term.wait_for("apply? [y/N]")
    (path,) = journals(env)
    return term, Journal.open(str(path))


def test_resuming_a_run_another_terminal_is_running_is_refused_and_writes_nothing(env, demo_sim):
    term, journal = held_at_the_prompt(env, "tau-ws-eval")
    try:
        before, lines = total(demo_sim.api.writes), journal.path.read_text()
        second = cli(env, "workflow", "resume", journal.id, "--yes")
        assert second.returncode == 2, second.stderr
        assert f"workflow {journal.id} is running now in another taudash (pid {term.proc.pid})" in second.stderr
        assert total(demo_sim.api.writes) == before  # not a single write request from the second terminal
        assert journal.path.read_text() == lines  # and nothing journaled in the first one's name
    finally:
        term.type("n")
        assert term.close() == 4  # declined: Paused (resumable)
    assert demo_sim.db.get(CQ, "tau-ws-eval")["spec"].get("stopPolicy", "None") == "None"
    # once that process is gone its lock is too: the paused run is resumable from any terminal
    after = Journal.open(str(journal.path))
    assert after.state == "Paused" and after.resumable and after.runner_pid() is None
    end_for_good(env, journal.id)


def test_a_second_run_on_a_queue_an_unfinished_run_holds_is_refused(env, demo_sim):
    term, first = held_at_the_prompt(env, "tau-ws-vision")
    try:
        before = total(demo_sim.api.writes)
        for argv in (["hold", "--cq", "tau-ws-vision", "--cq", "tau-ws-eval"], ["release", "--cq", "tau-ws-vision"]):
            second = cli(env, "workflow", "start", *argv, "--yes")
            assert second.returncode == 2, second.stderr
            assert (f"ClusterQueue tau-ws-vision: workflow {first.id} (hold, InProgress) is not finished"
                    in second.stderr)
            assert f"taudash workflow abort {first.id}" in second.stderr
        assert total(demo_sim.api.writes) == before
        assert journals(env) == [first.path]  # no journal for the refused runs
    finally:
        term.type("n")
        term.close()
    # declined, the first run is Paused: still unfinished, so still refused — until it is ended for good
    paused = cli(env, "workflow", "start", "hold", "--cq", "tau-ws-vision", "--yes")
    assert paused.returncode == 2 and f"workflow {first.id} (hold, Paused) is not finished" in paused.stderr
    end_for_good(env, first.id)
    again = cli(env, "workflow", "start", "hold", "--cq", "tau-ws-vision", "--mode", "Hold", "--yes",
                "--wait-timeout", "1")
    assert "not finished" not in again.stderr
    assert demo_sim.db.get(CQ, "tau-ws-vision")["spec"]["stopPolicy"] == "Hold"
    assert len(journals(env)) == 2


@pytest.mark.parametrize("kind", registry.names())
def test_every_flag_of_every_workflow_says_what_it_does_in_help(kind, capsys):
    """`taudash workflow start KIND --help`, generated from the registry: no flag is left without its line."""
    with pytest.raises(SystemExit) as done:
        main(["workflow", "start", kind, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    options = text.split("\noptions:\n", 1)[1]
    for param in registry.get(kind).params:
        entry = re.search(rf"^  {re.escape(param.flag)}\b(.*?)(?=^  -|^\S|\Z)", options, re.M | re.S)
        assert entry, f"{param.flag} is not in the help of {kind}:\n{text}"
        words = re.sub(r"^\s*(\{[^}]*\}|[A-Z_]+)?", "", entry.group(1)).split()
        assert words, f"{kind} {param.flag} has no description in --help:\n{entry.group(0)}"


async def test_the_api_going_away_mid_wait_is_said_and_ctrl_c_then_says_how_to_resume(tmp_path):
    """The operator's terminal while the API server goes away under a waiting hold: the progress line says
    the cluster cannot be read (not a made-up state), and Ctrl-C leaves a resumable journal and the hint."""
    env = {**{k: v for k, v in os.environ.items() if k not in ("TAUDASH_READ_ONLY", "TAUDASH_CONFIG")},
           "TAUDASH_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "PYTHONPATH": str(REPO), "PYTHONFAULTHANDLER": "1"}
    sim = await SimServer(DEMO).start()  # frozen: the HoldAndDrain waits until the server goes away
    stopped = False
    try:
        env["KUBECONFIG"] = str(sim.kubeconfig)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "taudash.cli", "workflow", "start", "hold", "--cq", "tau-ws-train", "--yes",
            "--poll", "0.2", env=env, cwd=REPO, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        assert proc.stderr is not None
        seen: list[str] = []

        async def until(text: str) -> None:
            async with asyncio.timeout(120):
                while not any(text in line for line in seen):
                    line = (await proc.stderr.readline()).decode()  # type: ignore[union-attr]
                    assert line, f"taudash ended before {text!r}:\n{''.join(seen)}"
                    seen.append(line)

        await until("… pending+reserving+admitted")  # the drain wait has begun
        assert not any("cannot read the cluster" in line for line in seen)
        await sim.stop()
        stopped = True
        await until("cannot read the cluster")
        proc.send_signal(signal.SIGINT)
        try:
            rest = (await asyncio.wait_for(proc.stderr.read(), 60)).decode()
        except TimeoutError:  # unanswered: make it say where it waits (PYTHONFAULTHANDLER dumps on SIGABRT)
            proc.send_signal(signal.SIGABRT)
            dump = (await asyncio.wait_for(proc.stderr.read(), 20)).decode()
            raise AssertionError(f"Ctrl-C not answered within 60 s; where it was:\n{dump[-6000:]}") from None
        assert await proc.wait() == 130
        (path,) = (tmp_path / "state" / "workflows").glob("*.jsonl")
        assert f"interrupted; the workflow is paused; resume with: taudash workflow resume {path.stem}" in rest
        assert Journal.open(str(path)).state == "Paused"
        # what it leaves, from its journal (the connection is gone), with the command that undoes it
        assert "what this run leaves in the cluster (from its journal):" in rest
        assert "ClusterQueue tau-ws-train is on stopPolicy HoldAndDrain (it was None before the run)" in rest
        assert f"undo: taudash workflow start release --reactivate-from {path.stem}" in rest
    finally:
        if not stopped:
            await sim.stop()


def test_a_mistyped_context_name_says_so_and_writes_nothing(env, demo_sim):
    term = Terminal(env, "workflow", "start", "hold", "--cq", "tau-ws-train")  # HoldAndDrain: destructive
    term.wait_for("type the context name (taudash-sim) to confirm:")
    t0 = time.time()
    term.type("prod")
    shown = term.wait_for("or end it for good")
    assert "'prod' is not the context name 'taudash-sim': not confirmed" in shown
    assert "Paused" in shown and "what this run leaves in the cluster: nothing" in shown
    assert term.close() == 4  # paused, resumable: not the critical-findings 1, not a usage error
    assert step_writes_since(demo_sim, t0) == []  # (a paused run keeps its claims: only those were written)
    end_for_good(env, journals(env)[0].stem)
    assert demo_sim.db.get(CQ, "tau-ws-train")["spec"].get("stopPolicy", "None") == "None"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_the_run_it_for_real_hint_of_a_read_only_rehearsal_runs_for_real(env, demo_sim, how):
    """A rehearsal is allowed read-only; the command it prints to run for real must not carry --read-only
    (it would only be refused), and read-only from the environment is named as what still refuses it."""
    argv = ["workflow", "start", "hold", "--cq", "tau-ws-train", "--rehearse"]
    env = {**env, "TAUDASH_READ_ONLY": "1"} if how == "env" else env
    before, t0 = total(demo_sim.api.writes), time.time()
    done = cli(env, *(["--read-only", *argv] if how == "flag" else argv))
    assert done.returncode == 0, done.stderr
    assert total(demo_sim.api.writes) == before
    (hint,) = [x.split("run it for real: ", 1)[1] for x in done.stderr.splitlines() if "run it for real: " in x]
    words = shlex.split(hint)
    assert words[0] == "taudash" and "--read-only" not in words and "--after-rehearsal" in words
    if how == "env":
        assert "read-only now — read-only mode (asked by TAUDASH_READ_ONLY)" in done.stderr
        return
    assert "read-only now" not in done.stderr
    term = Terminal(env, *words[1:])  # as typed by the operator: it reaches the first confirmation
    try:
        term.wait_for("type the context name (taudash-sim) to confirm:")
    finally:
        term.type("no")
        assert term.close() == 4  # not the context name: paused, keeping its claim on the queue
    assert step_writes_since(demo_sim, t0) == []  # the real run claimed the queue and wrote nothing else
    end_for_good(env, journals(env)[0].stem)


def test_abort_from_another_terminal_while_a_run_is_running_is_refused(env, demo_sim):
    """Marking the journal would not stop the process at the prompt: it would go on and write."""
    term, journal = held_at_the_prompt(env, "tau-ws-eval")
    try:
        lines = journal.path.read_text()
        second = cli(env, "workflow", "abort", journal.id)
        assert second.returncode == 2, second.stderr
        assert f"workflow {journal.id} is running now in another taudash (pid {term.proc.pid})" in second.stderr
        assert "nothing was marked" in second.stderr
        assert journal.path.read_text() == lines
    finally:
        term.type("n")
        term.close()
    # once it stopped (declined: Paused), a script must say --yes to end it; then it is over
    refused = cli(env, "workflow", "abort", journal.id)
    assert refused.returncode == 2 and "needs its id typed, or --yes" in refused.stderr
    assert Journal.open(str(journal.path)).state == "Paused"
    done = cli(env, "workflow", "abort", journal.id, "--yes")
    assert done.returncode == 0 and f"workflow {journal.id} aborted" in done.stderr
    assert "its claims on the cluster, if it holds any, stay until they go stale" in done.stderr  # no cluster given
    assert (cli(env, "workflow", "abort", journal.id, "--yes").stderr.strip()
            == f"workflow {journal.id} is already Aborted")
    end_for_good(env, journal.id)  # given its cluster, an abort (even of an aborted run) gives its claims back
    assert not [lease for lease in demo_sim.db.list(LEASES) if lease["spec"]["holderIdentity"] == journal.id]
