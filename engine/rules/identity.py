"""Workload identity and researcher access during a drain (docs/rules.md#identity).

Reported as expected vs observed: what the controller must have done with the workload-identity
ServiceAccount and the researcher RoleBinding, given the workspace spec and the drain verdict.
"""

from ..model import Namespace, RoleBinding, ServiceAccount, TauWorkspace
from ..model.names import OWNER_UID_LABEL as OWNER_UID
from ..model.names import WORKSPACE_LABEL as WS_LABEL
from .base import Finding, RuleContext, Severity, ViewModel, finding
from .drain import DrainView, UnknownInput

RESEARCHER_ROLE = "tau-researcher-v1"
CLIENT_ID = "azure.workload.identity/client-id"


class ObservedAccount(ViewModel):
    namespace: str
    name: str
    client_id: str | None = None
    deleting: bool = False
    finalizers: list[str] = []
    status: str  # Current | Retained | Obsolete | CleanupPending
    reason: str = ""


class ObservedBinding(ViewModel):
    namespace: str
    name: str
    subjects: list[str] = []  # "Kind/name"
    owned: bool = False
    status: str  # Expected | NotRevoked | Unexpected | External
    reason: str = ""


class IdentityView(ViewModel):
    """Expected vs observed identity and researcher access."""

    # expected workload identity (from the spec)
    service_account: str | None = None
    client_id: str | None = None
    # NotConfigured | Current | Retained | RevocationPending | CleanupPending | Unknown
    state: str = "Unknown"
    accounts: list[ObservedAccount] = []
    retained: list[str] = []  # "namespace/name" kept until the drain clears
    obsolete: list[str] = []  # "namespace/name" that must be revoked now, even during the drain
    revocation_confirmed: bool | None = None  # None: ServiceAccounts unreadable
    # researcher access
    authorization_mode: str = "workspace-rbac"
    researcher: str | None = None  # "Kind/name" from spec.kubernetesSubject
    expected_bindings: list[str] = []  # namespaces where the current researcher should be bound
    bindings: list[ObservedBinding] = []
    missing_bindings: list[str] = []
    access_state: str = "Unknown"  # Ok | Missing | Unexpected | NotRevoked | ClusterWide | Unknown
    unknown: list[UnknownInput] = []


def _owned(obj: ServiceAccount | RoleBinding, ws: TauWorkspace) -> bool:
    if obj.labels.get(WS_LABEL) != ws.name:
        return False
    owner = obj.metadata.annotations.get(OWNER_UID)
    # An owner-uid of another (earlier) workspace object makes it foreign; no annotation is tolerated.
    return not owner or not ws.uid or owner == ws.uid


def _is_researcher_binding(rb: RoleBinding) -> bool:
    return rb.role_ref.name == RESEARCHER_ROLE or rb.name == RESEARCHER_ROLE


def _subj(kind: str, name: str) -> str:
    return f"{kind}/{name}"


def derive_identity(ctx: RuleContext, ws: TauWorkspace, drain: DrainView) -> tuple[IdentityView, list[Finding]]:
    store = ctx.store
    sys_ns = ws.namespace or ctx.config.system_namespace
    desired = ws.desired_namespace
    resolved = ws.status.target.resolved_namespace or desired  # O: the namespace the controller still serves
    mode = drain.mode
    holding = drain.state in ("Blocked", "Unknown")  # fail closed: an Unknown drain also retains
    wi = ws.spec.workload_identity
    want_sa = wi.service_account_name if wi and wi.service_account_name else None
    want_client = (wi.client_id or None) if wi is not None and want_sa else None
    findings: list[Finding] = []
    unknown = [
        UnknownInput(resource=r, reason=why) for r, why in ctx.unreadable("ServiceAccount", "RoleBinding", "Namespace")
    ]

    # --- accounts -------------------------------------------------------------------------
    accounts: list[ObservedAccount] = []
    sa_readable = store.readable("ServiceAccount")
    if sa_readable:
        sa: ServiceAccount
        # Only accounts labelled for this workspace can be owned (_owned): the label index, not every
        # account of the cluster for every workspace.
        for sa in store.by_label(ServiceAccount, WS_LABEL, ws.name):
            if sa.namespace == sys_ns or not _owned(sa, ws):
                continue
            n = sa.namespace or ""
            client = sa.metadata.annotations.get(CLIENT_ID) or None
            unchanged = want_sa is not None and sa.name == want_sa and client == want_client
            if not unchanged:
                if want_sa is None:
                    why = "spec.workloadIdentity was removed"
                elif sa.name != want_sa:
                    why = f"the ServiceAccount was renamed to {want_sa}"
                else:
                    why = f"the client ID changed from {client or '(none)'} to {want_client}"
                status = "Obsolete"
            elif mode is not None and n == resolved and holding:
                status, why = "Retained", "unchanged identity kept in the old namespace until the drain clears"
            elif mode != "Deletion" and n == desired:
                status, why = "Current", "current workload identity in the workspace namespace"
            else:
                status, why = (
                    "CleanupPending",
                    "unchanged identity outside the served namespace; removed by normal cleanup",
                )
            accounts.append(
                ObservedAccount(
                    namespace=n,
                    name=sa.name,
                    client_id=client,
                    deleting=sa.deleting,
                    finalizers=list(sa.metadata.finalizers),
                    status=status,
                    reason=why,
                )
            )
    accounts.sort(key=lambda a: (a.namespace, a.name))
    obsolete = [a for a in accounts if a.status == "Obsolete"]
    revocation_confirmed = (not obsolete) if sa_readable else None

    for a in obsolete:
        held = (
            f"; deleting, held by finalizers {', '.join(a.finalizers)}"
            if a.deleting and a.finalizers
            else ("; deleting" if a.deleting else "")
        )
        findings.append(
            finding(
                Severity.WARNING,
                "IDENTITY-REVOCATION-PENDING",
                "ServiceAccount",
                a.name,
                a.namespace,
                f"workload identity of workspace {ws.name} is obsolete ({a.reason}) and must be revoked now, "
                f"even during a drain; it still exists{held}",
                "the controller revokes it before granting researcher access; clear whatever holds its deletion. "
                "Pending work using it can no longer create Pods: cancel or replace it. Keep the identity "
                "unchanged until draining finishes when uninterrupted execution is required",
            )
        )

    if not sa_readable:
        id_state = "Unknown"
    elif obsolete:
        id_state = "RevocationPending"
    elif any(a.status == "Retained" for a in accounts):
        id_state = "Retained"
    elif any(a.status == "Current" for a in accounts):
        id_state = "Current"
    elif accounts:
        id_state = "CleanupPending"
    else:
        id_state = "NotConfigured" if want_sa is None else "Current"

    # --- researcher access ----------------------------------------------------------------
    cluster_wide = ws.spec.authorization.mode == "cluster-wide"
    subj = ws.spec.kubernetes_subject
    researcher = _subj(subj.kind, subj.name) if subj and subj.name else None
    ns_obj: Namespace | None = store.get(Namespace, resolved) if store.readable("Namespace") else None
    owner_label = ns_obj.labels.get(WS_LABEL) if ns_obj is not None else None
    foreign_old = owner_label is not None and owner_label != ws.name

    expected: list[str] = []
    if not cluster_wide and mode != "Deletion" and researcher:
        # Restored in the retained resolved namespace only once obsolete identity is confirmed gone.
        if revocation_confirmed and not foreign_old:
            expected.append(resolved)
        if mode == "Retarget" and desired not in expected:
            expected.append(desired)
    allowed = set(expected)
    if mode == "Retarget" and not cluster_wide:
        allowed.add(desired)
    not_revoked_ns: set[str] = set()
    if revocation_confirmed is False:
        not_revoked_ns = {resolved} | {a.namespace for a in obsolete}

    bindings: list[ObservedBinding] = []
    rb_readable = store.readable("RoleBinding")
    if rb_readable:
        rb: RoleBinding
        # Owned bindings carry the workspace label; others only matter in its two namespaces.
        candidates = {(b.namespace or "", b.name): b for b in store.by_label(RoleBinding, WS_LABEL, ws.name)}
        for n_ in {resolved, desired}:
            candidates.update({(b.namespace or "", b.name): b for b in store.list(RoleBinding, n_)})
        for _, rb in sorted(candidates.items()):
            n = rb.namespace or ""
            if n == sys_ns or not _is_researcher_binding(rb):
                continue
            owned = _owned(rb, ws)
            if not owned and n not in (resolved, desired):
                continue  # someone else's binding elsewhere is not this workspace's business
            subjects = sorted(_subj(s.kind, s.name) for s in rb.subjects)
            if n in not_revoked_ns:
                status = "NotRevoked"
                why = "obsolete ServiceAccount(s) " + ", ".join(f"{a.namespace}/{a.name}" for a in obsolete)
                why += " not yet confirmed revoked"
            elif not owned:
                status, why = "External", "not owned by this workspace"
            elif cluster_wide:
                status, why = "Unexpected", "cluster-wide authorization grants no subject-specific binding"
            elif mode == "Deletion":
                status, why = "Unexpected", "deletion revokes owned researcher bindings before waiting for the drain"
            elif n not in allowed:
                why = (
                    f"namespace {n} belongs to workspace {owner_label}"
                    if n == resolved and foreign_old
                    else f"namespace {n} is abandoned: not the workspace's retained or desired namespace"
                )
                status = "Unexpected"
            elif subjects != [researcher]:
                status, why = "Unexpected", f"binds {', '.join(subjects) or 'nobody'}, not only {researcher}"
            else:
                status, why = "Expected", "current researcher"
            bindings.append(
                ObservedBinding(namespace=n, name=rb.name, subjects=subjects, owned=owned, status=status, reason=why)
            )
            if status == "NotRevoked":
                hint = (
                    "the controller removes researcher bindings until revocation is confirmed; check the "
                    "workspace's DriftDetected condition and what holds the ServiceAccount"
                    if owned
                    else "this binding is not owned by TauGrid: remove it through whoever granted it"
                )
                findings.append(
                    finding(
                        Severity.CRITICAL,
                        "ACCESS-NOT-REVOKED",
                        "RoleBinding",
                        rb.name,
                        n,
                        f"researcher binding grants {', '.join(subjects) or 'nobody'} in {n} while {why} "
                        f"(workspace {ws.name}): the researcher could run Pods as the obsolete identity",
                        hint,
                    )
                )
            elif status == "Unexpected":
                findings.append(
                    finding(
                        Severity.WARNING,
                        "ACCESS-UNEXPECTED",
                        "RoleBinding",
                        rb.name,
                        n,
                        f"researcher binding of workspace {ws.name} in {n}: {why}",
                        "the controller removes it on its next reconcile; if it persists, check the workspace's "
                        "DriftDetected condition",
                    )
                )
    bindings.sort(key=lambda b: (b.namespace, b.name))
    bound = {b.namespace for b in bindings if b.status == "Expected"}
    missing = [n for n in expected if n not in bound] if rb_readable else []

    ns_unknown = not store.readable("Namespace") and not cluster_wide
    if not rb_readable or ns_unknown or (revocation_confirmed is None and not cluster_wide):
        access = "Unknown"
    elif any(b.status == "NotRevoked" for b in bindings):
        access = "NotRevoked"
    elif any(b.status == "Unexpected" for b in bindings):
        access = "Unexpected"
    elif cluster_wide:
        access = "ClusterWide"
    elif missing:
        access = "Missing"
    else:
        access = "Ok"

    view = IdentityView(
        service_account=want_sa,
        client_id=want_client,
        state=id_state,
        accounts=accounts,
        retained=[f"{a.namespace}/{a.name}" for a in accounts if a.status == "Retained"],
        obsolete=[f"{a.namespace}/{a.name}" for a in obsolete],
        revocation_confirmed=revocation_confirmed,
        authorization_mode="cluster-wide" if cluster_wide else "workspace-rbac",
        researcher=researcher,
        expected_bindings=expected,
        bindings=bindings,
        missing_bindings=missing,
        access_state=access,
        unknown=unknown,
    )
    return view, findings
