"""Live cluster source: one informer per kind (list, then watch with bookmarks) into a Store.

It reads through the cluster client (client.py: connect, the raw GET, the API's errors and their wording).

Responses are read as raw bytes and JSON-decoded once, then validated into the slim models; no
generated-client model round trips. Per kind: Syncing → Synced; Absent when the API is not
served; Forbidden on 403; Error (with "stale since") on other failures, retried with jittered
exponential backoff; a 410 (expired resourceVersion) re-lists.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING, Any

import aiohttp
import msgspec
from orjson import loads as _loads  # several times faster than json on list pages (a dependency)
from pydantic import ValidationError

from .. import heap
from ..identity import ClusterIdentity
from ..model import KINDS, ResourceKind
from ..model.fast import FastCodec, FastObject, ListMeta
from ..model.slim import share_raw, slim
from ..store import WATCH_BOUND, AccessState, Store, StoredObject
from .client import ApiStatusError, ClusterTarget, Deadline, Unreachable, api_version, list_path, status_message, why

log = logging.getLogger(__name__)

LIST_PAGE = 500

# High-volume kinds (engine/model/kinds.py): the store keeps only their slim model, not the decoded
# JSON as well (that copy would be most of the memory at fleet scale). Their YAML view says the raw
# copy is not kept; every other kind keeps it (export, workflows, the object view).
# Kinds whose codec is msgspec: decoded from bytes straight into structs (engine/model/fast.py).
_CODECS = {k.kind: FastCodec(k.model) for k in KINDS if issubclass(k.model, FastObject)}  # k.codec == "msgspec"
FAST_KINDS = frozenset(_CODECS)

if TYPE_CHECKING:
    from ..rules.queue_order import QueuePositions


class _ListHead(msgspec.Struct, gc=False):
    metadata: ListMeta = ListMeta()


_PEEK = msgspec.json.Decoder(_ListHead)


class Gone(Exception):
    """410: the resourceVersion is too old; re-list."""


@dataclass
class KindStatus:
    kind: ResourceKind
    version: str | None = None
    resource_version: str = ""
    relists: int = 0
    watch_restarts: int = 0
    stream_since: float | None = None  # monotonic time the server accepted the current watch
    decode_errors: int = 0
    events: int = 0
    synced: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def served(self) -> str:
        """The version listed and watched (chosen by discovery before either starts)."""
        if self.version is None:
            raise RuntimeError(f"{self.kind.kind}: no served version chosen yet")
        return self.version


class Backoff:
    def __init__(self, base: float = 0.5, cap: float = 30.0, rng: random.Random | None = None) -> None:
        self.base, self.cap, self.n = base, cap, 0
        self.rng = rng or random.Random()

    def reset(self) -> None:
        self.n = 0

    def next(self) -> float:
        self.n += 1
        delay = min(self.cap, self.base * 2 ** (self.n - 1))
        return float(delay * (0.5 + self.rng.random() / 2))  # jitter: 50–100 %


class KubeSource:
    """Keeps a Store in sync with a live API server."""

    def __init__(
        self,
        store: Store,
        target: ClusterTarget,
        kinds: tuple[ResourceKind, ...] = KINDS,
        clock: Callable[[], float] = time.time,
        watch_timeout: int = 300,
        request_timeout: float = 15.0,
        absent_recheck: float = 60.0,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        lock: Any = None,
        on_page: Callable[[str, bytes], None] | None = None,
        watch_bound: float = WATCH_BOUND,
    ) -> None:
        self.store = store
        # Freshness is watch health (engine/store.py): a kind is fresh while its watch is open and an
        # event or a bookmark arrived within `watch_bound` seconds.
        store.watch_bound = watch_bound
        self.target = target
        self.kinds = kinds
        self.clock = clock
        self.watch_timeout = watch_timeout
        self.request_timeout = request_timeout
        self.absent_recheck = absent_recheck
        self.backoff = (backoff_base, backoff_cap)
        # A reader in another thread (the dashboard's derive worker) holds `lock` while it reads
        # the store. Writes never block the event loop on it: they queue and are applied in
        # order, in one batch, as soon as the lock is free (this also coalesces event bursts).
        self.lock = lock
        # Told every list page's bytes as received (kind, body), before they are decoded: a benchmark
        # checks its decode baseline reads exactly these pages.
        self.on_page = on_page
        self._pending: deque[Callable[[], None]] = deque()
        self._flush_handle: asyncio.TimerHandle | None = None
        self.status: dict[str, KindStatus] = {k.kind: KindStatus(k) for k in kinds}
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    # public ------------------------------------------------------------------------------
    async def start(self) -> None:
        await self.probe()
        for k in self.kinds:
            self._tasks.append(asyncio.create_task(self._run(k), name=f"informer:{k.kind}"))

    def _mutate(self, fn: Callable[[], None]) -> None:
        self._pending.append(fn)
        self._flush()

    def _flush(self) -> None:
        self._flush_handle = None
        if not self._pending:
            return
        if self.lock is None or self.lock.acquire(blocking=False):
            try:
                while self._pending:
                    self._pending.popleft()()
            finally:
                if self.lock is not None:
                    self.lock.release()
        elif self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_later(0.01, self._flush)

    def version_of(self, kind: str) -> str | None:
        """The API version this source reads `kind` at (None until discovered): writes use it too."""
        st = self.status.get(kind)
        return st.version if st is not None else None

    @property
    def pending_writes(self) -> int:
        return len(self._pending)

    async def stop(self) -> None:
        self._stopping = True
        if self._flush_handle is not None:
            self._flush_handle.cancel()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def wait_synced(self, within: float) -> bool:
        """Wait until every kind has settled (Synced, Absent, Forbidden or Error at least once)."""
        try:
            await asyncio.wait_for(asyncio.gather(*(s.synced.wait() for s in self.status.values())), within)
            return True
        except TimeoutError:
            return False

    async def probe(self) -> None:
        """One cheap request so an unreachable server fails fast with a clear message. Discovery, not
        /version: /version is public, so only an authenticated path shows a rejected credential
        (else every kind would just turn Error and `status` would exit 0)."""
        try:
            await self._get_json("/api", deadline=min(self.request_timeout, 10.0))
        except (aiohttp.ClientConnectionError, TimeoutError, OSError) as exc:
            raise Unreachable(
                f"context {self.target.context} (server {self.target.server}): cannot connect: {why(exc)}"
            ) from None
        except ApiStatusError as exc:
            if exc.status in (401, 403):
                raise Unreachable(
                    f"context {self.target.context} (server {self.target.server}): credentials rejected ({exc})"
                ) from None

    async def identity(self) -> ClusterIdentity:
        """The cluster's identity: the server URL plus the kube-system Namespace UID, read once. A
        403/404 (or any failure) leaves the URL alone, saying why (never a guessed fingerprint)."""
        server = self.target.server
        try:
            ns = await self._get_json("/api/v1/namespaces/kube-system", deadline=min(self.request_timeout, 10.0))
        except ApiStatusError as exc:
            return ClusterIdentity(server, None, f"kube-system namespace not readable ({exc})")
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
            return ClusterIdentity(server, None, f"kube-system namespace not read: {why(exc)}")
        uid = ((ns.get("metadata") if isinstance(ns, dict) else None) or {}).get("uid")
        if not uid:
            return ClusterIdentity(server, None, "kube-system namespace has no uid")
        return ClusterIdentity(server, str(uid))

    async def pending_workloads(self, *, cq: str | None = None, lq: tuple[str, str] | None = None,
                                limit: int = 1000, offset: int = 0) -> QueuePositions:
        """On demand, for one queue: Kueue's visibility API, else the estimate, else unknown
        (engine/sources/visibility.py). → rules.queue_order.QueuePositions."""
        from .visibility import pending_workloads

        return await pending_workloads(self, cq=cq, lq=lq, limit=limit, offset=offset)

    # HTTP --------------------------------------------------------------------------------
    async def _request(self, path: str, query: list[tuple[str, Any]] | None = None,
                       deadline: Deadline | None = None) -> aiohttp.ClientResponse:
        return await self.target.reads()(path, query, deadline or self.request_timeout)

    async def _get_json(self, path: str, query: list[tuple[str, Any]] | None = None,
                        deadline: Deadline | None = None) -> dict[str, Any]:
        return await self.target.get_json(path, query, deadline or self.request_timeout)

    async def _served_version(self, k: ResourceKind) -> str | None:
        """The first of the kind's versions whose discovery document lists the resource."""
        for version in k.versions:
            path = f"/apis/{k.group}/{version}" if k.group else f"/api/{version}"
            try:
                doc = await self._get_json(path)
            except ApiStatusError as exc:
                if exc.status == 404:
                    continue
                raise
            if any(r.get("name") == k.plural for r in doc.get("resources", [])):
                return version
        return None

    async def list_page(self, k: ResourceKind, token: str | None = None) -> bytes:
        """One raw page of the kind's list as the informers read it (same path and page size, the
        version they chose): what a benchmark decodes elsewhere to compare with the sync."""
        version = self.status[k.kind].version
        if version is None:
            raise ValueError(f"{k.kind}: no served version chosen yet")
        query: list[tuple[str, Any]] = [("limit", LIST_PAGE), *_selected(k)]
        if token:
            query.append(("continue", token))
        return await self.target.get_bytes(list_path(k, version), query, self.request_timeout)

    # informer ----------------------------------------------------------------------------
    async def _run(self, k: ResourceKind) -> None:
        st = self.status[k.kind]
        backoff = Backoff(*self.backoff)
        while not self._stopping:
            try:
                if st.version is None:
                    st.version = await self._served_version(k)
                    if st.version is None:
                        now = self.clock()
                        self._mutate(partial(self.store.replace, k.kind, [], at=now))
                        self._set_access(k.kind, AccessState.ABSENT, "API not served")
                        self._mutate(partial(self.store.forget_watch, k.kind))
                        st.synced.set()
                        await asyncio.sleep(self.absent_recheck)
                        continue
                await self._list(k, st)
                self._watch_state(k, False, heard=True)  # the list is as fresh as now; its watch opens next
                backoff.reset()
                cuts = 0
                while not self._stopping:
                    try:
                        rv0, st.stream_since = st.resource_version, None
                        await self._watch(k, st)
                        cuts = 0
                    except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, ConnectionResetError):
                        # A stream cut mid-watch: resume from the last version without a re-list.
                        # A stream that was accepted and delivered or ran a while was working (proxies
                        # cut long streams): only streams failing early again and again are an error.
                        if st.stream_since is not None and (st.resource_version != rv0
                                                            or time.monotonic() - st.stream_since >= 0.5):
                            cuts = 0
                        cuts += 1
                        if cuts > 5:
                            raise
                        await asyncio.sleep(0.05 * cuts)
                    st.watch_restarts += 1
            except Gone:
                st.relists += 1
                continue
            except asyncio.CancelledError:
                raise
            except ApiStatusError as exc:
                if exc.status == 403:
                    self._set_access(k.kind, AccessState.FORBIDDEN, str(exc), since=self.clock())
                    self._mutate(partial(self.store.forget_watch, k.kind))  # not watched: its access says why
                else:
                    if exc.status == 404:
                        st.version = None  # the API went away: rediscover
                    self._set_access(k.kind, AccessState.ERROR, str(exc), since=self.clock())
                st.synced.set()
                await asyncio.sleep(backoff.next())
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                self._set_access(k.kind, AccessState.ERROR, why(exc), since=self.clock())
                st.synced.set()
                await asyncio.sleep(backoff.next())

    def _set_access(self, kind: str, state: AccessState, message: str = "", since: float | None = None) -> None:
        self._mutate(lambda: self.store.set_access(kind, state, message, since))

    def _watch_state(self, k: ResourceKind, open: bool, heard: bool = False) -> None:
        """The kind's watch health, queued behind the events read before it (heard: now)."""
        at = self.clock() if heard else None
        self._mutate(lambda: self.store.set_watch(k.kind, open, at))

    def _decode(self, k: ResourceKind, st: KindStatus, raw: dict[str, Any]) -> Any | None:
        raw.setdefault("apiVersion", k.api_version if st.version is None else api_version(k, st.served))
        raw.setdefault("kind", k.kind)
        try:
            if k.kind in FAST_KINDS:  # already slim; tolerant of what the fast decoder refused
                return k.model.model_validate(raw)
            # Shared sub-objects, field-sets and strings: a Workload keeps a third of its memory.
            return slim(k.model.model_validate(share_raw(k.kind, raw)))
        except ValidationError as exc:
            st.decode_errors += 1
            meta = raw.get("metadata") or {}
            log.warning("%s %s/%s: undecodable object skipped: %s", k.kind, meta.get("namespace", ""), meta.get("name"),
                        exc.errors()[0].get("msg"))
            return None

    async def _list(self, k: ResourceKind, st: KindStatus) -> None:
        with heap.current().bulk():  # the program's memory policy (taudash.runtime), if any
            await self._list_pages(k, st)

    async def _list_pages(self, k: ResourceKind, st: KindStatus) -> None:
        items: list[tuple[StoredObject, dict[str, Any] | None]] = []
        path = list_path(k, st.served)
        # One page ahead: the next page is asked for as soon as the head of the current one has
        # arrived (the API server writes the continue token before the items), so the server
        # prepares it while this one is still arriving and decoding.
        current: _Page | None = None
        ahead: _Page | None = None

        def start(token: str | None) -> _Page:
            query: list[tuple[str, Any]] = [("limit", LIST_PAGE), *_selected(k)]
            if token:
                query.append(("continue", token))
            page = _Page(token)
            page.body = asyncio.ensure_future(self._get_page(path, query, partial(headed, page)))
            return page

        def headed(page: _Page, token: str | None) -> None:
            page.next = token
            advance()

        def advance() -> None:
            nonlocal ahead
            if ahead is None and current is not None and current.next:
                ahead = start(current.next)

        current = start(None)
        rv = ""
        try:
            while True:
                body = await current.body
                if self.on_page is not None:
                    self.on_page(k.kind, body)
                page_rv, cont = self._ingest_page(k, st, body, items)
                rv = page_rv or rv
                if not cont:
                    break
                if ahead is None or ahead.token != cont:  # the head could not tell: fetch what the page says
                    if ahead is not None:
                        ahead.cancel()
                    ahead = start(cont)
                current, ahead = ahead, None
                advance()
        finally:
            for page in (current, ahead):
                if page is not None:
                    page.cancel()
        now = self.clock()
        self._mutate(lambda: self.store.replace(k.kind, items, at=now))
        self._set_access(k.kind, AccessState.SYNCED)
        st.resource_version = rv
        st.synced.set()

    async def _get_page(self, path: str, query: list[tuple[str, Any]], headed: Callable[[str | None], None]) -> bytes:
        """A list page's body; `headed` is told its continue token (None: none, or the head cannot
        tell) once the head of the body has arrived, before the rest is read."""
        resp = await self._request(path, query)
        try:
            if resp.status >= 400:
                raise ApiStatusError(resp.status, status_message(await resp.read()))
            head = b""
            while _ITEMS not in head and len(head) < _HEAD_MAX:
                chunk = await resp.content.readany()
                if not chunk:
                    break
                head += chunk
            headed(_peek_continue(head))
            rest = await resp.content.read()
            return head + rest if rest else head
        finally:
            resp.release()

    def _ingest_page(self, k: ResourceKind, st: KindStatus, body: bytes,
                     items: list[tuple[StoredObject, dict[str, Any] | None]]) -> tuple[str, str | None]:
        """One list page's objects appended to `items` (object, raw copy or None); → the page's
        resourceVersion and continue token."""
        codec = _CODECS.get(k.kind)
        fast = codec.page(body, api_version(k, st.served)) if codec is not None else None
        if fast is not None:  # typed objects straight from the bytes, in one pass
            objs, rv, cont = fast
            items.extend(zip(objs, repeat(None)))
            return rv, cont
        doc = _loads(body)
        keep_raw = not k.high_volume
        for raw in doc.get("items") or []:
            obj = self._decode(k, st, raw)
            if obj is not None:
                items.append((obj, raw if keep_raw else None))
        meta = doc.get("metadata") or {}
        return meta.get("resourceVersion", ""), meta.get("continue")

    async def _watch(self, k: ResourceKind, st: KindStatus) -> None:
        timeout = self.watch_timeout + random.randint(0, 30)
        query = [
            ("watch", "1"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", st.resource_version),
            ("timeoutSeconds", timeout),
            *_selected(k),
        ]
        # No total timeout: the server ends the watch; a silent connection is cut by sock_read.
        client_timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.request_timeout, sock_read=timeout + 60)
        resp = await self._request(list_path(k, st.served), query, client_timeout)
        try:
            if resp.status == 410:
                raise Gone()
            if resp.status >= 400:
                raise ApiStatusError(resp.status, status_message(await resp.read()))
            st.stream_since = time.monotonic()
            self._watch_state(k, True, heard=True)
            buf = b""
            async for chunk in resp.content.iter_any():
                buf += chunk
                if b"\n" not in chunk:
                    continue
                lines = buf.split(b"\n")  # every complete event at once: no re-copy of the rest per line
                buf = lines.pop()
                for line in lines:
                    if line.strip():
                        self._event(k, st, line)
                self._watch_state(k, True, heard=True)  # events and bookmarks alike: the stream lives
            if buf.strip():
                self._event(k, st, buf)
        finally:
            resp.release()
            self._watch_state(k, False)

    def _event(self, k: ResourceKind, st: KindStatus, line: bytes) -> None:
        codec = _CODECS.get(k.kind)
        fast = codec.event(line, api_version(k, st.served)) if codec is not None else None
        if fast is None or fast[0] not in ("ADDED", "MODIFIED", "DELETED"):
            self._apply(k, st, _loads(line))  # bookmarks, errors and what the fast decoder refused
            return
        typ, obj = fast
        meta = obj.metadata
        self._record(k, st, typ, meta.name, meta.namespace, obj, None, meta.resource_version)

    def _apply(self, k: ResourceKind, st: KindStatus, event: dict[str, Any]) -> None:
        typ = event.get("type")
        raw = event.get("object") or {}
        if typ == "ERROR":
            code = raw.get("code")
            if code == 410:
                raise Gone()
            raise ApiStatusError(int(code or 500), raw.get("message", ""))
        meta = raw.get("metadata") or {}
        rv = meta.get("resourceVersion")
        if typ == "BOOKMARK":
            if rv:
                st.resource_version = rv
            return
        obj = self._decode(k, st, raw) if typ in ("ADDED", "MODIFIED") else None
        self._record(k, st, typ, meta.get("name", ""), meta.get("namespace"), obj,
                     None if k.high_volume else raw, rv)

    def _record(self, k: ResourceKind, st: KindStatus, typ: str | None, name: str, namespace: str | None,
                obj: Any, raw: dict[str, Any] | None, rv: str | None) -> None:
        """One watch event into the store (queued behind readers), and the version to resume from."""
        st.events += 1
        now = self.clock()
        if typ == "DELETED":
            self._mutate(lambda: None if self.store.delete(k.kind, name, namespace, at=now) else None)
        elif obj is not None:
            self._mutate(lambda: self.store.upsert(obj, raw=raw, at=now))
        if rv:
            st.resource_version = rv


_ITEMS = b'"items":'
_HEAD_MAX = 64 * 1024  # a list's metadata is a few hundred bytes: past this, the head cannot tell


class _Page:
    """One list page being fetched: the continue token it was asked with, the next one once its head
    has arrived."""

    def __init__(self, token: str | None) -> None:
        self.token = token
        self.next: str | None = None
        self.body: asyncio.Future[bytes]

    def cancel(self) -> None:
        if self.body.done() and not self.body.cancelled():
            self.body.exception()  # retrieved: a fetch that failed after an earlier error is moot
        self.body.cancel()


def _peek_continue(body: bytes) -> str | None:
    """The continue token of a list page, read from the part before its items (the API server writes
    `metadata` first) without decoding the page; None when there is none or the page is laid out
    otherwise (the caller then uses the token the full decode finds)."""
    at = body.find(_ITEMS)
    if at <= 0 or body[at - 1:at] != b",":
        return None
    try:
        head: _ListHead = _PEEK.decode(body[:at] + b'"items":[]}')
        return head.metadata.continue_
    except msgspec.DecodeError:
        return None


def _selected(k: ResourceKind) -> list[tuple[str, Any]]:
    """The kind's label selector as a query parameter (lists and watches alike), when it has one."""
    return [("labelSelector", k.label_selector)] if k.label_selector else []
