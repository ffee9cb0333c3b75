"""Label and field selectors with the apiserver's query syntax.

Labels: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x,y)`, `a`, `!a`, comma-separated (AND).
Fields: `metadata.name` and `metadata.namespace` with `=`, `==`, `!=` (what the CRD endpoints support); core/v1
Events also `involvedObject.*`, `reason`, `type`, `source`, `reportingComponent`; core/v1 Pods also `spec.nodeName`,
`status.phase` and the other pod fields the apiserver converts (KIND_FIELDS).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

from taudash.sim.errors import BadRequest

Matcher = Callable[[dict[str, Any]], bool]

_KEY = r"(?:[A-Za-z0-9.-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s+\(([^)]*)\)\s*$")
_CMP = re.compile(rf"^\s*({_KEY})\s*(==|!=|=)\s*({_VALUE})\s*$")
_EXISTS = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


def _split_requirements(text: str) -> list[str]:
    """Split on commas that are not inside `( ... )`."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _label_in(o: dict[str, Any], key: str, values: set[str]) -> bool:
    return _labels(o).get(key) in values


def _label_not_in(o: dict[str, Any], key: str, values: set[str]) -> bool:
    return _labels(o).get(key) not in values


def _label_equal(o: dict[str, Any], key: str, value: str) -> bool:
    return _labels(o).get(key) == value


def _label_not_equal(o: dict[str, Any], key: str, value: str) -> bool:
    return _labels(o).get(key) != value


def _label_present(o: dict[str, Any], key: str) -> bool:
    return key in _labels(o)


def _label_absent(o: dict[str, Any], key: str) -> bool:
    return key not in _labels(o)


def parse_label_selector(text: str | None) -> Matcher:
    if not text or not text.strip():
        return lambda obj: True
    checks: list[Matcher] = []
    for req in _split_requirements(text):
        if m := _SET.match(req):
            key, op = m.group(1), m.group(3)
            values = {v.strip() for v in m.group(4).split(",") if v.strip()}
            if not values:
                raise BadRequest(f"unable to parse requirement: {req.strip()}: for 'in', 'notin' operators, values "
                                 "set can't be empty")
            if op == "in":
                checks.append(partial(_label_in, key=key, values=values))
            else:  # notin matches objects without the key too
                checks.append(partial(_label_not_in, key=key, values=values))
        elif m := _CMP.match(req):
            key, op, value = m.group(1), m.group(3), m.group(4)
            if op == "!=":  # matches objects without the key too
                checks.append(partial(_label_not_equal, key=key, value=value))
            else:
                checks.append(partial(_label_equal, key=key, value=value))
        elif m := _EXISTS.match(req):
            neg, key = m.group(1), m.group(2)
            if neg:
                checks.append(partial(_label_absent, key=key))
            else:
                checks.append(partial(_label_present, key=key))
        else:
            raise BadRequest(f"unable to parse requirement: {req.strip()!r}")
    return lambda obj: all(c(obj) for c in checks)


_FIELD = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*?)\s*$")
_FIELDS = {"metadata.name": ("metadata", "name"), "metadata.namespace": ("metadata", "namespace")}
# Fields a kind adds to the metadata ones (the apiserver's field label conversion for core/v1 Events:
# what `kubectl describe` selects an object's Events by).
KIND_FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "Event": {
        **{f"involvedObject.{f}": ("involvedObject", f)
           for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
        "reason": ("reason",), "type": ("type",), "source": ("source", "component"),
        "reportingComponent": ("reportingComponent",),
    },
    # The pod fields the apiserver converts (pkg/registry/core/pod: what kubelets and schedulers select by).
    "Pod": {
        **{f"spec.{f}": ("spec", f) for f in ("nodeName", "restartPolicy", "schedulerName", "serviceAccountName",
                                              "hostNetwork")},
        **{f"status.{f}": ("status", f) for f in ("phase", "podIP", "nominatedNodeName")},
    },
}


def _field_value(o: dict[str, Any], path: tuple[str, ...]) -> str:
    cur: Any = o
    for part in path:
        cur = cur.get(part) if isinstance(cur, dict) else None
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return "" if cur is None else str(cur)


def parse_field_selector(text: str | None, kind: str | None = None) -> Matcher:
    if not text or not text.strip():
        return lambda obj: True
    known = {**_FIELDS, **KIND_FIELDS.get(kind or "", {})}
    checks: list[Matcher] = []
    for req in text.split(","):
        if not req.strip():
            continue
        m = _FIELD.match(req)
        if not m:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{req}'")
        field, op, value = m.groups()
        path = known.get(field)
        if path is None:
            if kind in KIND_FIELDS:
                raise BadRequest(f'field label not supported: {field}')
            raise BadRequest(f'"{field}" is not a known field selector: only "metadata.name", "metadata.namespace"')

        def check(o: dict[str, Any], p: tuple[str, ...] = path, v: str = value, neg: bool = op == "!=") -> bool:
            return (_field_value(o, p) == v) != neg

        checks.append(check)
    return lambda obj: all(c(obj) for c in checks)
