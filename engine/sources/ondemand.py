"""On-demand reads for one object the operator is looking at: its whole document (a GET) and its
Events (a list, then a watch, for as long as the caller keeps the watch running).

The informers keep only the fields taudash reads of high-volume kinds (Workloads, Jobs, Nodes,
CSINodes) and never read Events at all: a detail screen asks here, for one object, only while it is
open. Every call is a read (GET, LIST, WATCH); nothing here writes.

Events are core/v1 Events (`/api/v1/…/events`) selected with a field selector on
`involvedObject.{kind,name,namespace,uid}` — what `kubectl describe` reads; events.k8s.io/v1 serves
the same objects under other field names. A namespaced object's Events live in its namespace; a
cluster-scoped object's (a Node, a ClusterQueue) in any namespace, so they are listed across all.

Access is reported, never hidden: Forbidden is `EventsState.access == "Forbidden"` (the screen says
so), never an empty list that reads as "no events".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import aiohttp
from orjson import loads as _loads

from ..model import BY_KIND
from ..model.kinds import NEVER_READ
from ..rules.base import ObjRef
from .client import ApiStatusError, ClusterTarget, status_message, why

# Access words (the store's AccessState values, plus the two only on-demand reads have).
SYNCED, FORBIDDEN, ERROR, NOT_FOUND = "Synced", "Forbidden", "Error", "NotFound"
LOADING = "Loading"
EVENTS_LIMIT = 200  # newest first: more than any screen shows; older ones are counted, not kept
LOG_TAIL = 1000  # a log read asks for the newest lines only (kubectl logs reads all; a screen shows these)


@dataclass(frozen=True)
class FullObject:
    """One object as the API server holds it now (managedFields left out, as kubectl does)."""

    ref: ObjRef
    access: str  # Synced | Forbidden | NotFound | Error
    document: dict[str, Any] | None = None
    message: str = ""
    fetched_at: float | None = None  # epoch seconds


@dataclass(frozen=True)
class ObjectEvent:
    type: str  # Normal | Warning
    reason: str
    message: str
    count: int
    last: datetime | None  # lastTimestamp, else eventTime, else creationTimestamp
    first: datetime | None
    source: str  # reportingController or source.component
    name: str  # the Event object's name (a stable row key)
    involved: str = ""  # the object it is about, "Kind/name" (the namespace's and the cluster's Events show it)
    namespace: str = ""  # the Event's own namespace


@dataclass(frozen=True)
class EventsState:
    """What is known about one object's Events right now."""

    ref: ObjRef
    access: str  # Loading | Synced | Forbidden | Error | NotFound (the events API is not served)
    events: tuple[ObjectEvent, ...] = ()  # newest first
    message: str = ""  # why, when access is not Synced
    since: float | None = None  # when it last changed state (epoch seconds)
    dropped: int = 0  # events beyond EVENTS_LIMIT, not kept

    @property
    def known(self) -> bool:
        """The list is what the cluster holds (an empty one then means "no events")."""
        return self.access == SYNCED


class OnDemand(Protocol):
    """What a screen asks of the live cluster for one object (Session.on_demand)."""

    namespace: str  # the kubeconfig context's namespace ("default" when it names none, as kubectl)

    async def full_object(self, ref: ObjRef) -> FullObject: ...

    async def watch_events(self, ref: ObjRef, uid: str | None, on_change: Callable[[EventsState], None]) -> None:
        """List then watch `ref`'s Events, calling `on_change` with each new state, until cancelled."""
        ...

    async def watch_namespace_events(self, namespace: str | None,
                                     on_change: Callable[[EventsState], None]) -> None:
        """List then watch every Event of a namespace (None: the cluster's), as `watch_events` does."""
        ...

    async def stream_log(self, ref: ObjRef, options: LogOptions, on_lines: Callable[[list[str]], None]) -> LogEnd:
        """Read a Pod's log, handing its lines to `on_lines` as they arrive (with `options.follow`, until the
        container ends or the caller cancels); how the read ended."""
        ...


@dataclass(frozen=True)
class LogOptions:
    """What a log read asks for (the query of `GET .../pods/NAME/log`)."""

    container: str = ""  # "" for a Pod with one container
    follow: bool = False
    previous: bool = False  # the previous, terminated instance of the container
    timestamps: bool = False
    tail_lines: int | None = LOG_TAIL

    def query(self) -> list[tuple[str, Any]]:
        q: list[tuple[str, Any]] = [("container", self.container)] if self.container else []
        q += [(k, "true") for k, on in (("follow", self.follow), ("previous", self.previous),
                                         ("timestamps", self.timestamps)) if on]
        return q + ([("tailLines", self.tail_lines)] if self.tail_lines is not None else [])


@dataclass(frozen=True)
class LogEnd:
    """How a log read ended: Synced (the server ended it: all read, or the container stopped), Forbidden,
    NotFound, Error (a 400 carries the server's reason: "container … is waiting to start")."""

    access: str
    message: str = ""
    status: int = 0  # the HTTP status of a refusal


def _stamp(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def parse_event(raw: dict[str, Any]) -> ObjectEvent:
    """One core/v1 Event (tolerant: a field that is missing stays empty)."""
    meta = raw.get("metadata") or {}
    series = raw.get("series") or {}
    last = _stamp(raw.get("lastTimestamp")) or _stamp(series.get("lastObservedTime")) or _stamp(raw.get("eventTime")) \
        or _stamp(meta.get("creationTimestamp"))
    first = _stamp(raw.get("firstTimestamp")) or _stamp(raw.get("eventTime")) or last
    count = raw.get("count") or series.get("count") or 1
    src = raw.get("reportingComponent") or (raw.get("source") or {}).get("component") or ""
    obj = raw.get("involvedObject") or raw.get("regarding") or {}
    involved = f"{obj.get('kind') or '?'}/{obj.get('name') or '?'}" if obj else ""
    return ObjectEvent(
        type=str(raw.get("type") or ""), reason=str(raw.get("reason") or ""), message=str(raw.get("message") or ""),
        count=int(count) if isinstance(count, int) else 1, last=last, first=first, source=str(src),
        name=str(meta.get("name") or ""), involved=involved, namespace=str(meta.get("namespace") or ""),
    )


def newest_first(events: dict[str, ObjectEvent]) -> tuple[tuple[ObjectEvent, ...], int]:
    """Events newest first (ties by name), at most EVENTS_LIMIT; and how many were left out."""
    floor = datetime.min.replace(tzinfo=UTC)
    ordered = sorted(events.values(), key=lambda e: (e.last or floor, e.name), reverse=True)
    return tuple(ordered[:EVENTS_LIMIT]), max(0, len(ordered) - EVENTS_LIMIT)


def event_selector(ref: ObjRef, uid: str | None) -> str:
    """The field selector for `ref`'s Events (core/v1 field names)."""
    parts = [f"involvedObject.kind={ref.kind}", f"involvedObject.name={ref.name}"]
    if ref.namespace:
        parts.append(f"involvedObject.namespace={ref.namespace}")
    if uid:
        parts.append(f"involvedObject.uid={uid}")
    return ",".join(parts)


class KubeOnDemand:
    """OnDemand over a live API server (the KubeSource's target and the versions it discovered)."""

    def __init__(self, target: ClusterTarget, version_of: Callable[[str], str | None] | None = None,
                 clock: Callable[[], float] = time.time, request_timeout: float = 15.0,
                 watch_timeout: int = 300, retry: float = 5.0) -> None:
        self.target = target
        self.version_of = version_of or (lambda kind: None)
        self.clock = clock
        self.request_timeout = request_timeout
        self.watch_timeout = watch_timeout
        self.retry = retry  # seconds between attempts after an error (Forbidden is not retried)
        self.requests = 0  # requests sent (tests and the bench count them)
        self.namespace = getattr(target, "namespace", "") or "default"  # the context's, as kubectl picks it

    @classmethod
    def for_source(cls, source: Any) -> KubeOnDemand:
        """The on-demand reader of a started KubeSource (same credentials, same discovered versions)."""
        return cls(source.target, source.version_of, source.clock, source.request_timeout)

    # HTTP ----------------------------------------------------------------------------------
    async def _request(self, path: str, query: list[tuple[str, Any]], deadline: Any) -> aiohttp.ClientResponse:
        self.requests += 1
        resp: aiohttp.ClientResponse = await self.target.api_client.call_api(
            path, "GET", query_params=query, header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"], _preload_content=False, _return_http_data_only=True,
            _request_timeout=deadline)
        return resp

    async def _get(self, path: str, query: list[tuple[str, Any]] | None = None) -> dict[str, Any]:
        resp = await self._request(path, query or [], self.request_timeout)
        try:
            body = await resp.read()
            if resp.status >= 400:
                raise ApiStatusError(resp.status, status_message(body))
        finally:
            resp.release()
        doc: dict[str, Any] = _loads(body)
        return doc

    # the whole object ------------------------------------------------------------------------
    def object_path(self, ref: ObjRef) -> str:
        k = BY_KIND[ref.kind]
        version = self.version_of(ref.kind) or k.versions[0]
        base = f"/apis/{k.group}/{version}" if k.group else f"/api/{version}"
        ns = f"/namespaces/{ref.namespace}" if k.namespaced and ref.namespace else ""
        return f"{base}{ns}/{k.plural}/{ref.name}"

    async def full_object(self, ref: ObjRef) -> FullObject:
        if ref.kind in NEVER_READ or ref.kind not in BY_KIND:
            return FullObject(ref, ERROR, None, f"{ref.kind} is not a kind taudash reads")
        try:
            doc = await self._get(self.object_path(ref))
        except ApiStatusError as exc:
            state = FORBIDDEN if exc.status in (401, 403) else NOT_FOUND if exc.status == 404 else ERROR
            return FullObject(ref, state, None, str(exc), self.clock())
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
            return FullObject(ref, ERROR, None, why(exc), self.clock())
        meta = doc.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
        return FullObject(ref, SYNCED, doc, "", self.clock())

    # events -----------------------------------------------------------------------------------
    def events_path(self, ref: ObjRef) -> str:
        k = BY_KIND.get(ref.kind)
        if k is not None and k.namespaced and ref.namespace:
            return f"/api/v1/namespaces/{ref.namespace}/events"
        return "/api/v1/events"

    async def watch_events(self, ref: ObjRef, uid: str | None, on_change: Callable[[EventsState], None]) -> None:
        await self._watch_events(self.events_path(ref), event_selector(ref, uid), ref, on_change)

    async def watch_namespace_events(self, namespace: str | None,
                                     on_change: Callable[[EventsState], None]) -> None:
        path = f"/api/v1/namespaces/{namespace}/events" if namespace else "/api/v1/events"
        ref = ObjRef(kind="Namespace", namespace=None, name=namespace or "")
        await self._watch_events(path, "", ref, on_change)

    async def _watch_events(self, path: str, selector: str, ref: ObjRef,
                            on_change: Callable[[EventsState], None]) -> None:
        events: dict[str, ObjectEvent] = {}
        state = _Tracker(ref, on_change, self.clock)
        state.emit(LOADING, events)
        while True:
            try:
                doc = await self._get(path, [*_selected(selector), ("limit", 500)])
                events.clear()
                for raw in doc.get("items") or ():
                    e = parse_event(raw)
                    events[e.name] = e
                rv = str((doc.get("metadata") or {}).get("resourceVersion") or "")
                state.emit(SYNCED, events)
                await self._watch(path, selector, rv, events, state)
            except ApiStatusError as exc:
                if exc.status in (401, 403):
                    state.emit(FORBIDDEN, {}, str(exc))
                    return  # RBAC does not change under a screen: reopening the object asks again
                if exc.status == 410:
                    continue  # expired resourceVersion: list again
                state.emit(NOT_FOUND if exc.status == 404 else ERROR, events, str(exc))
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                state.emit(ERROR, events, why(exc))
            await asyncio.sleep(self.retry)

    async def _watch(self, path: str, selector: str, rv: str, events: dict[str, ObjectEvent],
                     state: _Tracker) -> None:
        """Watch until the server ends the stream; the caller lists again (cheap: one object's Events)."""
        query: list[tuple[str, Any]] = [("watch", "1"), *_selected(selector), ("resourceVersion", rv),
                                        ("allowWatchBookmarks", "true"), ("timeoutSeconds", self.watch_timeout)]
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.request_timeout,
                                        sock_read=self.watch_timeout + 60)
        resp = await self._request(path, query, timeout)
        try:
            if resp.status >= 400:
                raise ApiStatusError(resp.status, status_message(await resp.read()))
            buf = b""
            async for chunk in resp.content.iter_any():
                buf += chunk
                *lines, buf = buf.split(b"\n")
                changed = False
                for line in lines:
                    if line.strip():
                        changed |= self._event(line, events)
                if changed:
                    state.emit(SYNCED, events)
        finally:
            resp.release()

    @staticmethod
    def _event(line: bytes, events: dict[str, ObjectEvent]) -> bool:
        ev = _loads(line)
        typ, raw = ev.get("type"), ev.get("object") or {}
        if typ == "ERROR":
            code = int(raw.get("code") or 500)
            raise ApiStatusError(code, str(raw.get("message", "")))
        if typ not in ("ADDED", "MODIFIED", "DELETED"):
            return False  # bookmarks
        e = parse_event(raw)
        if typ == "DELETED":
            return events.pop(e.name, None) is not None
        events[e.name] = e
        return True


    # logs ---------------------------------------------------------------------------------------
    async def stream_log(self, ref: ObjRef, options: LogOptions, on_lines: Callable[[list[str]], None]) -> LogEnd:
        path = f"/api/v1/namespaces/{ref.namespace}/pods/{ref.name}/log"
        timeout: Any = (aiohttp.ClientTimeout(total=None, sock_connect=self.request_timeout, sock_read=None)
                        if options.follow else self.request_timeout)
        try:
            resp = await self._request(path, options.query(), timeout)
            try:
                if resp.status >= 400:
                    status = resp.status
                    message = status_message(await resp.read())
                    access = FORBIDDEN if status in (401, 403) else NOT_FOUND if status == 404 else ERROR
                    return LogEnd(access, message, status)
                buf = b""
                async for chunk in resp.content.iter_any():
                    buf += chunk
                    *done, buf = buf.split(b"\n")
                    if done:
                        on_lines([line.decode(errors="replace") for line in done])
                if buf:
                    on_lines([buf.decode(errors="replace")])
            finally:
                resp.release()
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
            return LogEnd(ERROR, why(exc))
        return LogEnd(SYNCED)


def _selected(selector: str) -> list[tuple[str, Any]]:
    return [("fieldSelector", selector)] if selector else []


@dataclass
class _Tracker:
    ref: ObjRef
    on_change: Callable[[EventsState], None]
    clock: Callable[[], float]
    access: str = ""
    since: float | None = None
    last: EventsState | None = field(default=None)

    def emit(self, access: str, events: dict[str, ObjectEvent], message: str = "") -> None:
        if access != self.access:
            self.access, self.since = access, self.clock()
        shown, dropped = newest_first(events)
        st = EventsState(self.ref, access, shown, message, self.since, dropped)
        if st != self.last:
            self.last = st
            self.on_change(st)
