"""`taudash export` writes the objects as served: the live demo's export validates against Kueue's
CRDs, round-trips through the simulator to the same status, and a store without raw objects is
written partial — marked, never with invented fields."""

from __future__ import annotations

import asyncio
import contextlib
import io
from datetime import UTC, datetime

import factories as f
import yaml
from tools import kueue_data, yamlc
from tools.simhttp import list_served

from taudash.cli import main
from taudash.engine.incremental import derive
from taudash.engine.model import KINDS
from taudash.engine.rules.base import RuleConfig
from taudash.engine.sources.export import PARTIAL, export_snapshot, export_to, partial_object
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.store import AccessState, Store
from taudash.loading import DEMO_SNAPSHOT, load_live
from taudash.sim.schema import DEFAULT_CRD_VERSION, SchemaSet
from taudash.sim.server import SimServer

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
KUEUE = "kueue.x-k8s.io"


def _schemas() -> SchemaSet:
    return kueue_data.schemas(DEFAULT_CRD_VERSION)


def _contract(loaded) -> dict:
    doc = derive(loaded.store, NOW, RuleConfig(), loaded.source).to_contract()
    doc.pop("source", None)
    return doc


def _objects(path) -> tuple[dict, list[dict]]:
    doc = yamlc.load(path.read_text())
    return doc, doc["objects"]


def _invalid(schemas: SchemaSet, objs: list[dict]) -> list[str]:
    bad = []
    for o in objs:
        group, _, version = o["apiVersion"].rpartition("/")
        if group != KUEUE:
            continue
        out = schemas.check(group, o["kind"], version, yaml.safe_load(yaml.safe_dump(o)))
        assert out is not None, f"no CRD for {o['kind']} {version}"
        if not out.ok or out.unknown:
            bad.append(f"{o['kind']} {o['metadata'].get('name')}: {[str(c) for c in out.causes]} unknown={out.unknown}")
    return bad


async def test_live_export_is_faithful_valid_and_round_trips(tmp_path):
    schemas = _schemas()
    out = tmp_path / "export.yaml"
    async with SimServer(DEMO_SNAPSHOT, bookmark_interval=0.05) as sim:
        kc = str(sim.kubeconfig)
        original = await asyncio.to_thread(load_live, None, kc)
        assert await asyncio.to_thread(main, ["export", "--kubeconfig", kc, "-o", str(out)]) == 0
        served = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
                  for o in (await asyncio.to_thread(list_served, sim, "Workload"))}
    doc, objs = _objects(out)
    assert "notes" not in doc
    assert not [o for o in objs if PARTIAL in (o["metadata"].get("annotations") or {})]
    assert _invalid(schemas, objs) == []
    workloads = [o for o in objs if o["kind"] == "Workload"]
    assert workloads and len(workloads) == len(served)
    for w in workloads:
        assert w["apiVersion"] == f"{KUEUE}/v1beta2"
        assert "priorityClassName" not in w["spec"] and "priorityClassSource" not in w["spec"]
        # the object as served, field for field (the slim model would have lost the pod templates)
        assert w == served[(w["metadata"]["namespace"], w["metadata"]["name"])]
    assert any("image" in c for w in workloads for ps in w["spec"]["podSets"]
               for c in ps["template"]["spec"]["containers"])
    # every kind taudash reads and the demo has is in the export
    kinds = {o["kind"] for o in objs}
    assert {"Workload", "Job", "Node", "ClusterQueue", "LocalQueue", "TauWorkspace"} <= kinds

    async with SimServer(out, bookmark_interval=0.05) as again:
        replayed = await asyncio.to_thread(load_live, None, str(again.kubeconfig))
    assert _contract(replayed) == _contract(original)


def _store_without_raw() -> Store:
    """A store as an in-process build leaves it: models only, no raw form."""
    loaded = load_snapshot(DEMO_SNAPSHOT)
    store = Store()
    for k in KINDS:
        for obj in loaded.store.list(k.kind):
            store.upsert(obj)
        store.set_access(k.kind, AccessState.SYNCED)
    return store


def test_export_without_raw_is_marked_partial_and_invents_nothing(tmp_path):
    schemas = _schemas()
    out = tmp_path / "partial.yaml"
    n = export_snapshot(_store_without_raw(), out, "ctx", "2026-12-01T12:00:00+00:00")
    doc, objs = _objects(out)
    assert n == len(objs) > 0
    assert all(o["metadata"]["annotations"][PARTIAL] == "true" for o in objs)
    assert doc["notes"] and any("Workload" in note and PARTIAL in note for note in doc["notes"])
    for w in (o for o in objs if o["kind"] == "Workload"):
        assert "priorityClassName" not in w["spec"] and "priorityClassSource" not in w["spec"]
    assert _invalid(schemas, objs) == []
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    reloaded = load_snapshot(out)  # a partial export still loads, every object of it
    assert reloaded.issues == [] and reloaded.objects == n


def test_partial_object_drops_invented_empties_and_keeps_what_it_holds():
    wl = f.workload("w1", "team-a", admitted_to="cq", state="admitted")
    from taudash.engine.model.fast import Workload

    o = partial_object(Workload.model_validate(wl))
    assert o["metadata"]["annotations"] == {PARTIAL: "true"}
    assert "priorityClassName" not in o["spec"]
    assert o["spec"]["queueName"] == "jobqueue"
    assert o["status"]["admission"]["clusterQueue"] == "cq"


async def test_failed_reread_falls_back_to_partial_with_a_note(tmp_path):
    loaded = load_snapshot(DEMO_SNAPSHOT)
    store = _store_without_raw()
    for k in KINDS:  # the kinds a live source keeps raw stay raw
        if k.kind not in ("Workload", "Job"):
            for obj in loaded.store.list(k.kind):
                store.upsert(obj, raw=loaded.store.raw(k.kind, obj.name, obj.namespace))

    async def relist(k):
        if k.kind == "Job":
            raise RuntimeError("HTTP 403: forbidden")
        for obj in loaded.store.list(k.kind):
            yield [loaded.store.raw(k.kind, obj.name, obj.namespace)]

    out = tmp_path / "x.yaml"
    await export_to(store, out, "ctx", "t", relist)
    doc, objs = _objects(out)
    jobs = [o for o in objs if o["kind"] == "Job"]
    wls = [o for o in objs if o["kind"] == "Workload"]
    assert jobs and all(PARTIAL in o["metadata"]["annotations"] for o in jobs)
    assert wls and not any(PARTIAL in (o["metadata"].get("annotations") or {}) for o in wls)
    assert any("Job: re-read from the API failed (HTTP 403: forbidden)" == n for n in doc["notes"])
    assert len(wls) == len(loaded.store.list("Workload"))


def test_export_to_stdout_from_a_snapshot_is_the_file(tmp_path):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["export", "--snapshot", str(DEMO_SNAPSHOT), "-o", "-"]) == 0
    assert main(["export", "--snapshot", str(DEMO_SNAPSHOT), "-o", str(tmp_path / "f.yaml")]) == 0
    assert yamlc.load(buf.getvalue()) == yamlc.load((tmp_path / "f.yaml").read_text())


async def test_reread_follows_continue_tokens_page_by_page(tmp_path):
    """Small pages: every page of every slim kind is written, in the order served."""
    from taudash.engine.sources.client import connect
    from taudash.engine.sources.export import kube_relist
    from taudash.engine.sources.kube import KubeSource

    async with SimServer(DEMO_SNAPSHOT, bookmark_interval=0.05) as sim:
        target = await connect(None, str(sim.kubeconfig))
        store = Store()
        source = KubeSource(store, target)
        pages: dict[str, int] = {}
        relist = kube_relist(source, page_size=7)

        async def counting(k):
            async for page in relist(k):
                assert len(page) <= 7
                pages[k.kind] = pages.get(k.kind, 0) + 1
                yield page

        try:
            await source.start()
            assert await source.wait_synced(30)
            await source.stop()
            out = tmp_path / "paged.yaml"
            await export_to(store, out, target.context, "t", counting)
            served = await asyncio.to_thread(list_served, sim, "Workload")
        finally:
            await source.stop()
            await target.close()
    doc, objs = _objects(out)
    workloads = [o for o in objs if o["kind"] == "Workload"]
    assert len(served) > 14 and pages["Workload"] == -(-len(served) // 7)
    assert sorted(w["metadata"]["name"] for w in workloads) == sorted(w["metadata"]["name"] for w in served)
    assert "notes" not in doc
