"""engine/quota.py: Kueue's quota arithmetic over the ClusterQueue/Cohort tree (Kueue's resource_node.go)."""

from factories import cluster_queue, cohort, q

from taudash.engine.model import ClusterQueue, Cohort
from taudash.engine.quota import (
    add_usage,
    available,
    borrowed,
    build_tree,
    potential_available,
    remove_usage,
)

F = "h100"
GPU = "nvidia.com/gpu"
FR = (F, GPU)


def tree(cqs, cohorts=(), usage=None):
    return build_tree([ClusterQueue.model_validate(c) for c in cqs], [Cohort.model_validate(c) for c in cohorts],
                      {k: {FR: q(v)} for k, v in (usage or {}).items()})


def test_docs_example_borrowing_and_its_limit():
    # Kueue's docs: team-a 9 + team-b 12 in one cohort; a may use 21 while b is idle, 10 with borrowingLimit 1.
    t = tree([cluster_queue("a", cohort="c", flavors={F: {GPU: "9"}}),
              cluster_queue("b", cohort="c", flavors={F: {GPU: "12"}})])
    a = t.node("a")
    assert (available(a, FR), potential_available(a, FR)) == (q("21"), q("21"))
    limited = tree([cluster_queue("a", cohort="c", flavors={F: {GPU: "9"}}, limits={FR: {"borrowingLimit": "1"}}),
                    cluster_queue("b", cohort="c", flavors={F: {GPU: "12"}})])
    assert (available(limited.node("a"), FR), potential_available(limited.node("a"), FR)) == (q("10"), q("10"))


def test_lending_limit_of_another_member_caps_what_can_be_borrowed():
    t = tree([cluster_queue("a", cohort="c", flavors={F: {GPU: "9"}}),
              cluster_queue("b", cohort="c", flavors={F: {GPU: "12"}}, limits={FR: {"lendingLimit": "1"}})])
    assert available(t.node("a"), FR) == q("10")
    # b keeps 11 to itself: guaranteed even when a uses everything it can reach
    t2 = tree([cluster_queue("a", cohort="c", flavors={F: {GPU: "9"}}),
               cluster_queue("b", cohort="c", flavors={F: {GPU: "12"}}, limits={FR: {"lendingLimit": "1"}})],
              usage={"a": "10"})
    assert available(t2.node("b"), FR) == q("11")
    assert available(t2.node("a"), FR) == q("0")
    assert borrowed(t2.node("a"), FR) == q("1")
    # negative: without the lending limit, b's quota is all lendable
    t3 = tree([cluster_queue("a", cohort="c", flavors={F: {GPU: "9"}}),
               cluster_queue("b", cohort="c", flavors={F: {GPU: "12"}})], usage={"a": "10"})
    assert available(t3.node("b"), FR) == q("11") and available(t3.node("a"), FR) == q("11")


def test_no_cohort_means_only_nominal_and_overadmission_goes_negative():
    t = tree([cluster_queue("solo", flavors={F: {GPU: "4"}})], usage={"solo": "6"})
    n = t.node("solo")
    assert available(n, FR) == q("-2")
    assert potential_available(n, FR) == q("4")
    assert borrowed(n, FR) == q("0")  # shrunk quota, not borrowing


def test_flavor_absent_in_the_queue_is_zero_but_borrowable_if_the_cohort_has_it():
    t = tree([cluster_queue("a", cohort="c", flavors={"other": {GPU: "1"}}),
              cluster_queue("b", cohort="c", flavors={F: {GPU: "5"}})])
    assert available(t.node("a"), FR) == q("5")
    solo = tree([cluster_queue("a", flavors={"other": {GPU: "1"}})])
    assert available(solo.node("a"), FR) == q("0")


def test_hierarchical_cohorts_roll_up_quota_and_usage():
    # root (4 of its own) <- mid (2 of its own) <- a (3), b (1); root <- c (5, uses 5)
    t = tree(
        [cluster_queue("a", cohort="mid", flavors={F: {GPU: "3"}}),
         cluster_queue("b", cohort="mid", flavors={F: {GPU: "1"}}),
         cluster_queue("c", cohort="root", flavors={F: {GPU: "5"}})],
        [cohort("root", flavors={F: {GPU: "4"}}), cohort("mid", parent="root", flavors={F: {GPU: "2"}})],
        usage={"c": "5", "b": "2"},
    )
    assert t.cohorts["mid"].subtree_quota[FR] == q("6")
    assert t.cohorts["root"].subtree_quota[FR] == q("15")
    assert t.cohorts["root"].usage[FR] == q("7")  # c 5 + b 2, all past their (zero) local quota
    assert available(t.node("a"), FR) == q("8")
    assert potential_available(t.node("a"), FR) == q("15")
    # negative: the same queues as flat siblings of a bare cohort lack the cohorts' own 6
    flat = tree([cluster_queue("a", cohort="x", flavors={F: {GPU: "3"}}),
                 cluster_queue("b", cohort="x", flavors={F: {GPU: "1"}}),
                 cluster_queue("c", cohort="x", flavors={F: {GPU: "5"}})], usage={"c": "5", "b": "2"})
    assert available(flat.node("a"), FR) == q("2")


def test_cohort_lending_limit_toward_its_parent():
    t = tree([cluster_queue("a", cohort="mid", flavors={F: {GPU: "4"}}),
              cluster_queue("z", cohort="root", flavors={F: {GPU: "0"}})],
             [cohort("root"), {**cohort("mid", parent="root"), "spec": {
                 "parentName": "root",
                 "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                     {"name": F, "resources": [{"name": GPU, "nominalQuota": "0", "lendingLimit": "1"}]}]}]}}])
    assert available(t.node("z"), FR) == q("1")
    assert available(t.node("a"), FR) == q("4")


def test_implicit_parent_and_cycle():
    t = tree([cluster_queue("a", cohort="child", flavors={F: {GPU: "1"}})], [cohort("child", parent="ghost")])
    assert not t.cohorts["ghost"].explicit and t.node("a").root().name == "ghost"
    cyc = tree([cluster_queue("a", cohort="x", flavors={F: {GPU: "1"}})],
               [cohort("x", parent="y"), cohort("y", parent="x")])
    assert cyc.node("a").in_cycle
    assert not t.node("a").in_cycle


def test_add_and_remove_usage_bubble_through_the_tree_and_snapshot_is_independent():
    t = tree([cluster_queue("a", cohort="c", flavors={F: {GPU: "4"}}, limits={FR: {"lendingLimit": "2"}}),
              cluster_queue("b", cohort="c", flavors={F: {GPU: "2"}})])
    sim = t.snapshot()
    a = sim.node("a")
    add_usage(a, FR, q("3"))  # 2 from a's private part, 1 from the cohort
    assert sim.cohorts["c"].usage.get(FR) == q("1")
    assert available(sim.node("b"), FR) == q("3")
    remove_usage(a, FR, q("3"))
    assert sim.cohorts["c"].usage.get(FR, q("0")) == q("0")
    assert t.node("a").usage.get(FR, q("0")) == q("0")  # the original tree is untouched
