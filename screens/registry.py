"""The screen registry: the one list of the dashboard's screens.

One record per screen — its number key, name (the app mode and what `Navigate` carries), title, the
footer's short label and class; its help text is the class's `HELP`. The app (modes, number keys,
`?` help), the footer, the help's global keys and the ctrl+p palette all read this list: adding a
screen is its module plus one line below.

Keys run 1–9; a screen past the ninth gets `key=None`: it has a mode and a palette entry but no number
and no footer entry. Screens pushed on top of one (the workspace and object details, the wizard) are
not listed: they belong to the screen they were opened from.

The footer imports this module when it first draws (every screen imports the footer, and this module
imports every screen).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .base import DashScreen
from .findings import FindingsScreen
from .fleet import FleetScreen
from .history import HistoryScreen
from .multikueue import MultiKueueScreen
from .overview import OverviewScreen
from .pool import PoolScreen
from .profiles import ProfilesScreen
from .queues import QueuesScreen
from .sources import SourcesScreen
from .workflows import WorkflowsScreen
from .workspaces import WorkspacesScreen


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


REGISTRY = Registry(
    ScreenEntry("1", "overview", "Overview", "Over", OverviewScreen),
    ScreenEntry("2", "pool", "Pool", "Pool", PoolScreen),
    ScreenEntry("3", "queues", "Queues", "Queues", QueuesScreen),
    ScreenEntry("4", "workspaces", "Workspaces", "Wksp", WorkspacesScreen),
    ScreenEntry("5", "sources", "Sources", "Src", SourcesScreen),
    ScreenEntry("6", "multikueue", "MultiKueue", "MK", MultiKueueScreen),
    ScreenEntry("7", "profiles", "Profiles", "Prof", ProfilesScreen),
    ScreenEntry("8", "findings", "Findings", "Find", FindingsScreen),
    ScreenEntry("9", "workflows", "Workflows", "Flows", WorkflowsScreen),
    ScreenEntry(None, "history", "History", "Hist", HistoryScreen),
    ScreenEntry(None, "fleet", "Fleet", "Fleet", FleetScreen),  # key 0 in a fleet dashboard (taudash/fleet_app.py)
)
