"""Rule area `utilisation`: allocated GPUs that sit idle, per Workload and team (docs/rules.md#utilisation).

Inputs: the GPU-holding Pods (bound, non-terminal, requesting `nvidia.com/gpu`), the Workloads that own their jobs,
the workspaces (namespace → workspace → team) and the latest DCGM reading from Prometheus (`RuleConfig.utilisation`:
engine/rules/gpu_usage.py). A GPU is idle when it reads below the threshold now and has done so for at least
`capacity.idleMinutes`. No Prometheus configured: the view says so (`enabled` false). Prometheus unreachable, no
DCGM series, a reading too old or the Pods unreadable: utilisation is unknown — `known` false with the reason, every
count null, never 0, and no idle finding.
"""

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..model import Pod, TauWorkspace, Workload
from .base import Changed, Finding, Rule, RuleContext, RulePart, Severity, ViewModel, finding
from .gpu_health import GPU_RESOURCE
from .gpu_usage import GpuSample, UtilisationReading

READS = frozenset({"Pod", "Workload", "TauWorkspace"})
IDLE_ALLOCATED = "UTIL-GPU-IDLE-ALLOCATED"
UNKNOWN = "UTIL-UNKNOWN"
OFF = "no Prometheus configured (--prometheus URL, or utilisation.prometheus in the config file)"


class UtilisationGpus(ViewModel):
    allocated: int  # GPUs the GPU-holding Pods request
    measured: int  # of them, with a DCGM sample
    idle: int  # of the measured, idle for at least the idle minutes
    unmeasured: int  # allocated GPUs with no sample (not idle, not busy: unknown)


class PodUtilisation(ViewModel):
    namespace: str
    name: str
    node: str
    gpus: int  # requested
    measured: int
    utilisation: float | None  # mean percent over the measured GPUs (None: none measured)
    idle_gpus: int


class IdleWorkload(ViewModel):
    namespace: str
    name: str
    kind: str  # "Workload" when Kueue's Workload is known, else the Pods' owner kind (or "Pod")
    owner: str  # Kind/name of the job that owns the Pods
    workspace: str
    team: str
    gpus: int  # allocated to it
    idle_gpus: int
    idle_gpu_hours: float
    idle_seconds: float  # the shortest idle time among its idle GPUs: idle "for at least"
    nodes: list[str]
    pods: list[str]


class IdleTeam(ViewModel):
    team: str  # "" when the namespace belongs to no workspace with a team
    idle_gpus: int
    idle_gpu_hours: float
    workloads: int


class UtilisationView(ViewModel):
    enabled: bool = False
    known: bool = False
    unknown_reason: str = OFF
    source: str = ""  # the Prometheus URL
    measured_at: str | None = None  # when Prometheus evaluated the reading (RFC 3339)
    idle_below_percent: float = 5.0
    idle_minutes: int = 30
    gpus: UtilisationGpus | None = None  # None: unknown
    workloads: list[IdleWorkload] = []  # most idle GPU-hours first
    teams: list[IdleTeam] = []  # most idle GPU-hours first
    pods: list[PodUtilisation] = []  # every GPU-holding Pod with its utilisation


@dataclass
class _Group:
    namespace: str
    name: str
    kind: str
    owner: str
    gpus: int = 0
    idle: list[GpuSample] = field(default_factory=list)
    nodes: set[str] = field(default_factory=set)
    pods: set[str] = field(default_factory=set)


def pod_gpus(p: Pod) -> int:
    q = p.effective_request(GPU_RESOURCE)
    return int(q.value) if q is not None else 0


@dataclass(frozen=True, slots=True)
class Holder:
    """A Pod that holds GPUs: bound, not Succeeded/Failed, requesting `nvidia.com/gpu`; and the job that owns it."""

    namespace: str
    name: str
    node: str
    gpus: int
    owner_kind: str
    owner_name: str
    owner_uid: str

    @property
    def group(self) -> tuple[str, str, str]:
        """What its GPUs count for: its job (by uid), else itself."""
        return (self.namespace, self.owner_kind, self.owner_uid or self.name)


def holder_of(p: Pod) -> Holder | None:
    node = p.spec.node_name
    if not node or p.terminal:
        return None
    gpus = pod_gpus(p)
    if not gpus:
        return None
    kind, name, uid = _owner_ref(p)
    return Holder(p.metadata.namespace or "", p.metadata.name, node, gpus, kind, name, uid)


Key = tuple[str, str]


def gpu_holders(ctx: RuleContext) -> dict[Key, Holder]:
    """Every GPU-holding Pod by (namespace, name): one pass over the Pods."""
    out = {}
    for p in ctx.store.list(Pod):
        h = holder_of(p)
        if h is not None:
            out[(h.namespace, h.name)] = h
    return out


def _stamp(at: datetime) -> str:
    return at.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def utilisation_view(ctx: RuleContext, reading: UtilisationReading | None, source: str,
                     holders: Mapping[Key, Holder] | None = None) -> tuple[UtilisationView, list[Finding]]:
    """The view from the store and one reading, judged at `ctx.now` (pure: the reading is given). `holders`: the
    GPU-holding Pods when the caller keeps them (else read from the store)."""
    settings = ctx.config.utilisation
    idle_minutes = ctx.config.capacity.idle_minutes
    base = dict(enabled=True, source=source, idle_below_percent=settings.idle_below_percent, idle_minutes=idle_minutes)
    why = _unknown(ctx, reading, settings.stale_after_seconds)
    if why is not None:
        at = None if reading is None else _stamp(reading.at)
        return UtilisationView(known=False, unknown_reason=why, measured_at=at, **base), [finding(
            Severity.INFO, UNKNOWN, "Pod", "*", None, f"GPU utilisation is unknown: {why}",
            "check that Prometheus answers and scrapes the DCGM exporter; no GPU is called idle meanwhile")]
    assert reading is not None
    if holders is None:
        holders = gpu_holders(ctx)
    by_pod: dict[Key, list[GpuSample]] = {}
    for s in reading.samples:
        have = by_pod.get((s.namespace, s.pod))
        if have is None:
            by_pod[(s.namespace, s.pod)] = [s]
        else:
            have.append(s)
    idle_after = idle_minutes * 60.0
    threshold = settings.idle_below_percent
    groups: dict[tuple[str, str, str], _Group] = {}
    held: dict[tuple[str, str, str], int] = {}  # GPUs per job, idle or not: the share idle is what matters
    rows: list[PodUtilisation] = []
    allocated = measured = idle_total = 0
    row = PodUtilisation.trusted  # one row per GPU-holding Pod (tens of thousands on a fleet): built unvalidated
    owners_known = not ctx.unreadable("Workload")
    for key in sorted(holders):
        h = holders[key]
        gpus = h.gpus
        job = h.group
        held[job] = held.get(job, 0) + gpus
        samples = by_pod.get(key)
        allocated += gpus
        if samples is None:
            rows.append(row(namespace=h.namespace, name=h.name, node=h.node, gpus=gpus, measured=0, utilisation=None,
                            idle_gpus=0))
            continue
        samples = samples[:gpus]
        idle = [s for s in samples if s.util < threshold and s.idle_seconds >= idle_after]
        measured += len(samples)
        idle_total += len(idle)
        rows.append(row(namespace=h.namespace, name=h.name, node=h.node, gpus=gpus, measured=len(samples),
                        utilisation=round(sum(s.util for s in samples) / len(samples), 1), idle_gpus=len(idle)))
        if idle:
            g = groups.get(job) or _group_of(ctx, h, groups, owners_known)
            g.idle += idle
            g.nodes.add(h.node)
            g.pods.add(h.name)
    teams = _teams(ctx) if groups else {}
    for k, g in groups.items():
        g.gpus = held[k]
    workloads = sorted((_workload(g, teams) for g in groups.values()),
                       key=lambda w: (-w.idle_gpu_hours, -w.idle_gpus, w.namespace, w.name))
    view = UtilisationView(known=True, unknown_reason="", measured_at=_stamp(reading.at),
                           gpus=UtilisationGpus(allocated=allocated, measured=measured, idle=idle_total,
                                                unmeasured=allocated - measured),
                           workloads=workloads, teams=_team_rows(workloads), pods=rows, **base)
    return view, [_idle_finding(w, threshold, idle_minutes) for w in workloads]


def current_utilisation(ctx: RuleContext) -> tuple[UtilisationView, list[Finding]]:
    """The view from the feed's latest reading (what the registered rule computes; one-shot commands call it)."""
    feed = ctx.config.utilisation.feed
    if feed is None:
        return UtilisationView(), []
    return utilisation_view(ctx, feed.latest(), feed.url)


def _unknown(ctx: RuleContext, reading: UtilisationReading | None, stale_after: float) -> str | None:
    if reading is None:
        return "no reading from Prometheus yet"
    if not reading.known:
        return reading.reason or "Prometheus gave no reading"
    age = (ctx.now - reading.at).total_seconds()
    if age > stale_after:
        return f"the last reading from Prometheus is {int(age)} s old (trusted for {int(stale_after)} s)"
    bad = ctx.unreadable("Pod")
    if bad:
        return f"{bad[0][0]} is {bad[0][1]} (which Pod holds which GPU is not known)"
    return None


def _owner_ref(p: Pod) -> tuple[str, str, str]:
    refs = p.metadata.owner_references
    ref = next((r for r in refs if r.controller), refs[0] if refs else None)
    return ("", "", "") if ref is None else (ref.kind, ref.name, ref.uid)


def _group_of(ctx: RuleContext, h: Holder, groups: dict[tuple[str, str, str], _Group], owners_known: bool) -> _Group:
    """The Workload a Pod's GPUs count for: Kueue's Workload of the Pod's job when it is known, else the job."""
    owner = f"{h.owner_kind}/{h.owner_name}" if h.owner_kind else ""
    wls = [w for w in ctx.store.by_owner(h.owner_uid, "Workload") if isinstance(w, Workload)] \
        if h.owner_uid and owners_known else []
    if wls:
        g = _Group(h.namespace, wls[0].name, "Workload", owner)
    else:
        g = _Group(h.namespace, h.owner_name or h.name, h.owner_kind or "Pod", owner)
    groups[h.group] = g
    return g


def _teams(ctx: RuleContext) -> dict[str, tuple[str, str]]:
    """namespace → (workspace, team), as the workspace rules resolve a workspace's namespace."""
    if ctx.unreadable("TauWorkspace"):
        return {}
    out: dict[str, tuple[str, str]] = {}
    for ws in ctx.store.list(TauWorkspace):
        ns = ws.status.target.resolved_namespace or ws.desired_namespace
        if ns:
            out.setdefault(ns, (ws.name, ws.team or ""))
    return out


def _workload(g: _Group, teams: Mapping[str, tuple[str, str]]) -> IdleWorkload:
    workspace, team = teams.get(g.namespace, ("", ""))
    return IdleWorkload(namespace=g.namespace, name=g.name, kind=g.kind, owner=g.owner, workspace=workspace, team=team,
                        gpus=g.gpus, idle_gpus=len(g.idle),
                        idle_gpu_hours=round(sum(s.idle_seconds for s in g.idle) / 3600, 2),
                        idle_seconds=round(min(s.idle_seconds for s in g.idle)), nodes=sorted(g.nodes),
                        pods=sorted(g.pods))


def _team_rows(workloads: list[IdleWorkload]) -> list[IdleTeam]:
    acc: dict[str, list[IdleWorkload]] = {}
    for w in workloads:
        acc.setdefault(w.team, []).append(w)
    rows = [IdleTeam(team=t, idle_gpus=sum(w.idle_gpus for w in ws),
                     idle_gpu_hours=round(sum(w.idle_gpu_hours for w in ws), 2), workloads=len(ws))
            for t, ws in acc.items()]
    return sorted(rows, key=lambda r: (-r.idle_gpu_hours, -r.idle_gpus, r.team))


def duration_text(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes // 60}h {minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def _idle_finding(w: IdleWorkload, threshold: float, idle_minutes: int) -> Finding:
    team = f" (team {w.team})" if w.team else ""
    return finding(
        Severity.WARNING, IDLE_ALLOCATED, w.kind, w.name, w.namespace,
        f"{w.idle_gpus} of {w.gpus} allocated GPUs idle (below {threshold:g} %) for at least "
        f"{duration_text(w.idle_seconds)}{team}: {w.idle_gpu_hours:g} idle GPU-hours on {', '.join(w.nodes)}",
        "ask the owner whether the job still needs them; ending or suspending it frees the GPUs for queued work")


# --- incremental: the reading moves on its own cadence -------------------------------------------------------------


def pod_print(p: Pod) -> Hashable:
    """What the rule reads of a Pod: where it is, whether it still holds its GPUs, how many, who owns it."""
    return (p.node_name, p.terminal, pod_gpus(p), _owner_ref(p)[2])


def workload_print(wl: Workload) -> Hashable:
    owner = wl.owner
    return (wl.namespace, wl.name, owner.uid if owner is not None else "")


class UtilisationPart(RulePart):
    """Keeps the GPU-holding Pods current change by change (a Pod that moved is looked at alone) and recomputes the
    view on a full build, when the feed has a new reading, or when the reading goes stale; every view asks, and
    most cost a comparison. Workloads and workspaces that change between two readings, and the Pods' rows, are
    judged with the next reading (at most one query interval later): DCGM's numbers are only as fresh as the
    reading, and on a fleet Pods change every view."""

    def __init__(self, rule: Rule) -> None:
        super().__init__(rule)
        self.value = UtilisationView()
        self._findings: list[Finding] = []
        self._off = False
        self._reading: UtilisationReading | None = None
        self._stale = False
        self._holders: dict[Key, Holder] | None = None

    def update(self, ctx: RuleContext, changed: Changed | None, needs: Mapping[str, Any],
               moved: Mapping[str, Any]) -> Any:
        settings = ctx.config.utilisation
        feed = settings.feed
        if feed is None:
            self._holders = None
            if self._off:
                return False
            self._off, self.value, self._findings = True, UtilisationView(), []
            return True
        self._follow(ctx, changed)
        reading = feed.latest()
        stale = reading is not None and (ctx.now - reading.at).total_seconds() > settings.stale_after_seconds
        if changed is not None and reading is self._reading and stale == self._stale and not self._off:
            return False
        self._off, self._reading, self._stale = False, reading, stale
        self.value, self._findings = utilisation_view(ctx, reading, feed.url, self._holders)
        return True

    def _follow(self, ctx: RuleContext, changed: Changed | None) -> None:
        if changed is None or self._holders is None:
            self._holders = gpu_holders(ctx) if not ctx.unreadable("Pod") else {}
            return
        for ns, name in changed.get("Pod", ()):
            p = ctx.store.get(Pod, name, ns or None)
            h = holder_of(p) if p is not None else None
            if h is None:
                self._holders.pop((ns, name), None)
            else:
                self._holders[(ns, name)] = h

    def values(self) -> tuple[Any, ...]:
        return (self.value,)

    def findings(self) -> list[Finding]:
        return self._findings
