"""The Queues view's cohort figures come from the quota tree (engine/quota.py): quota rolls up from
child Cohorts to parents, lendingLimits keep quota private, ClusterQueues show what they could still
reserve. On flat cohorts without lending limits the figures equal the plain sums (the demo)."""

from __future__ import annotations

from datetime import UTC, datetime

from factories import cluster_queue, cohort
from tools.paths import REPO

from taudash.engine.incremental import derive
from taudash.engine.model import ZERO, Quantity
from taudash.engine.sources.snapshot import load_snapshot, store_from_objects

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
GPU = "nvidia.com/gpu"
F = "gpu"
DEMO = REPO / "snapshots" / "demo.yaml"


def q(s: str) -> Quantity:
    return Quantity.parse(s)


def view_of(*objs):
    return derive(store_from_objects(list(objs)), NOW)


def res(view, cohort_name):
    (c,) = [c for c in view.cohorts if c.name == cohort_name]
    (r,) = c.flavors[0].resources
    return c, r


def cq_res(view, name):
    (v,) = [x for x in view.cluster_queues if x.name == name]
    (r,) = v.flavors[0].resources
    return r


def test_quota_rolls_up_from_child_cohorts_to_the_parent():
    v = view_of(
        cohort("org", flavors={F: {GPU: "2"}}),
        cohort("team-a", parent="org", flavors={F: {GPU: "4"}}),
        cohort("team-b", parent="org"),
        cluster_queue("a1", cohort="team-a", flavors={F: {GPU: "3"}}, reservation={F: {GPU: "5"}}),
        cluster_queue("b1", cohort="team-b", flavors={F: {GPU: "1"}}, reservation={F: {GPU: "1"}}),
    )
    org, r = res(v, "org")
    assert org.children == ["team-a", "team-b"] and org.members == [] and org.depth == 0 and org.root is None
    # 2 own + team-a (4 + 3) + team-b (0 + 1)
    assert (r.nominal, r.subtree_quota, r.member_nominal) == (q("2"), q("10"), q("8"))
    assert (r.reserved, r.available) == (q("6"), q("4"))  # every queue of the subtree
    team_a, ra = res(v, "team-a")
    assert team_a.parent == "org" and team_a.root == "org" and team_a.depth == 1
    assert (ra.subtree_quota, ra.reserved, ra.borrowed) == (q("7"), q("5"), q("2"))  # a1 takes 2 beyond its 3
    # a1 could still take what org has left: 10 − 6
    a1 = cq_res(v, "a1")
    assert (a1.borrowed, a1.available, a1.potential_available) == (q("2"), q("4"), q("10"))


def test_lending_limit_keeps_quota_out_of_the_cohort():
    v = view_of(
        cohort("c"),
        cluster_queue("private", cohort="c", flavors={F: {GPU: "4"}}, limits={(F, GPU): {"lendingLimit": "1"}}),
        cluster_queue("open", cohort="c", flavors={F: {GPU: "2"}}, reservation={F: {GPU: "3"}}),
    )
    _, r = res(v, "c")
    assert (r.subtree_quota, r.member_nominal) == (q("3"), q("3"))  # 1 of private's 4 is lent, not 6
    assert r.usage == q("3") and r.available == q("0")
    op = cq_res(v, "open")
    assert (op.borrowed, op.available) == (q("1"), q("0"))
    pr = cq_res(v, "private")
    assert pr.available == q("3")  # its 3 private GPUs; the lent one is taken


def test_borrowing_limit_caps_available():
    v = view_of(
        cohort("c", flavors={F: {GPU: "10"}}),
        cluster_queue("x", cohort="c", flavors={F: {GPU: "1"}}, limits={(F, GPU): {"borrowingLimit": "2"}}),
    )
    x = cq_res(v, "x")
    assert (x.available, x.potential_available) == (q("3"), q("3"))


def test_demo_cohort_figures_equal_the_plain_sums():
    """Flat cohorts, no lending limits: the tree changes no figure the plain sums gave."""
    view = derive(load_snapshot(DEMO).store, NOW)
    queues = {x.name: x for x in view.cluster_queues}
    assert view.cohorts
    for c in view.cohorts:
        assert c.children == [] and c.depth == 0
        for fl in c.flavors:
            for r in fl.resources:
                members = [rr for m in c.members for f2 in queues[m].flavors if f2.name == fl.name
                           for rr in f2.resources if rr.name == r.name]
                assert r.member_nominal == sum((m.nominal for m in members), ZERO)
                assert r.reserved == sum((m.reserved for m in members), ZERO)
                assert r.borrowed == sum(((m.reserved - m.nominal).max0() for m in members), ZERO)
    for x in view.cluster_queues:
        for fl in x.flavors:
            for r in fl.resources:
                assert r.borrowed == ((r.reserved - r.nominal).max0() if x.cohort else ZERO)
                assert r.available is not None and r.potential_available is not None
