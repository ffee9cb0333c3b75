"""Workspace phase, staleness and conditions (docs/rules.md#workspace-phase)."""

from ..model import TauWorkspace
from ..model.base import Condition, find_condition
from .base import Finding, RuleContext, Severity, ViewModel, finding
from .drain import BlockerMemo, DrainView, derive_drain
from .identity import IdentityView, derive_identity
from .storage import StorageView, derive_storage

PHASE_GATES = ("RBACReady", "QueueReady")


class ConditionRow(ViewModel):
    type: str
    status: str
    reason: str = ""
    message: str = ""


class WorkspaceView(ViewModel):
    name: str
    namespace: str
    team: str | None = None
    phase: str = ""
    expected_phase: str
    stale: bool
    deleting: bool = False
    local_queue: str | None = None
    cluster_queue: str | None = None
    conditions: list[ConditionRow] = []
    drain: DrainView = DrainView()
    identity: IdentityView = IdentityView()
    storage: StorageView = StorageView()

    @property
    def counted_ready(self) -> bool:
        """Ready for counting purposes: a stale workspace is never Ready."""
        return self.expected_phase == "Ready" and self.phase == "Ready" and not self.stale


def expected_phase(conditions: list[Condition]) -> str:
    """The controller's phase rule: drift, then a False gate, then a missing/Unknown gate."""
    drift = find_condition(conditions, "DriftDetected")
    if drift is not None and drift.is_true:
        return "Degraded"
    gates = [find_condition(conditions, t) for t in PHASE_GATES]
    if any(c is not None and c.is_false for c in gates):
        return "Degraded"
    if any(c is None or c.status not in ("True", "False") for c in gates):
        return "Pending"
    return "Ready"


def is_stale(ws: TauWorkspace) -> bool:
    return ws.status.observed_generation != ws.metadata.generation


def _degraded_cause(conditions: list[Condition]) -> Condition | None:
    drift = find_condition(conditions, "DriftDetected")
    if drift is not None and drift.is_true:
        return drift
    for t in PHASE_GATES:
        c = find_condition(conditions, t)
        if c is not None and c.is_false:
            return c
    return None


def derive_workspace(ctx: RuleContext, ws: TauWorkspace,
                     memo: BlockerMemo | None = None) -> tuple[WorkspaceView, list[Finding]]:
    findings: list[Finding] = []
    conds = ws.status.conditions
    expected = expected_phase(conds)
    stale = is_stale(ws)
    ns = ctx.config.system_namespace
    ref = ("TauWorkspace", ws.name, ws.namespace or ns)

    def add(sev: Severity, rule: str, message: str, hint: str = "") -> None:
        findings.append(finding(sev, rule, ref[0], ref[1], ref[2], message, hint))

    if stale:
        add(
            Severity.WARNING,
            "WS-STALE",
            f"status describes generation {ws.status.observed_generation}, spec is at {ws.metadata.generation}; "
            "not counted Ready until the controller observes the current spec",
            "check that the TauGrid controller is running and reconciling",
        )
    published = ws.status.phase or ""
    if published != expected:
        add(
            Severity.WARNING,
            "WS-PHASE-MISMATCH",
            f"published phase {published or '(none)'} differs from {expected} expected from its conditions",
            "the status may be stale; wait for the next reconcile",
        )
    if expected == "Degraded":
        cause = _degraded_cause(conds)
        detail = f"{cause.type}={cause.status} {cause.reason}: {cause.message}" if cause else "Degraded"
        add(Severity.CRITICAL, "WS-DEGRADED", f"Degraded: {detail}", "start from the condition reason and message")
    ident = find_condition(conds, "WorkloadIdentityReady")
    if ident is not None and ident.is_false:
        add(
            Severity.WARNING,
            "WS-IDENTITY-NOT-READY",
            f"WorkloadIdentityReady=False {ident.reason}: {ident.message} (diagnostic; does not gate the phase)",
            "resolve it before handing off workloads that rely on Azure Workload Identity",
        )

    drain, f = derive_drain(ctx, ws, memo)
    findings += f
    identity, f = derive_identity(ctx, ws, drain)
    findings += f
    storage, f = derive_storage(ctx, ws)
    findings += f

    view = WorkspaceView(
        name=ws.name,
        namespace=ws.status.target.resolved_namespace or ws.desired_namespace,
        team=ws.team,
        phase=published,
        expected_phase=expected,
        stale=stale,
        deleting=ws.deleting,
        local_queue=ws.status.queue.local_queue or ws.spec.queue or None,
        cluster_queue=ws.status.queue.cluster_queue or None,
        conditions=[
            ConditionRow(type=c.type, status=c.status, reason=c.reason, message=c.message) for c in conds
        ],
        drain=drain,
        identity=identity,
        storage=storage,
    )
    return view, findings


def derive_workspaces(ctx: RuleContext) -> tuple[list[WorkspaceView], list[Finding]]:
    views: list[WorkspaceView] = []
    findings: list[Finding] = []
    # TauWorkspaces are only honoured in the system namespace.
    for ws in ctx.store.list(TauWorkspace, ctx.config.system_namespace):
        v, f = derive_workspace(ctx, ws)
        views.append(v)
        findings += f
    return views, findings
