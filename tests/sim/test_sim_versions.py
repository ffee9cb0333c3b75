"""Kueue releases as a simulator setting (taudash/sim/kueue_versions.py): what each serves and
stores, conversion on the way in and out (GET, LIST, WATCH, writes), the CRDs that judge writes, the
condition reasons the controllers write, and that everything served after a seeded run with a
HoldAndDrain, a release, a preemption and a MultiKueue dispatch validates against that release's CRDs at
every served version."""

from __future__ import annotations

import asyncio
import copy
import json

import aiohttp
import pytest
from tools import kueue_data, yamlc
from tools.paths import DEMO
from tools.simhttp import request as _request

from taudash.sim.kueue_versions import VERSIONS, kueue_version
from taudash.sim.objects import ObjectDB
from taudash.sim.resources import Registry
from taudash.sim.schema import SchemaSet
from taudash.sim.server import SimServer
from taudash.sim.world import World

KUEUE = "kueue.x-k8s.io"
ALL = tuple(VERSIONS)  # ("0.14", "0.15", "0.19")
LEGACY_QR = {"Pending", "Inadmissible", "Waiting"}


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setenv("TAUDASH_SIM_STRICT", "1")  # a controller's schema-invalid write fails its step


def schemas_of(version: str) -> SchemaSet:
    return kueue_data.schemas(kueue_version(version).crd_folder)


async def get(sim: SimServer, path: str) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {sim.token}"}
    async with aiohttp.ClientSession() as s, s.get(sim.url + path, headers=headers,
                                                   ssl=sim.cert.client_context()) as r:
        return r.status, json.loads(await r.read())


# --- the table -----------------------------------------------------------------------------------

def test_the_version_table():
    v14, v15, v19 = (kueue_version(v) for v in ALL)
    assert (v14.served, v14.storage, v14.preferred, v14.crd_folder) == (("v1beta1",), "v1beta1", "v1beta1", "v0.15.8")
    assert (v15.served, v15.storage, v15.preferred, v15.crd_folder) == (("v1beta2", "v1beta1"), "v1beta1", "v1beta2",
                                                                          "v0.15.8")
    assert (v19.served, v19.storage, v19.preferred, v19.crd_folder) == (("v1beta2", "v1beta1"), "v1beta2", "v1beta2",
                                                                          "main-ff69552")
    assert kueue_version() == v19 and kueue_version("v0.15.8") == v15
    with pytest.raises(ValueError, match="0.16"):
        kueue_version("0.16")
    assert "wl" in v15.short("Workload") and "wl" not in v19.short("Workload")
    assert v15.short("Cohort") == () and v19.short("Cohort") == ("co",)
    # the short names are the CRDs' own
    for v in ALL:
        crds = schemas_of(v)
        for (_group, kind), crd in crds.crds.items():
            if kind == "ProvisioningRequestConfig":
                continue  # not served by the simulator
            assert kueue_version(v).short(kind) == tuple(_short_names(crds.folder, crd.plural)), (v, kind)


def _short_names(folder, plural) -> list[str]:
    doc = yamlc.load((folder / f"{KUEUE}_{plural}.yaml").read_text())
    return doc["spec"]["names"].get("shortNames") or []


def test_reasons_per_release_and_gate():
    v15, v19 = kueue_version("0.15"), kueue_version("0.19", {"UnadmittedWorkloadsObservability": True})
    assert v19.reason("QuotaReserved", "WaitingForQuota") == "WaitingForQuota"
    assert v15.reason("QuotaReserved", "WaitingForQuota") == "Pending"
    assert v15.reason("QuotaReserved", "Suspended") == "Inadmissible"
    assert v15.reason("QuotaReserved", "WaitingForPodsReady") == "Waiting"
    assert v15.reason("Admitted", "UnsatisfiedAdmissionChecks") == "UnsatisfiedChecks"
    assert v15.reason("QuotaReserved", "Inadmissible") == "Inadmissible"  # no fallback: the same everywhere
    assert (v15.admitted_on_reservation_loss(False), v15.admitted_on_reservation_loss(True)) == (False, True)
    assert v19.admitted_on_reservation_loss(False)
    upstream = kueue_version("0.19")  # the default plays 0.19.2's defaults: the gate is off
    assert upstream == kueue_version("0.19", {"UnadmittedWorkloadsObservability": False})
    assert upstream.reason("QuotaReserved", "ExceedsMaxQuota") == "Pending" and not upstream.granular
    with pytest.raises(ValueError, match="no UnadmittedWorkloadsObservability"):
        kueue_version("0.15", {"UnadmittedWorkloadsObservability": True})
    with pytest.raises(ValueError, match="unknown Kueue feature gate"):
        kueue_version("0.19", {"Nope": True})


# --- served and stored -----------------------------------------------------------------------------

@pytest.mark.parametrize("version", ALL)
async def test_discovery_serves_the_releases_versions_and_short_names(version):
    kv = kueue_version(version)
    async with SimServer(DEMO, kueue_version=version) as sim:
        assert sim.kueue == kv and sim.db.kueue == kv
        status, group = await get(sim, f"/apis/{KUEUE}")
        assert status == 200 and [v["version"] for v in group["versions"]] == list(kv.served)
        assert group["preferredVersion"]["version"] == kv.preferred
        for v in ("v1beta1", "v1beta2"):
            status, res = await get(sim, f"/apis/{KUEUE}/{v}")
            if v not in kv.served:
                assert status == 404  # Kueue 0.14 has no v1beta2 at all
                continue
            shorts = {r["name"]: r.get("shortNames", []) for r in res["resources"] if "/" not in r["name"]}
            assert shorts["workloads"] == list(kv.short("Workload"))
            assert shorts["cohorts"] == list(kv.short("Cohort"))


async def test_kueue_015_stores_v1beta1_and_serves_both_converted():
    async with SimServer(DEMO, kueue_version="0.15") as sim:
        cq = next(c for c in sim.db.list("ClusterQueue") if c["spec"].get("cohortName"))
        name, cohort = cq["metadata"]["name"], cq["spec"]["cohortName"]
        stored = sim.db.stored("ClusterQueue", name)
        assert stored["apiVersion"] == f"{KUEUE}/v1beta1" and stored["spec"]["cohort"] == cohort
        assert "cohortName" not in stored["spec"]
        _, v1 = await get(sim, f"/apis/{KUEUE}/v1beta1/clusterqueues/{name}")
        _, v2 = await get(sim, f"/apis/{KUEUE}/v1beta2/clusterqueues/{name}")
        assert ((v1["apiVersion"], v1["spec"]["cohort"])
                == (f"{KUEUE}/v1beta1", cohort) and "cohortName" not in v1["spec"])
        assert ((v2["apiVersion"], v2["spec"]["cohortName"])
                == (f"{KUEUE}/v1beta2", cohort) and "cohort" not in v2["spec"])
        # list items too
        _, lst = await get(sim, f"/apis/{KUEUE}/v1beta1/workloads")
        assert lst["apiVersion"] == f"{KUEUE}/v1beta1" and lst["items"]
        assert all(i["apiVersion"] == f"{KUEUE}/v1beta1" and "priorityClassRef" not in i["spec"] for i in lst["items"])
        assert any("priorityClassName" in i["spec"] for i in lst["items"])
        _, lst = await get(sim, f"/apis/{KUEUE}/v1beta2/localqueues")
        assert all("flavorUsage" not in (i.get("status") or {}) for i in lst["items"])
        assert any("flavorsUsage" in (i.get("status") or {}) for i in lst["items"])


async def test_a_v1beta1_only_field_survives_on_015_storage_and_not_on_019():
    """What the storage version keeps is observable: Kueue 0.15 stores v1beta1, so the deprecated
    `spec.admissionChecks` written through v1beta1 reads back as written; 0.19 stores v1beta2, where
    it is folded into `admissionChecksStrategy` for good."""
    body = {"apiVersion": f"{KUEUE}/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "legacy"},
            "spec": {"namespaceSelector": {}, "admissionChecks": ["mk"], "resourceGroups": []}}
    for version, kept in (("0.15", True), ("0.19", False)):
        async with SimServer(None, kueue_version=version) as sim:
            status, out = await _request(sim, "POST", f"/apis/{KUEUE}/v1beta1/clusterqueues", body,
                                         ctype="application/json")
            assert status == 201, out
            _, v1 = await get(sim, f"/apis/{KUEUE}/v1beta1/clusterqueues/legacy")
            _, v2 = await get(sim, f"/apis/{KUEUE}/v1beta2/clusterqueues/legacy")
            assert ("admissionChecks" in v1["spec"]) is kept, version
            assert v2["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "mk"}]}
            assert "admissionChecks" not in v2["spec"]


async def test_watch_events_carry_the_watched_version():
    async with SimServer(DEMO, kueue_version="0.15") as sim:
        name = next(c["metadata"]["name"] for c in sim.db.list("ClusterQueue") if c["spec"].get("cohortName"))
        headers = {"Authorization": f"Bearer {sim.token}"}
        seen: dict[str, list[dict]] = {}
        rv = sim.db.resource_version
        async with aiohttp.ClientSession() as s:
            async def watch(v: str) -> None:
                url = f"{sim.url}/apis/{KUEUE}/{v}/clusterqueues?watch=1&resourceVersion={rv}&timeoutSeconds=5"
                async with s.get(url, headers=headers, ssl=sim.cert.client_context()) as r:
                    async for line in r.content:
                        ev = json.loads(line)
                        seen.setdefault(v, []).append(ev)
                        if ev["type"] == "MODIFIED":
                            return

            tasks = [asyncio.create_task(watch(v)) for v in ("v1beta1", "v1beta2")]
            await sim.api.wait_for_watches(2, "clusterqueues.kueue.x-k8s.io", within=20)
            sim.db.patch_merge("ClusterQueue", name, {"spec": {"stopPolicy": "Hold"}})  # in-process, internal
            await asyncio.wait_for(asyncio.gather(*tasks), 30)
        e1, e2 = seen["v1beta1"][-1]["object"], seen["v1beta2"][-1]["object"]
        assert e1["apiVersion"] == f"{KUEUE}/v1beta1" and "cohort" in e1["spec"] and "cohortName" not in e1["spec"]
        assert e2["apiVersion"] == f"{KUEUE}/v1beta2" and "cohortName" in e2["spec"] and "cohort" not in e2["spec"]
        assert e1["spec"]["stopPolicy"] == e2["spec"]["stopPolicy"] == "Hold"
        assert sim.db.stored("ClusterQueue", name)["spec"]["stopPolicy"] == "Hold"


@pytest.mark.parametrize("version", ALL)
async def test_a_schema_invalid_write_is_a_422_at_every_served_version(version):
    schemas_of(version)  # the simulator validates with the release's CRDs: the test needs them
    async with SimServer(DEMO, kueue_version=version) as sim:
        cq = sim.db.list("ClusterQueue")[0]["metadata"]["name"]
        for v in kueue_version(version).served:
            rv = sim.db.resource_version
            status, body = await _request(sim, "PATCH", f"/apis/{KUEUE}/{v}/clusterqueues/{cq}",
                                          {"spec": {"stopPolicy": "Sometimes"}})
            assert status == 422 and body["reason"] == "Invalid", (version, v, body)
            assert "spec.stopPolicy" in body["message"]
            assert sim.db.resource_version == rv
            ok, _ = await _request(sim, "PATCH", f"/apis/{KUEUE}/{v}/clusterqueues/{cq}",
                                   {"spec": {"stopPolicy": "Hold"}})
            assert ok == 200
        # a field the addressed version does not know: v1beta1's `cohort` through v1beta2 is refused strictly
        if "v1beta2" in kueue_version(version).served:
            status, body = await _request(sim, "PATCH",
                                          f"/apis/{KUEUE}/v1beta2/clusterqueues/{cq}?fieldValidation=Strict",
                                          {"spec": {"cohort": "x"}})
            assert status == 400 and 'unknown field "spec.cohort"' in body["message"]
        status, _ = await _request(sim, "PATCH", f"/apis/{KUEUE}/v1beta1/clusterqueues/{cq}?fieldValidation=Strict",
                                   {"spec": {"cohort": "x"}})
        assert status == 200 and sim.db.get("ClusterQueue", cq)["spec"]["cohortName"] == "x"


# --- a seeded run: everything served validates, reasons are the release's -----------------------

@pytest.mark.parametrize("version", ALL)
async def test_after_a_seeded_run_with_hold_release_preemption_and_dispatch_everything_served_validates(version):
    kv = kueue_version(version)
    crds = schemas_of(version)
    async with SimServer(DEMO, kueue_version=version, seed=3) as sim:
        world = World.for_server(sim)  # the default scenario: arrivals, completions, node events
        assert world.writer.strict
        events = sim.db.subscribe(["Workload"])  # every Workload write of the run, old and new
        hold_at, release_at = 120, 360
        # hold through the preferred version, release through the other one (when there is one)
        hold_v, release_v = kv.served[0], kv.served[-1]
        path = "/apis/{}/{}/clusterqueues/tau-ws-train"
        for t in range(0, 600, 10):
            world.step(10)
            if t == hold_at:
                status, _ = await _request(sim, "PATCH", path.format(KUEUE, hold_v),
                                           {"spec": {"stopPolicy": "HoldAndDrain"}})
                assert status == 200
            if t == hold_at + 60:
                held = [w["metadata"]["name"] for w in sim.db.list("Workload")
                        if (w["status"].get("admission") or {}).get("clusterQueue") == "tau-ws-train"
                        and not any(c["type"] == "Finished" and c["status"] == "True"
                                    for c in w["status"].get("conditions") or ())]
                assert held == [], "HoldAndDrain left admitted work in the queue"
            if t == release_at:
                status, _ = await _request(sim, "PATCH", path.format(KUEUE, release_v),
                                           {"spec": {"stopPolicy": "None"}})
                assert status == 200
        assert world.clock.elapsed >= 600 and world.errors == [] and world.writer.invalid == 0, world.errors
        evicted = [w for w in sim.db.list("Workload")
                   if any(e.get("reason") == "ClusterQueueStopped"
                          for e in (w["status"].get("schedulingStats") or {}).get("evictions") or ())]
        assert evicted, "the HoldAndDrain evicted nothing"
        served = 0
        for v in kv.served:
            for r in sim.db.registry.all:
                if r.group != KUEUE:
                    continue
                status, body = await get(sim, f"/apis/{KUEUE}/{v}/{r.plural}")
                assert status == 200 and body["apiVersion"] == f"{KUEUE}/{v}"
                for item in body["items"]:
                    assert item["apiVersion"] == f"{KUEUE}/{v}"
                    out = crds.check(KUEUE, r.kind, v, copy.deepcopy(item))
                    assert out is not None and out.ok and not out.unknown, (version, v, r.kind,
                                                                            item["metadata"]["name"], out)
                    served += 1
        assert served >= 50 * len(kv.served)
        # the condition reasons are the release's
        workloads = sim.db.list("Workload")
        qr_false = {c["reason"] for w in workloads for c in w["status"].get("conditions") or ()
                    if c["type"] == "QuotaReserved" and c["status"] == "False"}
        assert qr_false, "nothing is pending after the run"
        if kv.granular:
            assert qr_false - LEGACY_QR, qr_false  # granular reasons appear
        else:
            assert qr_false <= LEGACY_QR, qr_false
            # Admitted=False only on workloads that lost an admission (an eviction), never on one never admitted
            for w in workloads:
                conds = {c["type"]: c for c in w["status"].get("conditions") or ()}
                if conds.get("Admitted", {}).get("status") == "False":
                    assert "Evicted" in conds, w["metadata"]["name"]
        # which Admitted=False writes happened: without the gate, only when an admission was lost
        written, preempted, dispatched = [], set(), set()
        while (ev := events.get_nowait()) is not None:
            name = ev.object["metadata"]["name"]
            if (_cond(ev.object, "Preempted") or {}).get("status") == "True":
                preempted.add(name)  # classical preemption within a ClusterQueue (LowerPriority)
            if (ev.object.get("status") or {}).get("clusterName"):
                dispatched.add(name)  # MultiKueue: the manager's Workload names the worker that admitted it
            new, old = _cond(ev.object, "Admitted"), _cond(ev.old, "Admitted") if ev.old else None
            if new and new["status"] == "False" and (old or {}).get("status") != "False":
                written.append(((old or {}).get("status"), new["reason"]))
        events.close()
        assert preempted, "the run had no preemption"
        assert dispatched, "the run had no MultiKueue dispatch"
        assert written, "no workload lost or was refused an admission in the run"
        if not kv.granular:
            assert {was for was, _ in written} == {"True"}, written
        else:
            assert None in {was for was, _ in written}, written  # also on workloads never admitted
        # CQ status carries borrowed, "0" outside a cohort
        for cq in sim.db.list("ClusterQueue"):
            for fl in (cq.get("status") or {}).get("flavorsUsage") or ():
                assert all("borrowed" in res for res in fl["resources"]), cq["metadata"]["name"]


@pytest.mark.parametrize("version", ALL)
def test_objectdb_alone_plays_a_release(version):
    """Without a server: a Registry for the release; controllers' writes (internal v1beta2) are stored
    in the storage version and judged by a served version's schema."""
    kv = kueue_version(version)
    db = ObjectDB(registry=Registry.for_kueue(version), schemas=schemas_of(version))
    assert db.kueue == kv
    out = db.create({"apiVersion": f"{KUEUE}/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "a"},
                     "spec": {"cohortName": "c", "namespaceSelector": {}}})
    assert out["spec"]["cohortName"] == "c" and out["apiVersion"] == f"{KUEUE}/v1beta2"
    stored = db.stored("ClusterQueue", "a")
    assert stored["apiVersion"] == f"{KUEUE}/{kv.storage}"
    assert stored["spec"].get("cohortName" if kv.storage == "v1beta2" else "cohort") == "c"
    from taudash.sim.errors import Invalid

    with pytest.raises(Invalid):  # judged by the schema even when v1beta2 is not served (0.14: as v1beta1)
        db.patch_merge("ClusterQueue", "a", {"spec": {"stopPolicy": "Sometimes"}})


def _cond(obj: dict, ctype: str) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == ctype), None)
