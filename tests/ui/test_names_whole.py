"""At 100 columns the identifying column of every row is shown whole: read from the cells the
DataTable renders — a name wider than its column wraps onto more lines, never ends in "…".

Each screen is checked two ways: every drawn row's identifying cell, rendered, holds the cell's whole text;
and the names the cluster has (queues, profiles, workspaces, finding objects…) are among them.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import pytest_asyncio
from factories import dashboard_app
from rich.style import Style
from test_fleet_screen import snapshot_fleet
from tools.shared_app import back_home
from tools.waiting import eventually

from taudash.engine.rules.base import ObjRef
from taudash.fleet_app import FleetApp
from taudash.screens.kit.format import ref_text
from taudash.screens.kit.messages import Navigate, OpenObject, OpenQueue
from taudash.screens.widgets.keyed_table import EMPTY_KEY, MORE_KEY, KeyedTable

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
NARROW = (100, 30)


def rendered_lines(table: KeyedTable, row_key: str, col_key: str) -> list[str]:
    """The lines the table draws for one cell (padding included), as plain text."""
    row, col = table.get_row_index(row_key), table.get_column_index(col_key)
    width = table.ordered_columns[col].get_render_width(table)
    return ["".join(seg.text for seg in line) for line in table._render_cell(row, col, Style(), width)]


def squeeze(text: str) -> str:
    return "".join(text.split())


def whole_names(screen) -> dict[str, list[str]]:
    """Per table with an identifying column: the rendered identifying cell of each drawn row, squeezed
    (a fold may break a name at a space), after checking it holds the row's whole cell text."""
    out: dict[str, list[str]] = {}
    for table in screen.query(KeyedTable):
        ident = [c.key for c in table.spec if c.ident]
        if not ident:
            continue
        col = ident[0]
        at = [c.key for c in table.spec].index(col)
        names = []
        for key in table.visible_keys():
            if key in (EMPTY_KEY, MORE_KEY):
                continue
            lines = rendered_lines(table, key, col)
            drawn = "".join(lines)
            cells = table.row(key).cells
            intended = (cells() if callable(cells) else cells)[at]
            text = intended.plain if hasattr(intended, "plain") else str(intended)
            assert "…" not in drawn, f"{table.id}: {text!r} cut to {lines!r}"
            assert squeeze(text) in squeeze(drawn), f"{table.id}: {text!r} drawn as {lines!r}"
            assert len(lines) == table.rows[key].height  # the row is as tall as its folded name
            names.append(squeeze(drawn))
        out[table.id or col] = names
    return out


def contains(names: list[str], wanted: str) -> bool:
    return any(squeeze(wanted) in n for n in names)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def narrow_dashboard():
    """One demo dashboard at 100 columns for the tests below: they switch screens, open details (each starting
    from the home screen, tools/shared_app.py back_home) and read tables, never change anything."""
    async with dashboard_app(now=NOW).run_test(size=NARROW) as pilot:
        yield pilot


@pytest.mark.parametrize("key,table,expected", [
    ("1", "findings", lambda v: [ref_text(f.object).plain for f in v.findings]),
    ("2", "pool-inventory", lambda v: [f.name for f in v.pool.flavors]),
    ("2", "pool-reserved", lambda v: [f.name for f in v.pool.flavors]),
    ("2", "pool-queues", lambda v: [q.cluster_queue for q in v.pool.queues]),
    ("3", "queues", lambda v: [q.name for q in v.cluster_queues] + [c.name for c in v.cohorts]),
    ("4", "workspaces", lambda v: [w.name for w in v.workspaces]),
    ("5", "sources", lambda v: [f"{w.namespace}/{w.owner_name or w.name}" for w in v.waiting][:50]),
    ("6", "mk-workers", lambda v: [w.name for w in v.multikueue.workers]),
    ("7", "pr-profiles", lambda v: [p.name for p in v.profiles.profiles]),
    ("7", "pr-checks", lambda v: [c.id for c in v.profiles.checks]),
    ("7", "pr-select", lambda v: [s.namespace for s in v.profiles.selections]),
    ("8", "all-findings", lambda v: [ref_text(f.object).plain for f in v.findings]),
])
@pytest.mark.asyncio(loop_scope="module")
async def test_identifying_column_whole_at_100(narrow_dashboard, key, table, expected):
    pilot = narrow_dashboard
    await pilot.press(key)
    screen = pilot.app.screen
    assert await eventually(lambda: screen.frame is not None and bool(screen.query(f"#{table}")))
    await pilot.pause()
    names = whole_names(screen)
    assert table in names, f"#{table} has no identifying column"
    wanted = expected(screen.frame.view)
    assert wanted, "the demo cluster has rows here"
    missing = [w for w in wanted if not contains(names[table], w)]
    assert not missing, f"#{table}: not shown whole: {missing} among {names[table]}"


@pytest.mark.asyncio(loop_scope="module")
async def test_workspace_detail_names_whole_at_100(narrow_dashboard):
    pilot = narrow_dashboard
    app = pilot.app
    await back_home(pilot)
    await pilot.press("4", "enter")
    assert await eventually(lambda: type(app.screen).__name__ == "WorkspaceDetailScreen")
    await pilot.pause()
    names = whole_names(app.screen)
    assert names["wsd-conditions"], "the conditions table lists conditions"
    assert names["wsd-blockers"], "eval's drain is blocked: blockers are listed"
    assert contains(names["wsd-blockers"], "eval/web-ui")


@pytest.mark.asyncio(loop_scope="module")
async def test_queue_detail_names_whole_at_100(narrow_dashboard):
    pilot = narrow_dashboard
    app = pilot.app
    await back_home(pilot)
    app.post_message(OpenQueue("tau-ws-train"))
    assert await eventually(lambda: type(app.screen).__name__ == "QueueDetailScreen")
    screen = app.screen
    # pushed is not composed yet: on a busy machine the table may not exist at the first look
    assert await eventually(lambda: bool(screen.query("#qd-admitted"))
                            and bool(screen.query_one("#qd-admitted", KeyedTable).visible_keys()))
    await pilot.pause()
    names = whole_names(screen)
    assert names["qd-admitted"], "tau-ws-train admits Workloads in the demo"


async def test_fleet_names_whole_at_100():
    app = FleetApp(snapshot_fleet(), clock=lambda: NOW, tick=3600.0, precompose=False)
    async with app.run_test(size=NARROW) as pilot:
        assert await eventually(lambda: type(app.screen).__name__ == "FleetScreen" and app.screen.frame is not None)
        table = app.screen.query_one("#fleet", KeyedTable)
        assert await eventually(lambda: len(table.visible_keys()) == 3)
        await pilot.pause()
        names = whole_names(app.screen)
        assert all(contains(names["fleet"], c) for c in ("prod-manager", "eastus-2", "westus-2"))


async def test_history_names_whole_at_100(tmp_path):
    from tools.history_fixture import NOW as HNOW
    from tools.history_fixture import QUEUES, build, demo_session

    from taudash.app import TaudashApp
    from taudash.engine.history.reader import HistoryReader

    session = demo_session(HistoryReader(build(tmp_path / "h.sqlite3")))
    app = TaudashApp(session, clock=lambda: HNOW, tick=3600, precompose=False)
    async with app.run_test(size=NARROW) as pilot:
        app.post_message(Navigate("history"))
        assert await eventually(lambda: type(app.screen).__name__ == "HistoryScreen" and app.screen.loaded)
        await pilot.pause()
        names = whole_names(app.screen)
        assert all(contains(names["hist-queues"], q) for q in QUEUES)


@pytest.mark.asyncio(loop_scope="module")
async def test_object_detail_names_whole_at_100(narrow_dashboard):
    pilot = narrow_dashboard
    app = pilot.app
    await back_home(pilot)
    app.post_message(OpenObject(ObjRef(kind="ClusterQueue", name="tau-ws-vision")))
    assert await eventually(lambda: type(app.screen).__name__ == "ObjectDetailScreen")
    await pilot.pause()
    whole_names(app.screen)  # every table with an identifying column: whole


async def test_a_cut_name_is_caught():
    """The check itself fails when a name is cut: a table whose identifying column is not marked ident
    crops with an ellipsis (negative control for whole_names)."""
    from textual.app import App, ComposeResult

    from taudash.screens.widgets.keyed_table import Col, Row

    long = "azure.research.remote.burst-training-very-long-profile-name"

    class Narrow(App):
        def compose(self) -> ComposeResult:
            yield KeyedTable([Col("n", "name", 12, max_width=12), Col("m", "message", flex=True)], id="t")

    app = Narrow()
    async with app.run_test(size=(40, 10)) as pilot:
        t = app.query_one(KeyedTable)
        t.sync([Row("a", (long, "x"))])
        await pilot.pause()
        assert "…" in "".join(rendered_lines(t, "a", "n"))
        t.spec = [Col("n", "name", 12, ident=True), Col("m", "message", flex=True)]
        t._layout = None
        t.clear(columns=True)
        t.sync([Row("a", (long, "x"))])
        await pilot.pause()
        lines = rendered_lines(t, "a", "n")
        assert "…" not in "".join(lines) and squeeze(long) in squeeze("".join(lines))
        assert len(lines) > 1 and t.rows["a"].height == len(lines)
