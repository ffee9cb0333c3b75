"""tests/tools/shared_app.py: one running app answers several screenshot requests, each after the reset, and a
request that fails fails only the test that made it."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static
from tools.shared_app import SharedApps

SIZE = (40, 6)


class Counter(App):
    """Shows how many times it was reset, and the last word pressed."""

    def __init__(self) -> None:
        super().__init__()
        self.resets = 0

    def compose(self) -> ComposeResult:
        yield Static("ready", id="said")

    def on_key(self, event) -> None:
        self.query_one("#said", Static).update(f"pressed {event.key} after reset {self.resets}")


async def count_reset(pilot) -> None:
    pilot.app.resets += 1


@pytest.fixture
def shared():
    made: list[Counter] = []

    def make() -> Counter:
        made.append(Counter())
        return made[-1]

    apps = SharedApps(make, count_reset, [SIZE])
    yield apps, made
    apps.close()


def screenshot(apps: SharedApps, press=(), run_before=None) -> str:
    """The screenshot snap_compare would have compared (a stand-in that returns it)."""
    def take(app, press, terminal_size, run_before):
        import textual._doc

        return textual._doc.take_svg_screenshot(app=app, press=press, terminal_size=terminal_size,
                                                run_before=run_before)

    return apps.compare(take, SIZE, press=press, run_before=run_before)


def test_one_app_serves_every_request_each_after_the_reset(shared):
    apps, made = shared
    first = screenshot(apps, press=["a"])
    second = screenshot(apps, press=["b"])
    assert len(made) == 1  # started once
    assert "pressed&#160;a&#160;after&#160;reset&#160;1" in first
    assert "pressed&#160;b&#160;after&#160;reset&#160;2" in second
    assert first.startswith("<svg") and second.startswith("<svg")


def test_a_failing_request_fails_its_caller_and_the_app_serves_the_next(shared):
    apps, made = shared

    async def broken(pilot):
        raise AssertionError("the screen never came")

    with pytest.raises(AssertionError, match="the screen never came"):
        screenshot(apps, run_before=broken)
    assert "pressed&#160;c" in screenshot(apps, press=["c"])
    assert len(made) == 1
