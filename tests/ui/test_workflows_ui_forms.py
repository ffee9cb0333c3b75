"""The new-workflow form and the wizard's deactivated list on the demo cluster (Pilot, no cluster
behind it: nothing here writes). Choices read without colour, the highlight is the chosen option,
the release form offers every run that deactivated Workloads with its count, and a finished run's
wizard lists what it deactivated and opens the release form pre-filled."""

from __future__ import annotations

import io
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from factories import dashboard_app
from rich.console import Console
from textual.widgets import Select, Static
from tools.paths import FIXTURES

from taudash.engine.workflows import Journal
from taudash.engine.workflows.journal import workflows_dir
from taudash.screens.kit.messages import NewWorkflow, OpenWorkflow, StartWorkflow
from taudash.screens.widgets.choices import CHECK_OFF, CHECK_ON, RADIO_OFF, RADIO_ON
from taudash.screens.workflow.forms import NewWorkflowScreen
from taudash.screens.workflow.wizard import WizardScreen

FIXTURE_STATE = FIXTURES / "workflow-state"
NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)
# the fixture's catalog change 7f3a2c deactivated these four pending Workloads in its drain step
CATALOG_DEACTIVATED = [("train", "job-ctx-ablation-32k-bc6fa"), ("train", "job-dpo-h200-4x-06b89"),
                       ("train", "job-longctx-sft-h200-b-0aa54"), ("train", "job-sweep-lr-3e-4-81fce")]


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    shutil.copytree(FIXTURE_STATE, tmp_path / "state")
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))


def plain(renderable) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


async def open_form(pilot, kind: str) -> NewWorkflowScreen:
    pilot.app.post_message(NewWorkflow(kind))
    for _ in range(40):
        await pilot.pause()
        if isinstance(pilot.app.screen, NewWorkflowScreen):
            await pilot.pause()  # ChoiceSet moves its highlight after its first refresh
            return pilot.app.screen
    raise AssertionError("the form did not open")


def radio_marks(form: NewWorkflowScreen, set_id: str) -> dict[str, tuple[str, bool]]:
    """Each radio button of a set: (the glyph it draws, whether it carries the highlight)."""
    out = {}
    for b in form.query_one(f"#{set_id}").children:
        out[b.id] = (str(b.render().plain)[1], b.has_class("-selected"))
    return out


async def test_radio_buttons_show_a_symbol_and_the_highlight_is_the_chosen_option():
    app = dashboard_app(now=NOW, writable=True)
    async with app.run_test(size=SIZE) as pilot:
        form = await open_form(pilot, "drain")
        marks = radio_marks(form, "nw-kind")
        # opened on "Drain supervision": it is the one marked ◉ and the one highlighted (not the first)
        assert marks["nw-kind-drain"] == (RADIO_ON, True)
        assert all(marks[k] == (RADIO_OFF, False) for k in marks if k != "nw-kind-drain")
        form.query_one("#nw-kind").focus()
        await pilot.press("left")  # the arrows choose: symbol, highlight and section move together
        await pilot.pause()
        marks = radio_marks(form, "nw-kind")
        assert marks["nw-kind-rollback"] == (RADIO_ON, True) and marks["nw-kind-drain"] == (RADIO_OFF, False)
        assert form.kind == "rollback"
        await pilot.press("right", "right")  # wraps around to the first
        await pilot.pause()
        assert radio_marks(form, "nw-kind")["nw-kind-hold"] == (RADIO_ON, True) and form.kind == "hold"
        # the symbols are in what the terminal shows, not only in the widgets
        shot = app.export_screenshot()
        assert f"{RADIO_ON}" in shot and f"{RADIO_OFF}" in shot


async def test_checkbox_and_queue_list_show_a_symbol_and_space_toggles_it():
    app = dashboard_app(now=NOW, writable=True)
    async with app.run_test(size=SIZE) as pilot:
        pilot.app.post_message(NewWorkflow("hold", cqs=["tau-ws-train"]))
        for _ in range(40):
            await pilot.pause()
            if isinstance(app.screen, NewWorkflowScreen):
                break
        form = app.screen
        await pilot.pause()
        box = form.query_one("#nw-hold-cancel")
        assert box.value and str(box.render().plain)[1] == CHECK_ON
        box.focus()
        await pilot.press("space")
        await pilot.pause()
        assert not box.value and str(box.render().plain)[1] == CHECK_OFF
        assert form.params()["cancel_pending"] is False
        # HoldAndDrain is the chosen mode: ◉ on it, ○ on Hold
        modes = radio_marks(form, "nw-hold-mode")
        assert modes == {"nw-mode-HoldAndDrain": (RADIO_ON, True), "nw-mode-Hold": (RADIO_OFF, False)}
        cqs = form.query_one("#nw-hold-cqs")
        lines = {}  # queue → the glyph in its box ("▐☑▌ tau-ws-train  stopPolicy …")
        for y in range(cqs.option_count):
            box_, name, *_ = cqs.render_line(y).text.split()
            lines[name] = box_[1]
        assert lines["tau-ws-train"] == CHECK_ON
        assert {lines[q] for q in lines if q != "tau-ws-train"} == {CHECK_OFF}
        cqs.focus()
        await pilot.press("down", "space")  # the highlight moves with the cursor; space marks that row
        await pilot.pause()
        chosen = [y for y in range(cqs.option_count) if cqs.render_line(y).text.split()[0][1] == CHECK_ON]
        assert len(chosen) == 2 and sorted(cqs.selected) == sorted(
            ["tau-ws-train", cqs.get_option_at_index(cqs.highlighted).value])


def rollback_journal(directory: Path) -> Journal:
    """A rollback that deactivated one Workload and confirmed a deletion on its own (a confirm-each
    step journals the object it asked about as a string)."""
    j = Journal.create("b0b0b0", "rollback", {"from": "7f3a2c", "previous_catalog": [], "previous_hash": None,
                                             "cqs": ["tau-ws-eval"]}, "aks-eastus-prod-demo", directory)
    op = {"verb": "patch", "kind": "Workload", "namespace": "eval", "name": "job-eval-1",
          "patch": {"spec": {"active": False}}, "destructive": False,
          "diff": "~ Workload eval/job-eval-1: active true → active false"}
    j.append("executing", "drain", {"op": op})
    j.append("executed", "drain", {"op": op, "result": {"changed": True}})
    j.append("confirmed", "remove-routing", {"op": "MultiKueueConfig tau-mk"})
    return j


async def test_release_form_offers_hold_catalog_and_rollback_runs_with_their_counts():
    rollback_journal(workflows_dir())
    app = dashboard_app(now=NOW, writable=True)
    async with app.run_test(size=SIZE) as pilot:
        form = await open_form(pilot, "release")
        select = form.query_one("#nw-release-from", Select)
        overlay = select.query_one("SelectOverlay")  # the drop-down's option list
        prompts = [plain(overlay.get_option_at_index(i).prompt).strip() for i in range(overlay.option_count)]
        options = {p.split(" · ")[0]: p for p in prompts if " · " in p}
        # the catalog change, the hold and the rollback; not the release or the drain supervision
        assert set(options) == {"7f3a2c", "a1b2c3", "b0b0b0"}
        assert "catalog change" in options["7f3a2c"] and "4 Workloads deactivated" in options["7f3a2c"]
        assert "0 Workloads deactivated" in options["a1b2c3"]
        assert "rollback" in options["b0b0b0"] and "1 Workload deactivated" in options["b0b0b0"]
        assert select.value is Select.NULL  # nothing reactivated unless chosen
        select.value = "7f3a2c"
        await pilot.pause()
        params = form.params()
        assert sorted(map(tuple, params["reactivate"])) == CATALOG_DEACTIVATED
        assert params["cqs"] == ["tau-ws-eval", "tau-ws-train"]  # the catalog change's held queues


async def test_finished_run_lists_what_it_deactivated_and_l_opens_the_release_form_pre_filled():
    # the catalog change 7f3a2c stopped mid-drain (InProgress, not running here): 4 Workloads inactive
    app = dashboard_app(now=NOW, writable=True)
    started: list[StartWorkflow] = []
    async with app.run_test(size=SIZE, message_hook=lambda m: started.append(m) if isinstance(
            m, StartWorkflow) else None) as pilot:
        app.post_message(OpenWorkflow("7f3a2c"))
        for _ in range(40):
            await pilot.pause()
            if isinstance(app.screen, WizardScreen):
                break
        wizard = app.screen
        assert sorted(wizard.model.deactivated) == CATALOG_DEACTIVATED
        pane = wizard.query_one("#wz-leftovers", Static)
        assert pane.display
        text = plain(pane.content)
        assert "WHAT STAYS in the cluster  from the run's journal" in text
        assert "4 Workload(s) deactivated" in text
        assert "ClusterQueue tau-ws-eval is on stopPolicy HoldAndDrain" in text
        assert {f"{ns}/{n}" for ns, n in CATALOG_DEACTIVATED} <= set(text.split())
        assert "undo: taudash workflow start release --reactivate-from 7f3a2c --context aks-eastus-prod-demo" in text
        assert "l release / reactivate the 4 Workloads" in plain(wizard.query_one("#wz-mode", Static).content)
        await pilot.press("l")
        for _ in range(40):
            await pilot.pause()
            if isinstance(app.screen, NewWorkflowScreen):
                break
        form = app.screen
        assert isinstance(form, NewWorkflowScreen) and form.kind == "release"
        assert form.query_one("#nw-release-from", Select).value == "7f3a2c"
        assert sorted(form.query_one("#nw-release-cqs").selected) == ["tau-ws-eval", "tau-ws-train"]
        await pilot.click("#nw-start")
        for _ in range(40):
            await pilot.pause()
            if started:
                break
        # Start hands the release to the app (which journals it and asks before each step writes)
        [msg] = started
        assert msg.kind == "release" and sorted(map(tuple, msg.params["reactivate"])) == CATALOG_DEACTIVATED


async def open_wizard(pilot, workflow_id: str) -> WizardScreen:
    pilot.app.post_message(OpenWorkflow(workflow_id))
    for _ in range(40):
        await pilot.pause()
        if isinstance(pilot.app.screen, WizardScreen):
            return pilot.app.screen
    raise AssertionError("the wizard did not open")


async def test_running_or_release_runs_offer_no_reactivation():
    app = dashboard_app(now=NOW, writable=True)
    async with app.run_test(size=SIZE) as pilot:
        wizard = await open_wizard(pilot, "0f9e8d")  # a release: it deactivates nothing
        pane = wizard.query_one("#wz-leftovers", Static)
        assert wizard.model.deactivated == [] and wizard.model.leftovers == []
        assert pane.display and "nothing: no change this run made remains" in plain(pane.content)  # it is Aborted
        await pilot.press("l")
        await pilot.pause()
        assert app.screen is wizard
        await pilot.press("escape")
        await pilot.pause()
        # while a run is running its list may still grow: not offered until it stops
        wizard = await open_wizard(pilot, "7f3a2c")
        wizard.model.started(NOW, resumed=True)
        wizard.render_run()
        assert wizard.model.deactivated and not wizard.query_one("#wz-leftovers", Static).display
        await pilot.press("l")
        await pilot.pause()
        assert app.screen is wizard
        wizard.model.finished("Aborted", "", NOW)  # stopped: offered again (read back from the journal)
        wizard.render_run()
        assert wizard.query_one("#wz-leftovers", Static).display
        assert sorted(wizard.model.deactivated) == CATALOG_DEACTIVATED


async def test_read_only_wizard_says_how_to_reactivate_elsewhere_and_l_explains():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(OpenWorkflow("7f3a2c"))
        for _ in range(40):
            await pilot.pause()
            if isinstance(app.screen, WizardScreen):
                break
        wizard = app.screen
        text = plain(wizard.query_one("#wz-leftovers", Static).content)
        assert "taudash workflow start release --reactivate-from 7f3a2c" in text
        await pilot.press("l")
        await pilot.pause()
        why = app.session.actions.why_read_only
        assert any(n.message == f"reactivating Workloads is disabled — {why}" for n in app._notifications)
        assert app.screen is wizard
