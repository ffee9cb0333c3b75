"""The few protobuf bodies kubectl insists on sending for built-in review types (`kubectl auth can-i` posts
SelfSubjectAccessReview and SelfSubjectRulesReview as protobuf), read into the JSON shape the handlers take.

Kubernetes' envelope is the magic `k8s\\x00` and a runtime.Unknown whose field 2 holds the object's bytes;
only the fields the reviews read are decoded (field numbers from k8s.io/api/authorization/v1's
generated.proto): spec (2) → resourceAttributes (1: namespace 1, verb 2, group 3, version 4, resource 5,
subresource 6, name 7) or, for a rules review, namespace (1)."""

from __future__ import annotations

from typing import Any

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"
_ATTRS = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource", 7: "name"}


class WireError(ValueError):
    pass


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise WireError("truncated varint")
        b = buf[i]
        value |= (b & 0x7F) << shift
        i += 1
        if not b & 0x80:
            return value, i
        shift += 7


def fields(buf: bytes) -> dict[int, bytes]:
    """The length-delimited fields of one message (the last of a repeated number); other wire types skipped."""
    out: dict[int, bytes] = {}
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, kind = key >> 3, key & 7
        if kind == 0:
            _, i = _varint(buf, i)
        elif kind == 2:
            size, i = _varint(buf, i)
            if i + size > len(buf):
                raise WireError("truncated field")
            out[number] = buf[i:i + size]
            i += size
        elif kind == 5:
            i += 4
        elif kind == 1:
            i += 8
        else:
            raise WireError(f"unsupported wire type {kind}")
    return out


def review(body: bytes) -> dict[str, Any]:
    """A SelfSubjectAccessReview or SelfSubjectRulesReview sent as protobuf → {"spec": {...}} as JSON would say."""
    if not body.startswith(MAGIC):
        raise WireError("not a Kubernetes protobuf body")
    unknown = fields(body[len(MAGIC):])
    kind = fields(unknown.get(1, b"")).get(2, b"").decode()  # typeMeta.kind
    spec = fields(fields(unknown.get(2, b"")).get(2, b""))
    if kind == "SelfSubjectRulesReview" or (not kind and not _looks_like_message(spec.get(1, b""))):
        return {"spec": {"namespace": spec.get(1, b"").decode()}}
    if 1 in spec:
        attrs = {_ATTRS[n]: v.decode() for n, v in fields(spec[1]).items() if n in _ATTRS}
        return {"spec": {"resourceAttributes": attrs}}
    return {"spec": {"nonResourceAttributes": {}}}


def _looks_like_message(buf: bytes) -> bool:
    """A rules review's namespace (a string) and an access review's attributes (a message) share field 1."""
    try:
        parsed = fields(buf)
    except WireError:
        return False
    return bool(parsed) and all(n in _ATTRS for n in parsed)
