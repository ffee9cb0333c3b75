"""What the type checker (`mypy -p taudash`, run by .ci/run) reads where the run-time code is generated:
the store's reads typed by kind (one `Literal` overload per registered kind, returning the kind's model
class, so `store.list("Workload")` is a list of `Workload`), and `ClusterView`, built at run time from the
rule registry but declared field by field for the checker. Both are written out; these tests keep them
in step with engine/model/kinds.py KINDS and engine/registry.py RULES."""

from __future__ import annotations

import ast
import inspect
import typing

import pytest
from factories import local_queue, workload

from taudash.engine import store as store_module
from taudash.engine import view as view_module
from taudash.engine.model import KINDS, lookup
from taudash.engine.registry import RULES
from taudash.engine.store import Store, StoredObject
from taudash.engine.view import ClusterView, ClusterViewBase

METHODS = ["get", "list", "by_label"]


def _overloads(name: str) -> dict[str, tuple[object, object]]:
    """Each overload of `Store.<name>`: the kind it names (or "*" for a plain str) -> (kind type, return type)."""
    out: dict[str, tuple[object, object]] = {}
    for fn in typing.get_overloads(getattr(Store, name)):
        hints = typing.get_type_hints(fn, vars(store_module))
        kind = hints["kind"]
        key = typing.get_args(kind)[0] if typing.get_origin(kind) is typing.Literal else "*"
        assert key not in out, f"{name}: two overloads for {key}"
        out[key] = (kind, hints["return"])
    return out


@pytest.mark.parametrize("method", METHODS)
def test_every_kind_has_an_overload_returning_its_model(method):
    overloads = _overloads(method)
    assert set(overloads) - {"*"} == {k.kind for k in KINDS}  # none missing, none left from a removed kind
    for k in KINDS:
        returned = overloads[k.kind][1]
        expected = k.model | None if method == "get" else list[k.model]
        assert returned == expected, (k.kind, returned)


@pytest.mark.parametrize("method", METHODS)
def test_a_kind_known_only_at_run_time_reads_as_a_stored_object(method):
    kind, returned = _overloads(method)["*"]
    assert kind is str
    assert returned == (StoredObject | None if method == "get" else list[StoredObject])


def test_the_overload_check_fails_on_a_wrong_return():
    # The comparison above is not vacuous: another kind's model (or a bare model for a list) differs.
    models = {k.kind: k.model for k in KINDS}
    other = models["LocalQueue"]
    assert models["Workload"] is not other
    assert _overloads("list")["Workload"][1] != list[other]
    assert _overloads("get")["Workload"][1] != models["Workload"]


def test_the_store_returns_what_the_overloads_promise():
    s = Store()
    for doc in (local_queue("lq", "team-a", "cq"), workload("wl", "team-a", queue="lq")):
        k = lookup(doc["apiVersion"], doc["kind"])
        s.upsert(k.model.model_validate(doc), raw=doc)
    models = {k.kind: k.model for k in KINDS}
    got = s.get("LocalQueue", "lq", "team-a")
    assert type(got) is models["LocalQueue"] and got.spec.cluster_queue == "cq"
    assert [type(o) for o in s.list("Workload")] == [models["Workload"]]
    assert s.get("LocalQueue", "other", "team-a") is None
    assert s.list("LocalQueue", "team-b") == []


def _declared_view() -> list[tuple[str, object]]:
    """The fields of the `if TYPE_CHECKING:` ClusterView in engine/view.py, evaluated as written."""
    tree = ast.parse(inspect.getsource(view_module))
    guard = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    imports = [n for n in guard.body if isinstance(n, ast.ImportFrom)]
    cls = next(n for n in guard.body if isinstance(n, ast.ClassDef) and n.name == "ClusterView")
    assert [ast.unparse(b) for b in cls.bases] == ["ClusterViewBase"]
    ns: dict[str, object] = dict(vars(view_module))
    exec(compile(ast.Module(body=imports, type_ignores=[]), view_module.__file__, "exec"), ns)
    return [(n.target.id, eval(ast.unparse(n.annotation), ns))  # noqa: S307 - our own source
            for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]


def test_the_declared_cluster_view_matches_the_registry():
    declared = _declared_view()
    base = set(ClusterViewBase.model_fields)
    built = [(name, f.annotation) for name, f in ClusterView.model_fields.items() if name not in base]
    assert [n for n, _ in declared] == [f.name for r in RULES for f in r.fields] + ["findings"]
    assert declared == built
    # and the comparison can fail: a field declared with another type is told apart
    assert ("pool", list[object]) not in declared
