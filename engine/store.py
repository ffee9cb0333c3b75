"""Object store: objects by kind/namespace/name, indexes, per-kind access state and watch health, change feed.

Every source (snapshot file, live informers, the simulator) fills a Store; the rules read it.
"""

from __future__ import annotations

import builtins
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from itertools import islice
from typing import Any, TypeVar, overload

from .model import BY_KIND, KINDS, FastObject, KubeObject, ResourceKind
from .model.kinds import HIGH_VOLUME

Key = tuple[str, str]  # (namespace or "", name)
# What the store holds: the pydantic models, and the msgspec structs of the kinds decoded fast.
StoredObject = KubeObject | FastObject
T = TypeVar("T", bound=StoredObject)
# A kind as a read names it: its model class (the read is typed by it: `store.list(Workload)` is a list of
# Workload), or its name when it is only known at run time (a reference, a rule's declared reads).
KindKey = type[Any] | str
# Either spelling → the kind's name: one dict look-up, whichever a read was given.
KIND_NAME: dict[KindKey, str] = {**{k.kind: k.kind for k in KINDS}, **{k.model: k.kind for k in KINDS}}


class AccessState(StrEnum):
    SYNCED = "Synced"
    SYNCING = "Syncing"
    ABSENT = "Absent"  # the API is not served
    FORBIDDEN = "Forbidden"
    ERROR = "Error"


@dataclass(frozen=True)
class Access:
    state: AccessState
    since: float | None = None  # epoch seconds: when the data became stale / unreadable
    message: str = ""

    @property
    def readable(self) -> bool:
        return self.state is AccessState.SYNCED


# A live source counts a kind fresh while its watch is open and something (an event or a bookmark) arrived
# within this many seconds. An API server sends a bookmark about every minute (the simulator every 15 s):
# silence past the bound means the stream is dead even when the connection still looks open.
WATCH_BOUND = 90.0
# A broken watch is normally re-opened within milliseconds (the server ends every watch after its timeout):
# it counts stale once it stays broken this long (or the bound, when shorter).
BROKEN_GRACE = 5.0


@dataclass(frozen=True)
class WatchHealth:
    """One kind's watch as the live source last saw it (kept apart from the objects: no change, no re-derive)."""

    open: bool  # a watch stream is open (the server accepted it and has not ended it)
    heard_at: float | None = None  # epoch seconds: the last event, bookmark or accepted watch on it


@dataclass(frozen=True)
class WatchFreshness:
    """Watch health over every watched kind at one moment (pure: `watch_freshness`)."""

    age: float | None  # seconds since the stalest watched kind was last heard from; None: nothing heard yet
    stale: tuple[str, ...]  # kinds whose watch is broken, or open and silent beyond the bound
    bound: float


def watch_freshness(watches: dict[str, WatchHealth], now: float, bound: float = WATCH_BOUND) -> WatchFreshness:
    """Fresh while every watched kind's stream is open and was heard from within `bound` seconds; a
    broken stream is stale once it stays broken past the grace (re-opening takes milliseconds)."""
    heard = [w.heard_at for w in watches.values() if w.heard_at is not None]
    age = max(0.0, now - min(heard)) if heard else None
    grace = min(BROKEN_GRACE, bound)
    stale = tuple(sorted(k for k, w in watches.items()
                         if w.heard_at is not None and now - w.heard_at > (bound if w.open else grace)))
    return WatchFreshness(age, stale, bound)


# Slots: the store keeps the last FEED_LIMIT changes, 72 bytes each instead of 352 with a __dict__ (17 MiB
# of a long-running console's memory once the feed is full).
@dataclass(frozen=True, slots=True)
class Change:
    revision: int
    kind: str
    namespace: str
    name: str
    type: str  # ADDED | MODIFIED | DELETED | RESET


class Store:
    """In-memory objects with namespace, label and owner-UID indexes.

    Not thread-safe: one writer (the source) on the event loop; readers take `view()`-time reads.
    """

    FEED_LIMIT = 50_000

    def __init__(self) -> None:
        self._objects: dict[str, dict[Key, StoredObject]] = {k.kind: {} for k in KINDS}
        self._raw: dict[str, dict[Key, dict[str, Any]]] = {k.kind: {} for k in KINDS}
        self._by_ns: dict[str, dict[str, set[Key]]] = {k.kind: {} for k in KINDS}
        self._by_label: dict[str, dict[tuple[str, str], set[Key]]] = {k.kind: {} for k in KINDS}
        # uid → (kind, key) of the one object it owns, or a set when it owns several: most owners (a
        # Job and its Workload) own one, and a set each was ~50 MiB at fleet scale.
        self._by_owner: dict[str, tuple[str, Key] | set[tuple[str, Key]]] = {}
        self._access: dict[str, Access] = {k.kind: Access(AccessState.SYNCING) for k in KINDS}
        # Sorted keys per kind, kept until a key is added or removed: `list()` of 100k Workloads
        # would otherwise sort them on every call (several per derive).
        self._sorted: dict[str, list[Key] | None] = {k.kind: None for k in KINDS}
        self.revision = 0
        self._feed: deque[Change] = deque(maxlen=self.FEED_LIMIT)
        self._listeners: list[Callable[[Change], None]] = []
        self.last_event_at: float | None = None
        # The kinds a live source watches (none for a snapshot), and its freshness bound.
        self._watches: dict[str, WatchHealth] = {}
        self.watch_bound = WATCH_BOUND

    # writes ------------------------------------------------------------------------------
    def upsert(self, obj: StoredObject, raw: dict[str, Any] | None = None, at: float | None = None) -> None:
        kind = _kind_of(obj)
        key = (obj.metadata.namespace or "", obj.metadata.name)
        existed = key in self._objects[kind]
        if existed:
            self._unindex(kind, key)
        else:
            self._sorted[kind] = None
        self._objects[kind][key] = obj
        if raw is not None:
            self._raw[kind][key] = raw
        else:
            self._raw[kind].pop(key, None)
        self._index(kind, key, obj)
        self._emit(kind, key, "MODIFIED" if existed else "ADDED", at)

    def delete(self, kind: str, name: str, namespace: str | None = None, at: float | None = None) -> bool:
        key = (namespace or "", name)
        if key not in self._objects[kind]:
            return False
        self._unindex(kind, key)
        del self._objects[kind][key]
        self._sorted[kind] = None
        self._raw[kind].pop(key, None)
        self._emit(kind, key, "DELETED", at)
        return True

    def replace(self, kind: str, objects: Iterable[tuple[StoredObject, dict[str, Any] | None]],
                at: float | None = None) -> None:
        """Swap a kind's whole content (a re-list), emitting one RESET change.

        Indexed in one batch: the kind's namespace and label indexes are rebuilt rather than edited
        key by key, and only owner references touch the shared owner index."""
        for key, old in self._objects[kind].items():
            for ref in old.metadata.owner_references:
                self._unown(ref.uid, (kind, key))
        objs: dict[Key, StoredObject] = {}
        raws: dict[Key, dict[str, Any]] = {}
        by_ns: dict[str, set[Key]] = {}
        by_label: dict[tuple[str, str], set[Key]] = {}
        self._objects[kind], self._raw[kind], self._by_ns[kind], self._by_label[kind] = objs, raws, by_ns, by_label
        self._sorted[kind] = None
        labelled = kind not in HIGH_VOLUME
        for obj, raw in objects:
            meta = obj.metadata
            ns = meta.namespace or ""
            key = (ns, meta.name)
            if key in objs:  # the same name twice: the later one stands, as with upserts
                self._unindex(kind, key)
                raws.pop(key, None)
            objs[key] = obj
            if raw is not None:
                raws[key] = raw
            keys = by_ns.get(ns)
            if keys is None:
                keys = by_ns[ns] = set()
            keys.add(key)
            if labelled:
                for label in meta.labels.items():
                    have = by_label.get(label)
                    if have is None:
                        have = by_label[label] = set()
                    have.add(key)
            for ref in meta.owner_references:
                if ref.uid:
                    self._own(ref.uid, (kind, key))
        self._emit(kind, ("", ""), "RESET", at)

    def set_access(self, kind: str, state: AccessState, message: str = "", since: float | None = None) -> None:
        prev = self._access[kind]
        if state in (AccessState.ERROR, AccessState.FORBIDDEN) and prev.state is state and prev.since is not None:
            since = prev.since  # keep the first moment the data went stale
        self._access[kind] = Access(state, since, message)

    def set_watch(self, kind: str, open: bool, heard_at: float | None = None) -> None:
        """A watch opened, heard from (`heard_at`) or ended; no change is emitted (nothing to re-derive)."""
        prev = self._watches.get(kind)
        self._watches[kind] = WatchHealth(open, heard_at if heard_at is not None else prev.heard_at if prev else None)

    def forget_watch(self, kind: str) -> None:
        """The kind is not watched (its API absent, forbidden or failing: its access state says so)."""
        self._watches.pop(kind, None)

    def subscribe(self, fn: Callable[[Change], None]) -> None:
        self._listeners.append(fn)

    # reads -------------------------------------------------------------------------------
    # Typed by the model class a read names; a kind only known at run time (its name) reads as StoredObject.
    @overload
    def get(self, kind: type[T], name: str, namespace: str | None = None) -> T | None: ...
    @overload
    def get(self, kind: str, name: str, namespace: str | None = None) -> StoredObject | None: ...
    def get(self, kind: KindKey, name: str, namespace: str | None = None) -> StoredObject | None:
        return self._objects[KIND_NAME[kind]].get((namespace or "", name))

    def raw(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self._raw[kind].get((namespace or "", name))

    @overload
    def list(self, kind: type[T], namespace: str | None = None) -> builtins.list[T]: ...
    @overload
    def list(self, kind: str, namespace: str | None = None) -> builtins.list[StoredObject]: ...
    def list(self, kind: KindKey, namespace: str | None = None) -> builtins.list[Any]:
        kind = KIND_NAME[kind]
        objs = self._objects[kind]
        if namespace is None:
            ordered = self._sorted[kind]
            if ordered is None:
                ordered = self._sorted[kind] = sorted(objs)
            return [objs[k] for k in ordered]
        keys = self._by_ns[kind].get(namespace, set())
        return [objs[k] for k in sorted(keys)]

    def count(self, kind: str) -> int:
        return len(self._objects[kind])

    def objects(self, kind: KindKey) -> dict[Key, Any]:
        """A copy of the kind's objects by key, unordered (a C-level copy: no sort, no list of 100k)."""
        return dict(self._objects[KIND_NAME[kind]])

    @overload
    def by_label(self, kind: type[T], key: str, value: str | None = None,
                 namespace: str | None = None) -> builtins.list[T]: ...
    @overload
    def by_label(self, kind: str, key: str, value: str | None = None,
                 namespace: str | None = None) -> builtins.list[StoredObject]: ...
    def by_label(self, kind: KindKey, key: str, value: str | None = None,
                 namespace: str | None = None) -> builtins.list[Any]:
        kind = KIND_NAME[kind]
        objs = self._objects[kind]
        # High-volume kinds (engine/model/kinds.py) have no label index: their labels are looked up
        # rarely (a Job's Workloads, from the object view) and an index entry per label per object was
        # ~70 MiB at fleet scale. Scanned: the namespace's objects, or every object of the kind.
        if kind in HIGH_VOLUME:
            keys = self._by_ns[kind].get(namespace, ()) if namespace is not None else objs.keys()
            return [objs[k] for k in sorted(keys)
                    if (v := objs[k].metadata.labels.get(key)) is not None and (value is None or v == value)]
        if value is None:
            keys = set().union(*(s for (k, _), s in self._by_label[kind].items() if k == key)) if objs else set()
        else:
            keys = self._by_label[kind].get((key, value), set())
        if namespace is not None:
            keys = {k for k in keys if k[0] == namespace}
        return [objs[k] for k in sorted(keys)]

    def by_owner(self, uid: str, kind: str | None = None) -> builtins.list[StoredObject]:
        refs = self._by_owner.get(uid)
        if refs is None:
            return []
        owned: Iterable[tuple[str, Key]] = (refs,) if isinstance(refs, tuple) else refs
        return [self._objects[k][key] for k, key in sorted(owned) if kind is None or k == kind]

    def access(self, kind: str) -> Access:
        return self._access[kind]

    def readable(self, kind: str) -> bool:
        return self._access[kind].readable

    def access_states(self) -> dict[str, Access]:
        return dict(self._access)

    def watch_health(self) -> dict[str, WatchHealth]:
        return dict(self._watches)

    def watch_freshness(self, now: float) -> WatchFreshness:
        return watch_freshness(self.watch_health(), now, self.watch_bound)

    def changes_since(self, revision: int) -> builtins.list[Change] | None:
        """Changes after `revision`, or None when the feed no longer reaches back that far."""
        if revision >= self.revision:
            return []
        if not self._feed or self._feed[0].revision > revision + 1:
            return None
        # Revisions in the feed are consecutive: take the newest ones from the right end, without
        # walking the whole (50k) feed on every refresh.
        out = list(islice(reversed(self._feed), self.revision - revision))
        out.reverse()
        return out

    def kinds(self) -> builtins.list[str]:
        return list(self._objects)

    # internals ---------------------------------------------------------------------------
    def _index(self, kind: str, key: Key, obj: StoredObject) -> None:
        self._by_ns[kind].setdefault(key[0], set()).add(key)
        if kind not in HIGH_VOLUME:
            for lk, lv in obj.metadata.labels.items():
                self._by_label[kind].setdefault((lk, lv), set()).add(key)
        for ref in obj.metadata.owner_references:
            if ref.uid:
                self._own(ref.uid, (kind, key))

    def _own(self, uid: str, entry: tuple[str, Key]) -> None:
        have = self._by_owner.get(uid)
        if have is None:
            self._by_owner[uid] = entry
        elif isinstance(have, tuple):
            if have != entry:
                self._by_owner[uid] = {have, entry}
        else:
            have.add(entry)

    def _unindex(self, kind: str, key: Key) -> None:
        obj = self._objects[kind][key]
        ns = self._by_ns[kind].get(key[0])
        if ns is not None:
            ns.discard(key)
            if not ns:
                del self._by_ns[kind][key[0]]
        for lk, lv in obj.metadata.labels.items() if kind not in HIGH_VOLUME else ():
            s = self._by_label[kind].get((lk, lv))
            if s is not None:
                s.discard(key)
                if not s:
                    del self._by_label[kind][(lk, lv)]
        for ref in obj.metadata.owner_references:
            self._unown(ref.uid, (kind, key))

    def _unown(self, uid: str, entry: tuple[str, Key]) -> None:
        have = self._by_owner.get(uid)
        if have is None:
            return
        if isinstance(have, tuple):
            if have == entry:
                del self._by_owner[uid]
        else:
            have.discard(entry)
            if len(have) == 1:
                self._by_owner[uid] = next(iter(have))

    def _emit(self, kind: str, key: Key, typ: str, at: float | None) -> None:
        self.revision += 1
        if at is not None:
            self.last_event_at = at
        change = Change(self.revision, kind, key[0], key[1], typ)
        self._feed.append(change)
        for fn in self._listeners:
            fn(change)


def _kind_of(obj: StoredObject) -> str:
    kind = KIND_NAME.get(type(obj))
    if kind is None:
        raise TypeError(f"not a registered kind: {type(obj).__name__}")
    return kind


def kind_info(kind: str) -> ResourceKind:
    return BY_KIND[kind]
