"""The bottom bar: the numbered screens the app shows (current one highlighted) and the global keys.

The screens are the ones the app hands it (`screen_registry`, taudash/app.py): the footer sits below every
screen and imports none of them, nor the registry that lists them.
Clicking a screen's name switches to it, so the mouse works as well as the number keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rich.style import Style
from rich.text import Text
from textual.events import Click, Resize
from textual.widget import Widget

from ..kit.messages import Navigate
from ..kit.text import app_tones

KEYS_LONG = (("/", "filter"), ("?", "help"), ("^p", "palette"), ("esc", "back"), ("q", "quit"))
KEYS_SHORT = (("/", ""), ("?", ""), ("^p", ""), ("q", ""))


class Listed(Protocol):
    """What the footer shows of a numbered screen (a screens/kit/entries.py `ScreenEntry`)."""

    @property
    def key(self) -> str | None: ...

    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def short(self) -> str: ...


def listed_screens(app: object) -> Sequence[Listed]:
    """The numbered screens of the app's registry (`screen_registry`); none in an app that lists no screens."""
    screens = getattr(app, "screen_registry", None)
    return screens.keyed() if screens is not None else ()


class FooterBar(Widget):
    DEFAULT_CSS = """
    FooterBar {
        height: 1;
        background: $panel;
    }
    """

    def __init__(self, active: str | None = None, keys: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__()
        self.active = active
        self.own = tuple(keys)  # the screen's own keys worth a place ("p", "Pods"), before the global ones
        self._spans: list[tuple[int, int, str]] = []

    def _layout(self, width: int) -> Text:
        keyed = listed_screens(self.app)
        tones = app_tones(self.app)
        key_style = Style(bold=True, color=tones.accent.color)
        own = self.own
        for long_names, keys in ((True, own + KEYS_LONG), (True, own + KEYS_SHORT), (False, own + KEYS_SHORT),
                                 (False, KEYS_SHORT)):
            t = Text(end="", no_wrap=True, overflow="crop")
            spans = []
            for entry in keyed:
                start = len(t)
                label = entry.title if long_names else entry.short
                current = entry.name == self.active
                t.append(" ", style=tones.badge_mode if current else "")
                t.append(f"{entry.key}", style=key_style if not current else tones.badge_mode)
                t.append(f" {label}", style=tones.badge_mode if current else "")
                spans.append((start, len(t), entry.name))
            t.append(" │")
            for k, word in keys:
                t.append(f" {k}", style=key_style)
                if word:
                    t.append(f" {word}")
            if t.cell_len <= width:
                self._spans = spans
                return t
        self._spans = spans
        return t

    def render(self) -> Text:
        return self._layout(self.size.width or 100)

    def on_resize(self, event: Resize) -> None:
        self.refresh()

    def on_click(self, event: Click) -> None:
        for start, end, name in self._spans:
            if start <= event.x < end:
                self.post_message(Navigate(name))
                return
