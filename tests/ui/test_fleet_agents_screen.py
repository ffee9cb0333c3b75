"""The Fleet screen over agents (docs/fleet.md, "A fleet from agents"): rows from the agents' documents,
each its own freshness; the other screens stay closed until Enter opens one cluster live, which needs a
known kubeconfig context. An SVG snapshot with a frozen clock, Pilot tests of Enter and the number keys."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache

from tools.paths import DEMO
from tools.waiting import eventually

from taudash.agents import Agent, AgentFleet, AgentMember, Reading
from taudash.engine.incremental import derive
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.view import SourceInfo
from taudash.fleet_app import FLEET_MODE, AgentFleetApp
from taudash.screens.fleet import FleetScreen
from taudash.screens.widgets.keyed_table import KeyedTable

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


@cache
def _demo_view():
    return derive(load_snapshot(DEMO).store, NOW)


def demo_view(context: str):
    """The demo cluster's view as an agent in cluster `context` publishes it."""
    return _demo_view().replaced(source=SourceInfo(type="kube", context=context))


def member(name: str, *, age: float = 2.0, poll_error: str | None = None, stale: str = "",
           context: str | None = None, read: bool = True) -> AgentMember:
    m = AgentMember(Agent(name, f"http://10.0.0.{len(name)}:9090/api/v1/status", context))
    if read:
        m.record(Reading(None, demo_view(name), NOW.timestamp() - 4, age, 1.0, stale), None, 0.01)
    if poll_error:
        m.record(None, poll_error, 5.0)
    return m


def agents_fleet(kubeconfig: str | None = None, context: str | None = None) -> AgentFleet:
    return AgentFleet([
        member("prod-east", context=context),
        member("prod-west", poll_error="ClientConnectorError: Cannot connect to host 10.0.0.9:9090"),
        member("lab", stale="the agent's API is unreachable: no answer for 40 s"),
        member("edge", read=False),
    ], kubeconfig=kubeconfig)


def unreachable(fleet: AgentFleet) -> AgentFleet:
    fleet.members[3].record(None, "HTTP 401: 401: the agent's status needs its access token", 0.01)
    return fleet


def row_text(app, key: str) -> str:
    return " ".join(c.plain for c in app.screen.query_one("#fleet", KeyedTable).get_row(key))


def test_fleet_from_agents_snapshot(snap_compare):
    assert snap_compare(AgentFleetApp(unreachable(agents_fleet()), clock=lambda: NOW, tick=3600.0, precompose=False),
                        terminal_size=SIZE)


async def fleet_shown(app) -> bool:
    return await eventually(lambda: app.current_mode == FLEET_MODE and isinstance(app.screen, FleetScreen)
                            and app.screen.frame is not None
                            and app.screen.query_one("#fleet", KeyedTable).row_count == 4)


async def test_each_agent_has_its_own_freshness_and_keys_stay_on_the_fleet_until_one_is_opened():
    app = AgentFleetApp(unreachable(agents_fleet()), clock=lambda: NOW, tick=3600.0, precompose=False)
    async with app.run_test(size=SIZE) as pilot:
        assert await fleet_shown(app)
        assert "live" in row_text(app, "prod-east") and "stale" not in row_text(app, "prod-east")
        assert "stale" in row_text(app, "prod-west") and "stale" in row_text(app, "lab")
        assert "unreachable" in row_text(app, "edge")
        errors = str(app.screen.query_one("#fleet-errors").content)
        assert "Cannot connect to host 10.0.0.9" in errors and "no answer for 40 s" in errors and "401" in errors
        # a number key: the other screens have no cluster yet; the app says so and stays on the Fleet screen
        await pilot.press("1")
        await pilot.pause()
        assert app.current_mode == FLEET_MODE
        assert any("press Enter on a cluster" in str(n.message) for n in app._notifications)
        # Enter on an agent with no kubeconfig context known: said, nothing opened
        await pilot.press("enter")
        await pilot.pause()
        assert app.current_mode == FLEET_MODE and app.fleet.opened is None
        assert any("no kubeconfig context is known" in str(n.message) for n in app._notifications)


async def test_enter_opens_the_cluster_live_when_its_context_is_known(sim_server):
    fleet = agents_fleet(str(sim_server.kubeconfig), context="taudash-sim")
    app = AgentFleetApp(fleet, tick=0.5, precompose=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            assert await fleet_shown(app)
            await pilot.press("enter")  # the first row: prod-east, context taudash-sim
            assert await eventually(lambda: app.current_mode == "overview", within=60)
            assert fleet.opened is not None and fleet.opened.state == "live"
            assert app.session is fleet.opened.session and fleet.subject == "prod-east"
            await pilot.press("0")
            assert await eventually(lambda: app.current_mode == FLEET_MODE)
            assert "▶ prod-east" in row_text(app, "prod-east")
    finally:
        await fleet.stop()
    assert fleet.opened is None
