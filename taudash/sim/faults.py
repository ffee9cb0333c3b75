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

    # --- evaluation (by the server) --------------------------------------------------------------
    def delay(self, resource: Resource | None) -> float:
        return sum(x.seconds for x in self._latencies if x.resource is None or (resource is not None and x.resource == resource.key))

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
            return ApiError(f"injected failure ({f.status})", code=f.status, reason=_REASONS.get(f.status, InternalError.reason))
        return None

    def take_gone(self) -> bool:
        """Whether this watch request must answer 410 because of a storm."""
        if self._gone_remaining > 0:
            self._gone_remaining -= 1
            return True
        return False
