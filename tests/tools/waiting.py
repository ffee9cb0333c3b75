"""Event-driven waits for UI tests: wait for a condition with a generous deadline, never a fixed sleep.

The machine running the tests is shared and noisy: a 0.3 s tick can come a second late, and a
command-palette search can take longer than any fixed pause. Each helper here returns as soon as
what the test needs has happened, and fails (with what it saw) only after a deadline far beyond any
normal run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from textual.command import CommandList, CommandPalette

DEADLINE = 20.0


async def eventually(pred: Callable[[], object], within: float = DEADLINE, step: float = 0.02) -> bool:
    """True as soon as `pred()` is; False if it is still false after `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pred():
            return True
        await asyncio.sleep(step)
    return bool(pred())


class FrameCount:
    """The ticks a dashboard renders from now on, counted from outside (TaudashApp.observe_frames)."""

    def __init__(self, app) -> None:
        self.n = 0
        self.stop = app.observe_frames(self._rendered)

    def _rendered(self, frame, screen, seconds: float) -> None:
        self.n += 1


async def next_renders(app, n: int = 2, within: float = DEADLINE) -> None:
    """Wait until the dashboard has rendered `n` more ticks. Two renders after a change mean the
    visible screen shows a frame derived after it: the first may come from a derive that was already
    under way when the change happened."""
    seen = FrameCount(app)
    try:
        assert await eventually(lambda: seen.n >= n, within=within), (
            f"the dashboard rendered {seen.n} of {n} ticks in {within} s"
        )
    finally:
        seen.stop()


def _palette_search_done(app, query: str) -> bool:
    palette = app.screen
    if not isinstance(palette, CommandPalette):
        return False
    if palette.query_one("Input").value != query:
        return False  # the typed keys have not all reached the palette yet
    gathering = [w for w in app.workers
                 if w.group == CommandPalette._GATHER_COMMANDS_GROUP and not w.is_finished]
    return not gathering and palette.has_class("-ready")


async def palette_results(pilot, query: str, expect: str | None = None, within: float = DEADLINE) -> None:
    """Wait until the command palette has finished searching for `query` (typed already) and, with
    `expect`, until the highlighted result mentions it — what a following `enter` will run."""
    app = pilot.app
    await pilot.pause()  # the last key's Input.Changed starts the search for the whole query

    def ready() -> bool:
        if not _palette_search_done(app, query):
            return False
        if expect is None:
            return True
        results = app.screen.query_one(CommandList)
        index = results.highlighted
        return index is not None and expect.lower() in str(results.get_option_at_index(index).prompt).lower()

    assert await eventually(ready, within=within), f"the palette did not settle on {expect or query!r}"
