"""Themes: the Textual theme picker (ctrl+p → theme) switches the dashboard, the visible screen redraws
at once, and the semantic colours come from the theme's variables in light and dark themes alike. SVG snapshots
of three screens in textual-light."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from factories import dashboard_app
from textual.color import Color
from textual.command import CommandPalette
from textual.theme import BUILTIN_THEMES
from tools.waiting import eventually, palette_results

from taudash.screens.kit.text import app_tones, tones_for
from taudash.screens.multikueue import MultiKueueScreen
from taudash.screens.widgets.keyed_table import KeyedTable

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)
LIGHT = "textual-light"


def light(pilot_keys: list[str]):
    async def run_before(pilot):
        pilot.app.theme = LIGHT
        await pilot.pause()
        if pilot_keys:
            await pilot.press(*pilot_keys)
        await pilot.pause()

    return run_before


def test_overview_light(snap_compare):
    assert snap_compare(dashboard_app(now=NOW), run_before=light([]), terminal_size=SIZE)


def test_multikueue_light(snap_compare):
    assert snap_compare(dashboard_app(now=NOW), run_before=light(["6", "down", "down", "down", "down"]),
                        terminal_size=SIZE)


def test_queues_light(snap_compare):
    assert snap_compare(dashboard_app(now=NOW), run_before=light(["3"]), terminal_size=SIZE)


def test_object_detail_light(snap_compare):
    from test_object_detail_ondemand import WL, open_detail, slim_app

    async def run_before(pilot):
        pilot.app.theme = LIGHT
        screen = await open_detail(pilot.app, pilot, WL)
        assert await eventually(lambda: screen.query_one("#od-events", KeyedTable).visible_keys())
        await pilot.press("y")  # the whole YAML, its syntax colours for a light background
        assert await eventually(lambda: screen.full is not None)
        await pilot.pause()

    assert snap_compare(slim_app(), run_before=run_before, terminal_size=SIZE)


@pytest.mark.parametrize("name", ["textual-dark", "textual-light", "solarized-light", "nord", "gruvbox"])
def test_semantic_colours_come_from_the_theme(name):
    v = BUILTIN_THEMES[name].to_color_system().generate()
    tones = tones_for(v)
    is_light = Color.parse(v["background"]).brightness > 0.5
    prefix = "text-" if is_light else ""  # light themes: the theme's own shades meant for text
    for tone, var in (("ok", "success"), ("warn", "warning"), ("bad", "error"), ("accent", "accent")):
        assert tones.of(tone).color.name.lower() == Color.parse(v[prefix + var]).hex.lower(), (name, tone)
    background = Color.parse(v["background"])
    for tone in ("ok", "warn", "bad"):  # legible: every semantic colour stands off the background
        rgb = tones.of(tone).color.triplet
        assert abs(Color(*rgb).brightness - background.brightness) > 0.2, (name, tone)
    badge = tones.badge_warn
    assert badge.bgcolor.name.lower() == Color.parse(v["warning"]).hex.lower()
    assert abs(Color(*badge.color.triplet).brightness - Color(*badge.bgcolor.triplet).brightness) > 0.3, name


async def test_the_theme_picker_switches_and_the_screen_redraws_at_once():
    app = dashboard_app(now=NOW)  # a one-hour tick: only the theme change can redraw the screen
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        assert await eventually(lambda: isinstance(app.screen, MultiKueueScreen))
        screen = app.screen
        checks = screen.query_one("#mk-checks", KeyedTable)
        dark_bad = app_tones(app).bad.color
        assert any(s.style.color == dark_bad for s in checks.get_row("M5")[2].spans)  # "✖ fail" in the error colour
        await pilot.press("ctrl+p")
        assert await eventually(lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"theme")
        await palette_results(pilot, "theme", expect="theme")
        await pilot.press("enter")  # the theme picker: a palette of themes
        assert await eventually(lambda: isinstance(app.screen, CommandPalette)
                                and app.screen.query_one("Input").value == "")
        await pilot.press(*LIGHT)
        await palette_results(pilot, LIGHT, expect=LIGHT)
        await pilot.press("enter")
        assert await eventually(lambda: app.theme == LIGHT and app.screen is screen)
        tones = app_tones(app)
        assert tones.bad.color != dark_bad
        # "✖ fail" in the new theme's error shade, without a tick (the app's tick is an hour)
        assert await eventually(lambda: any(s.style.color == tones.bad.color for s in checks.get_row("M5")[2].spans))
