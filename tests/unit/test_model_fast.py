"""Fast structs (engine/model/fast.py) hold exactly what the pydantic schema of record holds, decode
list pages and watch events straight from bytes, and fall back to the tolerant path — never to a
silently different object."""

from __future__ import annotations

import copy

import orjson
import pytest
from factories import job_pod
from pydantic import ValidationError
from tools.paths import DEMO

from taudash.bench.generate import Size, generate
from taudash.engine.model import CSINode, Job, Node, Pod, Quantity, Workload
from taudash.engine.model.fast import FastCodec
from taudash.engine.sources.snapshot import load_snapshot


def _raws(kind: str) -> list[dict]:
    store = load_snapshot(DEMO).store
    demo = [store.raw(kind, o.name, o.namespace) for o in store.list(kind)]
    fleet = [o for o in generate(Size("T", 20, 200, 100, 5, 2, 2, 4), seed=3) if o["kind"] == kind]
    return [r for r in demo if r is not None] + fleet


@pytest.mark.parametrize("model", [Workload, Job, Node, CSINode, Pod])
def test_fast_structs_dump_exactly_like_the_pydantic_schema(model):
    raws = _raws(model.__name__)
    assert len(raws) >= 20
    for raw in raws:
        fast = model.model_validate(copy.deepcopy(raw))
        schema = model.pydantic_model.model_validate(copy.deepcopy(raw))
        assert type(fast) is model
        want = schema.model_dump(by_alias=True, mode="json")
        if model is CSINode:  # the struct writes the API's own spelling; pydantic's alias generator says nodeId
            want["spec"]["drivers"] = [{("nodeID" if k == "nodeId" else k): v for k, v in d.items()}
                                       for d in want["spec"]["drivers"]]
        assert fast.model_dump() == want, raw["metadata"]["name"]
        assert fast.conditions == [] if not schema.conditions else [c.type for c in fast.conditions] == [
            c.type for c in schema.conditions]
        assert (fast.name, fast.namespace, fast.labels, fast.deleting) == (schema.name, schema.namespace, schema.labels,
                                                                           schema.deleting)
        if model is Workload:
            assert fast.derived_status == schema.derived_status
        if model is Job:
            assert fast.finished == schema.finished
        if model is Pod:
            assert (fast.terminal, fast.node_name, fast.effective_request("nvidia.com/gpu")) == (
                schema.terminal, schema.node_name, schema.effective_request("nvidia.com/gpu"))
        if model is Node:
            assert fast.status.allocatable == schema.status.allocatable
            assert (fast.condition("Ready") is None) == (schema.condition("Ready") is None)


def test_accessors_match_the_pydantic_models():
    for raw in _raws("Workload"):
        fast, schema = Workload.model_validate(raw), Workload.pydantic_model.model_validate(raw)
        assert (fast.name, fast.namespace, fast.uid, fast.labels, fast.deleting) == \
            (schema.name, schema.namespace, schema.uid, schema.labels, schema.deleting)
        assert ((fast.finished, fast.admitted, fast.quota_reserved)
                == (schema.finished, schema.admitted, schema.quota_reserved))
        assert [c.type for c in fast.conditions] == [c.type for c in schema.conditions]
        got, want = fast.condition("QuotaReserved"), schema.condition("QuotaReserved")
        assert ((got is None)
                == (want is None) and (got is None or (got.is_true, got.message) == (want.is_true, want.message)))
        assert (fast.owner and fast.owner.name) == (schema.owner and schema.owner.name)
        for a, b in zip(fast.status.admission.pod_set_assignments if fast.status.admission else [],
                        schema.status.admission.pod_set_assignments if schema.status.admission else [], strict=True):
            assert a.resource_usage == b.resource_usage
            assert all(isinstance(q, Quantity) for q in a.resource_usage.values())


def test_a_page_decodes_from_bytes_to_the_same_objects_as_one_by_one():
    raws = _raws("Workload")[:40]
    body = orjson.dumps({"kind": "WorkloadList", "metadata": {"resourceVersion": "77", "continue": "tok"},
                         "items": raws})
    items, rv, cont = FastCodec(Workload).page(body)
    assert (rv, cont) == ("77", "tok")
    assert items == [Workload.model_validate(r) for r in raws]
    last = orjson.dumps({"metadata": {"resourceVersion": "78"}, "items": raws[:1]})
    assert FastCodec(Workload).page(last)[1:] == ("78", None)


def test_what_the_fast_path_refuses_goes_the_tolerant_way():
    codec = FastCodec(Workload)
    raw = copy.deepcopy(_raws("Workload")[0])
    raw["metadata"]["labels"] = None  # the API may send null for an empty map
    raw["status"]["conditions"] = None
    body = orjson.dumps({"metadata": {}, "items": [raw]})
    assert codec.page(body) is None  # the caller then decodes the page and validates per object
    wl = Workload.model_validate(raw)
    assert wl.labels == {} and wl.status.conditions == [] and wl.derived_status == "pending"
    # Bookmarks and errors are not objects: the caller handles them from plain JSON.
    assert codec.event(b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}') is None
    assert codec.event(b'{"type":"ERROR","object":{"kind":"Status","code":410}}') is None
    assert codec.event(b"not json") is None
    typ, obj = codec.event(orjson.dumps({"type": "MODIFIED", "object": _raws("Workload")[1]}))
    assert typ == "MODIFIED" and obj == Workload.model_validate(_raws("Workload")[1])


@pytest.mark.parametrize("mutate", [
    lambda r: r["spec"].__setitem__("podSets", [{"count": "many"}]),
    lambda r: r["metadata"].__setitem__("name", ""),
    lambda r: r["status"]["admission"]["podSetAssignments"][0]["resourceUsage"].__setitem__("cpu", "lots"),
])
def test_bad_input_fails_with_the_schema_error(mutate):
    raw = copy.deepcopy(next(r for r in _raws("Workload") if r.get("status", {}).get("admission")))
    mutate(raw)
    with pytest.raises(ValidationError):
        Workload.model_validate(raw)
    assert FastCodec(Workload).page(orjson.dumps({"items": [raw]})) is None


def test_copies_replace_fields_and_dumps_can_drop_nulls():
    wl = Workload.model_validate(_raws("Workload")[0])
    other = wl.model_copy(update={"kind": "Other"})
    assert other.kind == "Other" and wl.kind == "Workload" and other.metadata is wl.metadata
    assert None not in _values(wl.model_dump(exclude_none=True))
    assert None in _values(wl.model_dump())  # e.g. an unset priorityClassRef or deletionTimestamp


def _values(v):
    if isinstance(v, dict):
        for x in v.values():
            yield from _values(x)
    elif isinstance(v, list):
        for x in v:
            yield from _values(x)
    else:
        yield v


def test_equal_specs_and_admissions_decode_once_and_are_shared():
    raws = [r for r in _raws("Workload") if r.get("status", {}).get("admission")][:2]
    a, b = copy.deepcopy(raws[0]), copy.deepcopy(raws[0])
    b["metadata"]["name"] += "-twin"
    other = copy.deepcopy(raws[0])
    other["metadata"]["name"] += "-other"
    other["spec"]["queueName"] = "elsewhere"
    items, _, _ = FastCodec(Workload).page(orjson.dumps({"metadata": {}, "items": [a, b, other]}))
    assert items[0].spec is items[1].spec and items[0].status.admission is items[1].status.admission
    assert items[2].spec is not items[0].spec and items[2].spec.queue_name == "elsewhere"
    assert items == [Workload.model_validate(r) for r in (a, b, other)]
    # An explicit null admission is not "absent" to the fast path: the page goes the tolerant way.
    nulled = copy.deepcopy(a)
    nulled["status"]["admission"] = None
    assert FastCodec(Workload).page(orjson.dumps({"items": [nulled]})) is None
    assert Workload.model_validate(nulled).status.admission is None


def test_pods_of_one_template_share_containers_statuses_and_repeated_strings():
    raws = [job_pod("j-0", "node-a"), job_pod("j-1", "node-b"), job_pod("j-2", "node-a")]
    items, _, _ = FastCodec(Pod).page(orjson.dumps({"metadata": {}, "items": raws}))
    assert items == [Pod.model_validate(r) for r in raws]
    a, b, c = items
    assert a.spec.containers is b.spec.containers and a.spec.tolerations is b.spec.tolerations
    assert a.status is b.status and a.status.container_statuses[0].restart_count == 2
    assert a.spec.node_name is c.spec.node_name and a.metadata.owner_references[0].uid is b.metadata.owner_references[0].uid
    assert (a.name, b.node_name) == ("j-0", "node-b")
    # A limit stands in for a missing request; the largest init container wins over a smaller sum; overhead adds.
    assert a.effective_request("nvidia.com/gpu") == Quantity.parse("4")
    assert a.effective_request("cpu") == Quantity.parse("6100m")
    assert a.effective_request("memory").is_zero() and not a.terminal


def test_terminal_pods_say_so():
    raw = job_pod("done", "node-a")
    for phase, terminal in (("Succeeded", True), ("Failed", True), ("Pending", False), ("Unknown", False)):
        raw["status"]["phase"] = phase
        assert Pod.model_validate(raw).terminal is terminal
