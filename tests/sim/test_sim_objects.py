"""ObjectDB: the simulated cluster's state and its apiserver bookkeeping (no HTTP)."""

from __future__ import annotations

import asyncio

import pytest
from factories import cluster_queue_request
from tools.paths import FIXTURES

from taudash.sim.errors import AlreadyExists, BadRequest, Conflict, Gone, Invalid, NotFound
from taudash.sim.objects import ObjectDB
from taudash.sim.patch import PatchError, json_patch, merge_patch
from taudash.sim.selectors import parse_field_selector, parse_label_selector

FIXTURE = FIXTURES / "sim-cluster.yaml"


def cq(name: str, **spec) -> dict:
    return cluster_queue_request(name, **{"stopPolicy": "None", **spec})


def test_create_stamps_identity_and_a_global_resource_version():
    db = ObjectDB(clock=lambda: 0.0)
    a = db.create(cq("a"))
    b = db.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    assert a["metadata"]["resourceVersion"] == "1" and b["metadata"]["resourceVersion"] == "2"
    assert a["metadata"]["generation"] == 1
    assert a["metadata"]["creationTimestamp"] == "1970-01-01T00:00:00Z"
    assert a["metadata"]["uid"] != b["metadata"]["uid"]
    assert db.resource_version == 2
    with pytest.raises(AlreadyExists):
        db.create(cq("a"))


def test_uids_are_deterministic_per_seed():
    one, two = ObjectDB(seed=7), ObjectDB(seed=7)
    assert one.create(cq("a"))["metadata"]["uid"] == two.create(cq("a"))["metadata"]["uid"]


def test_generation_moves_on_spec_only_never_on_status():
    db = ObjectDB()
    db.create(cq("a"))
    db.patch_merge("ClusterQueue", "a", {"metadata": {"labels": {"x": "y"}}})
    assert db.get("cq", "a")["metadata"]["generation"] == 1
    db.patch_merge("ClusterQueue", "a", {"spec": {"stopPolicy": "Hold"}})
    assert db.get("cq", "a")["metadata"]["generation"] == 2
    out = db.patch_merge("cq", "a", {"status": {"pendingWorkloads": 3}, "spec": {"stopPolicy": "None"}},
                         subresource="status")
    assert out["metadata"]["generation"] == 2
    assert out["status"] == {"pendingWorkloads": 3}
    assert out["spec"]["stopPolicy"] == "Hold"  # /status ignores everything but status
    # ...and the main resource ignores status
    cur = db.get("cq", "a")
    cur["status"] = {"pendingWorkloads": 99}
    assert db.update(cur)["status"] == {"pendingWorkloads": 3}


def test_noop_update_changes_nothing():
    db = ObjectDB()
    db.create(cq("a"))
    rv = db.resource_version
    db.update(db.get("cq", "a"))
    assert db.resource_version == rv


def test_stale_resource_version_conflicts():
    db = ObjectDB()
    old = db.create(cq("a"))
    db.patch_merge("cq", "a", {"spec": {"stopPolicy": "Hold"}})
    with pytest.raises(Conflict) as exc:
        db.update(old)
    assert exc.value.status()["reason"] == "Conflict" and exc.value.code == 409
    with pytest.raises(Conflict):
        db.patch_merge("cq", "a", {"metadata": {"resourceVersion": "1"}, "spec": {"stopPolicy": "None"}})


def test_finalizers_hold_deletion_until_removed():
    db = ObjectDB()
    db.create({**cq("a"), "metadata": {"name": "a", "finalizers": ["kueue.x-k8s.io/resource-in-use"]}})
    sub = db.subscribe(["ClusterQueue"])
    out = db.delete("cq", "a")
    assert out["metadata"]["deletionTimestamp"] and out["metadata"]["generation"] == 2
    assert db.get("cq", "a") is not None
    assert db.delete("cq", "a") == db.get("cq", "a")  # already terminating: no change
    with pytest.raises(Invalid):
        db.patch_merge("cq", "a", {"metadata": {"finalizers": ["kueue.x-k8s.io/resource-in-use", "new"]}})
    db.patch_json("cq", "a", [{"op": "remove", "path": "/metadata/finalizers"}])
    assert db.get("cq", "a") is None
    types = [sub.get_nowait().type for _ in range(2)]
    assert types == ["MODIFIED", "DELETED"]


def test_delete_preconditions():
    db = ObjectDB()
    a = db.create(cq("a"))
    with pytest.raises(Conflict):
        db.delete("cq", "a", preconditions={"uid": "other"})
    with pytest.raises(Conflict):
        db.delete("cq", "a", preconditions={"resourceVersion": "999"})
    db.delete("cq", "a",
              preconditions={"uid": a["metadata"]["uid"], "resourceVersion": a["metadata"]["resourceVersion"]})
    with pytest.raises(NotFound):
        db.delete("cq", "a")


def test_dry_run_stores_nothing():
    db = ObjectDB()
    db.create(cq("a"))
    rv = db.resource_version
    sub = db.subscribe()
    assert db.create(cq("b"), dry_run=True)["metadata"]["name"] == "b"
    assert db.patch_merge("cq", "a", {"spec": {"stopPolicy": "Hold"}}, dry_run=True)["spec"]["stopPolicy"] == "Hold"
    assert db.delete("cq", "a", dry_run=True)["metadata"]["name"] == "a"
    assert db.get("cq", "b") is None and db.get("cq", "a")["spec"]["stopPolicy"] == "None"
    assert db.resource_version == rv and sub.pending() == 0
    with pytest.raises(Invalid):  # dry runs still validate
        db.create(cq("c", stopPolicy="Bogus"), dry_run=True)


def test_validation_rejects_bad_names_enums_and_wrong_versions():
    db = ObjectDB()
    with pytest.raises(Invalid) as exc:
        db.create(cq("Not_A_Name"))
    assert exc.value.status()["details"]["causes"][0]["field"] == "metadata.name"
    with pytest.raises(Invalid) as exc:
        db.create(cq("a", stopPolicy="Drain"))
    assert "supported values" in exc.value.message
    with pytest.raises(BadRequest):
        db.create({**cq("a"), "apiVersion": "kueue.x-k8s.io/v1alpha1"})
    with pytest.raises(Invalid):
        db.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}})  # no namespace


def test_never_holds_secrets():
    db = ObjectDB()
    with pytest.raises(BadRequest):
        db.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "x"}})
    assert db.seed([{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "x"}}]) == 0
    with pytest.raises(NotFound):
        db.list("secrets")


def test_v1beta1_objects_are_stored_in_the_storage_version_and_tau_plain_kinds_accepted():
    db = ObjectDB()
    out = db.create({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "old"},
                     "spec": {"cohort": "c"}})
    # answered in the version it was written in, stored converted to the storage version (0.19: v1beta2)
    assert out["apiVersion"] == "kueue.x-k8s.io/v1beta1" and out["spec"] == {"cohort": "c"}
    assert db.stored("cq", "old")["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert db.stored("cq", "old")["spec"] == {"cohortName": "c"} == db.get("cq", "old")["spec"]
    assert db.get("cq", "old", version="v1beta1")["spec"] == {"cohort": "c"}
    ws = db.create({"apiVersion": "tau.azure.com/v1alpha1", "kind": "Workspace",
                    "metadata": {"name": "w", "namespace": "tau-system"}})
    assert ws["kind"] == "TauWorkspace"


def test_generate_name():
    db = ObjectDB(seed=1)
    out = db.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "train-", "namespace": "t"}})
    assert out["metadata"]["name"].startswith("train-") and len(out["metadata"]["name"]) == len("train-") + 5


def test_history_window_expires_old_resource_versions():
    db = ObjectDB(history=3)
    for n in "abcde":
        db.create(cq(n))
    assert [e.rv for e in db.events_since(2)] == [3, 4, 5]
    with pytest.raises(Gone) as exc:
        db.events_since(1)
    assert exc.value.code == 410
    db.compact()
    with pytest.raises(Gone):
        db.events_since(4)
    assert db.events_since(5) == []


async def test_subscriptions_feed_in_process_controllers():
    db = ObjectDB()
    sub = db.subscribe(["ClusterQueue"])
    seen: list[tuple[str, str]] = []

    async def controller():
        async for ev in sub:
            seen.append((ev.type, ev.name))

    task = asyncio.create_task(controller())
    db.create(cq("a"))
    db.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}})  # not followed
    db.patch_merge("cq", "a", {"spec": {"stopPolicy": "Hold"}})
    db.delete("cq", "a")
    await asyncio.sleep(0)
    sub.close()
    await asyncio.wait_for(task, 1)
    assert seen == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


async def test_slow_subscriber_is_closed_not_unbounded():
    db = ObjectDB(subscriber_buffer=2)
    sub = db.subscribe()
    for n in "abc":
        db.create(cq(n))
    assert sub.overflowed and sub.closed


def test_admission_hooks_can_default_and_reject():
    db = ObjectDB()

    def hook(op, resource, new, old):
        if op == "CREATE" and resource.kind == "ClusterQueue":
            new["spec"].setdefault("queueingStrategy", "BestEffortFIFO")
        if op == "DELETE" and old["metadata"]["name"] == "keep":
            raise Invalid.of(resource, "keep", [("", "FieldValueForbidden", "protected")])

    remove = db.add_admission(hook)
    assert db.create(cq("keep"))["spec"]["queueingStrategy"] == "BestEffortFIFO"
    with pytest.raises(Invalid):
        db.delete("cq", "keep")
    remove()
    db.delete("cq", "keep")


def test_seed_from_snapshot_keeps_state_and_starts_history_after_it():
    db = ObjectDB()
    result = db.seed_from_snapshot(FIXTURE)
    assert result.issues == []
    assert db.counts()["Node"] == 3 and db.counts()["TauWorkspace"] == 2
    ws = db.get("tw", "evaluation", "tau-system")
    assert ws["kind"] == "TauWorkspace" and ws["status"]["phase"] == "Ready"
    assert db.get("cq", "legacy-batch")["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert db.oldest_resource_version == db.resource_version
    assert (db.list("workloads", "training", label_selector="kueue.x-k8s.io/job-uid")[0]["metadata"]["name"]
            == "job-train-a-3f2c1")


def test_label_selectors():
    obj = {"metadata": {"labels": {"team": "vision", "tier": "gpu"}}}
    bare = {"metadata": {}}
    cases = {
        "team=vision": (True, False), "team==vision": (True, False), "team!=vision": (False, True),
        "team in (vision, nlp)": (True, False), "team notin (nlp)": (True, True), "tier": (True, False),
        "!tier": (False, True), "team=vision,tier in (gpu)": (True, False), "team=vision,!tier": (False, False),
        "example.com/x": (False, False),
    }
    for sel, (want_obj, want_bare) in cases.items():
        m = parse_label_selector(sel)
        assert (m(obj), m(bare)) == (want_obj, want_bare), sel
    with pytest.raises(BadRequest):
        parse_label_selector("team in ()")
    with pytest.raises(BadRequest):
        parse_label_selector("a b c")


def test_field_selectors():
    obj = {"metadata": {"name": "a", "namespace": "n"}}
    assert parse_field_selector("metadata.name=a")(obj)
    assert parse_field_selector("metadata.namespace==n,metadata.name!=b")(obj)
    assert not parse_field_selector("metadata.name!=a")(obj)
    with pytest.raises(BadRequest):
        parse_field_selector("spec.nodeName=x")


def test_patches():
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    doc = {"a": [1, 2], "m": {"k/x": 1}}
    ops = [{"op": "add", "path": "/a/-", "value": 3}, {"op": "replace", "path": "/m/k~1x", "value": 2},
           {"op": "copy", "from": "/a/0", "path": "/b"}, {"op": "move", "from": "/b", "path": "/c"},
           {"op": "test", "path": "/c", "value": 1}, {"op": "remove", "path": "/a/0"}]
    assert json_patch(doc, ops) == {"a": [2, 3], "m": {"k/x": 2}, "c": 1}
    assert doc == {"a": [1, 2], "m": {"k/x": 1}}  # inputs untouched
    with pytest.raises(PatchError):
        json_patch(doc, [{"op": "test", "path": "/a/0", "value": 9}])
    with pytest.raises(PatchError):
        json_patch(doc, [{"op": "remove", "path": "/nope"}])
