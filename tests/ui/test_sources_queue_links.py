"""Sources links to the queue views: `c` opens the highlighted waiting Workload's ClusterQueue view, `l` its
LocalQueue view, esc comes back; a row that only blocks a drain opens nothing and says why."""

from __future__ import annotations

from datetime import UTC, datetime

from factories import dashboard_app
from tools.waiting import eventually

from taudash.screens.queue_detail import LocalQueueDetailScreen, QueueDetailScreen
from taudash.screens.sources import SourcesScreen
from taudash.screens.widgets.keyed_table import KeyedTable

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


async def sources(app, pilot) -> KeyedTable:
    await pilot.press("5")
    assert await eventually(lambda: isinstance(app.screen, SourcesScreen) and app.screen.frame is not None)
    table = app.screen.query_one("#sources", KeyedTable)
    assert await eventually(lambda: bool(table.visible_keys()))
    return table


def first(table: KeyedTable, waiting: bool) -> str:
    return next(k for k in table.visible_keys() if (getattr(table.row(k), "wl", None) is not None) == waiting)


async def test_c_and_l_open_the_waiting_workloads_queues_and_esc_comes_back():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        table = await sources(app, pilot)
        key = first(table, waiting=True)
        wl = table.row(key).wl
        assert wl.cluster_queue and wl.queue_name  # the demo's waiting Workloads come through a LocalQueue
        table.focus()
        table.move_cursor(row=table.get_row_index(key))
        await pilot.press("c")
        assert await eventually(lambda: isinstance(app.screen, QueueDetailScreen)
                                and not isinstance(app.screen, LocalQueueDetailScreen))
        assert app.screen.cq_name == wl.cluster_queue
        await pilot.press("escape")
        assert await eventually(lambda: isinstance(app.screen, SourcesScreen))
        table = app.screen.query_one("#sources", KeyedTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(key))
        await pilot.press("l")
        assert await eventually(lambda: isinstance(app.screen, LocalQueueDetailScreen))
        assert app.screen.local_queue == (wl.namespace, wl.queue_name)
        await pilot.press("escape")
        assert await eventually(lambda: isinstance(app.screen, SourcesScreen))


async def test_a_row_that_only_blocks_a_drain_opens_no_queue_and_says_why():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        table = await sources(app, pilot)
        key = first(table, waiting=False)  # the demo's eval drain is held open by sources that do not wait
        table.focus()
        table.move_cursor(row=table.get_row_index(key))
        notes: list[str] = []
        original = app.notify
        app.notify = lambda message, *a, **kw: (notes.append(str(message)), original(message, *a, **kw))[1]
        for k in ("c", "l"):
            await pilot.press(k)
            await pilot.pause()
            assert isinstance(app.screen, SourcesScreen)
        assert len(notes) == 2 and all("only blocks a drain" in n for n in notes)
