"""The dashboard's "Rehearse first" (docs/rehearsal.md): the form posts a rehearsal instead of a start, the app
rehearses on a simulated fork of the session's store in a worker and shows the report; nothing is
written. The report screen: an SVG snapshot of a fixed report and a Pilot test of its keys."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

import pytest
from factories import dashboard_app
from textual.widgets import Static
from tools import paths
from tools.waiting import eventually

from taudash.app import TaudashApp
from taudash.rehearse import load
from taudash.screens.kit.messages import NewWorkflow
from taudash.screens.widgets.choices import MarkedCheckbox
from taudash.screens.workflow.forms import NewWorkflowScreen
from taudash.screens.workflow.rehearsal import RehearsalScreen, report_text

DEMO = paths.DEMO
FIXTURE_STATE = paths.WORKFLOW_STATE
NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 40)

REPORT = {
    "apiVersion": "taudash/v1", "kind": "RehearsalReport",
    "metadata": {"id": "a1b2c3", "createdAt": "2026-11-30T09:05:00+00:00", "context": "aks-eastus-prod-demo",
                 "cluster": {"server": "https://127.0.0.1:6443", "uid": "u"}},
    "spec": {"workflow": "hold", "title": "Hold tau-ws-train (HoldAndDrain)", "params": {"cqs": ["tau-ws-train"]},
             "waitTimeout": None, "stepSeconds": 5.0, "seed": 0},
    "fork": {"objects": 155, "kinds": {}, "partialKinds": ["Job", "Workload"], "access": {},
             "capturedAt": "2026-11-30T09:05:00Z"},
    "result": {
        "state": "Completed", "workflowState": "Completed", "stalled": None, "writesToCluster": 0,
        "forkWrites": {"patch": 28}, "timing": {"simulatedSeconds": 10.0, "runWallSeconds": 0.4, "speedFactor": 25.0,
                                                "setupWallSeconds": 0.1, "stepSeconds": 5.0},
        "predictedSeconds": 10.0,
        "steps": [
            {"id": "hold", "title": "Stop admission (HoldAndDrain)", "state": "Done", "simulatedSeconds": 0.0,
             "deadlineSeconds": 900.0, "stalled": False, "evictions": {"tau-ws-train": 9}, "deactivated": 0},
            {"id": "drain", "title": "Deactivate pending Workloads, then wait for the queues to drain",
             "state": "Done", "simulatedSeconds": 10.0, "deadlineSeconds": 900.0, "stalled": False, "evictions": {},
             "deactivated": 13},
        ],
        "evicted": [], "evictedByQueue": [{"team": "research", "queue": "tau-ws-train", "workloads": 9, "gpus": 77}],
        "released": [], "deactivated": [],
        "deactivatedByQueue": [{"team": "research", "queue": "tau-ws-train", "workloads": 13, "gpus": 105}],
        "gpusFreed": 77,
        "findings": {"before": {}, "after": {},
                     "appeared": [{"severity": "info", "rule": "CQ-STOPPED", "kind": "ClusterQueue", "namespace": None,
                                   "name": "tau-ws-train", "message": "stopped"}],
                     "cleared": [{"severity": "warning", "rule": "POOL-OVERCOMMITTED", "kind": "ResourceFlavor",
                                  "namespace": None, "name": "taugrid-gpu-h200-141gb", "message": "over"}]},
        "changes": [
            {"verb": "patch", "kind": "ClusterQueue", "namespace": None, "name": "tau-ws-train", "deleted": False,
             "diff": [{"path": "spec.stopPolicy", "before": "None", "after": "HoldAndDrain"}]},
            {"verb": "patch", "kind": "Workload", "namespace": "train", "name": "job-[bold]x[/bold]-1",
             "deleted": False,
             "diff": [{"path": "spec.active", "before": True, "after": False}]},
        ],
    },
    "notModelled": ["Kueue preemption, fair sharing", "Pods, RayClusters"],
    "fidelity": "docs/simulator.md",
}


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    shutil.copytree(FIXTURE_STATE, tmp_path / "state")
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))


def test_rehearsal_report_screen(snap_compare):
    async def run_before(pilot):
        pilot.app.push_screen(RehearsalScreen(REPORT))
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(dashboard_app(DEMO, now=NOW, writable=True), run_before=run_before, terminal_size=SIZE)


def test_report_text_is_inert_and_complete():
    text = report_text(REPORT).plain
    assert "job-[bold]x[/bold]-1" in text  # markup from the cluster is shown, not interpreted
    for part in ("predicted Completed", "nothing was written to the cluster", "evicts 9", "deactivates 13",
                 "research / tau-ws-train: 9 Workload(s), 77 GPU(s)", "GPUs freed: 77", "+ info CQ-STOPPED",
                 "spec.stopPolicy: None → HoldAndDrain", "Not modelled", "--after-rehearsal a1b2c3"):
        assert part in text, part
    stalled = {**REPORT, "result": {**REPORT["result"], "state": "Stalled",
                                    "stalled": {"step": "drain", "title": "Drain", "deadlineSeconds": 60,
                                                "waitingFor": "admitted 3"}}}
    assert "✖ stalls at Drain: not done within 60 s — waiting for: admitted 3" in report_text(stalled).plain


async def test_report_screen_keys():
    app = dashboard_app(DEMO, now=NOW, writable=True)
    async with app.run_test(size=SIZE) as pilot:
        results = []
        app.push_screen(RehearsalScreen(REPORT), results.append)
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        app.push_screen(RehearsalScreen(REPORT), results.append)
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        app.push_screen(RehearsalScreen(REPORT, can_run=False), results.append)
        await pilot.pause()
        await pilot.press("r")  # nothing to run from a session that may not write: r does nothing
        await pilot.pause()
        assert isinstance(app.screen, RehearsalScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert results == [False, True, False]


async def test_rehearse_first_runs_on_a_fork_and_shows_the_report(monkeypatch):
    started = []
    monkeypatch.setattr(TaudashApp, "on_start_workflow",
                        lambda self, m: started.append((m.kind, m.params, m.rehearsal)))
    app = dashboard_app(DEMO, now=NOW, writable=True)
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(NewWorkflow("hold", cqs=["tau-ws-train"]))
        for _ in range(40):
            await pilot.pause()
            if isinstance(app.screen, NewWorkflowScreen):
                break
        form = app.screen
        form.query_one("#nw-rehearse", MarkedCheckbox).value = True
        await pilot.click("#nw-start")
        # the worker rehearses in its own thread: wait for the report with a deadline, not a timing
        await eventually(lambda: isinstance(app.screen, RehearsalScreen), within=180)
        await pilot.pause()
        assert isinstance(app.screen, RehearsalScreen), "no report was shown"
        report = app.screen.report
        assert report["spec"]["workflow"] == "hold" and report["spec"]["params"]["cqs"] == ["tau-ws-train"]
        assert report["result"]["state"] == "Completed" and report["result"]["writesToCluster"] == 0
        assert load(report["metadata"]["id"])["metadata"]["id"] == report["metadata"]["id"]  # saved
        assert started == []  # rehearsing started nothing
        body = str(app.screen.query_one("#rh-body", Static).render())
        assert "nothing was written to the cluster" in body
        await pilot.press("r")  # run it for real: the ordinary start (each step still asks first)
        await pilot.pause()
        # the real run names the rehearsal it follows: its journal keeps prediction beside reality
        assert started == [("hold", report["spec"]["params"], report["metadata"]["id"])]
