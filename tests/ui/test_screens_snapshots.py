"""SVG snapshots of every screen at 120×36 on the demo cluster, with a frozen clock.

Review changes with `pytest tests/ui/test_screens_snapshots.py --snapshot-report=…` and accept them with
`--snapshot-update` only after looking at them: the SVGs are the dashboard's visual contract.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from factories import dashboard_app
from tools.paths import FIXTURES

from taudash.engine.rules.base import ObjRef
from taudash.screens.kit.messages import OpenObject

UI_FIXTURE = FIXTURES / "ui-demo.yaml"
NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


@pytest.mark.parametrize("key,name", [
    ("1", "overview"), ("2", "pool"), ("3", "queues"), ("4", "workspaces"),
    ("5", "sources"), ("6", "multikueue"), ("7", "profiles"), ("8", "findings"),
])
def test_screen(snap_compare, key, name):
    assert snap_compare(dashboard_app(now=NOW), press=[key], terminal_size=SIZE)


def test_workspace_detail(snap_compare):
    # eval is the retargeted workspace whose drain is blocked
    assert snap_compare(dashboard_app(now=NOW), press=["4", "enter"], terminal_size=SIZE)


def test_object_detail(snap_compare):
    async def open_object(pilot):
        pilot.app.post_message(OpenObject(ObjRef(kind="RayService", namespace="eval", name="llm")))
        await pilot.pause()

    assert snap_compare(dashboard_app(now=NOW), run_before=open_object, terminal_size=SIZE)


def test_help(snap_compare):
    assert snap_compare(dashboard_app(now=NOW), press=["2", "question_mark"], terminal_size=SIZE)


def test_overview_with_unreadable_kinds(snap_compare):
    # the UI fixture: Deployments forbidden (header "unknown"), a Pending stale workspace, a drain Unknown
    assert snap_compare(dashboard_app(UI_FIXTURE, now=NOW, demo=False), terminal_size=SIZE)
