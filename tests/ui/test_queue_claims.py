"""The Queues screen shows who holds a queue: "⚑ ID" beside its stop policy and, in the pane, "held by
workflow ID (kind, who, since)" — or a stale claim with how to resume or take it over. SVG snapshot and keys."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
import yaml
from factories import claim_lease, dashboard_app, demo_raw_objects, snapshot_document
from rich.console import Console
from tools.waiting import eventually

from taudash.screens.queues import QueuesScreen
from taudash.screens.widgets.keyed_table import KeyedTable

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


@pytest.fixture
def held(tmp_path):
    """The demo cluster with tau-ws-train held by a running hold and tau-ws-eval by a catalog change that
    stopped renewing its claim nine minutes ago."""
    objs = demo_raw_objects() + [
        claim_lease("ClusterQueue tau-ws-train", "7f3a2c", workflow="hold", who="alice", host="laptop-1",
                    acquired=NOW - timedelta(minutes=12), renewed=NOW - timedelta(seconds=20)),
        claim_lease("ClusterQueue tau-ws-eval", "c0ffee", workflow="catalog", who="bob", host="ops-2",
                    acquired=NOW - timedelta(minutes=40), renewed=NOW - timedelta(minutes=9)),
    ]
    path = tmp_path / "held.yaml"
    path.write_text(yaml.safe_dump(snapshot_document(objs, context="aks-eastus-prod-demo")))
    return path


def plain(widget) -> str:
    """The widget's text with its line breaks and runs of spaces as single spaces (wrapping is the width's)."""
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(widget.content if hasattr(widget, "content") else widget.renderable)
    return " ".join(console.export_text().split())


async def highlight(pilot, cq: str) -> QueuesScreen:
    await pilot.press("3")
    assert await eventually(lambda: isinstance(pilot.app.screen, QueuesScreen))
    table = pilot.app.screen.query_one("#queues", KeyedTable)
    assert await eventually(lambda: f"cq:{cq}" in table.visible_keys())
    table.move_cursor(row=table.get_row_index(f"cq:{cq}"))
    await pilot.pause()
    return pilot.app.screen


async def test_a_held_queue_names_its_holder_and_a_stale_claim_says_how_to_take_it_over(held):
    app = dashboard_app(held, now=NOW, writable=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await highlight(pilot, "tau-ws-train")
        table = screen.query_one("#queues", KeyedTable)
        cells = {k: " ".join(c.plain for c in table.get_row(k)) for k in table.visible_keys()}
        assert "⚑ 7f3a2c" in cells["cq:tau-ws-train"] and "⚠ c0ffee" in cells["cq:tau-ws-eval"]
        assert "⚑" not in cells["cq:tau-ws-vision"] and "⚠" not in cells["cq:tau-ws-vision"]
        pane = plain(screen.query_one("#queue-detail"))
        assert "held by workflow 7f3a2c (hold, alice on laptop-1, since 08:53 UTC, 12 min ago)" in pane
        assert "stale" not in pane
        await highlight(pilot, "tau-ws-eval")
        pane = plain(screen.query_one("#queue-detail"))
        assert "held by workflow c0ffee (catalog, bob on ops-2, since 08:25 UTC, 40 min ago)" in pane
        assert "stale claim: not renewed since 08:56 UTC, 9 min ago" in pane
        assert "taudash workflow resume c0ffee" in pane and "--take-over c0ffee" in pane
        await pilot.press("8")  # the Findings screen lists the stale claim with the same way out
        findings = " ".join(" ".join(c.plain for c in t.get_row(k)) for t in app.screen.query(KeyedTable)
                            for k in t.visible_keys())
        assert "CLAIM-STALE" in findings and "tau-ws-eval" in findings


def test_queues_with_a_held_and_a_stale_queue_snapshot(snap_compare, held):
    async def run_before(pilot):
        await highlight(pilot, "tau-ws-eval")

    assert snap_compare(dashboard_app(held, now=NOW, writable=True), run_before=run_before, terminal_size=SIZE)
