"""List pages assembled from each object's cached encoding (ObjectDB.encoded) are byte for byte the
pages the simulator served before the cache: the whole page encoded with orjson from the objects in the
version asked for (schema validation off: it is not what is tested). Random writes, deletes, creates, pages,
selectors, namespaces and served versions, with the cache warm from earlier lists so a stale entry would show."""

from __future__ import annotations

import json
import random

import aiohttp
import pytest
from factories import cluster_queue, job, list_response, namespace, workload
from orjson import dumps

from taudash.sim.apiserver import _encode_continue
from taudash.sim.objects import labelled
from taudash.sim.server import SimServer

NAMESPACES = ("ns-a", "ns-b", "ns-c")
TEAMS = ("red", "blue", "green")
SELECTORS = ((None, None), ("team=red", None), ("team!=blue", None), ("team in (red,green)", None),
             (None, "metadata.name!=w-3"), (None, "metadata.namespace=ns-b"), ("team=blue", "metadata.name!=w-5"))


def seed_objects(rng: random.Random) -> list[dict]:
    objs: list[dict] = [namespace(ns) for ns in NAMESPACES]
    for i in range(18):
        w = workload(f"w-{i}", rng.choice(NAMESPACES), state=rng.choice(("pending", "admitted")), admitted_to="cq-0")
        w["metadata"].setdefault("labels", {})["team"] = rng.choice(TEAMS)
        objs.append(w)
    for i in range(5):
        objs.append(cluster_queue(f"cq-{i}", labels={"team": rng.choice(TEAMS)}))
    for i in range(6):
        j = job(f"j-{i}", rng.choice(NAMESPACES))
        j["metadata"].setdefault("labels", {})["team"] = rng.choice(TEAMS)
        objs.append(j)
    return objs


async def get_raw(sim: SimServer, path: str, params: dict[str, str]) -> tuple[int, bytes]:
    async with aiohttp.ClientSession() as s, s.get(sim.url + path, params=params,
                                                   headers={"Authorization": f"Bearer {sim.token}"}) as r:
        return r.status, await r.read()


def write_something(sim: SimServer, rng: random.Random, serial: list[int]) -> None:
    """A random write through the store: relabel, annotate, create or delete (in a random served version)."""
    db = sim.db
    kind = rng.choice(("Workload", "ClusterQueue", "Job"))
    r = db.resource(kind)
    keys = db.keys(r)
    version = rng.choice(r.versions)
    action = rng.choice(("label", "annotate", "create", "delete")) if keys else "create"
    if action == "create":
        serial[0] += 1
        name = f"new-{serial[0]}"
        if kind == "Workload":
            obj = workload(name, rng.choice(NAMESPACES))
        elif kind == "ClusterQueue":
            obj = cluster_queue(name)
        else:
            obj = job(name, rng.choice(NAMESPACES))
        obj["metadata"].setdefault("labels", {})["team"] = rng.choice(TEAMS)
        obj["metadata"].pop("uid", None)
        db.create(obj, with_status=True)
        return
    ns, name = rng.choice(keys)
    if action == "delete":
        db.delete(r, name, ns or None, version=version)
    elif action == "label":
        db.patch_merge(r, name, {"metadata": {"labels": {"team": rng.choice(TEAMS)}}}, ns or None, version=version)
    else:
        db.patch_merge(r, name, {"metadata": {"annotations": {"touched": str(rng.random())}}}, ns or None,
                       version=version)


def expected_page(sim: SimServer, plural_kind: str, version: str, ns: str | None, labels: str | None,
                  fields: str | None, limit: int, list_rv: int, after: tuple[str, str] | None) -> bytes:
    """What the simulator served before the cache: the page's objects, in the version, encoded whole."""
    db = sim.db
    r = db.resource(plural_kind)
    objs = db.list(r, ns, label_selector=labels, field_selector=fields, version=version)
    key = lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"])  # noqa: E731
    if after is not None:
        objs = [o for o in objs if key(o) > after]
    meta: dict = {"resourceVersion": str(list_rv)}
    if limit and len(objs) > limit:
        rest = len(objs) - limit
        objs = objs[:limit]
        meta["continue"] = _encode_continue(list_rv, key(objs[-1]))
        if labels is None and fields is None:
            meta["remainingItemCount"] = rest
    return dumps(list_response(r.api_version(version), r.kind, meta, [labelled(r, o, version) for o in objs]))


@pytest.mark.parametrize(("kueue", "seed", "warm"), [("0.15", 1, True), ("0.19", 2, True), ("0.14", 3, False),
                                                     ("0.15", 4, False)])
async def test_cached_list_pages_equal_the_whole_page_encoding(kueue, seed, warm):
    rng = random.Random(seed)
    serial = [0]
    async with SimServer(snapshot=None, objects=seed_objects(rng), tls=False, kueue_version=kueue,
                         kueue_crds=None, warm_lists=warm) as sim:
        db = sim.db
        pages = writes = 0
        for _ in range(45):
            kind = rng.choice(("Workload", "ClusterQueue", "Job", "Namespace"))
            r = db.resource(kind)
            version = rng.choice(r.versions)
            ns = rng.choice((None, *NAMESPACES)) if r.namespaced else None
            labels, fields = rng.choice(SELECTORS)
            if kind in ("ClusterQueue", "Namespace") and fields == "metadata.namespace=ns-b":
                fields = None
            limit = rng.choice((0, 1, 2, 3, 5))
            base = f"/api/{version}" if not r.group else f"/apis/{r.group}/{version}"
            path = f"{base}/namespaces/{ns}/{r.plural}" if ns else f"{base}/{r.plural}"
            params = {k: v for k, v in (("labelSelector", labels), ("fieldSelector", fields),
                                        ("limit", str(limit) if limit else None)) if v}
            list_rv, after = db.resource_version, None
            while True:
                status, body = await get_raw(sim, path, params)
                assert status == 200, body
                want = expected_page(sim, kind, version, ns, labels, fields, limit, list_rv, after)
                assert json.loads(body) == json.loads(want)
                assert body == want
                pages += 1
                doc = json.loads(body)
                token = doc["metadata"].get("continue")
                if not token:
                    break
                last = doc["items"][-1]["metadata"]
                after = (last.get("namespace") or "", last["name"])
                params["continue"] = token
                if rng.random() < 0.6:  # a write between pages: the next page must show it
                    write_something(sim, rng, serial)
                    writes += 1
            for _ in range(rng.choice((0, 1, 2))):
                write_something(sim, rng, serial)
                writes += 1
        assert pages > 45 and writes > 20  # the walk paged and wrote, not just listed
        # The cache was used (entries for listed objects) and holds nothing for deleted keys.
        wl = db.resource("Workload")
        cached = db._encoded[wl.key]
        assert cached and set(cached) <= set(db.keys(wl))


async def test_a_write_replaces_the_cached_encoding_in_every_version():
    async with SimServer(snapshot=None, objects=[namespace("ns-a"), workload("w-1", "ns-a")], tls=False,
                         kueue_version="0.15", kueue_crds=None) as sim:
        db = sim.db
        r = db.resource("Workload")
        before = {v: db.encoded(r, ("ns-a", "w-1"), v) for v in r.versions}
        assert {json.loads(b)["apiVersion"] for b in before.values()} == {f"{r.group}/{v}" for v in r.versions}
        assert db.encoded(r, ("ns-a", "w-1"), r.versions[0]) is before[r.versions[0]]  # cached, not re-encoded
        db.patch_merge(r, "w-1", {"metadata": {"labels": {"team": "red"}}}, "ns-a")
        for v in r.versions:
            after = json.loads(db.encoded(r, ("ns-a", "w-1"), v))
            assert after["metadata"]["labels"]["team"] == "red"
            assert after["metadata"]["resourceVersion"] == str(db.resource_version)
        db.delete(r, "w-1", "ns-a")
        assert ("ns-a", "w-1") not in db._encoded[r.key]
        with pytest.raises(KeyError):
            db.encoded(r, ("ns-a", "w-1"), r.versions[0])


async def test_start_warms_the_seeded_objects_in_the_preferred_version_only_when_asked():
    objs = [namespace("ns-a"), workload("w-1", "ns-a"), cluster_queue("cq-1")]
    async with SimServer(snapshot=None, objects=objs, tls=False, kueue_version="0.15", kueue_crds=None) as sim:
        db = sim.db
        r = db.resource("Workload")
        entry = db._encoded[r.key][("ns-a", "w-1")]
        assert set(entry[2]) == {r.versions[0]}
        assert json.loads(entry[2][r.versions[0]])["apiVersion"] == r.api_version(r.versions[0])
        assert ("", "cq-1") in db._encoded[db.resource("ClusterQueue").key]
    async with SimServer(snapshot=None, objects=objs, tls=False, kueue_version="0.15", kueue_crds=None,
                         warm_lists=False) as sim:
        assert not any(sim.db._encoded.values())
