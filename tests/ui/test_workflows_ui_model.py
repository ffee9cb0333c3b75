"""Units of the guided-operations UI: the wizard's model (journal + runner events), the shared
parameter helper, the confirmation's gating, and the palette's workflow commands."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

import pytest
from textual.app import App
from textual.widgets import Button, Input
from tools.paths import DEMO, FIXTURES
from tools.waiting import palette_results

from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.workflows import Journal
from taudash.engine.workflows.base import PAUSE, Context, RunnerEvent
from taudash.engine.workflows.params import (
    ParamError,
    describe,
    drain_params,
    hold_params,
    release_params,
    rollback_params,
)
from taudash.screens.workflow.model import ProgressItem, RunModel, eta_text
from taudash.screens.workflow.wizard import ConfirmRequest, StepConfirmScreen

FIXTURE = FIXTURES / "workflow-state" / "workflows"
AT = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)


@pytest.fixture
def journals(tmp_path):
    d = tmp_path / "workflows"
    shutil.copytree(FIXTURE, d)
    return d


def test_model_from_journal_marks_steps_and_keeps_the_plan(journals):
    m = RunModel.from_journal(Journal.open("7f3a2c", journals))
    assert [s.state for s in m.steps] == ["Done", "Waiting", "Pending", "Pending", "Pending", "Pending"]
    assert m.steps[0].note == "stopPolicy HoldAndDrain on tau-ws-eval, tau-ws-train"
    assert m.current == "drain" and len(m.plan["operations"]) == 4 and m.resumable
    failed = RunModel.from_journal(Journal.open("d4e5f6", journals))
    assert failed.state == "Failed" and failed.steps[0].state == "Failed" and "Unknown" in failed.error
    aborted = RunModel.from_journal(Journal.open("0f9e8d", journals))
    assert aborted.state == "Aborted" and aborted.steps[0].state == "Stopped" and not aborted.resumable
    assert any("declined" in line.text for line in aborted.log)


def test_model_follows_runner_events(journals):
    m = RunModel.from_journal(Journal.open("7f3a2c", journals))
    m.started(AT, resumed=True)
    assert m.state == "Running"
    m.apply(RunnerEvent("progress", "drain", "12 left", {"done": False, "eta": None,
                                                         "items": [["q pending", 8, 0], ["q admitted", 4, 0]]}), AT)
    m.apply(RunnerEvent("progress", "drain", "6 left", {"done": False, "eta": 90.0,
                                                        "items": [["q pending", 2, 0], ["q admitted", 4, 0]]}), AT)
    assert m.steps[1].state == "Waiting" and m.remaining == (12.0, 6.0) and m.eta == 90.0
    assert m.items["q pending"].fraction == pytest.approx(0.75)
    m.apply(RunnerEvent("confirm", "drain", "step 2 Drain: 1 change(s)"), AT)
    assert m.state == "Confirm" and m.asking
    m.apply(RunnerEvent("answer", "drain", "confirmed", {"ok": True}), AT)
    assert m.state == "Running" and not m.asking
    m.apply(RunnerEvent("verified", "drain", "Drain: done"), AT)
    m.apply(RunnerEvent("failed", "export", "precondition failed: not usable"), AT)
    assert m.steps[1].state == "Done" and m.steps[2].state == "Failed" and m.state == "Failed" and m.resumable
    m.finished("Failed", "", AT)
    assert m.state == "Failed"


def test_progress_and_eta_words():
    assert ProgressItem("x", 0, 0, 0).fraction == 1.0
    assert ProgressItem("x", 4, 1, 0).fraction == pytest.approx(0.75)
    assert [eta_text(v) for v in (None, 30, 240, 9000)] == ["ETA –", "ETA 30 s", "ETA 4 min", "ETA 2.5 h"]


def test_param_helper_shared_with_the_cli(journals):
    store = load_snapshot(DEMO).store
    ctx = Context(store=store, actions=None)  # type: ignore[arg-type]
    assert hold_params(ctx, ["tau-ws-train", "tau-ws-eval", "tau-ws-eval"]) == {
        "cqs": ["tau-ws-eval", "tau-ws-train"], "mode": "HoldAndDrain", "cancel_pending": True,
        "why": {"tau-ws-eval": ["chosen explicitly (--cq or the form)"],
                "tau-ws-train": ["chosen explicitly (--cq or the form)"]}}
    with pytest.raises(ParamError, match="at least one ClusterQueue"):
        hold_params(ctx, [])
    with pytest.raises(ParamError, match="mode"):
        hold_params(ctx, ["tau-ws-eval"], mode="Stop")
    with pytest.raises(ParamError, match="not in TauCluster"):
        hold_params(ctx, [], ["no-such-profile"])
    # release reactivates what a hold deactivated, read from its journal (the fixture hold changed none)
    assert release_params([], "a1b2c3", journals) == {"cqs": ["tau-ws-vision"], "reactivate": [],
                                                      "reactivate_from": "a1b2c3",
                                                      "restore_to": {"tau-ws-vision": "None"}}
    with pytest.raises(ParamError, match="no workflow"):
        release_params([], "nope", journals)
    with pytest.raises(ParamError, match="is a hold, not a catalog change"):
        rollback_params(ctx, "a1b2c3", journals)
    with pytest.raises(ParamError, match="never exported"):
        rollback_params(ctx, "7f3a2c", journals)
    with pytest.raises(ParamError):
        drain_params(ctx, "")
    assert describe("drain", drain_params(ctx, "eval")) == "workspace eval"


class ConfirmApp(App):
    def __init__(self, request: ConfirmRequest) -> None:
        super().__init__()
        self.request = request
        self.answer: bool | None = None

    def on_mount(self) -> None:
        self.push_screen(StepConfirmScreen(self.request), lambda ok: setattr(self, "answer", ok))


def request(destructive: bool) -> ConfirmRequest:
    op = {"verb": "patch", "kind": "ClusterQueue", "namespace": None, "name": "[bold]q",
          "diff": "~ ClusterQueue [bold]q: stopPolicy None → HoldAndDrain", "destructive": destructive}
    return ConfirmRequest("abc", "Hold [bold]q", "prod-\x1b[2Jctx", 1, 2, "Stop admission", [op], ["a note"],
                          [(True, "queues exist")])


async def test_confirm_gates_destructive_steps_on_the_typed_context_name():
    app = ConfirmApp(request(destructive=True))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, StepConfirmScreen)
        confirm = screen.query_one("#confirm", Button)
        field = screen.query_one("#sc-context", Input)
        assert confirm.disabled and screen.focused is field  # typing goes straight into the context name
        await pilot.press(*"prod-")  # a prefix is not the name
        await pilot.pause()
        assert confirm.disabled
        await pilot.press("enter")  # nor does enter confirm it
        await pilot.pause()
        assert app.screen is screen and app.answer is None
        field.value = app.request.context
        await pilot.pause()
        assert not confirm.disabled
        await pilot.press("enter")
        await pilot.pause()
    assert app.answer is True


async def test_confirm_escape_in_the_context_name_pauses():
    app = ConfirmApp(request(destructive=True))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen.focused, Input)
        await pilot.press("p", "escape")
        await pilot.pause()
    assert app.answer == PAUSE


async def test_confirm_focus_starts_on_pause_and_escape_or_enter_pause_never_end_the_run():
    for keys in (["escape"], ["enter"]):
        app = ConfirmApp(request(destructive=False))
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert not screen.query("#sc-context") and not screen.query_one("#confirm", Button).disabled
            pause = screen.query_one("#pause", Button)
            assert screen.focused is pause and str(pause.label) == "Pause (resume later)"
            assert str(screen.query_one("#confirm", Button).label) == "Confirm step 1"
            assert not screen.query("#cancel")  # no button of a step's confirmation ends the run for good
            await pilot.press(*keys)
            await pilot.pause()
        assert app.answer == PAUSE


async def test_confirm_each_skips_or_pauses():
    each = ConfirmRequest("abc", "Drain", "prod", 1, 2, "Remove drain blockers",
                          [{"verb": "delete", "kind": "RayService", "namespace": "eval", "name": "llm",
                            "diff": "- delete RayService eval/llm", "destructive": True}], op_no=1, op_total=2)
    for button, answer in (("#cancel", False), ("#pause", PAUSE)):
        app = ConfirmApp(each)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            assert str(app.screen.query_one("#cancel", Button).label) == "Skip this one"
            app.screen.query_one(button, Button).press()
            await pilot.pause()
        assert app.answer == answer, button


async def test_help_lists_the_workflow_keys_and_the_palette_hides_start_when_read_only(tmp_path, monkeypatch):
    from textual.command import CommandPalette

    from taudash.app import TaudashApp
    from taudash.engine.session import Session
    from taudash.engine.view import SourceInfo
    from taudash.screens.kit.help import HelpScreen

    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path))
    r = load_snapshot(DEMO)
    app = TaudashApp(Session(r.store, SourceInfo(type="snapshot", context=r.context, path="demo.yaml")),
                     clock=lambda: AT, tick=3600, precompose=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("9", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.help_text
        for key in ("n ", "enter ", "r ", "a "):
            assert any(line.startswith(key) for line in text.splitlines()), key
        assert "read-only session guided operations are disabled: n, r and a only say why" in " ".join(text.split())
        await pilot.press("escape", "ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"start workflow")
        await palette_results(pilot, "start workflow")  # the search finished: an empty list means none
        hits = [str(o.prompt) for o in app.screen.query_one("CommandList").options]
        assert not [h for h in hits if "Start workflow" in h], hits
