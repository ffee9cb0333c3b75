"""Explicit and None modes, leaving the automatic mode (POOL-RETAINED), failing closed
(ARCHITECTURE.md (kinds: engine/model/kinds.py), docs/rules.md#pool-leaving)."""

import pytest
from factories import (
    GPU,
    H100,
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
)

from taudash.engine.rules.base import Severity
from taudash.engine.store import AccessState

# --- None and Explicit --------------------------------------------------------------------------


def test_no_tau_cluster_means_mode_none_and_no_findings():
    v, f = pool_of([node("gpu-1"), pool_workspace("train"), pool_cq("tau-ws-train", cohort=TEAM_COHORT)])
    assert (v.mode, v.valid, v.flavors, v.queues) == ("None", None, [], [])
    assert f == []


def test_tau_cluster_without_teams_or_workspaces_is_mode_none():
    v, f = pool_of([pool_tau_cluster(team=None), node("gpu-1")])
    assert v.mode == "None" and f == []


def explicit_cluster():
    """Team vision declares 16 h100 GPUs; workspace train is guaranteed 4 (borrow 2), eval is guaranteed 6."""
    vision = "tau-team-vision"
    labels = {**MANAGED, "tau.azure.com/team": "vision"}
    return [
        pool_tau_cluster(team=None),
        node("gpu-1"),
        node("gpu-2"),
        team("vision", quota={(H100, GPU): "16"}, cohort=vision),
        pool_workspace("train", team="vision", quota={(H100, GPU): "4"}, cq="tau-ws-train"),
        pool_workspace("eval", team="vision", quota={(H100, GPU): "6"}),
        cohort(vision, flavors={H100: {GPU: "6"}}, labels=labels),
        team_cq("train", team="vision", cohort=vision, flavors={H100: {GPU: "4"}},
                limits={(H100, GPU): {"borrowingLimit": "2", "lendingLimit": "0"}},
                reservation={H100: {GPU: "6"}}, usage={H100: {GPU: "5"}}),
        team_cq("eval", team="vision", cohort=vision, flavors={H100: {GPU: "6"}}, reservation={H100: {GPU: "3"}}),
    ]


def test_explicit_mode_shows_declared_quota_cohorts_queues_and_borrowing():
    v, f = pool_of(explicit_cluster())
    assert (v.mode, v.team, v.cohort, v.valid, v.established, v.zeroed) == ("Explicit", None, None, None, False, False)
    assert f == []
    h = pool_flavor(v, H100).to_contract()
    assert h["inventory"] == {GPU: "16"} and h["nodes"] == 2
    assert h["budget"] == {GPU: "16"}  # declared team quota (workspace guarantees are carved out of it)
    assert h["observedBudget"] == {GPU: "16"}  # Cohort 6 + member nominal 4 + 6
    assert h["reserved"] == {GPU: "9"} and h["used"] == {GPU: "5"} and h["headroom"] == {GPU: "7"}
    train = next(x for x in v.queues if x.cluster_queue == "tau-ws-train").to_contract()
    assert train["workspace"] == "train" and train["team"] == "vision" and train["cohort"] == "tau-team-vision"
    assert train["nominal"] == {H100: {GPU: "4"}} and train["borrowingLimit"] == {H100: {GPU: "2"}}
    assert train["borrowed"] == {H100: {GPU: "2"}}  # 6 reserved - 4 nominal
    (t,) = v.teams
    assert ((t.name, t.cohort, t.cohort_exists, t.managed, t.quota_declared)
            == ("vision", "tau-team-vision", True, True, True))
    assert t.workspaces == ["eval", "train"] and t.queues == ["tau-ws-eval", "tau-ws-train"]
    assert t.to_contract()["cohortNominal"] == {H100: {GPU: "6"}}
    assert t.to_contract()["memberNominal"] == {H100: {GPU: "10"}}
    assert t.to_contract()["borrowed"] == {H100: {GPU: "2"}}


def test_explicit_mode_never_runs_the_automatic_checks():
    objs = explicit_cluster() + [pool_cq("jobqueue", labels={"tau.azure.com/discover-gpu-flavors": "true"})]
    v, f = pool_of(objs)
    assert v.conflicts == [] and "POOL-CONFLICT" not in rules(f)


# --- POOL-RETAINED ----------------------------------------------------------------------------------


def leftover(team_obj, cohort_flavors=None, labels=None):
    """capacityTeamRef was removed; the old automatic Cohort of research is still there."""
    return [
        pool_tau_cluster(team=None),
        node("gpu-1"),
        *([team_obj] if team_obj else []),
        cohort(TEAM_COHORT, flavors=cohort_flavors or {H100: {GPU: "16"}},
               labels=labels if labels is not None else {**MANAGED, "tau.azure.com/team": "research"}),
    ]


def test_a_retained_automatic_budget_blocks_reallocation():
    v, f = pool_of(leftover(team()))
    r = only(f, "POOL-RETAINED")
    assert r.severity is Severity.WARNING and (r.object.kind, r.object.name) == ("Cohort", TEAM_COHORT)
    assert f"{H100} {GPU}=16" in r.message and "tau-core-controller" in r.hint
    assert v.mode == "Explicit"


def test_retained_also_when_the_team_is_gone():
    _, f = pool_of(leftover(None) + [pool_workspace("x", team=None)])
    assert "no TauTeam research" in only(f, "POOL-RETAINED").message


@pytest.mark.parametrize(
    "objs",
    [
        leftover(team(quota={(H100, GPU): "16"})),  # the team now declares quota: explicit allocation
        leftover(team(), labels={}),  # not the controller's Cohort
        leftover(team(), labels=MANAGED),  # managed but no team label
        leftover(team(), cohort_flavors={H100: {GPU: "0"}}),  # nothing held
        leftover(team(), cohort_flavors={"cpu-flavor": {"cpu": "64"}}),  # not a pool flavor
    ],
    ids=["team-has-quota", "unmanaged", "no-team-label", "zero", "not-taugrid-gpu"],
)
def test_not_retained(objs):
    _, f = pool_of(objs)
    assert "POOL-RETAINED" not in rules(f)


def test_retained_is_not_reported_while_the_mode_is_automatic():
    _, f = pool_of(healthy_pool())
    assert "POOL-RETAINED" not in rules(f)


# --- fail closed ------------------------------------------------------------------------------------

NEEDED = [
    ("Node", "nodes"),
    ("ClusterQueue", "clusterqueues.kueue.x-k8s.io"),
    ("Cohort", "cohorts.kueue.x-k8s.io"),
    ("ResourceFlavor", "resourceflavors.kueue.x-k8s.io"),
    ("TauTeam", "teams.tau.azure.com"),
    ("TauWorkspace", "workspaces.tau.azure.com"),
]


@pytest.mark.parametrize(("kind", "resource"), NEEDED)
@pytest.mark.parametrize("state", [AccessState.FORBIDDEN, AccessState.ERROR, AccessState.SYNCING])
def test_an_unreadable_kind_makes_the_pool_unknown(kind, resource, state):
    v, f = pool_of(healthy_pool(), access={kind: state})
    assert v.valid is None and v.mode == "Automatic"
    assert v.flavors == [] and v.queues == []  # unknown is never shown as numbers
    assert [(u.resource, u.reason) for u in v.unknown] == [(resource, state.value)]
    u = only(f, "POOL-UNKNOWN")
    assert u.severity is Severity.CRITICAL and resource in u.message and "unknown" in u.message
    assert rules(f) == ["POOL-UNKNOWN"]


def test_a_conflict_proven_from_readable_kinds_makes_the_pool_invalid_even_when_nodes_are_unreadable():
    objs = healthy_pool() + [pool_cq("jobqueue", labels={"tau.azure.com/discover-gpu-flavors": "true"})]
    v, f = pool_of(objs, access={"Node": AccessState.FORBIDDEN})
    assert (v.valid, v.established, v.zeroed) == (False, True, True)
    assert [c.code for c in v.conflicts] == ["LegacyDiscovery"]
    assert rules(f) == ["POOL-CONFLICT", "POOL-UNKNOWN", "POOL-ZEROED"]


def test_pool_flavors_known_from_references_still_catch_overlaps_without_nodes():
    # Nodes unreadable: h100 is still a pool flavor because the root Cohort budgets it.
    v, _ = pool_of(healthy_pool() + [cohort("platform", flavors={H100: {GPU: "8"}})],
                   access={"Node": AccessState.FORBIDDEN})
    assert [(c.code, c.name) for c in v.conflicts] == [("OverlappingBudget", "platform")]


def test_without_the_team_the_root_is_unknown_and_foreign_cohorts_are_not_judged():
    objs = healthy_pool() + [cohort("platform", flavors={H100: {GPU: "8"}})]
    v, f = pool_of(objs, access={"TauTeam": AccessState.FORBIDDEN})
    assert v.valid is None and v.conflicts == [] and v.established is False
    assert "POOL-NOT-ESTABLISHED" not in rules(f)


def test_an_unreadable_tau_cluster_makes_the_capacity_mode_unknown():
    v, f = pool_of([node("gpu-1")], access={"TauCluster": AccessState.FORBIDDEN})
    assert v.valid is None and v.flavors == []
    u = only(f, "POOL-UNKNOWN")
    assert u.severity is Severity.CRITICAL and "clusters.tau.azure.com" in u.message


def test_stale_tau_cluster_with_a_team_ref_reports_the_automatic_pool_unknown():
    v, f = pool_of(healthy_pool(), access={"TauCluster": AccessState.ERROR})
    assert (v.mode, v.valid, v.flavors) == ("Automatic", None, [])
    assert "clusters.tau.azure.com" in only(f, "POOL-UNKNOWN").message


def test_explicit_mode_with_unreadable_queues_warns_and_hides_numbers():
    v, f = pool_of(explicit_cluster(), access={"ClusterQueue": AccessState.FORBIDDEN})
    assert (v.mode, v.valid, v.flavors, v.queues) == ("Explicit", None, [], [])
    assert only(f, "POOL-UNKNOWN").severity is Severity.WARNING


def test_explicit_mode_does_not_need_resource_flavors():
    v, f = pool_of(explicit_cluster(), access={"ResourceFlavor": AccessState.FORBIDDEN})
    assert f == [] and pool_flavor(v, H100).budget == {GPU: q("16")}


def test_workloads_or_other_kinds_unreadable_do_not_matter():
    v, f = pool_of(replace(healthy_pool(), root_cohort()),
                   access={"Workload": AccessState.FORBIDDEN, "Job": AccessState.ERROR})
    assert v.valid is True and f == []
