"""Where Pods go in the simulated cluster: the nodes a pod may use, the room left on each, and how the pods
of a pod set are placed — one by one on the least allocated node (kube-scheduler's default scoring), or all
inside one domain of a topology level (Kueue's Topology Aware Scheduling, "required" mode).

Pure functions of raw objects. The simulated kube-scheduler (controllers/pods.py), the simulated Kueue's
topology check (controllers/scheduler.py) and the demo generator share them, so the demo file and the
running simulator place the same pods on the same nodes.

What a node offers: it is Ready, not cordoned and not being deleted; the pod's nodeSelector and required
node affinity match its labels; the pod tolerates its NoSchedule/NoExecute taints; and the room left
(allocatable minus the effective requests of the non-terminal pods bound to it) holds the pod's requests,
one `pods` slot included. GPU health conditions are not read: kube-scheduler does not know them (a drain
only follows when an operator or UNO cordons or taints the node).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from taudash.engine.model.names import HOSTNAME_LABEL as HOSTNAME_LABEL  # re-exported: its home is the engine
from taudash.sim.controllers.base import Obj, deleting, meta, qres

PODS = "pods"  # the node's pod slots: every pod takes one
TERMINAL = frozenset({"Succeeded", "Failed"})
ZERO = Decimal(0)
ONE = Decimal(1)

Requests = dict[str, Decimal]


# --- pods -----------------------------------------------------------------------------------------------


def _container_requests(c: Obj) -> Requests:
    res = c.get("resources") or {}
    merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}  # a limit stands in for a missing request
    return {r: qres(r, v) for r, v in merged.items()}


def pod_requests(spec: Obj) -> Requests:
    """A pod's effective requests as the scheduler counts them: per resource the larger of the containers'
    sum and the largest init container, plus the pod overhead (the `pods` slot is counted apart)."""
    total: Requests = {}
    for c in spec.get("containers") or ():
        for r, v in _container_requests(c).items():
            total[r] = total.get(r, ZERO) + v
    for c in spec.get("initContainers") or ():
        for r, v in _container_requests(c).items():
            total[r] = max(total.get(r, ZERO), v)
    for r, v in (spec.get("overhead") or {}).items():
        total[r] = total.get(r, ZERO) + qres(r, v)
    total.pop(PODS, None)
    return {r: v for r, v in total.items() if v > 0}


def pod_spec_on(template_spec: Obj, flavor: Obj | None) -> Obj:
    """A pod set's pod spec once Kueue starts it on a flavor: the flavor's nodeLabels join its nodeSelector
    (the pod's own values kept) and the flavor's tolerations its tolerations (Kueue's podset.Merge)."""
    rf = (flavor or {}).get("spec") or {}
    selector = {**(rf.get("nodeLabels") or {}), **(template_spec.get("nodeSelector") or {})}
    tolerations = list(template_spec.get("tolerations") or [])
    tolerations += [t for t in rf.get("tolerations") or () if t not in tolerations]
    return {**template_spec, "nodeSelector": selector, "tolerations": tolerations}


def terminal(pod: Obj) -> bool:
    return ((pod.get("status") or {}).get("phase") or "") in TERMINAL


def holds_room(pod: Obj) -> bool:
    """A pod bound to a node that still counts against it: neither Succeeded nor Failed."""
    return bool((pod.get("spec") or {}).get("nodeName")) and not terminal(pod)


# --- nodes --------------------------------------------------------------------------------------------


def node_ready(node: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or ())


def tolerates(tol: Obj, taint: Obj) -> bool:
    """Whether a toleration matches a taint (Kubernetes' rules: effect, key or Exists, Equal value)."""
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    op = tol.get("operator") or "Equal"
    if tol.get("key"):
        if tol["key"] != taint.get("key"):
            return False
    elif op != "Exists":
        return False
    if op == "Exists":
        return True
    return op == "Equal" and (tol.get("value") or "") == (taint.get("value") or "")


def taint_text(t: Obj) -> str:
    value = t.get("value") or ""
    return f"{t.get('key', '')}={value}:{t.get('effect', '')}" if value else f"{t.get('key', '')}:{t.get('effect', '')}"


def requirement_matches(expr: Obj, labels: dict[str, str]) -> bool:
    """One nodeSelectorRequirement (In, NotIn, Exists, DoesNotExist, Gt, Lt) against a node's labels."""
    key, op, values = expr.get("key", ""), expr.get("operator", ""), list(expr.get("values") or ())
    has = key in labels
    if op == "In":
        return has and labels[key] in values
    if op == "NotIn":
        return not has or labels[key] not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt") and has and len(values) == 1:
        try:
            a, b = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def selects(spec: Obj, labels: dict[str, str]) -> bool:
    """The pod's nodeSelector and required node affinity (any term, all its expressions) against `labels`."""
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = affinity.get("nodeSelectorTerms") or ()
    return not terms or any(all(requirement_matches(e, labels) for e in t.get("matchExpressions") or ())
                            for t in terms)


def untolerated(spec: Obj, taints: Iterable[Obj]) -> Obj | None:
    """The first NoSchedule/NoExecute taint the pod does not tolerate, or None."""
    tolerations = spec.get("tolerations") or ()
    for taint in taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


@dataclass
class Room:
    """One node as the scheduler sees it: what it offers and what its bound pods take."""

    name: str
    labels: dict[str, str]
    allocatable: Requests
    taints: list[Obj]
    usable: bool  # Ready, not cordoned, not being deleted
    used: Requests = field(default_factory=dict)

    def free(self, resource: str) -> Decimal:
        return self.allocatable.get(resource, ZERO) - self.used.get(resource, ZERO)

    def shortages(self, req: Requests) -> list[str]:
        """The resources (the pod slot included) this node has too little of for one more pod."""
        return [PODS] * (self.free(PODS) < ONE) + [r for r in sorted(req) if req[r] > self.free(r)]

    def short_of(self, req: Requests) -> str | None:
        """The binding one of `shortages` (the pod slot, else the largest need over what is free), or None
        when one more pod fits."""
        short = self.shortages(req)
        if not short or short[0] == PODS:
            return short[0] if short else None
        return min(short, key=lambda r: (-(req[r] / self.free(r)) if self.free(r) > 0 else Decimal("-Infinity"), r))

    def capacity(self, req: Requests) -> int:
        """How many more pods of `req` fit."""
        n = int(self.free(PODS))
        for r, v in req.items():
            n = min(n, int(max(ZERO, self.free(r)) // v))
        return max(0, n)

    def take(self, req: Requests, sign: int = 1) -> None:
        for r, v in (*req.items(), (PODS, ONE)):
            self.used[r] = self.used.get(r, ZERO) + sign * v

    def score(self, req: Requests) -> Decimal:
        """kube-scheduler's LeastAllocated: the mean share left free after placing the pod, over the
        resources it asks for (GPUs included, so GPU pods spread across hosts)."""
        shares = [(self.free(r) - v) / self.allocatable[r] for r, v in req.items() if self.allocatable.get(r)]
        return sum(shares, ZERO) / len(shares) if shares else ZERO


def room_of(node: Obj) -> Room:
    m, spec, st = meta(node), node.get("spec") or {}, node.get("status") or {}
    return Room(
        name=m["name"],
        labels=dict(m.get("labels") or {}),
        allocatable={r: qres(r, v) for r, v in (st.get("allocatable") or {}).items()},
        taints=list(spec.get("taints") or ()),
        usable=node_ready(node) and not spec.get("unschedulable") and not deleting(node),
    )


# --- placements ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Miss:
    """A pod set no domain can hold: how many of its pods the best domain holds, and why nodes were left out."""

    fit: int
    count: int
    nodes: int  # the nodes the pod could use by labels
    excluded: dict[str, int]  # reason ("resource \"nvidia.com/gpu\"", "taint \"k:NoSchedule\"") -> nodes

    def message(self, topology: str) -> str:
        """Kueue's TAS wording for a pod set that does not fit."""
        head = (f'topology "{topology}" allows to fit only {self.fit} out of {self.count} pod(s)' if self.fit
                else f'topology "{topology}" doesn\'t allow to fit any of {self.count} pod(s)')
        if not self.excluded:
            return head
        parts = ", ".join(f"{k}: {v}" for k, v in sorted(self.excluded.items()))
        return f"{head}. Total nodes: {self.nodes}; excluded: {parts}"


class Ledger:
    """The room left on every node, kept current as pods are bound (or planned) on it."""

    def __init__(self, nodes: Iterable[Obj], pods: Iterable[Obj] = ()) -> None:
        self.rooms: dict[str, Room] = {r.name: r for r in sorted((room_of(n) for n in nodes), key=lambda r: r.name)}
        for pod in pods:
            if holds_room(pod):
                room = self.rooms.get(pod["spec"]["nodeName"])
                if room is not None:
                    room.take(pod_requests(pod.get("spec") or {}))

    def bind(self, node: str, req: Requests) -> None:
        room = self.rooms.get(node)
        if room is not None:
            room.take(req)

    def release(self, node: str, req: Requests) -> None:
        room = self.rooms.get(node)
        if room is not None:
            room.take(req, -1)

    def candidates(self, spec: Obj) -> tuple[list[Room], int, dict[str, int]]:
        """The usable nodes the pod may go to by labels and taints; how many match its labels at all; and
        why the others of those were left out (cordoned or not ready, an untolerated taint)."""
        out: list[Room] = []
        matching = 0
        excluded: dict[str, int] = {}
        for room in self.rooms.values():
            if not selects(spec, room.labels):
                continue
            matching += 1
            taint = untolerated(spec, room.taints)
            if taint is not None or not room.usable:
                why = f'taint "{taint_text(taint)}"' if taint is not None else "node not ready or unschedulable"
                excluded[why] = excluded.get(why, 0) + 1
                continue
            out.append(room)
        return out, matching, excluded

    def spread(self, spec: Obj, req: Requests, key: str = "") -> str | None:
        """The node kube-scheduler would bind one pod to, or None: the least allocated; among equals the one
        kube-scheduler's random pick lands on, drawn here from `key` (the pod) so a run repeats."""
        rooms, _, _ = self.candidates(spec)
        best, best_rank = None, None
        for room in rooms:
            if room.short_of(req) is not None:
                continue
            rank = (-room.score(req), hashlib.sha1(f"{key}\x00{room.name}".encode()).hexdigest() if key else room.name)
            if best_rank is None or rank < best_rank:
                best, best_rank = room, rank
        return best.name if best is not None else None

    def gang(self, spec: Obj, req: Requests, count: int, level: str | None) -> list[str] | Miss:
        """All `count` pods inside one domain of `level` (Kueue TAS BestFit: the domain with the least room
        that still holds them; inside it the hosts with the most room first, so it uses the fewest), or
        anywhere when `level` is None. Returns the node of each pod, or a Miss."""
        rooms, matching, excluded = self.candidates(spec)
        fitting = []
        for room in rooms:
            short = room.short_of(req)
            if short is None:
                fitting.append(room)
            else:
                key = f'resource "{short}"'
                excluded[key] = excluded.get(key, 0) + 1
        domains: dict[str, list[Room]] = {}
        for room in fitting:
            value = "" if level is None else room.labels.get(level)
            if value is not None:
                domains.setdefault(value, []).append(room)
        sized = sorted(((sum(r.capacity(req) for r in hosts), name, hosts) for name, hosts in domains.items()),
                       key=lambda d: (d[0], d[1]))
        chosen = next((d for d in sized if d[0] >= count), None)
        if chosen is None:
            return Miss(min(count, max((d[0] for d in sized), default=0)), count, matching, excluded)
        out: list[str] = []
        for room in sorted(chosen[2], key=lambda r: (-r.capacity(req), r.name)):
            take = min(count - len(out), room.capacity(req))
            out += [room.name] * take
            if len(out) == count:
                break
        return out

    def place(self, spec: Obj, count: int, level: str | None, required: bool,
              keys: list[str] | None = None) -> list[str | None] | Miss:
        """Bind a pod set: with a `level`, all pods in one domain of it (`required`: or none at all, a Miss;
        preferred: else anywhere); without, each pod spread on its own (`keys`: the pods, for ties; a pod
        that fits nowhere stays unbound: None). The ledger takes what is bound."""
        req = pod_requests(spec)
        if level is not None:
            got = self.gang(spec, req, count, level)
            if isinstance(got, Miss) and not required:
                got = self.gang(spec, req, count, None)
            if isinstance(got, Miss):
                return got
            for node in got:
                self.bind(node, req)
            return list(got)
        placed: list[str | None] = []
        for i in range(count):
            one = self.spread(spec, req, keys[i] if keys and i < len(keys) else "")
            if one is not None:
                self.bind(one, req)
            placed.append(one)
        return placed


def unschedulable_message(ledger: Ledger, spec: Obj) -> str:
    """kube-scheduler's FailedScheduling text for a pod no node takes: per reason, how many nodes."""
    req = pod_requests(spec)
    counts: dict[str, int] = {}
    for room in ledger.rooms.values():
        taint = untolerated(spec, room.taints)
        if not selects(spec, room.labels):
            whys = ["node(s) didn't match Pod's node affinity/selector"]
        elif not room.usable:
            whys = ["node(s) were unschedulable or not ready"]
        elif taint is not None:
            whys = [f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value') or ''}}}"]
        else:  # like kube-scheduler, a node short of several resources counts once for each
            whys = ["Too many pods" if r == PODS else f"Insufficient {r}" for r in room.shortages(req)]
        for why in whys:
            counts[why] = counts.get(why, 0) + 1
    parts = ", ".join(f"{n} {why}" for why, n in sorted(counts.items()))
    return (f"0/{len(ledger.rooms)} nodes are available: {parts}." if parts
            else f"0/{len(ledger.rooms)} nodes are available.")
