"""SVG snapshots (120×36, frozen clock) of the Workflows screen and of the step wizard mid-run.

The journals come from a fixture state directory (tests/fixtures/workflow-state), copied to a fixed
path so the "journal dir" line is the same on every machine. Review changes with
`--snapshot-report` and accept them with `--snapshot-update` only after looking at them.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tools.paths import DEMO, FIXTURES, REPO

from taudash.app import TaudashApp
from taudash.engine.actions import Actions
from taudash.engine.session import Session
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.view import SourceInfo
from taudash.engine.workflows.base import RunnerEvent
from taudash.screens.messages import OpenWorkflow, WorkflowEvent

FIXTURE_STATE = FIXTURES / "workflow-state"
STATE = Path("/tmp/taudash-snapshot-state")  # fixed: the screen shows the journal directory
NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


@pytest.fixture(autouse=True)
def state_dir(monkeypatch):
    shutil.rmtree(STATE, ignore_errors=True)
    shutil.copytree(FIXTURE_STATE, STATE)
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(STATE))
    yield
    shutil.rmtree(STATE, ignore_errors=True)


def make_app(writable: bool) -> TaudashApp:
    r = load_snapshot(DEMO)
    if not writable:  # a snapshot session: read-only, as `taudash --snapshot` opens it
        src = SourceInfo(type="snapshot", context=r.context, path=str(DEMO.relative_to(REPO)),
                         observed_at=r.captured_at)
        return TaudashApp(Session(r.store, src, demo=True), clock=lambda: NOW, tick=3600)
    # the demo cluster as `taudash demo` shows it (writable); nothing runs, the test feeds the events
    r.store.last_event_at = NOW.timestamp() - 0.8
    session = Session(r.store, SourceInfo(type="sim", context=r.context, path="https://127.0.0.1:6443"), demo=True)
    session.actions = Actions.live(object(), "operator", r.context, None)
    return TaudashApp(session, clock=lambda: NOW, tick=3600)


def test_workflows_screen_read_only(snap_compare):
    # four journals (InProgress catalog change, Completed hold, Failed drain, Aborted release); read-only
    assert snap_compare(make_app(writable=False), press=["9"], terminal_size=SIZE)


def test_workflows_screen_writable(snap_compare):
    assert snap_compare(make_app(writable=True), press=["9", "down", "down"], terminal_size=SIZE)


def progress(total_eval: tuple[int, int, int], total_train: tuple[int, int, int], eta: float | None) -> RunnerEvent:
    items = [("tau-ws-eval pending", total_eval[0], 0), ("tau-ws-eval reserving", total_eval[1], 0),
             ("tau-ws-eval admitted", total_eval[2], 0), ("tau-ws-train pending", total_train[0], 0),
             ("tau-ws-train reserving", total_train[1], 0), ("tau-ws-train admitted", total_train[2], 0)]
    left = sum(total_eval) + sum(total_train)
    return RunnerEvent("progress", "drain", f"pending+reserving+admitted {left} in tau-ws-eval, tau-ws-train",
                       {"done": False, "eta": eta, "items": [list(i) for i in items]})


async def wizard_mid_run(pilot) -> None:
    app = pilot.app
    app.post_message(OpenWorkflow("7f3a2c"))
    await pilot.pause()
    app.workflow_models["7f3a2c"].started(NOW, resumed=True)
    for ev in (
        RunnerEvent("checks", "drain", "", {"checks": [(True, "queues exist")]}),
        progress((0, 1, 1), (4, 2, 8), None),
        progress((0, 0, 1), (2, 1, 6), 300.0),
        progress((0, 0, 0), (1, 1, 4), 240.0),
    ):
        app.post_message(WorkflowEvent("7f3a2c", ev))
    await pilot.pause()


def test_wizard_mid_run(snap_compare):
    # the catalog change at step 2: plan (4 deactivations), live progress with bars and an ETA, the log
    assert snap_compare(make_app(writable=True), run_before=wizard_mid_run, terminal_size=SIZE)
