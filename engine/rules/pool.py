"""Automatic shared team capacity (docs/rules.md#pool; TauGrid's TauWorkspace reference).

One team (TauCluster `spec.queues.capacityTeamRef`) owns the allocatable inventory of the eligible
GPU nodes through its root Cohort; its workspace ClusterQueues hold zero nominal quota and borrow.
This module recomputes what the controller must have done (expected budget, validation, zeroing)
and compares it with what Kueue holds (observed budget, reservations, headroom).

Without a capacityTeamRef the pool is `Explicit`: the same per-flavor view is built from declared
team quotas and the live team Cohorts / workspace ClusterQueues, and only POOL-RETAINED applies.

Fail closed: a kind the verdict needs that cannot be read makes `valid` None (or False when a
conflict is proven from the kinds that can be read) and hides every number derived from it.
"""

from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..model import ZERO, ClusterQueue, Cohort, Node, Quantity, ResourceFlavor, TauCluster, TauTeam, TauWorkspace
from ..model.base import ObjectAccessors
from ..model.kueue import FlavorUsage, ResourceGroup
from ..model.names import DISCOVER_GPU_FLAVORS_LABEL as DISCOVER_LABEL
from ..model.names import GPU_CLASS_LABEL, TEAM_LABEL
from ..model.names import MANAGED_BY_LABEL as MANAGED_BY
from ..model.tau import TauResourceQuota
from .base import Finding, QtyMap, Rule, RuleContext, Severity, ViewModel, WholePart, finding
from .profiles import taugrid_absent
from .queues import TAU_MANAGER
from .selectors import labels_match

OS_LABEL = "kubernetes.io/os"
FLAVOR_PREFIX = "taugrid-gpu-"

# In evaluation order: an excluded candidate reports the first one that fails.
EXCLUSION_REASONS = ("NotLinux", "SelectorMismatch", "NotReady", "Unschedulable", "Deleting")

# Every kind a pool verdict reads (docs/rules.md#pool). Explicit mode does not need ResourceFlavors.
AUTOMATIC_KINDS = ("TauCluster", "Node", "ClusterQueue", "Cohort", "ResourceFlavor", "TauTeam", "TauWorkspace")
EXPLICIT_KINDS = ("TauCluster", "Node", "ClusterQueue", "Cohort", "TauTeam", "TauWorkspace")

# flavor -> resource -> quantity
Nested = dict[str, dict[str, Quantity]]
FlavorQty = dict[str, QtyMap]


class PoolConflict(ViewModel):
    code: str
    kind: str
    name: str
    message: str


class ExcludedNode(ViewModel):
    node: str
    reason: str


class PoolFlavor(ViewModel):
    name: str
    gpu_class: str
    nodes: int
    excluded: list[ExcludedNode] = []
    inventory: QtyMap = {}
    budget: QtyMap = {}
    observed_budget: QtyMap = {}
    reserved: QtyMap = {}
    used: QtyMap = {}
    headroom: QtyMap = {}
    disappeared: bool = False


class PoolQueue(ViewModel):
    cluster_queue: str
    workspace: str | None = None
    reserved: FlavorQty = {}
    used: FlavorQty = {}
    # additions beyond the contract (same screens for both modes)
    team: str | None = None
    cohort: str | None = None
    missing: bool = False  # the ClusterQueue named by the workspace does not exist
    managed: bool = False
    nominal: FlavorQty = {}
    borrowing_limit: FlavorQty = {}  # only entries that set one (null = unlimited)
    borrowed: FlavorQty = {}


class PoolTeam(ViewModel):
    """A TauTeam and its Cohort hierarchy: the explicit-mode counterpart of the pool header."""

    name: str
    cohort: str
    cohort_exists: bool = False
    managed: bool = False
    quota_declared: bool = False
    workspaces: list[str] = []
    queues: list[str] = []
    quota: FlavorQty = {}  # declared TauTeam.spec.quota nominal
    cohort_nominal: FlavorQty = {}  # the live Cohort's own nominal
    member_nominal: FlavorQty = {}
    reserved: FlavorQty = {}
    used: FlavorQty = {}
    borrowed: FlavorQty = {}


class PoolUnknown(ViewModel):
    resource: str
    reason: str


class PoolView(ViewModel):
    mode: str = "None"  # Automatic | Explicit | None
    team: str | None = None
    cohort: str | None = None
    valid: bool | None = None
    established: bool = False
    zeroed: bool = False
    conflicts: list[PoolConflict] = []
    flavors: list[PoolFlavor] = []
    queues: list[PoolQueue] = []
    # additions beyond the contract
    covered_resources: list[str] = []
    teams: list[PoolTeam] = []
    unknown: list[PoolUnknown] = []


# --- node eligibility and inventory ------------------------------------------------------


def flavor_name(gpu_class: str) -> str:
    return FLAVOR_PREFIX + gpu_class


def exclusion_reason(node: Node, selector: Mapping[str, str]) -> str | None:
    """Why a gpu-class candidate does not count, or None when it counts."""
    os_name = node.labels.get(OS_LABEL) or (node.status.node_info.operating_system if node.status.node_info else "")
    if os_name != "linux":
        return "NotLinux"
    if not labels_match(selector, node.labels):
        return "SelectorMismatch"
    ready = node.condition("Ready")
    if ready is None or not ready.is_true:
        return "NotReady"
    if node.spec.unschedulable:
        return "Unschedulable"
    if node.deleting:
        return "Deleting"
    return None


@dataclass
class ClassNodes:
    gpu_class: str
    counted: list[str] = field(default_factory=list)
    excluded: list[ExcludedNode] = field(default_factory=list)
    inventory: dict[str, Quantity] = field(default_factory=dict)


def node_inventory(nodes: Iterable[Node], selector: Mapping[str, str]) -> dict[str, ClassNodes]:
    """Per GPU-class flavor: counted nodes, excluded candidates, summed allocatable."""
    out: dict[str, ClassNodes] = {}
    for node in sorted(nodes, key=lambda n: n.name):
        cls = node.labels.get(GPU_CLASS_LABEL, "")
        if not cls:
            continue
        entry = out.setdefault(flavor_name(cls), ClassNodes(cls))
        reason = exclusion_reason(node, selector)
        if reason is not None:
            entry.excluded.append(ExcludedNode(node=node.name, reason=reason))
            continue
        entry.counted.append(node.name)
        for res, qty in node.status.allocatable.items():
            entry.inventory[res] = entry.inventory.get(res, ZERO) + qty
    return out


# --- quota map helpers -------------------------------------------------------------------


def _add(m: Nested, fl: str, res: str, q: Quantity) -> None:
    slot = m.setdefault(fl, {})
    slot[res] = slot.get(res, ZERO) + q


# One derivation reads each queue's quotas and reservations up to four times (facts, conflicts, queue
# rows, teams); within one `derive_pool` these sums are made once per list (shared: never mutated).
_SUMS: ContextVar[dict[tuple[str, int], tuple[Any, Nested]] | None] = ContextVar("pool_sums", default=None)


def _once(tag: str, of: Any) -> tuple[dict[tuple[str, int], tuple[Any, Nested]] | None, Nested | None]:
    memo = _SUMS.get()
    if memo is None:
        return None, None
    hit = memo.get((tag, id(of)))
    return memo, (hit[1] if hit is not None and hit[0] is of else None)


def _nominal(groups: Iterable[ResourceGroup]) -> Nested:
    memo, hit = _once("nominal", groups)
    if hit is not None:
        return hit
    out: Nested = {}
    for rg in groups:
        for fl in rg.flavors:
            for r in fl.resources:
                _add(out, fl.name, r.name, r.nominal_quota)
    if memo is not None:
        memo[("nominal", id(groups))] = (groups, out)
    return out


def _limits(groups: Iterable[ResourceGroup], attr: str) -> Nested:
    out: Nested = {}
    for rg in groups:
        for fl in rg.flavors:
            for r in fl.resources:
                lim = getattr(r, attr)
                if lim is not None:
                    _add(out, fl.name, r.name, lim)
    return out


def _totals(entries: Iterable[FlavorUsage]) -> Nested:
    memo, hit = _once("totals", entries)
    if hit is not None:
        return hit
    out: Nested = {}
    for fl in entries:
        for r in fl.resources:
            _add(out, fl.name, r.name, r.total)
    if memo is not None:
        memo[("totals", id(entries))] = (entries, out)
    return out


def _merge(into: Nested, other: Nested) -> None:
    for fl, res in other.items():
        for r, q in res.items():
            _add(into, fl, r, q)


def _declared(quotas: Iterable[TauResourceQuota]) -> Nested:
    out: Nested = {}
    for q in quotas:
        _add(out, q.flavor, q.resource, q.nominal_quota)
    return out


def _sorted(m: Nested) -> FlavorQty:
    return {fl: dict(sorted(res.items())) for fl, res in sorted(m.items())}


def _nonzero(m: Nested, flavors: Iterable[str] | None = None) -> list[tuple[str, str, Quantity]]:
    """Nonzero entries, restricted to `flavors` when given."""
    keep = set(m) if flavors is None else set(flavors)
    return [
        (fl, r, q) for fl, res in sorted(m.items()) if fl in keep for r, q in sorted(res.items()) if not q.is_zero()
    ]


def _fmt(entries: list[tuple[str, str, Quantity]], limit: int = 4) -> str:
    parts = [f"{fl} {r}={q}" for fl, r, q in entries[:limit]]
    if len(entries) > limit:
        parts.append(f"+{len(entries) - limit} more")
    return ", ".join(parts)


def _names(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def _borrowed(cq: ClusterQueue, nominal: Nested, reserved: Nested) -> Nested:
    # Kueue reports borrowed = max(0, total - nominal), and 0 without a cohort (clusterqueue_types.go).
    out: Nested = {}
    if not cq.spec.cohort_name:
        return out
    for fl, res in reserved.items():
        for r, q in res.items():
            b = (q - nominal.get(fl, {}).get(r, ZERO)).max0()
            if not b.is_zero():
                _add(out, fl, r, b)
    return out


def _managed(obj: ObjectAccessors) -> bool:
    return obj.labels.get(MANAGED_BY) == TAU_MANAGER


def workspace_queue_name(ws: TauWorkspace) -> str:
    return ws.status.queue.cluster_queue or f"tau-ws-{ws.name}"


def team_cohort_name(team: str, obj: TauTeam | None) -> str:
    return (obj.status.cohort if obj is not None and obj.status.cohort else "") or f"tau-team-{team}"


class KeptQueues:
    """The queue rows of the last derivation (PoolPart), handed back while their ClusterQueue is the same
    object or reads the same (the rule's own fingerprint of it): Kueue rewrites status counts constantly,
    and an unchanged row kept by identity lets its readers (the recorder's team sums) skip it."""

    def __init__(self, print_of: Callable[[Any], Any] | None) -> None:
        self.print_of = print_of
        self._last: dict[str, tuple[Any, tuple[Any, ...], Any, PoolQueue]] = {}
        self._now: dict[str, tuple[Any, tuple[Any, ...], Any, PoolQueue]] = {}

    def get(self, cq: ClusterQueue | None, name: str, args: tuple[Any, ...]) -> PoolQueue | None:
        hit = self._last.get(name)
        if hit is None or hit[1] != args:
            return None
        kept, _, printed, row = hit
        if kept is not cq:
            if kept is None or cq is None or self.print_of is None:  # without a print: the same object only
                return None
            printed = self.print_of(kept) if printed is None else printed
            now = self.print_of(cq)
            if now != printed:
                return None
            printed = now
        self._now[name] = (cq, args, printed, row)
        return row

    def put(self, cq: ClusterQueue | None, name: str, args: tuple[Any, ...], row: PoolQueue) -> None:
        self._now[name] = (cq, args, None, row)

    def derived(self) -> None:
        """One derivation done: what it asked for is what the next one may keep (a removed queue's row goes)."""
        self._last, self._now = self._now, {}


# Set by PoolPart for one derivation; a plain derive_pool (the simulator, tests) builds every row.
_KEPT: ContextVar[KeptQueues | None] = ContextVar("pool_kept", default=None)


def _pool_queue(cq: ClusterQueue | None, name: str, workspace: str | None, team: str | None) -> PoolQueue:
    kept = _KEPT.get()
    if kept is None:
        return _new_pool_queue(cq, name, workspace, team)
    args = (workspace, team)
    row = kept.get(cq, name, args)
    if row is None:
        row = _new_pool_queue(cq, name, workspace, team)
        kept.put(cq, name, args, row)
    return row


def _new_pool_queue(cq: ClusterQueue | None, name: str, workspace: str | None, team: str | None) -> PoolQueue:
    if cq is None:
        return PoolQueue(cluster_queue=name, workspace=workspace, team=team, missing=True)
    nominal = _nominal(cq.spec.resource_groups)
    reserved = _totals(cq.status.flavors_reservation)
    return PoolQueue(
        cluster_queue=name,
        workspace=workspace,
        reserved=_sorted(reserved),
        used=_sorted(_totals(cq.status.flavors_usage)),
        team=team or cq.labels.get(TEAM_LABEL),
        cohort=cq.spec.cohort_name or None,
        managed=_managed(cq),
        nominal=_sorted(nominal),
        borrowing_limit=_sorted(_limits(cq.spec.resource_groups, "borrowing_limit")),
        borrowed=_sorted(_borrowed(cq, nominal, reserved)),
    )


# --- entry point --------------------------------------------------------------------------


def derive_pool(ctx: RuleContext) -> tuple[PoolView, list[Finding]]:
    token = _SUMS.set({})
    try:
        return _derive_pool(ctx)
    finally:
        _SUMS.reset(token)


class PoolPart(WholePart):
    """The pool rule inside a deriver: derive_pool whole, keeping the queue rows whose ClusterQueue did not
    move (KeptQueues)."""

    def __init__(self, rule: Rule) -> None:
        super().__init__(rule)
        self._kept = KeptQueues(rule.fingerprints.get("ClusterQueue"))
        self.value = PoolView()

    def derive(self, ctx: RuleContext, needs: Mapping[str, Any]) -> tuple[PoolView, list[Finding]]:
        token = _KEPT.set(self._kept)
        try:
            result = derive_pool(ctx)
        finally:
            _KEPT.reset(token)
        self._kept.derived()
        return result


def _derive_pool(ctx: RuleContext) -> tuple[PoolView, list[Finding]]:
    tc = ctx.store.get(TauCluster, "cluster")
    team = tc.capacity_team if tc is not None else None
    if taugrid_absent(ctx.store):  # plain Kueue: no pool to judge; TAUGRID-ABSENT says so once
        return PoolView(mode="None"), _retained(ctx)
    if not team and not ctx.store.readable("TauCluster"):
        # Whether automatic capacity is configured at all is unknown: fail closed.
        unknown = _unknown(ctx, ("TauCluster",))
        return PoolView(mode="None" if tc is None else "Explicit", unknown=unknown), [
            _unknown_finding(unknown, Severity.CRITICAL, "the capacity mode")
        ]
    if team and tc is not None:
        return _Automatic(ctx, tc, team).derive()
    return _derive_explicit(ctx, tc)


def _unknown(ctx: RuleContext, kinds: tuple[str, ...]) -> list[PoolUnknown]:
    return [PoolUnknown(resource=res, reason=why) for res, why in ctx.unreadable(*kinds)]


def _unknown_finding(unknown: list[PoolUnknown], severity: Severity, what: str) -> Finding:
    listed = ", ".join(f"{u.resource} ({u.reason})" for u in unknown)
    return finding(
        severity,
        "POOL-UNKNOWN",
        "TauCluster",
        "cluster",
        None,
        f"{what} is unknown: cannot read {listed}; no pool number is shown and the pool is not reported valid",
        "grant get/list/watch on the named resources to the identity taudash uses, or wait for the sync to finish",
    )


class _Automatic:
    """One evaluation of the automatic pool for team `team` (docs/rules.md#pool-nodes)."""

    def __init__(self, ctx: RuleContext, tc: TauCluster, team: str) -> None:
        self.ctx = ctx
        self.store = ctx.store
        self.tc = tc
        self.team = team
        self.ns = ctx.config.system_namespace
        self.findings: list[Finding] = []
        self.givers: dict[str, list[str]] = {}  # ResourceFlavor -> "Kind name" budgeting it (for hints)

    def ok(self, *kinds: str) -> bool:
        return all(self.store.readable(k) for k in kinds)

    def add(self, sev: Severity, rule: str, kind: str, name: str, message: str, hint: str) -> None:
        ns = self.ns if kind in ("TauTeam", "TauWorkspace") else None
        self.findings.append(finding(sev, rule, kind, name, ns, message, hint))

    # facts ---------------------------------------------------------------------------------
    def _facts(self) -> None:
        s = self.store
        self.team_obj: TauTeam | None = s.get(TauTeam, self.team, self.ns) if self.ok("TauTeam") else None
        # TauTeam.status.cohort names the root; without the team readable the name is only a guess.
        self.root_known = self.ok("TauTeam")
        self.root = team_cohort_name(self.team, self.team_obj)
        self.root_cohort: Cohort | None = s.get(Cohort, self.root) if self.ok("Cohort") else None
        self.established = (
            self.root_known
            and self.root_cohort is not None
            and _managed(self.root_cohort)
            and self.root_cohort.labels.get(TEAM_LABEL) == self.team
        )
        self.workspaces: list[TauWorkspace] = (
            [w for w in s.list(TauWorkspace, self.ns) if w.team == self.team] if self.ok("TauWorkspace") else []
        )
        # Several workspaces naming one queue would count it once.
        self.team_queues: dict[str, str] = {}
        for ws in self.workspaces:
            self.team_queues.setdefault(workspace_queue_name(ws), ws.name)
        self.queues_known = self.ok("TauWorkspace", "ClusterQueue")
        self.team_cqs: dict[str, ClusterQueue | None] = (
            {n: s.get(ClusterQueue, n) for n in self.team_queues} if self.queues_known else {}
        )
        self.nodes_known = self.ok("Node", "TauCluster")
        self.classes = node_inventory(s.list(Node), self.tc.spec.nodes.selector) if self.nodes_known else {}
        self.live = {fl for fl, c in self.classes.items() if c.counted}

        # Pool flavors that lost every counted node but still carry a contract keep a zero budget.
        refs: Nested = {}
        if self.root_known and self.root_cohort is not None:
            _merge(refs, _nominal(self.root_cohort.spec.resource_groups))
        for cq in self.team_cqs.values():
            if cq is not None:
                _merge(refs, _nominal(cq.spec.resource_groups))
                _merge(refs, _totals(cq.status.flavors_reservation))
                _merge(refs, _totals(cq.status.flavors_usage))
        self.referenced = {fl: set(res) for fl, res in refs.items() if fl.startswith(FLAVOR_PREFIX)}
        self.disappeared = set(self.referenced) - self.live if self.nodes_known else set()
        # Conflicts use every flavor known to be in the pool; unknown parts only shrink this set.
        self.pool = self.live | set(self.referenced)
        covered: set[str] = set()
        for fl in self.live:
            covered |= set(self.classes[fl].inventory)
        for fl in self.disappeared:
            covered |= self.referenced[fl]
        self.covered = sorted(covered)

    # validation (docs/rules.md#pool-validation) -------------------------------------------------------------------
    def _conflicts(self) -> list[PoolConflict]:
        s, out = self.store, []
        ns, team = self.ns, self.team

        def add(code: str, kind: str, name: str, message: str) -> None:
            out.append(PoolConflict(code=code, kind=kind, name=name, message=message))

        if self.ok("TauTeam"):
            if self.team_obj is None:
                add(
                    "TeamMissing",
                    "TauTeam",
                    team,
                    f"capacityTeamRef names team {team!r}, but no TauTeam {team} exists in {ns}",
                )
            elif self.team_obj.spec.quota:
                add(
                    "QuotaDeclared",
                    "TauTeam",
                    team,
                    f"TauTeam {team} sets spec.quota ({len(self.team_obj.spec.quota)} entries); automatic capacity "
                    "requires it omitted",
                )
        for ws in self.workspaces:
            if ws.spec.quota:
                add(
                    "QuotaDeclared",
                    "TauWorkspace",
                    ws.name,
                    f"TauWorkspace {ws.name} of team {team} sets spec.quota ({len(ws.spec.quota)} entries); automatic "
                    "capacity requires it omitted",
                )

        cqs = s.list(ClusterQueue) if self.ok("ClusterQueue") else []
        cohorts = s.list(Cohort) if self.ok("Cohort") else []
        for cq in cqs:
            if cq.labels.get(DISCOVER_LABEL) == "true":
                add(
                    "LegacyDiscovery",
                    "ClusterQueue",
                    cq.name,
                    f"ClusterQueue {cq.name} is labelled {DISCOVER_LABEL}=true: legacy GPU discovery cannot run "
                    "alongside the automatic pool",
                )
            if not _managed(cq):
                held = _nonzero(_totals(cq.status.flavors_reservation), self.pool)
                if held:
                    add(
                        "ExternalReservation",
                        "ClusterQueue",
                        cq.name,
                        f"ClusterQueue {cq.name} is not managed by {TAU_MANAGER} and holds reservations on the pool: "
                        f"{_fmt(held)}",
                    )
            if self.ok("TauWorkspace") and cq.name not in self.team_queues:
                quota = _nonzero(_nominal(cq.spec.resource_groups), self.pool)
                if quota:
                    add(
                        "OverlappingBudget",
                        "ClusterQueue",
                        cq.name,
                        f"ClusterQueue {cq.name} is not a workspace queue of team {team} but gives nominal quota on "
                        f"pool flavors: {_fmt(quota)}",
                    )
        if self.root_known:
            for co in cohorts:
                if co.name == self.root:
                    continue
                quota = _nonzero(_nominal(co.spec.resource_groups), self.pool)
                if quota:
                    owner = co.labels.get(TEAM_LABEL) if _managed(co) else None
                    extra = f" (retained budget of team {owner})" if owner else ""
                    add(
                        "OverlappingBudget",
                        "Cohort",
                        co.name,
                        f"Cohort {co.name}{extra} is not the root {self.root} but gives nominal quota on pool "
                        f"flavors: {_fmt(quota)}",
                    )

        if self.nodes_known and self.ok("ResourceFlavor", "ClusterQueue", "Cohort"):
            counted_names = self._counted_names()  # once, not per node (quadratic at fleet scale)
            counted = [(n, n.labels) for n in s.list(Node) if n.name in counted_names]
            budgets = [("ClusterQueue", cq.name, _nominal(cq.spec.resource_groups)) for cq in cqs]
            budgets += [("Cohort", co.name, _nominal(co.spec.resource_groups)) for co in cohorts]
            for rf in s.list(ResourceFlavor):
                if rf.name in self.pool:
                    continue
                # Empty nodeLabels select every node (labels_match of an empty requirement).
                selected = [n.name for n, labels in counted if labels_match(rf.spec.node_labels, labels)]
                if not selected:
                    continue
                givers = [f"{k} {n}" for k, n, m in budgets if _nonzero(m, {rf.name})]
                self.givers[rf.name] = givers
                if givers:
                    add(
                        "OverlappingFlavor",
                        "ResourceFlavor",
                        rf.name,
                        f"ResourceFlavor {rf.name} selects {len(selected)} counted pool node(s) ({_names(selected)}) "
                        f"and has nonzero nominal quota in {_names(givers)}: the same nodes would be budgeted twice",
                    )
        return sorted(out, key=lambda c: (c.name, c.kind, c.code))

    def _counted_names(self) -> set[str]:
        return {n for c in self.classes.values() for n in c.counted}

    def _conflict_findings(self, conflicts: list[PoolConflict]) -> None:
        for c in conflicts:
            self.add(Severity.CRITICAL, "POOL-CONFLICT", c.kind, c.name, f"{c.code}: {c.message}", self._hint(c))

    def _hint(self, c: PoolConflict) -> str:
        never = "TauGrid never divides the pool or rewrites external budgets"
        if c.code == "TeamMissing":
            return (f"the platform team creates TauTeam {c.name} in {self.ns} (without spec.quota), or corrects "
                    "TauCluster spec.queues.capacityTeamRef")
        if c.code == "QuotaDeclared":
            return (f"the owner of {c.kind} {c.name} (platform manifests or Helm teams[]/workspaces[] values) removes "
                    "spec.quota")
        if c.code == "LegacyDiscovery":
            return (f"the owner of ClusterQueue {c.name} (e.g. the umbrella chart's baselineQueue.gpu) removes the "
                    f"{DISCOVER_LABEL} label or the queue")
        if c.code == "ExternalReservation":
            return (f"the owner of ClusterQueue {c.name} drains or moves those workloads off the pool flavors; TauGrid "
                    "never adopts external queues")
        if c.code == "OverlappingFlavor":
            givers = _names(self.givers.get(c.name, []))
            return (f"the owners of {givers} remove their quota on {c.name}, or the flavor's owner narrows "
                    f"spec.nodeLabels so it selects no pool node; {never}")
        # OverlappingBudget
        co = self.store.get(c.kind, c.name)
        owner = co.labels.get(TEAM_LABEL) if co is not None and _managed(co) else None
        if owner and owner != self.team:
            return (f"{c.kind} {c.name} is tau-core-controller's allocation for team {owner}: drain and remove that "
                    "team's workspaces (or give it spec.quota off the pool flavors) so the controller reconciles it "
                    f"away; {never}")
        return f"the owner of {c.kind} {c.name} removes its quota on the pool flavors; {never}"

    # budget, queues, headroom (docs/rules.md#pool-inventory) ------------------------------------------------
    def derive(self) -> tuple[PoolView, list[Finding]]:
        self._facts()
        unknown = _unknown(self.ctx, AUTOMATIC_KINDS)
        conflicts = self._conflicts()
        valid: bool | None = False if conflicts else (None if unknown else True)
        zeroed = valid is False and self.established
        self._conflict_findings(conflicts)
        ws_count = len(self.workspaces)
        causes = _names([f"{c.code} {c.kind} {c.name}" for c in conflicts])
        if zeroed:
            self.add(
                Severity.CRITICAL,
                "POOL-ZEROED",
                "Cohort",
                self.root,
                f"automatic pool of team {self.team} is invalid ({causes}): the root budget is 0 on every flavor until "
                "validation passes; running work is not evicted, new admissions wait",
                "resolve each POOL-CONFLICT through the owner it names; the controller restores the budget on its "
                "next reconcile",
            )
        elif valid is False and self.ok("Cohort") and self.root_known:
            self.add(
                Severity.CRITICAL if ws_count else Severity.WARNING,
                "POOL-NOT-ESTABLISHED",
                "TauCluster",
                "cluster",
                f"automatic pool of team {self.team} is invalid ({causes}) and not established: no root Cohort "
                f"{self.root} is created, so the team's {ws_count} workspace queue(s) have no budget to admit against",
                "resolve each POOL-CONFLICT through the owner it names",
            )
        base = dict(
            mode="Automatic",
            team=self.team,
            cohort=self.root,
            valid=valid,
            established=self.established,
            zeroed=zeroed,
            conflicts=conflicts,
            unknown=unknown,
        )
        if unknown:
            what = f"automatic pool of team {self.team}"
            self.findings.append(_unknown_finding(unknown, Severity.CRITICAL, what))
            return PoolView(**base), self.findings

        # None means "no Cohort expected": an invalid pool that was never established.
        expected: Nested | None
        if valid is False and not self.established:
            expected = None
        else:
            expected = {}
            for fl in sorted(self.pool):
                inv = self.classes[fl].inventory if fl in self.live and not zeroed else {}
                expected[fl] = {r: inv.get(r, ZERO) for r in self.covered}
        observed = _nominal(self.root_cohort.spec.resource_groups) if self.root_cohort is not None else {}
        reserved: Nested = {}
        used: Nested = {}
        for cq in self.team_cqs.values():
            if cq is not None:
                _merge(reserved, _totals(cq.status.flavors_reservation))
                _merge(used, _totals(cq.status.flavors_usage))
        # Headroom is what Kueue admits against now: the live Cohort, else what it should hold.
        ref = observed if self.root_cohort is not None else (expected or {})

        flavors = []
        for fl in sorted(set(self.classes) | self.pool):
            cls = self.classes.get(fl)
            in_pool = fl in self.pool
            headroom: dict[str, Quantity] = {}
            if in_pool:
                for r in sorted(set(self.covered) | set(reserved.get(fl, {}))):
                    headroom[r] = ref.get(fl, {}).get(r, ZERO) - reserved.get(fl, {}).get(r, ZERO)
            flavors.append(
                PoolFlavor(
                    name=fl,
                    gpu_class=cls.gpu_class if cls else fl[len(FLAVOR_PREFIX) :],
                    nodes=len(cls.counted) if cls else 0,
                    excluded=cls.excluded if cls else [],
                    inventory=dict(sorted(cls.inventory.items())) if cls else {},
                    budget=dict(sorted((expected or {}).get(fl, {}).items())),
                    observed_budget=dict(sorted(observed.get(fl, {}).items())) if in_pool else {},
                    reserved=dict(sorted(reserved.get(fl, {}).items())) if in_pool else {},
                    used=dict(sorted(used.get(fl, {}).items())) if in_pool else {},
                    headroom=headroom,
                    disappeared=fl in self.disappeared,
                )
            )
            if not zeroed and any(q.negative for q in headroom.values()):
                self._overcommitted(fl, cls, headroom, ref.get(fl, {}), reserved.get(fl, {}))

        self._budget_drift(expected, observed)
        self._queue_drift()
        queues = [_pool_queue(self.team_cqs.get(n), n, ws, self.team) for n, ws in sorted(self.team_queues.items())]
        view = PoolView(**base, flavors=flavors, queues=queues, covered_resources=self.covered, teams=_teams(self.ctx))
        return view, self.findings

    def _overcommitted(self, fl: str, cls: ClassNodes | None, headroom: dict[str, Quantity],
                       budget: dict[str, Quantity], reserved: dict[str, Quantity]) -> None:
        over = [r for r, q in headroom.items() if q.negative]
        detail = "; ".join(f"{r}: reserved {reserved.get(r, ZERO).human()} > budget {budget.get(r, ZERO).human()}"
                           for r in over)
        why = ""
        if cls and cls.excluded:
            why = " (excluded: " + _names([f"{e.node} {e.reason}" for e in cls.excluded], 3) + ")"
        if fl in self.disappeared:
            why = " (every node of this flavor is gone)"
        self.add(
            Severity.WARNING,
            "POOL-OVERCOMMITTED",
            "ResourceFlavor",
            fl,
            f"{detail}{why}; nothing is evicted; new admissions wait until reservations drop below the budget",
            "no action is required for safety; to admit sooner, restore the missing nodes or let running work finish",
        )

    def _budget_drift(self, expected: Nested | None, observed: Nested) -> None:
        co = self.root_cohort
        diffs: list[str] = []
        if co is None:
            if expected is not None:
                diffs.append(f"Cohort {self.root} does not exist; it should hold the pool budget")
        else:
            if not (_managed(co) and co.labels.get(TEAM_LABEL) == self.team):
                diffs.append(f"not labelled {MANAGED_BY}={TAU_MANAGER} and {TEAM_LABEL}={self.team}")
            if co.spec.parent_name:
                diffs.append(f"has parent {co.spec.parent_name}; the team root Cohort has none")
            limits = _limits(co.spec.resource_groups, "borrowing_limit")
            _merge(limits, _limits(co.spec.resource_groups, "lending_limit"))
            if limits:
                diffs.append("sets borrowing/lending limits")
            exp = expected or {}
            if expected is None:
                diffs += [f"{fl} {r}={q} while no budget is expected" for fl, r, q in _nonzero(observed)]
            else:
                for fl in sorted(set(exp) | set(observed)):
                    for r in sorted(set(exp.get(fl, {})) | set(observed.get(fl, {}))):
                        e, o = exp.get(fl, {}).get(r), observed.get(fl, {}).get(r)
                        if e is None:
                            diffs.append(f"{fl} {r}={o} is not part of the pool")
                        elif o is None:
                            diffs.append(f"{fl} {r} missing (expected {e})")
                        elif e != o:
                            diffs.append(f"{fl} {r}: observed {o}, expected {e}")
        if diffs:
            shown = "; ".join(diffs[:6]) + (f"; +{len(diffs) - 6} more" if len(diffs) > 6 else "")
            self.add(
                Severity.WARNING,
                "POOL-BUDGET-DRIFT",
                "Cohort",
                self.root,
                f"root Cohort of team {self.team} differs from the expected budget: {shown}",
                "Kueue admits against the observed budget; the controller corrects it on its next reconcile — "
                "if it persists, check the TauGrid controller's logs and the TauTeam conditions",
            )

    def _queue_drift(self) -> None:
        for name, ws_name in sorted(self.team_queues.items()):
            cq = self.team_cqs.get(name)
            diffs: list[str] = []
            if cq is None:
                ws = next(w for w in self.workspaces if w.name == ws_name)
                if ws.deleting:
                    continue
                diffs.append("does not exist")
            else:
                if not _managed(cq):
                    diffs.append(f"not managed by {TAU_MANAGER} (external queues are never adopted)")
                if cq.spec.cohort_name != self.root:
                    diffs.append(f"cohort {cq.spec.cohort_name or '(none)'} instead of {self.root}")
                nominal = _nominal(cq.spec.resource_groups)
                limits = _limits(cq.spec.resource_groups, "borrowing_limit")
                for fl in sorted(self.pool):
                    for r in self.covered:
                        q = nominal.get(fl, {}).get(r)
                        if q is None:
                            diffs.append(f"no quota entry for {fl} {r} (cannot borrow it)")
                        elif not q.is_zero():
                            diffs.append(f"nominal {fl} {r}={q} (expected 0)")
                    for r, lim in sorted(limits.get(fl, {}).items()):
                        diffs.append(f"borrowingLimit {fl} {r}={lim} (expected none)")
            if diffs:
                shown = "; ".join(diffs[:6]) + (f"; +{len(diffs) - 6} more" if len(diffs) > 6 else "")
                self.add(
                    Severity.WARNING,
                    "POOL-QUEUE-DRIFT",
                    "ClusterQueue",
                    name,
                    f"workspace queue of {ws_name} (team {self.team}) differs from the pool shape: {shown}",
                    f"the controller reconciles tau-ws queues on its next pass; check TauWorkspace {ws_name} "
                    "QueueReady for the reason if it persists",
                )
        if not self.root_known:
            return
        for cq in self.store.list(ClusterQueue):
            if cq.spec.cohort_name == self.root and cq.name not in self.team_queues:
                held = _nonzero(_totals(cq.status.flavors_reservation), self.pool)
                extra = f"; its reservations ({_fmt(held)}) consume the pool but are not counted here" if held else ""
                self.add(
                    Severity.WARNING,
                    "POOL-QUEUE-DRIFT",
                    "ClusterQueue",
                    cq.name,
                    f"joins the root Cohort {self.root} of team {self.team} but is not one of its workspace "
                    f"queues{extra}",
                    f"its owner moves it out of Cohort {self.root}; only the team's workspace queues borrow from the "
                    "pool",
                )


# --- explicit mode and leaving the automatic mode (docs/rules.md#pool-leaving) ----------------------------------


def _teams(ctx: RuleContext) -> list[PoolTeam]:
    s, ns = ctx.store, ctx.config.system_namespace
    workspaces = s.list(TauWorkspace, ns)
    out = []
    for t in s.list(TauTeam, ns):
        cohort_name = team_cohort_name(t.name, t)
        co = s.get(Cohort, cohort_name)
        members = sorted(
            {workspace_queue_name(w) for w in workspaces if w.team == t.name}
            | {cq.name for cq in s.list(ClusterQueue) if cq.spec.cohort_name == cohort_name}
        )
        member_nominal: Nested = {}
        reserved: Nested = {}
        used: Nested = {}
        borrowed: Nested = {}
        for n in members:
            cq = s.get(ClusterQueue, n)
            if cq is None:
                continue
            nom, res = _nominal(cq.spec.resource_groups), _totals(cq.status.flavors_reservation)
            _merge(member_nominal, nom)
            _merge(reserved, res)
            _merge(used, _totals(cq.status.flavors_usage))
            _merge(borrowed, _borrowed(cq, nom, res))
        out.append(
            PoolTeam(
                name=t.name,
                cohort=cohort_name,
                cohort_exists=co is not None,
                managed=co is not None and _managed(co) and co.labels.get(TEAM_LABEL) == t.name,
                quota_declared=bool(t.spec.quota),
                workspaces=sorted(w.name for w in workspaces if w.team == t.name),
                queues=members,
                quota=_sorted(_declared(t.spec.quota)),
                cohort_nominal=_sorted(_nominal(co.spec.resource_groups)) if co is not None else {},
                member_nominal=_sorted(member_nominal),
                reserved=_sorted(reserved),
                used=_sorted(used),
                borrowed=_sorted(borrowed),
            )
        )
    return out


def _derive_explicit(ctx: RuleContext, tc: TauCluster | None) -> tuple[PoolView, list[Finding]]:
    s, ns = ctx.store, ctx.config.system_namespace
    findings: list[Finding] = []
    teams = s.list(TauTeam, ns)
    workspaces = s.list(TauWorkspace, ns)
    unknown = _unknown(ctx, EXPLICIT_KINDS)
    if tc is None:
        mode = "None"
    elif teams or workspaces or not (s.readable("TauTeam") and s.readable("TauWorkspace")):
        mode = "Explicit"
    else:
        mode = "None"
    findings += _retained(ctx)
    if mode == "None" or tc is None:  # no TauCluster: mode "None"
        return PoolView(mode=mode, unknown=unknown), findings
    if unknown:
        findings.append(_unknown_finding(unknown, Severity.WARNING, "explicit team capacity"))
        return PoolView(mode=mode, unknown=unknown), findings

    # Workspace queues and every queue of a team Cohort, each counted once.
    team_of_cohort = {team_cohort_name(t.name, t): t.name for t in teams}
    entries: dict[str, tuple[str | None, str | None]] = {}  # queue -> (workspace, team)
    for ws in workspaces:
        name = ws.status.queue.cluster_queue or (f"tau-ws-{ws.name}" if ws.team else "")
        if name:
            entries.setdefault(name, (ws.name, ws.team))
    for cq in s.list(ClusterQueue):
        if cq.spec.cohort_name in team_of_cohort:
            entries.setdefault(cq.name, (None, team_of_cohort[cq.spec.cohort_name]))
    queues = [_pool_queue(s.get(ClusterQueue, n), n, ws, team) for n, (ws, team) in sorted(entries.items())]

    declared: Nested = {}
    for t in teams:
        _merge(declared, _declared(t.spec.quota))
    for ws in workspaces:
        if not ws.team:  # a team's workspace guarantees are carved out of the team quota
            _merge(declared, _declared(ws.spec.quota))
    observed: Nested = {}
    for cohort_name in team_of_cohort:
        co = s.get(Cohort, cohort_name)
        if co is not None:
            _merge(observed, _nominal(co.spec.resource_groups))
    reserved: Nested = {}
    used: Nested = {}
    for n in entries:
        member = s.get(ClusterQueue, n)
        if member is not None:
            _merge(observed, _nominal(member.spec.resource_groups))
            _merge(reserved, _totals(member.status.flavors_reservation))
            _merge(used, _totals(member.status.flavors_usage))

    classes = node_inventory(s.list(Node), tc.spec.nodes.selector)
    flavors = []
    referenced = set(declared) | set(observed) | set(reserved) | set(used)
    for fl in sorted(set(classes) | referenced):
        cls = classes.get(fl)
        obs, res = observed.get(fl, {}), reserved.get(fl, {})
        headroom = {r: obs.get(r, ZERO) - res.get(r, ZERO) for r in sorted(set(obs) | set(res))}
        flavors.append(
            PoolFlavor(
                name=fl,
                gpu_class=cls.gpu_class if cls else (fl[len(FLAVOR_PREFIX) :] if fl.startswith(FLAVOR_PREFIX) else ""),
                nodes=len(cls.counted) if cls else 0,
                excluded=cls.excluded if cls else [],
                inventory=dict(sorted(cls.inventory.items())) if cls else {},
                budget=dict(sorted(declared.get(fl, {}).items())),
                observed_budget=dict(sorted(obs.items())),
                reserved=dict(sorted(res.items())),
                used=dict(sorted(used.get(fl, {}).items())),
                headroom=headroom,
                disappeared=fl.startswith(FLAVOR_PREFIX) and fl in referenced and not (cls and cls.counted),
            )
        )
    covered = sorted({r for fl in flavors for r in (*fl.budget, *fl.observed_budget)})
    return PoolView(mode=mode, flavors=flavors, queues=queues, covered_resources=covered, teams=_teams(ctx)), findings


def _retained(ctx: RuleContext) -> list[Finding]:
    """A managed team Cohort still budgeting taugrid-gpu-* flavors for a team without quota."""
    s, ns = ctx.store, ctx.config.system_namespace
    if not (s.readable("Cohort") and s.readable("TauTeam")):
        return []  # explicit mode reports POOL-UNKNOWN for these
    out = []
    for co in s.list(Cohort):
        owner = co.labels.get(TEAM_LABEL)
        if not (_managed(co) and owner):
            continue
        team = s.get(TauTeam, owner, ns)
        if team is not None and team.spec.quota:
            continue
        held = [e for e in _nonzero(_nominal(co.spec.resource_groups)) if e[0].startswith(FLAVOR_PREFIX)]
        if not held:
            continue
        who = f"team {owner}" + ("" if team is not None else f" (no TauTeam {owner} in {ns})")
        out.append(
            finding(
                Severity.WARNING,
                "POOL-RETAINED",
                "Cohort",
                co.name,
                None,
                f"Cohort {co.name} of {who} still holds an automatic pool budget ({_fmt(held)}) without a "
                "capacityTeamRef or team quota: it blocks reallocating that capacity",
                f"its owner tau-core-controller reconciles it away once team {owner}'s workloads are drained and its "
                "workspaces removed; if capacityTeamRef was removed first, restore it, drain, remove the workspaces, "
                "then remove it",
            )
        )
    return out
