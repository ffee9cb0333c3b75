"""SVG snapshots of every screen at 120×36 on the demo cluster, with a frozen clock.

Review changes with `pytest tests/ui/test_screens_snapshots.py --snapshot-report=…` and accept them with
`--snapshot-update` only after looking at them: the SVGs are the dashboard's visual contract.

One demo dashboard serves the snapshots of its screens (tests/tools/shared_app.py): each test still has its own
SVG, and starts where a fresh dashboard starts.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from factories import dashboard_app
from tools.paths import FIXTURES
from tools.shared_app import SharedApps, back_home

from taudash.engine.rules.base import ObjRef
from taudash.screens.kit.messages import OpenObject

UI_FIXTURE = FIXTURES / "ui-demo.yaml"
NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


@pytest.fixture(scope="module")
def dashboard():
    apps = SharedApps(lambda: dashboard_app(now=NOW), back_home, [SIZE])
    yield apps
    apps.close()


@pytest.mark.parametrize("key,name", [
    ("1", "overview"), ("2", "pool"), ("3", "queues"), ("4", "workspaces"),
    ("5", "sources"), ("6", "multikueue"), ("7", "profiles"), ("8", "findings"),
])
def test_screen(snap_compare, dashboard, key, name):
    assert dashboard.compare(snap_compare, SIZE, press=[key])


def test_workspace_detail(snap_compare, dashboard):
    # eval is the retargeted workspace whose drain is blocked
    assert dashboard.compare(snap_compare, SIZE, press=["4", "enter"])


def test_object_detail(snap_compare, dashboard):
    async def open_object(pilot):
        pilot.app.post_message(OpenObject(ObjRef(kind="RayService", namespace="eval", name="llm")))
        await pilot.pause()

    assert dashboard.compare(snap_compare, SIZE, run_before=open_object)


def test_help(snap_compare, dashboard):
    assert dashboard.compare(snap_compare, SIZE, press=["2", "question_mark"])


def test_overview_with_unreadable_kinds(snap_compare):
    # the UI fixture: Deployments forbidden (header "unknown"), a Pending stale workspace, a drain Unknown
    assert snap_compare(dashboard_app(UI_FIXTURE, now=NOW, demo=False), terminal_size=SIZE)
