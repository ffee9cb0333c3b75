"""Property-based fuzzing of the models (every kind in engine.model.KINDS) and of the quantity parser.
A model either validates or raises pydantic's ValidationError — never another exception — and what
validates can be stored, dumped and serialised. A quantity either parses or raises QuantityError,
and what parses formats, compares and adds without error."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from factories import claim_lease
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tools.mutate import JUNK, MUTATION, demo_objects, mutate

from taudash.engine.model import KINDS, Quantity, QuantityError
from taudash.engine.store import Store

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEMO = demo_objects()
# A workflow's claim is taudash's own state while a run lives: a cluster snapshot holds none (one in the demo
# would stand stale in every demo and hold its queue), so its samples come from the factory.
NOT_IN_A_SNAPSHOT = {"Lease": [claim_lease("ClusterQueue tau-ws-train", "1a2b3c"),
                               claim_lease("TauWorkspace eval", "c0ffee", renewed=None, duration=None)]}
SAMPLES = {k.kind: [o for o in DEMO if o["kind"] in (k.kind, k.kind.removeprefix("Tau"))] or
           NOT_IN_A_SNAPSHOT.get(k.kind, []) for k in KINDS}


def test_the_demo_has_every_kind():
    assert all(SAMPLES.values()), [k for k, v in SAMPLES.items() if not v]
    assert not [o for o in DEMO if o["kind"] in NOT_IN_A_SNAPSHOT]  # the exemption is still needed


def validate_or_refuse(kind, raw):
    try:
        obj = kind.model.model_validate(raw)
    except ValidationError:
        return None
    dumped = obj.model_dump(by_alias=True, mode="json", exclude_none=True)
    json.dumps(dumped, allow_nan=False)
    store = Store()
    store.upsert(obj, raw=raw)
    assert store.count(kind.kind) == 1
    store.delete(kind.kind, obj.name, obj.namespace)
    return obj


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
@FUZZ
@given(data=st.data())
def test_mutated_objects_of_every_kind(kind, data):
    samples = SAMPLES[kind.kind]
    raw = samples[data.draw(st.integers(0, len(samples) - 1))]
    for path, op, value in data.draw(st.lists(MUTATION, min_size=1, max_size=3)):
        raw = mutate(raw, path, op, value)
    validate_or_refuse(kind, raw)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
@FUZZ
@given(spec=JUNK, status=JUNK, metadata=st.fixed_dictionaries({"name": st.text(min_size=1, max_size=8)},
                                                                 optional={"namespace": JUNK, "labels": JUNK,
                                                                           "ownerReferences": JUNK,
                                                                           "generation": JUNK}))
def test_sparse_objects_of_every_kind(kind, spec, status, metadata):
    raw = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata}
    if spec is not None:
        raw["spec"] = spec
    if status is not None:
        raw["status"] = status
    validate_or_refuse(kind, raw)


# --- quantities ------------------------------------------------------------------------------------

QUANTITY_LIKE = st.from_regex(
    r"\A\s?[+-]?[0-9]{0,40}(\.[0-9]{0,40})?([eE][+-]?[0-9]{1,12}|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?\s?\Z")
ANY_INPUT = st.one_of(
    QUANTITY_LIKE,
    st.text(max_size=30),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.integers().map(lambda n: n * 10**4000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=200, deadline=None)
@given(ANY_INPUT)
def test_quantity_parses_or_refuses(text):
    try:
        q = Quantity.parse(text)
    except QuantityError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 200
        return
    canonical = q.canonical()
    assert q.human() and isinstance(q.as_float(), float)
    again = Quantity.parse(canonical)  # the canonical form is a quantity of (nano-rounded) equal value
    assert again.canonical() == canonical
    assert abs(again.value - q.value) <= Decimal("1e-9")  # sub-nano values round up to the next nano
    assert again + again - again == again and not q < q  # exact at nano precision
    assert (q * 2 >= q) == (not q.negative)


def test_quantity_edge_cases():
    for bad in ("1e99999999", "1e-99999999x", "NaN", "Infinity", float("nan"), float("inf"), "9" * 5000,
                10**5000, Decimal("1e40"), "12Q", "", " ", "0x10", True):
        with pytest.raises(QuantityError):
            Quantity.parse(bad)
    assert Quantity.parse("1e-99999999").canonical() == "0"  # below a nano rounds to zero
    assert Quantity.parse(str(10**29)).canonical() == "100000000000E"
