"""The MultiKueue screen's detail pane: the highlighted check's — or worker's — whole message, wrapped,
readable at 100 columns (M5's could not be read at any size); Down/Up past a table's edge and Tab move between the
checks, workers and objects tables. SVG snapshot at 100×30 with the failing M5 highlighted."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from factories import dashboard_app
from rich.console import Console
from tools.waiting import eventually

from taudash.screens.multikueue import MultiKueueScreen
from taudash.screens.widgets.keyed_table import KeyedTable

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
NARROW = (100, 30)


def pane_text(screen, width: int = 98) -> str:
    """The detail pane as the terminal shows it at `width` columns, its lines joined back into one text."""
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(screen.query_one("#mk-detail").content)
    return " ".join(" ".join(line.split()) for line in console.export_text().splitlines())


async def open_multikueue(app, pilot) -> MultiKueueScreen:
    await pilot.press("6")
    assert await eventually(lambda: isinstance(app.screen, MultiKueueScreen))
    await pilot.pause()
    return app.screen


def test_m5_detail_snapshot_at_100_columns(snap_compare):
    assert snap_compare(dashboard_app(now=NOW), press=["6", "down", "down", "down", "down"], terminal_size=NARROW)


async def test_the_highlighted_check_s_whole_message_and_keys_between_tables():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=NARROW) as pilot:
        screen = await open_multikueue(app, pilot)
        mk = app.session.last_frame.view.multikueue
        m5 = next(c for c in mk.checks if c.id == "M5")
        assert not m5.ok and len(m5.message) > 150  # longer than any message column at this width
        checks = screen.query_one("#mk-checks", KeyedTable)
        assert screen.focused is checks and "M1" in pane_text(screen)
        await pilot.press("down", "down", "down", "down")
        assert checks.selected_key() == "M5"
        text = pane_text(screen)
        assert " ".join(m5.message.split()) in text and "✖ fail" in text  # whole, at 100 columns
        # Down past the last check: the workers table, its highlighted worker's whole message
        workers = screen.query_one("#mk-workers", KeyedTable)
        await pilot.press("down", "down")
        assert screen.focused is workers and workers.selected_key() == "westus-2"
        west = next(w for w in mk.workers if w.name == "westus-2")
        assert len(west.message) > 40 and " ".join(west.message.split()) in pane_text(screen)
        await pilot.press("down")
        assert screen.focused.id == "mk-objects"
        await pilot.press("up")
        assert screen.focused is workers and workers.selected_key() == "westus-2"
        await pilot.press("up", "up")
        assert screen.focused is checks and checks.selected_key() == "M5" and "M5" in pane_text(screen)
        await pilot.press("tab")
        assert screen.focused is workers
        await pilot.press("shift+tab")
        assert screen.focused is checks
        await pilot.press("up", "up", "up", "up", "up", "up")  # the first table's top: stays
        assert screen.focused is checks and checks.selected_key() == "M1"
