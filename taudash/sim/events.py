"""core/v1 Events the simulated controllers emit about the objects they act on (what `kubectl describe`
and the dashboard's object detail read).

Like client-go's recorder, an Event repeated for the same object (same type, reason, message and
component) is not a new object: its `count` and `lastTimestamp` move. Events expire after `ttl`
simulated seconds (the apiserver's --event-ttl, one hour by default) and at most `limit` are kept
(the oldest go first), so a long `sim serve` holds a bounded number.

Events are written straight to the ObjectDB (HTTP watchers see them), not through the controllers'
logged Writer: the write log stays the log of the cluster's own objects.
"""

from __future__ import annotations

from typing import Any

from taudash.sim.clock import SimClock, rfc3339
from taudash.sim.errors import ApiError
from taudash.sim.objects import ObjectDB

Obj = dict[str, Any]
NORMAL, WARNING = "Normal", "Warning"
DEFAULT_TTL = 3600.0
DEFAULT_LIMIT = 5000


class EventRecorder:
    def __init__(self, db: ObjectDB, clock: SimClock, *, ttl: float = DEFAULT_TTL, limit: int = DEFAULT_LIMIT) -> None:
        self.db = db
        self.clock = clock
        self.ttl = ttl
        self.limit = limit
        self._names: dict[tuple[str, ...], tuple[str, str]] = {}  # aggregation key → (namespace, name)
        self._last: dict[tuple[str, str], float] = {}  # (namespace, name) → last seen, oldest first
        self._pruned_at = clock.now()
        self.recorded = 0  # events recorded (new or repeated)

    def record(self, obj: Obj | None, type_: str, reason: str, message: str, component: str) -> None:
        """One Event about `obj` (a raw object as stored); nothing when it is gone or has no identity."""
        if obj is None:
            return
        meta = obj.get("metadata") or {}
        name, uid = meta.get("name"), meta.get("uid")
        if not name or not uid:
            return
        now = self.clock.now()
        stamp = rfc3339(now)
        namespace = meta.get("namespace") or "default"  # a cluster-scoped object's Events live in default
        key = (uid, type_, reason, message, component)
        self.recorded += 1
        where = self._names.get(key)
        if where is not None:
            cur = self.db.peek("Event", where[1], where[0])
            if cur is not None:
                try:
                    self.db.patch_merge("Event", where[1], {"count": int(cur.get("count") or 1) + 1,
                                                            "lastTimestamp": stamp}, where[0])
                except ApiError:
                    return
                self._last.pop(where, None)
                self._last[where] = now
                return
        event_name = self._name(namespace, str(name), now)
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": event_name, "namespace": namespace},
            "involvedObject": {"kind": obj.get("kind", ""), "apiVersion": obj.get("apiVersion", ""),
                               "namespace": meta.get("namespace") or "", "name": name, "uid": uid,
                               "resourceVersion": meta.get("resourceVersion", "")},
            "type": type_, "reason": reason, "message": message,
            "source": {"component": component}, "reportingComponent": component, "reportingInstance": component,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }
        try:
            self.db.create(body, resource="Event")
        except ApiError:
            return
        self._names[key] = (namespace, event_name)
        self._last[(namespace, event_name)] = now
        self._prune(now)

    def _name(self, namespace: str, name: str, now: float) -> str:
        base = f"{name[:200]}.{int(now * 1e9):x}"
        out, n = base, 0
        while self.db.peek("Event", out, namespace) is not None:
            n += 1
            out = f"{base}{n:x}"
        return out

    def _prune(self, now: float) -> None:
        doomed = []
        if now - self._pruned_at >= 60:
            self._pruned_at = now
            doomed = [k for k, t in self._last.items() if now - t > self.ttl]
        over = len(self._last) - len(doomed) - self.limit
        if over > 0:
            expired = set(doomed)
            doomed += [k for k in self._last if k not in expired][:over]
        if not doomed:
            return
        gone = set(doomed)
        for ns, name in doomed:
            self._last.pop((ns, name), None)
            try:
                self.db.delete("Event", name, ns)
            except ApiError:
                pass
        self._names = {k: v for k, v in self._names.items() if v not in gone}
