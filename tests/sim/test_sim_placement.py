"""Where the simulator puts Pods (taudash/sim/placement.py), on small hand-built nodes and pods: the room a
node offers, kube-scheduler's spreading, and Kueue TAS's one-domain placement with its failure message."""

from __future__ import annotations

from decimal import Decimal

from factories import node
from factories import pod as make_pod

from taudash.sim.placement import Ledger, Miss, pod_requests, unschedulable_message

GPU = "nvidia.com/gpu"
AD = "tau.azure.com/accelerator-domain"
HOST = "kubernetes.io/hostname"


def tray(name: str, domain: str = "d0", gpus: str = "4", labels: dict | None = None, **kw) -> dict:
    return node(name, "gb200", alloc={GPU: gpus, "cpu": "64", "memory": "256Gi", "pods": "110"},
                labels={AD: domain, HOST: name, **(labels or {})}, **kw)


def pod(node_name: str | None, gpus: int = 1, phase: str = "Running") -> dict:
    return make_pod(f"p-{node_name}-{gpus}", node=node_name, gpus=gpus, phase=phase)


def spec(gpus: int = 1, **extra) -> dict:
    return {"containers": [{"name": "main", "resources": {"requests": {GPU: str(gpus), "cpu": "1"}}}], **extra}


def test_effective_requests_take_the_larger_of_containers_and_init_containers():
    s = {
        "containers": [{"resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
                       {"resources": {"requests": {"cpu": "500m"}, "limits": {GPU: "2"}}}],
        "initContainers": [{"resources": {"requests": {"cpu": "4"}}}, {"resources": {"requests": {"memory": "512Mi"}}}],
        "overhead": {"memory": "128Mi"},
    }
    req = pod_requests(s)
    assert req["cpu"] == Decimal(4)  # an init container needs more than the containers together
    assert req["memory"] == Decimal(2**30 + 128 * 2**20)  # the containers' sum, plus the overhead
    assert req[GPU] == Decimal(2)  # a limit stands in for a missing request
    assert pod_requests({}) == {}


def test_terminal_and_unbound_pods_take_no_room():
    ledger = Ledger([tray("n0")], [pod("n0", 1), pod("n0", 1, phase="Succeeded"), pod("n0", 1, phase="Failed"),
                                   pod(None, 4, phase="Pending"), pod("gone", 4)])
    room = ledger.rooms["n0"]
    assert room.free(GPU) == 3 and room.free("pods") == 109


def test_nodes_not_ready_cordoned_deleting_tainted_or_unselected_are_not_candidates():
    nodes = [tray("ok"), tray("down", ready="Unknown"), tray("cordoned", unschedulable=True),
             tray("going", deleting=True), tray("other", labels={"zone": "b"})]
    nodes.append({**tray("tainted"), "spec": {"taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]}})
    ledger = Ledger(nodes)
    rooms, matching, excluded = ledger.candidates(spec(nodeSelector={"tau.azure.com/gpu-class": "gb200"}))
    assert sorted(r.name for r in rooms) == ["ok", "other"]
    assert matching == 6 and excluded == {"node not ready or unschedulable": 3, 'taint "sku=gpu:NoSchedule"': 1}
    tolerating = spec(tolerations=[{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}])
    assert sorted(r.name for r in ledger.candidates(tolerating)[0]) == ["ok", "other", "tainted"]
    affinity = spec(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}})
    assert [r.name for r in ledger.candidates(affinity)[0]] == ["other"]


def test_spread_puts_each_pod_on_the_least_allocated_node_and_breaks_ties_by_the_pod():
    ledger = Ledger([tray("n0"), tray("n1"), tray("n2")], [pod("n0", 2), pod("n1", 1)])
    assert ledger.spread(spec(), pod_requests(spec()), "a") == "n2"  # the emptiest
    # equals: the pick depends on the pod (kube-scheduler picks at random), and repeats for the same pod
    empty = Ledger([tray(f"n{i}") for i in range(6)])
    picks = {empty.spread(spec(), pod_requests(spec()), f"pod-{i}") for i in range(12)}
    assert len(picks) > 1
    assert empty.spread(spec(), pod_requests(spec()), "pod-3") == empty.spread(spec(), pod_requests(spec()), "pod-3")
    full = Ledger([tray("n0")], [pod("n0", 4)])
    assert full.spread(spec(), pod_requests(spec())) is None


def test_spread_place_leaves_what_fits_nowhere_unbound():
    ledger = Ledger([tray("n0"), tray("n1")])
    placed = ledger.place(spec(3), 3, None, False, ["a", "b", "c"])
    assert sorted(p for p in placed if p) == ["n0", "n1"] and placed.count(None) == 1
    assert ledger.rooms["n0"].free(GPU) == ledger.rooms["n1"].free(GPU) == 1


def test_a_gang_goes_to_the_tightest_domain_that_holds_it_on_the_fewest_hosts():
    nodes = [tray("a0", "A"), tray("a1", "A"), tray("b0", "B"), tray("b1", "B"), tray("b2", "B")]
    ledger = Ledger(nodes, [pod("a0", 1)])
    # two 2-GPU pods: domain A holds exactly 3 of them (a0: 1, a1: 2), B holds 6; BestFit takes A
    got = ledger.gang(spec(2), pod_requests(spec(2)), 2, AD)
    assert got == ["a1", "a1"]
    # four 4-GPU pods: no domain has four whole trays free
    miss = ledger.gang(spec(4), pod_requests(spec(4)), 4, AD)
    assert isinstance(miss, Miss) and (miss.fit, miss.count) == (3, 4)
    assert miss.message("t") == ('topology "t" allows to fit only 3 out of 4 pod(s). Total nodes: 5; '
                                 'excluded: resource "nvidia.com/gpu": 1')
    # without a level three of them fit anywhere, each on a host with a whole tray free (a0 has three GPUs)
    assert ledger.gang(spec(4), pod_requests(spec(4)), 3, None) == ["a1", "b0", "b1"]


def test_same_host_keeps_every_pod_on_one_host_or_fails():
    ledger = Ledger([tray("n0", gpus="8"), tray("n1", gpus="8")], [pod("n0", 2)])
    assert ledger.gang(spec(2), pod_requests(spec(2)), 4, HOST) == ["n1"] * 4
    miss = ledger.gang(spec(3), pod_requests(spec(3)), 3, HOST)
    assert isinstance(miss, Miss) and miss.fit == 2
    assert miss.message("t").startswith('topology "t" allows to fit only 2 out of 3 pod(s)')
    none = Ledger([tray("n0")], [pod("n0", 4)]).gang(spec(1), pod_requests(spec(1)), 1, HOST)
    assert isinstance(none, Miss) and none.message("t").startswith('topology "t" doesn\'t allow to fit any of 1 pod(s)')


def test_a_required_placement_binds_all_or_nothing_a_preferred_one_falls_back():
    ledger = Ledger([tray("a0", "A"), tray("b0", "B")])
    assert isinstance(ledger.place(spec(4), 2, AD, True), Miss)
    assert ledger.rooms["a0"].free(GPU) == 4  # nothing taken
    assert sorted(ledger.place(spec(4), 2, AD, False)) == ["a0", "b0"]
    assert ledger.rooms["a0"].free(GPU) == 0


def test_the_unschedulable_message_counts_nodes_per_reason_like_kube_scheduler():
    nodes = [tray("full"), tray("down", ready="False"), node("cpu-only", None, alloc={"cpu": "8", "pods": "10"})]
    ledger = Ledger(nodes, [pod("full", 4)])
    msg = unschedulable_message(ledger, spec(nodeSelector={"tau.azure.com/gpu-class": "gb200"}))
    assert msg == ("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node "
                   "affinity/selector, 1 node(s) were unschedulable or not ready.")
