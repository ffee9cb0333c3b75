"""`:ctx` end to end: a kubeconfig with two simulated clusters (two in-process simulators) and a third whose
server is gone. The contexts screen probes all three; Enter and `:ctx NAME` switch the dashboard to a new
session on the other cluster and back; read-only mode asked for on the first cluster stays on the second
(flag, environment, config file); a workflow journaled on one cluster is never resumable on the other."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest
import yaml
from factories import kubeconfig_of, told
from tools.paths import DEMO
from tools.waiting import eventually

from taudash.app import CONTEXTS_MODE, TaudashApp
from taudash.commands.dashboard import LiveSessions
from taudash.engine.sources.contexts import REACHABLE, UNREACHABLE
from taudash.engine.workflows import Journal
from taudash.screens.contexts import ContextsScreen
from taudash.sim.server import SimServer

HOLD = {"cqs": ["tau-ws-eval"], "mode": "Hold", "cancel_pending": False}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_merged(path, *sims: SimServer) -> str:
    """One file with each simulator's context, and `gone`: a context whose API server listens nowhere."""
    given = {}
    for sim in sims:
        one = yaml.safe_load(sim.kubeconfig.read_text())
        cluster, user = one["clusters"][0]["cluster"], one["users"][0]["user"]
        given[sim.context] = {**cluster, "token": user["token"]}
    given["gone"] = {"server": f"https://127.0.0.1:{closed_port()}", "insecure-skip-tls-verify": True,
                     "token": "nothing-listens", "namespace": "tau-system"}
    path.write_text(yaml.safe_dump(kubeconfig_of(given, current=sims[0].context)))
    path.chmod(0o600)
    return str(path)


@pytest.fixture
async def two_clusters(tmp_path, cli_env):
    async with SimServer(DEMO, context="sim-a") as a, SimServer(DEMO, context="sim-b") as b:
        yield a, b, write_merged(tmp_path / "kubeconfig", a, b)


def args(read_only: bool = False) -> SimpleNamespace:
    return SimpleNamespace(read_only=read_only, system_namespace="tau-system", pvc=[])


def header_text(app) -> str:
    """The header's left part on the screen shown ("" while that screen is still composing)."""
    found = app.screen.query("HeaderBar #hb-left")
    return str(found.first().content) if found else ""


async def type_jump(pilot, line: str) -> None:
    await pilot.press("colon")
    await eventually(lambda: type(pilot.app.screen).__name__ == "JumpScreen")
    await pilot.press(*line, "enter")


async def test_ctx_probes_every_context_and_switches_there_and_back(two_clusters):
    a, b, kubeconfig = two_clusters
    sessions = LiveSessions(args(), kubeconfig, demo=False, source_type="sim")
    first = await sessions.open("sim-a")
    app = TaudashApp(first, contexts=sessions, precompose=False)
    said = told(app)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("3")
            await type_jump(pilot, "ctx")
            assert await eventually(lambda: isinstance(app.screen, ContextsScreen))
            screen = app.screen
            assert await eventually(lambda: all(r.state != "checking" for r in screen.reach.values()))
            assert {n: r.state for n, r in screen.reach.items()} == {
                "sim-a": REACHABLE, "sim-b": REACHABLE, "gone": UNREACHABLE}
            assert "127.0.0.1" in screen.reach["gone"].error
            errors = str(screen.query_one("#ctx-errors").render())
            assert "gone:" in errors and screen.reach["gone"].error[:40] in errors
            assert [e.name for e in screen.entries if e.current] == ["sim-a"]

            # Enter on sim-b: a new session on the other cluster, back on the screen `:ctx` was typed on
            await pilot.press("down", "enter")
            assert await eventually(lambda: app.session.source.context == "sim-b" and app.current_mode == "queues")
            second = app.session
            assert second is not first and second.cluster is not None and first.cluster is not None
            assert not second.cluster.same_cluster(first.cluster)  # each simulator is its own cluster
            assert second.store is not first.store and len(second.store.list("ClusterQueue")) > 0
            assert await eventually(lambda: "sim-b" in header_text(app))
            assert id(first) not in sessions._held, "the session left behind is closed"
            assert CONTEXTS_MODE not in app._modes

            # unknown name: said, nothing changes
            await type_jump(pilot, "ctx nope")
            assert await eventually(lambda: any("no context “nope”" in s for s in said))
            assert app.session is second and app.current_mode == "queues"

            # `:ctx NAME` switches directly; an unreachable one is refused with its reason and the dashboard stays
            await type_jump(pilot, "ctx gone")
            assert await eventually(lambda: any(s.startswith("could not switch to gone") for s in said), within=60)
            assert app.session is second and app.switching is None
            await pilot.press("escape")  # out of the contexts list the failed switch showed
            assert await eventually(lambda: app.current_mode == "queues")
            await type_jump(pilot, "ctx sim-a")
            assert await eventually(lambda: app.session.source.context == "sim-a" and app.current_mode == "queues")
            assert app.session.cluster is not None and app.session.cluster.same_cluster(first.cluster)
            assert app.session is not first  # a new session: nothing of the old one is reused
            assert list(sessions._held) == [id(app.session)]

            # Esc on the contexts list goes back where it was opened
            await pilot.press("1")
            await type_jump(pilot, "ctx")
            assert await eventually(lambda: isinstance(app.screen, ContextsScreen))
            await pilot.press("escape")
            assert await eventually(lambda: app.current_mode == "overview")
    finally:
        await sessions.close()


@pytest.mark.parametrize("asked", ["flag", "env", "config", "nobody"])
async def test_read_only_stays_on_after_a_switch(two_clusters, monkeypatch, tmp_path, asked):
    a, b, kubeconfig = two_clusters
    if asked == "env":
        monkeypatch.setenv("TAUDASH_READ_ONLY", "1")
    if asked == "config":  # read-only for the first context only: the second inherits it
        (tmp_path / "config.yaml").write_text("contexts:\n  sim-a:\n    readOnly: true\n")
        monkeypatch.setenv("TAUDASH_CONFIG", str(tmp_path / "config.yaml"))
    sessions = LiveSessions(args(read_only=asked == "flag"), kubeconfig, demo=False, source_type="sim")
    try:
        first = await sessions.open("sim-a")
        second = await sessions.open("sim-b")
        await sessions.retire(first)
        assert second.source.context == "sim-b"
        if asked == "nobody":
            assert not first.read_only and not second.read_only and second.actions.writable
            return
        assert first.read_only and second.read_only and not second.actions.writable
        who = {"flag": "--read-only", "env": "TAUDASH_READ_ONLY", "config": "config file: context sim-a"}[asked]
        assert who in second.read_only_why
        back = await sessions.open("sim-a")  # and back again: still read-only
        assert back.read_only and not back.actions.writable
    finally:
        await sessions.close()


async def test_a_journal_of_one_cluster_is_not_resumable_on_the_other(two_clusters, state_dir):
    a, b, kubeconfig = two_clusters
    sessions = LiveSessions(args(), kubeconfig, demo=False, source_type="sim")
    first = await sessions.open("sim-a")
    Journal.create("a0a0a0", "hold", HOLD, "sim-a", cluster=first.cluster)  # an unfinished run on sim-a
    app = TaudashApp(first, contexts=sessions, precompose=False)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            journal = Journal.open("a0a0a0", app.workflows.directory())
            assert app.workflows._resume_refusal(journal) is None  # positive control: resumable on its cluster
            await type_jump(pilot, "ctx sim-b")
            assert await eventually(lambda: app.session.source.context == "sim-b")
            refusal = app.workflows._resume_refusal(journal)
            assert refusal is not None and "resume it on its own cluster" in refusal
            assert app.workflows.session is app.session and not app.workflows.live()
            await pilot.press("9")
            screen = app.screen
            assert await eventually(lambda: type(screen).__name__ == "WorkflowsScreen" and "a0a0a0" in screen.entries)
            assert "resume it on its own cluster" in screen.entries["a0a0a0"].elsewhere  # greyed: "other cluster"
            assert screen.session is app.session
    finally:
        await sessions.close()
