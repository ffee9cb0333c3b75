"""Workspace deletion and retarget drain (docs/rules.md#drain-mode).

The behaviour is TauGrid's: the TauWorkspace reference and the drain fix of TauGrid v0.4.5.

While a TauWorkspace is deleted or retargeted, the controller must keep the old namespace's
routing labels (and the unchanged execution identity) until accepted work on *required* routes
has drained. This module re-derives that verdict from live objects, never from `status.queue`.
"""

from collections.abc import Mapping

from ..model import ClusterQueue, Deployment, Job, LocalQueue, Namespace, RayJob, RayService, TauWorkspace, Workload
from ..model.names import DEACTIVATED_BY_ANNOTATION as DEACTIVATED_BY
from ..model.names import (
    DEFAULT_LOCAL_QUEUE_LABEL,
    JOB_UID_LABEL,
    LOCAL_QUEUE_LABEL,
    MANAGED_BY_LABEL,
    TEAM_LABEL,
    WORKSPACE_LABEL,
)
from ..model.names import KUEUE_MANAGED_LABEL as MANAGED_LABEL
from ..model.names import QUEUE_NAME_LABEL as QUEUE_LABEL
from ..store import StoredObject
from .base import Finding, RuleContext, Severity, ViewModel, finding
from .selectors import SelectorError, selector_matches

# The workspace's label keys the controller strips from the old namespace once the drain clears.
CLEANED_LABELS = (
    WORKSPACE_LABEL,
    TEAM_LABEL,
    LOCAL_QUEUE_LABEL,
    DEFAULT_LOCAL_QUEUE_LABEL,
    MANAGED_BY_LABEL,
)
# Set by taudash's hold workflow on each Workload it deactivates: the workflow's id.

# Route states that never make the drain wait.
NO_WAIT = ("SelectorIndependent", "NotRouted", "Missing")


class DrainRoute(ViewModel):
    local_queue: str | None = None
    cluster_queue: str
    state: str  # Required | SelectorIndependent | NotRouted | Missing | Unknown
    uid_continuity: str | None = None  # Unchanged | Changed | None (not recorded)
    reason: str = ""


class DrainBlocker(ViewModel):
    kind: str
    namespace: str
    name: str
    reason: str  # WorkloadUnfinished | AwaitingWorkload | LongRunningService | ManagedDeployment
    route: str | None = None
    message: str = ""
    action: str = ""  # what the operator does about it, in words


class UnknownInput(ViewModel):
    resource: str
    reason: str


class DrainView(ViewModel):
    state: str = "NotDraining"  # NotDraining | Clear | Blocked | Unknown
    mode: str | None = None  # Deletion | Retarget
    old_namespace: str | None = None
    new_namespace: str | None = None
    routes: list[DrainRoute] = []
    blockers: list[DrainBlocker] = []
    unknown: list[UnknownInput] = []

    @property
    def draining(self) -> bool:
        return self.state != "NotDraining"


def drain_mode(ws: TauWorkspace) -> str | None:
    if ws.deleting:
        return "Deletion"
    old = ws.status.target.resolved_namespace
    # An unresolved workspace has never had a namespace to drain.
    if old and ws.desired_namespace != old:
        return "Retarget"
    return None


def _operation(mode: str, ws: str) -> str:
    return f"the deletion of workspace {ws}" if mode == "Deletion" else f"the retarget of workspace {ws}"


def _route_state(cq: ClusterQueue | None, ns_labels: Mapping[str, str] | None, cq_unreadable: bool) -> tuple[str, str]:
    """State of one route ClusterQueue and why. `ns_labels` None means the Namespace is unreadable."""
    if cq_unreadable:
        return "Unknown", "ClusterQueues cannot be read"
    if cq is None:
        return "Missing", "the ClusterQueue does not exist; nothing can be admitted through it"
    if ns_labels is None:
        return "Unknown", "the old namespace cannot be read"
    after = {k: v for k, v in ns_labels.items() if k not in CLEANED_LABELS}
    sel = cq.spec.namespace_selector
    try:
        now, later = selector_matches(sel, ns_labels), selector_matches(sel, after)
    except SelectorError as exc:
        return "Unknown", str(exc)
    if now and not later:
        return "Required", "its namespaceSelector selects the old namespace only through the workspace labels"
    if now:
        return (
            "SelectorIndependent",
            "its namespaceSelector keeps selecting the old namespace without the workspace labels",
        )
    return "NotRouted", "its namespaceSelector does not select the old namespace"


def _derived_index(workloads: list[Workload]) -> tuple[set[tuple[str, str, str]], set[str]]:
    """Owner (kind, uid, name) triples and job-uid labels of the Workloads in the namespace."""
    owners: set[tuple[str, str, str]] = set()
    uids: set[str] = set()
    for wl in workloads:
        for ref in wl.metadata.owner_references:
            owners.add((ref.kind, ref.uid, ref.name))
        if wl.labels.get(JOB_UID_LABEL):
            uids.add(wl.labels[JOB_UID_LABEL])
    return owners, uids


def _has_workload(src: StoredObject, kind: str, owners: set[tuple[str, str, str]], uids: set[str]) -> bool:
    # Kind, UID *and* name: a re-created source with the same name is a different object.
    return (kind, src.uid, src.name) in owners or (bool(src.uid) and src.uid in uids)


def _workload_message(wl: Workload) -> str:
    if not wl.spec.active:
        return "Workload is deactivated (spec.active=false) and not Finished: it will not run until reactivated"
    return f"Workload is {wl.derived_status} and not Finished"


def _workload_action(wl: Workload, op: str) -> str:
    ref = f"{wl.namespace}/{wl.name}"
    owner = wl.owner
    if not wl.spec.active:  # it will never finish by waiting: say who stopped it and what ends it
        by = wl.metadata.annotations.get(DEACTIVATED_BY)
        how = f"deactivated by workflow {by}" if by else "deactivated"
        whose = f"its owner {owner.kind} {wl.namespace}/{owner.name}" if owner else "it"
        return f"Workload {ref} {how}: reactivate it or delete {whose}, before completing {op}"
    if owner is None:
        return f"wait for Workload {ref} to finish, or delete it, before completing {op}"
    oref = f"{owner.kind} {wl.namespace}/{owner.name}"
    if owner.kind in ("RayService", "Deployment"):
        return f"delete {oref} (owner of Workload {ref}) before completing {op}"
    return f"wait for Workload {ref} to finish, or cancel its owner {oref}, before completing {op}"


BlockerMemo = dict[str, tuple[Workload, str, str, DrainBlocker]]  # Workload name → (it, route, operation, blocker)


def derive_drain(ctx: RuleContext, ws: TauWorkspace, memo: BlockerMemo | None = None) -> tuple[DrainView, list[Finding]]:
    """The drain of one workspace. `memo` (the caller's, one per workspace) keeps each unfinished Workload's
    blocker between two derivations: a Workload the store still holds as the same object, on the same route of the
    same operation, keeps its blocker (a change re-derived a draining workspace whole); the memo is left
    holding this derivation's blockers only."""
    mode = drain_mode(ws)
    if mode is None:
        return DrainView(), []
    store = ctx.store
    old = ws.status.target.resolved_namespace or None
    new = ws.desired_namespace if mode == "Retarget" else None
    if old is None:  # deleting a workspace that never resolved a namespace: nothing to keep
        return DrainView(state="Clear", mode=mode, new_namespace=new), []

    unknown: list[UnknownInput] = []

    def note(kinds: tuple[str, ...], optional: bool = False) -> bool:
        bad = ctx.unreadable(*kinds, optional_absent_ok=optional)
        for resource, reason in bad:
            if all(u.resource != resource for u in unknown):
                unknown.append(UnknownInput(resource=resource, reason=reason))
        return bool(bad)

    lq_bad = note(("LocalQueue",))
    cq_bad = note(("ClusterQueue",))
    ns_bad = note(("Namespace",))
    wl_bad = note(("Workload",))

    ns_obj = store.get(Namespace, old)
    ns_labels = None if ns_bad else (ns_obj.labels if ns_obj is not None else {})
    lq_cq = {} if lq_bad else {lq.name: lq.spec.cluster_queue for lq in store.list(LocalQueue, old)}
    workloads: list[Workload] = [] if wl_bad else store.list(Workload, old)
    unfinished = [w for w in workloads if not w.finished]

    # Routes: (LocalQueue or None, ClusterQueue). Live LocalQueues first, then unfinished Workloads.
    pairs: set[tuple[str | None, str]] = {(lq, cq) for lq, cq in lq_cq.items() if cq}
    wl_routes: dict[str, list[str]] = {}
    for wl in unfinished:
        q = wl.spec.queue_name or None
        cqs = []
        if q and q in lq_cq and lq_cq[q]:
            cqs.append(lq_cq[q])
        adm = wl.status.admission.cluster_queue if wl.status.admission else ""
        if adm and adm not in cqs:
            cqs.append(adm)
            pairs.add((q, adm))
        wl_routes[wl.name] = cqs

    recorded_cq = ws.status.queue.cluster_queue
    recorded_uid = ws.status.queue.cluster_queue_uid
    cq_state: dict[str, str] = {}
    routes: list[DrainRoute] = []
    findings: list[Finding] = []
    ws_ns = ws.namespace or ctx.config.system_namespace
    op = _operation(mode, ws.name)
    replaced_reported: set[str] = set()
    for lq, cqn in sorted(pairs, key=lambda p: (p[1], p[0] or "")):
        cq = None if cq_bad else store.get(ClusterQueue, cqn)
        state, why = _route_state(cq, ns_labels, cq_bad)
        cq_state[cqn] = state
        continuity = None
        if cq is not None and recorded_uid and cqn == recorded_cq:
            continuity = "Unchanged" if cq.uid == recorded_uid else "Changed"
        routes.append(DrainRoute.trusted(local_queue=lq, cluster_queue=cqn, state=state, uid_continuity=continuity,
                                         reason=why))
        if continuity == "Changed" and cqn not in replaced_reported:
            replaced_reported.add(cqn)
            findings.append(
                finding(
                    Severity.WARNING,
                    "DRAIN-QUEUE-REPLACED",
                    "TauWorkspace",
                    ws.name,
                    ws_ns,
                    f"ClusterQueue {cqn} routing namespace {old} has UID "
                    f"{(cq.uid if cq is not None else '') or '(none)'}, but workspace {ws.name} recorded "
                    f"{recorded_uid}: the queue was replaced by another owner",
                    "TauGrid leaves a replaced queue untouched; confirm with the queue's owner that the "
                    "replacement is intended",
                )
            )
    # Without LocalQueues or Workloads the route set itself is incomplete: `unknown` already says so.
    unknown_routes = any(s == "Unknown" for s in cq_state.values())

    required = {c for c, s in cq_state.items() if s == "Required"}
    blockers: list[DrainBlocker] = []

    def route_of(queue: str | None) -> str | None:
        cqn = lq_cq.get(queue or "")
        return cqn if cqn in required else None

    kept: BlockerMemo = {}
    for wl in unfinished:
        hit = next((c for c in wl_routes.get(wl.name, []) if c in required), None)
        if hit is None:
            continue
        m = memo.get(wl.name) if memo is not None else None
        if m is not None and m[0] is wl and m[1] == hit and m[2] == op:
            blocker = m[3]
        else:
            blocker = DrainBlocker.trusted(
                kind="Workload",
                namespace=old,
                name=wl.name,
                reason="WorkloadUnfinished",
                route=hit,
                message=_workload_message(wl),
                action=_workload_action(wl, op),
            )
        kept[wl.name] = (wl, hit, op, blocker)
        blockers.append(blocker)
    if memo is not None:
        memo.clear()
        memo.update(kept)

    if required:
        # Sources matter only when some route is Required; an unreadable source API fails closed.
        job_bad, dep_bad = note(("Job",)), note(("Deployment",))
        rayjob_bad, raysvc_bad = note(("RayJob",), optional=True), note(("RayService",), optional=True)
        owners, uids = _derived_index(workloads)

        if not job_bad:
            for job in store.list(Job, old):
                route = route_of(job.labels.get(QUEUE_LABEL))
                if route is None or job.finished or _has_workload(job, "Job", owners, uids):
                    continue
                blockers.append(
                    DrainBlocker.trusted(
                        kind="Job",
                        namespace=old,
                        name=job.name,
                        reason="AwaitingWorkload",
                        route=route,
                        message="submitted Job has no Workload yet and is neither Complete nor Failed",
                        action=f"wait for Job {old}/{job.name} to complete, or delete it, before completing {op}",
                    )
                )
        if not rayjob_bad:
            for rj in store.list(RayJob, old):
                route = route_of(rj.labels.get(QUEUE_LABEL))
                if route is None or rj.finished or _has_workload(rj, "RayJob", owners, uids):
                    continue
                st = rj.status.job_deployment_status or "New"
                retry = " (a failed driver with a retry pending)" if st == "Retrying" else ""
                blockers.append(
                    DrainBlocker.trusted(
                        kind="RayJob",
                        namespace=old,
                        name=rj.name,
                        reason="AwaitingWorkload",
                        route=route,
                        message=f"RayJob has no Workload yet and its deployment status {st} is not terminal{retry}",
                        action=f"wait for RayJob {old}/{rj.name} to reach Complete or Failed, or delete it, "
                        f"before completing {op}",
                    )
                )
        if not raysvc_bad:
            for svc in store.list(RayService, old):
                route = route_of(svc.labels.get(QUEUE_LABEL))
                if route is None:
                    continue
                blockers.append(
                    DrainBlocker.trusted(
                        kind="RayService",
                        namespace=old,
                        name=svc.name,
                        reason="LongRunningService",
                        route=route,
                        message="a RayService never finishes: it holds the route until deleted, "
                        "even when its Workload reports Finished",
                        action=f"delete RayService {old}/{svc.name} before completing {op}",
                    )
                )
        if not dep_bad:
            for dep in store.list(Deployment, old):
                tmpl = dep.spec.template.metadata.labels
                if tmpl.get(MANAGED_LABEL) != "true":
                    continue  # unmanaged Deployments are not Kueue sources
                route = route_of(tmpl.get(QUEUE_LABEL) or dep.labels.get(QUEUE_LABEL))
                if route is None:
                    continue
                dep_state = []
                if (dep.spec.replicas if dep.spec.replicas is not None else 1) == 0:
                    dep_state.append("scaled to zero")
                if dep.spec.paused:
                    dep_state.append("paused")
                if dep.deleting:
                    dep_state.append("deleting")
                detail = f" ({', '.join(dep_state)})" if dep_state else ""
                blockers.append(
                    DrainBlocker.trusted(
                        kind="Deployment",
                        namespace=old,
                        name=dep.name,
                        reason="ManagedDeployment",
                        route=route,
                        message=f"Kueue-managed Deployment{detail} has no terminal state: it holds the route "
                        "until deleted, whatever its replicas or Pod Workloads",
                        action=f"delete Deployment {old}/{dep.name} before completing {op}",
                    )
                )

    blockers.sort(key=lambda b: (b.kind, b.namespace, b.name))
    unknown.sort(key=lambda u: u.resource)
    if unknown or unknown_routes:
        state = "Unknown"
    elif blockers:
        state = "Blocked"
    else:
        state = "Clear"

    view = DrainView(
        state=state,
        mode=mode,
        old_namespace=old,
        new_namespace=new,
        routes=routes,
        blockers=blockers,
        unknown=unknown,
    )
    what = (
        f"Deletion of workspace {ws.name}"
        if mode == "Deletion"
        else f"Retarget of workspace {ws.name} from namespace {old} to {new}"
    )
    if blockers:
        names = ", ".join(f"{b.kind} {b.namespace}/{b.name}" for b in blockers[:6])
        more = f" and {len(blockers) - 6} more" if len(blockers) > 6 else ""
        findings.append(
            finding(
                Severity.WARNING,
                "DRAIN-BLOCKED",
                "TauWorkspace",
                ws.name,
                ws_ns,
                f"{what} waits: namespace {old} keeps its routing labels for {len(blockers)} object(s) on "
                f"required route(s) {', '.join(sorted({b.route for b in blockers if b.route}))}: {names}{more}",
                "; ".join(dict.fromkeys(b.action for b in blockers)),
            )
        )
    if state == "Unknown":
        if unknown:
            why = ", ".join(f"{u.resource} ({u.reason})" for u in unknown)
        else:
            why = ", ".join(f"route {r.cluster_queue}: {r.reason}" for r in routes if r.state == "Unknown")
        findings.append(
            finding(
                Severity.CRITICAL,
                "DRAIN-UNKNOWN",
                "TauWorkspace",
                ws.name,
                ws_ns,
                f"{what}: cannot tell whether namespace {old} still routes accepted work; unreadable: {why}",
                "restore read access (the controller also waits until it can read them); do not remove "
                "routing labels or execution identity by hand meanwhile",
            )
        )
    return view, findings
