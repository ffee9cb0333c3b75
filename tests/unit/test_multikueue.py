"""MultiKueue readiness (docs/rules.md#multikueue): NotConfigured, Ready, and each of M1-M5 failing."""

from __future__ import annotations

import functools
from datetime import UTC, datetime

import factories
import pytest
from factories import admission_check, rule_context, workload_profile
from factories import multikueue_cluster as mk_cluster
from factories import multikueue_config as mk_config

from taudash.engine.rules.base import Severity
from taudash.engine.rules.multikueue import derive_multikueue
from taudash.engine.rules.profiles import derive_profiles
from taudash.engine.store import AccessState

GEN = 4
NOW = datetime(2025, 1, 1, tzinfo=UTC)
cond = functools.partial(factories.cond, gen=GEN)


def profile(name, target, queue, namespaces=("ml",), teams=("research",), lanes=(), ready=True):
    return workload_profile(name, teams=teams, lanes=lanes, namespaces=namespaces, target=target, queue=queue, gpus=8,
                            ready=ready, gen=GEN, priorities={"disableDefaultPriorities": True},
                            list_cluster_queues=False)


SINGLE = profile("local.training", "singleCluster", "jobqueue", lanes=["training"])
REMOTE = profile("remote.batch", "multiKueue", "mk-queue", lanes=["batch"])


def tau_cluster(profiles, mk_ready="True", mk_gen=GEN):
    conds = [cond("WorkloadProfilesReady")]
    if mk_ready is not None:
        conds.append(cond("MultiKueueReady", mk_ready, "Ready" if mk_ready == "True" else "PrerequisitesNotReady",
                          'AdmissionCheck "mk" has an active MultiKueue config and worker', gen=mk_gen))
    return factories.tau_cluster(profiles, gen=GEN, conditions=conds)


def ready_objects():
    return [
        tau_cluster([SINGLE, REMOTE]),
        admission_check(),
        mk_config(),
        mk_cluster("worker-1"),
        mk_cluster("worker-2", "False"),
    ]


def run(objects, access=None):
    ctx = rule_context(objects, now=NOW, access=access)
    profiles, _ = derive_profiles(ctx)
    return derive_multikueue(ctx, profiles)


def oks(view):
    return {c.id: c.ok for c in view.checks}


def replace(objects, kind, new):
    return [o for o in objects if o["kind"] != kind] + ([new] if new else [])


def test_not_configured_without_profiles_or_admission_checks():
    view, findings = run([tau_cluster([SINGLE], mk_ready="False"), admission_check(controller="example.com/other")])
    assert view.state == "NotConfigured" and view.checks == [] and findings == []


def test_ready_when_all_checks_hold():
    view, findings = run(ready_objects())
    assert view.state == "Ready", view.checks
    assert oks(view) == {"M1": True, "M2": True, "M3": True, "M4": True, "M5": True}
    # Ready (one Active worker is enough) — but the disconnected worker-2 is a finding, not a green check.
    assert [(f.rule, f.object.name) for f in findings] == [("MK-WORKER-DISCONNECTED", "worker-2")]
    assert [(w.name, w.active, w.reason) for w in view.workers] == [
        ("worker-1", True, "Active"),
        ("worker-2", False, "ClientConnectionFailed"),
    ]
    assert view.workers[1].message == "dial tcp: refused" and view.workers[0].config == "mk-config"


def _only_failing(view, check_id):
    assert view.state == "NotReady"
    failing = {k for k, ok in oks(view).items() if not ok}
    assert check_id in failing
    return failing


def test_m1_apis_not_installed():
    objs = [o for o in ready_objects() if o["kind"] not in ("MultiKueueConfig", "MultiKueueCluster")]
    view, findings = run(objs, access={"MultiKueueConfig": AccessState.ABSENT, "MultiKueueCluster": AccessState.ABSENT})
    # Without the APIs no config or worker can exist, so M3 necessarily fails with M1.
    assert _only_failing(view, "M1") == {"M1", "M3"}
    assert "not installed" in view.checks[0].message
    assert findings[0].rule == "MK-NOT-READY" and findings[0].severity is Severity.CRITICAL


def test_m1_unreadable_api_fails_closed():
    view, _ = run(ready_objects(), access={"MultiKueueCluster": AccessState.FORBIDDEN})
    assert not oks(view)["M1"] and "Forbidden" in view.checks[0].message


@pytest.mark.parametrize(
    "status,gen", [("False", GEN), ("True", GEN - 1), (None, GEN)], ids=["false", "stale", "missing"]
)
def test_m2_multikueue_ready_condition_alone(status, gen):
    objs = replace(ready_objects(), "TauCluster", tau_cluster([SINGLE, REMOTE], mk_ready=status, mk_gen=gen))
    view, findings = run(objs)
    assert _only_failing(view, "M2") == {"M2"}
    mk = [f for f in findings if f.rule == "MK-NOT-READY"]
    assert len(mk) == 1 and "M2" in mk[0].message
    assert {f.rule for f in findings} == {"MK-NOT-READY", "MK-WORKER-DISCONNECTED"}


@pytest.mark.parametrize(
    "objects,expected",
    [
        (
            lambda o: replace(o, "AdmissionCheck", admission_check(active="False")),
            'AdmissionCheck "mk" is not Active'.replace('"', "'"),
        ),
        (lambda o: replace(o, "AdmissionCheck", admission_check(config=None)), "does not reference a MultiKueueConfig"),
        (lambda o: replace(o, "MultiKueueConfig", None), "references missing MultiKueueConfig 'mk-config'"),
        (lambda o: replace(o, "MultiKueueConfig", mk_config(clusters=["worker-2"])), "has no Active worker clusters"),
        (
            lambda o: replace(replace(o, "MultiKueueConfig", mk_config(clusters=["ghost"])), "MultiKueueCluster", None),
            "has no Active worker clusters",
        ),
    ],
    ids=["check-inactive", "no-parameters", "config-missing", "no-active-worker", "worker-missing"],
)
def test_m3_wiring_alone(objects, expected):
    view, _ = run(objects(ready_objects()))
    assert _only_failing(view, "M3") == {"M3"}
    assert expected in view.checks[2].message


def test_m3_lists_a_missing_worker():
    objs = replace(
        replace(ready_objects(), "MultiKueueConfig", mk_config(clusters=["ghost"])), "MultiKueueCluster", None
    )
    view, _ = run(objs)
    assert [(w.name, w.active, w.reason) for w in view.workers] == [("ghost", None, "NotFound")]


def test_m3_no_multikueue_admission_check_while_a_profile_targets_it():
    objs = replace(ready_objects(), "AdmissionCheck", admission_check(controller="example.com/other"))
    view, findings = run(objs)
    assert _only_failing(view, "M3") == {"M3"}
    assert "no AdmissionCheck uses controller kueue.x-k8s.io/multikueue" in view.checks[2].message
    assert findings[0].severity is Severity.CRITICAL


@pytest.mark.parametrize(
    "profiles,expected",
    [
        ([SINGLE], "no workload profile has executionTarget multiKueue"),
        ([SINGLE, profile("remote.batch", "multiKueue", "mk-queue", lanes=["batch"], ready=False)], "is not Ready"),
        ([SINGLE, profile("remote.batch", "multiKueue", "jobqueue", lanes=["batch"])], "shares its LocalQueue"),
    ],
    ids=["no-mk-profile", "mk-profile-unready", "queue-shared"],
)
def test_m4_profile_alone(profiles, expected):
    # An AdmissionCheck uses MultiKueue, so MultiKueue counts as configured in every case.
    objs = replace(ready_objects(), "TauCluster", tau_cluster(profiles))
    view, _ = run(objs)
    failing = _only_failing(view, "M4")
    assert failing == {"M4", "M5"}  # M5 needs an M4 profile to resolve
    assert expected in view.checks[3].message


def test_m5_ambiguous_multikueue_profile_alone():
    overlapping = profile("local.any", "singleCluster", "other-queue")  # applies to every lane in ml/research
    objs = replace(ready_objects(), "TauCluster", tau_cluster([SINGLE, REMOTE, overlapping]))
    view, findings = run(objs)
    assert _only_failing(view, "M5") == {"M5"}
    assert "also matches local.any" in view.checks[4].message


def test_m5_explicit_only_is_not_unique():
    twin = profile("remote.twin", "multiKueue", "mk-queue-2", lanes=["batch"])
    objs = replace(ready_objects(), "TauCluster", tau_cluster([SINGLE, REMOTE, twin]))
    view, _ = run(objs)
    assert _only_failing(view, "M5") == {"M5"}


def test_unreadable_tau_cluster_cannot_tell_and_fails_closed():
    objs = [o for o in ready_objects() if o["kind"] != "AdmissionCheck"]
    view, findings = run(objs, access={"TauCluster": AccessState.FORBIDDEN})
    assert view.state == "NotReady"
    assert findings[0].rule == "MK-NOT-READY" and findings[0].severity is Severity.WARNING
    assert "cannot tell whether MultiKueue is configured" in findings[0].message


def test_a_disconnected_worker_is_a_finding_with_its_reason():
    _, findings = run(ready_objects())
    (f,) = findings
    assert f.severity is Severity.WARNING and f.object.kind == "MultiKueueCluster"
    assert "Active=False ClientConnectionFailed" in f.message and "dial tcp: refused" in f.message


def test_no_disconnected_finding_when_every_worker_is_active():
    objs = ([o for o in ready_objects() if o["kind"] != "MultiKueueCluster"]
            + [mk_cluster("worker-1"), mk_cluster("worker-2")])
    view, findings = run(objs)
    assert view.state == "Ready" and findings == []


def test_a_worker_without_an_active_condition_is_not_taken_for_connected():
    bare = mk_cluster("worker-2")
    bare["status"] = {}
    objs = [o for o in ready_objects() if o["kind"] != "MultiKueueCluster"] + [mk_cluster("worker-1"), bare]
    _, findings = run(objs)
    assert [(f.rule, f.object.name) for f in findings] == [("MK-WORKER-DISCONNECTED", "worker-2")]
    assert "Active=unknown" in findings[0].message
