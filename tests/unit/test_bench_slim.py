"""Slim models (engine.model.slim) stay equal to what pydantic built, serialise the same, and copy safely.

Workload and Job are fast structs in the store (tests/unit/test_model_fast.py); slimming is checked on
their pydantic schema, which validates what the fast path refuses."""

from __future__ import annotations

import copy

from tools.paths import DEMO

from taudash.bench.generate import Size, generate
from taudash.engine.model import KINDS, lookup
from taudash.engine.model.kueue import Workload  # the pydantic schema (the store's Workloads are fast structs)
from taudash.engine.model.slim import share_raw, slim
from taudash.engine.sources.snapshot import load_snapshot


def _raws():
    store = load_snapshot(DEMO).store
    out = [store.raw(k.kind, o.name, o.namespace) for k in KINDS for o in store.list(k.kind)]
    return [r for r in out if r is not None] + generate(Size("T", 20, 200, 100, 5, 2, 2, 4), seed=2)


def test_slim_models_equal_and_dump_like_the_originals():
    for raw in _raws():
        k = lookup(raw["apiVersion"], raw["kind"])
        model = getattr(k.model, "pydantic_model", k.model)
        want = model.model_validate(copy.deepcopy(raw))
        got = slim(model.model_validate(share_raw(k.kind, copy.deepcopy(raw))))
        assert got == want, raw["kind"]
        assert got.model_dump(by_alias=True, mode="json") == want.model_dump(by_alias=True, mode="json")
        assert got.model_dump(exclude_unset=True) == want.model_dump(exclude_unset=True)
        assert got.model_fields_set == want.model_fields_set


def test_slim_shares_field_sets_and_copies_stay_independent():
    raws = [r for r in _raws() if r["kind"] == "Workload"][:2]
    a, b = (slim(Workload.model_validate(share_raw("Workload", copy.deepcopy(r)))) for r in raws)
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__
    assert a.status.conditions[0].type is b.status.conditions[0].type or \
        a.status.conditions[0].type != b.status.conditions[0].type
    c = a.model_copy(update={"kind": "Other"})
    assert c.kind == "Other" and a.kind == "Workload"
    assert "kind" in c.model_fields_set and b.model_fields_set == a.model_fields_set
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__  # the shared set was not mutated


def test_equal_specs_are_one_object_and_bad_input_still_fails_like_pydantic():
    import json

    import pytest
    from pydantic import ValidationError

    raws = [r for r in _raws() if r["kind"] == "Workload"]
    by_json: dict[str, list] = {}
    for r in raws:
        spec = slim(Workload.model_validate(share_raw("Workload", copy.deepcopy(r)))).spec
        by_json.setdefault(json.dumps(r["spec"], sort_keys=False), []).append(spec)
    groups = [g for g in by_json.values() if len(g) > 1]
    assert groups and all(s is g[0] for g in groups for s in g)
    bad = copy.deepcopy(raws[0])
    bad["spec"]["podSets"] = [{"count": "many"}]
    with pytest.raises(ValidationError):
        Workload.model_validate(share_raw("Workload", bad))
