"""Adding a workflow is one module plus one registry line (ARCHITECTURE.md, "Add a workflow"): a toy
kind (tests/tools/toy_workflow.py) appended to engine/workflows/registry.py's list shows up in the CLI's
help with its flags, is validated, runs from the CLI against the simulator, is listed by `workflow list`,
and is offered — with a form generated from its parameters — by the dashboard's new-workflow form. What
its runs write is what it declares (`targets`): the overlap check asks the kind, and a kind that declares
nothing about it is refused when it is made."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import pytest
from factories import dashboard_app
from textual.widgets import Input
from tools.toy_workflow import QUEUE_CHECK, registered_toy

from taudash.cli import main
from taudash.engine.workflows import Journal, overlap_refusal, registry
from taudash.engine.workflows.kind import GENERATED, NO_TARGETS, RegistrationError, WorkflowKind
from taudash.engine.workflows.params import ParamError
from taudash.screens.kit.help import global_keys
from taudash.screens.kit.messages import NewWorkflow
from taudash.screens.registry import REGISTRY
from taudash.screens.widgets.choices import MarkedCheckbox
from taudash.screens.workflow.forms import CUSTOM_FORMS, NewWorkflowScreen, custom_form, kind_labels

QUEUE = "tau-ws-train"  # a ClusterQueue of the demo


@pytest.fixture
def toy(monkeypatch):
    registered_toy(monkeypatch)
    return QUEUE_CHECK


def test_unregistered_the_toy_is_nowhere(capsys):
    assert "queue-check" not in registry.names()
    with pytest.raises(SystemExit) as exc:
        main(["workflow", "start", "queue-check", "--cq", QUEUE, "--yes"])
    assert exc.value.code == 2
    assert "invalid choice: 'queue-check'" in capsys.readouterr().err


def test_registered_toy_is_in_the_cli_help_with_its_flags(toy, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["workflow", "start", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "queue-check" in out and toy.help in out
    assert "hold" in out and "drain" in out  # the five built-in kinds stay
    with pytest.raises(SystemExit):
        main(["workflow", "start", "queue-check", "--help"])
    out = capsys.readouterr().out
    assert "--cq NAME" in out and "the ClusterQueue to look for" in out and "--loud" in out
    assert "--yes" in out and "--rehearse" in out  # the connection flags every workflow takes


def test_registered_toy_is_validated(toy, cli_env, demo_sim, capsys):
    kc = ["--kubeconfig", str(demo_sim.kubeconfig)]
    with pytest.raises(SystemExit) as exc:  # a required flag missing: argparse, exit 2
        main(["workflow", "start", "queue-check", "--yes", *kc])
    assert exc.value.code == 2
    assert "the following arguments are required: --cq" in capsys.readouterr().err
    assert main(["workflow", "start", "queue-check", "--cq", "nosuch", "--yes", *kc]) == 2  # its own check
    err = capsys.readouterr().err
    assert "ClusterQueue(s) not found: nosuch" in err
    assert main(["workflow", "list", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []  # refused before anything was journaled
    with pytest.raises(ParamError, match="--cq: required"):  # and the shared entry refuses what argparse would
        toy.make(None, {})
    with pytest.raises(ParamError, match="unknown parameter"):
        toy.make(None, {"cq": QUEUE, "colour": "red"})


def test_registered_toy_runs_from_the_cli_against_the_simulator(toy, cli_env, demo_sim, capsys):
    kc = ["--kubeconfig", str(demo_sim.kubeconfig)]
    assert main(["workflow", "start", "queue-check", "--cq", QUEUE, "--yes", *kc]) == 0
    err = capsys.readouterr().err
    assert ": Completed" in err and f"ClusterQueue {QUEUE} found" in err
    assert main(["workflow", "list", "-o", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["kind"], r["state"], r["target"], r["stepsDone"], r["steps"]) for r in rows] == \
        [("queue-check", "Completed", f"queue {QUEUE}", 1, 1)]
    assert main(["workflow", "status", rows[0]["id"], "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["params"] == {"cq": QUEUE, "loud": False}
    assert [s["state"] for s in doc["steps"]] == ["Done"]
    assert not demo_sim.api.writes  # the toy writes nothing


async def test_registered_toy_has_a_generated_form_in_the_dashboard(toy):
    assert kind_labels()["queue-check"] == "Queue check"
    assert "queue check" in global_keys(REGISTRY)  # `?` lists the guided operations from the registry
    app = dashboard_app(now=datetime(2026, 11, 30, 9, 5, tzinfo=UTC), writable=True)
    async with app.run_test(size=(120, 36)) as pilot:
        app.post_message(NewWorkflow("queue-check"))
        for _ in range(40):
            await pilot.pause()
            if isinstance(app.screen, NewWorkflowScreen):
                break
        form = app.screen
        assert isinstance(form, NewWorkflowScreen) and form.kind == "queue-check"
        assert form.query_one("#nw-kind-queue-check") is not None
        assert "wait until the ClusterQueue is there" in str(form.query_one("#nw-steps").render())
        with pytest.raises(ParamError, match="--cq: required"):  # the empty field is refused, nothing started
            form.params()
        form.query_one("#nw-queue-check-cq", Input).value = "nosuch"
        with pytest.raises(ParamError, match="not found: nosuch"):
            form.params()
        form.query_one("#nw-queue-check-cq", Input).value = QUEUE
        form.query_one("#nw-queue-check-loud", MarkedCheckbox).value = True
        assert form.params() == {"cq": QUEUE, "loud": True}


def test_a_kind_that_does_not_declare_its_targets_is_refused():
    fields = {f.name: getattr(QUEUE_CHECK, f.name) for f in dataclasses.fields(WorkflowKind)}
    del fields["targets"]
    with pytest.raises(RegistrationError, match="'queue-check': targets not declared.*targets=NO_TARGETS"):
        WorkflowKind(**fields)
    assert WorkflowKind(**fields, targets=NO_TARGETS).targets({"cq": QUEUE}) == frozenset()  # said explicitly


def test_the_overlap_check_asks_the_kind_what_its_runs_write(monkeypatch, tmp_path):
    # The same toy, declaring that it writes its queue: an unfinished run of it refuses a hold of that queue.
    writes = dataclasses.replace(QUEUE_CHECK, targets=lambda p: {f"ClusterQueue {p['cq']}"})
    monkeypatch.setattr(registry, "WORKFLOWS", [*registry.WORKFLOWS, writes])
    run = Journal.create("a1b2c3", "queue-check", {"cq": QUEUE, "loud": False}, "demo", tmp_path)
    refusal = overlap_refusal("hold", {"cqs": [QUEUE]}, "demo", None, tmp_path)
    assert refusal is not None and f"ClusterQueue {QUEUE}: workflow {run.id} (queue-check, InProgress)" in refusal
    assert overlap_refusal("hold", {"cqs": ["tau-ws-eval"]}, "demo", None, tmp_path) is None  # another queue
    monkeypatch.setattr(registry, "WORKFLOWS", [*registry.WORKFLOWS[:-1], QUEUE_CHECK])  # it writes nothing
    assert overlap_refusal("hold", {"cqs": [QUEUE]}, "demo", None, tmp_path) is None


def test_every_kind_gets_the_form_it_declares(toy):
    assert toy.form == GENERATED and custom_form("queue-check") is None  # drawn from its Params (above)
    built_in = [k for k in registry.kinds() if k is not toy]
    assert {k.name: custom_form(k.name) for k in built_in} == {k.name: k.form for k in built_in}
    assert set(CUSTOM_FORMS) == {k.form for k in built_in}  # each hand-drawn form is some kind's
