"""Capacity reality: free GPUs per node and topology domain, GPU health, gang slots, fragmentation
(docs/capacity.md, "What can start now"; findings in docs/rules.md#capacity).

Per GPU-class flavor (`taugrid-gpu-<class>`, the nodes labelled with that class):
- `allocatable`: GPUs of Ready, non-deleting nodes (cordoned and unhealthy ones included);
- `requested`: GPU requests of the non-terminal Pods bound to them (the scheduler's effective request);
- `unhealthy` / `unknownHealth` / `cordoned`: allocatable GPUs of nodes in that state, the first that applies;
  `degraded` apart (a taint-class condition: still placeable); `notReady`, `deleting` and `tainted` (a
  NoSchedule/NoExecute taint a GPU workload does not tolerate) are extra counts;
- `free`: Σ max(0, allocatable − requested) over healthy or degraded, schedulable nodes.
Domains follow the TauGrid labels (site → network-domain → accelerator-domain → host), or the levels of the
flavor's Kueue Topology when it names one. Unreadable Pods make every requested/free figure unknown (None),
never "all free"; unreadable Nodes make the whole view unknown.

The view is built for a screen that draws domains as blocks: `CapacityFlavor.domains` lists every domain
with its parent, and `node_pods()` lists the Pods on one node for a drill-down.
"""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model import ZERO, Node, Pod, Quantity, ResourceFlavor, Topology, Workload
from ..model.names import (
    ACCELERATOR_DOMAIN_LABEL,
    GPU_CLASS_LABEL,
    HOSTNAME_LABEL,
    NETWORK_DOMAIN_LABEL,
    SITE_LABEL,
    TOPOLOGY_LEVEL_LABELS,
)
from ..store import AccessState, Store
from .base import Finding, RuleContext, Severity, ViewModel, finding
from .gang import HostRoom, Shape, domain_of, shape, slots, slots_gained, worker_slots
from .gpu_health import (
    DEGRADED,
    GPU_RESOURCE,
    UNHEALTHY,
    UNKNOWN,
    CapacityConfig,
    NodeHealth,
    node_health,
)
from .profiles import load_profile_set

FLAVOR_PREFIX = "taugrid-gpu-"
# The contract's domain names of the TauGrid labels (other Topology levels are named by their label).
LEVEL_NAMES = {SITE_LABEL: "site", NETWORK_DOMAIN_LABEL: "network-domain",
               ACCELERATOR_DOMAIN_LABEL: "accelerator-domain", HOSTNAME_LABEL: "host"}
CONTRACT_LEVELS = ("site", "network-domain", "accelerator-domain")
READS = frozenset({"Node", "Pod", "ResourceFlavor", "Topology", "Workload", "TauCluster", "TauWorkspace"})
TOP_BLOCKERS = 10

WORKLOAD_ON_UNHEALTHY_NODE = "CAPACITY-WORKLOAD-ON-UNHEALTHY-NODE"
SHAPE_UNPLACEABLE = "CAPACITY-SHAPE-UNPLACEABLE"
HEALTH_UNKNOWN = "CAPACITY-GPU-HEALTH-UNKNOWN"
CAPACITY_UNKNOWN = "CAPACITY-UNKNOWN"


# --- the view ---------------------------------------------------------------------------------------


class GpuCounts(ViewModel):
    allocatable: int = 0
    requested: int | None = 0  # None: Pods unreadable
    free: int | None = 0
    unhealthy: int = 0
    degraded: int = 0
    unknown_health: int = 0
    cordoned: int = 0
    not_ready: int = 0
    deleting: int = 0
    tainted: int = 0


class CapacityNode(ViewModel):
    name: str
    allocatable: int  # the node's allocatable GPUs, whatever its state
    requested: int | None
    free: int | None  # 0 on a node whose GPUs are not placeable
    health: str  # healthy | degraded | unknown | unhealthy
    reasons: list[str] = []
    schedulable: bool = True
    domains: dict[str, str] = {}  # site, network-domain, accelerator-domain ("" when the label is missing)
    pods: int = 0  # non-terminal Pods holding GPUs here


class CapacityDomain(ViewModel):
    """One topology domain above the hosts: a block of a screen's picture (its hosts are `nodes`)."""

    level: str
    name: str
    parent: str = ""  # the domain one level up ("" at the top)
    nodes: list[str] = []
    allocatable: int = 0
    requested: int | None = 0
    free: int | None = 0
    unavailable: int = 0  # allocatable GPUs on unhealthy, unknown, cordoned or tainted nodes


class FitsWhere(ViewModel):
    level: str
    domain: str
    count: int
    free: int


class Blocker(ViewModel):
    """A Pod whose GPUs, freed, would let more gangs of the shape start."""

    namespace: str
    name: str
    node: str
    domain: str
    gpus: int
    owner: str = ""  # Kind/name of its controller
    workload: str = ""  # the admitted Workload that runs it, when known
    slots_gained: int = 0


class Fits(ViewModel):
    placement: str
    gpus_per_worker: int
    workers: int
    count: int | None  # None: unknown (Pods unreadable)
    where: list[FitsWhere] = []
    profile: str = ""  # the workload profile this shape is of ("" for a shape asked for)
    best_free: int | None = None  # the most free GPUs in any one domain of the placement's level
    best_domain: str = ""  # that domain ("" for the flavor as a whole)
    best_workers: int | None = None  # how many workers of the shape that domain holds now
    blockers: list[Blocker] = []


class CapacityFlavor(ViewModel):
    name: str
    gpu_class: str
    levels: list[str] = []  # domain levels, highest first (host last)
    gpus: GpuCounts = GpuCounts()
    nodes: list[CapacityNode] = []
    domains: list[CapacityDomain] = []
    fits: Fits | None = None  # the shape asked for
    shapes: list[Fits] = []  # the ready workload profiles' shapes on this flavor


class TopologyWait(ViewModel):
    """A pending Workload whose quota may exist but whose gang no domain can place now (the Queues and why
    views say so)."""

    namespace: str
    name: str
    message: str  # "quota exists but no domain can place this shape (…): the best … has N free GPUs, …"
    best_free: int | None = None
    best_domain: str = ""
    from_kueue: bool = False  # Kueue's QuotaReserved=False reason is TopologyPlacementFailed


class CapacityView(ViewModel):
    known: bool = True  # False: Nodes or Pods unreadable (every free figure is then None)
    unknown_reason: str = ""
    flavors: list[CapacityFlavor] = []
    topology_waits: list[TopologyWait] = []  # pending Workloads no domain can place, by namespace and name

    def flavor(self, name: str) -> CapacityFlavor | None:
        return next((f for f in self.flavors if f.name == name), None)


class PodOnNode(ViewModel):
    namespace: str
    name: str
    phase: str
    gpus: int
    owner: str = ""
    workload: str = ""  # namespace/name of the Workload whose job owns it, when one does


# --- helpers ------------------------------------------------------------------------------------------


def gpus_of(q: Quantity | None) -> int:
    return 0 if q is None else int(q.value)


def _owner(p: Pod) -> tuple[str, str, str]:
    refs = p.metadata.owner_references
    ref = next((r for r in refs if r.controller), refs[0] if refs else None)
    return ("", "", "") if ref is None else (ref.kind, ref.name, ref.uid)


def pod_gpus(p: Pod) -> int:
    return gpus_of(p.effective_request(GPU_RESOURCE))


def node_pods(store: Store, node: str) -> list[PodOnNode]:
    """The non-terminal Pods bound to `node`, GPU holders first, each with the Workload its job runs under
    (a screen's drill-down: one pass over the Workloads, only when asked)."""
    pods = [p for p in store.list(Pod) if p.node_name == node and not p.terminal]
    uids = {_owner(p)[2] for p in pods} - {""}
    by_owner: dict[str, str] = {}
    if uids and store.access("Workload").state is AccessState.SYNCED:
        for wl in store.list(Workload):
            owner = wl.owner
            if owner is not None and owner.uid in uids:
                by_owner.setdefault(owner.uid, f"{wl.namespace}/{wl.name}")
    out = []
    for p in pods:
        kind, name, uid = _owner(p)
        out.append(PodOnNode(namespace=p.namespace or "", name=p.name, phase=p.status.phase, gpus=pod_gpus(p),
                             owner=f"{kind}/{name}" if kind else "", workload=by_owner.get(uid, "")))
    out.sort(key=lambda x: (-x.gpus, x.namespace, x.name))
    return out


def _levels(flavor: ResourceFlavor | None, topologies: Mapping[str, Topology]) -> tuple[str, ...]:
    """Domain labels of a flavor, highest first, hostname last."""
    topo = topologies.get(flavor.spec.topology_name or "") if flavor is not None else None
    labels = tuple(lv.node_label for lv in topo.spec.levels if lv.node_label) if topo is not None else ()
    if not labels:
        labels = TOPOLOGY_LEVEL_LABELS
    return labels if labels[-1] == HOSTNAME_LABEL else (*labels, HOSTNAME_LABEL)


@dataclass
class _NodeRow:
    node: Node
    health: NodeHealth
    allocatable: int
    requested: int = 0
    holders: list[tuple[Pod, int]] = field(default_factory=list)

    @property
    def counted(self) -> bool:
        return self.health.ready and not self.health.deleting

    @property
    def free(self) -> int:
        return max(0, self.allocatable - self.requested) if self.counted and self.health.placeable else 0


def _flavor_tolerations(flavor: ResourceFlavor | None) -> tuple[tuple[str, str], ...]:
    if flavor is None:
        return ()
    return tuple((t.key, t.value if t.operator != "Exists" else "") for t in flavor.spec.tolerations)


# --- the rule -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileShape:
    profile: str
    shape: Shape
    flavors: tuple[str, ...]  # the profile's resolved flavors; empty: every GPU flavor


def profile_shapes(ctx: RuleContext) -> list[ProfileShape]:
    """The shapes of the ready workload profiles that ask for GPUs (unknown placements skipped)."""
    if ctx.store.access("TauCluster").state is not AccessState.SYNCED:
        return []
    ps = load_profile_set(ctx)
    out = []
    for p in ps.profiles:
        if p.gpus_per_worker < 1 or not ps.is_ready(p):
            continue
        try:
            sh = shape(p.gpus_per_worker, max(1, p.worker_count), p.placement)
        except ValueError:
            continue
        out.append(ProfileShape(p.name, sh, tuple(p.resource_flavors)))
    return out


def derive_capacity(ctx: RuleContext) -> tuple[CapacityView, list[Finding]]:
    return capacity_view(ctx, None)


def capacity_view(ctx: RuleContext, asked: Shape | None) -> tuple[CapacityView, list[Finding]]:
    """The capacity view; with `asked`, each flavor's `fits` says how many such gangs fit now and where."""
    config: CapacityConfig = ctx.config.capacity
    store = ctx.store
    bad_nodes = ctx.unreadable("Node")
    if bad_nodes:
        why = f"{bad_nodes[0][0]} is {bad_nodes[0][1]}"
        return CapacityView(known=False, unknown_reason=why), [finding(
            Severity.WARNING, CAPACITY_UNKNOWN, "Node", "*", None, f"free GPU capacity is unknown: {why}",
            "grant list/watch on nodes to the console's identity")]
    bad_pods = ctx.unreadable("Pod")
    pods_known = not bad_pods
    flavors_by_name = {f.name: f for f in store.list(ResourceFlavor)} if not ctx.unreadable("ResourceFlavor") else {}
    topologies = {t.name: t for t in store.list(Topology)} if not ctx.unreadable("Topology") else {}

    by_class: dict[str, list[_NodeRow]] = {}
    rows: dict[str, _NodeRow] = {}
    for n in store.list(Node):
        cls = n.labels.get(GPU_CLASS_LABEL, "")
        if not cls:
            continue
        fl = flavors_by_name.get(FLAVOR_PREFIX + cls)
        row = _NodeRow(n, node_health(n, config, _flavor_tolerations(fl)), gpus_of(n.status.allocatable.get(GPU_RESOURCE)))
        by_class.setdefault(cls, []).append(row)
        rows[n.name] = row
    if pods_known:
        for p in store.list(Pod):
            if p.terminal or not p.node_name:
                continue
            held = rows.get(p.node_name)
            if held is None:
                continue
            g = pod_gpus(p)
            if g:
                held.requested += g
                held.holders.append((p, g))

    workloads = _admitted_by_owner(ctx, {_owner(p)[2] for r in rows.values() for p, _ in r.holders}) \
        if pods_known else {}
    shapes = profile_shapes(ctx)
    findings: list[Finding] = []
    out = []
    for cls in sorted(by_class):
        name = FLAVOR_PREFIX + cls
        nodes = sorted(by_class[cls], key=lambda r: r.node.name)
        levels = _levels(flavors_by_name.get(name), topologies)
        flavor = _flavor(name, cls, nodes, levels, pods_known, workloads, asked,
                         [s for s in shapes if not s.flavors or name in s.flavors])
        out.append(flavor)
        findings.extend(_flavor_findings(flavor, nodes, workloads))
    view = CapacityView(known=pods_known, unknown_reason="" if pods_known else f"{bad_pods[0][0]} is {bad_pods[0][1]}",
                        flavors=out)
    if asked is None:
        view = view.replaced(topology_waits=_topology_waits(ctx, view))
    if not pods_known:
        findings.append(finding(Severity.WARNING, CAPACITY_UNKNOWN, "Pod", "*", None,
                                f"free GPU capacity is unknown: {view.unknown_reason} (requests on nodes not known)",
                                "grant list/watch on pods to the console's identity"))
    return view, findings


# --- quota exists, no domain has the room ----------------------------------------------------------

TOPOLOGY_FAILED = "TopologyPlacementFailed"
NO_DOMAIN = "quota exists but no domain can place this shape"
_LEVEL_PLACEMENTS = {ACCELERATOR_DOMAIN_LABEL: "same-accelerator-domain", NETWORK_DOMAIN_LABEL: "same-network-domain",
                     SITE_LABEL: "same-site", HOSTNAME_LABEL: "same-host"}


def workload_shape(wl: Workload) -> Shape | None:
    """The gang shape of a Workload's first GPU pod set that asks to stay in one topology domain (its Kueue
    topology request, required or preferred), or None."""
    for ps in wl.spec.pod_sets:
        per_pod = ZERO
        for c in ps.template.spec.containers:
            q = c.resources.requests.get(GPU_RESOURCE) or c.resources.limits.get(GPU_RESOURCE)
            if q is not None:
                per_pod = per_pod + q
        req = ps.topology_request or {}
        level = req.get("required") or req.get("preferred")
        placement = _LEVEL_PLACEMENTS.get(level) if isinstance(level, str) else None
        if gpus_of(per_pod) >= 1 and placement is not None:
            return shape(gpus_of(per_pod), max(1, ps.count), placement)
    return None


def topology_wait(ctx: RuleContext, wl: Workload, flavors: Iterable[str], kueue: Mapping[str, str] | None,
                  view: CapacityView | None = None) -> TopologyWait | None:
    """Whether no domain of `flavors` can place `wl`'s gang now (or Kueue says TopologyPlacementFailed and
    the room cannot be checked), with the best domain's free GPUs and worker room; None when room exists."""
    sh = workload_shape(wl)
    said = kueue is not None and kueue.get("reason") == TOPOLOGY_FAILED
    if sh is None and not said:
        return None
    best: tuple[int, str, str, int] | None = None  # (free GPUs, flavor, domain, workers it holds)
    counts: list[int | None] = []
    if sh is not None:
        shaped, _ = capacity_view(ctx, sh) if view is None else (view, [])
        for name in flavors:
            fl = shaped.flavor(name)
            fits = None if fl is None else (fl.fits or next((f for f in fl.shapes if f.profile == ""), None))
            if fits is None:
                continue
            counts.append(fits.count)
            if fits.best_free is not None and (best is None or fits.best_free > best[0]):
                best = (fits.best_free, name, fits.best_domain, fits.best_workers or 0)
    unknown = not counts or any(c is None for c in counts)
    if any(counts) or (not said and unknown):
        return None  # room exists (Kueue's word may be stale), or nothing known to say otherwise
    what = f"{sh.workers}×{sh.gpus_per_worker} GPUs {sh.placement}" if sh is not None else "its topology request"
    msg = f"{NO_DOMAIN} ({what})"
    if best is not None and sh is not None:
        where = f" ({best[2]})" if best[2] else ""
        msg += (f": the best {sh.level or 'flavor'} of {best[1]}{where} has {best[0]} free GPUs, room for "
                f"{best[3]} of the {sh.workers} workers of {sh.gpus_per_worker} GPUs on one host")
    elif unknown:
        msg += ": free capacity per domain is unknown"
    return TopologyWait(namespace=wl.namespace or "", name=wl.name, message=msg,
                        best_free=best[0] if best else None, best_domain=best[2] if best else "", from_kueue=said)


def _topology_waits(ctx: RuleContext, view: CapacityView, pending: Iterable[Workload] | None = None,
                    shaped: Callable[[Shape], CapacityView] | None = None) -> list[TopologyWait]:
    """The pending Workloads (not admitted, quota not reserved) that no domain can place now, on the flavor
    their pod template selects by GPU class (else every GPU flavor). `pending`: the candidates when the caller
    keeps them (else every Workload); `shaped`: the view with a shape's fits (else `capacity_view`)."""
    if ctx.unreadable("Workload"):
        return []
    out = []
    by_shape: dict[Shape, CapacityView] = {}  # one capacity pass per distinct shape
    for wl in ctx.store.list(Workload) if pending is None else pending:
        if not pending_gang(wl):
            continue
        sets = wl.spec.pod_sets
        c = wl.condition("QuotaReserved")
        kueue = {"reason": c.reason} if c is not None else None
        cls = next((ps.template.spec.node_selector.get(GPU_CLASS_LABEL) for ps in sets
                    if ps.template.spec.node_selector.get(GPU_CLASS_LABEL)), None)
        flavors = [FLAVOR_PREFIX + cls] if cls else [f.name for f in view.flavors]
        sh = workload_shape(wl)
        if sh is not None and sh not in by_shape:
            by_shape[sh] = capacity_view(ctx, sh)[0] if shaped is None else shaped(sh)
        found = topology_wait(ctx, wl, flavors, kueue, by_shape.get(sh) if sh is not None else None)
        if found is not None:
            out.append(found)
    return sorted(out, key=lambda w: (w.namespace, w.name))


def pending_gang(wl: Workload) -> bool:
    """A Workload that asks to keep its pod sets in one topology domain and waits for quota."""
    sets = wl.spec.pod_sets
    return bool(sets) and any(ps.topology_request for ps in sets) and not wl.quota_reserved and not wl.finished


def _admitted_by_owner(ctx: RuleContext, uids: set[str]) -> dict[str, Workload]:
    """The admitted, unfinished Workloads whose jobs own the GPU-holding Pods (by the job's uid). One pass over
    the Workloads that reads only their owner's uid until one matches: they are 100k on a fleet."""
    uids.discard("")
    if not uids or ctx.unreadable("Workload"):
        return {}
    out = {}
    for wl in ctx.store.list(Workload):
        refs = wl.metadata.owner_references
        if not refs or not any(r.uid in uids for r in refs):
            continue
        owner = wl.owner
        if owner is not None and owner.uid in uids and wl.admitted and not wl.finished:
            out[owner.uid] = wl
    return out


def _domain_values(n: Node, levels: Iterable[str]) -> dict[str, str]:
    return {lv: (n.name if lv == HOSTNAME_LABEL else n.labels.get(lv, "")) for lv in levels}


def _flavor(name: str, cls: str, nodes: list[_NodeRow], levels: tuple[str, ...], pods_known: bool,
            workloads: Mapping[str, Workload], asked: Shape | None, shapes: list[ProfileShape],
            node_views: list[CapacityNode] | None = None, hosts: list[HostRoom] | None = None) -> CapacityFlavor:
    """One flavor's figures from its node rows (sorted by name); `node_views` and `hosts`: the rows' views and
    rooms when the caller keeps them (the incremental part, engine/rules/capacity_part.py)."""
    hosts = _hosts(nodes) if hosts is None else hosts
    fits = _fits(asked, "", hosts, nodes, pods_known, workloads) if asked is not None else None
    return CapacityFlavor(
        name=name, gpu_class=cls, levels=[LEVEL_NAMES.get(lv, lv) for lv in levels],
        gpus=_gpu_counts(nodes, pods_known),
        nodes=node_views if node_views is not None else [node_view(r, pods_known) for r in nodes],
        domains=_domains(nodes, levels, pods_known), fits=fits,
        shapes=[_fits(s.shape, s.profile, hosts, nodes, pods_known, workloads) for s in shapes])


def node_view(r: _NodeRow, pods_known: bool) -> CapacityNode:
    h = r.health
    return CapacityNode(
        name=r.node.name, allocatable=r.allocatable, requested=r.requested if pods_known else None,
        free=r.free if pods_known else None, health=h.health, reasons=list(h.reasons), schedulable=h.schedulable,
        domains={k: r.node.labels.get(lbl, "") for lbl, k in LEVEL_NAMES.items() if k in CONTRACT_LEVELS},
        pods=len(r.holders))


def _gpu_counts(nodes: list[_NodeRow], pods_known: bool) -> GpuCounts:
    g = GpuCounts().model_dump()
    for r in nodes:
        h, a = r.health, r.allocatable
        if r.health.deleting:
            g["deleting"] += a
        elif not h.ready:
            g["not_ready"] += a
        else:
            g["allocatable"] += a
            g["requested"] += r.requested
            g["free"] += r.free
            state = UNHEALTHY if h.health == UNHEALTHY else UNKNOWN if h.health == UNKNOWN else (
                "cordoned" if h.cordoned else "")
            if state:
                g[{"unknown": "unknown_health"}.get(state, state)] += a
            if h.health == DEGRADED:
                g["degraded"] += a
            if h.blocking_taints:
                g["tainted"] += a
    if not pods_known:
        g["requested"] = g["free"] = None
    return GpuCounts(**g)


def _hosts(nodes: list[_NodeRow]) -> list[HostRoom]:
    """The nodes with free GPUs, as the gang rules see them."""
    return [h for h in map(host_room, nodes) if h is not None]


def host_room(r: _NodeRow) -> HostRoom | None:
    free = r.free
    if free <= 0:
        return None
    return HostRoom(r.node.name, free, {LEVEL_NAMES[lv]: r.node.labels.get(lv, "") for lv in LEVEL_NAMES
                                        if lv != HOSTNAME_LABEL})


@dataclass
class _DomainSums:
    nodes: list[str] = field(default_factory=list)
    allocatable: int = 0
    requested: int = 0
    free: int = 0
    unavailable: int = 0


def _domains(nodes: list[_NodeRow], levels: tuple[str, ...], pods_known: bool) -> list[CapacityDomain]:
    acc: dict[tuple[int, str, str], _DomainSums] = {}
    for r in nodes:
        if not r.counted:
            continue
        values = _domain_values(r.node, levels)
        parent = ""
        for i, lv in enumerate(levels[:-1]):  # hosts are the nodes: not repeated as domains
            v = values[lv]
            if not v:
                break  # a node without this label is in no domain below it either
            d = acc.setdefault((i, v, parent), _DomainSums())
            d.nodes.append(r.node.name)
            d.allocatable += r.allocatable
            d.requested += r.requested
            d.free += r.free
            if not r.health.placeable:
                d.unavailable += r.allocatable
            parent = v
    return [CapacityDomain(level=LEVEL_NAMES.get(levels[i], levels[i]), name=v, parent=parent, nodes=d.nodes,
                           allocatable=d.allocatable, requested=d.requested if pods_known else None,
                           free=d.free if pods_known else None, unavailable=d.unavailable)
            for (i, v, parent), d in sorted(acc.items())]


def _fits(sh: Shape, profile: str, hosts: list[HostRoom], nodes: list[_NodeRow], pods_known: bool,
          workloads: Mapping[str, Workload], with_blockers: bool = True) -> Fits:
    base: dict[str, Any] = dict(placement=sh.placement, gpus_per_worker=sh.gpus_per_worker, workers=sh.workers,
                                profile=profile)
    if not pods_known:
        return Fits(count=None, **base)
    count, where = slots(hosts, sh)
    per_domain: dict[str, int] = {}
    for h in hosts:
        d = domain_of(h, sh.level)
        if d is not None:
            per_domain[d] = per_domain.get(d, 0) + h.free
    best_domain, best = max(per_domain.items(), key=lambda kv: (kv[1], kv[0]), default=("", 0))
    return Fits(count=count, where=[FitsWhere(level=w.level, domain=w.domain, count=w.count, free=w.free)
                                    for w in where],
                best_free=best, best_domain=best_domain,
                best_workers=worker_slots(hosts, sh).get(best_domain, 0),
                blockers=_blockers(sh, nodes, workloads) if with_blockers else [], **base)


def _blockers(sh: Shape, nodes: list[_NodeRow], workloads: Mapping[str, Workload]) -> list[Blocker]:
    """The Pods whose GPUs, freed, would let the most more gangs start (one Pod at a time)."""
    placeable = [r for r in nodes if r.counted and r.health.placeable]
    hosts = {r.node.name: HostRoom(r.node.name, r.free, {LEVEL_NAMES[lv]: r.node.labels.get(lv, "")
                                                         for lv in LEVEL_NAMES if lv != HOSTNAME_LABEL})
             for r in placeable}
    per_domain = worker_slots(hosts.values(), sh)
    out = []
    for r in placeable:
        host = hosts[r.node.name]
        d = domain_of(host, sh.level)
        if d is None:
            continue
        for p, gpus in r.holders:
            gained = slots_gained(host, gpus, per_domain.get(d, 0), sh)
            if gained <= 0:
                continue
            kind, oname, uid = _owner(p)
            wl = workloads.get(uid)
            out.append(Blocker(namespace=p.namespace or "", name=p.name, node=r.node.name, domain=d or "flavor",
                               gpus=gpus, owner=f"{kind}/{oname}" if kind else "",
                               workload=f"{wl.namespace}/{wl.name}" if wl is not None else "", slots_gained=gained))
    out.sort(key=lambda b: (-b.slots_gained, b.gpus, b.namespace, b.name))
    return out[:TOP_BLOCKERS]


def health_rows(nodes: list[_NodeRow]) -> tuple[list[_NodeRow], list[str]]:
    """What a flavor's findings read of its rows: the unhealthy rows, and the counted nodes of unknown health (a
    caller that keeps the rows keeps these too: they are a walk of every node of the flavor)."""
    return ([r for r in nodes if r.health.health == UNHEALTHY],
            [r.node.name for r in nodes if r.counted and r.health.health == UNKNOWN])


def _flavor_findings(flavor: CapacityFlavor, nodes: list[_NodeRow], workloads: Mapping[str, Workload],
                     health: tuple[list[_NodeRow], list[str]] | None = None) -> list[Finding]:
    out = []
    unhealthy, unknown = health if health is not None else health_rows(nodes)
    on_bad: dict[tuple[str, str], tuple[Workload, set[str]]] = {}
    for r in unhealthy:
        for p, _ in r.holders:
            wl = workloads.get(_owner(p)[2])
            if wl is not None:
                on_bad.setdefault((wl.namespace or "", wl.name), (wl, set()))[1].add(r.node.name)
    for (ns, name), (_wl, bad) in sorted(on_bad.items()):
        why = "; ".join(f"{n}: {', '.join(c for c in _by_name(unhealthy, n).health.reasons)}" for n in sorted(bad))
        out.append(finding(Severity.WARNING, WORKLOAD_ON_UNHEALTHY_NODE, "Workload", name, ns,
                           f"runs on unhealthy GPU node{'s' if len(bad) > 1 else ''} ({why})",
                           "checkpoint and move it (cordon and drain the node), or expect it to fail"))
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        out.append(finding(Severity.WARNING, HEALTH_UNKNOWN, "ResourceFlavor", flavor.name, None,
                           f"GPU health unknown on {len(unknown)} node{'s' if len(unknown) > 1 else ''} ({shown}): "
                           "their GPUs are not counted free",
                           "check the node's DCGM exporter and TauGrid's metrics collector"))
    placed = [s for s in flavor.shapes if s.count is not None]
    if placed and all(s.count == 0 for s in placed):
        names = ", ".join(f"{s.profile} ({s.workers}×{s.gpus_per_worker} GPUs, {s.placement})" for s in placed)
        out.append(finding(Severity.WARNING, SHAPE_UNPLACEABLE, "ResourceFlavor", flavor.name, None,
                           f"free capacity ({flavor.gpus.free} GPUs) places none of its profiles' shapes: {names}",
                           "see `taudash capacity` for the Pods whose GPUs block them"))
    return out


def _by_name(nodes: list[_NodeRow], name: str) -> _NodeRow:
    return next(r for r in nodes if r.node.name == name)


__all__ = ["TOPOLOGY_FAILED", "Blocker", "CapacityDomain", "CapacityFlavor", "CapacityNode", "CapacityView", "Fits",
           "FitsWhere", "GpuCounts", "PodOnNode", "TopologyWait", "capacity_view", "derive_capacity", "node_pods",
           "profile_shapes", "topology_wait", "workload_shape"]
