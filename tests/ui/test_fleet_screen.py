"""The Fleet screen (docs/fleet.md): one row per cluster, each its own failure domain; Enter makes a
cluster the subject of every other screen. An SVG snapshot on snapshots, a Pilot test on a live
simulated fleet."""

from __future__ import annotations

from datetime import UTC, datetime

from factories import multikueue_mirror, upsert_raw
from tools.paths import DEMO, SIM_CLUSTER
from tools.waiting import eventually, next_renders

from taudash.engine.session import Session
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.view import SourceInfo
from taudash.fleet import Fleet, FleetMember
from taudash.fleet_app import FleetApp
from taudash.screens.fleet import FleetScreen
from taudash.screens.widgets.header_bar import HeaderBar
from taudash.screens.widgets.keyed_table import KeyedTable
from taudash.sim.fleet import SimFleet

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


def snapshot_member(context: str, path, *extra: dict) -> FleetMember:
    m = FleetMember(context)
    r = load_snapshot(path)
    upsert_raw(r.store, *extra)
    m.session = Session(r.store, SourceInfo(type="snapshot", context=context, path=path.name,
                                            observed_at=r.captured_at), read_only=True)
    m.state = "live"
    return m


def snapshot_fleet() -> Fleet:
    """The demo as MultiKueue manager; eastus-2 (same name as its MultiKueueCluster) holds the mirror of the
    Workload the manager runs there, the mirror of one it nominated, and one the manager no longer has."""
    down = FleetMember("westus-2")
    down.state, down.error = "unreachable", "cannot connect: Connect call failed ('10.0.0.7', 443)"
    east = snapshot_member("eastus-2", SIM_CLUSTER,
                           multikueue_mirror("job-remote-pretrain-a-7c9e3", created="2026-11-30T05:00:31Z"),
                           multikueue_mirror("job-remote-pretrain-b-50b9e", state="pending",
                                             created="2026-11-30T07:50:31Z"),
                           multikueue_mirror("job-remote-sweep-0f3c1", created="2026-11-29T22:10:00Z"))
    return Fleet([snapshot_member("prod-manager", DEMO), east, down])


def header(app) -> str:
    """The cluster the header names (its left part, as plain text)."""
    return str(app.screen.query_one(HeaderBar).query_one("#hb-left").content)


def row_text(app, key: str) -> str:
    return " ".join(c.plain for c in app.screen.query_one("#fleet", KeyedTable).get_row(key))


def test_fleet_screen_snapshot(snap_compare):
    app = FleetApp(snapshot_fleet(), clock=lambda: NOW, tick=3600.0, precompose=False)
    assert snap_compare(app, terminal_size=SIZE)


async def test_enter_makes_a_cluster_the_subject_of_every_screen_on_snapshots():
    app = FleetApp(snapshot_fleet(), clock=lambda: NOW, tick=3600.0, precompose=False)
    async with app.run_test(size=SIZE) as pilot:
        # the rows, not only the frame: on a busy machine the table is filled a moment after the frame arrives
        assert await eventually(lambda: isinstance(app.screen, FleetScreen) and app.screen.frame is not None
                                and app.screen.query_one("#fleet", KeyedTable).row_count == 3)
        assert "▶ prod-manager" in row_text(app, "prod-manager")
        assert "unreachable" in row_text(app, "westus-2")
        # an unreachable cluster cannot become the subject: nothing to show
        table = app.screen.query_one("#fleet", KeyedTable)
        table.move_cursor(row=2)
        await pilot.press("enter")
        await pilot.pause()
        assert app.fleet.subject == "prod-manager" and app.current_mode == "fleet"
        table.move_cursor(row=1)
        await pilot.press("enter")
        assert await eventually(lambda: app.current_mode == "overview")
        assert app.fleet.subject == "eastus-2"
        assert app.screen.session is app.fleet.member("eastus-2").session
        assert await eventually(lambda: "eastus-2" in header(app))
        await pilot.press("3")  # every other screen reads the subject too
        assert await eventually(lambda: app.current_mode == "queues")
        assert app.screen.session is app.fleet.member("eastus-2").session
        await pilot.press("0")
        assert await eventually(lambda: app.current_mode == "fleet")
        assert await eventually(lambda: "▶ eastus-2" in row_text(app, "eastus-2"))


async def test_a_live_fleet_each_cluster_its_own_failure_domain():
    async with SimFleet(2, interval=0.2, bookmark_interval=0.05) as sim:
        await sim.down("taudash-worker-2")  # down before the dashboard connects
        fleet = Fleet([FleetMember(c, source_type="sim") for c in sim.contexts])
        fleet.start(str(sim.kubeconfig), retry=0.2)
        try:
            app = FleetApp(fleet, clock=lambda: datetime.now(UTC), tick=0.3, precompose=False)
            async with app.run_test(size=SIZE) as pilot:
                mgr, w1, w2 = (fleet.member(c) for c in sim.contexts)
                assert await eventually(lambda: mgr.state == "live" and w1.state == "live")
                assert await eventually(lambda: w2.state == "unreachable")
                await next_renders(app)
                assert "manager" in row_text(app, "taudash-manager") and "live" in row_text(app, "taudash-manager")
                assert await eventually(lambda: "worker" in row_text(app, "taudash-worker-1"))
                assert "unreachable" in row_text(app, "taudash-worker-2")
                # the worker comes back: its own retry finds it, the others never waited
                await sim.restore("taudash-worker-2")
                assert await eventually(lambda: w2.state == "live")
                # the row follows on a later tick (the restore's own re-list may delay the first)
                assert await eventually(lambda: "live" in row_text(app, "taudash-worker-2"))
                # a worker lost after it synced: its row turns stale, the others stay live
                await sim.down("taudash-worker-2")
                assert await eventually(lambda: "stale" in row_text(app, "taudash-worker-2"))
                assert "live" in row_text(app, "taudash-manager") and "live" in row_text(app, "taudash-worker-1")
                # Enter on worker-1: the other screens show it, read-only
                app.screen.query_one("#fleet", KeyedTable).move_cursor(row=1)
                await pilot.press("enter")
                assert await eventually(lambda: app.current_mode == "overview")
                assert app.session is w1.session and app.session.read_only
                assert await eventually(lambda: "taudash-worker-1" in header(app))
        finally:
            await fleet.stop()


def test_several_contexts_open_the_fleet_dashboard(monkeypatch, tmp_path, cli_env):
    """`taudash --context a --context b` builds one member per context (the app itself is not run here)."""
    from taudash.cli import main

    seen: list[list[str]] = []
    mappings: list[dict] = []

    async def run_async(self):
        seen.append([m.context for m in self.fleet.members])
        mappings.append(self.fleet.mapping)
        assert all(m.session.read_only for m in self.fleet.members)

    monkeypatch.setattr(FleetApp, "run_async", run_async)
    kc = tmp_path / "kc"
    kc.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: x, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                  "contexts: [{name: a, context: {cluster: x}}, {name: b, context: {cluster: x}}]\n")
    assert main(["--context", "a", "--kubeconfig", str(kc), "--context", "b"]) == 0
    assert seen == [["a", "b"]]
    kc.write_text("apiVersion: v1\nkind: Config\n")  # a context the kubeconfig lacks: exit 2, the screen never opens
    assert main(["--context", "a", "--kubeconfig", str(kc), "--context", "b"]) == 2
    assert seen == [["a", "b"]]
    assert main(["demo", "--fleet", "0"]) == 2
    assert main(["demo", "--fleet", "1"]) == 0  # the demo as manager and one simulated worker
    assert seen[-1] == ["taudash-manager", "taudash-worker-1"]
    assert mappings[0] == {}  # no config file: MultiKueueClusters map to contexts of the same name
    assert mappings[-1] == {"westus-2": "taudash-worker-1"}  # the simulated fleet maps its one worker itself


def table_text(app, selector: str, key: str) -> str:
    return " ".join(c.plain for c in app.screen.query_one(selector, KeyedTable).get_row(key))


def has_row(app, selector: str, key: str) -> bool:
    return key in app.screen.query_one(selector, KeyedTable).visible_keys()


def join_findings_text(app) -> str:
    return str(app.screen.query_one("#mk-findings").render())


async def test_must_show_a_dispatched_workload_with_its_worker_and_a_killed_worker():
    """A manager and two workers, simulated in-process. The Workload the manager dispatched is
    shown with its worker and the mirror's state there; killing that worker's API server turns its row stale,
    raises the disconnected-worker finding, leaves the other rows live, and its mirrors read unknown (never gone)."""
    manager, w1, w2 = "taudash-manager", "taudash-worker-1", "taudash-worker-2"
    wl = f"{manager}/train/job-remote-pretrain-b-50b9e"  # the demo's pending MultiKueue Workload
    async with SimFleet(2, interval=0.2, bookmark_interval=0.05) as sim:
        fleet = Fleet([FleetMember(c, source_type="sim") for c in sim.contexts], mapping=sim.mapping)
        fleet.start(str(sim.kubeconfig), retry=0.2)
        try:
            app = FleetApp(fleet, clock=lambda: datetime.now(UTC), tick=0.3, precompose=False)
            async with app.run_test(size=SIZE) as pilot:
                assert await eventually(lambda: all(m.state == "live" for m in fleet.members))
                assert await eventually(lambda: has_row(app, "#mk-dispatched", wl)
                                        and "admitted" in table_text(app, "#mk-dispatched", wl).split()[-1:])
                assert f"westus-2 → {w1}" in table_text(app, "#mk-dispatched", wl)
                assert await eventually(lambda: "manager ⇢2 ✓2" in row_text(app, manager))  # both run on their worker
                # every worker connected and readable: no join finding, no disconnected worker (the demo's own
                # MK-NOT-READY, an ambiguous profile, stays listed)
                assert await eventually(lambda: "MK-NOT-READY" in join_findings_text(app))
                assert not any(r in join_findings_text(app) for r in ("MK-WORKER", "MK-REMOTE"))
                # worker-1's API server dies
                await sim.down(w1)
                assert await eventually(lambda: "stale" in row_text(app, w1))
                assert "live" in row_text(app, manager) and "live" in row_text(app, w2)
                assert await eventually(lambda: "MK-WORKER-DISCONNECTED" in join_findings_text(app))
                assert "westus-2" in join_findings_text(app) and "✓" not in join_findings_text(app)
                assert await eventually(lambda: "not Active" in table_text(app, "#mk-workers", f"{manager}/westus-2"))
                remote = table_text(app, "#mk-dispatched", wl)
                assert "unknown" in remote and "gone" not in remote
                assert "MK-REMOTE-GONE" not in join_findings_text(app)
                assert await eventually(lambda: "manager ⇢2 ✓1 ?1" in row_text(app, manager))
                # Enter on a dispatched Workload: its worker's cluster becomes the subject
                other = f"{manager}/train/job-remote-pretrain-a-7c9e3"  # running on eastus-2 (worker-2)
                t = app.screen.query_one("#mk-dispatched", KeyedTable)
                t.focus()
                t.move_cursor(row=t.get_row_index(other))
                await pilot.press("enter")
                assert await eventually(lambda: app.fleet.subject == w2 and app.current_mode == "overview")
        finally:
            await fleet.stop()


async def test_the_disconnected_worker_is_a_finding_in_its_detail():
    """The demo's westus-2 is ClientConnectionFailed: its MultiKueueCluster detail lists the finding, not "✓ no
    findings about this object"."""
    from factories import dashboard_app

    from taudash.engine.rules.base import ObjRef
    from taudash.screens.kit.messages import OpenObject
    from taudash.screens.object_detail import ObjectDetailScreen

    app = dashboard_app(DEMO, now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        app.screen.post_message(OpenObject(ObjRef(kind="MultiKueueCluster", name="westus-2")))
        assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen))
        await pilot.pause()
        mine = app.screen.query_one("#od-findings", KeyedTable)
        assert [k.split("|")[1] for k in mine.visible_keys()] == ["MK-WORKER-DISCONNECTED"]
        app.screen.post_message(OpenObject(ObjRef(kind="MultiKueueCluster", name="eastus-2")))
        assert await eventually(lambda: isinstance(app.screen, ObjectDetailScreen)
                                and app.screen.ref.name == "eastus-2")
        await pilot.pause()
        assert list(app.screen.query_one("#od-findings", KeyedTable).visible_keys()) == []  # Active: nothing to say
