"""API errors of the simulated cluster, rendered as `kind: Status` bodies like the real apiserver."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A failed API call. `status()` is the body a Kubernetes client expects."""

    code = 500
    reason = "InternalError"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None, code: int | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}
        if code is not None:
            self.code = code
        if reason is not None:
            self.reason = reason

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _details(resource: Any, name: str | None) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if resource is not None:
        if resource.group:
            d["group"] = resource.group
        d["kind"] = resource.plural
    return d


class BadRequest(ApiError):
    code, reason = 400, "BadRequest"


class Unauthorized(ApiError):
    code, reason = 401, "Unauthorized"


class Forbidden(ApiError):
    code, reason = 403, "Forbidden"

    @classmethod
    def of(cls, resource: Any, verb: str, namespace: str | None, name: str | None = None) -> Forbidden:
        scope = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        what = f'{resource.qualified} "{name}"' if name else resource.qualified
        return cls(
            f'{what} is forbidden: User "taudash-sim" cannot {verb} resource "{resource.plural}" '
            f'in API group "{resource.group}"{scope}',
            details=_details(resource, name),
        )


class NotFound(ApiError):
    code, reason = 404, "NotFound"

    @classmethod
    def of(cls, resource: Any, name: str) -> NotFound:
        return cls(f'{resource.qualified} "{name}" not found', details=_details(resource, name))

    @classmethod
    def path(cls) -> NotFound:
        # What the real server answers for an unknown path or an API that is not installed.
        return cls("the server could not find the requested resource", details={})


class MethodNotAllowed(ApiError):
    code, reason = 405, "MethodNotAllowed"


class AlreadyExists(ApiError):
    code, reason = 409, "AlreadyExists"

    @classmethod
    def of(cls, resource: Any, name: str) -> AlreadyExists:
        return cls(f'{resource.qualified} "{name}" already exists', details=_details(resource, name))


class Conflict(ApiError):
    code, reason = 409, "Conflict"

    @classmethod
    def of(cls, resource: Any, name: str, why: str) -> Conflict:
        return cls(f'Operation cannot be fulfilled on {resource.qualified} "{name}": {why}',
                   details=_details(resource, name))

    @classmethod
    def stale(cls, resource: Any, name: str) -> Conflict:
        return cls.of(resource, name,
                      "the object has been modified; please apply your changes to the latest version and try again")


class Gone(ApiError):
    code, reason = 410, "Expired"


class UnsupportedMediaType(ApiError):
    code, reason = 415, "UnsupportedMediaType"


class Invalid(ApiError):
    """422 with field causes, e.g. `spec.stopPolicy: Unsupported value: "X"`."""

    code, reason = 422, "Invalid"

    def __init__(self, message: str, *, causes: list[dict[str, str]] | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details=details)
        self.causes = causes or []

    @classmethod
    def of(cls, resource: Any, name: str, causes: list[tuple[str, str, str]]) -> Invalid:
        """causes: (field, reason, message) such as ("spec.x", "FieldValueNotSupported", 'Unsupported value: "y"')."""
        text = ", ".join(f"{f}: {m}" if f else m for f, _, m in causes)
        if len(causes) > 1:
            text = f"[{text}]"  # the API server's aggregate of several field errors
        kind = resource.kind if resource is not None else "Object"
        group = f".{resource.group}" if resource is not None and resource.group else ""
        details = {"name": name, "kind": kind,
                   **({"group": resource.group} if resource is not None and resource.group else {})}
        details["causes"] = [{"reason": r, "message": m, "field": f} for f, r, m in causes]
        return cls(f'{kind}{group} "{name}" is invalid: {text}', details=details)


class TooManyRequests(ApiError):
    code, reason = 429, "TooManyRequests"


class InternalError(ApiError):
    code, reason = 500, "InternalError"
