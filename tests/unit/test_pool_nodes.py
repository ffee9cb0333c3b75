"""Pool node eligibility and inventory (docs/rules.md#pool-nodes)."""

import pytest
from factories import A100, GPU, H100, node, pool_flavor, pool_of, pool_tau_cluster, q, team

from taudash.engine.model import Node
from taudash.engine.rules.pool import exclusion_reason


def auto(*nodes, selector=None):
    view, _ = pool_of([pool_tau_cluster(selector=selector), team(), *nodes])
    return view


def test_a_counted_node_contributes_every_allocatable_resource():
    alloc = {GPU: "8", "cpu": "96", "memory": "1800Gi", "rdma/ib": "8", "pods": "110", "ephemeral-storage": "3Ti"}
    v = auto(node("gpu-1", alloc=alloc))
    f = pool_flavor(v, H100)
    assert (f.gpu_class, f.nodes, f.excluded) == ("h100", 1, [])
    assert f.to_contract()["inventory"] == {
        "cpu": "96", "ephemeral-storage": "3Ti", "memory": "1800Gi", "nvidia.com/gpu": "8", "pods": "110",
        "rdma/ib": "8",
    }
    assert v.covered_resources == ["cpu", "ephemeral-storage", "memory", "nvidia.com/gpu", "pods", "rdma/ib"]


def test_nodes_without_a_gpu_class_are_not_candidates():
    v = auto(node("cpu-1", gpu_class=None), node("empty", gpu_class=""), node("gpu-1"))
    assert [f.name for f in v.flavors] == [H100]
    assert pool_flavor(v, H100).nodes == 1 and pool_flavor(v, H100).excluded == []


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"os": "windows"}, "NotLinux"),
        ({"os": None, "os_info": "windows"}, "NotLinux"),
        ({"os": None}, "NotLinux"),  # neither label nor nodeInfo says linux
        ({"labels": {"pool": "batch"}}, "SelectorMismatch"),
        ({"ready": "False"}, "NotReady"),
        ({"ready": "Unknown"}, "NotReady"),
        ({"ready": None}, "NotReady"),  # no Ready condition at all
        ({"unschedulable": True}, "Unschedulable"),
        ({"deleting": True}, "Deleting"),
    ],
)
def test_each_exclusion_reason(kwargs, reason):
    kwargs.setdefault("labels", {"pool": "gpu"})
    v = auto(node("bad", **kwargs), node("good", labels={"pool": "gpu"}), selector={"pool": "gpu"})
    f = pool_flavor(v, H100)
    assert [(e.node, e.reason) for e in f.excluded] == [("bad", reason)]
    assert f.nodes == 1
    assert f.inventory == {GPU: q("8")}  # only the good node counts


def test_first_failing_reason_wins_in_the_documented_order():
    selector = {"pool": "gpu"}
    everything_wrong = dict(os="windows", labels={"pool": "cpu"}, ready="False", unschedulable=True, deleting=True)
    steps = [
        ("NotLinux", {}),
        ("SelectorMismatch", {"os": "linux"}),
        ("NotReady", {"labels": {"pool": "gpu"}}),
        ("Unschedulable", {"ready": "True"}),
        ("Deleting", {"unschedulable": False}),
        (None, {"deleting": False}),
    ]
    kwargs = dict(everything_wrong)
    for expected, fix in steps:
        kwargs.update(fix)
        n = Node.model_validate(node("n", **kwargs))
        assert exclusion_reason(n, selector) == expected, (expected, kwargs)


def test_os_label_wins_over_node_info():
    v = auto(node("label-linux", os="linux", os_info="windows"), node("label-windows", os="windows", os_info="linux"),
             node("info-linux", os=None, os_info="linux"))
    f = pool_flavor(v, H100)
    assert f.nodes == 2
    assert [(e.node, e.reason) for e in f.excluded] == [("label-windows", "NotLinux")]


def test_selector_must_match_every_key():
    sel = {"pool": "gpu", "zone": "a"}
    v = auto(node("both", labels=sel), node("one", labels={"pool": "gpu"}), selector=sel)
    f = pool_flavor(v, H100)
    assert f.nodes == 1 and [(e.node, e.reason) for e in f.excluded] == [("one", "SelectorMismatch")]


def test_exact_decimal_arithmetic():
    cpu = {"cpu": "1500m", GPU: "1"}
    v = auto(node("a", alloc=cpu), node("b", alloc=cpu), node("c", alloc=cpu),
             node("m1", gpu_class="a100", alloc={"memory": "1Ti"}),
             node("m2", gpu_class="a100", alloc={"memory": "512Gi"}))
    h, a = pool_flavor(v, H100).to_contract(), pool_flavor(v, A100).to_contract()
    assert h["inventory"]["cpu"] == "4500m"
    assert a["inventory"]["memory"] == "1536Gi"
    assert pool_flavor(v, H100).inventory["cpu"] == q("4.5")


def test_a_resource_on_one_class_only_has_explicit_zero_elsewhere():
    v = auto(node("h", gpu_class="h100", alloc={GPU: "8", "rdma/ib": "8"}),
             node("a", gpu_class="a100", alloc={GPU: "4"}))
    a = pool_flavor(v, A100).to_contract()
    assert "rdma/ib" not in a["inventory"]  # inventory is a fact: the node has none
    assert a["budget"] == {"nvidia.com/gpu": "4", "rdma/ib": "0"}  # quota is explicit zero, never unlimited
    assert pool_flavor(v, H100).to_contract()["budget"] == {"nvidia.com/gpu": "8", "rdma/ib": "8"}
    assert v.covered_resources == [GPU, "rdma/ib"]


def test_flavors_and_excluded_are_sorted_and_one_per_class():
    v = auto(node("z", gpu_class="h100"), node("b", gpu_class="a100"), node("y", gpu_class="h100", ready="False"),
             node("x", gpu_class="h100", ready="False"))
    assert [f.name for f in v.flavors] == [A100, H100]
    assert [e.node for e in pool_flavor(v, H100).excluded] == ["x", "y"]


def test_a_class_with_only_excluded_nodes_is_listed_but_budgets_nothing():
    v = auto(node("gpu-1"), node("old-1", gpu_class="a100", ready="False"))
    a = pool_flavor(v, A100)
    assert (a.nodes, a.budget, a.disappeared) == (0, {}, False)
    assert [e.reason for e in a.excluded] == ["NotReady"]
