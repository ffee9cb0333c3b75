"""Storage readiness: claim present and Bound, CSI driver registered on every eligible node (docs/rules.md#storage)."""

import pytest
from factories import (
    DRAIN_NOW,
    NEW,
    OLD,
    csinode,
    drain_ctx,
    drain_workspace,
    drain_world,
    node,
    pvc,
    rules,
    storage_class,
    the_workspace,
)

from taudash.engine.incremental import derive
from taudash.engine.rules.base import RuleConfig
from taudash.engine.rules.storage import derive_storage
from taudash.engine.store import AccessState

CLAIM = "blob-training"
DRIVER = "blob.csi.azure.com"


def gpu_node(name, *, gpu="h100-80gb", os="linux", os_label=True, **kw):
    """A node as the storage rule sees it: gpu class, os label (unless os_label=False) and nodeInfo."""
    return node(name, gpu, os=os if os_label else None, os_info=os, **kw)


def healthy(*extra, mode=None, ws=None):
    return drain_world(
        mode,
        pvc(CLAIM, OLD),
        storage_class(),
        gpu_node("gpu-1"),
        gpu_node("gpu-2"),
        csinode("gpu-1", DRIVER, "disk.csi.azure.com"),
        csinode("gpu-2", DRIVER),
        *extra,
        ws=ws,
    )


def storage(objs, access=None, claims=(CLAIM,)):
    ctx = drain_ctx(objs, access, claims)
    return derive_storage(ctx, the_workspace(ctx))


def test_no_claims_configured_checks_nothing():
    view, findings = storage(healthy(), claims=())
    assert (view.state, view.claims, findings) == ("NotConfigured", [], [])


def test_bound_and_registered_still_recommends_a_canary():
    view, findings = storage(healthy())
    (c,) = view.claims
    assert (c.namespace, c.name, c.state, c.phase, c.storage_class, c.driver) == (
        OLD,
        CLAIM,
        "Ready",
        "Bound",
        "azureblob-fuse",
        DRIVER,
    )
    assert (c.eligible_nodes, c.nodes_missing_driver) == (2, [])
    assert view.state == "Ready" and "mount/read/write canary" in view.canary
    (f,) = findings
    assert (f.rule, f.severity.value) == ("STORAGE-CANARY", "info") and "canary" in f.hint


def test_missing_claim():
    objs = [o for o in healthy() if o["kind"] != "PersistentVolumeClaim"]
    view, findings = storage(objs)
    assert view.claims[0].state == "Missing" and view.state == "NotReady"
    (f,) = findings
    assert (f.rule, f.severity.value, f.object.kind, f.object.namespace, f.object.name) == (
        "STORAGE-PVC-MISSING",
        "warning",
        "PersistentVolumeClaim",
        OLD,
        CLAIM,
    )
    assert "canary" in f.hint


def test_claim_in_another_namespace_does_not_count():
    objs = [o for o in healthy() if o["kind"] != "PersistentVolumeClaim"] + [pvc(CLAIM, "elsewhere")]
    view, findings = storage(objs)
    assert rules(findings) == ["STORAGE-PVC-MISSING"]


@pytest.mark.parametrize("phase", ["Pending", "Lost", ""])
def test_unbound_claim(phase):
    objs = [o for o in healthy() if o["kind"] != "PersistentVolumeClaim"] + [pvc(CLAIM, OLD, phase=phase)]
    view, findings = storage(objs)
    assert view.claims[0].state == "Unbound"
    assert rules(findings) == ["STORAGE-PVC-UNBOUND"]


def test_driver_missing_on_eligible_nodes_lists_them():
    # gpu-4 has no CSINode at all
    objs = healthy(gpu_node("gpu-3"), csinode("gpu-3", "disk.csi.azure.com"), gpu_node("gpu-4"))
    view, findings = storage(objs)
    c = view.claims[0]
    assert (c.state, c.eligible_nodes, c.nodes_missing_driver) == ("CsiMissing", 4, ["gpu-3", "gpu-4"])
    (f,) = findings
    assert (f.rule, f.severity.value) == ("STORAGE-CSI-MISSING", "warning")
    assert "gpu-3, gpu-4" in f.message and DRIVER in f.message and "2 of 4" in f.message


@pytest.mark.parametrize(
    "bad",
    [
        gpu_node("cpu-1", gpu=None),
        gpu_node("win-1", os="windows"),
        gpu_node("win-2", os="windows", os_label=False),
        gpu_node("down-1", ready="False"),
        gpu_node("cordoned-1", unschedulable=True),
        gpu_node("leaving-1", deleting=True),
    ],
    ids=["no-gpu-class", "windows-label", "windows-nodeinfo", "not-ready", "unschedulable", "deleting"],
)
def test_only_eligible_pool_nodes_are_checked(bad):
    view, findings = storage(healthy(bad))
    assert view.claims[0].eligible_nodes == 2 and view.claims[0].state == "Ready"
    assert rules(findings) == ["STORAGE-CANARY"]


def test_tau_cluster_node_selector_narrows_the_pool():
    tc = {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster", "metadata": {"name": "cluster"},
          "spec": {"nodes": {"selector": {"pool": "research"}}}}
    objs = healthy(tc, gpu_node("gpu-9", labels={"pool": "research"}), csinode("gpu-9", DRIVER))
    view, _ = storage(objs)
    assert view.claims[0].eligible_nodes == 1 and view.claims[0].state == "Ready"


@pytest.mark.parametrize(
    "flex_label", [{"kubernetes.azure.com/managed": "false"}, {"aks.azure.com/stretch-managed": "true"}],
    ids=["flex", "stretch"]
)
def test_flex_node_relying_on_an_aks_managed_addon_driver_warns(flex_label):
    objs = healthy(gpu_node("flex-1", labels=flex_label), csinode("flex-1", DRIVER))
    view, findings = storage(objs)
    assert view.claims[0].flex_nodes == ["flex-1"] and view.state == "NotReady"
    (f,) = findings
    assert (f.rule, f.severity.value) == ("STORAGE-FLEX-ADDON", "warning") and "flex-1" in f.message
    assert "deployment-managed" in f.hint


def test_flex_node_with_a_deployment_managed_driver_is_fine():
    objs = [o for o in healthy() if o["kind"] != "StorageClass"]
    objs += [storage_class(provisioner="example.com/nfs"),
             gpu_node("flex-1", labels={"kubernetes.azure.com/managed": "false"})]
    objs += [csinode(n, "example.com/nfs") for n in ("flex-1",)]
    objs = [o for o in objs if not (o["kind"] == "CSINode" and o["metadata"]["name"] in ("gpu-1", "gpu-2"))]
    objs += [csinode("gpu-1", "example.com/nfs"), csinode("gpu-2", "example.com/nfs")]
    view, findings = storage(objs)
    assert view.claims[0].flex_nodes == [] and rules(findings) == ["STORAGE-CANARY"]


def test_managed_agent_pool_with_azure_driver_is_supported():
    objs = healthy(gpu_node("aks-1", labels={"kubernetes.azure.com/managed": "true"}), csinode("aks-1", DRIVER))
    _, findings = storage(objs)
    assert rules(findings) == ["STORAGE-CANARY"]


def test_in_tree_azure_provisioner_maps_to_its_csi_driver():
    objs = ([o for o in healthy() if o["kind"] != "StorageClass"]
            + [storage_class(provisioner="kubernetes.io/azure-disk")])
    view, findings = storage(objs)
    assert view.claims[0].driver == "disk.csi.azure.com"
    assert view.claims[0].nodes_missing_driver == ["gpu-2"]


def test_missing_storage_class():
    objs = [o for o in healthy() if o["kind"] != "StorageClass"]
    view, findings = storage(objs)
    assert view.claims[0].state == "ClassMissing"
    assert rules(findings) == ["STORAGE-CLASS-MISSING"]


def test_statically_bound_claim_without_class():
    objs = [o for o in healthy() if o["kind"] != "PersistentVolumeClaim"] + [pvc(CLAIM, OLD, storage_class=None)]
    view, _ = storage(objs)
    assert view.claims[0].state == "Ready" and view.claims[0].driver is None
    assert "by hand" in view.claims[0].message


@pytest.mark.parametrize("kind", ["PersistentVolumeClaim", "StorageClass", "CSINode", "Node"])
@pytest.mark.parametrize("state", [AccessState.FORBIDDEN, AccessState.ERROR, AccessState.SYNCING])
def test_unreadable_inputs_fail_closed(kind, state):
    view, findings = storage(healthy(), {kind: state})
    assert view.state == "Unknown" and view.claims[0].state == "Unknown"
    assert len(view.claims[0].unknown) == 1 and view.claims[0].unknown[0].reason == state.value
    assert findings == []  # never "Ready"; unreadable kinds have their own DATA-UNREADABLE finding


def test_retarget_checks_the_old_and_the_new_namespace():
    view, findings = storage(healthy(mode="Retarget"))
    assert [(c.namespace, c.state) for c in view.claims] == [(OLD, "Ready"), (NEW, "Missing")]
    assert rules(findings) == ["STORAGE-PVC-MISSING"]


def test_deleted_workspace_is_skipped():
    view, findings = storage(healthy(mode="Deletion"))
    assert (view.state, view.claims, findings) == ("Skipped", [], [])


def test_through_the_whole_view_with_the_cli_claim_option():
    ctx = drain_ctx(healthy(gpu_node("gpu-3")))
    view = derive(ctx.store, DRAIN_NOW, RuleConfig(storage_claims=(CLAIM,)))
    out = view.to_contract()["workspaces"][0]["storage"]
    assert out["state"] == "NotReady" and out["claims"][0]["nodesMissingDriver"] == ["gpu-3"]
    assert any(f.rule == "STORAGE-CSI-MISSING" for f in view.findings)


def test_workspace_without_resolved_namespace_uses_the_desired_one():
    ws = drain_workspace(None, resolved=None, target="eval-new")
    view, _ = storage(healthy(pvc(CLAIM, "eval-new"), ws=ws))
    assert (view.claims[0].namespace, view.claims[0].state) == ("eval-new", "Ready")
