"""`:` jumps as in k9s (:cq, :wl NS/NAME, :ws NAME, :q), unknown targets said clearly, and ctrl+c
quitting with the same confirmation as q while a workflow runs."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from factories import dashboard_app
from textual.widgets import Input
from tools.paths import FIXTURES

from taudash.screens.kit.confirm import ConfirmScreen
from taudash.screens.kit.entries import Registry
from taudash.screens.kit.jump import JumpScreen, resolve
from taudash.screens.object_detail import ObjectDetailScreen
from taudash.screens.registry import REGISTRY
from taudash.screens.workspace_detail import WorkspaceDetailScreen

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)


def jump(line: str, **kw):
    return resolve(line, REGISTRY, **kw)


def test_resolve_screens_kinds_objects_and_errors():
    assert jump(":cq").screen == "queues"
    assert jump("queues").screen == "queues"
    assert jump(":8").screen == "findings" and jump(":pool").screen == "pool"
    assert jump(":ws").screen == "workspaces"
    assert jump(":q").quit and jump(":quit").quit
    wl = jump(":wl train/job-1").ref
    assert (wl.kind, wl.namespace, wl.name) == ("Workload", "train", "job-1")
    ws = jump(":ws train").ref
    assert (ws.kind, ws.namespace, ws.name) == ("TauWorkspace", "tau-system", "train")
    cq = jump(":cq tau-ws-train").ref
    assert (cq.kind, cq.namespace, cq.name) == ("ClusterQueue", None, "tau-ws-train")
    # refused, with the reason
    assert "unknown jump" in jump(":frobnicate").error
    assert "unknown kind" in jump(":frob x").error
    assert "namespaced" in jump(":wl job-1").error  # a Workload needs its namespace
    assert "not namespaced" in jump(":cq ns/x").error
    assert "nothing to jump to" in jump(":").error
    assert "no Workload train/gone" in jump(":wl train/gone", exists=lambda *a: False).error
    assert jump(":q now").error  # :q takes no argument


def test_a_jump_names_only_the_screens_it_is_handed():
    """The screens come from the app (its registry), not from an import: one left out is an unknown jump."""
    only_home = Registry(REGISTRY.home)
    assert resolve(":1", only_home).screen == "overview"
    assert "unknown jump" in resolve(":pool", only_home).error


async def submit(pilot, app, line: str) -> None:
    await pilot.press("colon")
    await pilot.pause()
    assert isinstance(app.screen, JumpScreen)
    app.screen.query_one(Input).value = line
    await pilot.press("enter")
    await pilot.pause()


async def test_colon_jumps_to_screens_and_objects_and_says_what_it_cannot_find():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    async with app.run_test(size=(140, 40)) as pilot:
        assert app.current_mode == "overview"
        await submit(pilot, app, "cq")
        assert app.current_mode == "queues" and not isinstance(app.screen, JumpScreen)
        await submit(pilot, app, "wl train/job-job-train-17-a1b2c")
        assert isinstance(app.screen, ObjectDetailScreen)
        assert (app.screen.ref.kind, app.screen.ref.namespace, app.screen.ref.name) == (
            "Workload", "train", "job-job-train-17-a1b2c")
        await submit(pilot, app, "ws eval")
        assert isinstance(app.screen, WorkspaceDetailScreen) and app.screen.ws_name == "eval"
        before = type(app.screen)
        await submit(pilot, app, "wl train/no-such-workload")
        assert type(app.screen) is before
        notes = [n.message for n in app._notifications]
        assert any("no Workload train/no-such-workload" in m for m in notes)
        await submit(pilot, app, "bogus")
        notes = [n.message for n in app._notifications]
        assert any("unknown jump “bogus”" in m for m in notes)
        # esc closes the jump line without going anywhere
        await pilot.press("colon")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen) is before
        assert not app._exit
        await submit(pilot, app, "q")
        assert app._exit


async def test_ctrl_c_quits_at_once_when_idle():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app._exit


async def test_ctrl_c_asks_first_while_a_workflow_runs():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    async with app.run_test(size=(120, 36)) as pilot:
        # a run in progress, as far as quitting is concerned (and as 9 Workflows reads it, should it be composed)
        app.workflows._active["wf-test"] = SimpleNamespace(model=SimpleNamespace(state="InProgress"))
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and not app._exit
        assert "wf-test" in app.screen.title_text
        await pilot.press("escape")  # cancel: the dashboard stays
        await pilot.pause()
        assert not app._exit and not isinstance(app.screen, ConfirmScreen)
        app.workflows._active.clear()


def test_jump_line_snapshot(snap_compare):
    # the jump line open over the Findings table, a target typed
    async def open_jump(pilot):
        await pilot.press("8")
        await pilot.pause()
        await pilot.press("colon", *"wl train/job")
        await pilot.pause()

    assert snap_compare(dashboard_app(now=NOW), run_before=open_jump, terminal_size=(120, 36))
