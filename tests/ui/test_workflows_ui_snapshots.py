"""SVG snapshots (120×36, frozen clock) of the Workflows screen and of the step wizard mid-run.

The journals come from a fixture state directory (tests/fixtures/workflow-state), copied to a fixed
path so the "journal dir" line is the same on every machine. Review changes with
`--snapshot-report` and accept them with `--snapshot-update` only after looking at them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from factories import dashboard_app
from tools.fixed_state import fixed_state_dir
from tools.paths import FIXTURES

from taudash.engine.workflows.base import RunnerEvent
from taudash.screens.kit.messages import OpenWorkflow, WorkflowEvent

FIXTURE_STATE = FIXTURES / "workflow-state"
STATE = Path("/tmp/taudash-snapshot-state")  # fixed: the screen shows the journal directory
NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


@pytest.fixture(autouse=True)
def state_dir(monkeypatch):
    with fixed_state_dir(monkeypatch, STATE, FIXTURE_STATE):
        yield


def test_workflows_screen_read_only(snap_compare):
    # four journals (InProgress catalog change, Completed hold, Failed drain, Aborted release); read-only
    assert snap_compare(dashboard_app(now=NOW, writable=False), press=["9"], terminal_size=SIZE)


def test_workflows_screen_writable(snap_compare):
    assert snap_compare(dashboard_app(now=NOW, writable=True), press=["9", "down", "down"], terminal_size=SIZE)


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
    app.workflows.models["7f3a2c"].started(NOW, resumed=True)
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
    assert snap_compare(dashboard_app(now=NOW, writable=True), run_before=wizard_mid_run, terminal_size=SIZE)
