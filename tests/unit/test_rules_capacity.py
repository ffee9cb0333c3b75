"""Capacity rules (engine/rules/capacity.py, gpu_health.py, gang.py): GPU health classes, free capacity per
node and domain, gang slots per placement, fragmentation blockers and the findings, on hand-built Nodes and
Pods (docs/rules.md#capacity)."""

from __future__ import annotations

import pytest
from factories import GPU, node, pod, rule_context, rules, workload

from taudash.engine.model import Node
from taudash.engine.rules.base import RuleConfig
from taudash.engine.rules.capacity import capacity_view, node_pods
from taudash.engine.rules.gang import HostRoom, ShapeError, shape, slots
from taudash.engine.rules.gpu_health import CapacityConfig, node_health
from taudash.engine.store import AccessState

ACC = "tau.azure.com/accelerator-domain"
NET = "tau.azure.com/network-domain"
SITE = "tau.azure.com/site"
FLAVOR = "taugrid-gpu-h100"


def gpu_node(name: str, domain: str = "rack-a", *, gpus: int = 8, net: str = "ib-1", **kw) -> dict:
    return node(name, "h100", alloc={GPU: str(gpus)}, labels={ACC: domain, NET: net, SITE: "azure-eastus"}, **kw)


def health(**kw) -> str:
    n = Node.model_validate(node("n", **kw))
    return node_health(n, CapacityConfig()).health


def view(*objs: dict, asked=None, access=None, config=None):
    ctx = rule_context(objs, access=access, config=config)
    return capacity_view(ctx, asked)


# --- GPU health ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("conditions", "want"), [
    ({}, "healthy"),
    ({"XIDError79": "False", "GPUThermalViolation": "False"}, "healthy"),  # checked and absent
    ({"XIDError79": "True"}, "unhealthy"),  # drain class
    ({"GraceCPUECCUncorrectable": "True"}, "unhealthy"),
    ({"DcgmHealthProblem": "True"}, "unhealthy"),
    ({"GPUThermalViolation": "True"}, "degraded"),  # taint class
    ({"IBLinkDown": "True"}, "degraded"),
    ({"DcgmExporterUnavailable": "True"}, "unknown"),
    ({"XIDError79": "Unknown"}, "unknown"),  # the collector could not say: never healthy
    ({"DcgmExporterUnavailable": "True", "XIDError48": "True"}, "unhealthy"),  # the worst wins
    ({"DcgmExporterUnavailable": "True", "GPUPowerViolation": "True"}, "unknown"),
    ({"SomethingElse": "True"}, "healthy"),  # not a GPU health type
])
def test_health_class_from_the_collectors_conditions(conditions, want):
    assert health(conditions=conditions) == want


def test_schedulability_notready_cordon_deleting_and_taints():
    cfg = CapacityConfig()
    assert node_health(Node.model_validate(node("n")), cfg).schedulable
    nr = node_health(Node.model_validate(node("n", ready="False")), cfg)
    assert not nr.schedulable and "NotReady" in nr.reasons
    assert node_health(Node.model_validate(node("n", ready=None)), cfg).reasons == ("NotReady",)
    c = node_health(Node.model_validate(node("n", unschedulable=True,
                                             taints=[{"key": "node.kubernetes.io/unschedulable",
                                                      "effect": "NoSchedule"}])), cfg)
    assert c.reasons == ("Cordoned",) and not c.blocking_taints
    assert "Deleting" in node_health(Node.model_validate(node("n", deleting=True)), cfg).reasons
    # A GPU workload tolerates the GPU taint; not a foreign NoSchedule one; PreferNoSchedule never blocks.
    ok = [{"key": GPU, "value": "present", "effect": "NoSchedule"}, {"key": "x", "effect": "PreferNoSchedule"},
          {"key": "sku", "value": "gpu", "effect": "NoSchedule"}]
    assert node_health(Node.model_validate(node("n", taints=ok)), cfg).schedulable
    bad = node_health(Node.model_validate(node("n", taints=[{"key": "maintenance", "value": "fw",
                                                             "effect": "NoExecute"}])), cfg)
    assert bad.blocking_taints == ("maintenance=fw:NoExecute",) and not bad.schedulable
    # Configurable: tolerating the key makes it placeable; the flavor's own tolerations count too.
    assert node_health(Node.model_validate(node("n", taints=[{"key": "maintenance", "effect": "NoSchedule"}])),
                       CapacityConfig(tolerated_taints=("maintenance",))).schedulable
    assert node_health(Node.model_validate(node("n", taints=[{"key": "maintenance", "effect": "NoSchedule"}])),
                       cfg, [("maintenance", "")]).schedulable


def test_condition_classes_are_configuration():
    cfg = CapacityConfig(drain_conditions=("GPUThermalViolation",), taint_conditions=())
    n = Node.model_validate(node("n", conditions={"GPUThermalViolation": "True", "XIDError79": "True"}))
    assert node_health(n, cfg).health == "unhealthy" and node_health(n, cfg).reasons == ("GPUThermalViolation",)


# --- free capacity -----------------------------------------------------------------------------------


def test_free_is_allocatable_minus_non_terminal_bound_requests_on_placeable_nodes():
    v, _ = view(
        gpu_node("a"), gpu_node("b"), gpu_node("bad", conditions={"XIDError79": "True"}),
        gpu_node("hot", conditions={"GPUThermalViolation": "True"}), gpu_node("dark", conditions={
            "DcgmExporterUnavailable": "True"}), gpu_node("cord", unschedulable=True), gpu_node("down", ready="False"),
        gpu_node("gone", deleting=True),
        pod("p1", node="a", gpus=3), pod("done", node="a", gpus=4, phase="Succeeded"),
        pod("failed", node="b", gpus=8, phase="Failed"), pod("unbound", gpus=8),
        pod("init", node="b", gpus=1, init_gpus=6),  # the larger init container counts: 6
        pod("over", node="hot", gpus=8), pod("on-bad", node="bad", gpus=2), pod("elsewhere", node="cpu-node", gpus=1),
    )
    fl = v.flavor(FLAVOR)
    assert v.known and fl is not None
    g = fl.gpus
    assert g.allocatable == 8 * 6  # a, b, bad, hot, dark, cord (Ready, not deleting)
    assert g.requested == 3 + 6 + 8 + 2
    assert (g.free, g.unhealthy, g.unknown_health, g.cordoned, g.degraded, g.not_ready, g.deleting) == (
        5 + 2 + 0, 8, 8, 8, 8, 8, 8)
    nodes = {n.name: n for n in fl.nodes}
    assert (nodes["a"].free, nodes["b"].free, nodes["hot"].free, nodes["bad"].free) == (5, 2, 0, 0)
    assert nodes["bad"].health == "unhealthy" and nodes["bad"].reasons == ["XIDError79"]
    assert nodes["a"].domains == {"site": "azure-eastus", "network-domain": "ib-1", "accelerator-domain": "rack-a"}
    assert [f.name for f in v.flavors] == [FLAVOR]


def test_degraded_nodes_stay_placeable_and_a_node_without_gpus_gives_none():
    v, _ = view(gpu_node("hot", conditions={"GPUPowerViolation": "True"}), gpu_node("small", gpus=0))
    g = v.flavor(FLAVOR).gpus
    assert (g.free, g.degraded, g.allocatable) == (8, 8, 8)


@pytest.mark.parametrize("state", [AccessState.FORBIDDEN, AccessState.ERROR, AccessState.SYNCING])
def test_unreadable_pods_make_free_capacity_unknown_never_all_free(state):
    v, f = view(gpu_node("a"), pod("p", node="a", gpus=8), access={"Pod": state},
                asked=shape(8, 1, "same-host"))
    fl = v.flavor(FLAVOR)
    assert not v.known and v.unknown_reason.startswith("pods is ")
    assert fl.gpus.free is None and fl.gpus.requested is None and fl.nodes[0].free is None
    assert fl.fits is not None and fl.fits.count is None
    assert "CAPACITY-UNKNOWN" in rules(f)


def test_unreadable_nodes_make_the_whole_view_unknown():
    v, f = view(gpu_node("a"), access={"Node": AccessState.FORBIDDEN})
    assert not v.known and v.flavors == [] and rules(f) == ["CAPACITY-UNKNOWN"]


def test_domains_nest_site_network_accelerator_host():
    v, _ = view(gpu_node("a", "rack-a"), gpu_node("b", "rack-a"), gpu_node("c", "rack-b"),
                pod("p", node="a", gpus=8))
    doms = {(d.level, d.name): d for d in v.flavor(FLAVOR).domains}
    assert doms[("accelerator-domain", "rack-a")].free == 8 and doms[("accelerator-domain", "rack-a")].nodes == ["a", "b"]
    assert doms[("accelerator-domain", "rack-a")].parent == "ib-1"
    assert doms[("network-domain", "ib-1")].free == 16 and doms[("site", "azure-eastus")].allocatable == 24
    assert not [d for d in doms if d[0] == "host"]  # the nodes are the hosts


# --- gang slots ---------------------------------------------------------------------------------------


def hosts(*spec: tuple[str, int, str]) -> list[HostRoom]:
    return [HostRoom(n, free, {"accelerator-domain": d, "network-domain": "net", "site": "s"}) for n, free, d in spec]


@pytest.mark.parametrize(("placement", "gpus", "workers", "want"), [
    ("unconstrained", 2, 3, 2),  # worker slots 2+2+0+2 = 6 anywhere: 2 gangs of 3
    ("same-host", 4, 1, 3),
    ("same-host", 2, 2, 3),  # each 4-GPU host holds one gang of two 2-GPU workers; the 1-GPU host none
    ("same-host", 4, 2, 0),
    ("same-accelerator-domain", 4, 2, 1),
    ("same-network-domain", 4, 2, 1),
    ("same-site", 1, 13, 1),
    ("independent", 1, 1, 13),
    ("single-node-nvlink", 4, 1, 3),
    ("multi-node-nccl", 4, 3, 1),
])
def test_slots_per_placement(placement, gpus, workers, want):
    rooms = hosts(("h1", 4, "r1"), ("h2", 4, "r1"), ("h3", 1, "r2"), ("h4", 4, "r2"))
    count, where = slots(rooms, shape(gpus, workers, placement))
    assert count == want
    assert sum(w.count for w in where) == count


def test_slots_where_names_the_domains_and_negative_when_fragmented():
    # 8 one-GPU jobs, one per tray: every domain has 3 of 4 GPUs free — no 4-GPU worker fits anywhere.
    rooms = hosts(*((f"t{i}", 3, f"r{i % 2}") for i in range(8)))
    assert slots(rooms, shape(4, 1, "same-host")) == (0, [])
    count, where = slots(hosts(("a", 4, "r1"), ("b", 4, "r1"), ("c", 4, "r2")), shape(4, 2, "same-accelerator-domain"))
    assert count == 1 and [(w.level, w.domain, w.free) for w in where] == [("accelerator-domain", "r1", 8)]
    # A node without the level's label belongs to no domain of that level.
    assert slots([HostRoom("x", 8, {})], shape(8, 1, "same-accelerator-domain")) == (0, [])


@pytest.mark.parametrize(("args", "text"), [((0, 1, ""), "gpus per worker"), ((1, 0, ""), "workers"),
                                            ((1, 1, "same-rack"), "unknown placement 'same-rack'")])
def test_bad_shapes_are_refused_naming_what_is_wrong(args, text):
    with pytest.raises(ShapeError, match=text):
        shape(*args)


def test_fits_and_blockers_rank_the_pods_whose_gpus_would_let_a_gang_start():
    objs = [gpu_node(f"t{i}", f"r{i // 4}", gpus=4) for i in range(8)]
    objs += [pod("small-0", node="t0", gpus=1, owner=("Job", "small", "u-small")),
             pod("small-1", node="t5", gpus=1), pod("big", node="t1", gpus=4),
             workload("job-small", "ns", state="admitted", admitted_to="cq", owner=("Job", "small", "u-small"))]
    v, _ = view(*objs, asked=shape(4, 4, "same-accelerator-domain"))
    fits = v.flavor(FLAVOR).fits
    assert fits.count == 0 and fits.best_free == 15  # r1: 16 less small-1
    assert [(b.name, b.domain, b.slots_gained) for b in fits.blockers] == [("small-1", "r1", 1)]
    assert fits.blockers[0].owner == ""
    v, _ = view(*objs, asked=shape(4, 3, "same-accelerator-domain"))
    fits = v.flavor(FLAVOR).fits
    assert fits.count == 1 and [(w.domain, w.count) for w in fits.where] == [("r1", 1)]
    # In r0 freeing either small-0 or big makes a third worker slot: the smaller holder ranks first.
    assert [(b.name, b.workload, b.slots_gained) for b in fits.blockers] == [("small-0", "ns/job-small", 1),
                                                                             ("big", "", 1)]


# --- findings ---------------------------------------------------------------------------------------


def test_workload_on_an_unhealthy_node_positive_negative():
    wl = workload("job-x", "ns", state="admitted", admitted_to="cq", owner=("Job", "x", "u-x"))
    p = pod("x-0", node="bad", gpus=2, owner=("Job", "x", "u-x"))
    _, f = view(gpu_node("bad", conditions={"XIDError79": "True"}), p, wl)
    hit = [x for x in f if x.rule == "CAPACITY-WORKLOAD-ON-UNHEALTHY-NODE"]
    assert [(x.object.kind, x.object.namespace, x.object.name) for x in hit] == [("Workload", "ns", "job-x")]
    assert "XIDError79" in hit[0].message
    _, f = view(gpu_node("bad", conditions={"GPUThermalViolation": "True"}), p, wl)  # degraded: no finding
    assert "CAPACITY-WORKLOAD-ON-UNHEALTHY-NODE" not in rules(f)
    done = pod("x-0", node="bad", gpus=2, owner=("Job", "x", "u-x"), phase="Succeeded")
    _, f = view(gpu_node("bad", conditions={"XIDError79": "True"}), done, wl)
    assert "CAPACITY-WORKLOAD-ON-UNHEALTHY-NODE" not in rules(f)
    # Workloads unreadable: the finding cannot name one (no guess), capacity still counted.
    v, f = view(gpu_node("bad", conditions={"XIDError79": "True"}), p, wl, access={"Workload": AccessState.FORBIDDEN})
    assert "CAPACITY-WORKLOAD-ON-UNHEALTHY-NODE" not in rules(f) and v.flavor(FLAVOR).gpus.unhealthy == 8


def test_gpu_health_unknown_finding():
    _, f = view(gpu_node("dark", conditions={"DcgmExporterUnavailable": "True"}), gpu_node("ok"))
    hit = [x for x in f if x.rule == "CAPACITY-GPU-HEALTH-UNKNOWN"]
    assert len(hit) == 1 and "dark" in hit[0].message and hit[0].object.name == FLAVOR
    _, f = view(gpu_node("ok"))
    assert f == []


def test_health_defaults_reach_the_rule_through_its_config():
    cfg = RuleConfig(capacity=CapacityConfig(unknown_conditions=()))
    v, f = view(gpu_node("dark", conditions={"DcgmExporterUnavailable": "True"}), config=cfg)
    assert v.flavor(FLAVOR).gpus.free == 8 and f == []


def test_pending_gangs_no_domain_can_place_are_listed_for_the_queues_view():
    objs = [gpu_node(f"t{i}", f"r{i // 2}") for i in range(4)] + [pod("a", node="t0", gpus=1), pod("b", node="t2", gpus=1)]
    gang = workload("gang", "ns")  # pending
    gang["spec"]["podSets"] = [{"name": "main", "count": 2, "topologyRequest": {"required": ACC}, "template": {
        "spec": {"containers": [{"name": "c", "resources": {"requests": {GPU: "8"}}}]}}}]
    v, _ = view(*objs, gang)
    assert [(w.namespace, w.name, w.best_free) for w in v.topology_waits] == [("ns", "gang", 15)]
    assert v.topology_waits[0].message.startswith("quota exists but no domain can place this shape (2×8 GPUs")
    v, _ = view(*objs[:-1], gang)  # rack r1 is whole again: the gang fits, nothing listed
    assert v.topology_waits == []
    v, _ = view(*objs, gang, access={"Pod": AccessState.FORBIDDEN})  # room unknown and Kueue silent: no claim
    assert v.topology_waits == []


# --- a node's Pods (the Capacity screen's drill-down) ----------------------------------------------


def test_node_pods_name_the_workload_their_job_runs_under_and_skip_finished_ones():
    objs = [gpu_node("t0"),
            pod("x-0", node="t0", gpus=2, owner=("Job", "x", "u-x")),
            pod("y-0", node="t0", gpus=0, owner=("Job", "y", "u-y")),
            pod("z-0", node="t0", gpus=1, owner=("Job", "z", "u-z"), phase="Succeeded"),
            pod("w-0", node="other", gpus=1),
            workload("job-x", "ns", state="admitted", admitted_to="cq", owner=("Job", "x", "u-x"))]
    ctx = rule_context(objs)
    pods = node_pods(ctx.store, "t0")
    assert [(p.name, p.gpus, p.owner, p.workload) for p in pods] == [
        ("x-0", 2, "Job/x", "ns/job-x"), ("y-0", 0, "Job/y", "")]  # GPU holders first; no Workload: ""
    unreadable = rule_context(objs, access={"Workload": AccessState.FORBIDDEN})
    assert [p.workload for p in node_pods(unreadable.store, "t0")] == ["", ""]  # unknown, never a guess
