"""SVG snapshots (120×36, frozen clock) of the guided operations' forms: the new-workflow form, the
step confirmations (destructive step 1 with its notes; step 2 after step 1 wrote) and the wizard of
a stopped run listing the Workloads it deactivated.

Journals come from tests/fixtures/workflow-state, copied to a fixed path of this file's own (the
screens show the journal directory). Review changes with `--snapshot-report` and accept them with
`--snapshot-update` only after looking at them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from factories import dashboard_app
from tools.fixed_state import fixed_state_dir
from tools.paths import FIXTURES

from taudash.screens.kit.messages import NewWorkflow, OpenWorkflow
from taudash.screens.workflow.wizard import ConfirmRequest, StepConfirmScreen

FIXTURE_STATE = FIXTURES / "workflow-state"
STATE = Path("/tmp/taudash-forms-snapshot-state")
NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


@pytest.fixture(autouse=True)
def state_dir(monkeypatch):
    with fixed_state_dir(monkeypatch, STATE, FIXTURE_STATE):
        yield


def hold_op(cq: str) -> dict:
    return {"verb": "patch", "kind": "ClusterQueue", "namespace": None, "name": cq, "destructive": True,
            "diff": f"~ ClusterQueue {cq}: stopPolicy None → HoldAndDrain"}


def deactivate_op(ns: str, name: str) -> dict:
    return {"verb": "patch", "kind": "Workload", "namespace": ns, "name": name, "destructive": False,
            "diff": f"~ Workload {ns}/{name}: active true → active false"}


async def show(pilot, screen) -> None:
    pilot.app.push_screen(screen)
    await pilot.pause()
    await pilot.pause()


def test_new_workflow_form_generated_for_a_registered_kind(snap_compare, monkeypatch):
    """A kind with no hand-drawn section (the toy of tests/tools/toy_workflow.py): its fields come from its
    parameters, and a sixth kind wraps the kind choice into rows of three."""
    from tools.toy_workflow import registered_toy

    registered_toy(monkeypatch)

    async def run_before(pilot):
        pilot.app.post_message(NewWorkflow("queue-check"))
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(dashboard_app(now=NOW, writable=True), press=["9"], run_before=run_before, terminal_size=SIZE)


def test_new_workflow_form_hold(snap_compare):
    async def run_before(pilot):
        pilot.app.post_message(NewWorkflow("hold", cqs=["tau-ws-train"]))
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(dashboard_app(now=NOW, writable=True), press=["9"], run_before=run_before, terminal_size=SIZE)


def test_new_workflow_form_release_pre_filled(snap_compare):
    async def run_before(pilot):
        await pilot.press("9")
        await pilot.pause()
        await pilot.press("enter")  # the newest journal: the catalog change 7f3a2c, stopped mid-drain
        await pilot.pause()
        await pilot.press("l")  # its deactivated Workloads → the release form, reactivate-from 7f3a2c
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(dashboard_app(now=NOW, writable=True), run_before=run_before, terminal_size=SIZE)


def test_step_confirm_destructive_with_notes(snap_compare):
    request = ConfirmRequest(
        "7f3a2c", "Catalog change catalog-v2.yaml", "aks-eastus-prod-demo", 1, 5, "Hold: stop new admissions",
        [hold_op("tau-ws-eval"), hold_op("tau-ws-train")],
        notes=["evicts 3 admitted Workloads in tau-ws-train: train/job-llama-pretrain-13b-d83c2, "
               "train/job-code-llm-sft-6b7bb, train/job-finetune-mistral-lora-0e940",
               "evicts 1 admitted Workload in tau-ws-eval: eval/job-eval-harness-17a2c"],
        checks=[(True, "queues exist")], written=[])

    async def run_before(pilot):
        await pilot.press("9")
        await show(pilot, StepConfirmScreen(request))
        await pilot.press(*"aks-east")  # the context name is typed straight away (half of it here)

    assert snap_compare(dashboard_app(now=NOW, writable=True), run_before=run_before, terminal_size=SIZE)


def test_step_confirm_after_earlier_writes(snap_compare):
    # step 2 of the catalog change: its journal holds step 1's two ClusterQueue patches and four
    # deactivations from an earlier round of this step
    request = ConfirmRequest(
        "7f3a2c", "Catalog change catalog-v2.yaml", "aks-eastus-prod-demo", 2, 5, "Drain",
        [deactivate_op("train", "job-llama-pretrain-70b-5e1d0")],
        notes=["new pending work appeared while draining: planned again"], checks=[(True, "queues held")])

    async def run_before(pilot):
        await pilot.press("9")
        await show(pilot, StepConfirmScreen(request))

    assert snap_compare(dashboard_app(now=NOW, writable=True), run_before=run_before, terminal_size=SIZE)


def test_wizard_lists_deactivated_workloads(snap_compare):
    async def run_before(pilot):
        pilot.app.post_message(OpenWorkflow("7f3a2c"))  # the catalog change that stopped mid-drain
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(dashboard_app(now=NOW, writable=True), run_before=run_before, terminal_size=SIZE)
