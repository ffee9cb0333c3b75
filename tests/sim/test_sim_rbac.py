"""The simulator enforces RBAC (SimServer(rbac=True), `sim serve --rbac`), and taudash deployed with
`taudash deploy manifests` reads everything it needs through its ServiceAccount and writes nothing.

The rules are stored objects (ClusterRoles, Roles and their bindings) applied with the real kubectl;
tokens come from the TokenRequest subresource (`kubectl create token`); taudash connects in-cluster
(KUBERNETES_SERVICE_HOST/PORT and a ServiceAccount folder pointed at tmp)."""

from __future__ import annotations

import pytest
import pytest_asyncio
from factories import granted_service_account, local_queue, service_account
from test_sim_kubectl import FIXTURE, kubectl
from tools.simhttp import request

from taudash.deploy import manifests as mf
from taudash.engine.model import KINDS
from taudash.engine.sources import client
from taudash.engine.store import AccessState
from taudash.live import synced_cluster
from taudash.sim.server import SimServer

SA_USER = "system:serviceaccount:taudash:taudash"


@pytest_asyncio.fixture
async def sim(tmp_path):
    async with SimServer(FIXTURE, kubeconfig=tmp_path / "kube" / "config", rbac=True) as s:
        yield s


async def seeded_token(sim: SimServer, ns: str, name: str, rules: list[dict], *, cluster: bool = True) -> str:
    for obj in granted_service_account(ns, name, rules, cluster=cluster):
        sim.db.create(obj)
    return sim.service_account_token(ns, name)


# --- the authorizer ---------------------------------------------------------------------------------------


async def test_a_token_without_a_binding_gets_403_in_the_api_servers_shape(sim):
    token = sim.service_account_token("default", "nobody")
    status, body = await request(sim, "GET", "/api/v1/nodes", None, token=token)
    assert status == 403
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Forbidden",
                    "code": 403, "details": {"kind": "nodes"},
                    "message": 'nodes is forbidden: User "system:serviceaccount:default:nobody" cannot list resource '
                               '"nodes" in API group "" at the cluster scope'}
    # discovery and "who am I" stay open to every authenticated user
    assert (await request(sim, "GET", "/apis", None, token=token))[0] == 200
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    _, who = await request(sim, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review, token=token)
    assert who["status"]["userInfo"]["username"] == "system:serviceaccount:default:nobody"
    assert (await request(sim, "GET", "/api/v1/nodes", None, token="not-a-token"))[0] == 401


async def test_the_administrators_token_stays_all_powerful(sim):
    assert (await request(sim, "GET", "/api/v1/nodes", None))[0] == 200
    lq = local_queue("x", "training", "tau-ws-training")
    assert (await request(sim, "POST", "/apis/kueue.x-k8s.io/v1beta2/namespaces/training/localqueues", lq))[0] == 201


async def test_verbs_groups_namespaces_names_and_subresources_are_each_checked(sim):
    token = await seeded_token(sim, "training", "reader", [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["only-this"]},
    ], cluster=False)
    ok = "/apis/kueue.x-k8s.io/v1beta2/namespaces/training/localqueues"
    assert (await request(sim, "GET", ok, None, token=token))[0] == 200
    assert (await request(sim, "GET", f"{ok}/jobqueue", None, token=token))[0] == 200
    status, body = await request(sim, "GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/evaluation/localqueues", None,
                                 token=token)  # another namespace
    assert status == 403 and 'in the namespace "evaluation"' in body["message"]
    assert (await request(sim, "GET", "/apis/kueue.x-k8s.io/v1beta2/localqueues", None, token=token))[0] == 403
    status, body = await request(sim, "GET", f"{ok}?watch=true", None, token=token)  # a verb not granted
    assert status == 403 and "cannot watch" in body["message"]
    status, body = await request(sim, "PATCH", f"{ok}/jobqueue/status", {"status": {}}, token=token)
    assert status == 403 and 'cannot patch resource "localqueues/status"' in body["message"]
    assert (await request(sim, "GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", None, token=token))[0] == 403
    assert (await request(sim, "GET", "/api/v1/namespaces/training/pods/only-this", None, token=token))[0] == 404
    status, body = await request(sim, "GET", "/api/v1/namespaces/training/pods/other", None, token=token)
    assert status == 403 and 'pods "other" is forbidden' in body["message"]


async def test_access_and_rules_reviews_answer_from_the_same_rules(sim):
    token = await seeded_token(sim, "taudash", "viewer", [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}])

    async def can(verb: str, resource: str, group: str = "") -> bool:
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "group": group}}}
        status, body = await request(sim, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review,
                                     token=token)
        assert status == 201
        return bool(body["status"]["allowed"])

    assert await can("list", "nodes") and not await can("delete", "nodes")
    assert not await can("list", "clusterqueues", "kueue.x-k8s.io")
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "taudash"}}
    status, body = await request(sim, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", review,
                                 token=token)
    assert status == 201 and body["status"]["incomplete"] is False
    assert {"verbs": ["list"], "apiGroups": [""], "resources": ["nodes"]} in body["status"]["resourceRules"]
    assert not any("clusterqueues" in r["resources"] for r in body["status"]["resourceRules"])


async def test_token_request_issues_a_token_of_an_existing_service_account_only(sim):
    sim.db.create(service_account("bot", "training"))
    path = "/api/v1/namespaces/training/serviceaccounts/bot/token"
    status, body = await request(sim, "POST", path, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                                     "spec": {"expirationSeconds": 600}})
    assert status == 201 and body["kind"] == "TokenRequest" and body["status"]["expirationTimestamp"].endswith("Z")
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    _, who = await request(sim, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review,
                           token=body["status"]["token"])
    assert who["status"]["userInfo"]["username"] == "system:serviceaccount:training:bot"
    assert "system:serviceaccounts:training" in who["status"]["userInfo"]["groups"]
    missing = await request(sim, "POST", "/api/v1/namespaces/training/serviceaccounts/ghost/token", {})
    assert missing[0] == 404
    # the token cannot mint more tokens: that too is a grant it lacks
    assert (await request(sim, "POST", path, {}, token=body["status"]["token"]))[0] == 403


async def test_without_rbac_every_authenticated_token_may_do_all(tmp_path):
    async with SimServer(FIXTURE, kubeconfig=tmp_path / "kc") as s:
        token = s.service_account_token("default", "nobody")
        assert (await request(s, "GET", "/api/v1/nodes", None, token=token))[0] == 200


# --- taudash deployed with its own manifests -----------------------------------------------------------------


async def deploy(sim: SimServer, tmp_path, monkeypatch) -> str:
    """`taudash deploy manifests | kubectl apply -f -`, `kubectl create token`, and the Pod's environment:
    taudash then connects in-cluster with that token. Returns the token."""
    manifests = tmp_path / "taudash.yaml"
    manifests.write_text(mf.render())
    _, out, _ = await kubectl(sim, "apply", "--validate=false", "-f", str(manifests))
    assert "clusterrole.rbac.authorization.k8s.io/taudash-read created" in out
    _, token, _ = await kubectl(sim, "create", "token", "taudash", "-n", "taudash")
    folder = tmp_path / "serviceaccount"
    folder.mkdir()
    (folder / "token").write_text(token.strip())
    (folder / "ca.crt").write_bytes(sim.cert.pem())
    (folder / "namespace").write_text("taudash")
    host, port = sim.url.removeprefix("https://").rsplit(":", 1)
    for name, value in {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port,
                        "TAUDASH_SERVICEACCOUNT_DIR": str(folder), "HOME": str(tmp_path / "home")}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return token.strip()


def not_synced(live) -> dict[str, str]:
    return {k: a.state.value for k, a in live.store.access_states().items() if a.state is not AccessState.SYNCED}


async def test_deployed_service_account_reads_every_kind_and_on_demand_read_but_writes_nothing(sim, tmp_path,
                                                                                              monkeypatch):
    token = await deploy(sim, tmp_path, monkeypatch)
    assert client.in_cluster_dir(None, None) == tmp_path / "serviceaccount"
    async with synced_cluster(None, None) as live:
        assert live.target.context == client.IN_CLUSTER and live.target.server == sim.url
        assert not_synced(live) == {}
        assert set(live.store.access_states()) == {k.kind for k in KINDS}
    # the reads made on demand: an object's Events, Kueue's pending workloads
    assert (await request(sim, "GET", "/api/v1/namespaces/training/events", None, token=token))[0] == 200
    vis = "/apis/visibility.kueue.x-k8s.io/v1beta2"
    assert (await request(sim, "GET", f"{vis}/clusterqueues/tau-ws-training/pendingworkloads", None,
                          token=token))[0] == 200
    assert (await request(sim, "GET", f"{vis}/namespaces/training/localqueues/jobqueue/pendingworkloads", None,
                          token=token))[0] == 200
    # a write with the token is refused
    lq = local_queue("x", "training", "tau-ws-training")
    status, body = await request(sim, "POST", "/apis/kueue.x-k8s.io/v1beta2/namespaces/training/localqueues", lq,
                                 token=token)
    assert status == 403 and f'User "{SA_USER}" cannot create resource "localqueues"' in body["message"]
    status, _ = await request(sim, "DELETE", "/api/v1/nodes/cpu-0", None, token=token)
    assert status == 403
    code, _, err = await kubectl(sim, "--token", token, "get", "secrets", "-A", ok=False)
    assert code != 0


@pytest.mark.parametrize("kind", ["Job", "ClusterQueue", "Namespace"])
async def test_removing_one_rule_turns_exactly_that_kind_forbidden(sim, tmp_path, monkeypatch, kind):
    await deploy(sim, tmp_path, monkeypatch)
    k = next(k for k in KINDS if k.kind == kind)
    role = sim.db.get("clusterroles", "taudash-read")
    for rule in role["rules"]:
        if rule["apiGroups"] == [k.group] and k.plural in rule["resources"]:
            rule["resources"].remove(k.plural)
    role["rules"] = [r for r in role["rules"] if r["resources"]]
    sim.db.update(role)
    async with synced_cluster(None, None) as live:
        assert not_synced(live) == {kind: "Forbidden"}


async def test_kubectl_auth_can_i_sends_protobuf_reviews_and_gets_the_rules_answer(sim, tmp_path, monkeypatch):
    token = await deploy(sim, tmp_path, monkeypatch)
    _, out, _ = await kubectl(sim, "--token", token, "auth", "can-i", "list", "workloads.kueue.x-k8s.io", "-A")
    assert out.strip() == "yes"
    code, out, _ = await kubectl(sim, "--token", token, "auth", "can-i", "create", "localqueues.kueue.x-k8s.io",
                                 "-n", "training", ok=False)
    assert code == 1 and out.startswith("no")
    _, listed, _ = await kubectl(sim, "--token", token, "auth", "can-i", "--list", "-n", "training")
    rows = {line.split()[0]: "[" + line.rsplit("[", 1)[1].strip()  # the last column: the verbs
            for line in listed.splitlines()[1:] if line.strip()}
    assert rows["jobs.batch"] == "[get list watch]" and rows["clusterqueues.kueue.x-k8s.io"] == "[get list watch]"
    assert [r for r, verbs in rows.items() if "create" in verbs] == [
        "selfsubjectreviews.authentication.k8s.io", "selfsubjectaccessreviews.authorization.k8s.io",
        "selfsubjectrulesreviews.authorization.k8s.io"]  # every user's; nothing of taudash's role writes
    _, admin, _ = await kubectl(sim, "auth", "can-i", "delete", "nodes")
    assert admin.strip() == "yes"
