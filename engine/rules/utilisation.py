"""Rule area `utilisation`: allocated GPUs that sit idle, per Workload and team (docs/rules.md#utilisation).

Inputs: the GPU-holding Pods (bound, non-terminal, requesting `nvidia.com/gpu`), the Workloads that own their jobs,
the workspaces (namespace → workspace → team) and the latest DCGM reading from Prometheus (`RuleConfig.utilisation`:
engine/rules/gpu_usage.py). A GPU is idle when it reads below the threshold now and has done so for at least
`capacity.idleMinutes`. No Prometheus configured: the view says so (`enabled` false). Prometheus unreachable, no
DCGM series, a reading too old or the Pods unreadable: utilisation is unknown — `known` false with the reason, every
count null, never 0, and no idle finding.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
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


def _stamp(at: datetime) -> str:
    return at.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def utilisation_view(ctx: RuleContext, reading: UtilisationReading | None, source: str) -> tuple[UtilisationView,
                                                                                              list[Finding]]:
    """The view from the store and one reading, judged at `ctx.now` (pure: the reading is given)."""
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
    by_pod: dict[tuple[str, str], list[GpuSample]] = {}
    for s in reading.samples:
        have = by_pod.get((s.namespace, s.pod))
        if have is None:
            by_pod[(s.namespace, s.pod)] = [s]
        else:
            have.append(s)
    idle_after = idle_minutes * 60.0
    threshold = settings.idle_below_percent
    teams = _teams(ctx)
    groups: dict[tuple[str, str, str], _Group] = {}
    rows: list[PodUtilisation] = []
    allocated = measured = idle_total = 0
    row = PodUtilisation.trusted  # one row per GPU-holding Pod (tens of thousands on a fleet): built unvalidated
    for p in ctx.store.list(Pod):
        node = p.spec.node_name
        if not node or p.terminal:
            continue
        gpus = pod_gpus(p)
        if not gpus:
            continue
        ns = p.metadata.namespace or ""
        name = p.metadata.name
        samples = by_pod.get((ns, name), ())[:gpus]
        idle = [s for s in samples if s.util < threshold and s.idle_seconds >= idle_after]
        allocated += gpus
        measured += len(samples)
        idle_total += len(idle)
        rows.append(row(namespace=ns, name=name, node=node, gpus=gpus, measured=len(samples),
                        utilisation=round(sum(s.util for s in samples) / len(samples), 1) if samples else None,
                        idle_gpus=len(idle)))
        if not idle:
            continue
        g = _group_of(ctx, p, groups)
        g.gpus += gpus
        g.idle += idle
        g.nodes.add(node)
        g.pods.add(name)
    # A Workload's GPUs count whole, idle or not (its busy Pods too): the share idle is what the operator weighs.
    for p, g in _busy_members(ctx, groups):
        g.gpus += pod_gpus(p)
    workloads = sorted((_workload(g, teams) for g in groups.values()),
                       key=lambda w: (-w.idle_gpu_hours, -w.idle_gpus, w.namespace, w.name))
    view = UtilisationView(known=True, unknown_reason="", measured_at=_stamp(reading.at),
                           gpus=UtilisationGpus(allocated=allocated, measured=measured, idle=idle_total,
                                                unmeasured=allocated - measured),
                           workloads=workloads, teams=_team_rows(workloads),
                           pods=rows, **base)  # the store lists Pods by namespace and name
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


def _group_of(ctx: RuleContext, p: Pod, groups: dict[tuple[str, str, str], _Group]) -> _Group:
    """The Workload a Pod's GPUs count for: Kueue's Workload of the Pod's job when it is known, else the job."""
    kind, name, uid = _owner_ref(p)
    ns = p.namespace or ""
    key = (ns, kind, uid or p.name)
    g = groups.get(key)
    if g is None:
        owner = f"{kind}/{name}" if kind else ""
        wls = [w for w in ctx.store.by_owner(uid, "Workload") if isinstance(w, Workload)] \
            if uid and not ctx.unreadable("Workload") else []
        if wls:
            g = _Group(ns, wls[0].name, "Workload", owner)
        else:
            g = _Group(ns, name or p.name, kind or "Pod", owner)
        groups[key] = g
    return g


def _busy_members(ctx: RuleContext, groups: Mapping[tuple[str, str, str], _Group]) -> Iterable[tuple[Pod, _Group]]:
    """The GPU-holding Pods of an idle group that hold no idle GPU (same owner)."""
    for (ns, _kind, uid), g in groups.items():
        for o in ctx.store.by_owner(uid, "Pod") if uid else ():
            if isinstance(o, Pod) and o.name not in g.pods and not o.terminal and o.node_name and o.namespace == ns:
                yield o, g


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
    """Recomputed on a full build, when the feed has a new reading, or when the reading goes stale; every view
    asks, and most cost a comparison. Pods, Workloads and workspaces that change between two readings are
    judged with the next one (at most one query interval later): DCGM's numbers are only as fresh as the
    reading, and on a fleet Pods change every view — a whole pass over them each time would cost more than the
    rest of the update."""

    def __init__(self, rule: Rule) -> None:
        super().__init__(rule)
        self.value = UtilisationView()
        self._findings: list[Finding] = []
        self._off = False
        self._reading: UtilisationReading | None = None
        self._stale = False

    def update(self, ctx: RuleContext, changed: Changed | None, needs: Mapping[str, Any],
               moved: Mapping[str, Any]) -> Any:
        settings = ctx.config.utilisation
        feed = settings.feed
        if feed is None:
            if self._off:
                return False
            self._off, self.value, self._findings = True, UtilisationView(), []
            return True
        reading = feed.latest()
        stale = reading is not None and (ctx.now - reading.at).total_seconds() > settings.stale_after_seconds
        if changed is not None and reading is self._reading and stale == self._stale and not self._off:
            return False
        self._off, self._reading, self._stale = False, reading, stale
        self.value, self._findings = utilisation_view(ctx, reading, feed.url)
        return True

    def values(self) -> tuple[Any, ...]:
        return (self.value,)

    def findings(self) -> list[Finding]:
        return self._findings
