"""The LocalQueue view (queue_detail.LocalQueueDetailScreen): its pending Workloads with positions in the
LocalQueue and in the ClusterQueue, its admitted ones; drill-downs Queues → ClusterQueue → LocalQueue and
workspace → LocalQueue, esc back to where it came from; the visibility API's LocalQueue endpoint; SVG snapshot."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from factories import dashboard_app, local_queue
from test_queue_detail import open_queue, plain
from tools import yamlc
from tools.waiting import eventually

from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.queue_order import FROM_API, UNKNOWN, QueuePositions, cluster_queue_orders
from taudash.loading import DEMO_SNAPSHOT
from taudash.screens.object_detail import ObjectDetailScreen
from taudash.screens.queue_detail import LocalQueueDetailScreen, QueueDetailScreen
from taudash.screens.queues import QueuesScreen
from taudash.screens.widgets.keyed_table import KeyedTable
from taudash.screens.workspace_detail import WorkspaceDetailScreen
from taudash.screens.workspaces import WorkspacesScreen

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)
CQ = "tau-ws-train"
SECOND = "train/job-second-lq-probe"  # the one Workload of LocalQueue train/second, also in tau-ws-train


def two_local_queues(tmp_path):
    """The demo with a second LocalQueue feeding tau-ws-train, holding one pending Workload (a copy of a pending
    one)."""
    doc = yamlc.load(DEMO_SNAPSHOT.read_text())
    src = next(o for o in doc["objects"] if o["kind"] == "Workload"
               and o["metadata"]["name"] == "job-sweep-lr-3e-4-81fce")
    wl = copy.deepcopy(src)
    wl["metadata"].update(name=SECOND.split("/")[1], uid="0f0f0f0f-0000-4000-8000-000000000019")
    wl["spec"]["queueName"] = "second"
    doc["objects"] += [local_queue("second", "train", CQ), wl]
    path = tmp_path / "two-lq.yaml"
    path.write_text(yamlc.dump(doc, sort_keys=False))
    return path


def entries(app):
    return cluster_queue_orders(RuleContext(app.session.store, NOW, app.session.config))[CQ].entries


def key(e) -> str:
    return f"wl:{e.workload.namespace}/{e.workload.name}"


async def to_local_queue(app, pilot, row_key: str) -> LocalQueueDetailScreen:
    """From the ClusterQueue view on screen: highlight `row_key` in the pending list, press l."""
    pending = app.screen.query_one("#qd-pending", KeyedTable)
    pending.focus()
    pending.move_cursor(row=pending.get_row_index(row_key))
    await pilot.press("l")
    assert await eventually(lambda: isinstance(app.screen, LocalQueueDetailScreen))
    screen = app.screen
    assert await eventually(lambda: screen.fetches >= 1 and screen.query_one("#qd-pending", KeyedTable).visible_keys())
    await pilot.pause()
    return screen


async def test_queues_to_cluster_queue_to_local_queue_and_back(tmp_path):
    app = dashboard_app(two_local_queues(tmp_path), now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        cq_screen = await open_queue(app, pilot)
        order = entries(app)
        assert len(order) == 6 and f"wl:{SECOND}" in [key(e) for e in order]
        # the second LocalQueue: one row, its global position kept, 0 in its LocalQueue
        lq = await to_local_queue(app, pilot, f"wl:{SECOND}")
        assert lq.local_queue == ("train", "second") and lq.cq_name == CQ
        rows = lq.query_one("#qd-pending", KeyedTable)
        mine = next(e for e in order if key(e) == f"wl:{SECOND}")
        assert rows.visible_keys() == [f"wl:{SECOND}"]
        cells = [c.plain for c in rows.get_row(f"wl:{SECOND}")]
        # counted from one: the JSON's 0-based positions shown as #N
        assert cells[:2] == [f"#{mine.position_in_cluster_queue + 1}", "#1"] and mine.position_in_cluster_queue > 0
        title = plain(lq.query_one("#qd-title"))
        assert "LocalQueue train/second → ClusterQueue tau-ws-train" in title and "estimated order" in title
        assert lq.query_one("#qd-admitted", KeyedTable).visible_keys() == []  # nothing of `second` holds quota
        await pilot.press("escape")
        assert await eventually(lambda: app.screen is cq_screen)
        # jobqueue: every other pending Workload, in the ClusterQueue's order, #lq counting only its own
        lq = await to_local_queue(app, pilot, key(order[0]))
        jobq = [e for e in order if e.local_queue == "jobqueue"]
        rows = lq.query_one("#qd-pending", KeyedTable)
        assert rows.visible_keys() == [key(e) for e in jobq] and len(jobq) == 5
        shown = [[c.plain for c in rows.get_row(key(e))][:2] for e in jobq]
        assert shown == [[f"#{e.position_in_cluster_queue + 1}", f"#{i + 1}"] for i, e in enumerate(jobq)]
        holders = {f"adm:{w.namespace}/{w.name}" for w in app.session.store.list("Workload")
                   if w.quota_reserved and not w.finished and w.namespace == "train"
                   and w.spec.queue_name == "jobqueue"}
        assert set(lq.query_one("#qd-admitted", KeyedTable).visible_keys()) == holders and holders
        # y: the LocalQueue object; c: its ClusterQueue view; esc each time back where it came from
        await pilot.press("y")
        assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen))
        assert ((app.screen.ref.kind, app.screen.ref.namespace, app.screen.ref.name)
                == ("LocalQueue", "train", "jobqueue"))
        await pilot.press("escape")
        assert await eventually(lambda: app.screen is lq)
        await pilot.press("c")
        assert await eventually(lambda: type(app.screen) is QueueDetailScreen and app.screen is not cq_screen)
        assert app.screen.cq_name == CQ and app.screen.local_queue is None
        await pilot.press("escape")
        assert await eventually(lambda: app.screen is lq)
        await pilot.press("escape")
        assert await eventually(lambda: app.screen is cq_screen)
        await pilot.press("escape")
        assert await eventually(lambda: isinstance(app.screen, QueuesScreen))


async def test_workspace_opens_its_local_queue_and_back():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        assert await eventually(lambda: isinstance(app.screen, WorkspacesScreen))
        t = app.screen.query_one("#workspaces", KeyedTable)
        assert await eventually(lambda: "train" in t.visible_keys())
        t.move_cursor(row=t.get_row_index("train"))
        await pilot.press("enter")
        assert await eventually(lambda: isinstance(app.screen, WorkspaceDetailScreen))
        ws = app.screen
        await pilot.press("l")
        assert await eventually(lambda: isinstance(app.screen, LocalQueueDetailScreen))
        lq = app.screen
        assert lq.local_queue == ("train", "jobqueue") and lq.cq_name == CQ
        assert await eventually(lambda: lq.query_one("#qd-pending",
                                                     KeyedTable).visible_keys() == [key(e) for e in entries(app)])
        await pilot.press("escape")
        assert await eventually(lambda: app.screen is ws)
        await pilot.press("escape")
        assert await eventually(lambda: isinstance(app.screen, WorkspacesScreen))


async def test_local_queue_view_asks_the_local_queue_endpoint_and_unknown_is_not_empty():
    calls = []
    answer = {}

    async def fetch(*, cq=None, lq=None, limit=1000, offset=0):
        calls.append((cq, lq))
        return answer["pos"]

    app = dashboard_app(now=NOW, queue_positions=fetch)

    async with app.run_test(size=SIZE) as pilot:
        order = [e for e in entries(app)]
        items = tuple({"metadata": {"namespace": "train", "name": e.workload.name}, "priority": 5,
                       "localQueueName": "jobqueue", "positionInClusterQueue": 10 + i, "positionInLocalQueue": i}
                      for i, e in enumerate(reversed(order)))
        answer["pos"] = QueuePositions(CQ, ("train", "jobqueue"), FROM_API, "Synced", items)
        cq_screen = await open_queue(app, pilot)
        lq = await to_local_queue(app, pilot, key(order[0]))
        assert calls == [(CQ, None), (None, ("train", "jobqueue"))]  # the LocalQueue endpoint for the LocalQueue view
        rows = lq.query_one("#qd-pending", KeyedTable)
        assert rows.visible_keys() == [key(e) for e in reversed(order)]  # Kueue's order, not the estimate
        assert [c.plain for c in rows.get_row(key(order[-1]))][:2] == ["#11", "#1"]
        assert "from Kueue's visibility API" in plain(lq.query_one("#qd-title"))
        answer["pos"] = QueuePositions(CQ, ("train", "jobqueue"), UNKNOWN, "Forbidden", None,
                                       "visibility API forbidden (HTTP 403)")
        done = lq.fetches
        await pilot.press("r")
        assert await eventually(lambda: lq.fetches > done)
        await pilot.pause()
        assert rows.visible_keys() == []
        assert "positions unknown (visibility API forbidden" in plain(lq.query_one("#qd-title"))
        await pilot.press("escape")
        assert await eventually(lambda: app.screen is cq_screen)


async def test_l_without_a_highlighted_workload_says_so():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        assert await eventually(lambda: isinstance(app.screen, QueuesScreen))
        t = app.screen.query_one("#queues", KeyedTable)
        assert await eventually(lambda: "cq:tau-ws-eval" in t.visible_keys())
        t.move_cursor(row=t.get_row_index("cq:tau-ws-eval"))
        await pilot.press("enter")
        assert await eventually(lambda: isinstance(app.screen, QueueDetailScreen))
        screen = app.screen
        assert await eventually(lambda: screen.fetches >= 1)  # nothing pending in tau-ws-eval
        await pilot.pause()
        assert screen.query_one("#qd-pending", KeyedTable).visible_keys() == []
        screen.query_one("#qd-pending", KeyedTable).focus()
        await pilot.press("l")
        await pilot.pause()
        assert app.screen is screen
        assert any("highlight a Workload" in str(n.message) for n in app._notifications)


def test_local_queue_snapshot(snap_compare, tmp_path):
    async def run_before(pilot):
        await open_queue(pilot.app, pilot)
        await to_local_queue(pilot.app, pilot, f"wl:{SECOND}")

    assert snap_compare(dashboard_app(two_local_queues(tmp_path), now=NOW), run_before=run_before, terminal_size=SIZE)
