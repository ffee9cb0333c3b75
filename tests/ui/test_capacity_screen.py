"""The Capacity screen (`:capacity`, `c` on the Overview): the block map per flavor, gang slots for the ready
profiles' shapes and a typed one, blockers, the nodes pane and its drill-down to a node's Pods; unreadable Pods
shown as unknown. Also the Pool's GPU HEALTH section and the queue detail's WAITING FOR ROOM sentence."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
from factories import dashboard_app
from rich.console import Console
from tools.paths import FIXTURES, SNAPSHOTS
from tools.waiting import eventually

from taudash.engine.rules.gang import ShapeError
from taudash.engine.store import AccessState
from taudash.screens.capacity import CapacityScreen, NodePodsScreen, ShapeInput, parse_shape
from taudash.screens.kit.messages import OpenQueue
from taudash.screens.object_detail import ObjectDetailScreen
from taudash.screens.overview import OverviewScreen
from taudash.screens.pool import PoolScreen
from taudash.screens.queue_detail import QueueDetailScreen
from taudash.screens.widgets.block_map import BlockMap
from taudash.screens.widgets.keyed_table import KeyedTable
from taudash.screens.widgets.section import Section

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
FRAG_NOW = datetime(2026, 12, 1, 12, 5, tzinfo=UTC)
FRAGMENTED = FIXTURES / "capacity-fragmented.yaml"
SIZE = (120, 36)


def text_of(renderable, width: int = 160) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def cells(table: KeyedTable, key: str) -> list[str]:
    return [c.plain if hasattr(c, "plain") else str(c) for c in table.get_row(key)]


def fragmented_app(pods_readable: bool = True):
    app = dashboard_app(FRAGMENTED, now=FRAG_NOW, demo=False)
    if not pods_readable:
        app.session.store.set_access("Pod", AccessState.FORBIDDEN)
    return app


async def open_capacity(app, pilot) -> CapacityScreen:
    await pilot.press("c")  # from the Overview, the first screen
    assert await eventually(lambda: isinstance(app.screen, CapacityScreen))
    screen = app.screen
    assert await eventually(lambda: screen.query_one("#cap-nodes", KeyedTable).visible_keys())
    return screen


# --- snapshots ---------------------------------------------------------------------------------------


def test_snapshot_demo(snap_compare):
    assert snap_compare(dashboard_app(now=NOW), press=["c"], terminal_size=SIZE)


def test_snapshot_fragmented(snap_compare):
    assert snap_compare(fragmented_app(), press=["c"], terminal_size=SIZE)


def test_snapshot_pods_unreadable(snap_compare):
    assert snap_compare(fragmented_app(pods_readable=False), press=["c"], terminal_size=SIZE)


# --- keys --------------------------------------------------------------------------------------------


async def test_c_on_the_overview_opens_it_and_the_picture_shows_the_fragmented_racks():
    app = fragmented_app()
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, OverviewScreen)
        screen = await open_capacity(app, pilot)
        maps = list(screen.query(BlockMap))
        assert len(maps) == 2  # gb200 and h100
        h100 = text_of(maps[1].content)
        for words in ("taugrid-gpu-h100", "37/48 free", "8 unhealthy", "rack-a", "rack-b", "rack-c", "15/16 free"):
            assert words in h100, h100
        assert "✖" not in h100 and "■■■■■■■■" in h100  # the XID host's GPUs are held (used, red), none free
        nodes = screen.query_one("#cap-nodes", KeyedTable)
        assert screen.focused is nodes  # arrows and enter work at once
        row = cells(nodes, "node:h100-c2")
        assert row[4] == "0/8 free" and "unhealthy" in row[6] and "XIDError79" in row[6]
        assert cells(nodes, "node:gb200-t4")[6].endswith("Cordoned")


async def test_enter_on_a_node_lists_its_pods_and_esc_goes_back():
    app = fragmented_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_capacity(app, pilot)
        nodes = screen.query_one("#cap-nodes", KeyedTable)
        nodes.move_cursor(row=nodes.get_row_index("node:h100-c2"))
        await pilot.press("enter")
        assert await eventually(lambda: isinstance(app.screen, NodePodsScreen))
        pods = app.screen.query_one("#node-pods", KeyedTable)
        assert await eventually(lambda: pods.visible_keys())
        (key,) = pods.visible_keys()
        row = cells(pods, key)
        assert row[0].startswith("train/") and row[1] == "Running" and row[2] == "8"
        assert row[4].startswith("train/")  # the admitted Workload its job runs under
        await pilot.press("escape")
        assert await eventually(lambda: app.screen is screen)
        # enter on a Pod opens its object
        await pilot.press("enter")
        assert await eventually(lambda: isinstance(app.screen, NodePodsScreen))
        assert await eventually(lambda: app.screen.query_one("#node-pods", KeyedTable).visible_keys())
        await pilot.press("enter")
        assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen))
        assert app.screen.ref.kind == "Pod"


async def test_a_typed_shape_counts_its_gangs_and_names_the_blockers_then_x_clears_it():
    app = fragmented_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_capacity(app, pilot)
        shapes = screen.query_one("#cap-shapes", KeyedTable)
        blockers = screen.query_one("#cap-blockers", KeyedTable)
        assert shapes.visible_keys() == [] and blockers.visible_keys() == []  # plain Kueue: no profiles
        await pilot.press("s")
        assert await eventually(lambda: isinstance(app.screen, ShapeInput))
        await pilot.press(*"8x2 same-accelerator-domain", "enter")
        assert await eventually(lambda: "taugrid-gpu-h100|typed" in shapes.visible_keys())
        row = cells(shapes, "taugrid-gpu-h100|typed")
        assert row[2] == "2 × 8, same-accelerator-domain" and row[3] == "0" and "no room" in row[4]
        assert cells(shapes, "taugrid-gpu-gb200|typed")[3] == "0"
        found = blockers.visible_keys()
        assert len(found) == 2 and all(k.startswith("train/") for k in found)  # the probes in rack-a and rack-b
        assert {cells(blockers, k)[2] for k in found} == {"rack-a", "rack-b"}
        assert all(cells(blockers, k)[4] == "+1" for k in found)
        await pilot.press("x")
        assert await eventually(lambda: "taugrid-gpu-h100|typed" not in shapes.visible_keys())
        assert screen.asked is None and blockers.visible_keys() == []


async def test_a_bad_shape_is_refused_and_changes_nothing():
    app = fragmented_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_capacity(app, pilot)
        await pilot.press("s")
        assert await eventually(lambda: isinstance(app.screen, ShapeInput))
        await pilot.press(*"8x2 same-galaxy", "enter")
        assert await eventually(lambda: app.screen is screen)
        assert screen.asked is None
        assert screen.query_one("#cap-shapes", KeyedTable).visible_keys() == []


async def test_the_filter_narrows_the_nodes():
    app = fragmented_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_capacity(app, pilot)
        nodes = screen.query_one("#cap-nodes", KeyedTable)
        assert len(nodes.visible_keys()) == 10
        await pilot.press("slash", *"unhealthy", "enter")
        assert await eventually(lambda: nodes.visible_keys() == ["node:h100-c2"])
        await pilot.press("escape")  # esc clears the filter
        assert await eventually(lambda: len(nodes.visible_keys()) == 10)


async def test_unreadable_pods_are_unknown_never_free():
    app = fragmented_app(pods_readable=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_capacity(app, pilot)
        note = text_of(screen.query_one("#cap-note").content)
        assert "free capacity unknown" in note and "no GPU is shown free" in note
        for block in screen.query(BlockMap):
            drawn = text_of(block.content)
            assert "□" not in drawn and "■" not in drawn and "?/" in drawn, drawn
        assert "✖✖✖✖✖✖✖✖" in text_of(list(screen.query(BlockMap))[1].content)  # the XID host is still unhealthy
        nodes = screen.query_one("#cap-nodes", KeyedTable)
        assert all(cells(nodes, k)[4].startswith("?/") and cells(nodes, k)[5] == "?" for k in nodes.visible_keys())
        await pilot.press("s")
        assert await eventually(lambda: isinstance(app.screen, ShapeInput))
        await pilot.press(*"8", "enter")
        shapes = screen.query_one("#cap-shapes", KeyedTable)
        assert await eventually(lambda: "taugrid-gpu-h100|typed" in shapes.visible_keys())
        row = cells(shapes, "taugrid-gpu-h100|typed")
        assert row[3] == "?" and "unknown" in row[4]  # no gang is counted


async def test_the_demo_lists_the_profiles_shapes():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_capacity(app, pilot)
        shapes = screen.query_one("#cap-shapes", KeyedTable)
        assert any(k.endswith("|azure.research.training.2node") for k in shapes.visible_keys())
        assert "typed" not in " ".join(shapes.visible_keys())


def test_parse_shape():
    assert parse_shape("8x2 same-accelerator-domain").workers == 2
    assert parse_shape(" 4 ").placement == "unconstrained"
    assert parse_shape("8×4 multi-node-nccl").placement == "same-network-domain"  # the older spelling
    for bad in ("x2", "8x0", "0", "8x2 anywhere", "eight"):
        with pytest.raises(ShapeError):
            parse_shape(bad)


# --- the Pool's GPU HEALTH ---------------------------------------------------------------------------


async def open_pool(app, pilot) -> PoolScreen:
    await pilot.press("2")
    assert await eventually(lambda: isinstance(app.screen, PoolScreen))
    return app.screen


async def test_pool_gpu_health_lists_the_nodes_behind_unhealthy_gpus():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_pool(app, pilot)
        health = screen.query_one("#pool-health", KeyedTable)
        assert await eventually(lambda: health.visible_keys())
        assert screen.query_one("#pool-health-section", Section).display
        states = {k: cells(health, k)[2] for k in health.visible_keys()}
        assert sorted(s.split(" ", 1)[1] for s in states.values()) == [
            "NotReady", "cordoned", "degraded", "unhealthy", "unknown"]
        xid = next(k for k in health.visible_keys() if "XIDError79" in cells(health, k)[4])
        assert states[xid] == "✖ unhealthy" and cells(health, xid)[3] == "8"
        assert "h100-80gb: 8 unhealthy, 8 cordoned" in screen.query_one("#pool-health-section", Section).note


async def test_pool_gpu_health_is_hidden_while_every_gpu_is_healthy():
    app = dashboard_app(SNAPSHOTS / "pool-zeroed.yaml", now=NOW, demo=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_pool(app, pilot)
        assert await eventually(lambda: screen.frame is not None)
        await pilot.pause()
        assert screen.query_one("#pool-health", KeyedTable).visible_keys() == []
        assert not screen.query_one("#pool-health-section", Section).display


async def test_pool_gpu_health_is_shown_unknown_when_nodes_are_unreadable():
    app = dashboard_app(SNAPSHOTS / "pool-zeroed.yaml", now=NOW, demo=False)
    app.session.store.set_access("Node", AccessState.FORBIDDEN, "nodes is forbidden")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_pool(app, pilot)
        section = screen.query_one("#pool-health-section", Section)
        assert await eventually(lambda: section.display)
        assert section.note.startswith("? unknown")


# --- the queue detail: waiting for room --------------------------------------------------------------


async def test_a_gang_no_domain_can_place_says_waiting_for_room():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=SIZE):
        app.post_message(OpenQueue("tau-ws-train"))
        assert await eventually(lambda: isinstance(app.screen, QueueDetailScreen))
        screen = app.screen
        assert await eventually(lambda: screen.fetches >= 1)  # its (estimated) positions are in
        pending = screen.query_one("#qd-pending", KeyedTable)
        assert await eventually(lambda: pending.visible_keys())
        waiting = "wl:train/job-nvl-pretrain-70b-3ab18"
        assert waiting in pending.visible_keys()
        row = cells(pending, waiting)
        assert row[7] == "no room"
        reason = " ".join(row[8].split())  # the cell wraps
        assert reason.startswith("WAITING FOR ROOM: quota exists but no domain can place this shape (8×4 GPUs "
                                 "same-accelerator-domain)")
        assert screen._room_waits()[("train", "job-nvl-pretrain-70b-3ab18")].from_kueue  # Kueue said so too
        others = [k for k in pending.visible_keys() if k != waiting]
        assert others and all("WAITING FOR ROOM" not in cells(pending, k)[8] for k in others)
