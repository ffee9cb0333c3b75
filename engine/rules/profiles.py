"""Workload profile readiness and selection (docs/rules.md#profiles).

Fail closed: the profile set is usable only when the singleton TauCluster `cluster` is readable,
its profile status is at the current generation, `WorkloadProfilesReady` is True at that
generation, and the published profileSetHash equals the hash we recompute. Anything else makes
every selection `Unusable`. Pure functions of the store: the CLI reuses `select_profile`.
"""

from dataclasses import dataclass, field
from itertools import product

from ..model import TauWorkspace
from ..model.base import Condition, find_condition
from ..model.names import CLUSTER_GENERATION_ANNOTATION as ANN_GENERATION
from ..model.names import PROFILE_SET_HASH_ANNOTATION as ANN_SET_HASH
from ..model.names import WORKLOAD_PROFILE_ANNOTATION as ANN_PROFILE
from ..model.tau import ResolvedWorkloadProfile, TauCluster
from ..store import AccessState, Store
from .base import Finding, RuleContext, Severity, ViewModel, finding
from .profilehash import (
    MULTI_KUEUE,
    ProfileHashError,
    contains_or_global,
    normalize_label,
    normalize_name,
    normalize_profile,
    profile_set_hash,
)

CLUSTER_NAME = "cluster"

# Stamped on rendered workloads (as the tau CLI stamps them): the observed revision only, never quota/capacity.

# Resolution order of the controller's profile observer: the first failing one explains the rest,
# whose messages may be empty.
CONDITION_ORDER = (
    "LocalQueuesResolved",
    "ClusterQueuesReady",
    "ExecutionReady",
    "ResourceFlavorsReady",
    "TopologiesReady",
    "PriorityClassesReady",
    "Ready",
)

# Check ids of the usable-set contract, in evaluation order, and the finding each one raises.
CHECK_CLUSTER = "TauCluster"
CHECK_GENERATION = "ObservedGeneration"
CHECK_READY = "WorkloadProfilesReady"
CHECK_HASH = "ProfileSetHash"
_CHECK_RULE = {
    CHECK_CLUSTER: ("PROFILES-UNAVAILABLE", Severity.WARNING),
    CHECK_GENERATION: ("PROFILES-STALE", Severity.CRITICAL),
    CHECK_READY: ("PROFILES-NOT-READY", Severity.CRITICAL),
    CHECK_HASH: ("PROFILES-HASH-MISMATCH", Severity.CRITICAL),
}

# Selection errors of the `profiles select` contract.
NO_MATCH = "NoMatch"
AMBIGUOUS = "Ambiguous"
NOT_ELIGIBLE = "NotEligible"
UNUSABLE = "Unusable"


class Check(ViewModel):
    id: str
    ok: bool
    message: str
    applicable: bool = True  # False: a TauGrid check on a plain Kueue cluster (ok, not judged)


class ProfileRow(ViewModel):
    name: str
    ready: bool
    reason: str = ""
    execution_target: str = ""
    placement: str = ""
    default_local_queue: str = ""
    condition: str = ""  # the first failing resolved condition (empty when ready)
    message: str = ""
    teams: list[str] = []
    lanes: list[str] = []
    namespaces: list[str] = []


class Selection(ViewModel):
    namespace: str
    team: str
    lane: str
    profile: str | None = None
    error: str | None = None
    message: str = ""


class ProfilesView(ViewModel):
    usable: bool = False
    applicable: bool = True  # False: TauGrid is not installed (plain Kueue): profiles do not apply
    generation: int | None = None
    profile_set_hash: str | None = None
    computed_hash: str | None = None
    checks: list[Check] = []
    notes: list[str] = []
    profiles: list[ProfileRow] = []
    selections: list[Selection] = []


class SelectionResult(ViewModel):
    """The `taudash profiles select` output: {profile, error, message, annotations}."""

    profile: str | None = None
    error: str | None = None
    message: str = ""
    annotations: dict[str, str] = {}


# --- is this a TauGrid cluster at all? ---------------------------------------------------

TAUGRID_ABSENT = "TAUGRID-ABSENT"
_TAU_KINDS = ("TauCluster", "TauTeam", "TauWorkspace")


def taugrid_absent(store: Store) -> bool:
    """True when the cluster is plain Kueue: no TauGrid API is served, or the APIs are read and hold
    no TauCluster, TauTeam nor TauWorkspace at all. Unreadable (Forbidden, Error, Syncing) is not
    absent: the TauGrid checks then fail closed as before. A TauWorkspace without its TauCluster is
    a broken TauGrid cluster, not a plain Kueue one."""
    for kind in _TAU_KINDS:
        state = store.access(kind).state
        if store.list(kind) or state not in (AccessState.ABSENT, AccessState.SYNCED):
            return False
    return True


def taugrid_absent_message(store: Store) -> str:
    absent = [k for k in _TAU_KINDS if store.access(k).state is AccessState.ABSENT]
    why = ("its APIs are not served" if len(absent) == len(_TAU_KINDS)
           else "no TauCluster, TauTeam or TauWorkspace exists")
    return f"TauGrid not installed ({why}): a plain Kueue cluster; TauGrid checks do not apply"


# --- the observed profile set -------------------------------------------------------------


@dataclass(frozen=True)
class ProfileSet:
    """What the checks and selection need, read once from the store."""

    generation: int | None = None
    published_hash: str = ""
    computed_hash: str | None = None
    profiles: tuple[ResolvedWorkloadProfile, ...] = ()  # normalised, sorted by name
    checks: tuple[Check, ...] = ()
    notes: tuple[str, ...] = ()
    workspace_tuples: tuple[tuple[str, str], ...] = ()  # (namespace, team) of each TauWorkspace
    declared: bool = True  # False: no profiles declared in spec nor observed in status
    readable_cluster: bool = True  # False: clusters.tau.azure.com is not Synced
    _by_name: dict[str, ResolvedWorkloadProfile] = field(default_factory=dict, compare=False)
    _ready: dict[int, bool] = field(default_factory=dict, compare=False)  # by id(profile): selection asks often

    @property
    def usable(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def unusable_message(self) -> str:
        failed = [c.message for c in self.checks if not c.ok]
        return "workload profiles are not usable: " + ("; ".join(failed) if failed else "no TauCluster was read")

    def get(self, name: str) -> ResolvedWorkloadProfile | None:
        return self._by_name.get(name)

    def readiness(self, p: ResolvedWorkloadProfile) -> tuple[bool, str, str, str]:
        return profile_readiness(p, self.generation or 0)

    def is_ready(self, p: ResolvedWorkloadProfile) -> bool:
        ready = self._ready.get(id(p))
        if ready is None:
            ready = self._ready[id(p)] = self.readiness(p)[0]
        return ready


def _at(c: Condition | None, generation: int) -> bool:
    """True at the given generation; an absent observedGeneration counts as 0 (Go's zero value)."""
    return c is not None and c.is_true and (c.observed_generation or 0) == generation


def profile_readiness(p: ResolvedWorkloadProfile, generation: int) -> tuple[bool, str, str, str]:
    """(ready, failing condition, reason, message). Ready means `Ready=True` at `generation`."""
    if generation >= 1 and _at(find_condition(p.conditions, "Ready"), generation):
        return True, "", "", ""
    for ctype in CONDITION_ORDER:
        c = find_condition(p.conditions, ctype)
        if c is None:
            return False, ctype, "ConditionMissing", f"{ctype} condition is missing"
        if (c.observed_generation or 0) != generation:
            return (
                False,
                ctype,
                "StaleCondition",
                f"{ctype} observedGeneration {c.observed_generation or 0} does not match generation {generation}",
            )
        if not c.is_true:
            return False, ctype, c.reason or f"{ctype}{c.status}", c.message
    return False, "Ready", "NotReady", f"Ready is not True at generation {generation}"  # pragma: no cover


def _cond_text(c: Condition) -> str:
    text = f"{c.type}={c.status}"
    if c.reason:
        text += f" {c.reason}"
    if c.message:
        text += f": {c.message}"
    return text


def load_profile_set(ctx: RuleContext | Store) -> ProfileSet:
    """Read the TauCluster and run the usable-set checks of docs/rules.md#profiles-usable in order (later ones
    need earlier)."""
    store = ctx.store if isinstance(ctx, RuleContext) else ctx
    system_ns = ctx.config.system_namespace if isinstance(ctx, RuleContext) else "tau-system"
    ws_tuples = _workspace_tuples(store, system_ns)

    acc = store.access("TauCluster")
    if acc.state is not AccessState.SYNCED:
        why = (
            "the TauCluster API is not installed"
            if acc.state is AccessState.ABSENT
            else (f"clusters.tau.azure.com is {acc.state.value}" + (f": {acc.message}" if acc.message else ""))
        )
        return ProfileSet(
            checks=(Check(id=CHECK_CLUSTER, ok=False, message=f"cannot read TauCluster {CLUSTER_NAME!r}: {why}"),),
            workspace_tuples=ws_tuples,
            readable_cluster=False,
        )
    tc: TauCluster | None = store.get(TauCluster, CLUSTER_NAME)
    if tc is None:
        return ProfileSet(
            checks=(Check(id=CHECK_CLUSTER, ok=False, message=f"TauCluster {CLUSTER_NAME!r} does not exist"),),
            workspace_tuples=ws_tuples,
        )

    gen = tc.metadata.generation
    status = tc.status.workload_profiles
    checks = [Check(id=CHECK_CLUSTER, ok=True, message=f"TauCluster {CLUSTER_NAME!r} at generation {gen}")]
    notes: list[str] = []
    declared = bool(tc.spec.workload_profiles) or status is not None

    profiles: list[ResolvedWorkloadProfile] = []
    for raw in status.profiles if status else []:
        try:
            profiles.append(normalize_profile(raw))
        except ProfileHashError:
            profiles.append(raw)  # shown as-is; the hash check below fails for the same reason
    profiles.sort(key=lambda p: p.name)
    by_name: dict[str, ResolvedWorkloadProfile] = {}
    for p in profiles:
        by_name.setdefault(p.name, p)

    # 1. the profile status describes this generation
    if status is None:
        checks.append(
            Check(
                id=CHECK_GENERATION,
                ok=False,
                message=f"TauCluster {CLUSTER_NAME!r} has no status.workloadProfiles (not resolved yet)",
            )
        )
    elif gen < 1:
        checks.append(Check(id=CHECK_GENERATION, ok=False, message="TauCluster metadata.generation is missing"))
    elif status.observed_generation != gen:
        checks.append(
            Check(
                id=CHECK_GENERATION,
                ok=False,
                message=(
                    f"TauCluster {CLUSTER_NAME!r} workload profiles are stale: observedGeneration "
                    f"{status.observed_generation} does not match metadata.generation {gen}"
                ),
            )
        )
    else:
        checks.append(Check(id=CHECK_GENERATION, ok=True, message=f"status.workloadProfiles observed generation {gen}"))

    # 2. WorkloadProfilesReady=True at that generation (taudash follows the seed, not the public CLI)
    cond = tc.condition("WorkloadProfilesReady")
    if cond is None or (cond.observed_generation or 0) != gen:
        checks.append(
            Check(
                id=CHECK_READY,
                ok=False,
                message=f"TauCluster {CLUSTER_NAME!r} is missing condition WorkloadProfilesReady at generation {gen}",
            )
        )
    elif not cond.is_true:
        checks.append(Check(id=CHECK_READY, ok=False, message=_cond_text(cond)))
        if cond.is_false:
            notes.append(
                f"WorkloadProfilesReady=False at generation {gen}: the public tau CLI would still select the "
                "profiles that are Ready; taudash follows TauGrid's profile migration guide and treats the whole set "
                "as unusable"
            )
    else:
        checks.append(Check(id=CHECK_READY, ok=True, message=_cond_text(cond)))

    # 3. the published hash is non-empty and matches the resolved profiles
    published = status.profile_set_hash if status else ""
    computed: str | None = None
    hash_error = ""
    if status is not None:
        try:
            computed = profile_set_hash(list(status.profiles))
        except ProfileHashError as exc:
            hash_error = str(exc)
    if not published:
        checks.append(Check(id=CHECK_HASH, ok=False, message="status.workloadProfiles.profileSetHash is empty"))
    elif computed is None:
        checks.append(Check(id=CHECK_HASH, ok=False, message=f"profileSetHash cannot be recomputed: {hash_error}"))
    elif computed != published:
        checks.append(
            Check(
                id=CHECK_HASH,
                ok=False,
                message=f"profileSetHash mismatch: status has {published}, calculated {computed}",
            )
        )
    else:
        checks.append(Check(id=CHECK_HASH, ok=True, message=f"profileSetHash {published} verified"))

    return ProfileSet(
        generation=gen,
        published_hash=published,
        computed_hash=computed,
        profiles=tuple(profiles),
        checks=tuple(checks),
        notes=tuple(notes),
        workspace_tuples=ws_tuples,
        declared=declared,
        _by_name=by_name,
    )


def _workspace_tuples(store: Store, system_ns: str) -> tuple[tuple[str, str], ...]:
    if not store.readable("TauWorkspace"):
        return ()
    out = set()
    for ws in store.list(TauWorkspace, system_ns):
        ns = ws.status.target.resolved_namespace or ws.desired_namespace
        out.add((normalize_name(ns), normalize_label(ws.team or "")))
    return tuple(sorted(out))


# --- selection --------------------------------------------------------------------------


def applies(p: ResolvedWorkloadProfile, namespace: str, team: str, lane: str) -> bool:
    a = p.applicability
    return (
        contains_or_global(a.namespaces, namespace)
        and contains_or_global(a.teams, team)
        and contains_or_global(a.lanes, lane)
    )


def _authorization_error(p: ResolvedWorkloadProfile, namespace: str, team: str, lane: str) -> str | None:
    a = p.applicability
    for what, allowed, value in (
        ("namespace", a.namespaces, namespace),
        ("team", a.teams, team),
        ("lane", a.lanes, lane),
    ):
        if not contains_or_global(allowed, value):
            return (f"workload profile {p.name!r} does not authorize {what} {value!r}; allowed {what}s: "
                    f"{', '.join(allowed)}")
    return None


def _as_profile_set(source: RuleContext | Store | ProfileSet) -> ProfileSet:
    return source if isinstance(source, ProfileSet) else load_profile_set(source)


def select_profile(
    source: RuleContext | Store | ProfileSet,
    namespace: str,
    team: str,
    lane: str,
    profile: str | None = None,
) -> SelectionResult:
    """Select a profile for (namespace, team, lane), explicitly or implicitly (docs/rules.md#profiles-selection)."""
    return _select(_as_profile_set(source), namespace, team, lane, profile)[0]


def _select(
    ps: ProfileSet, namespace: str, team: str, lane: str, profile: str | None = None
) -> tuple[SelectionResult, list[str]]:
    """The selection and the eligible candidates it saw (for grouping ambiguity findings)."""
    ns, tm, ln = normalize_name(namespace), normalize_label(team), normalize_label(lane)
    where = f"namespace={ns}, team={tm}, lane={ln}"
    if not ps.usable:
        return SelectionResult(error=UNUSABLE, message=ps.unusable_message), []

    if profile:
        name = normalize_name(profile)
        p = ps.get(name)
        if p is None:
            return SelectionResult(
                error=NOT_ELIGIBLE, message=f"workload profile {name!r} is not declared on TauCluster {CLUSTER_NAME!r}"
            ), []
        ready, ctype, reason, msg = ps.readiness(p)
        if not ready:
            detail = f"{ctype} {reason}" + (f": {msg}" if msg else "")
            return SelectionResult(
                error=NOT_ELIGIBLE,
                message=f"workload profile {name!r} is not Ready at generation {ps.generation} ({detail})",
            ), []
        denied = _authorization_error(p, ns, tm, ln)
        if denied:
            return SelectionResult(error=NOT_ELIGIBLE, message=denied), []
        return _selected(ps, p, f"workload profile {name!r} selected explicitly for {where}"), [name]

    eligible = [p for p in ps.profiles if applies(p, ns, tm, ln) and ps.is_ready(p)]
    if not eligible:
        return SelectionResult(
            error=NO_MATCH, message=f"no ready workload profile matches {where}; set policy.profile explicitly"
        ), []
    if len(eligible) > 1:
        names = ", ".join(p.name for p in eligible)
        return SelectionResult(error=AMBIGUOUS, message=f"multiple ready workload profiles match {where}: {names}"), [
            p.name for p in eligible
        ]
    return _selected(ps, eligible[0], f"workload profile {eligible[0].name!r} is the only ready profile for {where}"), [
        eligible[0].name
    ]


def _selected(ps: ProfileSet, p: ResolvedWorkloadProfile, message: str) -> SelectionResult:
    return SelectionResult(
        profile=p.name,
        message=message + "; annotations identify the observed revision only, not quota or capacity",
        annotations={
            ANN_GENERATION: str(ps.generation),
            ANN_SET_HASH: ps.published_hash,
            ANN_PROFILE: p.name,
        },
    )


def _dimension(values: set[str]) -> list[str]:
    # A dimension nobody names is global everywhere: one "" row stands for "any value".
    return sorted(values) if values else [""]


def catalog_tuples(ps: ProfileSet, profiles: list[ResolvedWorkloadProfile] | None = None) -> list[tuple[str, str, str]]:
    """(namespace, team, lane) tuples worth selecting for: each profile's explicit lists crossed
    (a global list stands for every value the catalog names), plus every workspace's (namespace,
    team) with the catalog's lanes. `profiles` limits the catalog part to those profiles.

    Workspace values do not widen a global list: a workspace namespace only ever submits with its
    own team, and crossing every namespace with every team would grow with the cluster, not the
    catalog."""
    all_ns = {n for p in ps.profiles for n in p.applicability.namespaces}
    all_teams = {t for p in ps.profiles for t in p.applicability.teams}
    all_lanes = {ln for p in ps.profiles for ln in p.applicability.lanes}
    out: set[tuple[str, str, str]] = set()
    for p in ps.profiles if profiles is None else profiles:
        a = p.applicability
        out.update(
            product(
                a.namespaces or _dimension(all_ns),
                a.teams or _dimension(all_teams),
                a.lanes or _dimension(all_lanes),
            )
        )
    if profiles is None:
        for ns, team in ps.workspace_tuples:
            out.update((ns, team, ln) for ln in _dimension(all_lanes))
    return sorted(out)


# --- the rule ---------------------------------------------------------------------------


def derive_profiles(ctx: RuleContext) -> tuple[ProfilesView, list[Finding]]:
    if taugrid_absent(ctx.store):
        # Plain Kueue: said once, as information; profiles are not applicable, not unusable.
        msg = taugrid_absent_message(ctx.store)
        return ProfilesView(usable=False, applicable=False, notes=[msg]), [
            finding(Severity.INFO, TAUGRID_ABSENT, "TauCluster", CLUSTER_NAME, None, msg,
                    "nothing to do for a plain Kueue cluster; install TauGrid for workspaces and workload profiles")]
    ps = load_profile_set(ctx)
    findings: list[Finding] = []

    if not ps.declared and all(c.ok for c in ps.checks[:1]):
        # Nothing declared nor observed: nothing to select from; report once, quietly.
        findings.append(
            finding(
                Severity.INFO,
                "PROFILES-NONE",
                "TauCluster",
                CLUSTER_NAME,
                None,
                "no workload profiles are declared or observed: TauGrid submissions that need a profile stop",
                "declare spec.workloadProfiles on TauCluster cluster (see docs/profiles.md)",
            )
        )
    else:
        for c in ps.checks:
            if c.ok or (c.id == CHECK_CLUSTER and ps.readable_cluster):
                continue  # no TauCluster at all: not (yet) a TauGrid cluster; the view says unusable
            rule, sev = _CHECK_RULE[c.id]
            findings.append(finding(sev, rule, "TauCluster", CLUSTER_NAME, None, c.message, _HINTS[rule]))

    rows = []
    for p in ps.profiles:
        ready, ctype, reason, msg = ps.readiness(p)
        rows.append(
            ProfileRow(
                name=p.name,
                ready=ready,
                reason=reason,
                condition=ctype,
                message=msg,
                execution_target=p.execution_target,
                placement=p.placement,
                default_local_queue=p.default_local_queue,
                teams=list(p.applicability.teams),
                lanes=list(p.applicability.lanes),
                namespaces=list(p.applicability.namespaces),
            )
        )
        if not ready and ps.generation:
            findings.append(
                finding(
                    Severity.WARNING,
                    "PROFILE-NOT-READY",
                    "TauCluster",
                    CLUSTER_NAME,
                    None,
                    f"workload profile {p.name!r} is not Ready: {ctype} {reason}" + (f": {msg}" if msg else ""),
                    "start from the first failing condition; later conditions fail because of it",
                )
            )

    selections: list[Selection] = []
    ambiguous: dict[str, list[tuple[str, str, str]]] = {}
    for ns, team, lane in catalog_tuples(ps):
        res, candidates = _select(ps, ns, team, lane)
        selections.append(
            Selection(namespace=ns, team=team, lane=lane, profile=res.profile, error=res.error, message=res.message)
        )
        if res.error == AMBIGUOUS:
            ambiguous.setdefault(", ".join(candidates), []).append((ns, team, lane))
    for group, tuples in sorted(ambiguous.items()):
        first = ", ".join(f"namespace={n or '*'} team={t or '*'} lane={ln or '*'}" for n, t, ln in tuples[:3])
        more = f" (+{len(tuples) - 3} more)" if len(tuples) > 3 else ""
        findings.append(
            finding(
                Severity.WARNING,
                "PROFILE-AMBIGUOUS",
                "TauCluster",
                CLUSTER_NAME,
                None,
                f"ready workload profiles {group} all match {first}{more}: implicit selection fails there",
                "narrow the profiles' applicability or have submitters set policy.profile explicitly",
            )
        )

    view = ProfilesView(
        usable=ps.usable,
        generation=ps.generation,
        profile_set_hash=ps.published_hash or None,
        computed_hash=ps.computed_hash,
        checks=list(ps.checks),
        notes=list(ps.notes),
        profiles=rows,
        selections=selections,
    )
    return view, findings


_HINTS = {
    "PROFILES-UNAVAILABLE": "TauGrid submissions stop until the singleton TauCluster 'cluster' exists and is readable",
    "PROFILES-STALE": "wait for the controller to observe the new generation; check its logs if it does not",
    "PROFILES-NOT-READY": "read the WorkloadProfilesReady message and the first failing condition of each profile",
    "PROFILES-HASH-MISMATCH": "the published set does not match its hash: do not render from it; check the controller "
                              "version",
}


def targets_multikueue(p: ResolvedWorkloadProfile) -> bool:
    """multiKueue, including the beta-era spelling multiKueueBeta."""
    return p.execution_target.lower().startswith(MULTI_KUEUE.lower())
