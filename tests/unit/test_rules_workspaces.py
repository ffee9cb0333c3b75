from datetime import UTC, datetime

import pytest
from factories import cond, view_of, workspace

from taudash.engine.model import TauWorkspace
from taudash.engine.rules.workspaces import expected_phase, is_stale

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def conds(*items):
    return [TauWorkspace.model_validate(workspace("w", conditions=list(items))).status.conditions][0]


@pytest.mark.parametrize(
    "items,expected",
    [
        ([cond("RBACReady"), cond("QueueReady"), cond("DriftDetected", "False")], "Ready"),
        ([cond("RBACReady"), cond("QueueReady")], "Ready"),  # no drift condition at all
        ([cond("RBACReady"), cond("QueueReady"), cond("DriftDetected", "True", "QueueCleanupFailed")], "Degraded"),
        ([cond("RBACReady", "False", "AuthorizationNotReady"), cond("QueueReady")], "Degraded"),
        ([cond("RBACReady"), cond("QueueReady", "False", "QueueNotReady")], "Degraded"),
        # drift wins even when a gate is missing
        ([cond("DriftDetected", "True")], "Degraded"),
        ([cond("RBACReady")], "Pending"),  # QueueReady missing
        ([cond("RBACReady"), cond("QueueReady", "Unknown")], "Pending"),
        ([], "Pending"),
        # a False gate beats a missing one
        ([cond("QueueReady", "False")], "Degraded"),
        # WorkloadIdentityReady never gates the phase
        ([cond("RBACReady"), cond("QueueReady"), cond("WorkloadIdentityReady", "False", "ServiceAccountNotReady")],
         "Ready"),
    ],
)
def test_expected_phase(items, expected):
    assert expected_phase(conds(*items)) == expected


def rules(view):
    return {(f.rule, f.object.name) for f in view.findings}


def test_ready_workspace_has_no_findings():
    v = view_of(workspace("train"))
    (w,) = v.workspaces
    assert (w.phase, w.expected_phase, w.stale, w.counted_ready) == ("Ready", "Ready", False, True)
    assert not [f for f in v.findings if f.object.kind == "TauWorkspace"]


def test_stale_workspace_is_never_counted_ready():
    v = view_of(workspace("train", gen=3, observed=2))
    (w,) = v.workspaces
    assert w.stale and w.expected_phase == "Ready" and not w.counted_ready
    assert ("WS-STALE", "train") in rules(v)
    assert is_stale(TauWorkspace.model_validate(workspace("x", gen=2, observed=2))) is False


def test_phase_mismatch_and_degraded():
    ws = workspace("vision", phase="Ready",
                   conditions=[cond("RBACReady"),
                               cond("QueueReady", "False", "QueueNotReady",
                                    'backing ClusterQueue "tau-ws-vision" is not ready')])
    v = view_of(ws)
    assert ("WS-PHASE-MISMATCH", "vision") in rules(v)
    degraded = [f for f in v.findings if f.rule == "WS-DEGRADED"]
    assert degraded and degraded[0].severity.value == "critical"
    assert "QueueNotReady" in degraded[0].message and "tau-ws-vision" in degraded[0].message


def test_published_degraded_matching_expected_is_not_a_mismatch():
    ws = workspace("vision", phase="Degraded", conditions=[cond("RBACReady"), cond("QueueReady", "False")])
    assert ("WS-PHASE-MISMATCH", "vision") not in rules(view_of(ws))


def test_identity_not_ready_is_diagnostic_warning():
    ws = workspace("eval", conditions=[cond("RBACReady"), cond("QueueReady"),
                                       cond("WorkloadIdentityReady", "False", "ServiceAccountNotReady",
                                            "client id mismatch")])
    v = view_of(ws)
    (w,) = v.workspaces
    assert w.expected_phase == "Ready"
    f = [f for f in v.findings if f.rule == "WS-IDENTITY-NOT-READY"]
    assert f and f[0].severity.value == "warning" and "client id mismatch" in f[0].message


def test_identity_not_configured_is_silent():
    ws = workspace("eval",
                   conditions=[cond("RBACReady"), cond("QueueReady"),
                               cond("WorkloadIdentityReady", "Unknown", "NotConfigured")])
    assert "WS-IDENTITY-NOT-READY" not in {f.rule for f in view_of(ws).findings}


def test_conditions_are_reported_verbatim():
    msg = 'LocalQueue "q" targets ClusterQueue "a", but team-backed TauWorkspace "w" requires "tau-ws-w"'
    ws = workspace("w", conditions=[cond("RBACReady"), cond("QueueReady", "False", "QueueNotReady", msg)])
    (w,) = view_of(ws).workspaces
    row = next(c for c in w.conditions if c.type == "QueueReady")
    assert (row.status, row.reason, row.message) == ("False", "QueueNotReady", msg)


def test_workspaces_outside_the_system_namespace_are_ignored():
    v = view_of(workspace("a"), workspace("b", ns="elsewhere"))
    assert [w.name for w in v.workspaces] == ["a"]
