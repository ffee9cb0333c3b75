"""Workload profile readiness and selection (docs/rules.md#profiles): usable-set checks, per-profile
readiness, every selection outcome, and the findings they raise."""

from __future__ import annotations

import copy
import functools
from datetime import UTC, datetime

import factories
import pytest
from factories import PROFILE_CONDITIONS as ORDER
from factories import pool_workspace, rule_context, workload_profile

from taudash.engine.incremental import derive
from taudash.engine.rules.base import Severity
from taudash.engine.rules.profilehash import profile_set_hash
from taudash.engine.rules.profiles import (
    ANN_GENERATION,
    ANN_PROFILE,
    ANN_SET_HASH,
    derive_profiles,
    load_profile_set,
    select_profile,
)
from taudash.engine.sources.snapshot import store_from_objects
from taudash.engine.store import AccessState

GEN = 7
NOW = datetime(2025, 1, 1, tzinfo=UTC)
cond = functools.partial(factories.cond, gen=GEN)


def profile(
    name, teams=(), lanes=(), namespaces=(), target="singleCluster", queue="jobqueue", ready=True, conditions=None
):
    return workload_profile(name, teams=teams, lanes=lanes, namespaces=namespaces, target=target, queue=queue,
                            ready=ready, gen=GEN, conditions=conditions)


def tau_cluster(profiles, gen=GEN, observed=GEN, ready="True", ready_gen=GEN, hash_value=None, name="cluster"):
    ready_cond = cond("WorkloadProfilesReady", ready,
                      "WorkloadProfilesReady" if ready == "True" else "WorkloadProfilesNotReady",
                      "1 of 3 workload profiles are not ready", gen=ready_gen)
    return factories.tau_cluster(profiles, name=name, gen=gen, observed=observed, hash_value=hash_value,
                                 conditions=[ready_cond], declare=True)


def workspace(name, team, namespace=None):
    """A workspace the controller has not reconciled yet (spec only)."""
    return pool_workspace(name, team, target=namespace, status=False)


CATALOG = [
    profile("research.training.1x", teams=["research"], lanes=["training"], namespaces=["research-ws"]),
    profile("research.any", teams=["research"], namespaces=["research-ws"], queue="big"),
    profile("vision.training", teams=["vision"], lanes=["training"], namespaces=["vision-ws"]),
    profile("broken", teams=["vision"], namespaces=["vision-ws"], ready=False),
]


def ctx_of(*objects, access=None):
    return rule_context(objects, now=NOW, access=access)


def checks(view):
    return {c.id: c.ok for c in view.checks}


def rules(findings):
    return sorted((f.rule, f.severity) for f in findings)


# --- the usable-set checks ----------------------------------------------------------------


def test_ready_set_is_usable_and_hash_verified():
    view, findings = derive_profiles(ctx_of(tau_cluster(CATALOG)))
    assert view.usable
    assert checks(view) == {
        "TauCluster": True,
        "ObservedGeneration": True,
        "WorkloadProfilesReady": True,
        "ProfileSetHash": True,
    }
    assert view.generation == GEN
    assert view.profile_set_hash == view.computed_hash == profile_set_hash(CATALOG)
    assert not any(f.rule.startswith("PROFILES-") for f in findings)


def test_missing_tau_cluster_is_unusable():
    view, findings = derive_profiles(ctx_of(workspace("w", "research")))
    assert not view.usable
    assert checks(view) == {"TauCluster": False}
    # No TauCluster at all: not (yet) a TauGrid cluster; the view says unusable, no finding.
    assert findings == []


def test_only_the_singleton_named_cluster_counts():
    view, _ = derive_profiles(ctx_of(tau_cluster(CATALOG, name="other")))
    assert not view.usable and "does not exist" in view.checks[0].message


@pytest.mark.parametrize("state", [AccessState.FORBIDDEN, AccessState.ERROR, AccessState.SYNCING, AccessState.ABSENT])
def test_unreadable_tau_cluster_fails_closed(state):
    ctx = ctx_of(tau_cluster(CATALOG), access={"TauCluster": state})
    view, findings = derive_profiles(ctx)
    assert not view.usable and view.profiles == []
    assert checks(view) == {"TauCluster": False}
    assert ("PROFILES-UNAVAILABLE", Severity.WARNING) in rules(findings)
    assert select_profile(ctx, "research-ws", "research", "training").error == "Unusable"


def test_stale_profile_status_alone():
    view, findings = derive_profiles(ctx_of(tau_cluster(CATALOG, gen=GEN, observed=GEN - 1)))
    assert not view.usable
    assert checks(view) == {
        "TauCluster": True,
        "ObservedGeneration": False,
        "WorkloadProfilesReady": True,
        "ProfileSetHash": True,
    }
    assert "observedGeneration 6 does not match metadata.generation 7" in view.checks[1].message
    assert ("PROFILES-STALE", Severity.CRITICAL) in rules(findings)


def test_missing_profile_status_is_stale():
    tc = tau_cluster(CATALOG)
    del tc["status"]["workloadProfiles"]
    view, findings = derive_profiles(ctx_of(tc))
    assert not view.usable and not checks(view)["ObservedGeneration"]
    assert ("PROFILES-STALE", Severity.CRITICAL) in rules(findings)


@pytest.mark.parametrize(
    "ready,ready_gen",
    [("Unknown", GEN), ("True", GEN - 1)],
    ids=["unknown", "old-generation"],
)
def test_workload_profiles_ready_not_true_at_generation_alone(ready, ready_gen):
    view, findings = derive_profiles(ctx_of(tau_cluster(CATALOG, ready=ready, ready_gen=ready_gen)))
    assert not view.usable
    assert checks(view) == {
        "TauCluster": True,
        "ObservedGeneration": True,
        "WorkloadProfilesReady": False,
        "ProfileSetHash": True,
    }
    assert ("PROFILES-NOT-READY", Severity.CRITICAL) in rules(findings)


def test_workload_profiles_ready_missing():
    tc = tau_cluster(CATALOG)
    tc["status"]["conditions"] = []
    view, _ = derive_profiles(ctx_of(tc))
    assert not view.usable
    assert "missing condition WorkloadProfilesReady at generation 7" in view.checks[2].message


def test_workload_profiles_ready_false_is_a_note_never_usable():
    ctx = ctx_of(tau_cluster(CATALOG, ready="False"))
    view, findings = derive_profiles(ctx)
    assert not view.usable
    assert view.notes and "public tau CLI" in view.notes[0]
    assert ("PROFILES-NOT-READY", Severity.CRITICAL) in rules(findings)
    # even a profile that is itself Ready is not selectable
    assert select_profile(ctx, "research-ws", "research", "training", "research.training.1x").error == "Unusable"


def test_hash_mismatch_alone():
    view, findings = derive_profiles(ctx_of(tau_cluster(CATALOG, hash_value="0" * 64)))
    assert not view.usable
    assert checks(view) == {
        "TauCluster": True,
        "ObservedGeneration": True,
        "WorkloadProfilesReady": True,
        "ProfileSetHash": False,
    }
    assert view.computed_hash == profile_set_hash(CATALOG)
    assert "profileSetHash mismatch: status has 000" in view.checks[3].message
    assert ("PROFILES-HASH-MISMATCH", Severity.CRITICAL) in rules(findings)


def test_drifted_profile_changes_the_hash():
    drifted = copy.deepcopy(CATALOG)
    tc = tau_cluster(CATALOG)
    drifted[0]["clusterQueues"] = ["someone-elses-queue"]
    tc["status"]["workloadProfiles"]["profiles"] = drifted
    view, _ = derive_profiles(ctx_of(tc))
    assert not view.usable and not checks(view)["ProfileSetHash"]


def test_empty_published_hash_fails():
    view, _ = derive_profiles(ctx_of(tau_cluster(CATALOG, hash_value="")))
    assert not view.usable and view.checks[3].message == "status.workloadProfiles.profileSetHash is empty"


def test_unhashable_set_fails_the_hash_check():
    bad = copy.deepcopy(CATALOG)
    bad[0]["localQueues"].append(dict(bad[0]["localQueues"][0]))
    view, _ = derive_profiles(ctx_of(tau_cluster(bad, hash_value="a" * 64)))
    assert not view.usable and "duplicate resolved LocalQueue" in view.checks[3].message
    assert view.computed_hash is None


def test_no_profiles_declared_is_one_info_finding():
    tc = {
        "apiVersion": "tau.azure.com/v1alpha1",
        "kind": "TauCluster",
        "metadata": {"name": "cluster", "generation": 1},
    }
    view, findings = derive_profiles(ctx_of(tc))
    assert not view.usable
    assert rules(findings) == [("PROFILES-NONE", Severity.INFO)]


# --- per-profile readiness ------------------------------------------------------------------


def test_first_failing_condition_is_the_reason_even_when_later_ones_have_no_message():
    conds = [
        cond("LocalQueuesResolved", "True"),
        cond("ClusterQueuesReady", "False", reason="ClusterQueuesNotReady", message='ClusterQueue "cq" is not Active'),
    ]
    conds += [cond(t, "False", reason=f"{t}NotReady", message="") for t in ORDER[2:]]
    p = profile("p", conditions=conds)
    view, findings = derive_profiles(ctx_of(tau_cluster([p])))
    row = view.profiles[0]
    assert (row.ready, row.condition, row.reason, row.message) == (
        False,
        "ClusterQueuesReady",
        "ClusterQueuesNotReady",
        'ClusterQueue "cq" is not Active',
    )
    assert ("PROFILE-NOT-READY", Severity.WARNING) in rules(findings)


def test_ready_at_an_old_generation_is_not_ready():
    p = profile("p", conditions=[cond(t, gen=GEN - 1) for t in ORDER])
    view, _ = derive_profiles(ctx_of(tau_cluster([p])))
    row = view.profiles[0]
    assert not row.ready and row.reason == "StaleCondition" and row.condition == "LocalQueuesResolved"


def test_missing_conditions_are_not_ready():
    view, _ = derive_profiles(ctx_of(tau_cluster([profile("p", conditions=[])])))
    assert view.profiles[0].reason == "ConditionMissing"


def test_rows_are_sorted_and_normalised():
    view, _ = derive_profiles(ctx_of(tau_cluster(CATALOG)))
    assert [r.name for r in view.profiles] == ["broken", "research.any", "research.training.1x", "vision.training"]
    assert view.profiles[2].default_local_queue == "jobqueue" and view.profiles[2].execution_target == "singleCluster"


# --- selection ------------------------------------------------------------------------------


def test_implicit_selection_stamps_the_revision():
    ctx = ctx_of(tau_cluster(CATALOG))
    res = select_profile(ctx, "vision-ws", "vision", "training")
    assert res.error is None and res.profile == "vision.training"
    assert res.annotations == {
        ANN_GENERATION: "7",
        ANN_SET_HASH: profile_set_hash(CATALOG),
        ANN_PROFILE: "vision.training",
    }
    assert "not quota or capacity" in res.message


def test_selection_normalises_its_inputs():
    res = select_profile(ctx_of(tau_cluster(CATALOG)), " Vision-WS ", "VISION", "Training")
    assert res.profile == "vision.training"


def test_no_match():
    res = select_profile(ctx_of(tau_cluster(CATALOG)), "elsewhere", "research", "training")
    assert res.error == "NoMatch" and res.profile is None and res.annotations == {}
    assert "no ready workload profile matches namespace=elsewhere, team=research, lane=training" in res.message


def test_unready_profile_never_matches_implicitly():
    # "broken" applies to (vision-ws, vision, inference) but is not Ready: no match rather than a pick.
    res = select_profile(ctx_of(tau_cluster(CATALOG)), "vision-ws", "vision", "inference")
    assert res.error == "NoMatch"


def test_ambiguous():
    res = select_profile(ctx_of(tau_cluster(CATALOG)), "research-ws", "research", "training")
    assert res.error == "Ambiguous" and res.profile is None
    assert res.message.endswith("research.any, research.training.1x")


def test_explicit_profile_resolves_the_ambiguity():
    res = select_profile(ctx_of(tau_cluster(CATALOG)), "research-ws", "research", "training", profile="Research.Any")
    assert res.error is None and res.profile == "research.any" and res.annotations[ANN_PROFILE] == "research.any"


@pytest.mark.parametrize(
    "name,team,expected",
    [
        ("nope", "research", "is not declared"),
        ("broken", "vision", "is not Ready at generation 7 (LocalQueuesResolved"),
        ("research.any", "vision", "does not authorize team 'vision'; allowed teams: research"),
    ],
)
def test_explicit_profile_must_be_eligible(name, team, expected):
    res = select_profile(ctx_of(tau_cluster(CATALOG)), "research-ws", team, "training", profile=name)
    assert res.error == "NotEligible" and expected in res.message


def test_unusable_set_gives_unusable_with_the_reason():
    res = select_profile(ctx_of(tau_cluster(CATALOG, observed=GEN - 1)), "vision-ws", "vision", "training")
    assert res.error == "Unusable" and "stale" in res.message and res.annotations == {}


def test_select_accepts_a_store_or_a_loaded_set():
    ctx = ctx_of(tau_cluster(CATALOG))
    assert select_profile(ctx.store, "vision-ws", "vision", "training").profile == "vision.training"
    assert select_profile(load_profile_set(ctx), "vision-ws", "vision", "training").profile == "vision.training"


# --- selections over the catalog and workspaces ------------------------------------------------


def test_selections_cover_catalog_and_workspace_tuples():
    ctx = ctx_of(tau_cluster(CATALOG), workspace("research-ws", "research"), workspace("ops", "ops", "ops-ns"))
    view, findings = derive_profiles(ctx)
    got = {(s.namespace, s.team, s.lane): (s.profile, s.error) for s in view.selections}
    assert got[("research-ws", "research", "training")] == (None, "Ambiguous")
    assert got[("vision-ws", "vision", "training")] == ("vision.training", None)
    assert got[("ops-ns", "ops", "training")] == (None, "NoMatch")  # a workspace tuple, catalog lanes
    amb = [f for f in findings if f.rule == "PROFILE-AMBIGUOUS"]
    assert len(amb) == 1 and amb[0].severity is Severity.WARNING
    assert "research.any, research.training.1x" in amb[0].message


def test_no_ambiguity_no_finding():
    catalog = [CATALOG[0], CATALOG[2]]
    view, findings = derive_profiles(ctx_of(tau_cluster(catalog)))
    assert view.selections and all(s.error is None for s in view.selections)
    assert not [f for f in findings if f.rule == "PROFILE-AMBIGUOUS"]


def test_global_profiles_overlap_on_every_value_the_catalog_names():
    catalog = [profile("a"), profile("b", lanes=["batch"])]
    view, findings = derive_profiles(ctx_of(tau_cluster(catalog)))
    assert [(s.lane, s.error) for s in view.selections] == [("batch", "Ambiguous")]


def test_cluster_view_carries_the_profiles_contract():
    view = derive(store_from_objects([tau_cluster(CATALOG)]), NOW)
    data = view.to_contract()["profiles"]
    assert data["usable"] is True and data["profileSetHash"] == profile_set_hash(CATALOG)
    assert {"name", "ready", "reason", "executionTarget", "placement", "defaultLocalQueue"} <= set(data["profiles"][0])
    assert {"namespace", "team", "lane", "profile", "error"} <= set(data["selections"][0])


def test_workspaces_do_not_widen_global_lists():
    # A workspace contributes its own (namespace, team) only; it never crosses with other teams.
    catalog = [profile("any"), profile("research", teams=["research"], lanes=["training"])]
    ctx = ctx_of(tau_cluster(catalog), workspace("a", "alpha"), workspace("b", "beta"))
    view, _ = derive_profiles(ctx)
    got = sorted((s.namespace, s.team, s.lane) for s in view.selections)
    assert got == [("", "research", "training"), ("a", "alpha", "training"), ("b", "beta", "training")]
