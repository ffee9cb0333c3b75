"""MultiKueue readiness M1-M5 (docs/rules.md#multikueue).

MultiKueue is Ready only when every check holds; each check is reported with ok and a message
so an operator sees which prerequisite is missing. Unreadable inputs fail the checks that need
them (fail closed).
"""

from ..model import TauCluster
from ..model.kueue import MULTIKUEUE_CONTROLLER, AdmissionCheck, MultiKueueCluster, MultiKueueConfig
from ..model.tau import ResolvedWorkloadProfile
from ..store import AccessState
from .base import Finding, RuleContext, Severity, ViewModel, finding
from .profiles import (
    AMBIGUOUS,
    CLUSTER_NAME,
    Check,
    ProfileSet,
    ProfilesView,
    _select,
    catalog_tuples,
    load_profile_set,
    targets_multikueue,
    taugrid_absent,
)

NOT_CONFIGURED = "NotConfigured"
READY = "Ready"
NOT_READY = "NotReady"


class Worker(ViewModel):
    name: str
    active: bool | None = None
    reason: str = ""
    message: str = ""
    config: str = ""  # the MultiKueueConfig that lists it ("" when listed by none)


class MultiKueueView(ViewModel):
    state: str = NOT_CONFIGURED  # NotConfigured | Ready | NotReady
    checks: list[Check] = []
    workers: list[Worker] = []


def _unreadable(ctx: RuleContext, *kinds: str) -> str:
    return ", ".join(f"{res} is {why}" for res, why in ctx.unreadable(*kinds))


def _active(obj: MultiKueueCluster | AdmissionCheck) -> tuple[bool | None, str, str]:
    c = obj.condition("Active")
    if c is None:
        return None, "", "no Active condition reported"
    return c.is_true, c.reason, c.message


def _m1(ctx: RuleContext) -> Check:
    absent = [k for k in ("MultiKueueConfig", "MultiKueueCluster") if ctx.store.access(k).state is AccessState.ABSENT]
    if absent:
        return Check(
            id="M1", ok=False, message=f"{' and '.join(absent)} API not installed: install Kueue's MultiKueue support"
        )
    bad = _unreadable(ctx, "MultiKueueConfig", "MultiKueueCluster")
    if bad:
        return Check(id="M1", ok=False, message=f"cannot confirm the MultiKueue APIs: {bad}")
    return Check(id="M1", ok=True, message="MultiKueueConfig and MultiKueueCluster APIs are installed")


def _m2(ctx: RuleContext) -> Check:
    bad = _unreadable(ctx, "TauCluster")
    if bad:
        return Check(id="M2", ok=False, message=f"cannot read TauCluster {CLUSTER_NAME!r}: {bad}")
    tc = ctx.store.get(TauCluster, CLUSTER_NAME)
    if tc is None:
        return Check(id="M2", ok=False, message=f"TauCluster {CLUSTER_NAME!r} does not exist")
    gen = tc.metadata.generation
    c = tc.condition("MultiKueueReady")
    if c is None:
        return Check(id="M2", ok=False, message="TauCluster has no MultiKueueReady condition")
    if (c.observed_generation or 0) != gen:
        return Check(
            id="M2",
            ok=False,
            message=f"MultiKueueReady observedGeneration {c.observed_generation or 0} does not match generation {gen}",
        )
    text = f"MultiKueueReady={c.status} {c.reason}" + (f": {c.message}" if c.message else "")
    return Check(id="M2", ok=c.is_true, message=text)


def _mk_checks(ctx: RuleContext) -> list[AdmissionCheck]:
    return [ac for ac in ctx.store.list(AdmissionCheck) if ac.spec.controller_name == MULTIKUEUE_CONTROLLER]


def _m3(ctx: RuleContext) -> tuple[Check, list[Worker]]:
    """An Active MultiKueue AdmissionCheck → existing MultiKueueConfig → ≥1 Active MultiKueueCluster."""
    bad = _unreadable(ctx, "AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster")
    workers: dict[str, Worker] = {}
    if not bad:
        for mc in ctx.store.list(MultiKueueCluster):
            active, reason, message = _active(mc)
            workers[mc.name] = Worker(name=mc.name, active=active, reason=reason, message=message)
    if bad:
        return Check(id="M3", ok=False, message=f"cannot evaluate MultiKueue wiring: {bad}"), list(workers.values())

    checks = _mk_checks(ctx)
    if not checks:
        return Check(id="M3", ok=False, message=f"no AdmissionCheck uses controller {MULTIKUEUE_CONTROLLER}"), []
    issues: list[str] = []
    good = ""
    for ac in checks:
        active, reason, _ = _active(ac)
        params = ac.spec.parameters
        config: MultiKueueConfig | None = None
        if params is None or params.kind != "MultiKueueConfig" or not params.name:
            issues.append(f"AdmissionCheck {ac.name!r} does not reference a MultiKueueConfig")
        else:
            config = ctx.store.get(MultiKueueConfig, params.name)
            if config is None:
                issues.append(f"AdmissionCheck {ac.name!r} references missing MultiKueueConfig {params.name!r}")
        active_workers: list[str] = []
        if config is not None:
            for name in config.spec.clusters:
                listed = ctx.store.get(MultiKueueCluster, name)
                if listed is None:
                    workers[name] = Worker(
                        name=name,
                        active=None,
                        reason="NotFound",
                        message=f"listed by MultiKueueConfig {config.name!r} but does not exist",
                        config=config.name,
                    )
                    continue
                workers[name] = workers[name].model_copy(update={"config": config.name})
                if workers[name].active:
                    active_workers.append(name)
            if not config.spec.clusters:
                issues.append(f"MultiKueueConfig {config.name!r} has no worker clusters")
            elif not active_workers:
                issues.append(f"MultiKueueConfig {config.name!r} has no Active worker clusters")
        if not active:
            issues.append(f"AdmissionCheck {ac.name!r} is not Active" + (f" ({reason})" if reason else ""))
        if active and config is not None and active_workers and not good:
            good = (
                f"AdmissionCheck {ac.name!r} is Active with MultiKueueConfig {config.name!r} "
                f"and Active worker(s) {', '.join(active_workers)}"
            )
    workers_out = sorted(workers.values(), key=lambda w: w.name)
    if good:
        return Check(id="M3", ok=True, message=good), workers_out
    return Check(id="M3", ok=False, message="; ".join(sorted(set(issues)))), workers_out


def _queues(p: ResolvedWorkloadProfile) -> set[tuple[str, str]]:
    # A profile's LocalQueues: the resolved pairs, else its default queue name in any namespace.
    if p.local_queues:
        return {(q.namespace, q.name) for q in p.local_queues}
    return {("*", p.default_local_queue)}


def _shares_queue(a: set[tuple[str, str]], b: set[tuple[str, str]]) -> bool:
    if a & b:
        return True
    names_a = {n for ns, n in a if ns == "*"}
    names_b = {n for ns, n in b if ns == "*"}
    return bool(names_a & {n for _, n in b}) or bool(names_b & {n for _, n in a})


def _m4_m5(ps: ProfileSet) -> tuple[Check, Check]:
    if not ps.checks or not ps.checks[0].ok:
        msg = ps.unusable_message
        return Check(id="M4", ok=False, message=msg), Check(id="M5", ok=False, message=msg)
    mk = [p for p in ps.profiles if targets_multikueue(p)]
    single = [p for p in ps.profiles if not targets_multikueue(p)]
    if not mk:
        m4_fail = "no workload profile has executionTarget multiKueue"
        return Check(id="M4", ok=False, message=m4_fail), Check(id="M5", ok=False, message=m4_fail)

    candidates = []
    issues = []
    for p in mk:
        if not ps.is_ready(p):
            _, ctype, reason, _ = ps.readiness(p)
            issues.append(f"profile {p.name!r} is not Ready ({ctype} {reason})")
            continue
        shared = sorted(s.name for s in single if _shares_queue(_queues(p), _queues(s)))
        if shared:
            issues.append(f"profile {p.name!r} shares its LocalQueue with singleCluster profile(s) {', '.join(shared)}")
            continue
        candidates.append(p)
    if not candidates:
        m4 = Check(id="M4", ok=False, message="; ".join(issues))
        return m4, Check(id="M5", ok=False, message="no ready multiKueue profile with a dedicated LocalQueue")
    m4 = Check(
        id="M4",
        ok=True,
        message=f"ready multiKueue profile(s) with a dedicated LocalQueue: {', '.join(p.name for p in candidates)}",
    )

    if not ps.usable:
        return m4, Check(id="M5", ok=False, message=ps.unusable_message)
    m5_issues = []
    for p in candidates:
        clashes = []
        for ns, team, lane in catalog_tuples(ps, [p]):
            res, names = _select(ps, ns, team, lane)
            if res.profile != p.name:
                clashes.append(
                    f"namespace={ns or '*'} team={team or '*'} lane={lane or '*'} "
                    + (
                        f"also matches {', '.join(n for n in names if n != p.name)}"
                        if res.error == AMBIGUOUS
                        else f"gives {res.error}"
                    )
                )
        if not clashes:
            return m4, Check(id="M5", ok=True, message=f"profile {p.name!r} resolves uniquely for its applicability")
        m5_issues.append(
            f"profile {p.name!r}: "
            + "; ".join(clashes[:3])
            + (f" (+{len(clashes) - 3} more)" if len(clashes) > 3 else "")
        )
    return m4, Check(id="M5", ok=False, message="; ".join(m5_issues))


NOT_APPLICABLE = "not applicable: TauGrid is not installed (plain Kueue); this is a TauGrid check"


def derive_multikueue(ctx: RuleContext, profiles: ProfilesView) -> tuple[MultiKueueView, list[Finding]]:
    # `profiles` is the derived view; the checks need the normalised profiles themselves.
    plain = taugrid_absent(ctx.store)  # plain Kueue: judged on the Kueue facts alone (M1, M3)
    ps = load_profile_set(ctx)
    blind = _unreadable(ctx, "AdmissionCheck") if plain else _unreadable(ctx, "TauCluster", "AdmissionCheck")
    uses_profiles = not plain and (any(targets_multikueue(p) for p in ps.profiles) or _declares_multikueue(ctx))
    uses_checks = not _unreadable(ctx, "AdmissionCheck") and bool(_mk_checks(ctx))
    if not blind and not uses_profiles and not uses_checks:
        return MultiKueueView(state=NOT_CONFIGURED), []

    m3, workers = _m3(ctx)
    if plain:
        m2, m4, m5 = (Check(id=i, ok=True, applicable=False, message=NOT_APPLICABLE) for i in ("M2", "M4", "M5"))
    else:
        m2, (m4, m5) = _m2(ctx), _m4_m5(ps)
    checks = [_m1(ctx), m2, m3, m4, m5]
    disconnected = _disconnected(workers)
    if all(c.ok for c in checks):
        return MultiKueueView(state=READY, checks=checks, workers=workers), disconnected

    failed = "; ".join(f"{c.id} {c.message}" for c in checks if not c.ok)
    if uses_profiles or uses_checks:
        sev, msg = Severity.CRITICAL, f"MultiKueue is configured but not ready: {failed}"
    else:  # cannot even tell whether it is configured
        sev, msg = Severity.WARNING, f"cannot tell whether MultiKueue is configured ({blind}): {failed}"
    f = finding(
        sev,
        "MK-NOT-READY",
        "TauCluster",
        CLUSTER_NAME,
        None,
        msg,
        "fix the first failing check; MultiKueue profiles cannot dispatch until all of M1-M5 hold",
    )
    return MultiKueueView(state=NOT_READY, checks=checks, workers=workers), [f, *disconnected]


def _disconnected(workers: list[Worker]) -> list[Finding]:
    """A worker the manager cannot reach is a finding, not a green check: MultiKueue cannot dispatch to
    it and does not see its mirror Workloads. A listed cluster that does not exist is M3's business."""
    out = []
    for w in workers:
        if w.active is True or w.reason == "NotFound":
            continue
        why = f"Active={'False' if w.active is False else 'unknown'}" + (f" {w.reason}" if w.reason else "")
        out.append(finding(
            Severity.WARNING,
            "MK-WORKER-DISCONNECTED",
            "MultiKueueCluster",
            w.name,
            None,
            f"MultiKueue worker {w.name} is not connected ({why})" + (f": {w.message}" if w.message else ""),
            "check the worker's API server and the kubeconfig Secret the MultiKueueCluster names; "
            "nothing is dispatched to it until it is Active",
        ))
    return out


def _declares_multikueue(ctx: RuleContext) -> bool:
    if not ctx.store.readable("TauCluster"):
        return False
    tc = ctx.store.get(TauCluster, CLUSTER_NAME)
    return tc is not None and any(
        (p.execution_target or "").strip().lower().startswith("multikueue") for p in tc.spec.workload_profiles
    )
