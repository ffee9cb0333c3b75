"""Column widths from content (screens/widgets/columns.py), names folded whole, and one unit per column
(screens/kit/format.py) — the pure parts of the responsive tables."""

from __future__ import annotations

from rich.text import Text

from taudash.engine.model import Quantity
from taudash.screens.kit.format import column_of, in_unit, unit_for
from taudash.screens.widgets.columns import PAD, fold, layout, natural_widths
from taudash.screens.widgets.keyed_table import Col

SPEC = [Col("name", "name", 16, ident=True), Col("state", "state", 8), Col("n", "n", 3, right=True),
        Col("msg", "message", flex=True)]


def test_natural_widths_read_labels_cells_and_the_sort_mark():
    assert natural_widths(SPEC, [(30, 5, 1, 80), (10, 8, 2, 20)]) == [30, 8, 2, 80]
    assert natural_widths(SPEC, [], sorted_key=2) == [4, 5, 3, 7]  # "n ▲"


def test_wide_table_gives_spare_width_to_the_message():
    w = layout(SPEC, [30, 8, 2, 20], 200)
    assert w[:3] == [30, 8, 2]
    assert sum(w) + PAD * len(SPEC) == 200


def test_narrow_table_takes_from_the_message_first_and_never_cuts_the_name_before_it():
    w = layout(SPEC, [30, 8, 2, 80], 80)
    assert w[0] == 30 and w[1] == 8 and w[2] == 2  # the name whole, short columns untouched
    assert w[3] == 80 - 8 - 30 - 8 - 2
    # narrower still: the message stops at its floor, then plain columns, then the name (it wraps)
    w = layout(SPEC, [30, 20, 2, 80], 50)
    assert w[3] == 12 and w[1] == 8
    assert w[0] == 50 - 8 - 12 - 8 - 2 and w[0] < 30
    assert sum(w) + PAD * len(SPEC) == 50


def test_a_name_never_gets_less_than_its_floor_until_everything_else_is_at_the_bone():
    w = layout(SPEC, [30, 20, 2, 80], 30)
    assert w[0] == 16  # the identifying floor
    assert w[1] < 8  # plain columns shrank below their floor first (past this the table scrolls)


def test_max_width_caps_plain_columns_but_not_names():
    spec = [Col("name", "name", 10, ident=True, max_width=12), Col("x", "x", 5, max_width=6)]
    assert layout(spec, [40, 20], 200) == [40, 6]


def test_fold_keeps_every_character_and_breaks_after_separators():
    t = Text("azure.research.remote.burst-training")
    out = fold(t, 16)
    lines = out.plain.split("\n")
    assert "".join(lines) == t.plain
    assert all(len(line) <= 16 for line in lines)
    assert lines[0] == "azure.research."  # after the dot past half the width, not mid-word
    short = Text("tau-ws-eval")
    assert fold(short, 16) is short  # fits: untouched


def test_fold_starts_continuation_lines_under_the_name_not_under_the_tree():
    out = fold(Text("  └ research-multikueue"), 18).plain
    assert out == "  └ research-\n    multikueue"
    assert all(len(line) <= 18 for line in out.split("\n"))


def test_fold_cuts_a_long_word_at_the_edge_and_keeps_styles():
    t = Text("x" * 10)
    t.stylize("bold", 0, 10)
    out = fold(t, 4)
    assert out.plain == "xxxx\nxxxx\nxx"
    assert all(s.style == "bold" for s in out.spans)


def test_one_unit_per_column_never_ti_beside_gi():
    a, b = Quantity.parse("5.2Ti"), Quantity.parse("1012.2Gi")
    assert (a.human(), b.human()) == ("5.2Ti", "1012.2Gi")  # what the cells read before
    u = unit_for([a, b])
    assert {in_unit(a, u)[-2:], in_unit(b, u)[-2:]} == {"Ti"}
    assert in_unit(b, u) == "0.99Ti" and in_unit(a, u) == "5.2Ti"
    # a value that would read 0.0 in the big unit takes the column one unit down
    small = Quantity.parse("20Gi")
    u = unit_for([a, b, small])
    assert [in_unit(q, u) for q in (a, b, small)] == ["5324.8Gi", "1012.2Gi", "20Gi"]


def test_units_leave_counts_and_missing_entries_alone():
    assert unit_for([Quantity.parse("287070m"), Quantity.parse("150")]) is None
    assert in_unit(Quantity.parse("287070m"), None) == "287.07"
    assert in_unit(None, None) == "–"
    assert unit_for([None, Quantity(0)]) is None
    col = column_of([{"memory": Quantity.parse("2Ti")}, {"memory": Quantity.parse("512Gi")}, None, {}], "memory")
    assert [col({"memory": Quantity.parse("2Ti")}), col({"memory": Quantity.parse("512Gi")}), col(None), col({})] == [
        "2Ti", "0.50Ti", "–", "–"]


async def test_widths_read_only_the_rows_on_the_page():
    """45k rows at bench size L: the layout measures the page (PAGE_ROWS), never every row, and a tick
    that hands the same rows again measures nothing."""
    from textual.app import App, ComposeResult

    from taudash.screens.widgets.keyed_table import PAGE_ROWS, KeyedTable, Row

    built: list[int] = []

    def cells(i: int) -> tuple:
        built.append(i)
        return (f"queue-{i}", "x" * (i % 50))

    rows = [Row(f"r{i}", (lambda i=i: cells(i))) for i in range(3000)]

    class One(App):
        def compose(self) -> ComposeResult:
            yield KeyedTable([Col("name", "name", 16, ident=True), Col("msg", "message", flex=True)])

    app = One()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(KeyedTable)
        table.sync(rows)
        await pilot.pause()
        assert table.shown == 3000
        assert 0 < len(set(built)) <= PAGE_ROWS and set(built) <= set(range(PAGE_ROWS))
        assert len(built) == len(set(built))  # measured and drawn from one build of each row
        built.clear()
        table.sync(list(rows))  # the next tick: a new list, the same Row objects
        await pilot.pause()
        assert built == []
        table.action_page(1)
        await pilot.pause()
        assert set(built) <= set(range(PAGE_ROWS, 2 * PAGE_ROWS)) and built


async def test_messages_wrap_into_the_room_below_the_rows_and_no_further():
    """A table filling the screen with 3 long messages: each wraps onto as many lines as let all rows fit
    (the last one ending in "…" when the message is longer); with more rows than room, one line each."""
    from textual.app import App, ComposeResult

    from taudash.screens.widgets.keyed_table import KeyedTable, Row

    long = " ".join(f"word{i}" for i in range(200))

    class Tall(App):
        CSS = "KeyedTable { height: 1fr; }"

        def compose(self) -> ComposeResult:
            yield KeyedTable([Col("name", "name", 16, ident=True), Col("msg", "message", flex=True)])

    app = Tall()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(KeyedTable)
        table.sync([Row(f"r{i}", (f"q{i}", long)) for i in range(3)])
        await pilot.pause()
        heights = [table.rows[f"r{i}"].height for i in range(3)]
        assert heights[0] > 1 and len(set(heights)) == 1
        assert sum(heights) <= table.size.height - table.header_height
        lines = table.get_cell("r0", "msg").plain.split("\n")
        assert len(lines) == heights[0] and lines[-1].endswith("…") and lines[0].startswith("word0 word1")
        table.sync([Row(f"r{i}", (f"q{i}", long)) for i in range(30)])  # more rows than the room: one line each
        await pilot.pause()
        assert {table.rows[f"r{i}"].height for i in range(30)} == {1}


HIDING = [Col("name", "name", 16, ident=True), Col("kind", "kind", 8, hide=2), Col("state", "state", 8, hide=1),
          Col("n", "n", 3, right=True), Col("msg", "message", flex=True)]


def test_the_least_important_column_hides_first_before_a_name_folds():
    natural = [30, 8, 8, 2, 40]
    assert layout(HIDING, natural, 120)[:4] == [30, 8, 8, 2]  # room for all: nothing hides
    w = layout(HIDING, natural, 60)  # 30+8+8+2+12 and five paddings do not fit: kind (hide=2) goes first
    assert w[1] == 0 and w[2] == 8 and w[0] == 30
    assert sum(w) + PAD * 4 == 60  # what hiding freed beyond the need went to the message
    w = layout(HIDING, natural, 50)  # then state; the name is still whole, never folded before they go
    assert w[1] == w[2] == 0 and w[0] == 30 and w[3] == 2


def test_without_columns_that_hide_the_name_folds_as_before():
    natural = [30, 8, 8, 2, 40]
    plain = [Col(c.key, c.label, c.width, flex=c.flex, right=c.right, ident=c.ident) for c in HIDING]
    w = layout(plain, natural, 50)
    assert 0 not in w and w[0] < 30  # nothing hidden: the name gave way (it folds)


def test_fold_breaks_at_the_space_before_a_name_that_fits_a_line_of_its_own():
    out = fold(Text("Workload train/job-rlhf-reward-model-ef709"), 38).plain
    assert out.split("\n") == ["Workload ", "train/job-rlhf-reward-model-ef709"]
    # a name longer than the line still folds after its separators
    out = fold(Text("Workload train/job-rlhf-reward-model-ef709"), 20).plain
    assert "".join(out.split("\n")) == "Workload train/job-rlhf-reward-model-ef709"
    assert fold(Text("  └ research-multikueue"), 40).plain == "  └ research-multikueue"
