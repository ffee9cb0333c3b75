"""The live source's one-pass decode (engine/model/fast.py: a list page or a watch event straight into
the store's structs) gives exactly the schema path's objects — the pydantic model of record — on real
objects: the list pages the simulator serves (its demo cluster, a generated fleet with admitted and
pending Workloads, Kueue's own example Jobs as `kubectl create` stores them), at both Kueue storage
versions; and the store holds what the one-pass decode made, indexed as upserts would index it."""

from __future__ import annotations

import copy

import orjson
import pytest
from pydantic import ValidationError
from test_kueue_examples import _as_created, manifests
from tools import kueue_data

from taudash.bench.generate import Size, generate
from taudash.engine.model import KINDS, Job
from taudash.engine.model.fast import FastCodec, FastObject
from taudash.engine.sources.client import connect
from taudash.engine.sources.kube import KubeSource
from taudash.engine.store import AccessState, Store
from taudash.sim.server import SimServer

FAST = [k for k in KINDS if issubclass(k.model, FastObject)]


def example_jobs() -> list[dict]:
    docs = [d for p in sorted(kueue_data.examples().glob("*.yaml")) for d in manifests(p)]
    return [_as_created(d, i) for i, d in enumerate(docs) if d["kind"] == "Job" and d["apiVersion"] == "batch/v1"]


def schema_dump(model: type[FastObject], raw: dict) -> dict:
    want = model.pydantic_model.model_validate(copy.deepcopy(raw)).model_dump(by_alias=True, mode="json")
    if model.__name__ == "CSINode":  # the struct writes the API's own spelling; pydantic's alias generator says nodeId
        want["spec"]["drivers"] = [{("nodeID" if k == "nodeId" else k): v for k, v in d.items()}
                                   for d in want["spec"]["drivers"]]
    return want


@pytest.mark.parametrize("kueue", ["0.19", "0.15"])  # v1beta2 stored; v1beta1 stored and v1beta2 served by conversion
async def test_served_list_pages_decode_in_one_pass_like_the_schema(kueue, monkeypatch):
    monkeypatch.setattr("taudash.engine.sources.kube.LIST_PAGE", 37)  # several pages per kind, and a short last one
    jobs = example_jobs()
    assert len(jobs) >= 15
    fleet = generate(Size("T", 12, 150, 60, 3, 2, 2, 3), seed=5)
    pages: list[tuple[str, bytes]] = []
    async with SimServer(objects=jobs + fleet, kueue_version=kueue) as sim:
        target = await connect(kubeconfig=str(sim.kubeconfig))
        store = Store()
        source = KubeSource(store, target, on_page=lambda kind, body: pages.append((kind, body)))
        try:
            await source.start()
            assert await source.wait_synced(30)
            assert {a.state for a in store.access_states().values()} == {AccessState.SYNCED}
            for k in FAST:
                served = [body for kind, body in pages if kind == k.kind]
                assert served, k.kind
                api_version = f"{k.group}/{source.version_of(k.kind)}" if k.group else source.version_of(k.kind)
                decoded = []
                for body in served:
                    page = FastCodec(k.model).page(body, api_version)
                    assert page is not None, k.kind  # real objects never need the tolerant path
                    objs, rv, cont = page
                    doc = orjson.loads(body)
                    assert (rv, cont) == (doc["metadata"]["resourceVersion"], doc["metadata"].get("continue"))
                    raws = [{"apiVersion": api_version, **raw} for raw in doc["items"]]
                    assert [o.model_dump() for o in objs] == [schema_dump(k.model, r) for r in raws], k.kind
                    assert objs == [k.model.model_validate(r) for r in raws], k.kind
                    # A watch event of the same object decodes the same way.
                    for raw, obj in zip(raws[:3], objs, strict=False):
                        assert FastCodec(k.model).event(orjson.dumps({"type": "MODIFIED", "object": raw}),
                                                        api_version) == ("MODIFIED", obj)
                    decoded += objs
                # The store holds what the one-pass decode made, and only that.
                assert store.list(k.kind) == sorted(decoded, key=lambda o: (o.namespace or "", o.name)), k.kind
                assert len(served) >= 2 or len(decoded) < 37, k.kind
            names = {o.name for o in store.list("Job")}
            assert {j["metadata"]["name"] for j in jobs} <= names  # Kueue's examples went the same way
            assert store.list("Workload") and any(w.status.admission for w in store.list("Workload"))
        finally:
            await source.stop()
            await target.close()


def test_example_jobs_decode_in_one_pass_like_the_schema():
    """Kueue's example Jobs as the API server stores them, without an apiVersion in the list (as the API
    server lists built-in kinds): stamped with the served version, else equal to the schema path."""
    jobs = example_jobs()
    items = [{k: v for k, v in j.items() if k != "apiVersion"} for j in jobs]
    objs, _, _ = FastCodec(Job).page(orjson.dumps({"metadata": {"resourceVersion": "5"}, "items": items}), "batch/v1")
    assert [o.api_version for o in objs] == ["batch/v1"] * len(jobs)
    assert [o.model_dump() for o in objs] == [schema_dump(Job, j) for j in jobs]
    assert [o.spec.parallelism for o in objs] == [j["spec"].get("parallelism") for j in jobs]
    # A deletion is not stamped: it says only what the server sent.
    typ, gone = FastCodec(Job).event(orjson.dumps({"type": "DELETED", "object": items[0]}), "batch/v1")
    assert typ == "DELETED" and gone.api_version == "" and gone.name == jobs[0]["metadata"]["name"]


@pytest.mark.parametrize("mutate", [
    lambda j: j["spec"].__setitem__("parallelism", "three"),
    lambda j: j["metadata"].__setitem__("name", ""),
])
def test_a_job_the_fast_path_refuses_fails_with_the_schema_error(mutate):
    job = copy.deepcopy(example_jobs()[0])
    mutate(job)
    assert FastCodec(Job).page(orjson.dumps({"items": [job]})) is None  # the source then validates per object
    with pytest.raises(ValidationError):
        Job.model_validate(job)
