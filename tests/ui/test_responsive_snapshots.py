"""Every screen at 100×30, 120×36 and 200×60: SVG snapshots on the demo cluster with a frozen clock.

One dashboard per size serves every screen's snapshot at that size (tests/tools/shared_app.py): each test
still has its own SVG, and starts where a fresh dashboard starts (the home screen, nothing pushed).

Column widths come from content and the terminal width; names wrap instead of being cut; messages take the
spare width and wrap when a tall terminal has room. Accept changes with `--snapshot-update` only after
looking at the PNGs (`rsvg-convert x.svg -o x.png`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from factories import dashboard_app
from test_fleet_screen import snapshot_fleet
from tools.fixed_state import fixed_state_dir
from tools.history_fixture import build
from tools.shared_app import SharedApps, back_home
from tools.waiting import eventually

from taudash.engine.rules.base import ObjRef
from taudash.fleet_app import FleetApp
from taudash.screens.kit.messages import Navigate, OpenObject, OpenQueue

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZES = [(100, 30), (120, 36), (200, 60)]
SIZE_IDS = ["100x30", "120x36", "200x60"]
KEYED = [("1", "overview"), ("2", "pool"), ("3", "queues"), ("4", "workspaces"), ("5", "sources"),
         ("6", "multikueue"), ("7", "profiles"), ("8", "findings"), ("9", "workflows")]
STATE = Path("/tmp/taudash-responsive-snapshot-state")  # fixed: 9 Workflows shows the journal directory


@pytest.fixture(scope="module")
def dashboards():
    """The demo dashboard, one running per size, shared by the module's read-only screen snapshots."""
    apps = SharedApps(lambda: dashboard_app(now=NOW), back_home, SIZES)
    yield apps
    apps.close()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("key,name", KEYED, ids=[n for _, n in KEYED])
def test_numbered_screen(snap_compare, dashboards, monkeypatch, key, name, size):
    if name != "workflows":
        assert dashboards.compare(snap_compare, size, press=[key])
        return
    with fixed_state_dir(monkeypatch, STATE):  # no journals: "no workflows yet"
        assert dashboards.compare(snap_compare, size, press=[key])


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_workspace_detail_sizes(snap_compare, dashboards, size):
    assert dashboards.compare(snap_compare, size, press=["4", "enter"])


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_queue_detail_sizes(snap_compare, dashboards, size):
    async def run_before(pilot):
        pilot.app.post_message(OpenQueue("tau-ws-train"))
        assert await eventually(lambda: type(pilot.app.screen).__name__ == "QueueDetailScreen")
        await pilot.pause()

    assert dashboards.compare(snap_compare, size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_object_detail_sizes(snap_compare, dashboards, size):
    async def run_before(pilot):
        pilot.app.post_message(OpenObject(ObjRef(kind="ClusterQueue", name="tau-ws-vision")))
        assert await eventually(lambda: type(pilot.app.screen).__name__ == "ObjectDetailScreen")
        await pilot.pause()

    assert dashboards.compare(snap_compare, size, run_before=run_before)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return build(tmp_path_factory.mktemp("history") / "fixture.sqlite3")


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_history_sizes(snap_compare, recorded, size):
    from tools.history_fixture import NOW as HNOW
    from tools.history_fixture import demo_session

    from taudash.app import TaudashApp
    from taudash.engine.history.reader import HistoryReader

    session = demo_session(HistoryReader(recorded))

    async def run_before(pilot):
        pilot.app.post_message(Navigate("history"))
        assert await eventually(lambda: type(pilot.app.screen).__name__ == "HistoryScreen" and pilot.app.screen.loaded)
        await pilot.pause()

    app = TaudashApp(session, clock=lambda: HNOW, tick=3600, precompose=False)  # one screen shown: none beside it
    assert snap_compare(app, run_before=run_before, terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_fleet_sizes(snap_compare, size):
    app = FleetApp(snapshot_fleet(), clock=lambda: NOW, tick=3600.0, precompose=False)
    assert snap_compare(app, terminal_size=size)
