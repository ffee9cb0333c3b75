"""The simulator serves coordination.k8s.io/v1 Leases like the built-in kind they are (discovery, CRUD, watch,
validation) and answers SelfSubjectReview with each bearer token's own user; taudash reads only its own Leases
and writes as the user the cluster names."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qs

import aiohttp
import yaml
from factories import NOW, claim_lease
from tools.simhttp import request

from taudash.engine.actions import Actions, AuditLog
from taudash.engine.sources.client import connect
from taudash.live import LiveCluster
from taudash.sim.server import SimServer

LEASES = "/apis/coordination.k8s.io/v1/namespaces/tau-system/leases"
TARGET = "ClusterQueue tau-ws-train"


async def test_leases_are_served_as_a_built_in_kind_discovery_crud_and_validation(sim_server):
    sim = sim_server
    status, groups = await request(sim, "GET", "/apis", None)
    assert status == 200 and "coordination.k8s.io" in [g["name"] for g in groups["groups"]]
    status, doc = await request(sim, "GET", "/apis/coordination.k8s.io/v1", None)
    (entry,) = [r for r in doc["resources"] if r["name"].startswith("leases")]  # no leases/status: none in Kubernetes
    assert ((entry["kind"], entry["namespaced"])
            == ("Lease", True) and {"create", "watch", "patch"} <= set(entry["verbs"]))
    lease = claim_lease(TARGET, "1a2b3c", renewed=NOW)
    status, created = await request(sim, "POST", LEASES, lease, "application/json")
    assert status == 201 and created["spec"]["holderIdentity"] == "1a2b3c" and created["metadata"]["uid"]
    name = created["metadata"]["name"]
    assert (await request(sim, "POST", LEASES, lease, "application/json"))[0] == 409  # AlreadyExists
    # a stale precondition is refused; the current one applies (a built-in kind takes strategic merge too)
    stale = {"metadata": {"resourceVersion": "1"}, "spec": {"holderIdentity": "other"}}
    assert (await request(sim, "PATCH", f"{LEASES}/{name}", stale))[0] == 409
    fresh = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "spec": {"leaseTransitions": 1}}
    status, patched = await request(sim, "PATCH", f"{LEASES}/{name}", fresh, "application/strategic-merge-patch+json")
    assert status == 200 and patched["spec"]["leaseTransitions"] == 1
    # the API server's Lease validation
    bad = claim_lease("ClusterQueue other", "x", duration=0)
    status, err = await request(sim, "POST", LEASES, bad, "application/json")
    assert status == 422 and "spec.leaseDurationSeconds" in json.dumps(err)
    status, err = await request(sim, "PATCH", f"{LEASES}/{name}", {"spec": {"renewTime": "yesterday"}})
    assert status == 422 and "spec.renewTime" in json.dumps(err)
    assert (await request(sim, "DELETE", f"{LEASES}/{name}", {}, "application/json"))[0] == 200
    assert sim.db.list("leases") == []


async def test_a_label_selected_watch_of_leases_sees_only_the_selected_ones(sim_server):
    sim = sim_server
    url = f"{sim.url}{LEASES}?watch=1&labelSelector=app.kubernetes.io/managed-by%3Dtaudash&timeoutSeconds=5"
    seen: list[tuple[str, str]] = []
    async with aiohttp.ClientSession() as s, s.get(url, headers={"Authorization": f"Bearer {sim.token}"},
                                                  ssl=sim.cert.client_context()) as resp:
        await sim.api.wait_for_watches(1, "leases")
        sim.db.create(claim_lease("ClusterQueue other", "x", labelled=False))  # another controller's
        sim.db.create(claim_lease(TARGET, "1a2b3c"))
        while len(seen) < 1:
            line = await asyncio.wait_for(resp.content.readline(), 10)
            event = json.loads(line)
            seen.append((event["type"], event["object"]["spec"]["holderIdentity"]))
    assert seen == [("ADDED", "1a2b3c")]


async def test_self_subject_review_answers_each_tokens_user():
    async with SimServer(users=("alice", "bob")) as sim:
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
        names = {}
        for who, token in (("admin", None), ("alice", sim.user_tokens["alice"]), ("bob", sim.user_tokens["bob"])):
            status, out = await request(sim, "POST", path, review, "application/json", token=token)
            assert status == 201, out
            names[who] = (out["status"]["userInfo"]["username"], out["status"]["userInfo"]["groups"])
        assert names["admin"] == ("sim-admin", ["system:masters", "system:authenticated"])
        assert names["alice"][0] == "alice" and names["bob"][0] == "bob"
        assert "system:authenticated" in names["bob"][1]
        assert (await request(sim, "POST", path, review, "application/json", token="not-a-token"))[0] == 401
        assert (await request(sim, "GET", path, None))[0] == 405
        assert not sim.api.writes  # a review stores nothing
        sim.api.set_group_enabled("authentication.k8s.io", False)  # a cluster older than 1.28
        assert (await request(sim, "POST", path, review, "application/json"))[0] == 404
        # each operator has a context of their own in the kubeconfig
        config = yaml.safe_load(sim.kubeconfig.read_text())
        contexts = {c["name"]: c["context"]["user"] for c in config["contexts"]}
        assert contexts == {"taudash-sim": "taudash-sim", "taudash-sim-alice": "taudash-sim-alice",
                            "taudash-sim-bob": "taudash-sim-bob"}
        tokens = {u["name"]: u["user"]["token"] for u in config["users"]}
        assert tokens["taudash-sim-alice"] == sim.user_tokens["alice"] != tokens["taudash-sim"]


async def test_writes_carry_the_reviewed_user_or_the_kubeconfig_user_marked_as_unverified(tmp_path):
    async with SimServer(users=("alice",)) as sim:
        target = await connect(sim.context_of("alice"), str(sim.kubeconfig))
        try:
            verified = Actions.live(target.api_client, target.user, target.context, AuditLog(tmp_path / "a.log"))
            op = await verified.operator()
            assert (op.user, op.verified, op.label) == ("alice", True, "alice") and op.os_user and op.host
            sim.api.set_group_enabled("authentication.k8s.io", False)
            fallback = Actions.live(target.api_client, target.user, target.context, AuditLog(tmp_path / "b.log"))
            await fallback.patch("ClusterQueue", "tau-ws-train", None,
                                 lambda cur: {"metadata": {"labels": {"touched": "yes"}}}, "a test write")
        finally:
            await target.close()
        records = AuditLog(tmp_path / "b.log").read()
        assert records and all(r["who"] == "taudash-sim-alice" for r in records)
        identity = records[-1]["identity"]
        assert identity["source"] == "kubeconfig user" and "404" in identity["note"]
        assert records[-1]["osUser"] == op.os_user and records[-1]["host"] == op.host
        assert (await fallback.operator()).label == "taudash-sim-alice (kubeconfig user, not verified)"


async def test_the_live_source_reads_only_taudashs_leases_and_asks_the_server_to_select_them():
    async with SimServer(objects=[claim_lease(TARGET, "1a2b3c"),
                                  claim_lease("ClusterQueue kube-node-ish", "node-1", labelled=False)]) as sim:
        async with LiveCluster(None, str(sim.kubeconfig), read_only=True) as live:
            assert [lease.spec.holder_identity for lease in live.store.list("Lease")] == ["1a2b3c"]
            await sim.api.wait_for_watches(1, "leases")
        asked = [r for r in sim.api.requests if r.resource == "leases.coordination.k8s.io"]
        assert {r.verb for r in asked} == {"list", "watch"}
        assert all(parse_qs(r.query)["labelSelector"] == ["app.kubernetes.io/managed-by=taudash"] for r in asked)
