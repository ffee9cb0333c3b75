"""Rule area `capacity` kept per node (docs/decisions.md, 143): what `capacity_view(ctx, None)` derives,
moved by the objects that changed instead of recomputed from every Pod.

It keeps, per GPU-class node, its row (allocatable, health, the non-terminal Pods bound to it that request
GPUs) and its view; per flavor, the figures made from its rows (counts, domains, the profiles' gang slots).
A Pod event moves one node's row and re-sums that node's flavor (a flavor's sums walk its nodes, not its
Pods); a Node event re-derives that node; a Workload event moves only the admitted Workload named beside a
Pod (blockers, findings) and the pending gangs. A ResourceFlavor or Topology change (tolerations, levels)
re-derives every node. Unreadable Nodes or Pods: the part recomputes `capacity_view` whole (it says
"unknown"; an access change rebuilds the part anyway).

tests/unit/test_capacity_part.py checks random event sequences against `capacity_view` from scratch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..model import Node, Pod, ResourceFlavor, Topology, Workload
from ..model.names import GPU_CLASS_LABEL
from .base import Changed, Finding, Key, RuleContext, RulePart
from .capacity import (
    FLAVOR_PREFIX,
    CapacityFlavor,
    CapacityNode,
    CapacityView,
    Fits,
    ProfileShape,
    _fits,
    _flavor,
    _flavor_findings,
    _flavor_tolerations,
    _levels,
    _NodeRow,
    _owner,
    _topology_waits,
    capacity_view,
    gpus_of,
    health_rows,
    host_room,
    node_view,
    pending_gang,
    pod_gpus,
    profile_shapes,
)
from .gang import HostRoom, Shape
from .gpu_health import GPU_RESOURCE, NodeHealth, node_health


@dataclass(frozen=True, slots=True)
class _NodeEntry:
    node: Node
    cls: str
    health: NodeHealth
    allocatable: int

    def same(self, other: _NodeEntry) -> bool:
        """Equal in everything the view reads of a node (its name, labels, health, GPUs)."""
        return (self.cls, self.allocatable, self.health) == (other.cls, other.allocatable, other.health) and \
            self.node.labels == other.node.labels


# A GPU-holding Pod: its node, GPUs and owner (kind, name, uid) — what the view reads of it.
_Held = tuple[str, int, tuple[str, str, str]]


class CapacityPart(RulePart):
    def __init__(self, rule: Any) -> None:
        super().__init__(rule)
        self._whole: tuple[CapacityView, list[Finding]] | None = None  # Nodes or Pods unreadable
        self._nodes: dict[str, _NodeEntry] = {}  # GPU-class nodes by name
        self._classes: dict[str, set[str]] = {}  # class → its nodes
        self._held: dict[Key, _Held] = {}  # GPU-holding Pods
        self._on: dict[str, dict[Key, tuple[Pod, int]]] = {}  # node → its GPU-holding Pods
        self._by_uid: dict[str, set[Key]] = {}  # owner uid → the GPU-holding Pods it owns
        self._admitted: dict[str, dict[Key, Workload]] = {}  # owner uid → its admitted, unfinished Workloads
        self._best: dict[str, Workload] = {}  # owner uid → the one the view names (the last by key)
        self._wl_uid: dict[Key, str] = {}  # Workload → the uid it is admitted under
        self._gangs: dict[Key, Workload] = {}  # pending gangs (topology requests)
        self._views: dict[str, tuple[CapacityNode, HostRoom | None]] = {}  # a node's view and room
        self._hosts: dict[str, list[HostRoom]] = {}  # class → rooms of its nodes with free GPUs
        self._rows: dict[str, list[_NodeRow]] = {}  # class → rows, by node name
        self._health: dict[str, tuple[list[_NodeRow], list[str]]] = {}  # class → health_rows of its rows
        self._bare: dict[str, CapacityFlavor] = {}  # class → flavor without Workload names
        self._dressed: dict[str, tuple[CapacityFlavor, list[Finding]]] = {}
        self._waits: list[Any] = []
        self._view = CapacityView()
        self._flavors: dict[str, ResourceFlavor] = {}
        self._topologies: dict[str, Topology] = {}
        self._shapes: list[ProfileShape] = []
        self._wl_ok = False

    # the rule --------------------------------------------------------------------------------------
    def update(self, ctx: RuleContext, changed: Changed | None, needs: Mapping[str, Any],
               moved: Mapping[str, Any]) -> bool:
        if changed is None:
            self._whole = capacity_view(ctx, None) if ctx.unreadable("Node") or ctx.unreadable("Pod") else None
            if self._whole is not None:
                return True
            self._wl_ok = not ctx.unreadable("Workload")
            self._read_flavors(ctx)
            self._shapes = profile_shapes(ctx)
            for n in ctx.store.list(Node):
                self._set_node(ctx, n.name, n)
            for p in ctx.store.list(Pod):
                if p.node_name and not p.terminal:  # the others hold nothing (most of a fleet's Pods)
                    self._set_pod((p.namespace or "", p.name), p)
            if self._wl_ok:
                self._build_workloads(ctx)
            self._refresh(ctx, set(self._classes), set(self._nodes), set(), True)
            return True
        if self._whole is not None:
            self._whole = capacity_view(ctx, None)
            return True
        return self._apply(ctx, changed)

    def _apply(self, ctx: RuleContext, changed: Changed) -> bool:
        s = ctx.store
        classes: set[str] = set()
        nodes: set[str] = set()
        if "ResourceFlavor" in changed or "Topology" in changed:
            self._read_flavors(ctx)
            for name in list(self._nodes):
                self._set_node(ctx, name, s.get(Node, name))
            classes |= set(self._classes)
            nodes |= set(self._nodes)
        if "TauCluster" in changed or "TauWorkspace" in changed:
            shapes = profile_shapes(ctx)
            if shapes != self._shapes:
                self._shapes = shapes
                classes |= set(self._classes)
        for _, name in changed.get("Node", ()):
            old = self._nodes.get(name)
            new = self._set_node(ctx, name, s.get(Node, name))
            if old is None and new is None:
                continue
            if old is not None and new is not None and old.same(new):
                self._nodes[name] = old  # nothing the view reads moved
                continue
            nodes.add(name)
            classes |= {e.cls for e in (old, new) if e is not None}
        for key in changed.get("Pod", ()):
            nodes |= self._set_pod(key, s.get(Pod, key[1], key[0]))
        classes |= {self._nodes[n].cls for n in nodes if n in self._nodes}
        dress: set[str] = set()
        gangs = False
        if self._wl_ok:
            uids: set[str] = set()
            for key in changed.get("Workload", ()):
                moved_uids, gang = self._set_workload(key, s.get(Workload, key[1], key[0]))
                uids |= moved_uids
                gangs |= gang
            for uid in uids:
                for pk in self._by_uid.get(uid, ()):
                    e = self._nodes.get(self._held[pk][0])
                    if e is not None:
                        dress.add(e.cls)
        if not classes and not dress and not gangs:
            return False
        self._refresh(ctx, classes, nodes, dress, bool(classes) or gangs)
        return True

    def values(self) -> tuple[Any, ...]:
        return (self._whole[0] if self._whole is not None else self._view,)

    def findings(self) -> Iterable[Finding]:
        if self._whole is not None:
            return self._whole[1]
        return [f for c in sorted(self._dressed) for f in self._dressed[c][1]]

    # state -----------------------------------------------------------------------------------------
    def _read_flavors(self, ctx: RuleContext) -> None:
        s = ctx.store
        self._flavors = {f.name: f for f in s.list(ResourceFlavor)} if not ctx.unreadable("ResourceFlavor") else {}
        self._topologies = {t.name: t for t in s.list(Topology)} if not ctx.unreadable("Topology") else {}

    def _set_node(self, ctx: RuleContext, name: str, n: Node | None) -> _NodeEntry | None:
        """Replace one node's entry; returns the new one (None: gone or not a GPU-class node)."""
        old = self._nodes.pop(name, None)
        if old is not None:
            members = self._classes[old.cls]
            members.discard(name)
            if not members:
                del self._classes[old.cls]
        cls = n.labels.get(GPU_CLASS_LABEL, "") if n is not None else ""
        if n is None or not cls:
            self._views.pop(name, None)
            return None
        fl = self._flavors.get(FLAVOR_PREFIX + cls)
        new = self._nodes[name] = _NodeEntry(n, cls, node_health(n, ctx.config.capacity, _flavor_tolerations(fl)),
                                             gpus_of(n.status.allocatable.get(GPU_RESOURCE)))
        self._classes.setdefault(cls, set()).add(name)
        return new

    def _set_pod(self, key: Key, p: Pod | None) -> set[str]:
        """Replace one Pod's hold on its node; returns the nodes whose rows moved."""
        new: _Held | None = None
        gpus = 0
        if p is not None and not p.terminal and p.node_name:
            gpus = pod_gpus(p)
            if gpus:
                new = (p.node_name, gpus, _owner(p))
        old = self._held.get(key)
        if old == new:
            if new is not None and p is not None:
                self._on[new[0]][key] = (p, gpus)  # the same hold, a newer object
            return set()
        out = set()
        if old is not None:
            del self._held[key]
            on = self._on[old[0]]
            del on[key]
            if not on:
                del self._on[old[0]]
            owned = self._by_uid[old[2][2]]
            owned.discard(key)
            if not owned:
                del self._by_uid[old[2][2]]
            out.add(old[0])
        if new is not None:
            assert p is not None
            self._held[key] = new
            self._on.setdefault(new[0], {})[key] = (p, gpus)
            self._by_uid.setdefault(new[2][2], set()).add(key)
            out.add(new[0])
        return out

    def _set_workload(self, key: Key, wl: Workload | None) -> tuple[set[str], bool]:
        """Replace one Workload; returns the owner uids whose named Workload moved, and whether the pending
        gangs did."""
        uids = set()
        old_uid = self._wl_uid.pop(key, None)
        if old_uid is not None:
            del self._admitted[old_uid][key]
            uids.add(old_uid)
        owner = wl.owner if wl is not None else None
        if wl is not None and owner is not None and owner.uid and wl.admitted and not wl.finished:
            self._admitted.setdefault(owner.uid, {})[key] = wl
            self._wl_uid[key] = owner.uid
            uids.add(owner.uid)
        for uid in uids:
            mine = self._admitted.get(uid)
            if mine:
                self._best[uid] = mine[max(mine)]
            else:
                self._admitted.pop(uid, None)
                self._best.pop(uid, None)
        was = self._gangs.pop(key, None) is not None
        now = wl is not None and pending_gang(wl)
        if now:
            assert wl is not None
            self._gangs[key] = wl
        return uids, was or now

    def _build_workloads(self, ctx: RuleContext) -> None:
        """`_set_workload` of every Workload into empty state, in key order (so the last admitted one an owner
        has is the one the view names): the 100k-Workload pass of a build, kept to the ones that count."""
        admitted, wl_uid, best, gangs = self._admitted, self._wl_uid, self._best, self._gangs
        for wl in ctx.store.list(Workload):
            if wl.finished:
                continue
            owner = wl.owner
            if owner is not None and owner.uid and wl.admitted:
                key = (wl.metadata.namespace or "", wl.metadata.name)
                admitted.setdefault(owner.uid, {})[key] = wl
                wl_uid[key] = owner.uid
                best[owner.uid] = wl
            if pending_gang(wl):
                gangs[(wl.metadata.namespace or "", wl.metadata.name)] = wl

    # the view --------------------------------------------------------------------------------------
    def _refresh(self, ctx: RuleContext, classes: set[str], nodes: set[str], dress: set[str], waits: bool) -> None:
        for cls in classes:
            self._bare.pop(cls, None)
            self._dressed.pop(cls, None)
            self._rows.pop(cls, None)
            self._health.pop(cls, None)
            self._hosts.pop(cls, None)
            members = self._classes.get(cls)
            if not members:
                continue
            rows = self._rows[cls] = [self._row(n) for n in sorted(members)]
            self._health[cls] = health_rows(rows)
            views = []
            hosts = []
            for r in rows:
                known = self._views.get(r.node.name)
                if known is None or r.node.name in nodes:
                    known = self._views[r.node.name] = (node_view(r, True), host_room(r))
                views.append(known[0])
                if known[1] is not None:
                    hosts.append(known[1])
            self._hosts[cls] = hosts
            name = FLAVOR_PREFIX + cls
            self._bare[cls] = _flavor(name, cls, rows, _levels(self._flavors.get(name), self._topologies), True, {},
                                      None, [s for s in self._shapes if not s.flavors or name in s.flavors], views,
                                      hosts)
        for cls in classes | dress:
            if cls in self._bare:
                flavor = self._dress(self._bare[cls])
                self._dressed[cls] = (flavor, _flavor_findings(flavor, self._rows[cls], self._best, self._health[cls]))
        flavors = [self._dressed[c][0] for c in sorted(self._dressed)]
        view = CapacityView(known=True, unknown_reason="", flavors=flavors)
        if waits:
            self._waits = _topology_waits(ctx, view, list(self._gangs.values()), self._shaped) if self._wl_ok else []
        self._view = view.replaced(topology_waits=self._waits)

    def _row(self, name: str) -> _NodeRow:
        e = self._nodes[name]
        holders = list(self._on.get(name, {}).values())
        return _NodeRow(e.node, e.health, e.allocatable, sum(g for _, g in holders), holders)

    def _dress(self, flavor: CapacityFlavor) -> CapacityFlavor:
        """The flavor with the admitted Workload named beside each blocking Pod."""
        best = self._best
        if not best:
            return flavor

        def named(fits: Fits) -> Fits:
            out, moved = [], False
            for b in fits.blockers:
                wl = best.get(self._held[(b.namespace, b.name)][2][2])
                if wl is not None:
                    b = b.replaced(workload=f"{wl.namespace}/{wl.name}")
                    moved = True
                out.append(b)
            return fits.replaced(blockers=out) if moved else fits

        return flavor.replaced(fits=named(flavor.fits) if flavor.fits is not None else None,
                               shapes=[named(f) for f in flavor.shapes])

    def _shaped(self, sh: Shape) -> CapacityView:
        """Each flavor's room for one shape (what a topology wait reads: counts and the best domain)."""
        return CapacityView(flavors=[
            CapacityFlavor(name=FLAVOR_PREFIX + cls, gpu_class=cls,
                           fits=_fits(sh, "", self._hosts[cls], rows, True, {}, with_blockers=False))
            for cls, rows in sorted(self._rows.items())])


__all__ = ["CapacityPart"]
