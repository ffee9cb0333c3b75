"""The simulated TauGrid controller on the demo: workspace bootstrap and deletion, identity during a
drain, pool zeroing and Observe mode. Checked through engine.incremental.derive on the ObjectDB's contents."""

from __future__ import annotations

from factories import GPU, sim_world
from tools.worlds import conditions, db_view, root_gpus

from taudash.engine.model.quantity import Quantity

NEW_WS = {
    "apiVersion": "tau.azure.com/v1alpha1",
    "kind": "TauWorkspace",
    "metadata": {"name": "audio", "namespace": "tau-system"},
    "spec": {
        "authorization": {"mode": "workspace-rbac"},
        "principalRef": {"provider": "entra", "name": "audio-team"},
        "kubernetesSubject": {"kind": "Group", "name": "audio-researchers"},
        "role": "tau-researcher-v1",
        "target": {"createNamespace": True},
        "queue": "jobqueue",
        "teamRef": {"name": "research"},
        "workloadIdentity": {"serviceAccountName": "tau-workload", "clientId": "11111111-2222-3333-4444-555555555555"},
        "defaults": {"outputRoot": "/data/projects/audio/runs"},
    },
}


def test_a_new_team_workspace_gets_its_namespace_queues_access_and_identity():
    w = sim_world()
    w.db.create(NEW_WS)
    w.run_for(20, dt=5)
    ns = w.db.get("Namespace", "audio")["metadata"]
    assert (
        ns["labels"]["tau.azure.com/workspace"] == "audio"
        and ns["labels"]["kueue.x-k8s.io/default-local-queue"] == "jobqueue"
    )
    assert ns["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    assert ns["annotations"]["tau.azure.com/result-scope"] == "/data/projects/audio/runs"
    cq = w.db.get("ClusterQueue", "tau-ws-audio")
    assert cq["spec"]["cohortName"] == "tau-team-research"
    assert cq["spec"]["namespaceSelector"] == {"matchLabels": {"tau.azure.com/workspace": "audio"}}
    flavors = cq["spec"]["resourceGroups"][0]["flavors"]
    assert [f["name"] for f in flavors] == ["taugrid-gpu-a100-80gb", "taugrid-gpu-gb200-186gb", "taugrid-gpu-h100-80gb",
                                           "taugrid-gpu-h200-141gb"]
    assert {r["nominalQuota"] for f in flavors for r in f["resources"]} == {"0"}
    assert conditions(cq)["Active"]["status"] == "True"
    assert w.db.get("LocalQueue", "jobqueue", "audio")["spec"]["clusterQueue"] == "tau-ws-audio"
    assert w.db.get("RoleBinding", "tau-researcher-v1", "audio")["subjects"][0]["name"] == "audio-researchers"
    sa = w.db.get("ServiceAccount", "tau-workload", "audio")["metadata"]
    assert sa["annotations"]["azure.workload.identity/client-id"] == "11111111-2222-3333-4444-555555555555"
    tw = w.db.get("TauWorkspace", "audio", "tau-system")
    assert "tau.azure.com/workspace-cleanup" in tw["metadata"]["finalizers"]
    st = tw["status"]
    assert st["phase"] == "Ready" and st["observedGeneration"] == tw["metadata"]["generation"]
    assert st["target"]["resolvedNamespace"] == "audio"
    assert st["queue"]["clusterQueueUID"] == cq["metadata"]["uid"]
    view = db_view(w)
    ws = next(x for x in view.workspaces if x.name == "audio")
    assert ws.counted_ready and ws.identity.access_state == "Ok" and ws.identity.state == "Current"
    assert not [f for f in view.findings if f.object.name in ("audio", "tau-ws-audio")]
    assert "tau-ws-audio" in [q.cluster_queue for q in view.pool.queues]


def test_a_spec_change_is_observed_at_the_new_generation():
    w = sim_world()
    w.step(5)
    w.db.patch_merge("TauWorkspace", "train", {"spec": {"defaults": {"outputRoot": "/data/train-v2"}}}, "tau-system")
    tw = w.db.get("TauWorkspace", "train", "tau-system")
    assert tw["status"]["observedGeneration"] != tw["metadata"]["generation"]
    w.step(5)
    tw = w.db.get("TauWorkspace", "train", "tau-system")
    assert tw["status"]["observedGeneration"] == tw["metadata"]["generation"]
    assert all(c["observedGeneration"] == tw["metadata"]["generation"] for c in tw["status"]["conditions"])
    ann = w.db.get("Namespace", "train")["metadata"]["annotations"]
    assert ann["tau.azure.com/result-scope"] == "/data/train-v2"


def test_deleting_a_workspace_revokes_access_first_and_finishes_after_its_drain():
    w = sim_world()
    w.step(5)
    w.db.delete("TauWorkspace", "vision", "tau-system")
    w.step(5)
    assert w.db.get("RoleBinding", "tau-researcher-v1", "vision") is None  # before any wait
    ws = next(x for x in db_view(w).workspaces if x.name == "vision")
    assert ws.drain.mode == "Deletion" and ws.drain.state == "Blocked"
    assert w.db.get("TauWorkspace", "vision", "tau-system") is not None
    for kind in ("Job", "RayJob"):
        for src in w.db.list(kind, "vision"):
            w.db.delete(kind, src["metadata"]["name"], "vision")
    w.run_for(30, dt=5)
    assert w.db.get("TauWorkspace", "vision", "tau-system") is None  # finalizer released
    assert w.db.get("ClusterQueue", "tau-ws-vision") is None  # Kueue let it go once nothing was reserved
    assert w.db.get("LocalQueue", "jobqueue", "vision") is None
    assert w.db.get("ServiceAccount", "tau-workload", "vision") is None
    assert w.db.get("RoleBinding", "tau-workspace-reader-vision", "tau-system") is None
    labels = w.db.get("Namespace", "vision")["metadata"]["labels"]
    assert "tau.azure.com/workspace" not in labels and labels["kubernetes.io/metadata.name"] == "vision"


def test_a_renamed_identity_is_revoked_during_the_drain_and_access_recovers():
    w = sim_world()
    w.step(5)
    w.db.patch_merge(
        "TauWorkspace", "eval", {"spec": {"workloadIdentity": {"serviceAccountName": "tau-runner"}}}, "tau-system"
    )
    w.step(5)
    ws = next(x for x in db_view(w).workspaces if x.name == "eval")
    assert ws.drain.state == "Blocked"  # still draining...
    assert w.db.get("ServiceAccount", "tau-workload", "eval") is None  # ...yet the obsolete account is gone
    assert w.db.get("ServiceAccount", "tau-runner", "eval-v2") is not None
    w.run_for(15, dt=5)
    ws = next(x for x in db_view(w).workspaces if x.name == "eval")
    assert ws.identity.revocation_confirmed is True
    assert ws.identity.access_state == "Ok" and sorted(ws.identity.expected_bindings) == ["eval", "eval-v2"]
    assert not [f for f in db_view(w).findings if f.rule.startswith(("ACCESS-", "IDENTITY-"))]


def test_an_invalid_established_pool_is_zeroed_then_restored():
    w = sim_world()
    w.step(5)
    w.db.patch_merge(
        "ClusterQueue", "platform-cq", {"metadata": {"labels": {"tau.azure.com/discover-gpu-flavors": "true"}}}
    )
    w.step(5)
    for fl in ("taugrid-gpu-a100-80gb", "taugrid-gpu-h100-80gb", "taugrid-gpu-h200-141gb"):
        assert root_gpus(w, fl) == Quantity(0)
    view = db_view(w)
    assert view.pool.zeroed and "POOL-ZEROED" in {f.rule for f in view.findings}
    assert "POOL-BUDGET-DRIFT" not in {f.rule for f in view.findings}
    w.db.patch_merge(
        "ClusterQueue", "platform-cq", {"metadata": {"labels": {"tau.azure.com/discover-gpu-flavors": None}}}
    )
    w.step(5)
    assert root_gpus(w, "taugrid-gpu-a100-80gb") == Quantity(24)
    assert not db_view(w).pool.zeroed


def test_observe_mode_never_writes_the_budget():
    w = sim_world(events=[{"at": 10, "notReady": "aks-a100-51938270-vmss000000"}])
    w.db.patch_merge("TauCluster", "cluster", {"spec": {"managementMode": "Observe"}})
    w.run_for(30, dt=5)
    assert root_gpus(w, "taugrid-gpu-a100-80gb") == Quantity(24)
    flavor = next(f for f in db_view(w).pool.flavors if f.name == "taugrid-gpu-a100-80gb")
    assert flavor.budget[GPU] == Quantity(16) and flavor.observed_budget[GPU] == Quantity(24)


def test_the_demo_settles_without_drift_findings():
    w = sim_world()
    w.run_for(60, dt=5)
    rules = {f.rule for f in db_view(w).findings}
    assert not rules & {
        "POOL-BUDGET-DRIFT",
        "POOL-QUEUE-DRIFT",
        "WS-STALE",
        "WS-PHASE-MISMATCH",
        "PROFILES-STALE",
        "PROFILES-HASH-MISMATCH",
        "PROFILES-NOT-READY",
    }
