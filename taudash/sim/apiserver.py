"""A Kubernetes API server on loopback over an ObjectDB: what kubectl and kubernetes-asyncio need.

Discovery (`/version`, `/api`, `/apis`, APIResourceLists), list (limit/continue, label and field
selectors), watch (chunked JSON events, bookmarks, 410 for expired resourceVersions), get,
create, update, merge and JSON patch, delete, the /status subresource, `dryRun=All`,
optimistic concurrency, `kind: Status` errors, and a minimal `meta.k8s.io/v1` Table for
kubectl's default output. Bound to 127.0.0.1 only, behind a bearer token.

Tests reach in through `faults` (403/5xx/latency/dropped watches/410 storms), `writes` (write
requests received, by verb: read-only mode asserts it stays empty) and `requests` (a log).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import bisect
import hmac
import json
import math
import secrets
import ssl
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aiohttp import web
from orjson import dumps as _dumps

from taudash.engine.text import kube_duration
from taudash.sim import logs, protowire, visibility
from taudash.sim.errors import (
    ApiError,
    BadRequest,
    Forbidden,
    Gone,
    MethodNotAllowed,
    NotFound,
    Unauthorized,
    UnsupportedMediaType,
)
from taudash.sim.faults import Faults
from taudash.sim.objects import Obj, ObjectDB, WatchEvent, labelled
from taudash.sim.openapi import OpenApi
from taudash.sim.rbac import Attributes, Authorizer, service_account_user
from taudash.sim.resources import Resource
from taudash.sim.selectors import parse_field_selector, parse_label_selector

LOOPBACK = "127.0.0.1"
KUBE_VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-taudash-sim", "gitCommit": "0" * 40,
                "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.0",
                "compiler": "gc", "platform": "linux/amd64"}
# Seconds between BOOKMARK events on an idle watch that asked for them (a real API server sends one about
# every minute): the informer counts a watch fresh while they arrive (engine/store.py, WATCH_BOUND).
BOOKMARK_INTERVAL = 15.0
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
AUTHENTICATION_GROUP = "authentication.k8s.io"
SELF_REVIEW_PATH = f"/apis/{AUTHENTICATION_GROUP}/v1/selfsubjectreviews"
RULES_REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
TOKEN_SECONDS = 3600  # a TokenRequest's default lifetime (kubectl create token); the simulator never expires one
_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
_STATUS_VERBS = ["get", "patch", "update"]
_MERGE = "application/merge-patch+json"
_JSON_PATCH = "application/json-patch+json"
_STRATEGIC = "application/strategic-merge-patch+json"
_APPLY = "application/apply-patch+yaml"
_TRUE = ("true", "1")


@dataclass
class RequestRecord:
    """One request, logged on receipt (so open watches show up); `status` is 0 until answered."""

    method: str
    path: str
    query: str
    verb: str  # get, list, watch, create, update, patch, delete, deletecollection, discovery
    resource: str | None  # `plural.group`
    subresource: str | None
    namespace: str | None
    name: str | None
    status: int
    dry_run: bool
    at: float  # epoch seconds


@dataclass(frozen=True)
class SimUser:
    """Whom a bearer token authenticates as (SelfSubjectReview answers it)."""

    name: str
    groups: tuple[str, ...] = ("system:authenticated",)


# The kubeconfig's own token: the cluster's administrator. `add_user` gives other operators their own.
ADMIN = SimUser("sim-admin", ("system:masters", "system:authenticated"))
OPERATOR_GROUPS = ("taudash:operators", "system:authenticated")


@dataclass(frozen=True)
class _Target:
    resource: Resource
    version: str
    namespace: str | None
    name: str | None
    subresource: str | None


@dataclass(frozen=True)
class _OpenApiDoc:
    path: str  # "v2", "v3" or "v3/<api/v1 | apis/group/version>"


class _Watch:
    """One open watch stream, so faults and shutdown can end it."""

    def __init__(self, request: web.Request, sub: Any) -> None:
        self.request = request
        self.sub = sub

    def end(self, abort: bool) -> None:
        self.sub.close()
        if abort and self.request.transport is not None:
            self.request.transport.close()


class ApiServer:
    def __init__(self, db: ObjectDB, *, host: str = LOOPBACK, port: int = 0, token: str | None = None,
                 ray: bool = True, faults: Faults | None = None, bookmark_interval: float = BOOKMARK_INTERVAL,
                 watch_timeout: float = 1800.0, gone_as: str = "event", log_size: int = 10_000,
                 ssl_context: ssl.SSLContext | None = None, rbac: bool = False, log_every: float = logs.EVERY) -> None:
        if host != LOOPBACK:
            raise ValueError(f"the simulated API server binds {LOOPBACK} only, not {host!r}")
        if gone_as not in ("event", "http"):
            raise ValueError("gone_as is 'event' (200 + ERROR event, like the watch cache) or 'http' (HTTP 410)")
        self.db = db
        self.host = host
        self.ssl_context = ssl_context
        self._requested_port = port
        self.port: int | None = None
        self.token = token or secrets.token_urlsafe(32)
        self.users: dict[str, SimUser] = {self.token: ADMIN}  # bearer token -> its user
        # With rbac, the stored Roles and bindings decide every request but the administrator's (sim/rbac.py).
        self.rbac: Authorizer | None = Authorizer(db) if rbac else None
        self.disabled_groups: set[str] = set() if ray else {"ray.io"}
        self.disabled_resources: set[tuple[str, str]] = set()
        self.faults = faults or Faults(db.registry)
        self.faults._on_drop.append(self._drop_watches)
        self.faults._on_expire.append(db.compact)
        self.bookmark_interval = bookmark_interval
        self.log_every = log_every  # seconds between two lines of a container's log (taudash/sim/logs.py)
        self.watch_timeout = watch_timeout
        self.gone_as = gone_as
        self.writes: Counter[str] = Counter()
        self.requests: deque[RequestRecord] = deque(maxlen=log_size)
        self._watches: set[_Watch] = set()
        self._watch_changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.openapi = OpenApi(self._served_versions, self._crd_schema)

    # --- lifecycle --------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("the API server is not started")
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://{self.host}:{self.port}"

    async def start(self) -> None:
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self._requested_port, ssl_context=self.ssl_context)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        self._drop_watches(False)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def restart(self, down: float | asyncio.Event = 0.0) -> None:
        """Stop serving and serve again on the same port after `down` seconds (or once the event `down` is
        set: a test holds the outage until it has seen it): an API server restart as clients see it
        (connections cut, refused while down; the data is kept)."""
        port = self.port
        await self.stop()
        if isinstance(down, asyncio.Event):
            await down.wait()
        elif down:
            await asyncio.sleep(down)
        self._requested_port = port or 0
        await self.start()

    def add_user(self, name: str, groups: tuple[str, ...] = OPERATOR_GROUPS, token: str | None = None) -> str:
        """Another identity on this cluster: a bearer token of its own, answered by SelfSubjectReview."""
        token = token or secrets.token_urlsafe(32)
        self.users[token] = SimUser(name, tuple(groups))
        return token

    def service_account_token(self, namespace: str, name: str) -> str:
        """A bearer token of the ServiceAccount (what the TokenRequest subresource hands out)."""
        user, groups = service_account_user(namespace, name)
        return self.add_user(user, groups)

    def set_group_enabled(self, group: str, enabled: bool) -> None:
        """Install or remove an API group at runtime (ray.io for the optional-API paths)."""
        (self.disabled_groups.discard if enabled else self.disabled_groups.add)(group)
        if not enabled:
            self._end_watches(lambda key: key[0] == group)

    def set_resource_enabled(self, resource: str | Resource, enabled: bool) -> None:
        """Serve or hide one resource (discovery and every path answer 404 while hidden)."""
        key = self.db.registry.resolve(resource).key
        (self.disabled_resources.discard if enabled else self.disabled_resources.add)(key)
        if not enabled:
            self._end_watches(lambda k: k == key)

    @staticmethod
    def _versions_of(r: Resource) -> tuple[str, ...]:
        """Served versions, preferred first (kueue.x-k8s.io: as the Kueue release played serves them)."""
        return r.versions

    def _end_watches(self, pred: Callable[[tuple[str, str]], bool]) -> None:
        for w in list(self._watches):
            if any(pred(k) for k in (w.sub.resources or ())):
                w.end(False)

    def open_watches(self, resource: str | Resource | None = None) -> int:
        """How many watch streams are open (on one resource, or on all)."""
        key = self.db.registry.resolve(resource).key if resource is not None else None
        return sum(1 for w in self._watches if not w.sub.closed and (key is None or key in (w.sub.resources or ())))

    async def wait_for_watches(self, count: int = 1, resource: str | Resource | None = None,
                               within: float = 5.0) -> None:
        """Wait until `count` watches are open, e.g. until an informer under test has synced."""
        async with asyncio.timeout(within), self._watch_changed:
            await self._watch_changed.wait_for(lambda: self.open_watches(resource) >= count)

    async def _notify_watches(self) -> None:
        async with self._watch_changed:
            self._watch_changed.notify_all()

    def reset_counters(self) -> None:
        self.writes.clear()
        self.requests.clear()

    def _drop_watches(self, abort: bool) -> None:
        for w in list(self._watches):
            w.end(abort)

    # --- the one handler ------------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.path.rstrip("/") == ACCESS_REVIEW_PATH:
            return await self._access_review(request)
        if request.path.rstrip("/") == SELF_REVIEW_PATH and AUTHENTICATION_GROUP not in self.disabled_groups:
            return await self._self_review(request)
        if request.path.rstrip("/") == RULES_REVIEW_PATH:
            return await self._rules_review(request)
        q = request.rel_url.query
        method = request.method
        target: _Target | None = None
        route_error: ApiError | None = None
        discovery: Callable[[], Any] | None = None
        try:
            parsed = self._route(request.path)
            if isinstance(parsed, _Target):
                target = parsed
            else:
                discovery = parsed
        except ApiError as exc:
            route_error = exc
        verb = self._verb(method, target, q) if discovery is None else "discovery"
        if verb in WRITE_VERBS:
            self.writes[verb] += 1  # counted on receipt: read-only mode must send none at all
        t = target
        record = RequestRecord(
            method, request.path, request.query_string, verb, t.resource.qualified if t else None,
            t.subresource if t else None, t.namespace if t else None, t.name if t else None, 0, "dryRun" in q,
            time.time())
        self.requests.append(record)
        status = 500
        try:
            if not _public(request.path):
                user = self._authenticate(request)
                if self.rbac is not None and target is not None:
                    self.rbac.check(user.name, user.groups, _attributes(verb, target))
            if route_error is not None:
                raise route_error
            delay = self.faults.delay(target.resource if target else None)
            if delay:
                await asyncio.sleep(delay)
            if discovery is not None:
                fault = self.faults.check(None, "discovery", None, None)
                if fault is not None:
                    raise fault
                if method != "GET":
                    raise MethodNotAllowed("the server does not allow this method on the requested resource "
                                           f"({method})")
                out = discovery()
                resp = (self._openapi(out, request) if isinstance(out, _OpenApiDoc) else self._json(out))
            else:
                assert target is not None
                fault = self.faults.check(target.resource, verb, target.namespace, target.name)
                if fault is not None:
                    raise fault
                if verb == "watch" and target.resource.group != visibility.GROUP:  # visibility: 405 below
                    record.status = status = 200
                    return await self._watch(request, target)
                if target.subresource == "log":  # plain text, streamed with follow
                    log = await self._log(request, target, verb)
                    status = log.status
                    return log
                self.db.pruned = []
                resp = await self._dispatch(request, target, verb)
                if self.db.pruned and q.get("fieldValidation") != "Ignore":  # Warn, the default
                    for field in self.db.pruned:
                        resp.headers.add("Warning", f'299 - "unknown field \\"{field}\\""')
            status = resp.status
            return resp
        except ApiError as exc:
            status = exc.code
            return self._json(exc.status(), exc.code)
        except Exception as exc:  # a simulator bug: still answer like an apiserver, with a Status
            status = 500
            return self._json(ApiError(f"simulator error: {type(exc).__name__}: {exc}").status(), 500)
        finally:
            record.status = status

    async def _access_review(self, request: web.Request) -> web.StreamResponse:
        """SelfSubjectAccessReview: allowed unless a fault forbids that resource and verb or, with rbac, no rule
        allows it. Not a write (nothing is stored), so it is logged as verb "review" and never counted in
        `writes`."""
        return await self._review(request, "review", self._access_answer)

    async def _access_answer(self, request: web.Request, user: SimUser) -> Obj:
        body = await _review_body(request)
        attrs = ((body or {}).get("spec") or {}).get("resourceAttributes") or {}
        group, plural = attrs.get("group", ""), attrs.get("resource", "")
        qualified = f"{plural}.{group}" if group else plural
        allowed, reason = True, ""
        try:
            resource = self.db.resource(qualified)
        except ApiError:
            resource = None
        if resource is not None:
            fault = self.faults.check(resource, attrs.get("verb", ""), attrs.get("namespace"), attrs.get("name"))
            if fault is not None and fault.code == 403:
                allowed, reason = False, "forbidden by the simulator's fault injection"
        if allowed and self.rbac is not None:
            asked = Attributes(str(attrs.get("verb", "")), str(group), str(plural),
                               str(attrs.get("subresource") or ""), str(attrs.get("namespace") or ""),
                               str(attrs.get("name") or ""))
            allowed = self.rbac.allowed(user.name, user.groups, asked)
            reason = "" if allowed else "no RBAC rule allows it"
        return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": (body or {}).get("spec") or {}, "status": {"allowed": allowed, "reason": reason}}

    async def _review(self, request: web.Request, verb: str,
                      answer: Callable[[web.Request, SimUser], Awaitable[Obj]]) -> web.StreamResponse:
        """A review endpoint (access, rules, self): logged under `verb`, never counted in `writes`; POST by a
        known user only; `answer` makes the 201 body."""
        record = RequestRecord(request.method, request.path, request.query_string, verb, None, None, None,
                               None, 0, False, time.time())
        self.requests.append(record)
        try:
            user = self._authenticate(request)
            if request.method != "POST":
                raise MethodNotAllowed("the server does not allow this method on the requested resource "
                                       f"({request.method})")
            out = await answer(request, user)
            record.status = 201
            return self._json(out, 201)
        except ApiError as exc:
            record.status = exc.code
            return self._json(exc.status(), exc.code)

    async def _self_review(self, request: web.Request) -> web.StreamResponse:
        """SelfSubjectReview (authentication.k8s.io/v1): who the request's token authenticates as.
        Nothing is stored: logged as verb "whoami", never counted in `writes`. Hidden (404, as on a
        cluster older than 1.28) with `set_group_enabled("authentication.k8s.io", False)`."""
        async def answer(request: web.Request, user: SimUser) -> Obj:
            await request.read()  # a review carries nothing to read (kubectl sends it as protobuf)
            return {"apiVersion": f"{AUTHENTICATION_GROUP}/v1", "kind": "SelfSubjectReview",
                    "metadata": {"creationTimestamp": None},
                    "status": {"userInfo": {"username": user.name, "groups": list(user.groups)}}}

        return await self._review(request, "whoami", answer)

    async def _rules_review(self, request: web.Request) -> web.StreamResponse:
        """SelfSubjectRulesReview: what the token's user may do in spec.namespace (`kubectl auth can-i
        --list`), from the same rules that decide requests; without rbac, everything."""
        async def answer(request: web.Request, user: SimUser) -> Obj:
            spec = ((await _review_body(request)) or {}).get("spec") or {}
            namespace = str(spec.get("namespace") or "")
            if self.rbac is not None:
                status = self.rbac.rules_review(user.name, user.groups, namespace)
            else:
                status = {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                          "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": False}
            return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                    "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}

        return await self._review(request, "review", answer)

    def _authenticate(self, request: web.Request) -> SimUser:
        """The user the bearer token belongs to; 401 without a known one (every token compared in constant time)."""
        header = request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        given = value.strip().encode()
        found = None
        for token, user in self.users.items():
            if hmac.compare_digest(given, token.encode()):
                found = user
        if scheme.lower() != "bearer" or found is None:
            raise Unauthorized("Unauthorized")
        return found

    @staticmethod
    def _verb(method: str, t: _Target | None, q: Any) -> str:
        item = t is not None and t.name is not None
        if method == "GET":
            if q.get("watch", "").lower() in _TRUE:
                return "watch"
            return "get" if item else "list"
        if method == "POST":
            return "create"
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        if method == "DELETE":
            return "delete" if item or t is None else "deletecollection"
        return method.lower()

    # --- routing ----------------------------------------------------------------------------------
    def _route(self, path: str) -> _Target | Callable[[], Any]:
        segs = [s for s in path.split("/") if s]
        if not segs:
            return lambda: {"paths": ["/api", "/api/v1", "/apis", "/version"]}
        if segs == ["version"]:
            return lambda: KUBE_VERSION
        if segs in (["healthz"], ["livez"], ["readyz"]):
            return lambda: "ok"
        if segs[0] == "openapi" and len(segs) >= 2 and segs[1] in ("v2", "v3"):
            doc = _OpenApiDoc("/".join(segs[1:]))
            return lambda: doc
        if segs[0] == "api":
            if len(segs) == 1:
                return self._api_versions
            if segs[1] != "v1":
                raise NotFound.path()
            if len(segs) == 2:
                return lambda: self._resource_list("", "v1")
            return self._resource_target("", "v1", segs[2:])
        if segs[0] == "apis":
            if len(segs) == 1:
                return self._group_list
            group = segs[1]
            if group == visibility.GROUP and group not in self.disabled_groups:
                return self._visibility(segs[2:])
            versions = self._group_versions(group)
            if not versions:
                raise NotFound.path()
            if len(segs) == 2:
                return lambda: self._group(group)
            if segs[2] not in versions:
                raise NotFound.path()
            if len(segs) == 3:
                return lambda: self._resource_list(group, segs[2])
            return self._resource_target(group, segs[2], segs[3:])
        raise NotFound.path()

    # --- OpenAPI (taudash/sim/openapi.py): built once per served set, kept as bytes ----------------------
    def _served_versions(self) -> list[tuple[Resource, str]]:
        return [(r, v) for g in self.db.registry.groups() for v in self._group_versions(g) for r in self._served(g, v)]

    def _crd_schema(self, r: Resource, version: str) -> Obj | None:
        crd = self.db.schemas.crds.get((r.group, r.kind)) if self.db.schemas is not None else None
        return crd.schemas.get(version) if crd is not None else None

    def _openapi(self, doc: _OpenApiDoc, request: web.Request) -> web.Response:
        accept = request.headers.get("Accept", "")
        if accept and not any(t in accept for t in ("json", "*/*")):
            # client-go asks for v2 as protobuf only; 406 makes it give v2 up (kubectl then reads v3)
            raise ApiError(f"only application/json is served, not {accept}", code=406, reason="NotAcceptable")
        body = self.openapi.document(doc.path)
        if body is None:
            raise NotFound.path()
        return web.Response(body=body, status=200, content_type="application/json")

    # --- Kueue's aggregated visibility API (sim/visibility.py; hidden with set_group_enabled(GROUP, False)) ----
    def _visibility(self, rest: list[str]) -> _Target | Callable[[], Any]:
        version, resource, namespace, name = visibility.parse(rest)
        if resource is None:
            return visibility.api_group if not version else (lambda: visibility.resource_list(version))
        return _Target(resource, version, namespace, name, None)

    def _served(self, group: str, version: str) -> list[Resource]:
        if group in self.disabled_groups:
            return []
        return [r for r in self.db.registry.all
                if r.group == group and version in self._versions_of(r) and r.key not in self.disabled_resources]

    def _resource_target(self, group: str, version: str, rest: list[str]) -> _Target:
        served = {r.plural: r for r in self._served(group, version)}
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] in served and served[rest[2]].namespaced:
            namespace, rest = rest[1], rest[2:]
        r = served.get(rest[0])
        if r is None or len(rest) > 3:
            raise NotFound.path()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and not ((sub == "status" and r.status) or (sub == "token" and r.plural == "serviceaccounts")
                                    or (sub == "log" and r.kind == "Pod" and not r.group)):
            raise NotFound.path()
        return _Target(r, version, namespace, name, sub)

    # --- discovery ------------------------------------------------------------------------------
    def _group_versions(self, group: str) -> list[str]:
        if group in self.disabled_groups:
            return []
        versions: dict[str, None] = {}
        for r in self.db.registry.all:
            if r.group == group and r.key not in self.disabled_resources:
                for v in self._versions_of(r):
                    versions.setdefault(v, None)
        return list(versions)

    def _api_versions(self) -> Obj:
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                "serverAddress": f"{self.host}:{self.port}"}]}

    def _group(self, group: str) -> Obj:
        versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in self._group_versions(group)]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": versions,
                "preferredVersion": versions[0]}

    def _group_list(self) -> Obj:
        groups = [self._group(g) for g in self.db.registry.groups() if g and self._group_versions(g)]
        if visibility.GROUP not in self.disabled_groups:
            groups.append(visibility.api_group())
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def _resource_list(self, group: str, version: str) -> Obj:
        resources = []
        for r in self._served(group, version):
            entry: Obj = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind,
                          "verbs": _VERBS}
            if r.short_names:
                entry["shortNames"] = list(r.short_names)
            if r.optional:
                entry["categories"] = ["all"]  # KubeRay's CRDs join `kubectl get all`
            resources.append(entry)
            if r.status:
                resources.append({"name": f"{r.plural}/status", "singularName": "", "namespaced": r.namespaced,
                                  "kind": r.kind, "verbs": _STATUS_VERBS})
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version,
                "resources": resources}

    # --- resource verbs --------------------------------------------------------------------------
    async def _dispatch(self, request: web.Request, t: _Target, verb: str) -> web.Response:
        q = request.rel_url.query
        db, r = self.db, t.resource
        dry_run = _dry_run(q)
        # Writes are validated against the schema of the version they are addressed to.
        schema: dict[str, Any] = {"version": t.version, "field_validation": _field_validation(q)}
        if t.resource.group == visibility.GROUP:
            if verb != "get":
                raise MethodNotAllowed(f"the server does not allow this method on the requested resource ({verb})")
            return self._json(visibility.pending_workloads(db, r, t.version, t.namespace, t.name or "", q))
        if t.subresource == "token":
            return await self._token_request(request, t, verb)
        if verb == "list":
            return self._list(request, t)
        if verb == "get":
            obj = db._peek(r, t.name or "", t.namespace, t.version)
            if obj is None:
                raise NotFound.of(r, t.name or "")
            if _wants_table(request) and t.subresource is None:
                return self._json(self._table(r, [obj], {"resourceVersion": obj["metadata"]["resourceVersion"]}, q))
            return self._json(self._out(obj, t))
        if verb == "create":
            if t.name is not None:
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            body = await _body(request)
            created = db.create(body, resource=r, namespace=t.namespace, dry_run=dry_run, **schema)
            return self._json(self._out(created, t), 201)
        if verb == "update":
            body = await _body(request)
            fn = db.update_status if t.subresource == "status" else db.update
            return self._json(self._out(fn(body, resource=r, name=t.name, namespace=t.namespace, dry_run=dry_run,
                                           **schema), t))
        if verb == "patch":
            body = await _body(request)
            ctype = request.content_type
            if ctype == _MERGE or (ctype == _STRATEGIC and r.builtin):
                # Built-ins take strategic merge; without list merge keys it is a merge patch.
                if not isinstance(body, dict):
                    raise BadRequest("a merge patch must be a JSON object")
                out = db.patch_merge(r, t.name or "", body, t.namespace, subresource=t.subresource, dry_run=dry_run,
                                     **schema)
            elif ctype == _JSON_PATCH:
                out = db.patch_json(r, t.name or "", body, t.namespace, subresource=t.subresource, dry_run=dry_run,
                                    **schema)
            else:
                accepted = [_JSON_PATCH, _MERGE, _APPLY] + ([_STRATEGIC] if r.builtin else [])
                extra = " (server-side apply is not simulated)" if ctype == _APPLY else ""
                raise UnsupportedMediaType(f"the body of the request was in an unknown format - accepted media types "
                                           f"include: {', '.join(accepted)}{extra}")
            return self._json(self._out(out, t))
        if verb == "delete":
            if t.subresource is not None:
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            raw = await request.read()
            opts: Any = {}  # parsed JSON: checked to be an object below
            if raw.strip():
                try:
                    opts = json.loads(raw)
                except ValueError:
                    opts = None
                if not isinstance(opts, dict):
                    raise BadRequest("the DeleteOptions body is not a JSON object")
            dry_run = dry_run or _dry_run_options(opts)
            out = db.delete(r, t.name or "", t.namespace, preconditions=opts.get("preconditions"), dry_run=dry_run,
                            version=t.version)
            return self._json(self._out(out, t))
        raise MethodNotAllowed(f"the server does not allow this method on the requested resource ({verb})")

    def _list(self, request: web.Request, t: _Target) -> web.Response:
        q = request.rel_url.query
        db, r = self.db, t.resource
        limit = _int(q.get("limit"), "limit") or 0
        current = db.resource_version
        after: tuple[str, str] | None = None
        if q.get("continue"):
            list_rv, after = _decode_continue(q["continue"])
            if list_rv < db.oldest_resource_version:
                raise Gone("The provided continue parameter is too old to display a consistent list result. "
                           "You can start a new list without the continue parameter.")
        else:
            list_rv = current
            rv = q.get("resourceVersion", "")
            if rv not in ("", "0"):
                n = _int(rv, "resourceVersion") or 0  # (an int: rv is neither "" nor "0")
                if n > current:
                    raise ApiError(f"Too large resource version: {n}, current: {current}", code=504, reason="Timeout")
                if q.get("resourceVersionMatch") == "Exact" and n != current:
                    # The state at n equals the current one only when nothing in this resource moved since.
                    db.events_since(n, r)  # raises Gone when n is out of the window
                    if db.events_since(n, r):
                        raise Gone(f"the simulator cannot serve an exact list at an older resourceVersion ({n})")
                    list_rv = n
        meta: Obj = {"resourceVersion": str(list_rv)}
        if not q.get("labelSelector") and not q.get("fieldSelector"):
            # Unfiltered (what informers and kubectl send): one page straight from the sorted keys.
            keys, remaining = db.page_keys(r, t.namespace, after, limit)
            if remaining:
                meta["continue"] = _encode_continue(list_rv, keys[-1])
                meta["remainingItemCount"] = remaining
        else:
            keys = db.select_keys(r, t.namespace, q.get("labelSelector"), q.get("fieldSelector"))
            if after is not None:
                keys = keys[bisect.bisect_right(keys, after):]
            if limit and len(keys) > limit:
                keys = keys[:limit]
                meta["continue"] = _encode_continue(list_rv, keys[-1])
        if _wants_table(request):
            store = db._objects[r.key]
            return self._json(self._table(r, [db._view(r, k, store[k], t.version) for k in keys], meta, q))
        return web.Response(body=self._list_body(t, meta, keys), status=200, content_type="application/json")

    def _list_body(self, t: _Target, meta: Obj, keys: list[tuple[str, str]]) -> bytes:
        """A list page: its envelope encoded once, the items joined from each object's cached
        encoding (ObjectDB.encoded) — byte for byte what encoding the whole page with orjson gives."""
        r = t.resource
        head = _dumps({"apiVersion": r.api_version(t.version), "kind": f"{r.kind}List", "metadata": meta})
        items = self.db.encoded_many(r, keys, t.version)
        if not items:
            return head[:-1] + b',"items":[]}'
        # One copy of the page: the envelope rides on the first item, the closing on the last.
        items[0] = head[:-1] + b',"items":[' + items[0]
        items[-1] = items[-1] + b"]}"
        return b",".join(items)

    async def _token_request(self, request: web.Request, t: _Target, verb: str) -> web.Response:
        """TokenRequest (`kubectl create token SA -n NS`): a new bearer token of an existing ServiceAccount."""
        if verb != "create" or t.name is None:
            raise MethodNotAllowed(f"the server does not allow this method on the requested resource ({verb})")
        if self.db.peek(t.resource, t.name, t.namespace) is None:
            raise NotFound.of(t.resource, t.name)
        try:
            body = json.loads(await request.read() or b"{}")
        except ValueError:  # kubectl sends its TokenRequest as protobuf: the defaults then
            body = {}
        spec = dict(body.get("spec") or {}) if isinstance(body, dict) else {}
        seconds = spec.get("expirationSeconds") or TOKEN_SECONDS
        spec["expirationSeconds"] = seconds
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + float(seconds)))
        token = self.service_account_token(t.namespace or "", t.name)
        return self._json({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                           "metadata": {"name": t.name, "namespace": t.namespace, "creationTimestamp": None},
                           "spec": spec, "status": {"token": token, "expirationTimestamp": expires}}, 201)

    async def _log(self, request: web.Request, t: _Target, verb: str) -> web.StreamResponse:
        """A container's log (taudash/sim/logs.py), plain text; with follow=true the stream stays open and
        gets each new line as the container writes it, until the container ends, the Pod goes or the client
        leaves."""
        if verb != "get" or t.name is None:
            raise MethodNotAllowed(f"the server does not allow this method on the requested resource ({verb})")
        if self.faults.logs_forbidden:
            raise Forbidden(f'pods "{t.name}" is forbidden: User "taudash-sim" cannot get resource "pods/log" in API '
                            f'group "" in the namespace "{t.namespace}"')
        q = request.rel_url.query
        pod = self.db.peek(t.resource, t.name, t.namespace)
        if pod is None:
            raise NotFound.of(t.resource, t.name)
        container, previous = q.get("container"), q.get("previous", "").lower() in _TRUE
        src = logs.log_source(pod, container, previous, self.log_every)
        stamps = q.get("timestamps", "").lower() in _TRUE
        tail, since = _int(q.get("tailLines"), "tailLines"), _int(q.get("sinceSeconds"), "sinceSeconds")
        start, end = logs.window(src, self.db.clock(), tail=tail, since=since)
        limit = _int(q.get("limitBytes"), "limitBytes")
        text = "".join(line + "\n" for line in src.lines(start, end, timestamps=stamps))
        if limit is not None:
            text = text.encode()[:limit].decode(errors="ignore")
        if q.get("follow", "").lower() not in _TRUE or src.finished is not None:
            return web.Response(text=text, content_type="text/plain")
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/plain", "Cache-Control": "no-cache"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            if text:
                await resp.write(text.encode())
            while True:
                await asyncio.sleep(min(1.0, src.every / 2))
                pod = self.db.peek(t.resource, t.name, t.namespace)
                if pod is None:
                    break
                try:
                    src = logs.log_source(pod, src.container, False, self.log_every)
                except ApiError:
                    break
                now_end = src.count(self.db.clock())
                if now_end > end:
                    await resp.write("".join(line + "\n" for line in
                                             src.lines(max(end, now_end - logs.KEEP), now_end,
                                                       timestamps=stamps)).encode())
                    end = now_end
                if src.finished is not None:
                    break
        except (ConnectionError, asyncio.CancelledError):
            return resp
        await _eof(resp)
        return resp

    async def _watch(self, request: web.Request, t: _Target) -> web.StreamResponse:
        q = request.rel_url.query
        db, r = self.db, t.resource
        labels = parse_label_selector(q.get("labelSelector"))
        fields = parse_field_selector(q.get("fieldSelector"), r.kind)

        def matches(o: Obj) -> bool:
            ns_ok = t.namespace is None or not r.namespaced or o["metadata"].get("namespace") == t.namespace
            return ns_ok and labels(o) and fields(o)

        rv = q.get("resourceVersion", "")
        send_initial = q.get("sendInitialEvents", "").lower() in _TRUE
        bookmarks = q.get("allowWatchBookmarks", "").lower() in _TRUE
        timeout = _int(q.get("timeoutSeconds"), "timeoutSeconds") or self.watch_timeout
        start_rv = _int(rv, "resourceVersion") if rv not in ("", "0") else None
        table = _wants_table(request)  # kubectl get -w: each event carries a one-row Table

        def render(o: Obj) -> Obj:
            if table:
                return self._table(r, [o], {"resourceVersion": o["metadata"]["resourceVersion"]}, q)
            return self._out(o, t)

        # Subscribe and take the starting point in one synchronous step: no event is lost or doubled.
        sub = db.subscribe([r])
        initial: list[tuple[str, Obj]] = []
        replay: deque[WatchEvent] = deque()
        try:
            if start_rv is None or send_initial:
                initial = [("ADDED", o) for o in db._select(r, t.namespace, version=t.version) if matches(o)]
            else:
                if self.faults.take_gone():
                    raise Gone(f"too old resource version: {start_rv} ({db.resource_version})")
                replay.extend(db.events_since(start_rv, r))
        except Gone as exc:
            sub.close()
            if self.gone_as == "http":
                raise
            resp = await self._stream(request)
            await _send(resp, {"type": "ERROR", "object": exc.status()})
            await _eof(resp)
            return resp
        watch = _Watch(request, sub)
        self._watches.add(watch)
        resp = await self._stream(request)
        await self._notify_watches()
        try:
            typ: str | None
            for typ, obj in initial:
                await _send(resp, {"type": typ, "object": render(obj)})
            if send_initial and bookmarks:
                await _send(resp, self._bookmark(t, initial_end=True))
            deadline = time.monotonic() + timeout
            next_bookmark = time.monotonic() + self.bookmark_interval
            while True:
                if self.faults.watches_paused:  # a hung stream: open, silent
                    if sub.closed or time.monotonic() >= deadline or request.transport is None \
                            or request.transport.is_closing():
                        break
                    await asyncio.sleep(0.05)
                    continue
                ev = replay.popleft() if replay else sub.get_nowait()
                if ev is None:
                    now = time.monotonic()
                    if sub.closed or now >= deadline:
                        break
                    if request.transport is None or request.transport.is_closing():
                        break  # the client went away
                    if bookmarks and now >= next_bookmark:
                        await _send(resp, self._bookmark(t))
                        next_bookmark = now + self.bookmark_interval
                        continue
                    wait = min(deadline - now, 1.0, (next_bookmark - now) if bookmarks else math.inf)
                    ev = await sub.get(within=max(wait, 0.0))
                    if ev is None:
                        continue
                typ = _transition(ev, matches)
                if typ is not None:  # the event's object in the version watched
                    await _send(resp, {"type": typ, "object": render(db.event_object(ev, t.version))})
            await _eof(resp)
        except ConnectionError:
            pass  # the client went away mid-write
        finally:
            sub.close()
            self._watches.discard(watch)
        return resp

    def _bookmark(self, t: _Target, initial_end: bool = False) -> Obj:
        # Only the resourceVersion (plus type identity) is meaningful in a bookmark.
        meta: Obj = {"resourceVersion": str(self.db.resource_version)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return {"type": "BOOKMARK", "object": {"kind": t.resource.kind, "apiVersion": t.resource.api_version(t.version),
                                               "metadata": meta}}

    # --- rendering ------------------------------------------------------------------------------
    @staticmethod
    def _out(obj: Obj, t: _Target) -> Obj:
        """The object labelled with the requested version (ObjectDB converts Kueue objects to it;
        built-in kinds have one version)."""
        return labelled(t.resource, obj, t.version)

    def _table(self, r: Resource, objs: list[Obj], meta: Obj, q: Any) -> Obj:
        include = q.get("includeObject", "PartialObjectMetadata")
        cols = [{"name": "Name", "type": "string", "format": "name", "description": "Name of the object",
                 "priority": 0}]
        cols += [{"name": c.name, "type": c.type, "format": "", "description": "", "priority": c.priority}
                 for c in r.columns]
        cols.append({"name": "Age", "type": "string", "format": "", "description": "Time since creation",
                     "priority": 0})
        now = self.db.clock()
        rows = []
        for o in objs:
            m = o["metadata"]
            cells = [m["name"]] + [_cell(c.cell(o)) for c in r.columns] + [_age(m.get("creationTimestamp"), now)]
            row: Obj = {"cells": cells}
            if include == "Object":
                row["object"] = o
            elif include != "None":
                row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": m}
            rows.append(row)
        return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": cols,
                "rows": rows}

    @staticmethod
    def _json(body: Any, status: int = 200) -> web.Response:
        if isinstance(body, str):
            return web.Response(text=body, status=status, content_type="text/plain")
        return web.Response(body=json.dumps(body, separators=(",", ":")), status=status,
                            content_type="application/json")

    @staticmethod
    async def _stream(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json", "Cache-Control": "no-cache"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        return resp


# --- helpers ----------------------------------------------------------------------------------------


def _attributes(verb: str, t: _Target) -> Attributes:
    """What RBAC names the request: the visibility API's `clusterqueues/pendingworkloads` is a resource
    and its subresource, like every other `plural/sub`."""
    resource, _, sub = t.resource.plural.partition("/")
    return Attributes(verb, t.resource.group, resource, t.subresource or sub, t.namespace or "", t.name or "")


def _public(path: str) -> bool:
    """What a real cluster lets anonymous clients read (system:public-info-viewer)."""
    return path.rstrip("/") in ("/version", "/healthz", "/livez", "/readyz")


def _transition(ev: WatchEvent, matches: Callable[[Obj], bool]) -> str | None:
    """What a filtered watcher sees of `ev` (its type), None when nothing: objects moving in or
    out of its selection are ADDED/DELETED."""
    if ev.type == "MODIFIED":
        now, before = matches(ev.object), ev.old is not None and matches(ev.old)
        if now:
            return "MODIFIED" if before else "ADDED"
        return "DELETED" if before else None
    return ev.type if matches(ev.object) else None


async def _send(resp: web.StreamResponse, event: Obj) -> None:
    await resp.write(json.dumps(event, separators=(",", ":")).encode() + b"\n")


async def _eof(resp: web.StreamResponse) -> None:
    try:
        await resp.write_eof()
    except ConnectionError:
        pass


async def _review_body(request: web.Request) -> Any:
    """A review's body: JSON, or the protobuf kubectl sends for `auth can-i` (sim/protowire.py)."""
    if request.content_type == protowire.PROTOBUF:
        try:
            return protowire.review(await request.read())
        except protowire.WireError as exc:
            raise BadRequest(f"the request body is not a readable review: {exc}") from None
    return await _body(request)


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    try:
        return json.loads(raw)
    except ValueError:
        raise BadRequest("the request body is not valid JSON") from None


def _dry_run(q: Any) -> bool:
    values = q.getall("dryRun", [])
    for v in values:
        if v != "All":
            raise BadRequest(f'dryRun: Unsupported value: "{v}": supported values: "All"')
    return bool(values)


def _field_validation(q: Any) -> str | None:
    value = q.get("fieldValidation")
    if value not in (None, "", "Ignore", "Warn", "Strict"):
        raise BadRequest(f'fieldValidation: Unsupported value: "{value}": supported values: "Ignore", "Strict", "Warn"')
    return value or None


def _dry_run_options(opts: Any) -> bool:
    """DeleteOptions may carry dryRun in the body (kubectl delete --dry-run=server does)."""
    values = opts["dryRun"] if isinstance(opts, dict) and isinstance(opts.get("dryRun"), list) else []
    for v in values:
        if v != "All":
            raise BadRequest(f'dryRun: Unsupported value: "{v}": supported values: "All"')
    return bool(values)


def _wants_table(request: web.Request) -> bool:
    return "as=Table" in request.headers.get("Accept", "")


def _int(value: str | None, what: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        n = int(value)
    except ValueError:
        raise BadRequest(f"invalid {what}: {value!r}") from None
    if n < 0:
        raise BadRequest(f"invalid {what}: {value!r}")
    return n


def _key(o: Obj) -> tuple[str, str]:
    return (o["metadata"].get("namespace") or "", o["metadata"]["name"])


def _encode_continue(rv: int, key: tuple[str, str]) -> str:
    raw = json.dumps({"v": 1, "rv": rv, "ns": key[0], "name": key[1]}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return int(data["rv"]), (str(data["ns"]), str(data["name"]))
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise BadRequest("continue key is not valid") from None


def _cell(value: Any) -> Any:
    return "" if value is None else value


def _age(ts: str | None, now: float) -> str:
    if not ts:
        return "<unknown>"
    try:
        created = datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "<invalid>"
    return human_duration(now - created)


human_duration = kube_duration  # kubectl's age wording, kept in the engine (engine/text.py)
