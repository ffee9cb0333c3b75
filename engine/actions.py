"""The one path by which taudash writes to a cluster.

Every write: refused outright in read-only mode or on a snapshot source (a read-only Actions holds
no HTTP client at all, so a write is impossible rather than hidden); permission checked first
(SelfSubjectAccessReview); sent as a server dry-run before the real request; guarded by a
resourceVersion precondition — on 409 the object is re-read and the change re-planned, never
forced; appended to the audit log (who, when, object, what changed, result).

Who: the identity the cluster authenticated (a SelfSubjectReview, asked once before the first
write), else the kubeconfig's user entry, labelled as not verified; with the OS user and the host.
The audit log stores what a write changed (a JSON merge patch from the object before to the object
after), never whole objects, and rotates at a size cap (docs/reliability.md, "The audit log").

Every path is built with the API version the cluster serves for the kind (Kueue ≤ 0.14 serves
only v1beta1): the version the live source reads, or else discovered here on first use. The
audit log gets an "intent" record before each real write and the outcome after it, under one
request id, so a crash between the two still leaves a trace of a write that may have landed.
"""

from __future__ import annotations

import copy
import fcntl
import getpass
import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model import BY_KIND, ResourceKind
from .paths import append_private

Obj = dict[str, Any]
Planner = Callable[[Obj], Obj | None]  # current object -> merge patch, or None when nothing to do


class WriteRefused(Exception):
    """Read-only mode or a snapshot source: no write may leave the process."""


class PermissionDenied(Exception):
    pass


class PreconditionFailed(Exception):
    """The object is not in the state the plan was made for (gone, replaced, no longer a blocker)."""


class ConflictPersisted(Exception):
    """Another writer kept changing the object; gave up after re-planning several times."""


class ApiFailure(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class ApiNotServed(ApiFailure):
    """The cluster does not serve the kind at any version taudash knows (or no longer at the one
    it was using): a 404 that says nothing about whether the object exists."""

    def __init__(self, message: str) -> None:
        Exception.__init__(self, message)
        self.status = 404


@dataclass
class Result:
    changed: bool
    verb: str
    kind: str
    namespace: str | None
    name: str
    before: Obj | None = None
    after: Obj | None = None
    note: str = ""
    attempts: int = 1

    def summary(self) -> dict[str, Any]:
        return {"verb": self.verb, "kind": self.kind, "namespace": self.namespace, "name": self.name,
                "changed": self.changed, "note": self.note, "attempts": self.attempts}


SELF_REVIEW_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
AUDIT_MAX_BYTES = 1024 * 1024  # the current file rotates once the next record would take it past this
AUDIT_KEEP = 5  # rotated generations kept beside it: audit.log.1 (newest) … audit.log.5


@dataclass(frozen=True)
class Operator:
    """Who writes: the user the cluster authenticated (`verified`, from a SelfSubjectReview), or the
    kubeconfig's user entry when the cluster cannot say (`note` says why); the OS user and host."""

    user: str
    verified: bool
    groups: tuple[str, ...] = ()
    os_user: str = ""
    host: str = ""
    note: str = ""

    @property
    def label(self) -> str:
        """The user as people read it: an unverified name says so."""
        return self.user if self.verified else f"{self.user} (kubeconfig user, not verified)"

    def to_audit(self) -> dict[str, Any]:
        source = "SelfSubjectReview" if self.verified else "kubeconfig user"
        identity: dict[str, Any] = {"user": self.user, "source": source}
        if self.groups:
            identity["groups"] = list(self.groups)
        if self.note:
            identity["note"] = self.note
        return {"who": self.user, "identity": identity, "osUser": self.os_user, "host": self.host}


def local_user() -> tuple[str, str]:
    """(OS user, host name) of this process."""
    try:
        os_user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container): the uid still says who
        os_user = f"uid {os.getuid()}"
    return os_user, socket.gethostname()


@dataclass
class AuditLog:
    """JSON lines, one fsync per record, mode 0600. A line torn by a kill mid-write is closed off
    before the next record (so it cannot swallow it) and skipped by `read`. The file rotates when the
    next record would take it past `max_bytes`: audit.log → audit.log.1 → … → audit.log.<keep> (the
    oldest is dropped), under a lock shared by every taudash process writing it."""

    path: Path
    max_bytes: int = AUDIT_MAX_BYTES
    keep: int = AUDIT_KEEP

    def record(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, separators=(",", ":"), sort_keys=True, default=str)
        with self._locked():
            size = self._size()
            if self.max_bytes and size and size + len(line) + 2 > self.max_bytes:
                self._rotate()
            append_private(self.path, ("\n" + line) if self._torn_tail() else line)

    def generations(self) -> list[Path]:
        """The files that exist, oldest first (the current one last)."""
        rotated = [self._generation(i) for i in range(self.keep, 0, -1)]
        return [p for p in [*rotated, self.path] if p.exists()]

    def read_all(self) -> list[dict[str, Any]]:
        """The complete records of every kept generation, oldest first."""
        return [r for p in self.generations() for r in _records(p)]

    def _generation(self, i: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{i}")

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def _rotate(self) -> None:
        if self.keep <= 0:
            self.path.unlink(missing_ok=True)
            return
        self._generation(self.keep).unlink(missing_ok=True)
        for i in range(self.keep - 1, 0, -1):
            older = self._generation(i)
            if older.exists():
                os.replace(older, self._generation(i + 1))
        os.replace(self.path, self._generation(1))

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time across processes (the dashboard and the CLI share the file): a size
        check and its rotation must not interleave with another process's."""
        fd = os.open(self.path.with_name(f"{self.path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _torn_tail(self) -> bool:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                if fh.tell() == 0:
                    return False
                fh.seek(-1, os.SEEK_END)
                return fh.read(1) != b"\n"
        except FileNotFoundError:
            return False

    def read(self) -> list[dict[str, Any]]:
        """The complete records of the current file, oldest first; torn lines are skipped."""
        return _records(self.path)

    def reconciled(self, verb: str, kind: str, namespace: str | None, name: str, applied: bool, note: str,
                   since: float, at: float) -> int:
        """The outcome of this object's writes whose answer never came (the process died or was interrupted
        between the request and its answer), found by re-reading the object: one record per such intent
        at or after `since`, under the intent's request id, result "ok" when the write is found applied and
        "not-applied" otherwise, marked `reconciled`. An intent with a real answer is left alone (a "no
        answer" failure is not one). Returns how many intents it closed."""
        intents: dict[str, dict[str, Any]] = {}
        answered: set[str] = set()
        for rec in self.read_all():  # every kept generation: a rotation may have come between
            request = rec.get("request")
            if not request:
                continue
            if rec.get("result") == "intent":
                same = (rec.get("verb"), rec.get("kind"), rec.get("namespace"), rec.get("name")) == \
                    (verb, kind, namespace, name)
                if same and float(rec.get("at") or 0.0) >= since:
                    intents[str(request)] = rec
            elif not (rec.get("result") == "failed" and str(rec.get("note") or "").startswith("no answer")):
                answered.add(str(request))
        closed = 0
        for request, intent in intents.items():
            if request in answered:
                continue
            same_writer = {k: v for k, v in intent.items() if k not in ("at", "result", "note", "patch", "diff")}
            self.record({**same_writer, "at": at, "request": request, "result": "ok" if applied else "not-applied",
                         "note": note, "reconciled": True})
            closed += 1
        return closed


def _records(path: Path) -> list[dict[str, Any]]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    out = []
    for line in raw.split(b"\n"):
        try:
            rec = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out

@dataclass
class Actions:
    """Writes for one cluster. Build it with `Actions.read_only()` or `Actions.live(...)`."""

    who: str
    context: str | None
    api_client: Any = None  # kubernetes_asyncio ApiClient; None when read-only
    audit: AuditLog | None = None
    clock: Callable[[], float] = time.time
    max_attempts: int = 4
    refusals: int = 0
    why_read_only: str = ""
    log: list[dict[str, Any]] = field(default_factory=list)
    # kind -> the version the live source reads (None until it has discovered one)
    versions: Callable[[str], str | None] | None = None
    # kind -> version found by this object's own discovery; wins over `versions` once set
    _discovered: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    # who writes: asked of the cluster once, before the first write (`operator()`)
    _operator: Operator | None = field(default=None, init=False, repr=False)

    @classmethod
    def read_only(cls, why: str, context: str | None = None) -> Actions:
        return cls(who="", context=context, api_client=None, why_read_only=why)

    @classmethod
    def live(cls, api_client: Any, who: str, context: str | None, audit: AuditLog | None,
             versions: Callable[[str], str | None] | None = None) -> Actions:
        return cls(who=who, context=context, api_client=api_client, audit=audit, versions=versions)

    @property
    def writable(self) -> bool:
        return self.api_client is not None

    async def operator(self) -> Operator:
        """Who this connection writes as: the cluster's SelfSubjectReview answer, asked once; where the
        cluster does not serve it (older than 1.28), forbids it or fails, the kubeconfig's user entry,
        marked as not verified. Never raises: the answer is informative, the write path decides."""
        if self._operator is not None:
            return self._operator
        os_user, host = local_user()
        fallback = self.who or "unknown"
        if self.api_client is None:
            self._operator = Operator(fallback, False, os_user=os_user, host=host, note="read-only: not connected")
            return self._operator
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        try:
            out = await self._call("POST", SELF_REVIEW_PATH, review)
            info = (out.get("status") or {}).get("userInfo") or {}
            name = str(info.get("username") or "")
        except ApiFailure as exc:
            name, why = "", f"SelfSubjectReview answered {exc}"
        except Exception as exc:  # noqa: BLE001 - a network failure here must not stop the write it precedes
            name, why = "", f"SelfSubjectReview failed: {type(exc).__name__}: {exc}"
        else:
            why = "SelfSubjectReview named no user"
        if name:
            groups = tuple(str(g) for g in info.get("groups") or () if isinstance(g, str))
            self._operator = Operator(name, True, groups, os_user, host)
        else:
            self._operator = Operator(fallback, False, os_user=os_user, host=host, note=why)
        return self._operator

    # guard -------------------------------------------------------------------------------
    def _guard(self, verb: str, kind: str, name: str, namespace: str | None) -> None:
        if self.api_client is None:
            self.refusals += 1
            why = self.why_read_only or "read-only"
            self._audit(verb, kind, name, namespace, "refused", note=why)
            raise WriteRefused(f"{verb} {kind} {_ref(namespace, name)} refused: {why}")

    # HTTP --------------------------------------------------------------------------------
    # API version ----------------------------------------------------------------------------
    async def version(self, kind: str) -> str:
        """The version to address `kind` at: ours if we discovered one, else the source's, else
        discovered now. Raises ApiNotServed when the cluster serves none."""
        if kind in self._discovered:
            return self._discovered[kind]
        known = self.versions(kind) if self.versions is not None else None
        if known:
            return known
        return await self._discover(BY_KIND[kind])

    async def _discover(self, k: ResourceKind) -> str:
        for version in k.versions:
            if await self._serves(k, version):
                self._discovered[k.kind] = version
                return version
        self._discovered.pop(k.kind, None)
        group = k.group or "core"
        raise ApiNotServed(f"the cluster serves {k.resource} at none of the versions taudash knows "
                           f"({', '.join(k.versions)}): is the {group} API installed?")

    async def _serves(self, k: ResourceKind, version: str) -> bool:
        """Whether the discovery document of the group/version lists the resource."""
        try:
            doc = await self._call("GET", "/" + _group_version_root(k, version))
        except ApiFailure as exc:
            if exc.status == 404:
                return False
            raise
        return any(r.get("name") == k.plural for r in doc.get("resources", []))

    async def _object_call(self, method: str, kind: str, name: str | None, namespace: str | None,
                           subresource: str | None = None, body: Any = None,
                           query: list[tuple[str, Any]] | None = None,
                           content_type: str = "application/json") -> Obj:
        """A request on the kind's path. A 404 is checked against discovery: when the version went
        unserved (a Kueue downgrade, a stale guess) the kind is rediscovered and the request sent
        once more at the served version, and ApiNotServed is raised when there is none."""
        k = BY_KIND[kind]
        version = await self.version(kind)
        for attempt in (1, 2):
            path = self._path(k, name, namespace, version) + (f"/{subresource}" if subresource else "")
            try:
                return await self._call(method, path, body, query, content_type)
            except ApiFailure as exc:
                if exc.status != 404 or await self._serves(k, version):
                    raise
            was = version
            version = await self._discover(k)  # raises ApiNotServed when nothing is served
            if version == was or attempt == 2:
                break
        raise ApiNotServed(f"{k.resource} is not served at {version} any more")

    def _path(self, k: ResourceKind, name: str | None, namespace: str | None, version: str) -> str:
        base = "/" + _group_version_root(k, version)
        if k.namespaced:
            base += f"/namespaces/{namespace}"
        base += f"/{k.plural}"
        return f"{base}/{name}" if name else base

    async def _call(self, method: str, path: str, body: Any = None, query: list[tuple[str, Any]] | None = None,
                    content_type: str = "application/json") -> Obj:
        resp = await self.api_client.call_api(
            path,
            method,
            query_params=query or [],
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=30,
        )
        try:
            data = await resp.read()
            payload = json.loads(data) if data else {}
            if resp.status >= 400:
                raise ApiFailure(resp.status,
                                 str(payload.get("message", ""))[:300] if isinstance(payload, dict) else "")
            return payload
        finally:
            resp.release()

    async def read(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        """A fresh GET (reads are always allowed; they never change the cluster)."""
        if self.api_client is None:
            raise WriteRefused("no cluster connection in read-only mode")
        try:
            return await self._object_call("GET", kind, name, namespace)
        except ApiNotServed:
            raise
        except ApiFailure as exc:
            if exc.status == 404:
                return None
            raise

    async def can(self, verb: str, kind: str, name: str | None = None, namespace: str | None = None) -> bool:
        k = BY_KIND[kind]
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"group": k.group, "resource": k.plural, "verb": verb,
                                            "name": name or "", "namespace": namespace or ""}},
        }
        out = await self._call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
        return bool((out.get("status") or {}).get("allowed"))

    async def _permit(self, verb: str, kind: str, name: str, namespace: str | None) -> None:
        await self.operator()  # every audit record of this write names who
        if not await self.can(verb, kind, name, namespace):
            self._audit(verb, kind, name, namespace, "denied")
            raise PermissionDenied(f"not allowed to {verb} {kind} {_ref(namespace, name)} (SelfSubjectAccessReview)")

    # writes ------------------------------------------------------------------------------
    async def patch(self, kind: str, name: str, namespace: str | None, planner: Planner, reason: str,
                    subresource: str | None = None, field_manager: str = "taudash") -> Result:
        """Merge-patch what `planner(current)` returns, with a resourceVersion precondition. `planner` may
        raise PreconditionFailed when the object is no longer in a state the change is for."""
        self._guard("patch", kind, name, namespace)
        await self._permit("patch", kind, name, namespace)
        merge = "application/merge-patch+json"
        for attempt in range(1, self.max_attempts + 1):
            current = await self.read(kind, name, namespace)
            if current is None:
                raise PreconditionFailed(f"{kind} {_ref(namespace, name)} no longer exists")
            patch = planner(copy.deepcopy(current))
            if not patch:
                return Result(False, "patch", kind, namespace, name, current, current, "already in the planned state",
                              attempt)
            body = copy.deepcopy(patch)
            body.setdefault("metadata", {})["resourceVersion"] = current["metadata"]["resourceVersion"]
            about = {"patch": patch, "attempt": attempt, "reason": reason, "fieldManager": field_manager}
            try:
                await self._object_call("PATCH", kind, name, namespace, subresource, body,
                                        [("dryRun", "All"), ("fieldManager", field_manager)], merge)
            except ApiFailure as exc:
                if exc.status == 409:
                    self._audit("patch", kind, name, namespace, "conflict", dry_run=True, **about)
                    continue  # someone else wrote first: re-read and re-plan
                self._audit("patch", kind, name, namespace, "failed", dry_run=True, note=str(exc), **about)
                raise
            try:
                request, after = await self._write("patch", kind, name, namespace, about, self._object_call(
                    "PATCH", kind, name, namespace, subresource, body, [("fieldManager", field_manager)], merge))
            except ApiFailure as exc:
                if exc.status == 409:
                    continue
                raise
            self._audit("patch", kind, name, namespace, "ok", request=request, diff=merge_diff(current, after),
                        versions=[_version(current), _version(after)], **about)
            return Result(True, "patch", kind, namespace, name, current, after, reason, attempt)
        raise ConflictPersisted(f"{kind} {_ref(namespace, name)} kept changing; gave up after {self.max_attempts} "
                                "plans")

    async def delete(self, kind: str, name: str, namespace: str | None, still_wanted: Callable[[Obj], bool],
                     reason: str) -> Result:
        """Delete with uid + resourceVersion preconditions; `still_wanted(current)` re-checks the plan."""
        self._guard("delete", kind, name, namespace)
        await self._permit("delete", kind, name, namespace)
        for attempt in range(1, self.max_attempts + 1):
            current = await self.read(kind, name, namespace)
            if current is None or current["metadata"].get("deletionTimestamp"):
                return Result(False, "delete", kind, namespace, name, current, None, "already gone or deleting",
                              attempt)
            if not still_wanted(current):
                raise PreconditionFailed(f"{kind} {_ref(namespace, name)} changed: the plan no longer applies")
            meta = current["metadata"]
            body = {"apiVersion": "v1", "kind": "DeleteOptions",
                    "preconditions": {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}}
            about = {"attempt": attempt, "reason": reason}
            try:
                await self._object_call("DELETE", kind, name, namespace, None, body, [("dryRun", "All")])
            except ApiNotServed:
                raise
            except ApiFailure as exc:
                if exc.status == 409:
                    self._audit("delete", kind, name, namespace, "conflict", dry_run=True, **about)
                    continue
                if exc.status == 404:
                    return Result(False, "delete", kind, namespace, name, current, None, "already gone", attempt)
                self._audit("delete", kind, name, namespace, "failed", dry_run=True, note=str(exc), **about)
                raise
            try:
                request, _ = await self._write("delete", kind, name, namespace, about, self._object_call(
                    "DELETE", kind, name, namespace, None, body))
            except ApiNotServed:
                raise
            except ApiFailure as exc:
                if exc.status == 409:
                    continue
                if exc.status == 404:
                    return Result(False, "delete", kind, namespace, name, current, None, "already gone", attempt)
                raise
            self._audit("delete", kind, name, namespace, "ok", request=request,
                        deleted={"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}, **about)
            return Result(True, "delete", kind, namespace, name, current, None, reason, attempt)
        raise ConflictPersisted(f"{kind} {_ref(namespace, name)} kept changing; gave up after {self.max_attempts} "
                                "plans")

    async def _write(self, verb: str, kind: str, name: str, namespace: str | None, about: dict[str, Any],
                     send: Coroutine[Any, Any, Obj]) -> tuple[str, Obj]:
        """Await the real request (`send`, not started yet) between an "intent" audit record and its
        outcome record (conflict or failed here; the caller records ok with the before/after it
        knows). Returns the request id and the answer."""
        request = uuid.uuid4().hex
        try:
            self._audit(verb, kind, name, namespace, "intent", request=request, **about)
        except BaseException:
            send.close()  # no intent on record, so no request: the write is not sent
            raise
        try:
            out = await send
        except ApiFailure as exc:
            self._audit(verb, kind, name, namespace, "conflict" if exc.status == 409 else "failed", request=request,
                        note=str(exc), **about)
            raise
        except BaseException as exc:
            self._audit(verb, kind, name, namespace, "failed", request=request,
                        note=f"no answer ({type(exc).__name__}: {exc}): the write may have been applied", **about)
            raise
        return request, out

    async def create(self, obj: Obj, reason: str, field_manager: str = "taudash") -> Result:
        """Create `obj` (server dry-run first). An object that exists already is ApiFailure 409
        (AlreadyExists): the caller reads it and decides; nothing is overwritten."""
        kind = obj.get("kind", "")
        meta = obj.get("metadata") or {}
        name, namespace = meta.get("name", ""), meta.get("namespace")
        self._guard("create", kind, name, namespace)
        await self._permit("create", kind, name, namespace)
        about = {"reason": reason, "fieldManager": field_manager}
        try:
            await self._object_call("POST", kind, None, namespace, None, obj,
                                    [("dryRun", "All"), ("fieldManager", field_manager)])
        except ApiFailure as exc:
            self._audit("create", kind, name, namespace, "conflict" if exc.status == 409 else "failed", dry_run=True,
                        note=str(exc), **about)
            raise
        request, after = await self._write("create", kind, name, namespace, about, self._object_call(
            "POST", kind, None, namespace, None, obj, [("fieldManager", field_manager)]))
        self._audit("create", kind, name, namespace, "ok", request=request, diff=merge_diff({}, after),
                    versions=["", _version(after)], **about)
        return Result(True, "create", kind, namespace, name, None, after, reason)

    async def dry_run_create(self, obj: Obj, reason: str) -> Obj:
        """A connected server dry-run of a create: validated and admitted by the server, stored
        nowhere. Still refused in read-only mode: it is a write request."""
        kind = obj.get("kind", "")
        meta = obj.get("metadata") or {}
        name, namespace = meta.get("name", ""), meta.get("namespace")
        self._guard("create", kind, name, namespace)
        await self._permit("create", kind, name, namespace)
        try:
            out = await self._object_call("POST", kind, None, namespace, None, obj, [("dryRun", "All")])
        except ApiFailure as exc:
            self._audit("create-dry-run", kind, name, namespace, "failed", note=str(exc), reason=reason)
            raise
        self._audit("create-dry-run", kind, name, namespace, "ok", reason=reason)
        return out

    # audit -------------------------------------------------------------------------------
    def _audit(self, verb: str, kind: str, name: str, namespace: str | None, result: str, **extra: Any) -> None:
        who = self._operator.to_audit() if self._operator is not None else {"who": self.who}
        entry = {"at": self.clock(), **who, "context": self.context, "verb": verb, "kind": kind,
                 "namespace": namespace, "name": name, "result": result, **extra}
        self.log.append(entry)
        if self.audit is not None:
            self.audit.record(entry)

    async def dry_run_patch(self, kind: str, name: str, namespace: str | None, patch: Obj, reason: str) -> Obj:
        """A connected server dry-run of a merge patch: validated and admitted, stored nowhere.
        Refused in read-only mode like any write request."""
        self._guard("patch", kind, name, namespace)
        await self._permit("patch", kind, name, namespace)
        try:
            out = await self._object_call("PATCH", kind, name, namespace, None, patch, [("dryRun", "All")],
                                          "application/merge-patch+json")
        except ApiFailure as exc:
            self._audit("patch-dry-run", kind, name, namespace, "failed", note=str(exc), reason=reason)
            raise
        self._audit("patch-dry-run", kind, name, namespace, "ok", reason=reason)
        return out


def _group_version_root(k: ResourceKind, version: str) -> str:
    """`apis/<group>/<version>` (or `api/v1` for the core group), without the leading slash."""
    return f"apis/{k.group}/{version}" if k.group else f"api/{version}"


def _ref(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


# Bookkeeping the server moves on every write: recorded as `versions` (resourceVersion) or not at all.
_NOT_DIFFED = frozenset({"managedFields", "resourceVersion", "generation"})


def merge_diff(before: Obj | None, after: Obj | None) -> Obj:
    """What a write changed, as a JSON merge patch (RFC 7386) that turns `before` into `after`: changed
    and added fields with their new value, removed ones as null, lists whole. Metadata bookkeeping
    (resourceVersion, generation, managedFields) is left out."""
    return _diff(before or {}, after or {}, top=True)


def _diff(before: dict[str, Any], after: dict[str, Any], top: bool = False, meta: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in before.keys() | after.keys():
        if meta and key in _NOT_DIFFED:
            continue
        old, new = before.get(key), after.get(key)
        if key not in after:
            out[key] = None
        elif isinstance(new, dict) and (isinstance(old, dict) or key not in before):
            # (a merge patch turns a missing or non-object value into an object before merging into it)
            sub = _diff(old if isinstance(old, dict) else {}, new, meta=top and key == "metadata")
            if sub or key not in before:
                out[key] = sub
        elif key not in before or old != new:
            out[key] = copy.deepcopy(new)
    return out


def _version(obj: Obj | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")
