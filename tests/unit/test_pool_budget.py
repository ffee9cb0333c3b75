"""Root budget, workspace queues, reservations, headroom, shrink, zeroing (docs/rules.md#pool-budget)."""

from factories import (
    GPU,
    H100,
    H200,
    MANAGED,
    TEAM_COHORT,
    cohort,
    healthy_pool,
    node,
    only,
    pool_cq,
    pool_flavor,
    pool_of,
    pool_tau_cluster,
    pool_workspace,
    q,
    replace,
    root_cohort,
    rules,
    team,
    team_cq,
    without,
)

from taudash.engine.rules.base import Severity


def test_healthy_pool_is_valid_established_and_quiet():
    v, f = pool_of(healthy_pool())
    assert ((v.mode, v.team, v.cohort, v.valid, v.established, v.zeroed)
            == ("Automatic", "research", TEAM_COHORT, True, True, False))
    assert f == [] and v.conflicts == []
    h = pool_flavor(v, H100).to_contract()
    assert h["inventory"] == h["budget"] == h["observedBudget"] == {GPU: "16"}
    assert h["reserved"] == {GPU: "10"}  # 6 + 4
    assert h["used"] == {GPU: "8"}  # 6 + 2
    assert h["headroom"] == {GPU: "6"}
    assert h["disappeared"] is False
    assert [(x.cluster_queue, x.workspace) for x in v.queues] == [("tau-ws-eval", "eval"), ("tau-ws-train", "train")]
    assert v.queues[1].to_contract()["reserved"] == {H100: {GPU: "6"}}


def test_observed_budget_differing_is_drift_and_headroom_follows_the_live_cohort():
    v, f = pool_of(replace(healthy_pool(), root_cohort({H100: {GPU: "24"}})))
    d = only(f, "POOL-BUDGET-DRIFT")
    assert d.severity is Severity.WARNING and (d.object.kind, d.object.name) == ("Cohort", TEAM_COHORT)
    assert f"{H100} {GPU}: observed 24, expected 16" in d.message
    h = pool_flavor(v, H100)
    assert h.budget == {GPU: q("16")} and h.observed_budget == {GPU: q("24")}
    assert h.headroom == {GPU: q("14")}  # Kueue admits against what the Cohort holds now
    assert v.valid is True  # drift is not a validation conflict


def test_missing_root_cohort_is_drift_and_headroom_uses_the_expected_budget():
    v, f = pool_of(without(healthy_pool(), "Cohort", TEAM_COHORT))
    assert "does not exist" in only(f, "POOL-BUDGET-DRIFT").message
    assert (v.valid, v.established) == (True, False)
    assert pool_flavor(v, H100).headroom == {GPU: q("6")}  # 16 expected - 10 reserved
    assert pool_flavor(v, H100).observed_budget == {}


def test_cohort_missing_a_covered_resource_or_with_a_parent_or_extra_flavor_is_drift():
    objs = replace(healthy_pool(), node("gpu-1", alloc={GPU: "8", "rdma/ib": "4"}))
    objs = replace(objs, cohort(TEAM_COHORT, flavors={H100: {GPU: "16"}, "cpu-flavor": {"cpu": "10"}}, parent="org",
                                labels={**MANAGED, "tau.azure.com/team": "research"}))
    _, f = pool_of(objs)
    msg = only(f, "POOL-BUDGET-DRIFT").message
    assert f"{H100} rdma/ib missing (expected 4)" in msg
    assert "has parent org" in msg
    assert "cpu-flavor cpu=10 is not part of the pool" in msg


def test_team_status_cohort_names_the_root():
    objs = replace(healthy_pool(), team(cohort="research-root"), root_cohort(name="research-root"),
                   team_cq("train", cohort="research-root"), team_cq("eval", cohort="research-root"))
    objs = without(objs, "Cohort", TEAM_COHORT)
    v, f = pool_of(objs)
    assert (v.cohort, v.established, v.valid) == ("research-root", True, True)
    assert f == []


def test_queue_status_names_the_workspace_queue():
    objs = replace(without(healthy_pool(), "ClusterQueue", "tau-ws-train"),
                   pool_workspace("train", cq="research-train"),
                   team_cq("train") | {"metadata": {"name": "research-train", "labels": MANAGED}})
    v, f = pool_of(objs)
    assert [x.cluster_queue for x in v.queues] == ["research-train", "tau-ws-eval"]
    assert f == []


# --- workspace queue shape ---------------------------------------------------------------

def queue_drift(*replacements, base=None):
    _, f = pool_of(replace(base or healthy_pool(), *replacements))
    return [x for x in f if x.rule == "POOL-QUEUE-DRIFT"]


def test_queue_with_nonzero_nominal_is_drift():
    (d,) = queue_drift(team_cq("train", flavors={H100: {GPU: "4"}}))
    assert d.object.name == "tau-ws-train" and d.severity is Severity.WARNING
    assert f"nominal {H100} {GPU}=4 (expected 0)" in d.message


def test_queue_with_a_borrowing_limit_is_drift():
    (d,) = queue_drift(team_cq("train", limits={(H100, GPU): {"borrowingLimit": "2"}}))
    assert f"borrowingLimit {H100} {GPU}=2" in d.message


def test_queue_in_another_cohort_is_drift():
    (d,) = queue_drift(team_cq("eval", cohort="elsewhere"))
    assert "cohort elsewhere instead of tau-team-research" in d.message


def test_queue_without_an_entry_for_a_covered_resource_cannot_borrow_it():
    base = replace(healthy_pool(), node("gpu-1", alloc={GPU: "8", "rdma/ib": "4"}),
                   root_cohort({H100: {GPU: "16", "rdma/ib": "4"}}),
                   team_cq("eval", flavors={H100: {GPU: "0", "rdma/ib": "0"}}))
    (d,) = queue_drift(base=base)
    assert d.object.name == "tau-ws-train" and f"no quota entry for {H100} rdma/ib" in d.message


def test_missing_queue_is_drift_unless_the_workspace_is_being_deleted():
    base = without(healthy_pool(), "ClusterQueue", "tau-ws-eval")
    (d,) = queue_drift(base=base)
    assert d.object.name == "tau-ws-eval" and "does not exist" in d.message
    v, f = pool_of(replace(base, pool_workspace("eval", deleting=True)))
    assert "POOL-QUEUE-DRIFT" not in rules(f)
    assert next(x for x in v.queues if x.workspace == "eval").missing is True


def test_unmanaged_workspace_queue_is_drift():
    (d,) = queue_drift(pool_cq("tau-ws-train", cohort=TEAM_COHORT, flavors={H100: {GPU: "0"}}))
    assert "not managed by tau-core-controller" in d.message


def test_a_lending_limit_and_admission_checks_are_not_drift():
    assert queue_drift(team_cq("train", limits={(H100, GPU): {"lendingLimit": "0"}})) == []


def test_foreign_queue_in_the_root_cohort_is_flagged():
    (d,) = queue_drift(pool_cq("stranger", cohort=TEAM_COHORT, flavors={H100: {GPU: "0"}}, labels=MANAGED,
                          reservation={H100: {GPU: "3"}}))
    assert d.object.name == "stranger" and "not one of its workspace queues" in d.message
    assert "consume the pool but are not counted here" in d.message


# --- shrink, disappeared flavors -----------------------------------------------------------

def test_shrink_below_reservations_gives_negative_headroom_and_no_conflict():
    # gpu-2 went NotReady; the controller already lowered the root budget to the new inventory.
    objs = replace(healthy_pool("10", "4"), node("gpu-2", ready="False"), root_cohort({H100: {GPU: "8"}}))
    v, f = pool_of(objs)
    assert (v.valid, v.conflicts, v.zeroed) == (True, [], False)
    h = pool_flavor(v, H100)
    assert h.budget == h.observed_budget == {GPU: q("8")}
    assert h.headroom == {GPU: q("-6")}
    o = only(f, "POOL-OVERCOMMITTED")
    assert o.severity is Severity.WARNING and (o.object.kind, o.object.name) == ("ResourceFlavor", H100)
    assert "reserved 14 > budget 8" in o.message and "gpu-2 NotReady" in o.message
    assert "nothing is evicted" in o.message and "new admissions wait" in o.message
    assert rules(f) == ["POOL-OVERCOMMITTED"]


def test_headroom_exactly_zero_is_not_overcommitted():
    _, f = pool_of(healthy_pool("12", "4"))
    assert f == []


def test_a_flavor_whose_nodes_vanished_stays_with_zero_budget():
    # every h200 node is gone; the Cohort and the queues keep the h200 entries at zero
    objs = replace(healthy_pool(),
                   team_cq("train", flavors={H100: {GPU: "0"}, H200: {GPU: "0"}}, reservation={H100: {GPU: "6"}}),
                   team_cq("eval", flavors={H100: {GPU: "0"}, H200: {GPU: "0"}},
                           reservation={H100: {GPU: "4"}, H200: {GPU: "3"}}),
                   root_cohort({H100: {GPU: "16"}, H200: {GPU: "0"}}))
    v, f = pool_of(objs)
    g = pool_flavor(v, H200)
    assert (g.disappeared, g.nodes, g.gpu_class, g.inventory) == (True, 0, "h200", {})
    assert g.to_contract()["budget"] == {GPU: "0"}
    assert g.reserved == {GPU: q("3")} and g.headroom == {GPU: q("-3")}
    assert v.valid is True
    assert "every node of this flavor is gone" in only(f, "POOL-OVERCOMMITTED").message
    assert "POOL-BUDGET-DRIFT" not in rules(f)  # the Cohort keeps the zero entry, as expected


def test_a_vanished_flavor_still_budgeted_by_the_cohort_is_drift():
    objs = replace(healthy_pool(), root_cohort({H100: {GPU: "16"}, H200: {GPU: "8"}}))
    v, f = pool_of(objs)
    assert pool_flavor(v, H200).disappeared is True
    assert f"{H200} {GPU}: observed 8, expected 0" in only(f, "POOL-BUDGET-DRIFT").message


# --- zeroing ---------------------------------------------------------------------------------

def legacy():
    return pool_cq("jobqueue", labels={"tau.azure.com/discover-gpu-flavors": "true"})


def test_an_invalid_established_pool_is_zeroed():
    v, f = pool_of(healthy_pool() + [legacy()])
    assert (v.valid, v.established, v.zeroed) == (False, True, True)
    h = pool_flavor(v, H100)
    assert h.to_contract()["budget"] == {GPU: "0"}
    assert h.inventory == {GPU: q("16")}  # the inventory is still what the nodes offer
    z = only(f, "POOL-ZEROED")
    assert z.severity is Severity.CRITICAL and (z.object.kind, z.object.name) == ("Cohort", TEAM_COHORT)
    assert "LegacyDiscovery ClusterQueue jobqueue" in z.message
    # the live Cohort still holds 16: that is drift, and overcommit is not reported on a zeroed pool
    assert rules(f) == ["POOL-BUDGET-DRIFT", "POOL-CONFLICT", "POOL-ZEROED"]


def test_zeroed_budget_applied_by_the_controller_is_not_drift():
    v, f = pool_of(replace(healthy_pool(), root_cohort({H100: {GPU: "0"}}), legacy()))
    assert v.zeroed and rules(f) == ["POOL-CONFLICT", "POOL-ZEROED"]
    assert pool_flavor(v, H100).headroom == {GPU: q("-10")}


def test_an_invalid_pool_not_yet_established_expects_no_budget():
    v, f = pool_of(without(healthy_pool(), "Cohort", TEAM_COHORT) + [legacy()])
    assert (v.valid, v.established, v.zeroed) == (False, False, False)
    assert pool_flavor(v, H100).budget == {}
    n = only(f, "POOL-NOT-ESTABLISHED")
    assert n.severity is Severity.CRITICAL and "2 workspace queue(s)" in n.message
    assert "POOL-ZEROED" not in rules(f) and "POOL-BUDGET-DRIFT" not in rules(f)


def test_not_established_without_workspaces_is_a_warning():
    _, f = pool_of([pool_tau_cluster(), team(), node("gpu-1"), legacy()])
    assert only(f, "POOL-NOT-ESTABLISHED").severity is Severity.WARNING


def test_a_root_cohort_without_ownership_labels_is_not_established():
    objs = replace(healthy_pool(), cohort(TEAM_COHORT, flavors={H100: {GPU: "16"}}), legacy())
    v, f = pool_of(objs)
    assert (v.established, v.zeroed) == (False, False)
    assert "POOL-NOT-ESTABLISHED" in rules(f)
    assert "not labelled app.kubernetes.io/managed-by=tau-core-controller" in only(f, "POOL-BUDGET-DRIFT").message


def test_a_cohort_of_another_team_does_not_establish_the_pool():
    v, _ = pool_of(replace(healthy_pool(), root_cohort(team="vision"), legacy()))
    assert (v.established, v.zeroed) == (False, False)
