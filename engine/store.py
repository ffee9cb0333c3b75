"""Object store: objects by kind/namespace/name, indexes, per-kind access state, change feed.

Every source (snapshot file, live informers, the simulator) fills a Store; the rules read it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from itertools import islice
from typing import Any

from .model import BY_KIND, KINDS, KubeObject
from .model.kinds import HIGH_VOLUME

Key = tuple[str, str]  # (namespace or "", name)


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


@dataclass(frozen=True)
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
        self._objects: dict[str, dict[Key, KubeObject]] = {k.kind: {} for k in KINDS}
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

    # writes ------------------------------------------------------------------------------
    def upsert(self, obj: KubeObject, raw: dict[str, Any] | None = None, at: float | None = None) -> None:
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

    def replace(self, kind: str, objects: Iterable[tuple[KubeObject, dict[str, Any] | None]], at: float | None = None) -> None:
        """Swap a kind's whole content (a re-list), emitting one RESET change."""
        for key in list(self._objects[kind]):
            self._unindex(kind, key)
        self._objects[kind] = {}
        self._raw[kind] = {}
        self._sorted[kind] = None
        for obj, raw in objects:
            key = (obj.metadata.namespace or "", obj.metadata.name)
            self._objects[kind][key] = obj
            if raw is not None:
                self._raw[kind][key] = raw
            self._index(kind, key, obj)
        self._emit(kind, ("", ""), "RESET", at)

    def set_access(self, kind: str, state: AccessState, message: str = "", since: float | None = None) -> None:
        prev = self._access[kind]
        if state in (AccessState.ERROR, AccessState.FORBIDDEN) and prev.state is state and prev.since is not None:
            since = prev.since  # keep the first moment the data went stale
        self._access[kind] = Access(state, since, message)

    def subscribe(self, fn: Callable[[Change], None]) -> None:
        self._listeners.append(fn)

    # reads -------------------------------------------------------------------------------
    def get(self, kind: str, name: str, namespace: str | None = None) -> Any:
        return self._objects[kind].get((namespace or "", name))

    def raw(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self._raw[kind].get((namespace or "", name))

    def list(self, kind: str, namespace: str | None = None) -> list[Any]:
        objs = self._objects[kind]
        if namespace is None:
            keys = self._sorted[kind]
            if keys is None:
                keys = self._sorted[kind] = sorted(objs)
            return [objs[k] for k in keys]
        keys = self._by_ns[kind].get(namespace, set())
        return [objs[k] for k in sorted(keys)]

    def count(self, kind: str) -> int:
        return len(self._objects[kind])

    def by_label(self, kind: str, key: str, value: str | None = None, namespace: str | None = None) -> list[Any]:
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

    def by_owner(self, uid: str, kind: str | None = None) -> list[Any]:
        refs = self._by_owner.get(uid)
        if refs is None:
            return []
        if type(refs) is tuple:
            refs = (refs,)
        return [self._objects[k][key] for k, key in sorted(refs) if kind is None or k == kind]

    def access(self, kind: str) -> Access:
        return self._access[kind]

    def readable(self, kind: str) -> bool:
        return self._access[kind].readable

    def access_states(self) -> dict[str, Access]:
        return dict(self._access)

    def changes_since(self, revision: int) -> list[Change] | None:
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

    def kinds(self) -> list[str]:
        return list(self._objects)

    # internals ---------------------------------------------------------------------------
    def _index(self, kind: str, key: Key, obj: KubeObject) -> None:
        self._by_ns[kind].setdefault(key[0], set()).add(key)
        if kind not in HIGH_VOLUME:
            for lk, lv in obj.metadata.labels.items():
                self._by_label[kind].setdefault((lk, lv), set()).add(key)
        for ref in obj.metadata.owner_references:
            if ref.uid:
                entry, have = (kind, key), self._by_owner.get(ref.uid)
                if have is None:
                    self._by_owner[ref.uid] = entry
                elif type(have) is tuple:
                    if have != entry:
                        self._by_owner[ref.uid] = {have, entry}
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
            have = self._by_owner.get(ref.uid)
            if have is None:
                continue
            if type(have) is tuple:
                if have == (kind, key):
                    del self._by_owner[ref.uid]
            else:
                have.discard((kind, key))
                if len(have) == 1:
                    self._by_owner[ref.uid] = next(iter(have))

    def _emit(self, kind: str, key: Key, typ: str, at: float | None) -> None:
        self.revision += 1
        if at is not None:
            self.last_event_at = at
        change = Change(self.revision, kind, key[0], key[1], typ)
        self._feed.append(change)
        for fn in self._listeners:
            fn(change)


def _kind_of(obj: KubeObject) -> str:
    for k in KINDS:
        if type(obj) is k.model:
            return k.kind
    raise TypeError(f"not a registered kind: {type(obj).__name__}")


def kind_info(kind: str):
    return BY_KIND[kind]
