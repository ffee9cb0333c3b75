"""The contexts screen (`:ctx`) and its keys, on the demo snapshot with a kubeconfig of four contexts whose
probes answer as the test says (reachable, unreachable with its reason, one that never answers: checking…);
the switch itself is a stand-in that opens another snapshot (tests/e2e/test_contexts_switch.py switches
between two real simulators)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
import yaml
from factories import dashboard_app, kubeconfig_of, told
from tools.paths import FIXTURES
from tools.waiting import eventually

from taudash.app import CONTEXTS_MODE
from taudash.engine.session import Session
from taudash.engine.sources.contexts import REACHABLE, UNREACHABLE, Reach
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.view import SourceInfo
from taudash.screens.contexts import ContextsScreen
from taudash.screens.kit.jump import resolve
from taudash.screens.registry import REGISTRY

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)
SHOWN = "aks-eastus-prod-demo"  # the demo snapshot's context
CONTEXTS = [  # name, server, user, namespace
    (SHOWN, "https://127.0.0.1:6443", "operator", "tau-system"),
    ("prod-westus", "https://westus.prod.example:443", "oncall", ""),
    ("gone", "https://10.255.0.1:6443", "oncall", "kueue-system"),
    ("slow", "https://slow.example:6443", "", ""),
]
ANSWERS = {SHOWN: Reach(REACHABLE, seconds=0.04), "prod-westus": Reach(REACHABLE, seconds=0.31),
           "gone": Reach(UNREACHABLE, "https://10.255.0.1:6443: Cannot connect to host 10.255.0.1:6443 "
                                      "ssl:default [Connect call failed ('10.255.0.1', 6443)]")}


@pytest.fixture
def kubeconfig_file(tmp_path, monkeypatch):
    doc = kubeconfig_of({n: {"server": s, "user": u, "namespace": ns} for n, s, u, ns in CONTEXTS},
                        current="prod-westus")
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path


@pytest.fixture
def probes(monkeypatch) -> list[str]:
    asked: list[str] = []

    async def answer(name, kubeconfig, within=5.0):
        asked.append(name)
        if name not in ANSWERS:
            await asyncio.Event().wait()  # never answers: stays "checking…"
        return ANSWERS[name]

    monkeypatch.setattr("taudash.screens.contexts.probe", answer)
    return asked


class Switcher:
    """Opens the ui-demo snapshot as the other cluster; `gone` cannot be opened."""

    kubeconfig = None  # $KUBECONFIG

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.retired: list[Session] = []

    async def open(self, context: str) -> Session:
        self.opened.append(context)
        if context == "gone":
            raise ConnectionError("cannot reach https://10.255.0.1:6443")
        r = load_snapshot(FIXTURES / "ui-demo.yaml")
        return Session(r.store, SourceInfo(type="snapshot", context=context, path="ui-demo.yaml"), read_only=True)

    async def retire(self, session: Session) -> None:
        self.retired.append(session)


def app_with(switcher: Switcher | None):
    app = dashboard_app(now=NOW)
    app.contexts = switcher
    return app


async def open_contexts(pilot, line: str = "ctx") -> None:
    await pilot.press("colon")
    assert await eventually(lambda: type(pilot.app.screen).__name__ == "JumpScreen")
    await pilot.press(*line, "enter")


def answered(app) -> bool:
    screen = app.screen
    return isinstance(screen, ContextsScreen) and all(screen.reach[n].state != "checking" for n in ANSWERS)


def test_contexts_screen_snapshot(snap_compare, kubeconfig_file, probes):
    async def run_before(pilot):
        await open_contexts(pilot)
        assert await eventually(lambda: answered(pilot.app))
        await pilot.pause()

    assert snap_compare(app_with(Switcher()), run_before=run_before, terminal_size=SIZE)


async def test_ctx_lists_every_context_with_its_reach(kubeconfig_file, probes):
    app = app_with(Switcher())
    async with app.run_test(size=SIZE) as pilot:
        await open_contexts(pilot)
        assert await eventually(lambda: answered(app))
        screen = app.screen
        assert [e.name for e in screen.entries] == [c[0] for c in CONTEXTS]
        assert [e.name for e in screen.entries if e.current] == ["prod-westus"]  # the kubeconfig's
        assert screen.shown_context == SHOWN  # the dashboard's
        assert screen.reach["slow"].state == "checking"
        assert sorted(probes) == sorted(c[0] for c in CONTEXTS)
        text = str(screen.query_one("#ctx-errors").render())
        assert "gone: https://10.255.0.1:6443: Cannot connect" in text and "slow" not in text
        await pilot.press("r")  # probe again: every context asked once more
        assert await eventually(lambda: len(probes) == 2 * len(CONTEXTS))


async def test_enter_switches_and_esc_goes_back(kubeconfig_file, probes):
    switcher = Switcher()
    app = app_with(switcher)
    first = app.session
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await open_contexts(pilot)
        assert await eventually(lambda: isinstance(app.screen, ContextsScreen))
        await pilot.press("escape")
        assert await eventually(lambda: app.current_mode == "pool")
        await open_contexts(pilot)
        assert await eventually(lambda: isinstance(app.screen, ContextsScreen))
        await pilot.press("down", "enter")  # prod-westus
        assert await eventually(lambda: app.session.source.context == "prod-westus" and app.current_mode == "pool")
        assert switcher.opened == ["prod-westus"] and switcher.retired == [first]
        assert app.screen.session is app.session and app.workflows.session is app.session
        assert CONTEXTS_MODE not in app._modes
        await pilot.press("4")  # every registered screen now shows the new cluster
        assert await eventually(lambda: app.screen.session is app.session and app.screen.frame is not None)


async def test_ctx_name_switches_directly_and_refusals_say_why(kubeconfig_file, probes):
    switcher = Switcher()
    app = app_with(switcher)
    said = told(app)
    first = app.session
    async with app.run_test(size=SIZE) as pilot:
        await open_contexts(pilot, "ctx nope")
        assert await eventually(lambda: any("no context “nope” in the kubeconfig (known: " in s for s in said))
        assert app.current_mode == "overview" and switcher.opened == []
        await open_contexts(pilot, f"ctx {SHOWN}")
        assert await eventually(lambda: any(f"already showing {SHOWN}" in s for s in said))
        await open_contexts(pilot, "ctx gone")
        assert await eventually(lambda: any("could not switch to gone: cannot reach" in s for s in said))
        assert app.session is first and app.switching is None and switcher.retired == []
        await open_contexts(pilot, "context prod-westus")
        assert await eventually(lambda: app.session.source.context == "prod-westus")
        assert app.current_mode == "overview" and switcher.retired == [first]


async def test_ctx_without_a_kubeconfig_to_switch_in(kubeconfig_file, probes):
    app = app_with(None)  # a snapshot dashboard
    said = told(app)
    async with app.run_test(size=SIZE) as pilot:
        await open_contexts(pilot)
        assert await eventually(lambda: any("no kubeconfig to switch in" in s for s in said))
        assert app.current_mode == "overview" and not probes


def test_jump_words_for_contexts():
    assert resolve(":ctx", REGISTRY).contexts and resolve("contexts", REGISTRY).contexts
    assert resolve("ctx prod", REGISTRY).context == "prod" and resolve("context prod", REGISTRY).context == "prod"
    assert resolve("ctx a b", REGISTRY).error == "one context after :ctx"
    assert not resolve("ctx", REGISTRY).error and resolve("ctx", REGISTRY).screen is None
