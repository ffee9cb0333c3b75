"""The Capacity screen (`:capacity`, `c` on the Overview): the block map per flavor, gang slots for the ready
profiles' shapes and a typed one, blockers, the nodes pane and its drill-down to a node's Pods; unreadable Pods
shown as unknown. Also the Pool's GPU HEALTH section and the queue detail's WAITING FOR ROOM sentence."""

from __future__ import annotations

import copy
import io
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from factories import dashboard_app, pod
from rich.console import Console
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from tools.paths import FIXTURES, SNAPSHOTS
from tools.waiting import eventually

from taudash.engine.model import lookup
from taudash.engine.rules.capacity import CapacityDomain, CapacityFlavor, CapacityNode, GpuCounts
from taudash.engine.rules.gang import ShapeError
from taudash.engine.store import AccessState
from taudash.screens.capacity import CapacityScreen, NodePodsScreen, ShapeInput, parse_shape
from taudash.screens.kit.messages import OpenQueue
from taudash.screens.object_detail import ObjectDetailScreen
from taudash.screens.overview import OverviewScreen
from taudash.screens.pool import PoolScreen
from taudash.screens.queue_detail import QueueDetailScreen
from taudash.screens.widgets.block_map import MAP_HOSTS, BlockMap, render_flavor
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


# --- a tick draws only what changed, and only what is in view ----------------------------------------


def land_pod(app, name: str, node: str, gpus: int = 1) -> None:
    """A GPU Pod bound to `node` arrives in the store (as a watch event would put it)."""
    raw = pod(name, "train", node=node, gpus=gpus)
    app.session.store.upsert(lookup(raw["apiVersion"], raw["kind"]).model.model_validate(raw), raw=raw)


def draws(screen: CapacityScreen) -> dict[str, int]:
    return {m._shown[0].name: m.draws for m in screen.query(BlockMap)}


async def test_a_tick_after_one_nodes_change_redraws_only_that_row_and_its_flavor():
    app = fragmented_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_capacity(app, pilot)
        nodes = screen.query_one("#cap-nodes", KeyedTable)
        before = draws(screen)
        assert cells(nodes, "node:h100-a2")[4] == "8/8 free"
        land_pod(app, "probe", "h100-a2")
        app.render_frame(app.session.frame(FRAG_NOW))
        assert nodes.drawn == ("node:h100-a2",)  # the other nine rows are the very rows drawn before
        assert cells(nodes, "node:h100-a2")[4] == "7/8 free"
        after = draws(screen)
        assert after["taugrid-gpu-h100"] == before["taugrid-gpu-h100"] + 1
        assert after["taugrid-gpu-gb200"] == before["taugrid-gpu-gb200"]  # its flavor's view did not move
        await pilot.pause()
        assert "36/48 free" in text_of(list(screen.query(BlockMap))[1].content)


async def test_an_unchanged_tick_redraws_nothing():
    app = fragmented_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_capacity(app, pilot)
        tables = list(screen.query(KeyedTable))
        before, rows = draws(screen), [t.rows_drawn for t in tables]
        frame = app.session.frame(FRAG_NOW)
        # a new view whose capacity part is the one drawn (another part of the view moved)
        app.render_frame(replace(frame, view=copy.copy(frame.view)))
        assert screen.frame.view is not frame.view  # the screen was handed the new frame, and drew nothing
        assert [t.rows_drawn for t in tables] == rows and draws(screen) == before
        # one Pod that holds no GPU moves nothing capacity reads either
        land_pod(app, "cpu-only", "h100-a2", gpus=0)
        app.render_frame(app.session.frame(FRAG_NOW))
        assert [t.rows_drawn for t in tables] == rows and draws(screen) == before


async def test_a_hidden_capacity_screen_draws_nothing_and_catches_up_when_shown():
    app = fragmented_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_capacity(app, pilot)
        nodes = screen.query_one("#cap-nodes", KeyedTable)
        before = draws(screen)
        await pilot.press("1")
        assert await eventually(lambda: isinstance(app.screen, OverviewScreen))
        land_pod(app, "probe", "h100-b1")
        app.render_frame(app.session.frame(FRAG_NOW))
        assert draws(screen) == before and cells(nodes, "node:h100-b1")[4] == "8/8 free"
        await pilot.press("c")
        assert await eventually(lambda: app.screen is screen and cells(nodes, "node:h100-b1")[4] == "7/8 free")
        assert nodes.drawn == ("node:h100-b1",)
        assert draws(screen)["taugrid-gpu-h100"] == before["taugrid-gpu-h100"] + 1


async def test_the_maps_follow_the_nodes_filter():
    app = fragmented_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_capacity(app, pilot)
        gb200, h100 = list(screen.query(BlockMap))
        await pilot.press("slash", *"rack-c", "enter")
        nodes = screen.query_one("#cap-nodes", KeyedTable)
        assert await eventually(lambda: nodes.visible_keys() == ["node:h100-c1", "node:h100-c2"])
        drawn = text_of(h100.content)
        assert "rack-c" in drawn and "rack-a" not in drawn and "rack-b" not in drawn
        assert "no host of this flavor matches the filter" in text_of(gb200.content)
        await pilot.press("escape")  # esc clears the filter: every block again
        assert await eventually(lambda: "rack-a" in text_of(h100.content))
        assert "nvl36-r1" in text_of(gb200.content)


def big_flavor(racks: int, hosts: int) -> CapacityFlavor:
    """`racks` accelerator domains of `hosts` 8-GPU hosts each, one GPU used on every host."""
    nodes, domains = [], []
    for r in range(racks):
        names = [f"h-{r:02d}-{h:02d}" for h in range(hosts)]
        nodes += [CapacityNode(name=n, allocatable=8, requested=1, free=7, health="healthy",
                               domains={"accelerator-domain": f"rack-{r:02d}"}) for n in names]
        domains.append(CapacityDomain(level="accelerator-domain", name=f"rack-{r:02d}", nodes=names,
                                      allocatable=8 * hosts, requested=hosts, free=7 * hosts))
    return CapacityFlavor(name="taugrid-gpu-h100", gpu_class="h100", nodes=nodes, domains=domains,
                          gpus=GpuCounts(allocatable=8 * hosts * racks, requested=hosts * racks,
                                         free=7 * hosts * racks))


async def test_a_map_draws_at_most_a_screenful_of_hosts_and_says_what_it_left_out():
    app = fragmented_app()
    async with app.run_test(size=SIZE):
        tones = app.screen.tones
        drawn = text_of(render_flavor(big_flavor(10, 8), True, tones))
        assert drawn.count("■") == MAP_HOSTS == 64  # eight racks of eight hosts
        assert "rack-07" in drawn and "rack-08" not in drawn
        assert "+2 more accelerator-domains (16 hosts, 112 GPUs free) not drawn — / filters the nodes" in drawn
        assert "+" not in text_of(render_flavor(big_flavor(8, 8), True, tones))  # all of it fits: nothing left out
        # the filter picks the hosts, drawn in their blocks (a block keeps its domain's figures)
        only = text_of(render_flavor(big_flavor(10, 8), True, tones, frozenset({"h-09-03", "h-09-05"})))
        assert "rack-09" in only and only.count("■") == 2 and "56/64 free" in only and "more" not in only
        # one domain larger than the budget is cut, and says so
        cut = text_of(render_flavor(big_flavor(1, 100), True, tones))
        assert cut.count("■") == 64 and "+36 more hosts" in cut and "36 more hosts not drawn" in cut


class MapApp(App):
    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield BlockMap()


async def test_a_map_turns_only_the_lines_in_view_into_strips():
    app = MapApp()
    async with app.run_test(size=(80, 20)) as pilot:
        block = app.query_one(BlockMap)
        assert block.show(big_flavor(1, 60), True)
        await pilot.pause()
        assert block.size.height > 60  # the title, the block's borders and its 60 hosts
        # the lines on screen (twice at most: the scrollbar's arrival narrows the map once), not its 63
        assert 0 < block.lines_drawn <= 2 * 20
        assert not block.show(block._shown[0], True)  # the very flavor drawn: nothing to draw
        assert block.draws == 1
        app.query_one(VerticalScroll).scroll_end(animate=False)
        seen = block.lines_drawn
        assert await eventually(lambda: block.lines_drawn > seen)  # lines drawn as they come into view


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
