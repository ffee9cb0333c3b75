"""The screen registry: the one list of the dashboard's screens.

One record per screen — its number key, name (the app mode and what `Navigate` carries), title, the
footer's short label and class; its help text is the class's `HELP` (the record's shape: kit/entries.py).
The app (taudash/app.py) owns this list: it builds its modes and number keys from it and hands it to the
footer, `?` help, the ctrl+p palette, `:` jumps and the workflow host. Adding a screen is its module plus
one line below.

Keys run 1–9; a screen past the ninth gets `key=None`: it has a mode and a palette entry but no number
and no footer entry. Screens pushed on top of one (the workspace, queue and object details, the wizard)
are not listed: they belong to the screen they were opened from.
"""

from __future__ import annotations

from .capacity import CapacityScreen
from .events import EventsScreen
from .findings import FindingsScreen
from .fleet import FleetScreen
from .history import HistoryScreen
from .kit.entries import Registry, ScreenEntry
from .multikueue import MultiKueueScreen
from .overview import OverviewScreen
from .pods import PodsScreen
from .pool import PoolScreen
from .profiles import ProfilesScreen
from .queues import QueuesScreen
from .sources import SourcesScreen
from .workflows import WorkflowsScreen
from .workspaces import WorkspacesScreen

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
    ScreenEntry(None, "capacity", "Capacity", "Cap", CapacityScreen),  # also `c` on the Overview
    ScreenEntry(None, "fleet", "Fleet", "Fleet", FleetScreen),  # key 0 in a fleet dashboard (taudash/fleet_app.py)
    ScreenEntry(None, "pods", "Pods", "Pods", PodsScreen),  # `:pods NS`; p on a Workload, node, workspace, queue
    ScreenEntry(None, "events", "Events", "Events", EventsScreen),  # `:events NS`, `:events all`
)
