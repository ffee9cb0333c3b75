"""One word for one thing: the count legend reads the same in the column
and the help, each screen is called by its registry title, the header's symbols are explained in `?` and
in a tooltip, and every filter example the README promises matches rows on the demo."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime

import pytest
from factories import dashboard_app
from rich.console import Console
from textual.widgets import Static
from tools.paths import REPO

from taudash.screens.kit.help import global_keys
from taudash.screens.queues import COLS as QUEUE_COLS
from taudash.screens.queues import QueuesScreen
from taudash.screens.registry import REGISTRY
from taudash.screens.widgets.filter_bar import FilterBar
from taudash.screens.widgets.header_bar import HEADER_LEGEND, HeaderBar
from taudash.screens.widgets.keyed_table import KeyedTable

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SCREENS = REPO / "screens"


def test_the_count_legend_is_one_word_in_the_column_and_the_help():
    counts = next(c.label for c in QUEUE_COLS if c.key == "counts")
    assert counts == "pnd·rsv·adm"
    assert counts in QueuesScreen.HELP  # the help explains the column by its own header
    sources = {p.name: p.read_text(encoding="utf-8") for p in SCREENS.rglob("*.py")}
    assert [n for n, text in sources.items() if "pend·resv" in text] == []  # the other spelling is gone
    assert "pend·resv" not in global_keys(REGISTRY)


@pytest.mark.parametrize("entry", list(REGISTRY), ids=lambda e: e.name)
def test_each_screen_help_names_it_by_its_registry_title(entry):
    first = entry.help.strip().split()[0].rstrip(":")
    assert first == entry.title, f"{entry.name}: help opens with {first!r}, the footer says {entry.title!r}"


async def test_the_sources_table_is_titled_with_the_screen_name():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press(REGISTRY.get("sources").key)
        await pilot.pause()
        title = str(app.screen.query_one(".section-title", Static).render())
        assert title.startswith(REGISTRY.get("sources").title.upper()), title


async def test_header_symbols_are_explained_in_help_and_in_a_tooltip():
    for words in ("● 25 s", "stale since", "captured", "gen N", "observed M ⚠", "⚠ unknown", "READ-ONLY"):
        assert words in HEADER_LEGEND and words in global_keys(REGISTRY)
    app = dashboard_app(now=NOW, writable=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        left = app.screen.query_one(HeaderBar).query_one("#hb-left", Static)
        assert "●" in str(left.render())  # the live demo shows the freshness dot …
        assert left.tooltip == HEADER_LEGEND  # … and hovering it says what it means
        await pilot.press("question_mark")
        await pilot.pause()
        shown = app.screen.query_one("#help-global-text", Static).content
        console = Console(width=200, record=True, file=io.StringIO())
        console.print(shown)
        assert "time since the last watch event" in console.export_text()


def readme_filter_examples() -> list[tuple[str, str]]:
    """(screen key, example) from the README's "Filter examples" table."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text[text.index("Filter examples"):]
    out = []
    for line in block.splitlines()[1:]:
        if not line.startswith("|"):
            if out:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        keys = re.findall(r"\b([1-9]) [A-Z]", cells[0])
        for key in keys:
            out += [(key, ex) for ex in re.findall(r"`([^`]+)`", cells[1])]
    return out


EXAMPLES = readme_filter_examples()


def test_the_readme_has_filter_examples_for_screens_with_tables():
    keys = {k for k, _ in EXAMPLES}
    assert {"1", "2", "3", "4", "5", "6", "7", "8"} <= keys
    assert ("5", "kind:Workload") in EXAMPLES


async def visible_after(pilot, raw: str) -> list[str]:
    screen = pilot.app.screen
    await pilot.press("slash")
    await pilot.pause()
    bar = screen.query_one(FilterBar)
    bar.value = raw  # as if typed: Input.Changed drives the filter
    await pilot.pause()
    table = screen.filter_table
    keys = table.visible_keys()
    await pilot.press("escape")
    await pilot.pause()
    if bar.is_open or table.filter.active:
        await pilot.press("escape")
        await pilot.pause()
    return keys


async def test_every_readme_filter_example_matches_rows_on_its_screen():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=(120, 36)) as pilot:
        for key in sorted({k for k, _ in EXAMPLES}):
            await pilot.press(key)
            await pilot.pause()
            table = app.screen.filter_table
            assert isinstance(table, KeyedTable)
            everything = table.visible_keys()
            assert everything, f"screen {key} shows no rows on the demo"
            assert await visible_after(pilot, "kind:NoSuchKind") == []  # the filter applies at all
            for k, example in EXAMPLES:
                if k != key:
                    continue
                shown = await visible_after(pilot, example)
                assert shown, f"screen {key}: the README's `{example}` matches no row"
                assert set(shown) <= set(everything)


async def test_kind_workload_on_sources_matches_waiting_workloads_shown_by_their_owner():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        table = app.screen.filter_table
        rows = {r.key: r.row_meta() for r in table._rows}
        waiting = sorted(k for k, r in rows.items() if r.kind == "Workload" or "Workload" in r.also)
        assert any(not k.startswith("Workload|") for k in waiting)  # some are shown by their Job or RayJob
        assert sorted(await visible_after(pilot, "kind:Workload")) == waiting
        blockers = sorted(set(rows) - set(waiting))
        assert blockers  # a Deployment that only blocks a drain is no Workload
        assert not set(await visible_after(pilot, "kind:Workload")) & set(blockers)
        assert sorted(await visible_after(pilot, "kind:Job")) == sorted(k for k in rows if k.startswith("Job|"))
