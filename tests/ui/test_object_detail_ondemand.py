"""The object detail like an operator expects: the object's Events watched on demand while the screen
shows (Forbidden said, never an empty list), the whole YAML fetched on `y` for the kinds kept slim (marked partial
until then), `c`/`C` copy the name / YAML (OSC 52), PageDown/End scroll the YAML when it has focus, Down/Up and
Tab move between the tables and the YAML. Against a fixed on-demand reader (SVG snapshots) and the simulator."""

from __future__ import annotations

import asyncio
import base64
import io
from datetime import UTC, datetime, timedelta

import yaml
from factories import dashboard_app
from rich.console import Console
from tools.waiting import eventually

from taudash.engine.rules.base import ObjRef
from taudash.engine.sources.ondemand import FORBIDDEN, LOADING, NOT_FOUND, SYNCED, EventsState, FullObject, ObjectEvent
from taudash.screens.kit.messages import OpenObject
from taudash.screens.object_detail import PARTIAL, ObjectDetailScreen
from taudash.screens.widgets.keyed_table import KeyedTable

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)
WL = ObjRef(kind="Workload", namespace="eval", name="job-data-validate-fefac")
CQ = ObjRef(kind="ClusterQueue", namespace=None, name="tau-ws-train")  # six related objects, a long YAML
EVENTS = (
    ObjectEvent("Normal", "Admitted", "Admitted by ClusterQueue platform-cq, wait time since reservation was 0s", 1,
                NOW - timedelta(minutes=55), NOW - timedelta(minutes=55), "kueue-admission", "e-admitted"),
    ObjectEvent("Normal", "QuotaReserved", "Quota reserved in ClusterQueue platform-cq, wait time since queued was 41s",
                1, NOW - timedelta(minutes=55), NOW - timedelta(minutes=55), "kueue-admission", "e-reserved"),
    ObjectEvent("Warning", "Pending", "couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
                "flavor default-cpu, 2 more needed", 3, NOW - timedelta(minutes=56), NOW - timedelta(minutes=58),
                "kueue-admission", "e-pending"),
)


def plain(widget) -> str:
    console = Console(width=300, record=True, file=io.StringIO())
    console.print(widget.content if hasattr(widget, "content") else widget.renderable)
    return console.export_text()


class FixedOnDemand:
    """Answers like KubeOnDemand from fixed data: `events` (or Forbidden), the whole objects in `documents`."""

    def __init__(self, documents: dict, events=EVENTS, access: str = SYNCED) -> None:
        self.documents, self.events, self.access = documents, events, access
        self.watching = 0
        self.watched: list[tuple[ObjRef, str | None]] = []
        self.gets: list[ObjRef] = []

    async def full_object(self, ref: ObjRef) -> FullObject:
        self.gets.append(ref)
        doc = self.documents.get(ref)
        return FullObject(ref, SYNCED if doc else NOT_FOUND, doc, "" if doc else "HTTP 404", NOW.timestamp())

    async def watch_events(self, ref, uid, on_change) -> None:
        self.watching += 1
        self.watched.append((ref, uid))
        try:
            on_change(EventsState(ref, LOADING))
            if self.access == FORBIDDEN:
                on_change(EventsState(ref, FORBIDDEN, (),
                                      'HTTP 403: events is forbidden: cannot list resource "events"'))
                return
            on_change(EventsState(ref, SYNCED, tuple(self.events)))
            await asyncio.Event().wait()  # watching until cancelled
        finally:
            self.watching -= 1


def slim_app(access: str = SYNCED, ref: ObjRef = WL):
    """The demo dashboard with `ref` kept slim (no raw copy, as the live source keeps Workloads) and a fixed
    on-demand reader that knows its whole document."""
    reader = FixedOnDemand({}, access=access)
    app = dashboard_app(now=NOW, on_demand=reader)
    store = app.session.store
    reader.documents[ref] = store.raw(ref.kind, ref.name, ref.namespace)
    store.upsert(store.get(ref.kind, ref.name, ref.namespace), raw=None)
    return app


async def open_detail(app, pilot, ref: ObjRef = WL) -> ObjectDetailScreen:
    app.post_message(OpenObject(ref))
    assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen) and app.screen.ref == ref)
    screen = app.screen
    await pilot.pause()
    return screen


# --- Events ------------------------------------------------------------------------------------------------------


def test_events_and_partial_yaml_snapshot(snap_compare):
    async def run_before(pilot):
        screen = await open_detail(pilot.app, pilot)
        assert await eventually(lambda: screen.query_one("#od-events", KeyedTable).visible_keys())
        table = screen.query_one("#od-events", KeyedTable)
        table.focus()
        table.move_cursor(row=table.get_row_index("e-pending"))  # its whole message under the table
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()  # focus scrolls the body; a busy machine finishes it later
        await pilot.pause()

    assert snap_compare(slim_app(), run_before=run_before, terminal_size=SIZE)


async def test_events_show_newest_first_with_type_reason_age_count_message():
    app = slim_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(app, pilot)
        table = screen.query_one("#od-events", KeyedTable)
        assert await eventually(lambda: table.visible_keys() == ["e-admitted", "e-reserved", "e-pending"])
        cells = [c.plain for c in table.get_row("e-pending")]
        assert cells[:4] == ["Warning", "Pending", "56m", "3"] and cells[4].startswith("couldn't assign flavors")
        uid = app.session.get("Workload", WL.name, WL.namespace).metadata.uid
        assert app.session.on_demand.watched == [(WL, uid)]  # this object, by uid
        assert "watching" in plain(screen.query_one("#od-events-section .section-title"))


async def test_the_highlighted_event_shows_whole_while_the_events_table_has_focus():
    app = slim_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(app, pilot)
        table = screen.query_one("#od-events", KeyedTable)
        pane = screen.query_one("#od-event-detail")
        assert await eventually(lambda: table.visible_keys())
        assert not pane.display  # the related table has focus
        table.focus()
        table.move_cursor(row=table.get_row_index("e-pending"))
        await pilot.pause()
        text = " ".join(plain(pane).split())
        assert pane.display and EVENTS[2].message in text and "×3 · from kueue-admission" in text
        assert "2026-11-30 08:07:00 UTC → 2026-11-30 08:09:00 UTC" in text
        screen.query_one("#od-related", KeyedTable).focus()
        await pilot.pause()
        assert not pane.display


async def test_forbidden_events_are_said_never_an_empty_list():
    app = slim_app(access=FORBIDDEN)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(app, pilot)
        table = screen.query_one("#od-events", KeyedTable)
        assert await eventually(lambda: screen.events is not None and screen.events.access == FORBIDDEN)
        await pilot.pause()
        assert table.visible_keys() == []
        shown = " ".join(c.plain for c in table.get_row_at(0))
        assert "events: forbidden (RBAC)" in shown and "no events" not in shown
        assert "forbidden (RBAC)" in plain(screen.query_one("#od-events-section .section-title"))


async def test_a_snapshot_has_no_cluster_to_ask_and_says_so():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(app, pilot)
        table = screen.query_one("#od-events", KeyedTable)
        shown = " ".join(c.plain for c in table.get_row_at(0))
        assert "events: not available" in shown and "no cluster to ask" in shown and "no events" not in shown
        await pilot.press("y")  # whole already (a snapshot keeps every document): nothing to fetch, no warning
        await pilot.pause()
        assert (screen.focused.id
                == "od-yaml-view" and "read-only, as observed" in plain(screen.query_one("#od-yaml-title")))


async def test_events_are_watched_only_while_the_detail_shows():
    app = slim_app()
    od = app.session.on_demand
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(app, pilot)
        assert await eventually(lambda: od.watching == 1)
        related = screen.query_one("#od-related", KeyedTable)
        related.focus()
        related.move_cursor(row=related.get_row_index(related.visible_keys()[0]))
        await pilot.press("enter")  # follow the owner link: this detail is covered, its watch stops
        assert await eventually(lambda: app.screen is not screen and isinstance(app.screen, ObjectDetailScreen))
        assert await eventually(lambda: od.watching == 1 and len(od.watched) == 2)  # only the owner's
        await pilot.press("escape")
        assert await eventually(lambda: app.screen is screen and od.watching == 1 and len(od.watched) == 3)
        await pilot.press("escape")  # closed: nothing is watched
        assert await eventually(lambda: not isinstance(app.screen, ObjectDetailScreen) and od.watching == 0)


# --- the whole YAML on demand ---------------------------------------------------------------------------------------


async def test_y_fetches_the_whole_object_of_a_slim_kind():
    app = slim_app()
    od = app.session.on_demand
    whole = od.documents[WL]
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(app, pilot)
        title = screen.query_one("#od-yaml-title")
        assert PARTIAL in plain(title)
        before = screen._yaml_text
        assert "image:" not in before and before.startswith("apiVersion")  # the fields taudash reads
        await pilot.press("y")  # the session is read-only (a snapshot): a GET is a read, still allowed
        assert await eventually(lambda: screen.full is not None and not screen.fetching)
        await pilot.pause()
        assert od.gets == [WL] and screen.focused.id == "od-yaml-view"
        assert PARTIAL not in plain(title) and "the whole object (GET at 09:05:00 UTC" in plain(title)
        assert yaml.safe_load(screen._yaml_text) == whole and "image:" in screen._yaml_text


async def test_a_failed_get_keeps_the_partial_mark_and_says_why():
    app = slim_app()
    app.session.on_demand.documents.clear()  # the object is gone from the cluster
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(app, pilot)
        await pilot.press("y")
        assert await eventually(lambda: screen.full is not None)
        await pilot.pause()
        title = plain(screen.query_one("#od-yaml-title"))
        assert PARTIAL in title and "the whole object: notfound (HTTP 404)" in title


# --- copy ---------------------------------------------------------------------------------------------------------


async def test_c_copies_the_name_and_shift_c_the_yaml_over_osc52():
    app = slim_app()
    async with app.run_test(size=SIZE) as pilot:
        written: list[str] = []
        write = app._driver.write
        app._driver.write = lambda data: (written.append(data), write(data))[1]
        screen = await open_detail(app, pilot)
        await pilot.press("c")
        assert app.clipboard == WL.name
        assert f"\x1b]52;c;{base64.b64encode(WL.name.encode()).decode()}\a" in written
        await pilot.press("C")
        assert app.clipboard == screen._yaml_text and app.clipboard.startswith("apiVersion")
        notes = [n.message for n in app._notifications]
        assert any(f"copied the name “{WL.name}”" in m for m in notes)
        assert any("copied the YAML of Workload eval/job-data-validate-fefac" in m and "partial" in m for m in notes)


# --- scrolling follows focus; keys between the panes ---------------------------------------------------------------


async def test_pagedown_and_end_move_the_yaml_when_it_has_focus():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_detail(app, pilot, CQ)
        body = screen.query_one("#body")
        related = screen.query_one("#od-related", KeyedTable)
        assert screen.focused is related and related.row_count > 2
        y0, row0 = body.scroll_y, related.cursor_row
        await pilot.press("pagedown")  # the related table has focus: it moves, the YAML stays
        assert related.cursor_row > row0
        await pilot.press("y")
        await pilot.pause()
        title, yv = screen.query_one("#od-yaml-title"), screen.query_one("#od-yaml-view")
        assert screen.focused is yv and body.scroll_y == yv.virtual_region.y  # the YAML from its top
        assert title.region.y == body.region.y  # its heading is the first line of the view
        y1 = body.scroll_y
        await pilot.press("pagedown")
        assert body.scroll_y > y1 and related.cursor_row > row0
        await pilot.press("end")
        assert body.scroll_y == body.max_scroll_y > y1
        await pilot.press("home")
        assert body.scroll_y == yv.virtual_region.y and y0 <= body.scroll_y
        await pilot.press("up")  # at the YAML's top: up leaves for the table above
        assert screen.focused.id == "od-events"


async def test_down_past_the_last_row_and_tab_move_between_tables_and_the_yaml():
    app = slim_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_detail(app, pilot)
        related = screen.query_one("#od-related", KeyedTable)
        events = screen.query_one("#od-events", KeyedTable)
        assert await eventually(lambda: events.visible_keys())
        related.move_cursor(row=related.row_count - 1)
        await pilot.press("down")
        assert screen.focused is events and events.cursor_row == 0
        await pilot.press("up")
        assert screen.focused is related and related.cursor_row == related.row_count - 1
        await pilot.press("tab")
        assert screen.focused is events
        await pilot.press("tab")
        assert screen.focused.id == "od-yaml-view"
        await pilot.press("shift+tab")
        assert screen.focused is events
        await pilot.press("down", "down", "down")  # three events: the third Down leaves for the YAML
        assert screen.focused.id == "od-yaml-view"


# --- live: the simulator's Events and GET ---------------------------------------------------------------------------


async def test_live_events_and_whole_yaml_from_the_simulator():
    from test_app_live import live_app

    from taudash.sim.server import SimServer

    async with SimServer(simulate=True, speed=60) as sim:
        app, source = await live_app(sim, read_only=True, reads_on_demand=True)
        try:
            async with app.run_test(size=SIZE) as pilot:
                def admitted():
                    return [e["involvedObject"]
                            for e in sim.db.list("Event", field_selector="involvedObject.kind=Workload")
                            if e["reason"] == "Admitted"
                            and app.session.get("Workload", e["involvedObject"]["name"],
                                                e["involvedObject"]["namespace"])]

                assert await eventually(admitted, 60), "the simulated Kueue admits a Workload"
                io_ = admitted()[0]
                ref = ObjRef(kind="Workload", namespace=io_["namespace"], name=io_["name"])
                screen = await open_detail(app, pilot, ref)
                table = screen.query_one("#od-events", KeyedTable)
                assert await eventually(lambda: screen.events is not None and screen.events.access == SYNCED
                                        and {"QuotaReserved", "Admitted"} <= {e.reason for e in screen.events.events})
                lasts = [e.last for e in screen.events.events]
                assert lasts == sorted(lasts, reverse=True)  # newest first
                await pilot.pause()
                assert {table.get_row(k)[1].plain for k in table.visible_keys()} >= {"QuotaReserved", "Admitted"}
                assert PARTIAL in plain(screen.query_one("#od-yaml-title"))
                await pilot.press("y")
                assert await eventually(lambda: screen.full is not None and screen.full.access == SYNCED)
                assert screen.full.document["spec"] == sim.db.get("Workload", ref.name, ref.namespace)["spec"]
                assert sim.api.writes == {}  # read-only: reads only
                # RBAC takes the Events away: the next detail says so
                sim.faults.forbid("events")
                await pilot.press("escape")
                screen = await open_detail(app, pilot, ref)
                assert await eventually(lambda: screen.events is not None and screen.events.access == FORBIDDEN)
                await pilot.press("escape")
                assert await eventually(lambda: sim.api.open_watches("events") == 0)
        finally:
            await source.stop()
            await source.target.close()
