"""SVG snapshots of every screen at 120×36 on the demo cluster, with a frozen clock.

Review changes with `pytest tests/test_screens_snapshots.py --snapshot-report=…` and accept them with
`--snapshot-update` only after looking at them: the SVGs are the dashboard's visual contract.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from tools.paths import DEMO, FIXTURES, REPO

from taudash.app import TaudashApp
from taudash.engine.rules.base import ObjRef
from taudash.engine.session import Session
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.view import SourceInfo
from taudash.screens.messages import OpenObject

UI_FIXTURE = FIXTURES / "ui-demo.yaml"
NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


def make_app(path: Path = DEMO, demo: bool = True) -> TaudashApp:
    r = load_snapshot(path)
    rel = str(path.relative_to(REPO))
    src = SourceInfo(type="snapshot", context=r.context, path=rel, observed_at=r.captured_at)
    # a long tick: the first frame is derived at mount, so nothing changes while the SVG is taken
    return TaudashApp(Session(r.store, src, demo=demo), clock=lambda: NOW, tick=3600)


@pytest.mark.parametrize("key,name", [
    ("1", "overview"), ("2", "pool"), ("3", "queues"), ("4", "workspaces"),
    ("5", "sources"), ("6", "multikueue"), ("7", "profiles"), ("8", "findings"),
])
def test_screen(snap_compare, key, name):
    assert snap_compare(make_app(), press=[key], terminal_size=SIZE)


def test_workspace_detail(snap_compare):
    # eval is the retargeted workspace whose drain is blocked
    assert snap_compare(make_app(), press=["4", "enter"], terminal_size=SIZE)


def test_object_detail(snap_compare):
    async def open_object(pilot):
        pilot.app.post_message(OpenObject(ObjRef(kind="RayService", namespace="eval", name="llm")))
        await pilot.pause()

    assert snap_compare(make_app(), run_before=open_object, terminal_size=SIZE)


def test_help(snap_compare):
    assert snap_compare(make_app(), press=["2", "question_mark"], terminal_size=SIZE)


def test_overview_with_unreadable_kinds(snap_compare):
    # the UI fixture: Deployments forbidden (header "unknown"), a Pending stale workspace, a drain Unknown
    assert snap_compare(make_app(UI_FIXTURE, demo=False), terminal_size=SIZE)
