"""A plain Kueue cluster in the dashboard (tests/fixtures/plain-kueue.yaml: no TauGrid APIs, a Cohort
tree with a lending limit, healthy MultiKueue, a Workload with eviction history): SVG snapshots of the
screens that change (one running dashboard serves them: tests/tools/shared_app.py), and Pilot tests of what the
Queues pane and the object detail show."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
import yaml
from factories import dashboard_app
from rich.console import Console
from textual.widgets import Static
from tools import kueue_data
from tools.paths import REPO
from tools.shared_app import SharedApps, back_home

from taudash.engine.rules.base import ObjRef
from taudash.screens.kit.messages import OpenObject
from taudash.screens.widgets.keyed_table import KeyedTable
from taudash.sim.schema import DEFAULT_CRD_VERSION

ROOT = REPO
FIXTURE = ROOT / "tests" / "fixtures" / "plain-kueue.yaml"
NOW = datetime(2026, 12, 1, 12, 5, tzinfo=UTC)
SIZE = (120, 36)


def plain(widget) -> str:
    console = Console(width=220, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


def test_the_fixture_is_valid_kueue():
    """The fixture is what Kueue would accept: every Kueue object validates against its CRD."""
    schemas = kueue_data.schemas(DEFAULT_CRD_VERSION)
    for o in yaml.safe_load(FIXTURE.read_text())["objects"]:
        group, _, version = o["apiVersion"].rpartition("/")
        if group == "kueue.x-k8s.io":
            out = schemas.check(group, o["kind"], version, o)
            assert out is not None and out.ok and not out.unknown, (o["kind"], o["metadata"]["name"], out)


@pytest.fixture(scope="module")
def plain_dashboard():
    apps = SharedApps(lambda: dashboard_app(FIXTURE, now=NOW, demo=False), back_home, [SIZE])
    yield apps
    apps.close()


@pytest.mark.parametrize("key,name", [("1", "overview"), ("3", "queues"), ("6", "multikueue"), ("7", "profiles")])
def test_plain_kueue_screen(snap_compare, plain_dashboard, key, name):
    assert plain_dashboard.compare(snap_compare, SIZE, press=[key])


def test_plain_kueue_workload_detail(snap_compare, plain_dashboard):
    async def open_object(pilot):
        pilot.app.post_message(OpenObject(ObjRef(kind="Workload", namespace="team-a", name="job-train-1")))
        await pilot.pause()

    assert plain_dashboard.compare(snap_compare, SIZE, run_before=open_object)


async def test_queues_show_the_cohort_tree_and_a_queue_s_policies():
    app = dashboard_app(FIXTURE, now=NOW, demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await pilot.pause()
        t = app.screen.query_one("#queues", KeyedTable)
        keys = [k.value for k in t.rows]
        # parent before children, each child cohort's queues under it, then the queues without a cohort
        assert (keys
                == ["cohort:org", "cohort:team-a", "cq:a-train", "cohort:team-b", "cq:b-batch", "cohort:",
                    "cq:dispatch"])
        names = [t.get_row(k)[0].plain for k in keys]
        assert names[0].startswith("▾ org") and "2 child cohorts" in names[0]
        assert names[1].startswith("  ▾ team-a") and names[2].startswith("    └ a-train")
        pane = app.screen.query_one("#queue-detail", Static)
        text = plain(pane)  # the first row: cohort org, its subtree quota rolled up from both children
        assert "Cohort org" in text and "subtree" in text and "lent in" in text
        await pilot.press("down", "down")  # a-train
        await pilot.pause()
        assert t.selected_key() == "cq:a-train"
        text = plain(pane)
        assert ("withinClusterQueue LowerPriority · reclaimWithinCohort Any · borrowWithinCohort LowerPriority "
                "(priority ≤ 100)") in text
        assert "whenCanBorrow TryNextFlavor · whenCanPreempt MayStopSearch" in text
        assert "fairSharing weight 3 · weightedShare 250" in text
        assert "admissionScope UsageBasedAdmissionFairSharing" in text
        assert "available" in text
        await pilot.press("down")  # team-b: a cohort without a Cohort weight set
        await pilot.pause()
        assert "fairSharing weight 1 (default)" in plain(pane)
        await pilot.press("enter")  # opens the highlighted cohort
        await pilot.pause()
        assert type(app.screen).__name__ == "ObjectDetailScreen"
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "QueuesScreen"


async def test_object_detail_shows_a_workload_s_history_and_a_flavor_s_tolerations():
    app = dashboard_app(FIXTURE, now=NOW, demo=False)
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(OpenObject(ObjRef(kind="Workload", namespace="team-a", name="job-train-1")))
        await pilot.pause()
        title = plain(app.screen.query_one("#od-title", Static))
        assert "clusterName worker-1" in title
        assert "evictions 2× Preempted (InCohortReclamation); 1× PodsReadyTimeout" in title
        assert "requeueState count 2 · requeueAt 2026-12-01T09:30:00Z" in title
        assert "topology main preferred cloud.provider.com/topology-rack" in title
        await pilot.press("escape")
        app.post_message(OpenObject(ObjRef(kind="ResourceFlavor", name="a100")))
        await pilot.pause()
        title = plain(app.screen.query_one("#od-title", Static))
        assert "tolerations nvidia.com/gpu Exists :NoSchedule" in title
        await pilot.press("escape")
        app.post_message(OpenObject(ObjRef(kind="LocalQueue", namespace="team-a", name="train")))
        await pilot.pause()
        assert "fairSharing weight 1.5" in plain(app.screen.query_one("#od-title", Static))


async def test_profiles_and_multikueue_say_not_applicable_without_red():
    app = dashboard_app(FIXTURE, now=NOW, demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("7")
        await pilot.pause()
        summary = app.screen.query_one("#pr-summary", Static)
        assert "not applicable: TauGrid is not installed" in plain(summary)
        assert "not usable" not in plain(summary)
        await pilot.press("6")
        await pilot.pause()
        state = plain(app.screen.query_one("#mk-state", Static))
        assert "Ready" in state and "failing" not in state
        checks = app.screen.query_one("#mk-checks", KeyedTable)
        assert ([checks.get_row(k)[2].plain for k in ("M1", "M2", "M3", "M4", "M5")]
                == ["✓ ok", "n/a", "✓ ok", "n/a", "n/a"])
