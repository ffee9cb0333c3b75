"""A workflow description that is missing a field or gets one wrong fails when it is made (at import of its
module), and the registry refuses anything but descriptions and a name registered twice."""

from __future__ import annotations

import pytest

from taudash.engine.workflows import Param, WorkflowKind, registry
from taudash.engine.workflows.hold import HOLD, hold_workflow
from taudash.engine.workflows.kind import RegistrationError


def valid(**over):
    fields = dict(name="toy", label="Toy", help="a toy", steps="1 nothing", params=(Param("--cq", "a queue"),),
                  make_params=lambda ctx, v, d: dict(v), build=hold_workflow)
    fields.update(over)
    return fields


def test_a_complete_description_is_accepted():
    wk = WorkflowKind(**valid())
    assert wk.params[0].dest == "cq" and wk.describe({}) == ""


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
