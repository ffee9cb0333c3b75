"""The one path by which taudash writes to a cluster.

Every write: refused outright in read-only mode or on a snapshot source (a read-only Actions holds
no HTTP client at all, so a write is impossible rather than hidden); permission checked first
(SelfSubjectAccessReview); sent as a server dry-run before the real request; guarded by a
resourceVersion precondition — on 409 the object is re-read and the change re-planned, never
forced; appended to the audit log (who, when, object, before/after, result).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
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


@dataclass
class AuditLog:
    path: Path

    def record(self, entry: dict[str, Any]) -> None:
        append_private(self.path, json.dumps(entry, separators=(",", ":"), sort_keys=True, default=str))


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

    @classmethod
    def read_only(cls, why: str, context: str | None = None) -> Actions:
        return cls(who="", context=context, api_client=None, why_read_only=why)

    @classmethod
    def live(cls, api_client: Any, who: str, context: str | None, audit: AuditLog | None) -> Actions:
        return cls(who=who, context=context, api_client=api_client, audit=audit)

    @property
    def writable(self) -> bool:
        return self.api_client is not None

    # guard -------------------------------------------------------------------------------
    def _guard(self, verb: str, kind: str, name: str, namespace: str | None) -> None:
        if self.api_client is None:
            self.refusals += 1
            why = self.why_read_only or "read-only"
            self._audit(verb, kind, name, namespace, "refused", note=why)
            raise WriteRefused(f"{verb} {kind} {_ref(namespace, name)} refused: {why}")

    # HTTP --------------------------------------------------------------------------------
    def _path(self, k: ResourceKind, name: str | None, namespace: str | None) -> str:
        base = f"/apis/{k.group}/{k.versions[0]}" if k.group else f"/api/{k.versions[0]}"
        if k.namespaced:
            base += f"/namespaces/{namespace}"
        base += f"/{k.plural}"
        return f"{base}/{name}" if name else base

    async def _call(self, method: str, path: str, body: Any = None, query=None, content_type: str = "application/json") -> Obj:
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
                raise ApiFailure(resp.status, str(payload.get("message", ""))[:300] if isinstance(payload, dict) else "")
            return payload
        finally:
            resp.release()

    async def read(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        """A fresh GET (reads are always allowed; they never change the cluster)."""
        if self.api_client is None:
            raise WriteRefused("no cluster connection in read-only mode")
        try:
            return await self._call("GET", self._path(BY_KIND[kind], name, namespace))
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
        if not await self.can(verb, kind, name, namespace):
            self._audit(verb, kind, name, namespace, "denied")
            raise PermissionDenied(f"not allowed to {verb} {kind} {_ref(namespace, name)} (SelfSubjectAccessReview)")

    # writes ------------------------------------------------------------------------------
    async def patch(self, kind: str, name: str, namespace: str | None, planner: Planner, reason: str,
                    subresource: str | None = None) -> Result:
        """Merge-patch what `planner(current)` returns, with a resourceVersion precondition."""
        self._guard("patch", kind, name, namespace)
        path = self._path(BY_KIND[kind], name, namespace) + (f"/{subresource}" if subresource else "")
        await self._permit("patch", kind, name, namespace)
        for attempt in range(1, self.max_attempts + 1):
            current = await self.read(kind, name, namespace)
            if current is None:
                raise PreconditionFailed(f"{kind} {_ref(namespace, name)} no longer exists")
            patch = planner(copy.deepcopy(current))
            if not patch:
                return Result(False, "patch", kind, namespace, name, current, current, "already in the planned state", attempt)
            body = copy.deepcopy(patch)
            body.setdefault("metadata", {})["resourceVersion"] = current["metadata"]["resourceVersion"]
            try:
                await self._call("PATCH", path, body, [("dryRun", "All")], "application/merge-patch+json")
                after = await self._call("PATCH", path, body, [("fieldManager", "taudash")], "application/merge-patch+json")
            except ApiFailure as exc:
                if exc.status == 409:
                    self._audit("patch", kind, name, namespace, "conflict", patch=patch, attempt=attempt)
                    continue  # someone else wrote first: re-read and re-plan
                self._audit("patch", kind, name, namespace, "failed", patch=patch, note=str(exc))
                raise
            self._audit("patch", kind, name, namespace, "ok", patch=patch, before=_slim(current),
                        after=_slim(after), reason=reason, attempt=attempt)
            return Result(True, "patch", kind, namespace, name, current, after, reason, attempt)
        raise ConflictPersisted(f"{kind} {_ref(namespace, name)} kept changing; gave up after {self.max_attempts} plans")

    async def delete(self, kind: str, name: str, namespace: str | None, still_wanted: Callable[[Obj], bool],
                     reason: str) -> Result:
        """Delete with uid + resourceVersion preconditions; `still_wanted(current)` re-checks the plan."""
        self._guard("delete", kind, name, namespace)
        path = self._path(BY_KIND[kind], name, namespace)
        await self._permit("delete", kind, name, namespace)
        for attempt in range(1, self.max_attempts + 1):
            current = await self.read(kind, name, namespace)
            if current is None or current["metadata"].get("deletionTimestamp"):
                return Result(False, "delete", kind, namespace, name, current, None, "already gone or deleting", attempt)
            if not still_wanted(current):
                raise PreconditionFailed(f"{kind} {_ref(namespace, name)} changed: the plan no longer applies")
            meta = current["metadata"]
            body = {"apiVersion": "v1", "kind": "DeleteOptions",
                    "preconditions": {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}}
            try:
                await self._call("DELETE", path, body, [("dryRun", "All")])
                await self._call("DELETE", path, body)
            except ApiFailure as exc:
                if exc.status == 409:
                    self._audit("delete", kind, name, namespace, "conflict", attempt=attempt)
                    continue
                if exc.status == 404:
                    return Result(False, "delete", kind, namespace, name, current, None, "already gone", attempt)
                self._audit("delete", kind, name, namespace, "failed", note=str(exc))
                raise
            self._audit("delete", kind, name, namespace, "ok", before=_slim(current), reason=reason, attempt=attempt)
            return Result(True, "delete", kind, namespace, name, current, None, reason, attempt)
        raise ConflictPersisted(f"{kind} {_ref(namespace, name)} kept changing; gave up after {self.max_attempts} plans")

    async def dry_run_create(self, obj: Obj, reason: str) -> Obj:
        """A connected server dry-run of a create: validated and admitted by the server, stored
        nowhere. Still refused in read-only mode: it is a write request."""
        kind = obj.get("kind", "")
        meta = obj.get("metadata") or {}
        name, namespace = meta.get("name", ""), meta.get("namespace")
        self._guard("create", kind, name, namespace)
        await self._permit("create", kind, name, namespace)
        path = self._path(BY_KIND[kind], None, namespace)
        try:
            out = await self._call("POST", path, obj, [("dryRun", "All")])
        except ApiFailure as exc:
            self._audit("create-dry-run", kind, name, namespace, "failed", note=str(exc), reason=reason)
            raise
        self._audit("create-dry-run", kind, name, namespace, "ok", reason=reason)
        return out

    # audit -------------------------------------------------------------------------------
    def _audit(self, verb: str, kind: str, name: str, namespace: str | None, result: str, **extra: Any) -> None:
        entry = {"at": self.clock(), "who": self.who, "context": self.context, "verb": verb, "kind": kind,
                 "namespace": namespace, "name": name, "result": result, **extra}
        self.log.append(entry)
        if self.audit is not None:
            self.audit.record(entry)

    async def dry_run_patch(self, kind: str, name: str, namespace: str | None, patch: Obj, reason: str) -> Obj:
        """A connected server dry-run of a merge patch: validated and admitted, stored nowhere.
        Refused in read-only mode like any write request."""
        self._guard("patch", kind, name, namespace)
        await self._permit("patch", kind, name, namespace)
        path = self._path(BY_KIND[kind], name, namespace)
        try:
            out = await self._call("PATCH", path, patch, [("dryRun", "All")], "application/merge-patch+json")
        except ApiFailure as exc:
            self._audit("patch-dry-run", kind, name, namespace, "failed", note=str(exc), reason=reason)
            raise
        self._audit("patch-dry-run", kind, name, namespace, "ok", reason=reason)
        return out


def _ref(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _slim(obj: Obj | None) -> Obj | None:
    """The object without managedFields (noise in an audit trail)."""
    if obj is None:
        return None
    out = copy.deepcopy(obj)
    out.get("metadata", {}).pop("managedFields", None)
    return out
