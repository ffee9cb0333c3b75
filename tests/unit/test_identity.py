"""Workload identity and researcher access around a drain (docs/rules.md#identity)."""

import pytest
from factories import (
    DRAIN_MODES,
    MANAGED,
    NEW,
    OLD,
    WS_UID,
    drain_ctx,
    drain_workspace,
    drain_world,
    namespace,
    rayservice,
    role_binding,
    rules,
    service_account,
    the_workspace,
)

from taudash.engine.rules.drain import derive_drain
from taudash.engine.rules.identity import derive_identity
from taudash.engine.store import AccessState

RESEARCHER = ("Group", "eval-researchers")


def sa(name="eval-runner", ns=OLD, client="client-1", *, owned=True, deleting=False, owner_uid=WS_UID):
    """The workspace's workload-identity ServiceAccount (owned: labelled and annotated by the controller)."""
    labels, annotations = {}, {}
    if client:
        annotations["azure.workload.identity/client-id"] = client
    if owned:
        labels = {"tau.azure.com/workspace": "eval", "azure.workload.identity/use": "true"}
        annotations["tau.azure.com/owner-uid"] = owner_uid
    return service_account(name, ns, labels=labels, annotations=annotations, deleting=deleting)


def binding(ns=OLD, subject=RESEARCHER, *, owned=True, name="tau-researcher-v1"):
    """The researcher RoleBinding (owned: labelled and annotated by the controller)."""
    if not owned:
        return role_binding(name, ns, subject)
    return role_binding(name, ns, subject, annotations={"tau.azure.com/owner-uid": WS_UID},
                        labels={"tau.azure.com/workspace": "eval", **MANAGED})


def identity(objs, access=None):
    ctx = drain_ctx(objs, access)
    ws = the_workspace(ctx)
    d, _ = derive_drain(ctx, ws)
    return derive_identity(ctx, ws, d)


def account(view, ns, name="eval-runner"):
    return next(a for a in view.accounts if (a.namespace, a.name) == (ns, name))


def bound(view, ns):
    return next(b for b in view.bindings if b.namespace == ns)


BLOCKER = rayservice("llm")  # keeps the drain Blocked on the required team route


# --- execution identity --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_unchanged_account_is_retained_until_the_drain_clears(mode):
    view, findings = identity(drain_world(mode, BLOCKER, sa()))
    assert account(view, OLD).status == "Retained"
    assert (view.state, view.retained, view.obsolete, view.revocation_confirmed) == (
        "Retained",
        [f"{OLD}/eval-runner"],
        [],
        True,
    )
    assert (view.service_account, view.client_id) == ("eval-runner", "client-1")
    assert findings == []


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_unknown_drain_also_retains(mode):
    view, _ = identity(drain_world(mode, sa()), {"Job": AccessState.FORBIDDEN})
    assert account(view, OLD).status == "Retained"


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_after_the_drain_clears_the_account_is_ordinary_cleanup(mode):
    view, findings = identity(drain_world(mode, sa()))
    assert account(view, OLD).status == "CleanupPending" and view.retained == []
    assert findings == []


@pytest.mark.parametrize("mode", DRAIN_MODES)
@pytest.mark.parametrize(
    "ws_identity,observed,why",
    [
        (("eval-runner-v2", "client-1"), ("eval-runner", "client-1"), "renamed to eval-runner-v2"),
        (("eval-runner", "client-2"), ("eval-runner", "client-1"), "client ID changed from client-1 to client-2"),
        (None, ("eval-runner", "client-1"), "workloadIdentity was removed"),
    ],
    ids=["renamed", "client-id", "removed"],
)
def test_changed_identity_is_revoked_even_during_the_drain(mode, ws_identity, observed, why):
    ws = drain_workspace(mode, identity=ws_identity)
    view, findings = identity(drain_world(mode, BLOCKER, sa(observed[0], OLD, observed[1]), ws=ws))
    a = account(view, OLD)
    assert a.status == "Obsolete" and why in a.reason
    assert view.state == "RevocationPending" and view.revocation_confirmed is False
    assert view.obsolete == [f"{OLD}/eval-runner"] and view.retained == []
    (f,) = findings
    assert (f.rule, f.severity.value, f.object.kind, f.object.namespace, f.object.name) == (
        "IDENTITY-REVOCATION-PENDING",
        "warning",
        "ServiceAccount",
        OLD,
        "eval-runner",
    )
    assert "even during a drain" in f.message and "cancel or replace" in f.hint


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_account_deleting_behind_a_finalizer_is_not_revoked_yet(mode):
    ws = drain_workspace(mode, identity=("eval-runner-v2", "client-1"))
    view, findings = identity(drain_world(mode, sa(deleting=True), ws=ws))
    a = account(view, OLD)
    assert a.deleting and a.finalizers == ["example.com/token-cleanup"] and a.status == "Obsolete"
    assert view.revocation_confirmed is False
    assert "example.com/token-cleanup" in findings[0].message


def test_current_account_in_the_new_namespace_during_a_retarget():
    ws = drain_workspace("Retarget", identity=("eval-runner-v2", "client-1"))
    view, _ = identity(drain_world("Retarget", BLOCKER, sa(), sa("eval-runner-v2", NEW), ws=ws))
    assert account(view, NEW, "eval-runner-v2").status == "Current"
    assert account(view, OLD).status == "Obsolete"


def test_not_draining_current_account():
    view, findings = identity(drain_world(None, sa()))
    assert (account(view, OLD).status, view.state, view.revocation_confirmed) == ("Current", "Current", True)
    assert findings == []


def test_not_draining_without_identity():
    view, findings = identity(drain_world(None, ws=drain_workspace(None, identity=None)))
    assert (view.state, view.service_account, view.accounts) == ("NotConfigured", None, [])
    assert findings == []


def test_accounts_not_owned_by_the_workspace_are_ignored():
    objs = drain_world(
        "Retarget",
        BLOCKER,
        sa("platform", owned=False),
        sa("eval-runner", owner_uid="uid-of-an-earlier-eval"),
        sa("eval-runner", ns="tau-system"),
        ws=drain_workspace("Retarget", identity=None),
    )
    view, findings = identity(objs)
    assert view.accounts == [] and findings == []


def test_unreadable_service_accounts_are_unknown():
    view, findings = identity(drain_world("Retarget", BLOCKER, sa()), {"ServiceAccount": AccessState.FORBIDDEN})
    assert (view.state, view.revocation_confirmed, view.access_state) == ("Unknown", None, "Unknown")
    assert [u.resource for u in view.unknown] == ["serviceaccounts"]
    assert findings == []


# --- researcher access ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", DRAIN_MODES)
@pytest.mark.parametrize("deleting_account", [False, True], ids=["present", "finalizer"])
def test_no_researcher_binding_in_the_old_namespace_until_revocation_is_confirmed(mode, deleting_account):
    ws = drain_workspace(mode, identity=("eval-runner", "client-2"))
    view, findings = identity(drain_world(mode, BLOCKER, sa(deleting=deleting_account), binding(), ws=ws))
    assert bound(view, OLD).status == "NotRevoked" and view.access_state == "NotRevoked"
    assert rules(findings) == ["ACCESS-NOT-REVOKED", "IDENTITY-REVOCATION-PENDING"]
    f = next(f for f in findings if f.rule == "ACCESS-NOT-REVOKED")
    assert f.severity.value == "critical" and (f.object.kind, f.object.namespace) == ("RoleBinding", OLD)
    assert "eval-runner" in f.message


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_researcher_bindings_absent_while_revocation_is_pending_is_correct(mode):
    ws = drain_workspace(mode, identity=("eval-runner", "client-2"))
    view, findings = identity(drain_world(mode, BLOCKER, sa(), ws=ws))
    assert rules(findings) == ["IDENTITY-REVOCATION-PENDING"]
    assert view.expected_bindings == ([] if mode == "Deletion" else [NEW])


def test_foreign_binding_in_the_old_namespace_is_not_revoked_either():
    ws = drain_workspace("Retarget", identity=None)
    view, findings = identity(drain_world("Retarget", sa(), binding(owned=False, name="platform-grant"), ws=ws))
    b = bound(view, OLD)
    assert (b.status, b.owned) == ("NotRevoked", False)
    f = next(f for f in findings if f.rule == "ACCESS-NOT-REVOKED")
    assert "not owned by TauGrid" in f.hint


def test_retarget_recovery_restores_the_current_researcher_in_the_retained_namespace():
    # The obsolete account is gone: the binding in the old namespace is expected while work is unfinished.
    ws = drain_workspace("Retarget", identity=("eval-runner-v2", "client-1"))
    view, findings = identity(drain_world("Retarget", BLOCKER, sa("eval-runner-v2", NEW), binding(OLD), binding(NEW),
                                          ws=ws))
    assert view.revocation_confirmed is True
    assert view.expected_bindings == [OLD, NEW]
    assert [b.status for b in view.bindings] == ["Expected", "Expected"]
    assert (view.access_state, findings) == ("Ok", [])


def test_retarget_missing_binding_in_the_retained_namespace_is_reported():
    view, findings = identity(drain_world("Retarget", BLOCKER, sa(), binding(NEW)))
    assert view.missing_bindings == [OLD] and view.access_state == "Missing"
    assert findings == []


def test_retarget_with_revocation_pending_keeps_the_new_namespace_binding():
    ws = drain_workspace("Retarget", identity=("eval-runner-v2", "client-1"))
    view, findings = identity(drain_world("Retarget", BLOCKER, sa(), sa("eval-runner-v2", NEW), binding(OLD),
                                          binding(NEW), ws=ws))
    assert {b.namespace: b.status for b in view.bindings} == {OLD: "NotRevoked", NEW: "Expected"}
    assert rules(findings) == ["ACCESS-NOT-REVOKED", "IDENTITY-REVOCATION-PENDING"]


def test_deletion_revokes_owned_researcher_bindings_before_waiting():
    view, findings = identity(drain_world("Deletion", BLOCKER, sa(), binding(OLD)))
    assert view.expected_bindings == []
    assert bound(view, OLD).status == "Unexpected"
    (f,) = findings
    assert (f.rule, f.severity.value) == ("ACCESS-UNEXPECTED", "warning")
    assert "deletion revokes owned researcher bindings before waiting" in f.message


def test_deletion_without_bindings_is_fine():
    view, findings = identity(drain_world("Deletion", BLOCKER, sa()))
    assert (view.access_state, findings) == ("Ok", [])


@pytest.mark.parametrize("mode", [None, *DRAIN_MODES])
def test_cluster_wide_mode_never_binds_the_researcher(mode):
    ws = drain_workspace(mode, cluster_wide=True)
    view, findings = identity(drain_world(mode, BLOCKER, sa(), binding(OLD, ("Group", "someone")), ws=ws))
    assert view.authorization_mode == "cluster-wide" and view.expected_bindings == []
    assert bound(view, OLD).status == "Unexpected"
    assert rules(findings) == ["ACCESS-UNEXPECTED"]
    assert "cluster-wide" in findings[0].message


def test_cluster_wide_without_bindings():
    view, findings = identity(drain_world("Retarget", BLOCKER, ws=drain_workspace("Retarget", cluster_wide=True)))
    assert (view.access_state, findings) == ("ClusterWide", [])


@pytest.mark.parametrize("mode", [None, "Retarget"])
def test_never_bound_in_an_abandoned_namespace(mode):
    view, findings = identity(drain_world(mode, BLOCKER, sa(), binding(OLD), binding("eval-2023")))
    assert bound(view, "eval-2023").status == "Unexpected"
    (f,) = [f for f in findings if f.rule == "ACCESS-UNEXPECTED"]
    assert "abandoned" in f.message and f.object.namespace == "eval-2023"


def test_never_bound_in_a_foreign_namespace():
    # The old namespace was reclaimed by another workspace: restoring access there would be wrong.
    objs = drain_world("Retarget", BLOCKER, sa(), binding(OLD), binding(NEW),
                       ns_labels={"tau.azure.com/workspace": "other"})
    view, findings = identity(objs)
    assert OLD not in view.expected_bindings
    assert bound(view, OLD).status == "Unexpected"
    assert "belongs to workspace other" in next(f for f in findings if f.rule == "ACCESS-UNEXPECTED").message


@pytest.mark.parametrize("mode", [None, "Retarget"])
def test_only_the_current_researcher_is_bound(mode):
    view, findings = identity(drain_world(mode, BLOCKER, sa(), binding(OLD, ("Group", "former-researchers"))))
    assert bound(view, OLD).status == "Unexpected"
    assert "not only Group/eval-researchers" in findings[0].message


def test_unrelated_bindings_elsewhere_are_not_this_workspace_business():
    objs = drain_world(None, sa(), binding(OLD), binding("team-x", owned=False), namespace("team-x"))
    view, findings = identity(objs)
    assert [b.namespace for b in view.bindings] == [OLD] and findings == []


@pytest.mark.parametrize("kind", ["RoleBinding", "Namespace"])
def test_unreadable_access_inputs_are_unknown(kind):
    view, _ = identity(drain_world("Retarget", BLOCKER, sa(), binding(OLD)), {kind: AccessState.ERROR})
    assert view.access_state == "Unknown"
    assert [u.resource for u in view.unknown] == [
        "rolebindings.rbac.authorization.k8s.io" if kind == "RoleBinding" else "namespaces"
    ]
