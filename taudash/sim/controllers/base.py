"""What every simulated controller shares: the mirror of the ObjectDB, the logged writer, helpers.

The mirror keeps the raw objects current from one in-process subscription (the event's dict is
shared, never copied) and turns them into an `engine.store.Store` of pydantic models only when a
rule needs one, for the objects that changed since. Rebuilding the Store from scratch costs about
33 ms at the demo size; one Workload costs about 85 µs and one ClusterQueue about 0.5 ms to
validate, and most ticks change a handful of objects, so the Store is kept incrementally and lazily.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from taudash.engine.model import BY_KIND, KINDS, QuantityError, lookup

# The label and annotation keys are the engine's own (engine/model/names.py; re-exported for the controllers).
from taudash.engine.model.names import JOB_UID_LABEL as JOB_UID_LABEL
from taudash.engine.model.names import KUEUE_MANAGED_LABEL as MANAGED_LABEL  # noqa: F401 (re-exported)
from taudash.engine.model.names import MANAGED_BY_LABEL as MANAGED_BY  # noqa: F401 (re-exported)
from taudash.engine.model.names import OWNER_UID_LABEL as OWNER_UID  # noqa: F401 (re-exported)
from taudash.engine.model.names import PRIORITY_CLASS_LABEL as PRIORITY_LABEL  # noqa: F401 (the controllers import it from here)
from taudash.engine.model.names import QUEUE_NAME_LABEL as QUEUE_LABEL  # noqa: F401 (re-exported)
from taudash.engine.model.quantity import DECIMAL_SI, Quantity
from taudash.engine.rules.queues import TAU_MANAGER as TAU_MANAGER
from taudash.engine.store import AccessState, Store
from taudash.sim.clock import SimClock, rfc3339
from taudash.sim.errors import ApiError, Conflict, Invalid, NotFound
from taudash.sim.objects import ObjectDB, Subscription, WatchEvent
from taudash.sim.resources import SIM_KINDS

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)


log = logging.getLogger(__name__)

# Set (to anything but "" or "0") to make a controller's schema-invalid write raise instead of being
# logged and dropped: tests use it so a controller bug fails loudly.
STRICT_ENV = "TAUDASH_SIM_STRICT"


# --- reading raw objects -----------------------------------------------------------------------


def meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def labels(obj: Obj) -> dict[str, str]:
    return meta(obj).get("labels") or {}


def ref(obj: Obj) -> str:
    m = meta(obj)
    return f"{m['namespace']}/{m['name']}" if m.get("namespace") else m["name"]


def condition(obj: Obj, ctype: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == ctype:
            return c
    return None


def is_true(obj: Obj, ctype: str) -> bool:
    c = condition(obj, ctype)
    return c is not None and c.get("status") == "True"


def deleting(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def controller_owner(obj: Obj) -> Obj | None:
    refs = meta(obj).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), refs[0] if refs else None)


def with_condition(
    conds: Iterable[Obj] | None,
    ctype: str,
    status: str,
    reason: str,
    message: str,
    now: str,
    generation: int | None = None,
    keep_time_on_status: bool = True,
) -> list[Obj]:
    """A new condition list with `ctype` set. The transition time moves when the status changes
    (Kueue, apimeta.SetStatusCondition) or, with keep_time_on_status=False, when status, reason
    or message change (TauGrid's mergeConditions)."""
    out, found = [], False
    for c in conds or ():
        if c.get("type") != ctype:
            out.append(c)
            continue
        found = True
        same = c.get("status") == status and (
            keep_time_on_status or (c.get("reason") == reason and c.get("message") == message)
        )
        new = {
            "type": ctype,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": c.get("lastTransitionTime") if same and c.get("lastTransitionTime") else now,
        }
        if generation is not None:
            new["observedGeneration"] = generation
        out.append(new)
    if not found:
        new = {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}
        if generation is not None:
            new["observedGeneration"] = generation
        out.append(new)
    return out


# --- quantities: exact decimals, formatted like Kubernetes ------------------------------------


# The format a resource's quantities print in (memory: BinarySI), learnt from the first one parsed.
FORMATS: dict[str, str] = {}


def qres(resource: str, text: Any) -> Decimal:
    """Parse a quantity of `resource`, remembering how that resource is written."""
    value, fmt = qparse(text)
    if value:  # "0" says nothing about how the resource is written
        FORMATS.setdefault(resource, fmt)
    return value


@lru_cache(maxsize=4096)
def qparse(text: Any) -> tuple[Decimal, str]:
    """(value, format) of a quantity; an unreadable one counts as zero (a real apiserver would have refused it)."""
    try:
        q = Quantity.parse(text)
    except (QuantityError, TypeError):
        return Decimal(0), DECIMAL_SI
    return q.value, q.format


@lru_cache(maxsize=8192)
def qfmt(value: Decimal, fmt: str = DECIMAL_SI) -> str:
    return Quantity(value, fmt).canonical()


# --- the mirror ----------------------------------------------------------------------------------


class Mirror:
    """Raw objects by engine kind, current after `sync()`; a Store built lazily from them."""

    def __init__(self, db: ObjectDB) -> None:
        self.db = db
        self._sub: Subscription | None = None
        self._raw: dict[str, dict[Key, Obj]] = {}
        self._store: Store | None = None
        self._pending: set[tuple[str, Key]] = set()
        self.invalid: dict[tuple[str, Key], str] = {}  # objects the models refuse (kept raw only)
        self._load()

    def _load(self) -> None:
        # Subscribe and list in one synchronous step: no event is lost or applied twice.
        if self._sub is not None:
            self._sub.close()
        self._sub = self.db.subscribe()
        self._raw = {k: {} for k in MIRRORED}
        for r in self.db.registry.all:
            if r.kind in self._raw:
                for obj in self.db.list(r):
                    self._raw[r.kind][_key(obj)] = obj
        self._store = None
        self._pending.clear()

    def sync(self) -> list[WatchEvent]:
        """Apply the events queued since the last call; returns them (in order)."""
        events: list[WatchEvent] = []
        sub = self._sub
        assert sub is not None  # subscribed by _load() in __init__
        while (ev := sub.get_nowait()) is not None:
            kind = ev.resource.kind
            if kind not in self._raw:
                continue
            key = _key(ev.object)
            if ev.type == "DELETED":
                self._raw[kind].pop(key, None)
            else:
                self._raw[kind][key] = ev.object
            if kind in BY_KIND:
                self._pending.add((kind, key))
            events.append(ev)
        if sub.closed:  # fell too far behind (or closed under us): start over
            self._load()
        return events

    # raw reads (shared dicts: never mutate them) ----------------------------------------------
    def get(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        return self._raw[kind].get((namespace or "", name))

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        objs = self._raw[kind]
        keys = sorted(k for k in objs if namespace is None or k[0] == namespace)
        return [objs[k] for k in keys]

    def count(self, kind: str) -> int:
        return len(self._raw[kind])

    # the model store ----------------------------------------------------------------------------
    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store()
            for kind, objs in self._raw.items():
                if kind in BY_KIND:
                    for key in objs:
                        self._pending.add((kind, key))
            for k in KINDS:
                self._store.set_access(k.kind, AccessState.SYNCED)
        for kind, key in sorted(self._pending):
            if kind not in BY_KIND:
                continue  # a kind only the simulator serves (Pods before the engine reads them): raw only
            raw = self._raw[kind].get(key)
            if raw is None:
                self._store.delete(kind, key[1], key[0] or None)
                continue
            info = lookup(str(raw.get("apiVersion", "")), str(raw.get("kind", ""))) or BY_KIND[kind]
            try:
                model = info.model.model_validate(raw)
            except (ValidationError, QuantityError) as exc:
                self.invalid[(kind, key)] = str(exc).splitlines()[0]
                self._store.delete(kind, key[1], key[0] or None)
                continue
            self.invalid.pop((kind, key), None)
            self._store.upsert(model, raw=raw)
        self._pending.clear()
        return self._store

    def close(self) -> None:
        if self._sub is not None:
            self._sub.close()


# What the mirror keeps: the engine's kinds, and the kinds only the simulator serves that its controllers read.
MIRRORED = frozenset({k.kind for k in KINDS} | SIM_KINDS)


def _key(obj: Obj) -> Key:
    m = obj["metadata"]
    return (m.get("namespace") or "", m["name"])


# --- the logged writer -------------------------------------------------------------------------


LOG_LIMIT = 200_000


@dataclass(frozen=True)
class LogEntry:
    """One effective write: (sim seconds since the start, verb, kind, namespace/name)."""

    t: float
    verb: str  # create | patch | status | delete
    kind: str
    ref: str

    def as_tuple(self) -> tuple[float, str, str, str]:
        return (self.t, self.verb, self.kind, self.ref)


class Writer:
    """Every controller write goes through here: to the ObjectDB's in-process API (so HTTP
    watchers see it) and, when it changed something, into the event log. A Conflict or NotFound
    (someone else wrote first) is dropped: the next tick re-reads and re-plans.

    A write the CRD schema refuses (422) is a controller bug: with `strict` (default: env
    TAUDASH_SIM_STRICT, set in tests) it raises and fails the step; otherwise (`sim serve`) it is
    logged, counted in `invalid` and dropped like any refused write, so the cluster keeps serving."""

    def __init__(self, db: ObjectDB, clock: SimClock, strict: bool | None = None) -> None:
        self.db = db
        self.clock = clock
        self.log: deque[LogEntry] = deque(maxlen=LOG_LIMIT)  # bounded: `sim serve` may run for days
        self.errors: deque[str] = deque(maxlen=1000)
        self.invalid = 0
        self.strict = strict if strict is not None else os.environ.get(STRICT_ENV, "") not in ("", "0")

    def _write(self, verb: str, kind: str, fn, *args, **kwargs) -> Obj | None:
        before = self.db.resource_version  # moves only when a write changes something
        try:
            out = fn(*args, **kwargs)
        except (Conflict, NotFound):
            return None
        except Invalid as exc:
            self.invalid += 1
            if self.strict:
                raise
            log.warning("simulated controller wrote an invalid %s: %s", kind, exc)
            self.errors.append(f"{rfc3339(self.clock.now())} {verb} {kind}: {exc}")
            return None
        except ApiError as exc:  # a write the apiserver refuses: keep going, keep the reason
            self.errors.append(f"{rfc3339(self.clock.now())} {verb} {kind}: {exc}")
            return None
        if self.db.resource_version != before:
            self.log.append(LogEntry(round(self.clock.elapsed, 3), verb, kind, ref(out)))
        return out

    def create(self, obj: Obj) -> Obj | None:
        return self._write("create", obj["kind"], self.db.create, obj, with_status=True)

    def patch(self, kind: str, name: str, namespace: str | None, patch: Obj) -> Obj | None:
        return self._write("patch", kind, self.db.patch_merge, kind, name, patch, namespace)

    def status(self, kind: str, name: str, namespace: str | None, status: Obj) -> Obj | None:
        """Merge `status` into the object's status (lists replace, None removes a key)."""
        sub = "status" if self.db.resource(kind).status else None
        return self._write(
            "status", kind, self.db.patch_merge, kind, name, {"status": status}, namespace, subresource=sub
        )

    def delete(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        return self._write("delete", kind, self.db.delete, kind, name, namespace)


def now_stamp(clock: SimClock) -> str:
    return rfc3339(clock.now())


class Controller:
    """A simulated controller: `reconcile(events)` runs once per world step with the watch events
    seen since its previous run (its own writes included)."""

    name = "controller"

    def __init__(self, world) -> None:
        self.world = world
        self.m: Mirror = world.mirror
        self.w: Writer = world.writer
        self.first = True  # the world clears it after the first reconcile: everything is new then

    @property
    def stamp(self) -> str:
        return now_stamp(self.world.clock)

    def reconcile(self, events: list[WatchEvent]) -> None:  # pragma: no cover - interface
        raise NotImplementedError
