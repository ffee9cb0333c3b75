"""Big tables page: a KeyedTable holds one page of rows, `]`/`[` move between pages, `/` filters all."""

from __future__ import annotations

from textual.app import App, ComposeResult

from taudash.screens.kit.filtering import RowMeta, parse_filter
from taudash.screens.kit.text import lit
from taudash.screens.widgets.keyed_table import MORE_KEY, PAGE_ROWS, Col, KeyedTable, Row


class _TableApp(App):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def compose(self) -> ComposeResult:
        yield KeyedTable([Col("name", "name", 20), Col("why", "why", flex=True)], id="t")

    def on_mount(self) -> None:
        self.query_one(KeyedTable).sync(self.rows())
        self.query_one(KeyedTable).focus()

    def rows(self) -> list[Row]:
        return [Row(f"k{i:05d}", (lit(f"wl-{i:05d}"), lit("waits")), RowMeta(kind="Workload", namespace="ns",
                                                                          name=f"wl-{i:05d}", text=f"wl-{i:05d}"))
                for i in range(self.n)]


async def test_a_big_table_shows_one_page_and_pages_with_brackets():
    app = _TableApp(PAGE_ROWS * 2 + 10)
    async with app.run_test(size=(80, 20)) as pilot:
        t = app.query_one(KeyedTable)
        keys = t.visible_keys()
        assert len(keys) == PAGE_ROWS and keys[0] == "k00000"
        assert t.row_count == PAGE_ROWS + 1 and t._keys_on_screen()[-1] == MORE_KEY
        assert t.shown == t.total == PAGE_ROWS * 2 + 10
        await pilot.press("right_square_bracket")
        assert t.page == 1 and t.visible_keys()[0] == f"k{PAGE_ROWS:05d}"
        await pilot.press("right_square_bracket", "right_square_bracket")
        # The last page keeps the position row ("rows 1001–1010 of 1010").
        assert t.page == 2 and len(t.visible_keys()) == 10 and t._keys_on_screen()[-1] == MORE_KEY
        await pilot.press("left_square_bracket")
        assert t.page == 1
        # The filter searches every row, not only the page on screen.
        t.set_filter(parse_filter(f"wl-{PAGE_ROWS * 2 + 3:05d}"))
        await pilot.pause()
        assert t.visible_keys() == [f"k{PAGE_ROWS * 2 + 3:05d}"] and t.page == 0
        assert t.selected_key() != MORE_KEY


async def test_a_small_table_has_no_pages():
    app = _TableApp(12)
    async with app.run_test(size=(80, 20)) as pilot:
        t = app.query_one(KeyedTable)
        assert len(t.visible_keys()) == 12 and MORE_KEY not in t._keys_on_screen()
        await pilot.press("right_square_bracket")
        assert t.page == 0
