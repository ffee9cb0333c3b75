"""A live table's render caches stay bounded by what a page shows: DataTable keys them by its update
count, so each refresh would otherwise add entries never read again (up to 10,000 cells a table)."""

from __future__ import annotations

from textual.app import App, ComposeResult

from taudash.screens.widgets.keyed_table import PAGE_ROWS, Col, KeyedTable, Row

COLUMNS = [Col("name", "NAME"), Col("count", "COUNT", right=True), Col("state", "STATE")]


class _Host(App[None]):
    def compose(self) -> ComposeResult:
        yield KeyedTable(COLUMNS, id="t")


async def test_refreshing_a_table_many_times_keeps_its_render_caches_to_a_pages_worth():
    app = _Host()
    async with app.run_test(size=(80, 40)) as pilot:
        table = app.query_one(KeyedTable)
        for tick in range(60):
            table.sync([Row(f"w{i}", (f"w{i}", str(tick * 100 + i), "Running" if tick % 2 else "Pending"))
                        for i in range(30)])
            await pilot.pause()
        cells = len(table._cell_render_cache)
        lines = len(table._line_cache)
    # Every tick rendered the rows on screen anew (30 rows × 3 cells), 60 ticks: 5,400 cells without a bound.
    assert cells <= 2 * PAGE_ROWS * len(COLUMNS), cells
    assert lines <= 2 * PAGE_ROWS, lines
    assert cells > 0
