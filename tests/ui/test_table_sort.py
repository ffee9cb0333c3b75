"""Sorting the keyed tables by any column: `o` cycles the column, `O` reverses, a header click sorts
by that column (again: reversed); stable, the selection follows its row, remembered per screen."""

from __future__ import annotations

from datetime import UTC, datetime

from factories import dashboard_app
from textual.widgets import DataTable
from tools.paths import FIXTURES

from taudash.screens.widgets.keyed_table import KeyedTable, sort_key

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)


def column(t: KeyedTable, col: str) -> list[str]:
    return [t.get_cell(k, col).plain for k in t.visible_keys()]


def header_labels(t: KeyedTable) -> list[str]:
    return [c.label.plain for c in t.columns.values()]


def test_sort_key_is_natural_and_puts_empty_last():
    values = ["10", "9", "-8 ⚠", "b", "A", "", "–", "3/3", "13 / 24"]
    assert sorted(values, key=sort_key) == ["-8 ⚠", "3/3", "9", "10", "13 / 24", "A", "b", "", "–"]
    assert sort_key("tau-ws-10") > sort_key("tau-ws-9")


async def test_findings_sort_by_key_and_header_click_keeps_selection_and_is_remembered():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("8")
        await pilot.pause()
        t = app.screen.query_one("#all-findings", KeyedTable)
        t.focus()
        await pilot.pause()
        given = t.visible_keys()
        assert len(given) > 3 and t.sort_column is None
        rules = column(t, "rule")
        assert rules != sorted(rules, key=sort_key)  # the screen's own ranking is not alphabetical
        # select a row, then sort: the cursor stays on the same row
        await pilot.press("down", "down")
        chosen = t.selected_key()
        await pilot.press("o")  # first column: severity
        await pilot.pause()
        assert t.sort_column == "sev" and not t.sort_reverse
        assert header_labels(t)[0] == "severity ▲"
        await pilot.press("o")  # next column: rule, ascending
        await pilot.pause()
        assert t.sort_column == "rule"
        assert column(t, "rule") == sorted(rules, key=sort_key)
        assert t.selected_key() == chosen
        # stable: equal rules keep the screen's order
        for rule in set(rules):
            same = [k for k in t.visible_keys() if t.get_cell(k, "rule").plain == rule]
            assert same == [k for k in given if k in same]
        await pilot.press("O")
        await pilot.pause()
        assert t.sort_reverse and column(t, "rule") == sorted(rules, key=sort_key, reverse=True)
        assert header_labels(t)[1] == "rule ▼" and t.selected_key() == chosen
        # a header click sorts by that column; the same header again reverses
        x = sum(c.get_render_width(t) for c in list(t.columns.values())[:2]) + 2  # inside the "object" header
        await pilot.click(t, offset=(x, 0))
        await pilot.pause()
        objects = column(t, "object")
        assert t.sort_column == "object" and not t.sort_reverse and objects == sorted(objects, key=sort_key)
        t.post_message(DataTable.HeaderSelected(t, t.columns["object"].key, 2, t.columns["object"].label))
        await pilot.pause()
        assert t.sort_reverse and column(t, "object") == sorted(objects, key=sort_key, reverse=True)
        # remembered while the session lasts: away and back, the sort holds
        await pilot.press("3")
        await pilot.pause()
        await pilot.press("8")
        await pilot.pause()
        t = app.screen.query_one("#all-findings", KeyedTable)
        assert (t.sort_column, t.sort_reverse) == ("object", True)
        # cycling past the last column returns to the screen's own order
        for _ in range(2):  # object → message → none
            t.cycle_sort()
        await pilot.pause()
        assert t.sort_column is None and t.visible_keys() == given
        assert "▲" not in "".join(header_labels(t)) and "▼" not in "".join(header_labels(t))


async def test_queues_sort_by_a_numeric_column_and_filter_still_applies():
    app = dashboard_app(FIXTURES / "ui-demo.yaml", now=NOW, demo=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        t = app.screen.query_one("#queues", KeyedTable)
        t.focus()
        given = t.visible_keys()
        for _ in range(7):  # name, stop, active, counts, inactive, nominal, reserved
            await pilot.press("o")
        await pilot.pause()
        assert t.sort_column == "reserved"
        got = column(t, "reserved")
        numbers = [float(v) for v in got if v.strip() not in ("", "–")]
        assert len(numbers) >= 3 and numbers == sorted(numbers)
        assert len(set(numbers)) > 1
        assert sorted(t.visible_keys()) == sorted(given)  # nothing lost, nothing added
        await pilot.press("O")
        await pilot.pause()
        rev = [float(v) for v in column(t, "reserved") if v.strip() not in ("", "–")]
        assert rev == sorted(numbers, reverse=True)
        # a sort on one screen does not sort another
        await pilot.press("8")
        await pilot.pause()
        assert app.screen.query_one("#all-findings", KeyedTable).sort_column is None
