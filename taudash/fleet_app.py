"""The dashboard over a fleet (docs/fleet.md): every cluster derived each tick, the Fleet screen first,
Enter there makes a cluster the subject of every other screen."""

from __future__ import annotations

from datetime import datetime
from functools import partial

from textual import work
from textual.binding import Binding

from taudash.engine.session import Frame
from taudash.engine.text import clean
from taudash.screens.fleet import FleetScreen

from .app import TaudashApp
from .fleet import Fleet

FLEET_MODE = "fleet"


class FleetApp(TaudashApp):
    BINDINGS = [*TaudashApp.BINDINGS, Binding("0", f"go('{FLEET_MODE}')", "Fleet", show=False)]

    def __init__(self, fleet: Fleet, **kwargs) -> None:
        member = fleet.member(fleet.subject)
        assert member is not None
        super().__init__(member.session, **kwargs)
        self.fleet = fleet

    def on_mount(self) -> None:
        # Textual also runs TaudashApp.on_mount (handlers run for every class): it adds the modes and
        # opens the home screen; the Fleet screen replaces it once that is done.
        now = self.clock()
        self._derive_others(now)
        self._join(now)
        self.call_after_refresh(self.switch_mode, FLEET_MODE)

    def _derive_others(self, now: datetime) -> None:
        for m in self.fleet.members:
            if m.session is self.session or m.state != "live":
                continue
            try:
                m.frame(now)
            except Exception as exc:  # noqa: BLE001 - one cluster's rule failure never stalls the others
                m.error = f"could not derive the view: {exc}"

    def _join(self, now: datetime) -> None:
        try:
            self.fleet.join(now)
        except Exception as exc:  # noqa: BLE001 - the join never stalls the rows; it says it failed
            self.fleet.joins = {}
            self.fleet.join_error = f"could not join MultiKueue: {exc}"

    @work(thread=True, exclusive=True, group="derive", exit_on_error=False, description="derive every cluster")
    def _derive(self) -> Frame:
        now = self.clock()
        self._derive_others(now)
        member = self.fleet.member(self.fleet.subject)
        frame = member.frame(now) if member is not None and member.session is self.session else self.session.frame(now)
        self._join(now)  # after every member's frame: it reads their freshness
        return frame

    def on_fleet_screen_select_cluster(self, message: FleetScreen.SelectCluster) -> None:
        self.set_subject(message.context)

    def set_subject(self, context: str) -> bool:
        """Show `context` on every other screen (rebuilt on its session); back to the first screen."""
        member = self.fleet.member(context)
        if member is None:
            return False
        if member.state != "live" or member.session.last_frame is None:
            why = f"{member.state}: {member.error}" if member.error else member.state
            self.notify(clean(f"{context}: {why}; nothing to show yet"),
                        severity="warning", markup=False)
            return False
        self.fleet.subject = context
        self.session = member.session
        self.workflows.session = member.session
        for entry in self.screen_registry:
            if entry.name == FLEET_MODE:
                continue
            if entry.name == self.current_mode:  # pragma: no cover - selection happens on the Fleet screen
                continue
            self.remove_mode(entry.name)
            self.add_mode(entry.name, partial(entry.cls, self.session, entry.name))
        self.switch_mode(self.screen_registry.home.name)
        self.notify(clean(f"showing {context}"), markup=False)
        return True
