"""The Pods view (`:pods`, `:po`, `:pods NS`, and `p` from a Workload, a node, a workspace and a queue), a Pod's log
screen (`l`: follow, previous, wrap, timestamps, search, save; 403 and "waiting to start" said in words) and
`:events` (a namespace's, or `:events all`). SVG snapshots at 120×36 against fixed on-demand reads; the keys by
Pilot. The simulator's side of logs: tests/e2e/test_pod_logs_e2e.py."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from factories import dashboard_app
from textual.widgets import Input, RichLog
from tools.waiting import eventually

from taudash.engine.pod_list import CLUSTER_QUEUE, LOCAL_QUEUE, NAMESPACE, NODE, WORKLOAD
from taudash.engine.rules.base import ObjRef
from taudash.engine.sources.ondemand import ERROR, FORBIDDEN, LOADING, SYNCED, EventsState, LogEnd, ObjectEvent
from taudash.screens.capacity import CapacityScreen
from taudash.screens.events import EventsScreen
from taudash.screens.kit.jump import JumpScreen
from taudash.screens.kit.messages import OpenObject, OpenQueue
from taudash.screens.object_detail import ObjectDetailScreen
from taudash.screens.pod_logs import LogScreen, split_stamp
from taudash.screens.pods import PodsScreen
from taudash.screens.queue_detail import LocalQueueDetailScreen, QueueDetailScreen
from taudash.screens.widgets.keyed_table import KeyedTable
from taudash.screens.workspace_detail import WorkspaceDetailScreen

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)
POD = ObjRef(kind="Pod", namespace="train", name="code-llm-sft-rdb25")
LINES = [f"2026-11-30T09:0{i // 6}:{i % 6}0.000000000Z step {i} loss {4 - i / 10:.4f} gpu_util 9{i % 10}%"
         for i in range(12)]
EVENTS = (
    ObjectEvent("Normal", "Started", "Started container main", 1, NOW - timedelta(seconds=40),
                NOW - timedelta(seconds=40), "kubelet", "e1", "Pod/code-llm-sft-rdb25", "train"),
    ObjectEvent("Warning", "FailedScheduling", "0/12 nodes are available: 12 Insufficient nvidia.com/gpu.", 7,
                NOW - timedelta(minutes=3, seconds=20), NOW - timedelta(hours=2), "default-scheduler", "e2",
                "Pod/sam2-finetune-2h5w6", "vision"),
    ObjectEvent("Normal", "Admitted", "Admitted by ClusterQueue tau-ws-train", 1, NOW - timedelta(hours=5, minutes=2),
                NOW - timedelta(hours=5, minutes=2), "kueue-admission", "e3", "Workload/job-code-llm-sft-6b7bb",
                "train"),
)


class FakeOnDemand:
    """Answers like KubeOnDemand from fixed data: a log (or a refusal), and Events per namespace."""

    namespace = "train"

    def __init__(self, log_end: LogEnd = LogEnd(SYNCED), events_access: str = SYNCED) -> None:
        self.log_end, self.events_access = log_end, events_access
        self.log_reads: list = []
        self.more = asyncio.Event()  # set: a followed read gets one more line
        self.watched: list[str | None] = []

    async def stream_log(self, ref, options, on_lines) -> LogEnd:
        self.log_reads.append((ref, options))
        if self.log_end.access != SYNCED:
            return self.log_end
        on_lines(list(LINES) if options.previous is False else ["2026-11-30T08:00:00.000000000Z the previous run"])
        if options.follow:
            await self.more.wait()
            self.more.clear()
            on_lines(["2026-11-30T09:05:00.000000000Z step 12 loss 2.8000 gpu_util 97%"])
            await asyncio.Event().wait()  # followed until cancelled
        return LogEnd(SYNCED)

    async def watch_namespace_events(self, namespace, on_change) -> None:
        self.watched.append(namespace)
        ref = ObjRef(kind="Namespace", namespace=None, name=namespace or "")
        on_change(EventsState(ref, LOADING))
        if self.events_access == FORBIDDEN:
            on_change(EventsState(ref, FORBIDDEN, (), 'HTTP 403: events is forbidden: cannot list resource "events"'))
            return
        shown = tuple(e for e in EVENTS if namespace is None or e.namespace == namespace)
        on_change(EventsState(ref, SYNCED, shown))
        await asyncio.Event().wait()

    async def watch_events(self, ref, uid, on_change) -> None:
        on_change(EventsState(ref, SYNCED, ()))
        await asyncio.Event().wait()

    async def full_object(self, ref):  # pragma: no cover - not asked here
        raise AssertionError("not asked")


def app_with(reader: FakeOnDemand | None = None):
    return dashboard_app(now=NOW, on_demand=reader if reader is not None else FakeOnDemand())


async def submit(pilot, app, line: str) -> None:
    await pilot.press("colon")
    assert await eventually(lambda: isinstance(app.screen, JumpScreen))
    app.screen.query_one(Input).value = line
    await pilot.press("enter")
    assert await eventually(lambda: not isinstance(app.screen, JumpScreen))


def cells(table: KeyedTable, key: str) -> list[str]:
    return [c.plain if hasattr(c, "plain") else str(c) for c in table.get_row(key)]


async def pods_shown(app) -> KeyedTable:
    assert await eventually(lambda: isinstance(app.screen, PodsScreen) and app.screen.query("#pods"))
    table = app.screen.query_one("#pods", KeyedTable)
    assert await eventually(lambda: table.visible_keys())
    return table


async def open_logs(app, pilot) -> LogScreen:
    app.post_message(OpenObject(POD))
    assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen))
    await pilot.press("l")
    assert await eventually(lambda: isinstance(app.screen, LogScreen) and app.screen.query("#log-status"))
    return app.screen


def log_text(screen: LogScreen) -> list[str]:
    return [strip.text for strip in screen.query_one("#log-view", RichLog).lines]


# --- snapshots ---------------------------------------------------------------------------------------


def test_snapshot_pods(snap_compare):
    async def go(pilot):
        await submit(pilot, pilot.app, "pods")
        await pods_shown(pilot.app)

    assert snap_compare(app_with(), run_before=go, terminal_size=SIZE)


def test_snapshot_log(snap_compare):
    async def go(pilot):
        screen = await open_logs(pilot.app, pilot)
        assert await eventually(lambda: len(screen.lines) == len(LINES))
        await pilot.press("t")  # with the timestamps
        await pilot.pause()

    assert snap_compare(app_with(), run_before=go, terminal_size=SIZE)


def test_snapshot_log_forbidden(snap_compare):
    reader = FakeOnDemand(LogEnd(FORBIDDEN, 'pods "code-llm-sft-rdb25" is forbidden: User "alice" cannot get resource '
                                 '"pods/log" in API group "" in the namespace "train"', 403))

    async def go(pilot):
        screen = await open_logs(pilot.app, pilot)
        assert await eventually(lambda: screen.end is not None)
        await pilot.pause()

    assert snap_compare(app_with(reader), run_before=go, terminal_size=SIZE)


def test_snapshot_events_all(snap_compare):
    async def go(pilot):
        await submit(pilot, pilot.app, "events all")
        screen = pilot.app.screen
        assert await eventually(lambda: isinstance(screen, EventsScreen) and
                                len(screen.query_one("#events", KeyedTable).visible_keys()) == 3)

    assert snap_compare(app_with(), run_before=go, terminal_size=SIZE)


# --- the Pods view -----------------------------------------------------------------------------------


async def test_pods_and_po_list_every_pod_and_pods_ns_one_namespace():
    app = app_with()
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "pods")
        table = await pods_shown(app)
        assert len(table.visible_keys()) == 24
        row = cells(table, "train/code-llm-sft-rdb25")
        assert row[1:] == ["Running", "aks-h100-27604139-vmss000004", "8", "0", "3h4m", "job-code-llm-sft-6b7bb"]
        assert cells(table, "vision/sam2-finetune-2h5w6")[1:3] == ["Pending", "– unscheduled"]
        await submit(pilot, app, "pods vision")
        assert await eventually(lambda: len(table.visible_keys()) == 3)
        assert app.screen.scope.kind == NAMESPACE and {k.split("/")[0] for k in table.visible_keys()} == {"vision"}
        await submit(pilot, app, "po all")
        assert await eventually(lambda: len(table.visible_keys()) == 24)
        await submit(pilot, app, "pods vision")
        assert await eventually(lambda: len(table.visible_keys()) == 3)
        await submit(pilot, app, "pods")  # every namespace again
        assert await eventually(lambda: len(table.visible_keys()) == 24)
        # `/` filters like any table; enter opens the Pod
        await pilot.press("slash", *"aks-h200", "enter")
        assert await eventually(lambda: len(table.visible_keys()) == 3)
        await pilot.press("enter")
        assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen))
        assert app.screen.ref.kind == "Pod" and app.screen.ref.namespace in ("train", "vision")


async def test_p_opens_the_pods_of_a_workload_a_node_a_workspace_and_a_queue():
    app = app_with()
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(OpenObject(ObjRef(kind="Workload", namespace="train", name="rayjob-hparam-search-a62ef")))
        assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen))
        await pilot.press("p")
        table = await pods_shown(app)
        assert app.screen.scope.kind == WORKLOAD and len(table.visible_keys()) == 4
        await pilot.press("escape")
        assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen))
        # a ClusterQueue and a LocalQueue
        app.post_message(OpenQueue("tau-ws-train"))
        assert await eventually(lambda: type(app.screen) is QueueDetailScreen)
        await pilot.press("p")
        table = await pods_shown(app)
        assert app.screen.scope.kind == CLUSTER_QUEUE
        assert {k.split("/")[0] for k in table.visible_keys()} == {"train"}
        await pilot.press("escape")
        app.post_message(OpenQueue("tau-ws-train", local_queue=("train", "jobqueue")))
        assert await eventually(lambda: isinstance(app.screen, LocalQueueDetailScreen))
        await pilot.press("p")
        await pods_shown(app)
        assert app.screen.scope.kind == LOCAL_QUEUE
        await pilot.press("escape")
        # a workspace: its namespace's Pods
        app.post_message(OpenObject(ObjRef(kind="TauWorkspace", namespace="tau-system", name="vision")))
        assert await eventually(lambda: isinstance(app.screen, WorkspaceDetailScreen))
        await pilot.press("p")
        table = await pods_shown(app)
        assert (app.screen.scope.kind, app.screen.scope.name) == (NAMESPACE, "vision")
        assert "workspace vision" in app.screen.title and len(table.visible_keys()) == 3


async def test_p_on_a_capacity_node_lists_that_nodes_pods():
    app = app_with()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        assert await eventually(lambda: isinstance(app.screen, CapacityScreen))
        nodes = app.screen.query_one("#cap-nodes", KeyedTable)
        assert await eventually(lambda: nodes.visible_keys())
        nodes.move_cursor(row=nodes.get_row_index("node:aks-h100-27604139-vmss000004"))
        await pilot.press("p")
        table = await pods_shown(app)
        assert app.screen.scope.kind == NODE and table.visible_keys() == ["train/code-llm-sft-rdb25"]


async def test_a_pods_view_of_unreadable_pods_says_so(store_of):
    from taudash.engine.store import AccessState

    app = app_with()
    app.session.store.set_access("Pod", AccessState.FORBIDDEN)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "pods")
        assert await eventually(lambda: isinstance(app.screen, PodsScreen) and app.screen.query("#pods-note"))
        note = app.screen.query_one("#pods-note")
        assert await eventually(lambda: "Pods are not readable" in str(note.content))


# --- logs --------------------------------------------------------------------------------------------


async def test_l_reads_the_log_and_the_keys_change_what_it_shows(state_dir):
    reader = FakeOnDemand()
    app = app_with(reader)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "pods")
        table = await pods_shown(app)
        table.move_cursor(row=table.get_row_index("train/code-llm-sft-rdb25"))
        await pilot.press("l")
        assert await eventually(lambda: isinstance(app.screen, LogScreen) and app.screen.query("#log-view"))
        screen = app.screen
        assert await eventually(lambda: len(log_text(screen)) == 12)
        ref, opts = reader.log_reads[-1]
        assert ref == POD and opts.follow and opts.timestamps and opts.tail_lines  # asked with timestamps, followed
        assert log_text(screen)[0] == split_stamp(LINES[0])[1]  # shown without them at first
        # follow: a new line arrives and is shown at the end
        reader.more.set()
        assert await eventually(lambda: len(log_text(screen)) == 13)
        assert log_text(screen)[-1].startswith("step 12")
        # t: timestamps shown, no new read
        reads = len(reader.log_reads)
        await pilot.press("t")
        assert await eventually(lambda: log_text(screen)[0] == LINES[0])
        assert len(reader.log_reads) == reads
        # w: wrap
        await pilot.press("w")
        assert await eventually(lambda: screen.query_one("#log-view", RichLog).wrap)
        # /: search keeps the matching lines; esc clears it
        await pilot.press("slash")
        assert await eventually(lambda: isinstance(app.focused, Input))
        await pilot.press(*"gpu_util 93", "enter")
        assert await eventually(lambda: len(log_text(screen)) == 1)
        assert "step 3 " in log_text(screen)[0]
        await pilot.press("escape")
        assert await eventually(lambda: len(log_text(screen)) == 13)
        # f: stop following (the read ends), f again reads anew
        await pilot.press("f")
        assert await eventually(lambda: not screen.options.follow and screen.end is not None)
        # s: saved to a file whose path is shown
        await pilot.press("s")
        assert await eventually(lambda: screen.saved)
        saved = open(screen.saved, encoding="utf-8").read().splitlines()
        assert saved[0] == LINES[0] and len(saved) == 13
        assert screen.saved.startswith(str(state_dir))
        assert screen.saved in str(screen.query_one("#log-status").content)
        # p: the previous container
        await pilot.press("p")
        assert await eventually(lambda: [split_stamp(x)[1] for x in log_text(screen)] == ["the previous run"])
        assert reader.log_reads[-1][1].previous
        await pilot.press("escape")
        assert await eventually(lambda: isinstance(app.screen, PodsScreen))


async def test_a_refused_log_is_said_in_words():
    reader = FakeOnDemand(LogEnd(ERROR, 'container "main" in pod "code-llm-sft-rdb25" is waiting to start: '
                                 'ContainerCreating', 400))
    app = app_with(reader)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_logs(app, pilot)
        status = screen.query_one("#log-status")
        assert await eventually(lambda: "is waiting to start: ContainerCreating" in str(status.content))
        assert log_text(screen) == []
    reader = FakeOnDemand(LogEnd(FORBIDDEN, "pods/log is forbidden", 403))
    app = app_with(reader)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_logs(app, pilot)
        status = screen.query_one("#log-status")
        assert await eventually(lambda: "not allowed to read logs (pods/log is forbidden)" in str(status.content))


async def test_a_snapshot_has_no_cluster_to_read_logs_from():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_logs(app, pilot)
        status = screen.query_one("#log-status")
        assert await eventually(lambda: "no cluster to ask" in str(status.content))


# --- events ------------------------------------------------------------------------------------------


async def test_events_show_the_context_namespace_then_all_newest_first():
    reader = FakeOnDemand()
    app = app_with(reader)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "events")
        assert await eventually(lambda: isinstance(app.screen, EventsScreen) and app.screen.query("#events"))
        table = app.screen.query_one("#events", KeyedTable)
        assert await eventually(lambda: len(table.visible_keys()) == 2)
        assert reader.watched == ["train"]  # the context's namespace
        assert cells(table, "train/e1") == ["Normal", "Started", "Pod/code-llm-sft-rdb25", "40s", "1",
                                            "Started container main"]
        assert cells(table, "train/e3")[3] == "5h2m"  # as kubectl prints it
        await submit(pilot, app, "events all")
        assert await eventually(lambda: len(table.visible_keys()) == 3)
        assert reader.watched[-1] is None
        assert table.visible_keys() == ["train/e1", "vision/e2", "train/e3"]  # newest first
        assert cells(table, "vision/e2")[2] == "vision/Pod/sam2-finetune-2h5w6"
        assert cells(table, "vision/e2")[3] == "3m20s"
        await submit(pilot, app, "events")  # the context's namespace again
        assert await eventually(lambda: len(table.visible_keys()) == 2)
        assert reader.watched[-1] == "train"
        await submit(pilot, app, "events all")
        assert await eventually(lambda: len(table.visible_keys()) == 3)
        await pilot.press("slash", *"Warning", "enter")
        assert await eventually(lambda: table.visible_keys() == ["vision/e2"])


async def test_forbidden_events_are_said_not_empty():
    app = app_with(FakeOnDemand(events_access=FORBIDDEN))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "events all")
        assert await eventually(lambda: isinstance(app.screen, EventsScreen) and app.screen.query("#events"))
        table = app.screen.query_one("#events", KeyedTable)
        assert await eventually(lambda: "forbidden (RBAC)" in table.empty_text)
        assert table.visible_keys() == []


async def test_a_pods_screen_composed_in_the_background_lists_pods_only_when_visited():
    """The list walks every Pod under the session's lock: the background composition at start-up leaves it for
    the first visit, which shows the newest frame whole."""
    app = dashboard_app(now=NOW, on_demand=FakeOnDemand(), precompose=True)
    async with app.run_test(size=SIZE) as pilot:
        assert await eventually(lambda: app.composed)
        (screen,) = app._screen_stacks["pods"]
        assert isinstance(screen, PodsScreen) and screen._rows is None  # composed, nothing listed
        await submit(pilot, app, "pods")
        table = await pods_shown(app)
        assert app.screen is screen and screen._rows is not None and len(table.visible_keys()) == 24


async def test_a_long_pods_list_builds_the_cells_of_the_page_shown_only(tmp_path, monkeypatch):
    # At L the cluster holds ~150k Pods: the Text of every row built on every view was most of the dashboard's
    # memory. The table draws one page; the other rows keep a way to build their cells, not the cells.
    import json

    from factories import object_list, pod

    import taudash.screens.pods as pods_screen
    from taudash.screens.widgets.keyed_table import PAGE_ROWS

    snap = tmp_path / "pods.json"
    snap.write_text(json.dumps(object_list([pod(f"p{i:03d}", "train", node="n1") for i in range(3 * PAGE_ROWS)])))
    built: list[str] = []
    real = pods_screen.pod_cells

    def counting(p, now, tones):
        built.append(p.name)
        return real(p, now, tones)

    monkeypatch.setattr(pods_screen, "pod_cells", counting)
    app = dashboard_app(snap, now=NOW, on_demand=FakeOnDemand())
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, app, "pods")
        table = await pods_shown(app)
        assert len(table.visible_keys()) == PAGE_ROWS and table.total == 3 * PAGE_ROWS
        assert set(built) == {f"p{i:03d}" for i in range(PAGE_ROWS)}  # the first page's Pods, and no other
        built.clear()
        table.focus()
        await pilot.press("right_square_bracket")  # the next page: its own rows are built when shown
        assert await eventually(lambda: "train/p100" in table.visible_keys())
        assert set(built) == {f"p{i:03d}" for i in range(PAGE_ROWS, 2 * PAGE_ROWS)}
        await pilot.press("slash", *"p25", "enter")  # the filter reads every row's text, not its cells
        assert await eventually(lambda: sorted(table.visible_keys()) == [f"train/p25{i}" for i in range(10)])
