"""The ClusterQueue detail (3 → Enter on a ClusterQueue): pending Workloads in Kueue's order with where
the positions came from, admitted ones, Enter → why, o → object, r → fetch again; SVG snapshot."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from factories import dashboard_app
from rich.console import Console
from tools.waiting import eventually

from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.eta import admission_times, estimate_wait
from taudash.engine.rules.queue_order import FROM_API, UNKNOWN, QueuePositions, cluster_queue_orders
from taudash.screens.object_detail import ObjectDetailScreen
from taudash.screens.queue_detail import QueueDetailScreen, WhyScreen
from taudash.screens.queues import QueuesScreen
from taudash.screens.widgets.keyed_table import KeyedTable

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)
CQ = "tau-ws-train"


def plain(widget) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(widget.content if hasattr(widget, "content") else widget.renderable)
    return console.export_text()


async def open_queue(app, pilot, cq: str = CQ) -> QueueDetailScreen:
    await pilot.press("3")
    assert await eventually(lambda: isinstance(app.screen, QueuesScreen))
    t = app.screen.query_one("#queues", KeyedTable)
    assert await eventually(lambda: f"cq:{cq}" in t.visible_keys())
    t.move_cursor(row=t.get_row_index(f"cq:{cq}"))
    await pilot.press("enter")
    assert await eventually(lambda: isinstance(app.screen, QueueDetailScreen))
    screen = app.screen
    assert await eventually(lambda: screen.fetches >= 1 and screen.query_one("#qd-pending", KeyedTable).visible_keys())
    await pilot.pause()
    return screen


def expected_order(app, cq: str = CQ) -> list[str]:
    ctx = RuleContext(app.session.store, NOW, app.session.config)
    return [f"wl:{e.workload.namespace}/{e.workload.name}" for e in cluster_queue_orders(ctx)[cq].entries]


async def test_estimated_order_without_a_visibility_api_and_the_keys():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_queue(app, pilot)
        pending = screen.query_one("#qd-pending", KeyedTable)
        assert pending.visible_keys() == expected_order(app) and len(pending.visible_keys()) == 5
        first = [c.plain for c in pending.get_row(pending.visible_keys()[0])]
        assert first[0] == "#1" and first[1] == "#1" and "gpu" in first[6]  # the head, counted from one
        title = plain(screen.query_one("#qd-title"))
        assert "estimated order" in title and "no visibility API" in title
        admitted = screen.query_one("#qd-admitted", KeyedTable)
        holders = {f"adm:{w.namespace}/{w.name}" for w in app.session.store.list("Workload")
                   if w.quota_reserved and not w.finished and w.status.admission.cluster_queue == CQ}
        assert set(admitted.visible_keys()) == holders and holders
        assert not any(k.startswith("adm:") and "mmlu" in k for k in admitted.visible_keys())  # another queue's
        # enter on a pending Workload: why it waits, in a modal
        pending.focus()
        pending.move_cursor(row=1)
        await pilot.press("enter")
        assert await eventually(lambda: isinstance(app.screen, WhyScreen))
        ns_name = expected_order(app)[1][3:]
        text = plain(app.screen.query_one("#why-text"))
        assert f"Why is {ns_name} waiting?" in text and "reasons" in text and "#2 in ClusterQueue" in text
        eta = estimate_wait(1, admission_times(app.session.store).get(CQ, []), NOW)
        assert f"likely admitted in {eta.text()}" in text
        await pilot.press("escape")
        assert await eventually(lambda: isinstance(app.screen, QueueDetailScreen))
        # r fetches again (a second worker run), o sorts (as on every screen), y opens the ClusterQueue object
        await pilot.press("r")
        assert await eventually(lambda: screen.fetches >= 2)
        await pilot.press("o")
        assert await eventually(lambda: screen.query_one("#qd-pending", KeyedTable).sort_column is not None)
        assert isinstance(app.screen, QueueDetailScreen)
        await pilot.press("y")
        assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen))
        assert app.screen.ref.kind == "ClusterQueue" and app.screen.ref.name == CQ
        await pilot.press("escape")
        assert await eventually(lambda: app.screen is screen)
        await pilot.press("escape")
        assert await eventually(lambda: isinstance(app.screen, QueuesScreen))


async def test_positions_from_the_session_s_visibility_fetch_and_unknown():
    calls = []
    answer = {"pos": None}

    async def fetch(*, cq=None, lq=None, limit=1000, offset=0):
        calls.append(cq)
        return answer["pos"]

    app = dashboard_app(now=NOW, queue_positions=fetch)

    # Kueue's answer wins over the estimate: here it reverses the estimated order
    async with app.run_test(size=SIZE) as pilot:
        order = expected_order(app)
        items = tuple({"metadata": {"namespace": k[3:].split("/")[0], "name": k[3:].split("/")[1]}, "priority": 7,
                       "localQueueName": "jobqueue", "positionInClusterQueue": i, "positionInLocalQueue": i}
                      for i, k in enumerate(reversed(order)))
        answer["pos"] = QueuePositions(CQ, None, FROM_API, "Synced", items)
        screen = await open_queue(app, pilot)
        assert calls == [CQ]
        pending = screen.query_one("#qd-pending", KeyedTable)
        assert pending.visible_keys() == list(reversed(order))
        assert "from Kueue's visibility API" in plain(screen.query_one("#qd-title"))
        # forbidden: unknown, never an empty queue that looks like "nothing pending"
        answer["pos"] = QueuePositions(CQ, None, UNKNOWN, "Forbidden", None, "visibility API forbidden (HTTP 403)")
        await pilot.press("r")
        assert await eventually(lambda: screen.fetches >= 2)
        await pilot.pause()
        assert pending.visible_keys() == []
        assert "positions unknown (visibility API forbidden" in plain(screen.query_one("#qd-title"))
        assert calls == [CQ, CQ]


def test_queue_detail_snapshot(snap_compare):
    async def run_before(pilot):
        await open_queue(pilot.app, pilot)

    assert snap_compare(dashboard_app(now=NOW), run_before=run_before, terminal_size=SIZE)


async def test_live_session_reads_the_simulator_s_visibility_api():
    from test_app_live import live_app

    from taudash.sim import visibility
    from taudash.sim.server import SimServer

    async with SimServer() as sim:
        app, source = await live_app(sim, read_only=True, reads_on_demand=True)  # positions as the dashboard asks
        try:
            async with app.run_test(size=SIZE) as pilot:
                screen = await open_queue(app, pilot)
                body = visibility.pending_workloads(sim.db, visibility.CLUSTERQUEUE_PENDING, "v1beta2", None, CQ, {})
                served = [f"wl:{i['metadata']['namespace']}/{i['metadata']['name']}" for i in body["items"]]
                assert served and screen.query_one("#qd-pending", KeyedTable).visible_keys() == served
                assert "from Kueue's visibility API" in plain(screen.query_one("#qd-title"))
                assert any("pendingworkloads" in r.path for r in sim.api.requests)
                sim.faults.forbid(visibility.CLUSTERQUEUE_PENDING)
                done = screen.fetches
                await pilot.press("r")
                assert await eventually(lambda: screen.fetches > done)
                await pilot.pause()
                assert screen.query_one("#qd-pending", KeyedTable).visible_keys() == []
                assert "positions unknown" in plain(screen.query_one("#qd-title"))
        finally:
            await source.stop()
            await source.target.close()


def test_why_modal_snapshot(snap_compare):
    async def run_before(pilot):
        screen = await open_queue(pilot.app, pilot)
        screen.query_one("#qd-pending", KeyedTable).focus()
        await pilot.press("enter")
        assert await eventually(lambda: isinstance(pilot.app.screen, WhyScreen))
        await pilot.pause()

    assert snap_compare(dashboard_app(now=NOW), run_before=run_before, terminal_size=SIZE)
