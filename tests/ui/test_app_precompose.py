"""Screens composed in the background after the first view look exactly like screens composed on
their first visit, the app says when every screen is composed, and a screen's own key still works at once."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from factories import dashboard_app
from tools.waiting import eventually

from taudash.screens.registry import REGISTRY

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


async def _screens(precompose: bool) -> dict[str, str]:
    """Each numbered screen's text after its key, in one app, with or without the background composition."""
    app = dashboard_app(now=NOW, precompose=True)
    app.precompose = precompose
    out: dict[str, str] = {}
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        if precompose:
            assert await eventually(lambda: app.composed)
            await pilot.pause()
        else:
            assert not app.composed  # only the first screen exists until a key asks for another
        for entry in REGISTRY.keyed():
            await pilot.press(entry.key)
            await pilot.pause()
            assert type(app.screen) is entry.cls
            out[entry.name] = await settled_screenshot(app, pilot)
    return out


async def settled_screenshot(app, pilot) -> str:
    """The screen once two shots in a row agree: a busy machine may still be laying it out after one pause
    (a table's widths grow with the page drawn), in either mode."""
    shot = app.export_screenshot()
    for _ in range(50):
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        again = app.export_screenshot()
        if again == shot:
            return shot
        shot = again
    raise AssertionError("the screen never settled")


async def test_precomposed_screens_match_screens_composed_on_first_visit():
    ahead = await _screens(True)
    on_visit = await _screens(False)
    assert ahead.keys() == on_visit.keys() == {e.name for e in REGISTRY.keyed()}
    for name in ahead:
        assert ahead[name] == on_visit[name], f"{name} differs when composed in the background"


async def test_a_key_pressed_before_the_background_composition_shows_its_screen():
    app = dashboard_app(now=NOW, precompose=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")  # at once: the composition has not started (it waits for the first view)
        await pilot.pause()
        assert type(app.screen) is REGISTRY.get("sources").cls
        assert app.screen.frame is not None
        assert await eventually(lambda: app.composed)  # the others still get composed, none twice
        # one screen per registered mode (Textual's own stacks), and the one on show was not composed again
        stacks = {name: stack for name, stack in app._screen_stacks.items() if name in REGISTRY}
        assert len(stacks) == len(REGISTRY) and all(len(stack) == 1 for stack in stacks.values())
        assert stacks["sources"] == [app.screen]


async def test_a_background_screen_whose_widgets_are_gone_skips_its_mount_render_and_a_shown_one_raises():
    """The app exiting while a screen is composed in the background removes its widgets before its mount
    handler runs: that screen renders nothing then (its first visit would render the newest frame); a screen
    on show that misses its widgets is a real error and still raises."""
    from textual.css.query import NoMatches

    app = dashboard_app(now=NOW, precompose=True)
    async with app.run_test(size=SIZE) as pilot:
        assert await eventually(lambda: app.session.last_frame is not None)
        await pilot.pause()
        screen = REGISTRY.get("sources").cls(app.session)  # never composed: no widgets at all
        screen._is_on_screen = lambda: False
        screen.on_mount()
        assert screen.frame is None and screen._shown_signature is None
        screen._is_on_screen = lambda: True
        with pytest.raises(NoMatches):
            screen.on_mount()
