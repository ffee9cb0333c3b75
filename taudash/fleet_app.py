"""The dashboard over a fleet (docs/fleet.md): every cluster derived each tick, the Fleet screen first,
Enter there makes a cluster the subject of every other screen."""

from __future__ import annotations

from datetime import datetime
from functools import partial

from textual import work
from textual.binding import Binding

from taudash.engine.session import Frame, Session
from taudash.engine.text import clean
from taudash.screens.fleet import FleetScreen

from .agents import AgentFleet
from .app import TaudashApp
from .compose import agents_session
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
        self._show(context, member.session)
        return True

    def _show(self, context: str, session: Session) -> None:
        """Every other screen rebuilt on `session` (the subject named `context`); then the home screen."""
        self.fleet.subject = context
        self.session = session
        self.workflows.session = session
        for entry in self.screen_registry:
            if entry.name == FLEET_MODE:
                continue
            if entry.name == self.current_mode:  # pragma: no cover - selection happens on the Fleet screen
                continue
            self.remove_mode(entry.name)
            self.add_mode(entry.name, partial(entry.cls, self.session, entry.name))
        self.switch_mode(self.screen_registry.home.name)
        self.notify(clean(f"showing {context}"), markup=False)


class AgentFleetApp(FleetApp):
    """The dashboard over a fleet read from agents (taudash/agents.py): the Fleet screen from their
    documents; the other screens stay closed until Enter opens one cluster live — only when a kubeconfig
    context for it is known (else it says so). One cluster is open at a time."""

    OPEN_WAIT = 0.25  # seconds between looks at a cluster being opened

    def __init__(self, fleet: AgentFleet, **kwargs) -> None:
        TaudashApp.__init__(self, agents_session(fleet.config, "fleet from agents"), **kwargs)
        self.placeholder = self.session
        self.fleet = fleet  # type: ignore[assignment]  # duck-typed as a Fleet by the screen and the ticks
        self._opening: str | None = None

    def action_go(self, name: str) -> None:
        if name != FLEET_MODE and self.session is self.placeholder:
            self.notify("fleet from agents: press Enter on a cluster to open it live (it needs a kubeconfig "
                        "context); until then only the Fleet screen has data", severity="warning", markup=False)
            name = FLEET_MODE
        super().action_go(name)

    def set_subject(self, context: str) -> bool:
        fleet: AgentFleet = self.fleet  # type: ignore[assignment]
        member = fleet.member(context)
        if member is None:
            return False
        opened = fleet.opened
        if opened is not None and opened.context == fleet.live_context(member) and opened.state == "live":
            self._show(context, opened.session)
            return True
        kube = fleet.live_context(member)
        if kube is None:
            self.notify(clean(f"{context}: no kubeconfig context is known for this agent's cluster "
                              "(fleet.agents[].context in the config file, or a context of that name): "
                              "its row is all there is"), severity="warning", markup=False, timeout=10)
            return False
        self._opening = context
        self.notify(clean(f"{context}: opening it live (context {kube}) …"), markup=False)
        self.run_worker(self._open(context, kube), group="open-agent", exclusive=True, exit_on_error=False)
        return True

    async def _open(self, context: str, kube: str) -> None:
        import asyncio

        fleet: AgentFleet = self.fleet  # type: ignore[assignment]
        if self.session is not self.placeholder:  # the cluster shown before is closed: one open at a time
            self._show_placeholder()
        member = await fleet.open(kube)
        while member.state != "live" and self._opening == context:
            if member.state == "unreachable" and member.error:
                self.notify(clean(f"{context}: cannot open it live: {member.error}"), severity="error",
                            markup=False, timeout=10)
                await fleet.close_opened()
                return
            await asyncio.sleep(self.OPEN_WAIT)
        if self._opening != context:
            return
        member.frame(self.clock())
        self._show(context, member.session)

    def _show_placeholder(self) -> None:
        self.session = self.placeholder
        self.workflows.session = self.placeholder
