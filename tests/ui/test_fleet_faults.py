"""Faults per cluster on a live simulated fleet (docs/fleet.md): a cluster that hangs (accepts, never answers)
turns stale within the freshness bound through the liveness probe, the others stay live, and it comes
back live when the fault is lifted; a 403 on one cluster's Workloads leaves the other rows alone."""

from __future__ import annotations

from datetime import UTC, datetime

from tools.waiting import eventually

from taudash.fleet import Fleet, FleetMember
from taudash.fleet_app import FleetApp
from taudash.screens.fleet import FleetScreen
from taudash.screens.widgets.keyed_table import KeyedTable
from taudash.sim.faults import parse_fault
from taudash.sim.fleet import SimFleet

SIZE = (120, 36)
BOUND = 4.0  # seconds: a small freshness bound, so the test waits little (its deadline is far above it)
MANAGER, W1, W2 = "taudash-manager", "taudash-worker-1", "taudash-worker-2"


def row(app, key: str) -> str:
    return " ".join(c.plain for c in app.screen.query_one("#fleet", KeyedTable).get_row(key))


def below(app) -> str:
    return str(app.screen.query_one("#fleet-errors").render())


async def test_a_hung_worker_turns_stale_within_the_bound_and_comes_back():
    async with SimFleet(2, interval=0.2, bookmark_interval=0.2) as sim:
        fleet = Fleet([FleetMember(c, source_type="sim") for c in sim.contexts], mapping=sim.mapping,
                      freshness_bound=BOUND)
        fleet.start(str(sim.kubeconfig), retry=0.2)
        try:
            app = FleetApp(fleet, clock=lambda: datetime.now(UTC), tick=0.3, precompose=False)
            async with app.run_test(size=SIZE):
                mgr, w1, w2 = (fleet.member(c) for c in sim.contexts)
                assert await eventually(lambda: all(m.state == "live" and m.last_answer for m in fleet.members))
                assert await eventually(lambda: "live" in row(app, W2) and "stale" not in row(app, W2))
                await sim.set_faults([parse_fault("worker-2=hang")])
                assert sim.relays[W2].held and not sim.up[W2]
                # the watches stay open and silent: only the probe can tell; the deadline is well past the bound
                assert await eventually(lambda: "stale" in row(app, W2), within=3 * BOUND + 20)
                assert w2.probe_error is not None
                assert "stale since" in below(app) and "no answer for" in below(app)
                assert "stale" not in row(app, MANAGER) and "stale" not in row(app, W1)
                assert "live" in row(app, MANAGER) and "live" in row(app, W1)
                # the join reads it as unknown, never gone: its mirrors cannot be checked from here
                assert await eventually(lambda: "?" in row(app, MANAGER))
                assert "✖" not in row(app, MANAGER)
                # lifted: the next probe is answered, the held streams flow on
                await sim.set_faults([])
                assert not sim.relays[W2].held and sim.up[W2]
                assert await eventually(lambda: w2.probe_error is None and "stale" not in row(app, W2)
                                        and "live" in row(app, W2), within=3 * BOUND + 20)
                assert W2 not in below(app)
        finally:
            await fleet.stop()


async def test_a_forbidden_kind_and_a_down_cluster_stay_on_their_own_rows():
    async with SimFleet(2, interval=0.2, bookmark_interval=0.2) as sim:
        await sim.set_faults([parse_fault("manager=forbidden:Workload"), parse_fault("worker-1=down")])
        fleet = Fleet([FleetMember(c, source_type="sim") for c in sim.contexts], mapping=sim.mapping,
                      freshness_bound=BOUND)
        fleet.start(str(sim.kubeconfig), retry=0.2)
        try:
            app = FleetApp(fleet, clock=lambda: datetime.now(UTC), tick=0.3, precompose=False)
            async with app.run_test(size=SIZE):
                mgr, w1, w2 = (fleet.member(c) for c in sim.contexts)
                assert await eventually(lambda: mgr.state == "live" and w2.state == "live")
                assert await eventually(lambda: w1.state == "unreachable")
                assert await eventually(lambda: "stale" in row(app, MANAGER))  # its Workloads are forbidden
                # (a frame derived before the other kinds synced lists them too: wait for the synced one)
                assert await eventually(lambda: mgr.session.last_frame is not None and [
                    p.kind for p in mgr.session.last_frame.freshness.problems] == ["Workload"])
                assert "unreachable" in row(app, W1)
                assert await eventually(lambda: "live" in row(app, W2))
                assert "stale" not in row(app, W2)
                # the whole set changes at run time: worker-1 back, the 403 lifted
                await sim.set_faults([])
                assert await eventually(lambda: w1.state == "live" and "live" in row(app, W1))
                assert await eventually(lambda: "stale" not in row(app, MANAGER))
        finally:
            await fleet.stop()


NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)


def probed_fleet() -> Fleet:
    """The demo as manager (answering), eastus-2 hung (its last probe answered 12 s ago), westus-2 slow."""
    from test_fleet_screen import snapshot_member
    from tools.paths import DEMO, SIM_CLUSTER

    mgr = snapshot_member("prod-manager", DEMO)
    hung = snapshot_member("eastus-2", SIM_CLUSTER)
    hung.last_answer, hung.probe_error = NOW.timestamp() - 12, "probe unanswered after 7.5 s"
    slow = snapshot_member("westus-2", SIM_CLUSTER)
    slow.last_answer = NOW.timestamp() - 1
    for took in (3.9, 3.2, 4.4):  # slow on every answer: the fastest of them is the server's pace
        slow.answered_probe(took)
    return Fleet([mgr, hung, slow])


def test_fleet_screen_with_a_hung_and_a_slow_cluster_snapshot(snap_compare):
    assert snap_compare(FleetApp(probed_fleet(), clock=lambda: NOW, tick=3600.0, precompose=False), terminal_size=SIZE)


async def test_the_probe_verdict_reaches_the_row_the_state_line_and_the_join():
    fleet = probed_fleet()
    app = FleetApp(fleet, clock=lambda: NOW, tick=3600.0, precompose=False)
    async with app.run_test(size=SIZE):
        assert await eventually(lambda: isinstance(app.screen, FleetScreen) and app.screen.frame is not None)
        def state() -> str:
            return str(app.screen.query_one("#fleet-state").render())

        # the rows, the detail below and the state line are redrawn by separate widgets: wait for all of them
        assert await eventually(lambda: "stale" in row(app, "eastus-2") and "live" in row(app, "prod-manager")
                                and "slow 3s" in row(app, "westus-2") and "2 live · 1 stale" in state()
                                and "stale since" in below(app)), (
            [row(app, k) for k in ("prod-manager", "eastus-2", "westus-2")], below(app), state())
        assert "stale" not in row(app, "prod-manager") and "live" in row(app, "prod-manager")
        assert "slow 3s" in row(app, "westus-2") and "stale" not in row(app, "westus-2")
        assert "stale since 09:04:48Z (no answer for 12 s; probe unanswered after 7.5 s)" in below(app)
        assert "westus-2" not in below(app)
        assert "2 live · 1 stale" in state()
        # the join reads the hung member as not current: never as an empty cluster
        store, current, why = fleet.member("eastus-2").side()
        assert store is not None and not current and why == "stale"
        assert fleet.member("westus-2").side()[1] is True


def test_one_slow_answer_is_not_a_slow_server_and_an_outage_forgets_the_answers_before_it():
    m = FleetMember("c", source_type="sim")
    m.answered_probe(2.6)  # the first answer alone says nothing yet (it may carry the connect, a re-list)
    assert m.probe_seconds is None
    m.answered_probe(0.01)
    assert m.probe_seconds == 0.01
    m.answered_probe(5.0)  # one stall among fast answers: still fast
    assert m.probe_seconds == 0.01
    for took in (2.5, 3.0, 2.2):  # slow three times running: slow
        m.answered_probe(took)
    assert m.probe_seconds == 2.2
    m.failed_probe("probe unanswered after 7.5 s")
    assert m.probe_seconds is None and m.probe_error == "probe unanswered after 7.5 s"
    m.answered_probe(0.02)  # after the outage: a fresh window
    assert m.probe_seconds is None
