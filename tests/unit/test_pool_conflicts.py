"""Validation conflicts (docs/rules.md#pool-validation): each code positive and negative."""

from factories import (
    GPU,
    H100,
    MANAGED,
    SYS,
    TEAM_COHORT,
    cohort,
    healthy_pool,
    node,
    pool_cq,
    pool_of,
    pool_workspace,
    replace,
    resource_flavor,
    team,
    team_cq,
    without,
)

from taudash.engine.rules.base import Severity


def conflicts(objs):
    v, f = pool_of(objs)
    return v, [(c.code, c.kind, c.name) for c in v.conflicts], [x for x in f if x.rule == "POOL-CONFLICT"]


def assert_clean(objs):
    v, got, _ = conflicts(objs)
    assert got == [] and v.valid is True


# --- LegacyDiscovery -------------------------------------------------------------------------

def test_legacy_discovery_label_is_a_conflict():
    v, got, f = conflicts(healthy_pool() + [pool_cq("jobqueue", labels={"tau.azure.com/discover-gpu-flavors": "true"})])
    assert got == [("LegacyDiscovery", "ClusterQueue", "jobqueue")] and v.valid is False
    (x,) = f
    assert x.severity is Severity.CRITICAL and (x.object.kind, x.object.name) == ("ClusterQueue", "jobqueue")
    assert "owner of ClusterQueue jobqueue" in x.hint


def test_legacy_discovery_label_not_true_is_fine():
    assert_clean(healthy_pool() + [pool_cq("jobqueue", labels={"tau.azure.com/discover-gpu-flavors": "false"})])


# --- OverlappingFlavor ------------------------------------------------------------------------

def test_a_flavor_with_empty_node_labels_selects_every_pool_node():
    objs = (healthy_pool()
            + [resource_flavor("default-flavor"), pool_cq("batch", flavors={"default-flavor": {GPU: "4"}})])
    _, got, f = conflicts(objs)
    assert ("OverlappingFlavor", "ResourceFlavor", "default-flavor") in got
    x = next(i for i in f if i.object.name == "default-flavor")
    assert "selects 2 counted pool node(s) (gpu-1, gpu-2)" in x.message and "ClusterQueue batch" in x.message
    assert "owners of ClusterQueue batch remove their quota on default-flavor" in x.hint
    assert "narrows spec.nodeLabels" in x.hint and "never divides the pool" in x.hint


def test_a_differently_named_flavor_matching_pool_nodes_through_a_cohort():
    objs = healthy_pool() + [resource_flavor("h100-legacy", {"tau.azure.com/gpu-class": "h100"}),
                        cohort("platform", flavors={"h100-legacy": {GPU: "8"}})]
    _, got, _ = conflicts(objs)
    assert got == [("OverlappingFlavor", "ResourceFlavor", "h100-legacy")]


def test_overlapping_flavor_needs_a_nonzero_quota():
    assert_clean(healthy_pool()
                 + [resource_flavor("default-flavor"), pool_cq("batch", flavors={"default-flavor": {GPU: "0"}})])
    assert_clean(healthy_pool() + [resource_flavor("default-flavor")])


def test_overlapping_flavor_needs_a_counted_pool_node():
    # selects only an excluded node and a non-candidate node
    objs = healthy_pool() + [node("a10-1", gpu_class="a10", ready="False"),
                             node("cpu-1", gpu_class=None, labels={"sku": "cpu"}),
                        resource_flavor("a10", {"tau.azure.com/gpu-class": "a10"}),
                        resource_flavor("cpu", {"sku": "cpu"}),
                        pool_cq("batch", flavors={"a10": {GPU: "4"}, "cpu": {"cpu": "32"}})]
    assert_clean(objs)


def test_a_taugrid_named_flavor_outside_the_pool_can_still_overlap():
    # "named like a pool flavor" means one of this pool's flavors, not any taugrid-gpu-* name
    objs = healthy_pool() + [resource_flavor("taugrid-gpu-any", {"kubernetes.io/os": "linux"}),
                        pool_cq("batch", labels=MANAGED, flavors={"taugrid-gpu-any": {GPU: "8"}})]
    _, got, _ = conflicts(objs)
    assert got == [("OverlappingFlavor", "ResourceFlavor", "taugrid-gpu-any")]


def test_the_pool_flavor_itself_is_not_an_overlap():
    assert_clean(replace(healthy_pool(), resource_flavor(H100, {})))


# --- OverlappingBudget ---------------------------------------------------------------------------

def test_another_cohort_budgeting_a_pool_flavor_is_a_conflict():
    _, got, f = conflicts(healthy_pool() + [cohort("platform", flavors={H100: {GPU: "8"}})])
    assert got == [("OverlappingBudget", "Cohort", "platform")]
    assert "owner of Cohort platform removes its quota" in f[0].hint


def test_a_retained_cohort_of_another_team_names_that_team():
    objs = (healthy_pool()
            + [cohort("tau-team-vision", flavors={H100: {GPU: "8"}},
                      labels={**MANAGED, "tau.azure.com/team": "vision"})])
    _, got, f = conflicts(objs)
    assert got == [("OverlappingBudget", "Cohort", "tau-team-vision")]
    assert "retained budget of team vision" in f[0].message
    assert "team vision" in f[0].hint and "workspaces" in f[0].hint


def test_a_non_team_queue_budgeting_a_pool_flavor_is_a_conflict():
    _, got, _ = conflicts(healthy_pool() + [pool_cq("batch", labels=MANAGED, flavors={H100: {GPU: "2"}})])
    assert got == [("OverlappingBudget", "ClusterQueue", "batch")]


def test_budgets_off_the_pool_or_zero_are_fine():
    assert_clean(healthy_pool() + [cohort("platform", flavors={"cpu": {"cpu": "64"}, H100: {GPU: "0"}}),
                              pool_cq("batch", labels=MANAGED, flavors={"cpu": {"cpu": "8"}})])


def test_a_team_queue_with_nominal_quota_is_queue_drift_not_overlap():
    v, got, _ = conflicts(replace(healthy_pool(), team_cq("train", flavors={H100: {GPU: "4"}})))
    assert got == [] and v.valid is True


# --- ExternalReservation -----------------------------------------------------------------------

def test_an_unmanaged_queue_holding_pool_reservations_is_a_conflict():
    _, got, f = conflicts(healthy_pool() + [pool_cq("batch", reservation={H100: {GPU: "2"}})])
    assert got == [("ExternalReservation", "ClusterQueue", "batch")]
    assert f"{H100} {GPU}=2" in f[0].message and "never adopts external queues" in f[0].hint


def test_reservations_that_are_managed_zero_or_off_the_pool_are_fine():
    assert_clean(healthy_pool() + [pool_cq("batch", reservation={H100: {GPU: "0"}, "cpu": {"cpu": "4"}}),
                              pool_cq("other-team", labels=MANAGED, reservation={H100: {GPU: "2"}})])


# --- TeamMissing ----------------------------------------------------------------------------------

def test_missing_team_is_a_conflict():
    v, got, f = conflicts(without(healthy_pool(), "TauTeam", "research"))
    assert got == [("TeamMissing", "TauTeam", "research")]
    assert f[0].object.namespace == SYS and "creates TauTeam research" in f[0].hint


def test_a_team_outside_the_system_namespace_does_not_count():
    _, got, _ = conflicts(replace(without(healthy_pool(), "TauTeam", "research"), team(ns="default")))
    assert got == [("TeamMissing", "TauTeam", "research")]


# --- QuotaDeclared ---------------------------------------------------------------------------------

def test_team_quota_is_a_conflict():
    _, got, _ = conflicts(replace(healthy_pool(), team(quota={(H100, GPU): "16"})))
    assert got == [("QuotaDeclared", "TauTeam", "research")]


def test_workspace_quota_is_a_conflict_only_for_the_capacity_team():
    _, got, f = conflicts(replace(healthy_pool(), pool_workspace("eval", quota={(H100, GPU): "4"})))
    assert got == [("QuotaDeclared", "TauWorkspace", "eval")]
    assert "removes spec.quota" in f[0].hint
    assert_clean(healthy_pool() + [pool_workspace("other", team="vision", quota={("cpu", "cpu"): "4"})])


# --- together ----------------------------------------------------------------------------------------

def test_conflicts_are_sorted_by_name_and_every_hint_names_an_owner():
    objs = replace(healthy_pool(), team(quota={(H100, GPU): "16"}), pool_workspace("eval", quota={(H100, GPU): "4"}))
    objs += [pool_cq("jobqueue", labels={"tau.azure.com/discover-gpu-flavors": "true"}),
             cohort("aaa", flavors={H100: {GPU: "1"}})]
    v, got, f = conflicts(objs)
    assert [n for _, _, n in got] == ["aaa", "eval", "jobqueue", "research"]
    assert len(f) == 4 and all("owner" in x.hint for x in f)
    assert not any("divide" in x.hint and "never" not in x.hint for x in f)
    assert v.zeroed is True and v.cohort == TEAM_COHORT
