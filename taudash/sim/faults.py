"""Fault injection for the simulated API server: what tests use to exercise the unhappy paths.

    faults.forbid("workloads")                      # 403 on every verb of a resource
    faults.fail(count=2)                            # the next two requests answer 500
    faults.fail(probability=0.1, resource="cq")     # seeded, so runs repeat
    faults.latency(0.2, resource="nodes")
    faults.drop_watches()                           # end every open watch stream now
    faults.gone_storm(count=3)                      # forget history, drop watches, next 3 watches 410

Resources are named as ObjectDB names them (kind, `plural.group`, short name); `None` means all.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from taudash.sim.errors import ApiError, Forbidden, InternalError
from taudash.sim.resources import Registry, Resource

_ALL = None  # a rule for every resource
_REASONS = {429: "TooManyRequests", 503: "ServiceUnavailable", 504: "Timeout"}


@dataclass
class _Failure:
    status: int
    resource: tuple[str, str] | None
    verbs: frozenset[str] | None
    remaining: int | None  # None: until cleared
    probability: float | None  # None: always (while remaining)


@dataclass
class _Latency:
    seconds: float
    resource: tuple[str, str] | None


@dataclass
class Faults:
    registry: Registry = field(default_factory=Registry)
    seed: int = 0

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._forbidden: dict[tuple[str, str], frozenset[str] | None] = {}
        self._failures: list[_Failure] = []
        self._latencies: list[_Latency] = []
        self._gone_remaining = 0
        self.watches_paused = False  # open watch streams send nothing (a hung stream: no events, no bookmarks)
        self.logs_forbidden = False  # 403 on every Pod's log (pods/log), the Pods themselves still readable
        # Set by the API server that owns these faults.
        self._on_drop: list[Callable[[bool], None]] = []
        self._on_expire: list[Callable[[], None]] = []

    # --- configuration ---------------------------------------------------------------------------
    def forbid(self, resource: str | Resource, verbs: set[str] | None = None) -> None:
        """403 Forbidden for a resource (all verbs, or only these: get, list, watch, create, ...)."""
        self._forbidden[self.registry.resolve(resource).key] = frozenset(verbs) if verbs else None

    def allow(self, resource: str | Resource) -> None:
        self._forbidden.pop(self.registry.resolve(resource).key, None)

    def fail(self, status: int = 500, *, count: int | None = None, probability: float | None = None,
             resource: str | Resource | None = _ALL, verbs: set[str] | None = None) -> None:
        """Answer `status` (a Status body) for the next `count` matching requests, or with
        `probability` each (seeded), or always until `clear()`."""
        key = self.registry.resolve(resource).key if resource is not None else None
        self._failures.append(_Failure(status, key, frozenset(verbs) if verbs else None, count, probability))

    def latency(self, seconds: float, resource: str | Resource | None = _ALL) -> None:
        """Delay matching requests (including discovery when `resource` is None)."""
        key = self.registry.resolve(resource).key if resource is not None else None
        self._latencies.append(_Latency(seconds, key))

    def drop_watches(self, abort: bool = False) -> None:
        """End every open watch stream: cleanly (EOF), or by cutting the connection with `abort`."""
        for fn in list(self._on_drop):
            fn(abort)

    def pause_watches(self, paused: bool = True) -> None:
        """Hold every open watch stream silent (events wait, bookmarks stop) until paused=False: the
        connection stays open, as a stuck proxy or apiserver leaves it."""
        self.watches_paused = paused

    def forbid_logs(self, forbidden: bool = True) -> None:
        """403 Forbidden on `pods/log` only, as RBAC without that subresource answers."""
        self.logs_forbidden = forbidden

    def gone_storm(self, count: int = 0) -> None:
        """Expire every resourceVersion (the event history is forgotten), drop open watches, and
        answer 410 to the next `count` watch requests that name a resourceVersion, even fresh ones."""
        for fn in list(self._on_expire):
            fn()
        self._gone_remaining = count
        self.drop_watches()

    def clear(self) -> None:
        self._forbidden.clear()
        self._failures.clear()
        self._latencies.clear()
        self._gone_remaining = 0
        self.watches_paused = False
        self.logs_forbidden = False

    # --- evaluation (by the server) --------------------------------------------------------------
    def delay(self, resource: Resource | None) -> float:
        return sum(x.seconds for x in self._latencies if x.resource is None
                   or (resource is not None and x.resource == resource.key))

    def check(self, resource: Resource | None, verb: str, namespace: str | None, name: str | None) -> ApiError | None:
        if resource is not None and resource.key in self._forbidden:
            verbs = self._forbidden[resource.key]
            if verbs is None or verb in verbs:
                return Forbidden.of(resource, verb, namespace, name)
        for f in list(self._failures):
            if f.resource is not None and (resource is None or f.resource != resource.key):
                continue
            if f.verbs is not None and verb not in f.verbs:
                continue
            if f.probability is not None and self._rng.random() >= f.probability:
                continue
            if f.remaining is not None:
                f.remaining -= 1
                if f.remaining <= 0:
                    self._failures.remove(f)
            return ApiError(f"injected failure ({f.status})", code=f.status,
                            reason=_REASONS.get(f.status, InternalError.reason))
        return None

    def take_gone(self) -> bool:
        """Whether this watch request must answer 410 because of a storm."""
        if self._gone_remaining > 0:
            self._gone_remaining -= 1
            return True
        return False


# --- per-cluster faults of a simulated fleet, as the command line and the control file spell them ----

FAULT_SYNTAX = "CLUSTER=down | CLUSTER=hang | CLUSTER=slow:DURATION | CLUSTER=forbidden:KIND[,KIND…]"
FAULT_EXAMPLE = "--fault worker-1=down --fault worker-2=slow:5s --fault manager=forbidden:Workload"
FAULT_KINDS = ("down", "hang", "slow", "forbidden")


class FaultSpecError(ValueError):
    """A fault spec that does not parse; the message names the bad part."""


@dataclass(frozen=True)
class ClusterFault:
    """One fault on one cluster of a simulated fleet (docs/simulator.md, "Faults per cluster").

    down: the API server stopped (connections refused); hang: connections accepted, nothing answered
    (open streams freeze); slow: every request answered after `seconds`; forbidden: 403 on `resources`."""

    cluster: str
    kind: str
    seconds: float = 0.0
    resources: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.kind == "slow":
            return f"{self.cluster}=slow:{self.seconds:g}s"
        if self.kind == "forbidden":
            return f"{self.cluster}=forbidden:{','.join(self.resources)}"
        return f"{self.cluster}={self.kind}"


def parse_duration(text: str) -> float:
    """`5s`, `500ms`, `1.5`, `2m` → seconds (> 0)."""
    t = text.strip().lower()
    scale = 1.0
    for suffix, factor in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if t.endswith(suffix):
            t, scale = t[: -len(suffix)], factor
            break
    try:
        value = float(t) * scale
    except ValueError:
        raise FaultSpecError(f"{text!r} is not a duration (e.g. 5s, 500ms, 2m)") from None
    if not value > 0 or value > 3600:
        raise FaultSpecError(f"{text!r}: a duration from 1ms to 1h")
    return value


def parse_fault(text: str, registry: Registry | None = None) -> ClusterFault:
    """`worker-1=down`, `worker-2=slow:5s`, `manager=forbidden:Workload,ClusterQueue`, `worker-1=hang`.
    Kinds are checked against `registry` (the simulator's resources: kind, plural or short name)."""
    cluster, sep, what = text.strip().partition("=")
    cluster, what = cluster.strip(), what.strip()
    if not sep or not cluster:
        raise FaultSpecError(f"{text!r}: expected CLUSTER=FAULT ({FAULT_SYNTAX})")
    kind, colon, arg = what.partition(":")
    kind, arg = kind.strip().lower(), arg.strip()
    if kind not in FAULT_KINDS:
        raise FaultSpecError(f"{text!r}: unknown fault {kind or what!r} (one of {', '.join(FAULT_KINDS)})")
    if kind in ("down", "hang"):
        if colon:
            raise FaultSpecError(f"{text!r}: {kind} takes no argument (got {arg!r})")
        return ClusterFault(cluster, kind)
    if not arg:
        example = "slow:5s" if kind == "slow" else "forbidden:Workload"
        raise FaultSpecError(f"{text!r}: {kind} needs an argument, e.g. {cluster}={example}")
    if kind == "slow":
        try:
            return ClusterFault(cluster, kind, seconds=parse_duration(arg))
        except FaultSpecError as exc:
            raise FaultSpecError(f"{text!r}: {exc}") from None
    names = tuple(n.strip() for n in arg.split(","))
    reg = registry or Registry()
    for n in names:
        try:
            reg.resolve(n)
        except KeyError:
            raise FaultSpecError(f"{text!r}: unknown resource {n!r} (a kind, plural or short name: Workload, "
                                 "workloads, cq)") from None
    return ClusterFault(cluster, kind, resources=names)


def parse_fault_lines(text: str, registry: Registry | None = None) -> list[ClusterFault]:
    """A control file: one fault a line; blank lines and `#` comments ignored. Errors name the line."""
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            out.append(parse_fault(line, registry))
        except FaultSpecError as exc:
            raise FaultSpecError(f"line {i}: {exc}") from None
    return out


# --- node-health faults of a simulated cluster (`sim serve --node-fault NODE=CONDITION`) ------------------

NODE_FAULT_SYNTAX = "NODE=CONDITION[,CONDITION…]"
NODE_FAULT_EXAMPLE = "--node-fault aks-h100-27604139-vmss000003=XIDError79"


@dataclass(frozen=True)
class NodeFault:
    """GPU health conditions held True on one node for the whole run (the node controller never clears
    what it did not raise): one of TauGrid's 20 GPU health conditions or DcgmExporterUnavailable."""

    node: str
    conditions: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.node}={','.join(self.conditions)}"


def parse_node_fault(text: str) -> NodeFault:
    """`aks-h100-27604139-vmss000003=XIDError79` or `NODE=GPUThermalViolation,IBLinkDown`."""
    from taudash.sim.health import CONDITION_TYPES

    node, sep, what = text.strip().partition("=")
    node = node.strip()
    conditions = tuple(c.strip() for c in what.split(",") if c.strip())
    if not sep or not node or not conditions:
        raise FaultSpecError(f"{text!r}: expected {NODE_FAULT_SYNTAX}, e.g. {NODE_FAULT_EXAMPLE}")
    for c in conditions:
        if c not in CONDITION_TYPES:
            close = [t for t in CONDITION_TYPES if t.lower() == c.lower()]
            hint = f"did you mean {close[0]}?" if close else f"one of {', '.join(CONDITION_TYPES)}"
            raise FaultSpecError(f"{text!r}: unknown GPU health condition {c!r} ({hint})")
    return NodeFault(node, conditions)


def apply_node_faults(db, faults: list[NodeFault]) -> list[str]:
    """Raise each fault's conditions on its node (a status write, as TauGrid's collector makes it). Returns
    what could not be applied (a node the cluster lacks, with the GPU nodes it has); nothing is written
    then."""
    from taudash.engine.model.names import GPU_CLASS_LABEL
    from taudash.sim.clock import rfc3339
    from taudash.sim.health import health_condition

    missing = [f.node for f in faults if db.get("Node", f.node) is None]
    if missing:
        gpu_nodes = sorted(n["metadata"]["name"] for n in db.list("Node")
                           if (n["metadata"].get("labels") or {}).get(GPU_CLASS_LABEL))
        shown = ", ".join(gpu_nodes[:4]) + (f", … ({len(gpu_nodes)} GPU nodes)" if len(gpu_nodes) > 4 else "")
        return [f"no node {name!r} in this cluster (GPU nodes: {shown or 'none'})" for name in missing]
    now = rfc3339(db.clock())
    for f in faults:
        node = db.get("Node", f.node)
        conds = list((node.get("status") or {}).get("conditions") or ())
        for ctype in f.conditions:
            old = next((c for c in conds if c.get("type") == ctype), None)
            conds = [c for c in conds if c.get("type") != ctype] + [health_condition(ctype, True, now, old)]
        db.patch_merge("Node", f.node, {"status": {"conditions": conds}}, subresource="status")
    return []
