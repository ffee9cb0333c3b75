"""ObjectDB: the state of the simulated cluster, as raw object dicts with apiserver bookkeeping.

One global, monotonically increasing resourceVersion; uid, creationTimestamp and generation kept
like the real apiserver (generation moves on spec changes and on deletion with finalizers, never
on /status); finalizers honoured on delete; a bounded event history so watches can resume from a
recent resourceVersion and older ones expire (410 Gone); subscriptions that feed HTTP watches and
in-process controllers alike. Never holds Secrets. Writes of Kueue kinds are pruned, defaulted and
validated against the real Kueue CRDs when `schemas` is given (taudash.sim.schema).

Versions (taudash.sim.kueue_versions, taudash.sim.conversion): a Kueue object is stored in its
resource's storage version (v1beta1 for Kueue 0.14/0.15, v1beta2 for 0.19) and handed out in the
version asked for. A write addressed to a version (the URL's, over HTTP) is applied, admitted and
validated in that version — against that version's schema, the stored object converted to it for
transition rules — then converted to the storage version and stored, as the API server does with a
conversion webhook. In-process callers (the simulated controllers) read and write the internal
version, v1beta2, whatever the storage: their reads, `subscribe()` events included, are v1beta2
views of the stored objects (kept beside them when the storage version differs, so reading costs
no conversion), and their writes are converted at the store. A write in a version the release does
not serve (v1beta2 on Kueue 0.14: the controllers) is validated in the storage version.

Everything runs on one event loop and no method awaits, so each write (and the fan-out of its
event) is atomic with respect to readers. Stored dicts are never mutated after they are stored:
events and `_peek` share them; the public `get`/`list` return deep copies.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import random
import re
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orjson import dumps as _dumps

from taudash.engine.model.kinds import KUEUE, NEVER_READ
from taudash.engine.sources.snapshot import LoadResult, load_snapshot
from taudash.sim.conversion import convert
from taudash.sim.errors import AlreadyExists, ApiError, BadRequest, Conflict, Gone, Invalid, NotFound
from taudash.sim.patch import PatchError, clone, json_patch, merge_patch
from taudash.sim.resources import Registry, Resource
from taudash.sim.schema import SchemaSet
from taudash.sim.selectors import parse_field_selector, parse_label_selector

Obj = dict[str, Any]
ResourceRef = str | Resource  # "ClusterQueue", "clusterqueues.kueue.x-k8s.io", "cq" or a Resource

# An admission hook: (operation, resource, new object or None, old object or None). It may mutate
# `new` in place (defaulting) or raise an ApiError such as Invalid (a validating webhook).
Admission = Callable[[str, Resource, Obj | None, Obj | None], None]

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's: no vowels, no look-alikes
_SPEC_EXCLUDED = frozenset({"apiVersion", "kind", "metadata", "status"})
_CLIENT_IMMUTABLE_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")

# Enumerations the real CRD schemas enforce and operators are likely to mistype.
_ENUMS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "ClusterQueue": (("spec.stopPolicy", ("None", "Hold", "HoldAndDrain")),
                     ("spec.queueingStrategy", ("StrictFIFO", "BestEffortFIFO"))),
    "LocalQueue": (("spec.stopPolicy", ("None", "Hold", "HoldAndDrain")),),
}


def _lease_causes(obj: Obj) -> list[tuple[str, str, str]]:
    """What the API server's Lease validation refuses: a non-positive duration, negative transitions, a
    time that is not RFC 3339."""
    spec = obj.get("spec") or {}
    causes = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and (not isinstance(duration, int) or duration <= 0):
        causes.append(("spec.leaseDurationSeconds", "FieldValueInvalid",
                       f"Invalid value: {duration!r}: must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and (not isinstance(transitions, int) or transitions < 0):
        causes.append(("spec.leaseTransitions", "FieldValueInvalid",
                       f"Invalid value: {transitions!r}: must be greater than or equal to 0"))
    for f in ("acquireTime", "renewTime"):
        value = spec.get(f)
        try:
            if value is not None:
                datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            causes.append((f"spec.{f}", "FieldValueInvalid", f"Invalid value: {value!r}: not an RFC 3339 time"))
    return causes


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED
    resource: Resource
    object: Obj  # state after the change, internal version; for DELETED the last state. Shared: do not mutate.
    rv: int
    old: Obj | None = None  # the previous state of a MODIFIED object (for selector transitions)
    stored: Obj | None = None  # `object` as stored, when the storage version is another one

    @property
    def namespace(self) -> str:
        return self.object["metadata"].get("namespace") or ""

    @property
    def name(self) -> str:
        return self.object["metadata"]["name"]


class Subscription:
    """A queue of WatchEvents. Iterate it (`async for ev in sub`) until `close()`.

    A subscriber that falls `maxsize` events behind is closed with `overflowed` set, like the real
    apiserver terminating a slow watcher; it must re-list.
    """

    _CLOSED = object()

    def __init__(self, db: ObjectDB, resources: frozenset[tuple[str, str]] | None, maxsize: int) -> None:
        self._db = db
        self._resources = resources
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._maxsize = maxsize
        self.closed = False
        self.overflowed = False

    @property
    def resources(self) -> frozenset[tuple[str, str]] | None:
        """The (group, plural) keys this subscription follows; None for all."""
        return self._resources

    def wants(self, ev: WatchEvent) -> bool:
        return self._resources is None or ev.resource.key in self._resources

    def _push(self, ev: WatchEvent) -> None:
        if self.closed:
            return
        if self._queue.qsize() >= self._maxsize:
            self.overflowed = True
            self.close()
            return
        self._queue.put_nowait(ev)

    def pending(self) -> int:
        return self._queue.qsize()

    def get_nowait(self) -> WatchEvent | None:
        """The next queued event, or None when none is queued (or the subscription is closed)."""
        if self._queue.empty():
            return None
        item = self._queue.get_nowait()
        if item is self._CLOSED:
            self._queue.put_nowait(item)  # keep the end marker for the next reader
            return None
        return item

    async def get(self, within: float | None = None) -> WatchEvent | None:
        """The next event; None when closed or after `within` seconds without one."""
        try:
            item = await asyncio.wait_for(self._queue.get(), within)
        except TimeoutError:
            return None
        if item is self._CLOSED:
            self._queue.put_nowait(item)
            return None
        return item

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._db._subscribers.discard(self)
            self._queue.put_nowait(self._CLOSED)

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[WatchEvent]:
        while True:
            ev = await self.get()
            if ev is None:
                return
            yield ev


def _rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def labelled(r: Resource, obj: Obj, version: str) -> Obj:
    """`obj` labelled with `version`'s apiVersion (a shallow copy when it names another)."""
    want = r.api_version(version)
    return obj if obj.get("apiVersion") == want else {**obj, "apiVersion": want}


def _spec_of(obj: Obj) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in _SPEC_EXCLUDED}


class ObjectDB:
    """Raw objects per resource (group/plural) → (namespace, name), with apiserver bookkeeping.

    In-process helpers (`get`, `list`, `create`, `update`, `patch_merge`, `patch_json`,
    `update_status`, `delete`) raise the same ApiErrors the HTTP server renders (NotFound,
    AlreadyExists, Conflict, Invalid, ...). Resources are named by kind ("ClusterQueue"),
    `plural.group`, short name or a Resource.
    """

    def __init__(self, *, registry: Registry | None = None, history: int = 10_000,
                 clock: Callable[[], float] | None = None,
                 seed: int = 0, subscriber_buffer: int = 10_000, schemas: SchemaSet | None = None) -> None:
        self.registry = registry or Registry()
        self.clock = clock or time.time
        self._rng = random.Random(seed)  # uids and generateName suffixes: deterministic per seed
        self.kueue = self.registry.kueue  # the Kueue release played (served, storage versions; reasons)
        # Objects as stored (in the storage version), and for resources stored in another version
        # than the internal one, their internal (v1beta2) views beside them.
        self._objects: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {r.key: {} for r in self.registry.all}
        self._views: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {r.key: {} for r in self.registry.all
                                                                        if r.converts}
        # Sorted keys per resource until one is added or removed: a paged list of 100k objects would
        # otherwise sort (and scan) them all for each 500-item page.
        self._sorted: dict[tuple[str, str], list[tuple[str, str]] | None] = {r.key: None for r in self.registry.all}
        # Each stored object's JSON encoding per served version, as a list page embeds it (`encoded`):
        # (the stored dict it was encoded from, its resourceVersion, version → bytes). Dropped on every
        # write and delete of the key, and checked against the stored dict's identity and
        # resourceVersion on use, so a stale entry can never be served.
        self._encoded: dict[tuple[str, str], dict[tuple[str, str], tuple[Obj, Any, dict[str, bytes]]]] = {
            r.key: {} for r in self.registry.all}
        self._rv = 0
        self._history: deque[WatchEvent] = deque(maxlen=max(1, history))
        self._floor = 0  # watches may resume from any RV >= this one
        self._subscribers: set[Subscription] = set()
        self._subscriber_buffer = subscriber_buffer
        self._admission: list[Admission] = []
        # The real Kueue CRDs (taudash.sim.schema): every write of a kind they cover is pruned,
        # defaulted and validated like the API server does; None runs unvalidated.
        self.schemas = schemas
        self.pruned: list[str] = []  # unknown fields the last validated write dropped (HTTP Warning headers)

    # --- bookkeeping ----------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        """The newest resourceVersion handed out (what a List reports)."""
        return self._rv

    @property
    def oldest_resource_version(self) -> int:
        """The oldest RV a watch or continue token can resume from; anything older is 410 Gone."""
        return self._floor

    def resource(self, ref: ResourceRef) -> Resource:
        try:
            return self.registry.resolve(ref)
        except KeyError:
            raise NotFound.path() from None

    def add_admission(self, hook: Admission) -> Callable[[], None]:
        """Register an admission hook for every write (HTTP and in-process). Returns its remover."""
        self._admission.append(hook)
        return lambda: self._admission.remove(hook)

    def compact(self) -> None:
        """Forget the event history: every earlier resourceVersion now answers 410 Gone."""
        self._history.clear()
        self._floor = self._rv

    # --- reads -------------------------------------------------------------------------------------
    def keys(self, resource: ResourceRef) -> builtins.list[tuple[str, str]]:
        """(namespace or "", name) of every stored object of the resource, in the order they were stored."""
        return builtins.list(self._objects[self.resource(resource).key])

    def peek(self, resource: ResourceRef, name: str, namespace: str | None = None) -> Obj | None:
        """The object in its internal shape, not a copy (shared: callers must never mutate it), or None."""
        return self._peek(self.resource(resource), name, namespace, None)

    def get(self, resource: ResourceRef, name: str, namespace: str | None = None, *,
            version: str | None = None) -> Obj | None:
        """A deep copy of the object (in `version`; default the internal one), or None."""
        obj = self._peek(self.resource(resource), name, namespace, version)
        return clone(obj) if obj is not None else None

    def list(self, resource: ResourceRef, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, version: str | None = None) -> builtins.list[Obj]:
        """Deep copies (in `version`; default the internal one), sorted by namespace then name."""
        return [clone(o) for o in self._select(self.resource(resource), namespace, label_selector, field_selector,
                                               version)]

    def stored(self, resource: ResourceRef, name: str, namespace: str | None = None) -> Obj | None:
        """A deep copy of the object exactly as stored (in the storage version), or None."""
        r = self.resource(resource)
        obj = self._objects[r.key].get(((namespace or "") if r.namespaced else "", name))
        return clone(obj) if obj is not None else None

    def as_version(self, r: Resource, obj: Obj, version: str | None = None) -> Obj:
        """A stored or internal object in `version` (default: internal). Shared subtrees: do not mutate."""
        want = version or r.internal_version
        if r.group == KUEUE:
            return convert(r.kind, obj, want)
        api = r.api_version(want)
        return obj if obj.get("apiVersion") == api else {**obj, "apiVersion": api}

    def event_object(self, ev: WatchEvent, version: str | None = None) -> Obj:
        """A watch event's object in `version` (from the stored form when that is the one asked for)."""
        r = ev.resource
        if version is None or version == r.internal_version:
            return ev.object
        return self.as_version(r, ev.stored if ev.stored is not None else ev.object, version)

    def _view(self, r: Resource, key: tuple[str, str], stored: Obj, version: str | None) -> Obj:
        if r.converts and (version is None or version == r.internal_version):
            return self._views[r.key][key]
        if version is None or version == r.storage_version:
            return stored
        return self.as_version(r, stored, version)

    def _peek(self, r: Resource, name: str, namespace: str | None, version: str | None = None) -> Obj | None:
        """The object in `version` (default: internal), shared: callers must not mutate it."""
        key = ((namespace or "") if r.namespaced else "", name)
        stored = self._objects[r.key].get(key)
        return None if stored is None else self._view(r, key, stored, version)

    def _select(self, r: Resource, namespace: str | None, label_selector: str | None = None,
                field_selector: str | None = None, version: str | None = None) -> builtins.list[Obj]:
        """Objects in `version` (default: internal), shared, sorted. Callers must not mutate them."""
        store = self._objects[r.key]
        return [self._view(r, k, store[k], version)
                for k in self.select_keys(r, namespace, label_selector, field_selector)]

    def _keys(self, r: Resource) -> builtins.list[tuple[str, str]]:
        keys = self._sorted[r.key]
        if keys is None:
            keys = self._sorted[r.key] = sorted(self._objects[r.key])
        return keys

    def page(self, r: Resource, namespace: str | None, after: tuple[str, str] | None,
             limit: int, version: str | None = None) -> tuple[builtins.list[Obj], int]:
        """An unfiltered list page: up to `limit` stored (shared) objects after key `after`, in key
        order, and how many remain after them. Callers must not mutate the objects."""
        keys, remaining = self.page_keys(r, namespace, after, limit)
        store = self._objects[r.key]
        return [self._view(r, k, store[k], version) for k in keys], remaining

    def page_keys(self, r: Resource, namespace: str | None, after: tuple[str, str] | None,
                  limit: int) -> tuple[builtins.list[tuple[str, str]], int]:
        """The keys of an unfiltered list page (see `page`) and how many remain after them."""
        keys = self._keys(r)
        lo, hi = 0, len(keys)
        if namespace is not None and r.namespaced:
            lo, hi = bisect.bisect_left(keys, (namespace, "")), bisect.bisect_left(keys, (namespace + "\x00", ""))
        if after is not None:
            lo = max(lo, bisect.bisect_right(keys, after))
        end = hi if not limit else min(hi, lo + limit)
        return keys[lo:end], hi - end

    def select_keys(self, r: Resource, namespace: str | None, label_selector: str | None = None,
                    field_selector: str | None = None) -> builtins.list[tuple[str, str]]:
        """The sorted keys of the objects `_select` returns (selectors match the stored form)."""
        labels, fields = parse_label_selector(label_selector), parse_field_selector(field_selector, r.kind)
        store = self._objects[r.key]
        return [k for k in self._keys(r) if (namespace is None or not r.namespaced or k[0] == namespace)
                and labels(store[k]) and fields(store[k])]

    def encoded(self, r: Resource, key: tuple[str, str], version: str) -> bytes:
        """The stored object `key` in `version`, labelled with that version's apiVersion, as the
        compact JSON (orjson) a list page embeds; cached per object and version until it changes."""
        return self.encoded_many(r, [key], version)[0]

    def encoded_many(self, r: Resource, keys: Iterable[tuple[str, str]], version: str) -> builtins.list[bytes]:
        """`encoded` for each key, in order (one call per list page)."""
        store, cache = self._objects[r.key], self._encoded[r.key]
        out: builtins.list[bytes] = []
        add = out.append
        for key in keys:
            stored = store[key]
            entry = cache.get(key)
            if entry is not None and entry[0] is stored and entry[1] == stored["metadata"].get("resourceVersion"):
                b = entry[2].get(version)
                if b is not None:
                    add(b)
                    continue
            else:
                entry = cache[key] = (stored, stored["metadata"].get("resourceVersion"), {})
            b = entry[2][version] = _dumps(labelled(r, self._view(r, key, stored, version), version))
            add(b)
        return out

    def warm_encodings(self) -> int:
        """Encode every stored object in its resource's preferred served version (what discovery
        points clients at) ahead of the first list, so that list pays no cold pass. Returns how many."""
        n = 0
        for r in self.registry.all:
            n += len(self.encoded_many(r, self._objects[r.key], r.versions[0]))
        return n

    def counts(self) -> dict[str, int]:
        return {r.kind: len(self._objects[r.key]) for r in self.registry.all}

    # --- writes ------------------------------------------------------------------------------------
    def create(self, obj: Obj, *, resource: ResourceRef | None = None, namespace: str | None = None,
               dry_run: bool = False, with_status: bool = False, version: str | None = None,
               field_validation: str | None = None) -> Obj:
        """Create an object. `with_status` keeps its status (in-process seeding of state);
        over HTTP the status of a resource with a /status subresource is dropped, as the real server does."""
        r = self._resource_for(obj, resource)
        new, version = self._check_type(clone(obj), r, version)
        meta = self._meta_of(new, r)
        if namespace is not None and r.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise BadRequest("the namespace of the provided object does not match the namespace sent on the "
                                 "request")
            meta["namespace"] = namespace
        if not r.namespaced:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(self._rng.choice(_GENERATE_ALPHABET) for _ in range(5))
        if meta.get("resourceVersion"):
            raise BadRequest("resourceVersion should not be set on objects to be created")
        self._validate_identity(r, new)
        ns, name = (meta.get("namespace") or "") if r.namespaced else "", meta["name"]
        if (ns, name) in self._objects[r.key]:
            raise AlreadyExists.of(r, name)
        if r.status and not with_status:
            new.pop("status", None)
        for k in _CLIENT_IMMUTABLE_META:
            meta.pop(k, None)
        meta.pop("managedFields", None)
        meta["uid"] = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        meta["creationTimestamp"] = _rfc3339(self.clock())
        meta["generation"] = 1
        self._admit("CREATE", r, new, None)
        stored = self._validate(r, new, None, version, field_validation)
        if dry_run:
            return self.as_version(r, stored, version)
        return self._commit(r, ns, name, stored, "ADDED", None, version)

    def update(self, obj: Obj, *, resource: ResourceRef | None = None, name: str | None = None,
               namespace: str | None = None, dry_run: bool = False, version: str | None = None,
               field_validation: str | None = None) -> Obj:
        """Replace an object (PUT). A metadata.resourceVersion in `obj` is a precondition (409 on
        mismatch); without one the update is unconditional. The status is kept from the stored
        object when the resource has a /status subresource. `name`/`namespace` are the URL's."""
        return self._replace(obj, resource, subresource=None, dry_run=dry_run, name=name, namespace=namespace,
                             version=version, field_validation=field_validation)

    def update_status(self, obj: Obj, *, resource: ResourceRef | None = None, name: str | None = None,
                      namespace: str | None = None, dry_run: bool = False, version: str | None = None,
                      field_validation: str | None = None) -> Obj:
        """Replace only the status (PUT /status); never bumps generation."""
        return self._replace(obj, resource, subresource="status", dry_run=dry_run, name=name, namespace=namespace,
                             version=version, field_validation=field_validation)

    def patch_merge(self, resource: ResourceRef, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None, dry_run: bool = False, version: str | None = None,
                    field_validation: str | None = None) -> Obj:
        """Apply a JSON merge patch (RFC 7386). A resourceVersion in the patch is a precondition."""
        return self._patch(resource, name, namespace, subresource, dry_run, lambda cur: merge_patch(cur, patch),
                           version, field_validation)

    def patch_json(self, resource: ResourceRef, name: str, operations: builtins.list[Obj], namespace: str | None = None,
                   *,
                   subresource: str | None = None, dry_run: bool = False, version: str | None = None,
                   field_validation: str | None = None) -> Obj:
        """Apply a JSON patch (RFC 6902)."""
        return self._patch(resource, name, namespace, subresource, dry_run, lambda cur: json_patch(cur, operations),
                           version, field_validation)

    def delete(self, resource: ResourceRef, name: str, namespace: str | None = None, *,
               preconditions: dict[str, Any] | None = None, dry_run: bool = False, version: str | None = None) -> Obj:
        """Delete; with finalizers, only mark deletionTimestamp (removed once they are gone).

        Returns the deleted object, or the terminating one when finalizers remain (in `version`).
        """
        r = self.resource(resource)
        key = ((namespace or "") if r.namespaced else "", name)
        cur = self._objects[r.key].get(key)  # as stored
        if cur is None:
            raise NotFound.of(r, name)
        meta = cur["metadata"]
        pre = preconditions or {}
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise Conflict.of(r, name,
                              f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                              f"{meta.get('uid')}")
        if pre.get("resourceVersion") and str(pre["resourceVersion"]) != meta.get("resourceVersion"):
            raise Conflict.of(r, name,
                              f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                                       f"ResourceVersion in object meta: {meta.get('resourceVersion')}")
        self._admit("DELETE", r, None, self._view(r, key, cur, version))
        ns = meta.get("namespace") or ""
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return clone(self._view(r, key, cur, version))  # already terminating: nothing changes
            new = clone(cur)
            new["metadata"]["deletionTimestamp"] = _rfc3339(self.clock())
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new["metadata"]["generation"] = int(meta.get("generation") or 0) + 1
            if dry_run:
                return clone(self.as_version(r, new, version))
            return self._commit(r, ns, name, new, "MODIFIED", cur, version)
        if dry_run:
            return clone(self._view(r, key, cur, version))
        return self._commit(r, ns, name, clone(cur), "DELETED", cur, version)

    # --- watches -----------------------------------------------------------------------------------
    def subscribe(self, resources: Iterable[ResourceRef] | None = None, *, maxsize: int | None = None) -> Subscription:
        """Events from now on (all resources, or only these). Close it when done."""
        keys = frozenset(self.resource(x).key for x in resources) if resources is not None else None
        sub = Subscription(self, keys, maxsize or self._subscriber_buffer)
        self._subscribers.add(sub)
        return sub

    def events_since(self, rv: int, resource: ResourceRef | None = None) -> builtins.list[WatchEvent]:
        """Events after `rv` (for a watch resuming there); raises Gone when `rv` is too old."""
        if rv < self._floor:
            raise Gone(f"too old resource version: {rv} ({self._floor})")
        key = self.resource(resource).key if resource is not None else None
        return [e for e in self._history if e.rv > rv and (key is None or e.resource.key == key)]

    def close_subscriptions(self) -> None:
        for sub in list(self._subscribers):
            sub.close()

    # --- seeding ---------------------------------------------------------------------------------
    def seed(self, objects: Iterable[Obj]) -> int:
        """Load initial state (status kept, identity and timestamps kept when present) without
        events: watches start after the seed. Unknown kinds raise KeyError; Secrets are skipped."""
        n = 0
        for obj in objects:
            if obj.get("kind") in NEVER_READ:
                continue
            r = self.registry.for_object(obj)
            new, _ = self._check_type(clone(obj), r, None)
            new = self._to_storage(r, new)
            meta = self._meta_of(new, r)
            if not r.namespaced:
                meta.pop("namespace", None)
            self._validate_identity(r, new)
            meta.setdefault("uid", str(uuid.UUID(int=self._rng.getrandbits(128), version=4)))
            meta.setdefault("creationTimestamp", _rfc3339(self.clock()))
            meta["generation"] = int(meta.get("generation") or 1)
            meta.pop("managedFields", None)
            self._rv += 1
            meta["resourceVersion"] = str(self._rv)
            self._put(r, ((meta.get("namespace") or "") if r.namespaced else "", meta["name"]), new)
            self._sorted[r.key] = None
            n += 1
        self._floor = self._rv
        return n

    def seed_from_snapshot(self, path: str | Path, at: float | None = None) -> LoadResult:
        """Seed from a snapshot file (engine.sources.snapshot): the objects it accepts, raw.

        `at`: the instant the capture becomes — every timestamp of the snapshot moved by the same amount
        (sim/rebase.py), so ages read as they did when it was captured. The returned LoadResult carries the
        loader's issues and the envelope's access states.
        """
        from .clock import parse_rfc3339
        from .rebase import shift_times

        result = load_snapshot(path)
        objs: builtins.list[Obj] = []
        for r in self.registry.all:
            if not r.engine_kind:
                continue
            for model in result.store.list(r.engine_kind):
                raw = result.store.raw(r.engine_kind, model.metadata.name, model.metadata.namespace)
                if raw is not None:
                    objs.append(raw)
        if at is not None:
            captured = parse_rfc3339(result.captured_at) or max(
                (t for t in (parse_rfc3339((o.get("metadata") or {}).get("creationTimestamp")) for o in objs)
                 if t is not None), default=at)
            objs = [shift_times(o, round(at - captured)) for o in objs]  # whole seconds: intervals exact
        self.seed(objs)
        return result

    # --- internals -------------------------------------------------------------------------------
    def _resource_for(self, obj: Obj, resource: ResourceRef | None) -> Resource:
        if not isinstance(obj, dict):
            raise BadRequest("the object must be a JSON object")
        if obj.get("kind") in NEVER_READ:
            raise BadRequest("the simulator never holds Secrets")
        if resource is not None:
            return self.resource(resource)
        try:
            return self.registry.for_object(obj)
        except KeyError as exc:
            raise BadRequest(str(exc.args[0])) from None

    def _meta_of(self, obj: Obj, r: Resource) -> Obj:
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise BadRequest(f"{r.kind}: metadata must be an object")
        return meta

    def _check_type(self, obj: Obj, r: Resource, version: str | None) -> tuple[Obj, str]:
        """Check apiVersion/kind against the resource; returns the object in the version the write
        is addressed to (`version`, else the one the object names, else the internal one) and that
        version. A Kueue object naming the other version is converted (the simulator is lenient
        there: the real API server refuses a body whose version differs from the URL's)."""
        if not isinstance(obj, dict):
            raise BadRequest("the object must be a JSON object")
        api_version = obj.get("apiVersion")
        named = None
        if api_version:
            group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
            named = api_version.rsplit("/", 1)[-1]
            known = ("v1beta1", "v1beta2") if r.group == KUEUE else r.known_versions
            if group != r.group or named not in known:
                raise BadRequest(f"the API version in the data ({api_version}) does not match the expected API version "
                                 f"({r.api_version(version or r.versions[0])})")
        kind = obj.get("kind")
        # TauGrid manifests sometimes spell the kinds Cluster/Team/Workspace; store the served kind.
        if kind and kind != r.kind and not (r.group == "tau.azure.com" and "Tau" + kind == r.kind):
            raise BadRequest(f"the kind in the data ({kind}) does not match the expected kind ({r.kind})")
        want = version or named or r.internal_version
        if r.group != KUEUE:
            want = r.storage_version
        obj["kind"] = r.kind
        if named and named != want:
            obj = clone(convert(r.kind, obj, want))
        obj["apiVersion"] = r.api_version(want)
        return obj, want

    def _to_storage(self, r: Resource, obj: Obj) -> Obj:
        return convert(r.kind, obj, r.storage_version) if r.group == KUEUE else obj

    def _put(self, r: Resource, key: tuple[str, str], stored: Obj) -> None:
        self._objects[r.key][key] = stored
        self._encoded[r.key].pop(key, None)
        if r.converts:
            self._views[r.key][key] = convert(r.kind, stored, r.internal_version)

    def _validate_identity(self, r: Resource, obj: Obj) -> None:
        meta = obj["metadata"]
        name = meta.get("name")
        if not name:
            raise Invalid.of(r, "",
                             [("metadata.name", "FieldValueRequired",
                               "Required value: name or generateName is required")])
        causes = []
        if not isinstance(name, str) or len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
            causes.append(("metadata.name", "FieldValueInvalid",
                           f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case '
                           "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                           "character"))
        if r.namespaced and not meta.get("namespace"):
            causes.append(("metadata.namespace", "FieldValueRequired", "Required value"))
        for f in ("labels", "annotations"):
            m = meta.get(f)
            if m is not None and (not isinstance(m, dict) or not all(isinstance(v, str) for v in m.values())):
                causes.append((f"metadata.{f}", "FieldValueInvalid", "Invalid value: values must be strings"))
        if causes:
            raise Invalid.of(r, str(name), causes)

    def _validate(self, r: Resource, obj: Obj, old: Obj | None = None, version: str | None = None,
                  field_validation: str | None = None) -> Obj:
        """The write's validation; returns the object to store (in the storage version). `obj` and
        `old` are in `version` (the request's; in-process writes: the internal one). The CRD
        schema of that version when one covers the kind and the release serves that version (else
        the storage version's, after conversion) prunes and defaults `obj` in place; without
        schemas, the built-in enum checks."""
        version = version or r.internal_version
        if self.schemas is not None and self.schemas.covers(r.group, r.kind):
            if version not in r.versions:  # e.g. the controllers' v1beta2 on Kueue 0.14
                obj = clone(convert(r.kind, obj, r.storage_version))
                old = convert(r.kind, old, r.storage_version) if old is not None else None
                version = r.storage_version
            self._check_schema(r, obj, old, version, field_validation)
            return self._to_storage(r, obj)
        causes = _lease_causes(obj) if r.kind == "Lease" else []
        for dotted, allowed in _ENUMS.get(r.kind, ()):
            cur: Any = obj
            for part in dotted.split("."):
                cur = cur.get(part) if isinstance(cur, dict) else None
            if cur is not None and cur not in allowed:
                supported = ", ".join(f'"{a}"' for a in allowed)
                causes.append((dotted, "FieldValueNotSupported",
                               f'Unsupported value: "{cur}": supported values: {supported}'))
        if causes:
            raise Invalid.of(r, obj["metadata"]["name"], causes)
        return self._to_storage(r, obj)

    def _check_schema(self, r: Resource, obj: Obj, old: Obj | None, version: str, field_validation: str | None) -> None:
        schemas = self.schemas
        assert schemas is not None
        out = schemas.check(r.group, r.kind, version, obj, old)
        if out is None:
            return
        self.pruned = out.unknown
        if out.unknown and field_validation == "Strict":
            fields = ", ".join(f'unknown field "{f}"' for f in out.unknown)
            raise BadRequest(f'{r.kind} in version "{version}" cannot be handled as a {r.kind}: '
                             f"strict decoding error: {fields}")
        if out.causes:
            raise Invalid.of(r, obj["metadata"].get("name") or "", out.causes)

    def _admit(self, op: str, r: Resource, new: Obj | None, old: Obj | None) -> None:
        for hook in list(self._admission):
            hook(op, r, new, old)

    def _replace(self, obj: Obj, resource: ResourceRef | None, *, subresource: str | None, dry_run: bool,
                 name: str | None = None, namespace: str | None = None, owned: bool = False,
                 version: str | None = None, field_validation: str | None = None) -> Obj:
        r = self._resource_for(obj, resource)
        if subresource == "status" and not r.status:
            raise NotFound.path()
        new, version = self._check_type(obj if owned else clone(obj), r, version)  # `owned`: a private copy
        meta = self._meta_of(new, r)
        if name is not None and meta.get("name") != name:
            raise BadRequest("the name of the object does not match the name on the URL")
        if namespace is not None and r.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise BadRequest("the namespace of the provided object does not match the namespace sent on the "
                                 "request")
            meta["namespace"] = namespace
        oname = meta.get("name") or ""
        cur = self._peek(r, oname, meta.get("namespace"), version)
        if cur is None:
            raise NotFound.of(r, oname)
        if meta.get("resourceVersion") and str(meta["resourceVersion"]) != cur["metadata"]["resourceVersion"]:
            raise Conflict.stale(r, oname)
        old_meta = cur["metadata"]
        if subresource == "status":
            # Only the status stanza moves; everything else stays as stored.
            merged = clone(cur)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            new = merged
        else:
            if r.status:
                if "status" in cur:
                    new["status"] = clone(cur["status"])
                else:
                    new.pop("status", None)
            for k in _CLIENT_IMMUTABLE_META:
                if k in old_meta:
                    meta[k] = old_meta[k]
                else:
                    meta.pop(k, None)
            meta.pop("managedFields", None)
            if r.namespaced:
                meta["namespace"] = old_meta.get("namespace")
            else:
                meta.pop("namespace", None)
            if old_meta.get("deletionTimestamp"):
                added = set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
                if added:
                    raise Invalid.of(r, oname, [("metadata.finalizers", "FieldValueForbidden",
                                                 "Forbidden: no new finalizers can be added if the object is being "
                                                 f"deleted, found new finalizers {sorted(added)!r}")])
            if _spec_of(new) != _spec_of(cur):
                meta["generation"] = int(old_meta.get("generation") or 0) + 1
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        self._admit("UPDATE", r, new, cur)
        stored = self._validate(r, new, cur, version, field_validation)
        ns = (old_meta.get("namespace") or "") if r.namespaced else ""
        cur_stored = self._objects[r.key][(ns, oname)]
        if stored == cur_stored:
            return clone(cur)  # a no-op write changes nothing, not even the resourceVersion
        if dry_run:
            return clone(self.as_version(r, stored, version))
        if stored["metadata"].get("deletionTimestamp") and not stored["metadata"].get("finalizers"):
            return self._commit(r, ns, oname, stored, "DELETED", cur_stored, version)
        return self._commit(r, ns, oname, stored, "MODIFIED", cur_stored, version)

    def _patch(self, resource: ResourceRef, name: str, namespace: str | None, subresource: str | None,
               dry_run: bool, apply: Callable[[Obj], Any], version: str | None = None,
               field_validation: str | None = None) -> Obj:
        r = self.resource(resource)
        if subresource == "status" and not r.status:
            raise NotFound.path()
        if version is None or r.group != KUEUE:
            version = r.internal_version if r.group == KUEUE else r.storage_version
        cur = self._peek(r, name, namespace, version)  # the patch applies in the request's version
        if cur is None:
            raise NotFound.of(r, name)
        try:
            patched = apply(cur)
        except PatchError as exc:
            if exc.malformed:
                raise BadRequest(str(exc)) from None
            raise Invalid.of(r, name, [("", "FieldValueInvalid", str(exc))]) from None
        if not isinstance(patched, dict):
            raise BadRequest("the patch must produce an object")
        meta = patched.get("metadata")
        if not isinstance(meta, dict) or meta.get("name") != name:
            raise BadRequest("the name of the object cannot be changed by a patch")
        if r.namespaced and meta.get("namespace") != cur["metadata"].get("namespace"):
            raise BadRequest("the namespace of the object cannot be changed by a patch")
        # The patch's resourceVersion (if it set one) stays in place and acts as a precondition.
        return self._replace(patched, r, subresource=subresource, dry_run=dry_run, owned=patched is not cur,
                             version=version, field_validation=field_validation)

    def _commit(self, r: Resource, ns: str, name: str, obj: Obj, typ: str, old: Obj | None,
                version: str | None = None) -> Obj:
        """Store `obj` (storage version; `old`: the stored one it replaces), publish the event and
        return a copy in `version`."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        key = (ns, name)
        views = self._views.get(r.key)
        old_view = views.get(key) if views is not None else old
        if typ == "DELETED":
            self._objects[r.key].pop(key, None)
            self._encoded[r.key].pop(key, None)
            if views is not None:
                views.pop(key, None)
            self._sorted[r.key] = None
            view = convert(r.kind, obj, r.internal_version) if views is not None else obj
        else:
            if key not in self._objects[r.key]:
                self._sorted[r.key] = None
            self._put(r, key, obj)
            view = views[key] if views is not None else obj
        ev = WatchEvent(typ, r, view, self._rv, old_view if typ == "MODIFIED" else None,
                        obj if views is not None else None)
        if len(self._history) == self._history.maxlen:
            self._floor = self._history[0].rv  # the oldest event falls out of the window
        self._history.append(ev)
        for sub in list(self._subscribers):
            if sub.wants(ev):
                sub._push(ev)
        return clone(self._view(r, key, obj, version) if typ != "DELETED" else self.as_version(r, obj, version))


__all__ = ["ObjectDB", "Subscription", "WatchEvent", "ApiError", "Admission"]
