"""What the type checker (`mypy -p taudash`, run by .ci/run) reads where the run-time code is generated.

The store's reads are typed by the model class they name (`store.list(Workload)` is a list of Workload):
two overloads per read, a class or a kind's name, and no list of kinds to keep. `ClusterView` is built
at run time from the rule registry; the checker reads engine/cluster_view.pyi, generated from the same
registry. Regenerate it after adding a rule area (or changing a view field):

    python tests/unit/test_static_types.py --regen
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path

if __name__ == "__main__":  # run as a script (--regen): tests/ holds the shared test tools
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytest  # noqa: E402
from factories import local_queue, workload  # noqa: E402
from tools.paths import REPO  # noqa: E402

from taudash.engine.incremental import GuardedStore, UndeclaredRead  # noqa: E402
from taudash.engine.model import KINDS, LocalQueue, Node, Workload, lookup  # noqa: E402
from taudash.engine.registry import RULES  # noqa: E402
from taudash.engine.rules.base import Finding, Rule, ViewField  # noqa: E402
from taudash.engine.store import KIND_NAME, Store, StoredObject  # noqa: E402
from taudash.engine.view import ClusterView, ClusterViewBase  # noqa: E402

STUB = REPO / "engine" / "cluster_view.pyi"
METHODS = ["get", "list", "by_label"]


# --- the store's reads --------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_a_read_is_typed_by_the_class_it_names_or_reads_a_stored_object(method):
    """Two overloads, the same for every kind: a model class T gives T (a list of T), a name StoredObject."""
    overloads = typing.get_overloads(getattr(Store, method))
    assert len(overloads) == 2
    by_class, by_name = (typing.get_type_hints(fn, vars(sys.modules[Store.__module__])) for fn in overloads)
    t = typing.get_args(by_class["kind"])[0]
    assert isinstance(t, typing.TypeVar) and t.__bound__ == StoredObject
    assert by_class["return"] == (t | None if method == "get" else list[t])
    assert by_name["kind"] is str
    assert by_name["return"] == (StoredObject | None if method == "get" else list[StoredObject])


def test_every_kind_is_read_by_its_model_class_or_its_name():
    assert {KIND_NAME[k.model] for k in KINDS} == {k.kind for k in KINDS}  # one class per kind, none shared
    assert all(KIND_NAME[k.model] == KIND_NAME[k.kind] == k.kind for k in KINDS)


def test_the_store_returns_what_the_overloads_promise():
    s = Store()
    for doc in (local_queue("lq", "team-a", "cq"), workload("wl", "team-a", queue="lq")):
        k = lookup(doc["apiVersion"], doc["kind"])
        s.upsert(k.model.model_validate(doc), raw=doc)
    got = s.get(LocalQueue, "lq", "team-a")
    assert type(got) is LocalQueue and got.spec.cluster_queue == "cq"
    assert got is s.get("LocalQueue", "lq", "team-a")  # the name reads the same object
    assert [type(o) for o in s.list(Workload)] == [Workload] and s.list(Workload) == s.list("Workload")
    label = "kueue.x-k8s.io/queue-name"
    assert s.by_label(Workload, label, "lq") == s.by_label("Workload", label, "lq")
    assert s.get(LocalQueue, "other", "team-a") is None
    assert s.list(LocalQueue, "team-b") == []
    with pytest.raises(KeyError):  # a class that is no registered kind is no key
        s.list(Finding)


def test_a_rule_reading_an_undeclared_kind_is_refused_by_class_and_by_name():
    guarded = GuardedStore(Store(), frozenset({"Workload"}), "toy")
    assert guarded.list(Workload) == [] and guarded.list("Workload") == []
    for kind in (Node, "Node"):
        with pytest.raises(UndeclaredRead, match="'toy' read Node"):
            guarded.list(kind)
        with pytest.raises(UndeclaredRead, match="'toy' read Node"):
            guarded.get(kind, "n1")


# --- ClusterView, generated for the checker -----------------------------------------------------------


def _spell(t: object, imports: dict[str, set[str]]) -> str:
    """A field's type as written in the stub, recording the classes it names."""
    if t is type(None):
        return "None"
    origin = typing.get_origin(t)
    if origin is types.UnionType or origin is typing.Union:
        return " | ".join(_spell(a, imports) for a in typing.get_args(t))
    if origin is not None:
        return f"{_spell(origin, imports)}[{', '.join(_spell(a, imports) for a in typing.get_args(t))}]"
    assert isinstance(t, type), t
    if t.__module__ == "builtins":
        return t.__name__
    imports.setdefault(t.__module__, set()).add(t.__name__)
    return t.__name__


def render(rules: typing.Sequence[Rule] = RULES) -> str:
    """engine/cluster_view.pyi as `rules` make ClusterView: their fields in order, then the findings."""
    imports: dict[str, set[str]] = {"taudash.engine.view": {"ClusterViewBase"}}
    fields = [(f.name, _spell(f.type, imports)) for r in rules for f in r.fields]
    fields.append(("findings", _spell(list[Finding], imports)))
    lines = ['"""What a type checker reads for engine.view.ClusterView, which is built at run time from the rule',
             "registry (engine/registry.py). Generated: `python tests/unit/test_static_types.py --regen`;",
             'tests/unit/test_static_types.py fails while it differs from the registry. Do not edit."""', ""]
    for module in sorted(imports):
        lines.append(f"from {'.' + module.removeprefix('taudash.engine.')} import {', '.join(sorted(imports[module]))}")
    lines += ["", "class ClusterView(ClusterViewBase):",  # one blank line: the stub style
              '    """The derived cluster state: one field per registered rule output."""', ""]
    lines += [f"    {name}: {spelled}" for name, spelled in fields]
    return "\n".join(lines) + "\n"


def test_the_checkers_cluster_view_is_generated_from_the_registry():
    assert STUB.read_text(encoding="utf-8") == render(), \
        "engine/cluster_view.pyi differs from the rule registry: python tests/unit/test_static_types.py --regen"


def test_the_generated_view_has_the_run_time_fields_in_order():
    base = set(ClusterViewBase.model_fields)
    built = [name for name in ClusterView.model_fields if name not in base]
    declared = [line.split(":")[0].strip() for line in render().splitlines() if line.startswith("    ") and ":" in line
                and not line.strip().startswith('"""')]
    assert declared == built == [f.name for r in RULES for f in r.fields] + ["findings"]


def test_the_stub_check_fails_for_a_rule_area_not_regenerated():
    # The comparison is not vacuous: one more rule area (what a newcomer adds) renders another stub.
    class ToyView(ClusterViewBase):
        pass

    toy = Rule("toy", frozenset(), (ViewField("toy", ToyView, ToyView()),), derive=lambda ctx: (ToyView(), []))
    grown = render((*RULES, toy))
    assert grown != STUB.read_text(encoding="utf-8")
    assert "    toy: ToyView\n    findings: list[Finding]\n" in grown


if __name__ == "__main__" and "--regen" in sys.argv:
    STUB.write_text(render(), encoding="utf-8")
    print("wrote", STUB.relative_to(REPO))
