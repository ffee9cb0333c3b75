"""GPU health Node conditions in the simulator (raised and cleared at a seeded rate, scripted, held by
`sim serve --node-fault`) and TauGrid's topology (the labels its controller derives, the Kueue Topology, the
flavors pointing at it)."""

from __future__ import annotations

import copy

import pytest
from factories import sim_world

from taudash.cli import main
from taudash.sim.controllers.scenario import Scenario, ScenarioError
from taudash.sim.faults import FaultSpecError, apply_node_faults, parse_node_fault
from taudash.sim.health import CONDITION_TYPES, DRAIN, EXPORTER_UNAVAILABLE, TAINT, applicable
from taudash.sim.objects import ObjectDB
from taudash.sim.topology import derived_labels

KUBELET = {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
SICK = "aks-h100-27604139-vmss000003"  # the demo's drain-class node (XIDError79)


def gpu_conditions(w) -> dict[tuple[str, str], str]:
    return {(n["metadata"]["name"], c["type"]): c["status"] for n in w.db.list("Node")
            for c in (n.get("status") or {}).get("conditions") or () if c["type"] not in KUBELET}


def test_the_default_condition_set_is_the_collectors_twenty_and_the_exporter():
    assert len(CONDITION_TYPES) == 21 and CONDITION_TYPES[-1] == EXPORTER_UNAVAILABLE
    assert len(DRAIN) == 12 and len(TAINT) == 8 and not DRAIN & TAINT  # the reference table, row by row
    assert {"XIDError79", "GPUECCDoubleRetired", "GraceCPUECCUncorrectable"} <= DRAIN
    assert {"GPUThermalViolation", "IBLinkDown", "GraceCPUECCCorrectableRate"} <= TAINT


def test_gpu_faults_come_and_go_at_a_seeded_rate_on_the_nodes_they_apply_to():
    def run():
        w = sim_world(seed=5, gpuFaultsPerHour=2)
        before = gpu_conditions(w)
        w.run_for(4 * 3600, dt=60)
        return w, before, gpu_conditions(w)

    w, before, after = run()
    raised = {k: v for k, v in after.items() if k not in before}
    assert len(raised) > 10
    assert "False" in raised.values()  # cleared again, kept as False (a condition is never deleted)
    nodes = {n["metadata"]["name"]: n for n in w.db.list("Node")}
    for (name, ctype), _ in raised.items():
        assert nodes[name]["metadata"]["labels"].get("tau.azure.com/gpu-class")  # GPU nodes only
        assert ctype in applicable(nodes[name])
    assert not any(t.startswith("GraceCPU") for n, t in raised if "gb200" not in n)  # Grace rules on Grace hosts
    assert not any(t.startswith("IB") for n, t in raised if "a100" in n)  # no InfiniBand on the A100s
    assert after[(SICK, "XIDError79")] == "True"  # the seed's fault is not the controller's to clear
    assert run()[2] == after  # the same seed, the same story


def test_the_default_rate_draws_from_its_own_stream_and_moves_nothing_else():
    quiet, faulty = sim_world(seed=2), sim_world(seed=2, gpuFaultsPerHour=5)
    for w in (quiet, faulty):
        w.run_for(3600, dt=60)
    non_node = [e for e in faulty.event_log() if e[2] != "Node"]
    assert non_node == [e for e in quiet.event_log() if e[2] != "Node"]
    assert len(faulty.event_log()) > len(quiet.event_log())


def test_a_scenario_raises_and_clears_a_condition_at_its_times():
    w = sim_world(events=[{"at": "2m", "gpuFault": "aks-a100-51938270-vmss000001=GPUPowerViolation"},
                          {"at": "5m", "gpuRecover": {"node": SICK, "condition": "XIDError79"}}])
    w.run_for(60, dt=30)
    assert ("aks-a100-51938270-vmss000001", "GPUPowerViolation") not in gpu_conditions(w)
    w.run_for(120, dt=30)
    assert gpu_conditions(w)[("aks-a100-51938270-vmss000001", "GPUPowerViolation")] == "True"
    assert gpu_conditions(w)[(SICK, "XIDError79")] == "True"
    w.run_for(180, dt=30)
    node = w.db.get("Node", SICK)
    c = next(c for c in node["status"]["conditions"] if c["type"] == "XIDError79")
    assert (c["status"], c["reason"], c["lastTransitionTime"]) == ("False", "NoProblem", "2026-11-30T09:05:00Z")
    for bad, msg in (({"gpuFault": "n1"}, "needs node and condition"),
                     ({"gpuFault": {"node": "n1", "condition": "XIDError80"}}, "unknown GPU health condition")):
        with pytest.raises(ScenarioError, match=msg):
            Scenario.parse({"events": [{"at": 1, **bad}]})


def test_node_faults_parse_and_name_the_bad_part():
    assert str(parse_node_fault(" n1 = XIDError79,IBLinkDown ")) == "n1=XIDError79,IBLinkDown"
    for bad, msg in (("n1", "expected NODE=CONDITION"), ("=XIDError79", "expected NODE=CONDITION"),
                     ("n1=xiderror79", "did you mean XIDError79"), ("n1=XIDError79,Nope", "'Nope'")):
        with pytest.raises(FaultSpecError, match=msg):
            parse_node_fault(bad)


def test_node_faults_are_applied_as_collector_conditions_or_refused_with_the_nodes_there_are():
    db = ObjectDB()
    db.seed([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1", "labels": {
        "tau.azure.com/gpu-class": "h100"}}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}])
    before = db.resource_version
    problems = apply_node_faults(db, [parse_node_fault("gpu-1=XIDError79"), parse_node_fault("gpu-9=IBLinkDown")])
    assert problems == ["no node 'gpu-9' in this cluster (GPU nodes: gpu-1)"] and db.resource_version == before
    assert apply_node_faults(db, [parse_node_fault("gpu-1=XIDError79,DcgmExporterUnavailable")]) == []
    conds = {c["type"]: c for c in db.get("Node", "gpu-1")["status"]["conditions"]}
    assert conds["Ready"]["status"] == "True"
    assert (conds["XIDError79"]["status"], conds["XIDError79"]["reason"]) == ("True", "XIDError79")
    assert conds[EXPORTER_UNAVAILABLE]["status"] == "True"


def test_sim_serve_refuses_a_bad_node_fault(capsys):
    assert main(["sim", "serve", "--node-fault", "aks-h100=XIDError7"]) == 2
    assert "unknown GPU health condition 'XIDError7'" in capsys.readouterr().err
    assert main(["sim", "serve", "--fleet", "1", "--node-fault", "n=XIDError79"]) == 2
    assert "not with --fleet" in capsys.readouterr().err
    assert main(["sim", "serve", "--no-controllers", "--node-fault", "aks-h100-0=XIDError79"]) == 2
    err = capsys.readouterr().err
    assert "no node 'aks-h100-0' in this cluster (GPU nodes: aks-a100-51938270-vmss000000" in err


# --- topology ---------------------------------------------------------------------------------------------


def azure_node(name: str, labels: dict, rdma: str | None = None, provider: str = "azure:///subscriptions/x") -> dict:
    alloc = {"nvidia.com/gpu": "8", **({"rdma/ib": rdma} if rdma else {})}
    return {"metadata": {"name": name, "labels": labels}, "spec": {"providerID": provider},
            "status": {"allocatable": alloc}}


def test_taugrid_derives_topology_labels_from_the_node():
    nd = azure_node("n1", {"topology.kubernetes.io/region": "eastus", "node.kubernetes.io/instance-type":
                           "Standard_ND96isr_H100_v5", "kubernetes.azure.com/agentpool": "h100"}, rdma="8")
    got = derived_labels(nd)
    assert got == {"tau.azure.com/region": "eastus", "tau.azure.com/site": "azure-eastus",
                   "tau.azure.com/network-domain": "azure-ib-eastus-h100-standard_nd96isr_h100_v5",
                   "tau.azure.com/accelerator-domain": got["tau.azure.com/accelerator-domain"],
                   "tau.azure.com/infiniband": "true"}
    assert got["tau.azure.com/accelerator-domain"].startswith("isolated-accelerator-")
    rack = azure_node("n2", {"aks.azure.com/region": "westus", "net.unbounded-cloud.io/accelerator-domain": "r7"})
    got = derived_labels(rack)
    assert (got["tau.azure.com/region"], got["tau.azure.com/accelerator-domain"]) == ("westus", "azure-accelerator-r7")
    assert got["tau.azure.com/network-domain"].startswith("isolated-domain-")  # not an ND SKU
    assert got["tau.azure.com/infiniband"] == "false"
    flex = azure_node("f1", {"kubernetes.azure.com/managed": "false", "net.unbounded-cloud.io/site": "lab",
                             "net.unbounded-cloud.io/network-domain": "ib0", "net.unbounded-cloud.io/cloud": "onprem"},
                      provider="")
    got = derived_labels(flex)
    assert got["tau.azure.com/site"] == "onprem-site-lab" and got["tau.azure.com/network-domain"] == "onprem-fabric-ib0"
    assert got["tau.azure.com/region"].startswith("unplaced-")
    long = azure_node("n3", {"topology.kubernetes.io/region": "eastus", "kubernetes.azure.com/agentpool": "p" * 40,
                             "node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5"})
    value = derived_labels(long)["tau.azure.com/network-domain"]
    assert len(value) == 63 and value.startswith("azure-ib-eastus-ppp")


def gone(w, kind: str, name: str) -> None:
    """Delete an object for good (its finalizers dropped, as their owners would)."""
    w.db.delete(kind, name)
    if w.db.get(kind, name) is not None:
        w.db.patch_json(kind, name, [{"op": "remove", "path": "/metadata/finalizers"}])
    assert w.db.get(kind, name) is None


def test_the_taugrid_controller_keeps_labels_topology_and_flavors_in_reconcile_mode():
    w = sim_world()
    w.step(5)
    name = "aks-gb200-40925117-vmss000004"
    node = w.db.get("Node", name)
    want = {k: v for k, v in node["metadata"]["labels"].items() if k.startswith("tau.azure.com/") and k in
            derived_labels(node)}
    assert want["tau.azure.com/accelerator-domain"] == "azure-accelerator-eus-nvl36-r07"
    w.db.patch_merge("Node", name, {"metadata": {"labels": {"tau.azure.com/accelerator-domain": "hand-set"}}})
    gone(w, "Topology", "taugrid-gpu-topology")
    rf = w.db.get("ResourceFlavor", "taugrid-gpu-a100-80gb")
    gone(w, "ResourceFlavor", "taugrid-gpu-a100-80gb")
    fresh = copy.deepcopy(rf)
    for k in ("uid", "resourceVersion", "creationTimestamp", "finalizers", "deletionTimestamp",
              "deletionGracePeriodSeconds", "generation"):
        fresh["metadata"].pop(k, None)
    fresh["spec"].pop("topologyName")
    w.db.create(fresh)
    w.run_for(30, dt=5)
    assert w.db.get("Node", name)["metadata"]["labels"]["tau.azure.com/accelerator-domain"] == \
        "azure-accelerator-eus-nvl36-r07"
    topo = w.db.get("Topology", "taugrid-gpu-topology")
    assert [lv["nodeLabel"] for lv in topo["spec"]["levels"]] == [
        "tau.azure.com/site", "tau.azure.com/network-domain", "tau.azure.com/accelerator-domain",
        "kubernetes.io/hostname"]
    assert w.db.get("ResourceFlavor", "taugrid-gpu-a100-80gb")["spec"]["topologyName"] == "taugrid-gpu-topology"


def test_observe_mode_derives_nothing():
    w = sim_world()
    w.db.patch_merge("TauCluster", "cluster", {"spec": {"managementMode": "Observe"}})
    name = "aks-h100-27604139-vmss000001"
    w.db.patch_merge("Node", name, {"metadata": {"labels": {"tau.azure.com/site": "hand-set"}}})
    gone(w, "Topology", "taugrid-gpu-topology")
    w.run_for(30, dt=5)
    assert w.db.get("Node", name)["metadata"]["labels"]["tau.azure.com/site"] == "hand-set"
    assert w.db.get("Topology", "taugrid-gpu-topology") is None
