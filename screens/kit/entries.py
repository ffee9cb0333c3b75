"""The shape of the screen registry: one `ScreenEntry` per screen and the `Registry` that checks and looks
them up. The list itself is screens/registry.py; the App owns it (`TaudashApp.screen_registry`) and hands it
to what lists the screens — the footer, `?` help, the ctrl+p palette, `:` jumps, the workflow host — so
none of them imports the screens they list.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .base import DashScreen


@dataclass(frozen=True)
class ScreenEntry:
    key: str | None  # "1"…"9": the number key and the footer entry; None: palette only
    name: str  # the app mode; what `Navigate` carries ("pool")
    title: str  # footer, palette, help title, key description ("Pool")
    short: str  # the footer's label when the terminal is narrow
    cls: type[DashScreen]

    @property
    def help(self) -> str:
        """What the screen answers and its own keys (shown by `?`)."""
        return self.cls.HELP

    @property
    def label(self) -> str:
        """How the palette names it: "2 Pool", or the bare title for a screen without a number."""
        return f"{self.key} {self.title}" if self.key else self.title


class Registry:
    """The screens in footer order, looked up by name or class."""

    def __init__(self, *entries: ScreenEntry) -> None:
        if not entries:
            raise ValueError("screen registry: the dashboard needs at least one screen")
        self.entries = entries
        self._by_name = {e.name: e for e in entries}
        self._by_class = {e.cls: e for e in entries}
        keys = [e.key for e in entries if e.key is not None]
        if len(self._by_name) != len(entries) or len(self._by_class) != len(entries) or len(set(keys)) != len(keys):
            raise ValueError("screen registry: every name, class and key must be listed once")
        if any(k not in tuple("123456789") for k in keys):
            raise ValueError("screen registry: keys are the digits 1–9 (a tenth screen has key=None)")

    def __iter__(self) -> Iterator[ScreenEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def get(self, name: str | None) -> ScreenEntry | None:
        return self._by_name.get(name or "")

    def of(self, cls: type[DashScreen]) -> ScreenEntry:
        """The entry of a registered screen class (KeyError for one that is not registered)."""
        return self._by_class[cls]

    def find(self, cls: type) -> ScreenEntry | None:
        return self._by_class.get(cls)

    @property
    def home(self) -> ScreenEntry:
        """The screen the dashboard opens on: the first one listed."""
        return self.entries[0]

    def keyed(self) -> list[ScreenEntry]:
        """The screens with a number key: the footer and the number bindings."""
        return [e for e in self.entries if e.key is not None]


def registry_of(app: object) -> Registry | None:
    """The screens the app shows (`screen_registry`), if it lists any (a widget in a test may run in a bare App)."""
    screens = getattr(app, "screen_registry", None)
    return screens if isinstance(screens, Registry) else None
