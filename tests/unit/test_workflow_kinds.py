"""A workflow description that is missing a field or gets one wrong fails when it is made (at import of its
module), and the registry refuses anything but descriptions and a name registered twice. What a kind declares
about its runs (targets, form, the run it undoes) is what the rest reads."""

from __future__ import annotations

import pytest

from taudash.engine.workflows import Journal, Param, WorkflowKind, registry
from taudash.engine.workflows.hold import HOLD, hold_workflow
from taudash.engine.workflows.kind import GENERATED, NO_TARGETS, RegistrationError, RunOf
from taudash.engine.workflows.params import ParamError, make


def valid(**over):
    fields = dict(name="toy", label="Toy", help="a toy", steps="1 nothing", params=(Param("--cq", "a queue"),),
                  make_params=lambda ctx, v, d: dict(v), build=hold_workflow, targets=NO_TARGETS)
    fields.update(over)
    return fields


def test_a_complete_description_is_accepted():
    wk = WorkflowKind(**valid())
    assert wk.params[0].dest == "cq" and wk.describe({}) == ""
    assert wk.form == GENERATED and wk.undoes == "" and not wk.rolls_back


def test_a_kind_must_say_what_its_runs_write():
    fields = valid()
    del fields["targets"]
    with pytest.raises(RegistrationError, match="'toy': targets not declared"):
        WorkflowKind(**fields)


@pytest.mark.parametrize("missing", ["name", "label", "help", "steps", "params", "make_params", "build"])
def test_a_missing_field_fails_when_declared(missing):
    fields = valid()
    del fields[missing]
    with pytest.raises(TypeError, match=missing):
        WorkflowKind(**fields)


@pytest.mark.parametrize(("over", "says"), [
    ({"label": ""}, "label is empty"),
    ({"help": "  "}, "help is empty"),
    ({"steps": ""}, "steps is empty"),
    ({"name": "Toy Kind"}, "name must be"),
    ({"build": "hold_workflow"}, "build is not callable"),
    ({"make_params": None}, "make_params is not callable"),
    ({"params": [Param("--cq", "a queue")]}, "tuple of Param"),
    ({"params": (Param("--cq", "a queue"), Param("--cq", "a queue", type="list"))}, "flag declared twice: --cq"),
    ({"params": (Param("--cq", "a queue"), Param("--queue", "a queue", dest="cq"))}, "dest declared twice: cq"),
    ({"targets": "ClusterQueue a"}, "targets is not callable"),
    ({"form": "Hand Drawn"}, "form must be GENERATED or the name"),
    ({"undoes": "source"}, "undoes must be one of reactivate_from, from"),
    ({"rolls_back": True}, "rolls_back needs undoes"),
])
def test_a_wrong_field_fails_loudly_naming_it(over, says):
    with pytest.raises(RegistrationError, match=says):
        WorkflowKind(**valid(**over))


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"flag": "cq"}, "--words"),
    ({"flag": "--cq", "type": "number"}, "type must be one of"),
    ({"flag": "--mode", "type": "choice", "choices": ("A", "B")}, "default among them"),
    ({"flag": "--cq", "choices": ("A",)}, "only a choice"),
    ({"flag": "--on", "type": "flag", "required": True}, "cannot be required"),
    ({"flag": "--cq", "help": "a queue", "pick": "nodes"}, "unknown pick"),
    ({"flag": "--cq"}, "help is empty"),
    ({"flag": "--cq", "help": "  "}, "help is empty"),
    ({"flag": "--on", "help": "x", "type": "flag", "run_of": RunOf(lambda k: True, "x")}, "run_of is a RunOf"),
])
def test_a_wrong_parameter_fails_loudly(kwargs, says):
    with pytest.raises(RegistrationError, match=says):
        Param(**kwargs)


def test_the_registry_refuses_a_twice_registered_name_and_a_non_description(monkeypatch):
    with pytest.raises(RegistrationError, match="'hold' is registered twice"):
        registry.check([*registry.WORKFLOWS, HOLD])
    with pytest.raises(RegistrationError, match="not a WorkflowKind"):
        registry.check([*registry.WORKFLOWS, "queue-check"])
    monkeypatch.setattr(registry, "WORKFLOWS", [*registry.WORKFLOWS, HOLD])
    with pytest.raises(RegistrationError):  # every reader checks the list it reads
        registry.names()


def test_the_built_in_kinds_in_their_order():
    assert registry.names() == ("hold", "release", "catalog", "rollback", "drain")
    assert registry.deactivating() == ("hold", "catalog", "rollback")
    with pytest.raises(KeyError, match="unknown workflow 'nosuch'"):
        registry.get("nosuch")


@pytest.mark.parametrize(("kind", "params", "writes"), [
    ("hold", {"cqs": ["a", "b"], "mode": "Hold"}, {"ClusterQueue a", "ClusterQueue b"}),
    ("release", {"cqs": ["a"], "restore_to": {"a": "None", "c": "Hold"}}, {"ClusterQueue a", "ClusterQueue c"}),
    ("catalog", {"catalog": [], "cqs": ["a"]}, {"ClusterQueue a", "TauCluster cluster"}),
    ("rollback", {"from": "f00d01", "previous_catalog": [], "cqs": []}, {"TauCluster cluster"}),
    ("drain", {"workspace": "ws"}, {"TauWorkspace ws"}),
    ("drain", {}, set()),
])
def test_the_built_in_kinds_declare_what_their_runs_write(kind, params, writes):
    assert registry.targets(kind, params) == writes


def test_the_built_in_kinds_declare_their_forms_and_the_runs_they_undo():
    assert {k.name: k.form for k in registry.kinds()} == {n: n for n in registry.names()}  # each drawn by hand
    assert {k.name: (k.undoes, k.rolls_back) for k in registry.kinds() if k.undoes} == {
        "release": ("reactivate_from", False), "rollback": ("from", True)}


def test_a_kind_that_journals_the_undone_run_without_declaring_it_is_refused():
    wk = WorkflowKind(**valid(make_params=lambda ctx, v, d: {**v, "from": "a1b2c3"}))
    with pytest.raises(RegistrationError, match="journals 'from'.*declare undoes='from'"):
        wk.make(None, {"cq": "q"})
    assert WorkflowKind(**valid(make_params=lambda ctx, v, d: {**v, "from": "a1b2c3"}, undoes="from")).make(
        None, {"cq": "q"}) == {"cq": "q", "from": "a1b2c3"}


def test_a_parameter_naming_another_run_is_checked_against_the_registry(tmp_path):
    drain = Journal.create("d0d0d0", "drain", {"workspace": "ws"}, "demo", tmp_path)
    hold = Journal.create("h0h0h0", "hold", {"cqs": ["a"], "mode": "Hold"}, "demo", tmp_path)
    with pytest.raises(ParamError, match=f"workflow {drain.id} is a drain: only a hold, catalog, rollback "
                                         "deactivates Workloads"):
        make("release", None, {"reactivate_from": drain.id}, tmp_path)
    with pytest.raises(ParamError, match="no workflow nosuch"):
        make("release", None, {"reactivate_from": "nosuch"}, tmp_path)
    assert make("release", None, {"reactivate_from": hold.id}, tmp_path)["reactivate_from"] == hold.id
    with pytest.raises(TypeError, match="needs the registered kinds"):  # never checked against nothing
        registry.get("release").make(None, {"reactivate_from": hold.id}, tmp_path)
