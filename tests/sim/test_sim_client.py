"""kubernetes-asyncio (what taudash's live source uses) against the simulated API server."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest
import pytest_asyncio
from factories import workload_request
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import new_client_from_config
from kubernetes_asyncio.watch import Watch
from tools.paths import FIXTURES

from taudash.engine.sources.library_files import closing_library_descriptors
from taudash.sim.apiserver import ApiServer
from taudash.sim.objects import ObjectDB
from taudash.sim.server import SimServer

FIXTURE = FIXTURES / "sim-cluster.yaml"
KUEUE, V2 = "kueue.x-k8s.io", "v1beta2"
# kubernetes-asyncio labels a dict patch body json-patch+json unless told; the real server (and
# the simulator) reject that with 400, so merge patches must say what they are.
MERGE = {"_content_type": "application/merge-patch+json"}


async def library_client(sim: SimServer, tmp_path) -> client.ApiClient:
    """The client library's own kubeconfig loader (what these tests exercise), without the descriptor it leaves
    open on each certificate temp file (engine/sources/library_files.py)."""
    with closing_library_descriptors():
        return await new_client_from_config(config_file=str(sim.kubeconfig), temp_file_path=str(tmp_path))


@pytest_asyncio.fixture
async def sim(tmp_path):
    async with SimServer(FIXTURE, bookmark_interval=0.05) as s:
        yield s


@pytest_asyncio.fixture
async def api(sim, tmp_path):
    c = await library_client(sim, tmp_path)
    yield c
    await c.close()


async def raw(sim: SimServer, method: str, path: str, *, body=None, ctype="application/json", token=True,
              headers=None) -> tuple[int, dict]:
    hdrs = {"Content-Type": ctype, **(headers or {})}
    if token:
        hdrs["Authorization"] = f"Bearer {sim.token}"
    data = json.dumps(body) if body is not None else None
    async with aiohttp.ClientSession() as s, s.request(method, sim.url + path, data=data, headers=hdrs,
                                                        ssl=sim.cert.client_context()) as r:
        return r.status, json.loads(await r.read())


def wl(name: str, ns: str = "training", **labels) -> dict:
    return workload_request(name, ns, labels=labels)


async def test_version_and_discovery(api):
    version = await client.VersionApi(api).get_code()
    assert version.minor == "32"
    groups = {g.name: g for g in (await client.ApisApi(api).get_api_versions()).groups}
    assert groups[KUEUE].preferred_version.version == "v1beta2"
    assert [v.version for v in groups[KUEUE].versions] == ["v1beta2", "v1beta1"]
    assert "ray.io" in groups and "tau.azure.com" in groups
    res = await client.CustomObjectsApi(api).get_api_resources("tau.azure.com", "v1alpha1")
    by_name = {r.name: r for r in res.resources}
    assert by_name["workspaces"].short_names == ["tw"] and by_name["workspaces"].kind == "TauWorkspace"
    assert by_name["clusters"].short_names == ["tc"] and by_name["teams"].short_names == ["tt"]
    assert "workspaces/status" in by_name and by_name["workspaces/status"].verbs == ["get", "patch", "update"]
    kueue = {r.name: r for r in (await client.CustomObjectsApi(api).get_api_resources(KUEUE, "v1beta1")).resources}
    shorts = {s for r in kueue.values() for s in (r.short_names or [])}
    assert {"cq", "lq", "kwl", "rf", "co", "wpc"} <= shorts and "wl" not in shorts  # Kueue 0.19: `wl` went in 0.16


async def test_kueue_is_served_at_v1beta2_and_v1beta1(api):
    co = client.CustomObjectsApi(api)
    for version in ("v1beta2", "v1beta1"):
        obj = await co.get_cluster_custom_object(KUEUE, version, "clusterqueues", "tau-ws-training")
        assert obj["apiVersion"] == f"{KUEUE}/{version}"


async def test_list_pagination_with_limit_and_continue(api, sim):
    co = client.CustomObjectsApi(api)
    first = await co.list_cluster_custom_object(KUEUE, V2, "clusterqueues", limit=2)
    assert [i["metadata"]["name"] for i in first["items"]] == ["legacy-batch", "tau-ws-evaluation"]
    assert first["metadata"]["remainingItemCount"] == 1 and first["metadata"]["continue"]
    sim.db.create(wl("between"))  # writes between pages do not break the continuation
    second = await co.list_cluster_custom_object(KUEUE, V2, "clusterqueues", limit=2,
                                                 _continue=first["metadata"]["continue"])
    assert [i["metadata"]["name"] for i in second["items"]] == ["tau-ws-training"]
    assert "continue" not in second["metadata"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    # Typed core API, page by page.
    names, token = [], None
    while True:
        page = await client.CoreV1Api(api).list_node(limit=1, _continue=token)
        names += [n.metadata.name for n in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert names == ["cpu-0", "gpu-h200-0", "gpu-h200-1"]


async def test_label_and_field_selectors(api):
    co = client.CustomObjectsApi(api)
    got = await co.list_cluster_custom_object(
        KUEUE, V2, "clusterqueues",
        label_selector="tau.azure.com/team=vision,tau.azure.com/workspace notin (evaluation)")
    assert [i["metadata"]["name"] for i in got["items"]] == ["tau-ws-training"]
    got = await co.list_cluster_custom_object(KUEUE, V2, "workloads", field_selector="metadata.namespace=evaluation")
    assert [i["metadata"]["name"] for i in got["items"]] == ["rayservice-llm-serve-4a5b6"]
    got = await co.list_namespaced_custom_object("ray.io", "v1", "evaluation", "rayservices",
                                                 field_selector="metadata.name!=llm-serve")
    assert [i["metadata"]["name"] for i in got["items"]] == ["llm-canary"]
    with pytest.raises(ApiException) as exc:
        await co.list_cluster_custom_object(KUEUE, V2, "workloads", field_selector="spec.queueName=x")
    assert exc.value.status == 400


async def test_watch_from_list_resource_version(api, sim):
    co = client.CustomObjectsApi(api)
    listed = await co.list_namespaced_custom_object(KUEUE, V2, "training", "workloads")
    rv = listed["metadata"]["resourceVersion"]
    sim.db.create(wl("elsewhere", ns="evaluation"))  # another namespace: not seen
    await co.create_namespaced_custom_object(KUEUE, V2, "training", "workloads", wl("new"))
    await co.patch_namespaced_custom_object(KUEUE, V2, "training", "workloads", "new", {"spec": {"active": False}},
                                            **MERGE)
    await co.delete_namespaced_custom_object(KUEUE, V2, "training", "workloads", "new")
    events = []
    w = Watch()
    async with w:
        async for ev in w.stream(co.list_namespaced_custom_object, KUEUE, V2, "training", "workloads",
                                 resource_version=rv, timeout_seconds=5):
            events.append((ev["type"], ev["object"]["metadata"]["name"]))
            if len(events) == 3:
                w.stop()
                break
    assert events == [("ADDED", "new"), ("MODIFIED", "new"), ("DELETED", "new")]


async def test_watch_live_events_and_label_transitions(api, sim):
    co = client.CustomObjectsApi(api)
    events: list[tuple[str, str]] = []

    async def consume():
        w = Watch()
        async with w:
            async for ev in w.stream(co.list_cluster_custom_object, KUEUE, V2, "workloads",
                                     label_selector="sim/watched=yes", resource_version=str(sim.db.resource_version),
                                     timeout_seconds=5):
                events.append((ev["type"], ev["object"]["metadata"]["name"]))
                if len(events) == 3:
                    return

    task = asyncio.create_task(consume())
    await sim.api.wait_for_watches(1, "workloads")
    sim.db.create(wl("w1", **{"sim/watched": "yes"}))
    sim.db.create(wl("w2"))
    sim.db.patch_merge("workloads", "w2", {"metadata": {"labels": {"sim/watched": "yes"}}}, "training")  # moves in
    sim.db.patch_merge("workloads", "w1", {"metadata": {"labels": {"sim/watched": "no"}}}, "training")  # moves out
    await asyncio.wait_for(task, 5)
    assert events == [("ADDED", "w1"), ("ADDED", "w2"), ("DELETED", "w1")]


async def test_watch_without_resource_version_starts_with_the_current_state(api):
    co = client.CustomObjectsApi(api)
    names = []
    w = Watch()
    async with w:
        async for ev in w.stream(co.list_namespaced_custom_object, "tau.azure.com", "v1alpha1", "tau-system",
                                 "workspaces", timeout_seconds=1):
            assert ev["type"] == "ADDED"
            names.append(ev["object"]["metadata"]["name"])
            if len(names) == 2:
                break
    assert names == ["evaluation", "training"]


async def test_bookmarks_carry_only_the_resource_version(api, sim):
    co = client.CustomObjectsApi(api)
    listed = await co.list_cluster_custom_object(KUEUE, V2, "clusterqueues")
    sim.db.create(wl("unrelated"))  # another resource moves the global RV on
    w = Watch()
    async with w:
        async for ev in w.stream(co.list_cluster_custom_object, KUEUE, V2, "clusterqueues",
                                 resource_version=listed["metadata"]["resourceVersion"], allow_watch_bookmarks=True,
                                 timeout_seconds=5):
            assert ev["type"] == "BOOKMARK"
            assert ev["raw_object"]["metadata"] == {"resourceVersion": str(sim.db.resource_version)}
            assert w.resource_version == str(sim.db.resource_version)
            break


@pytest.mark.parametrize("gone_as", ["event", "http"])
async def test_expired_resource_version_is_410(tmp_path, gone_as):
    async with SimServer(FIXTURE, history=2, gone_as=gone_as) as sim:
        api = await library_client(sim, tmp_path)
        try:
            co = client.CustomObjectsApi(api)
            listed = await co.list_cluster_custom_object(KUEUE, V2, "clusterqueues", limit=1)
            for n in range(3):
                sim.db.create(wl(f"churn-{n}"))
            with pytest.raises(ApiException) as exc:
                async with Watch() as w:
                    async for _ in w.stream(co.list_cluster_custom_object, KUEUE, V2, "clusterqueues",
                                            resource_version=listed["metadata"]["resourceVersion"], timeout_seconds=2):
                        pass
            assert exc.value.status == 410
            # ...and so is the continue token of a list that old
            with pytest.raises(ApiException) as exc:
                await co.list_cluster_custom_object(KUEUE, V2, "clusterqueues", limit=1,
                                                    _continue=listed["metadata"]["continue"])
            assert exc.value.status == 410 and json.loads(exc.value.body)["reason"] == "Expired"
        finally:
            await api.close()


async def test_stale_resource_version_update_is_409(api):
    co = client.CustomObjectsApi(api)
    old = await co.get_cluster_custom_object(KUEUE, V2, "clusterqueues", "tau-ws-training")
    await co.patch_cluster_custom_object(KUEUE, V2, "clusterqueues", "tau-ws-training",
                                         {"spec": {"stopPolicy": "Hold"}},
                                         **MERGE)
    old["spec"]["stopPolicy"] = "HoldAndDrain"
    with pytest.raises(ApiException) as exc:
        await co.replace_cluster_custom_object(KUEUE, V2, "clusterqueues", "tau-ws-training", old)
    assert exc.value.status == 409
    body = json.loads(exc.value.body)
    assert body["kind"] == "Status" and body["reason"] == "Conflict"
    assert "the object has been modified" in body["message"]


async def test_dry_run_all_stores_nothing(api, sim):
    co = client.CustomObjectsApi(api)
    rv = sim.db.resource_version
    made = await co.create_namespaced_custom_object(KUEUE, V2, "training", "workloads", wl("dry"), dry_run="All")
    assert made["metadata"]["name"] == "dry"
    await co.patch_cluster_custom_object(KUEUE, V2, "clusterqueues", "tau-ws-training",
                                         {"spec": {"stopPolicy": "HoldAndDrain"}}, dry_run="All", **MERGE)
    await co.delete_cluster_custom_object(KUEUE, V2, "clusterqueues", "tau-ws-evaluation", dry_run="All")
    assert sim.db.resource_version == rv
    assert sim.db.get("workloads", "dry", "training") is None
    assert sim.db.get("cq", "tau-ws-training")["spec"]["stopPolicy"] == "None"
    assert sim.db.get("cq", "tau-ws-evaluation") is not None
    assert sim.api.writes == {"create": 1, "patch": 1, "delete": 1}  # received, even though nothing stored
    assert all(r.dry_run for r in sim.api.requests if r.verb in ("create", "patch", "delete"))
    with pytest.raises(ApiException) as exc:
        await co.delete_cluster_custom_object(KUEUE, V2, "clusterqueues", "tau-ws-evaluation", dry_run="Some")
    assert exc.value.status == 400


async def test_no_token_is_401(sim, tmp_path):
    cfg = client.Configuration()
    cfg.host = sim.url
    cfg.ssl_ca_cert = str(sim.cert.cert)
    async with client.ApiClient(cfg) as anon:
        with pytest.raises(ApiException) as exc:
            await client.CoreV1Api(anon).list_node()
    assert exc.value.status == 401 and json.loads(exc.value.body)["reason"] == "Unauthorized"
    status, body = await raw(sim, "GET", "/api/v1/nodes", token=False)
    assert status == 401 and body["kind"] == "Status"
    status, _ = await raw(sim, "GET", "/version", token=False)  # public, like system:public-info-viewer
    assert status == 200


async def test_injected_403_on_one_resource(api, sim):
    sim.faults.forbid("workloads")
    co = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as exc:
        await co.list_cluster_custom_object(KUEUE, V2, "workloads")
    assert exc.value.status == 403
    body = json.loads(exc.value.body)
    assert body["reason"] == "Forbidden" and 'cannot list resource "workloads"' in body["message"]
    assert (await co.list_cluster_custom_object(KUEUE, V2, "clusterqueues"))["items"]
    sim.faults.allow("workloads")
    assert (await co.list_cluster_custom_object(KUEUE, V2, "workloads"))["items"]


async def test_injected_500s_by_count_and_latency(api, sim):
    core = client.CoreV1Api(api)
    sim.faults.fail(500, count=2, resource="nodes")
    for _ in range(2):
        with pytest.raises(ApiException) as exc:
            await core.list_node()
        assert exc.value.status == 500
    assert len((await core.list_node()).items) == 3
    sim.faults.fail(503, probability=1.0, verbs={"get"})
    with pytest.raises(ApiException) as exc:
        await core.read_node("cpu-0")
    assert exc.value.status == 503
    sim.faults.clear()
    sim.faults.latency(0.2, resource="namespaces")
    started = time.monotonic()
    await core.list_namespace()
    assert time.monotonic() - started >= 0.2


async def test_absent_ray_api_is_404_on_discovery_and_list(tmp_path):
    async with SimServer(FIXTURE, ray=False) as sim:
        api = await library_client(sim, tmp_path)
        try:
            groups = {g.name for g in (await client.ApisApi(api).get_api_versions()).groups}
            assert "ray.io" not in groups and KUEUE in groups
            co = client.CustomObjectsApi(api)
            for call in (co.get_api_resources("ray.io", "v1"),
                         co.list_cluster_custom_object("ray.io", "v1", "rayjobs"),
                         co.list_namespaced_custom_object("ray.io", "v1", "evaluation", "rayservices")):
                with pytest.raises(ApiException) as exc:
                    await call
                assert exc.value.status == 404
                assert json.loads(exc.value.body)["reason"] == "NotFound"
            sim.api.set_group_enabled("ray.io", True)  # the API gets installed
            assert (await co.list_cluster_custom_object("ray.io", "v1", "rayjobs"))["items"]
        finally:
            await api.close()


async def test_status_patch_does_not_bump_generation(api):
    co = client.CustomObjectsApi(api)
    before = await co.get_cluster_custom_object(KUEUE, V2, "clusterqueues", "tau-ws-training")
    out = await co.patch_cluster_custom_object_status(KUEUE, V2, "clusterqueues", "tau-ws-training",
                                                      {"status": {"pendingWorkloads": 7}, "spec": {"stopPolicy": "Hold"}},
                                                      **MERGE)
    assert out["status"]["pendingWorkloads"] == 7 and out["spec"]["stopPolicy"] == "None"
    assert out["metadata"]["generation"] == before["metadata"]["generation"]
    assert int(out["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    spec = await co.patch_cluster_custom_object(KUEUE, V2, "clusterqueues", "tau-ws-training",
                                                {"spec": {"stopPolicy": "Hold"}, "status": {"pendingWorkloads": 0}},
                                                **MERGE)
    assert spec["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert spec["status"]["pendingWorkloads"] == 7  # the main resource ignores status
    got = await co.get_cluster_custom_object_status(KUEUE, V2, "clusterqueues", "tau-ws-training")
    assert got["status"]["pendingWorkloads"] == 7


async def test_patch_content_types(sim):
    path = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/tau-ws-training"
    status, body = await raw(sim, "PATCH", path, body={"spec": {"stopPolicy": "Hold"}},
                             ctype="application/strategic-merge-patch+json")
    assert status == 415 and body["reason"] == "UnsupportedMediaType"
    status, body = await raw(sim, "PATCH", path, ctype="application/json-patch+json",
                             body=[{"op": "replace", "path": "/spec/stopPolicy", "value": "Hold"}])
    assert status == 200 and body["spec"]["stopPolicy"] == "Hold"
    status, body = await raw(sim, "PATCH", path, ctype="application/json-patch+json",
                             body=[{"op": "test", "path": "/spec/stopPolicy", "value": "None"}])
    assert status == 422 and body["kind"] == "Status"
    # Built-ins take strategic merge (kubectl cordon).
    status, body = await raw(sim, "PATCH", "/api/v1/nodes/cpu-0", body={"spec": {"unschedulable": True}},
                             ctype="application/strategic-merge-patch+json")
    assert status == 200 and body["spec"]["unschedulable"] is True


async def test_error_bodies_are_status_objects(sim):
    status, body = await raw(sim, "GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/nope")
    assert status == 404 and body["reason"] == "NotFound"
    assert body["message"] == 'clusterqueues.kueue.x-k8s.io "nope" not found'
    assert body["details"] == {"name": "nope", "group": KUEUE, "kind": "clusterqueues"}
    status, body = await raw(sim, "POST", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
                             body={"apiVersion": f"{KUEUE}/{V2}", "kind": "ClusterQueue",
                                   "metadata": {"name": "tau-ws-training"}})
    assert status == 409 and body["reason"] == "AlreadyExists"
    status, body = await raw(sim, "POST", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
                             body={"apiVersion": f"{KUEUE}/{V2}", "kind": "ClusterQueue", "metadata": {"name": "x"},
                                   "spec": {"stopPolicy": "Later"}})
    assert status == 422 and body["reason"] == "Invalid" and body["details"]["causes"][0]["field"] == "spec.stopPolicy"
    status, body = await raw(sim, "GET", "/api/v1/secrets")
    assert status == 404


async def test_dropped_watch_reconnects_from_the_last_resource_version(api, sim):
    co = client.CustomObjectsApi(api)
    rv = str(sim.db.resource_version)
    names: list[str] = []

    async def consume():
        w = Watch()
        async with w:  # no timeout_seconds: the client re-watches on EOF, like an informer
            async for ev in w.stream(co.list_cluster_custom_object, KUEUE, V2, "workloads", resource_version=rv):
                names.append(ev["object"]["metadata"]["name"])
                if len(names) == 2:
                    return

    task = asyncio.create_task(consume())
    await sim.api.wait_for_watches(1, "workloads")
    sim.db.create(wl("before-drop"))
    await _until(lambda: names)
    sim.faults.drop_watches()
    sim.db.create(wl("after-drop"))  # happens while no watch is open; the re-watch replays it
    await asyncio.wait_for(task, 5)
    assert names == ["before-drop", "after-drop"]
    assert sum(r.verb == "watch" for r in sim.api.requests) == 2


async def test_gone_storm_forces_a_relist(api, sim):
    co = client.CustomObjectsApi(api)
    rv = (await co.list_cluster_custom_object(KUEUE, V2, "workloads"))["metadata"]["resourceVersion"]
    sim.faults.gone_storm(count=1)
    with pytest.raises(ApiException) as exc:
        async with Watch() as w:
            async for _ in w.stream(co.list_cluster_custom_object, KUEUE, V2, "workloads",
                                    resource_version=rv, timeout_seconds=1):
                pass
    assert exc.value.status == 410
    relisted = await co.list_cluster_custom_object(KUEUE, V2, "workloads")
    sim.db.create(wl("after-storm"))
    async with Watch() as w:  # a fresh RV after the re-list works again
        async for ev in w.stream(co.list_cluster_custom_object, KUEUE, V2, "workloads",
                                 resource_version=relisted["metadata"]["resourceVersion"], timeout_seconds=5):
            assert (ev["type"], ev["object"]["metadata"]["name"]) == ("ADDED", "after-storm")
            break


async def test_read_only_session_sends_no_writes(api, sim):
    co = client.CustomObjectsApi(api)
    await client.CoreV1Api(api).list_node()
    await co.list_cluster_custom_object(KUEUE, V2, "clusterqueues")
    await co.get_namespaced_custom_object("tau.azure.com", "v1alpha1", "tau-system", "workspaces", "training")
    async with Watch() as w:
        async for _ in w.stream(co.list_cluster_custom_object, KUEUE, V2, "workloads", timeout_seconds=5):
            break  # the current state arrives first
    assert sim.api.writes == {}
    assert {r.verb for r in sim.api.requests} >= {"list", "get", "watch"}


async def test_refuses_to_bind_anything_but_loopback():
    with pytest.raises(ValueError):
        ApiServer(ObjectDB(), host="0.0.0.0")


async def _until(cond, within: float = 2.0) -> None:
    deadline = time.monotonic() + within
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.005)


async def _stream_lines(sim: SimServer, path: str, until: int) -> list[dict]:
    """Read `until` watch events (or up to EOF / a cut connection) from a raw watch request."""
    events: list[dict] = []
    headers = {"Authorization": f"Bearer {sim.token}"}
    async with aiohttp.ClientSession() as s, s.get(sim.url + path, headers=headers, ssl=sim.cert.client_context()) as r:
        assert r.status == 200
        try:
            while len(events) < until:
                line = await asyncio.wait_for(r.content.readline(), 5)
                if not line:
                    break
                events.append(json.loads(line))
        except aiohttp.ClientPayloadError:
            events.append({"type": "CUT"})
    return events


async def test_streaming_list_ends_initial_events_with_an_annotated_bookmark(sim):
    events = await _stream_lines(
        sim, "/apis/tau.azure.com/v1alpha1/namespaces/tau-system/workspaces?watch=1&sendInitialEvents=true"
             "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=5", until=3)
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "BOOKMARK"]
    assert events[2]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_aborted_watch_cuts_the_connection(sim):
    async def cut():
        await sim.api.wait_for_watches(1, "nodes")
        sim.faults.drop_watches(abort=True)

    task = asyncio.create_task(cut())
    events = await _stream_lines(sim, f"/api/v1/nodes?watch=1&resourceVersion={sim.db.resource_version}", until=5)
    await task
    assert events in ([], [{"type": "CUT"}])  # no clean end of stream
    assert sim.api.open_watches() == 0
    status, body = await raw(sim, "GET", "/api/v1/nodes")  # the server carries on
    assert status == 200 and len(body["items"]) == 3
