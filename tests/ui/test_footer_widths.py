"""The footer keeps a word next to every screen number at 80 and 100 columns (short labels), the full
titles where they fit, and never runs past the terminal."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from factories import dashboard_app

from taudash.screens.registry import REGISTRY
from taudash.screens.widgets.footer_bar import FooterBar

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)


@pytest.mark.parametrize("width,long", [(80, False), (100, False), (120, True), (160, True)])
async def test_footer_labels_never_shrink_to_digits(width, long):
    app = dashboard_app(now=NOW)
    async with app.run_test(size=(width, 30)) as pilot:
        await pilot.pause()
        footer = app.screen.query_one(FooterBar)
        text = footer.render().plain
        assert len(text) <= width, text
        for e in REGISTRY.keyed():
            label = e.title if long else e.short
            assert f"{e.key} {label}" in text, (width, text)
        assert text.rstrip().endswith(" q") or text.rstrip().endswith(" q quit")  # quit is always named
