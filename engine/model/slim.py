"""Slimmer models for high-volume kinds: share what every copy of a model holds identically.

A validated pydantic model carries, per instance, the set of field names the input set
(`__pydantic_fields_set__`); a Workload is ~14 model instances, and those sets are almost half of
its memory. Objects are frozen, so instances with the same set may share one: `model_copy()` and
`__copy__` copy the set before changing it, and nothing else mutates it. Short repeated strings
(condition types, reasons, queue, flavor and namespace names) are shared the same way. Equality and
serialisation are unchanged (tests/unit/test_bench_slim.py).

Whole sub-objects that many objects hold equal — a Workload's spec (its pod sets) and its
admission — are shared too, one instance per distinct JSON value (`share_raw`, before validation:
a shared one is validated once).
"""

from __future__ import annotations

from typing import Any

from orjson import dumps as _key_bytes
from pydantic import BaseModel

_set = object.__setattr__
_SETS: dict[frozenset[str], set[str]] = {}
_STRS: dict[str, str] = {}
_STRS_MAX = 200_000
_SHARED_LEN = 96  # longer strings are messages worth keeping only when repeated; still shared if equal
# Fields whose values are unique per object: not worth a table entry.
_UNIQUE = frozenset({"uid", "name", "resource_version", "creation_timestamp", "last_transition_time",
                     "deletion_timestamp"})


def _str(v: str) -> str:
    hit = _STRS.get(v)
    if hit is not None:
        return hit
    if len(_STRS) >= _STRS_MAX:
        _STRS.clear()  # bounded: a cluster's vocabulary is small; a churned one just starts over
    _STRS[v] = v
    return v


# Sub-objects shared whole, recognised by their JSON before validation (C-speed keys): equal
# specs and admissions are common across a fleet, and a shared one is validated only once.
_SUBS: dict[tuple[str, bytes], BaseModel] = {}
_CANON: set[int] = set()  # ids of shared instances (kept alive by _SUBS): already slim
_SUBS_MAX = 50_000



def _sub(tag: str, model: type[BaseModel], value: Any) -> Any:
    if type(value) is not dict:
        return value
    key = (tag, _key_bytes(value))
    hit = _SUBS.get(key)
    if hit is None:
        if len(_SUBS) >= _SUBS_MAX:
            _SUBS.clear()
            _CANON.clear()
        hit = _SUBS[key] = slim(model.model_validate(value))
        _CANON.add(id(hit))
    return hit


def share_raw(kind: str, raw: Any) -> Any:
    """`raw` with sub-objects that many objects hold equal replaced by one shared, validated model
    (pydantic takes a model instance as is). Any surprise: `raw` unchanged, so validation reports it."""
    if kind != "Workload" or type(raw) is not dict:
        return raw
    try:
        from .kueue import Admission, WorkloadSpec

        out = dict(raw)
        if "spec" in raw:
            out["spec"] = _sub("Workload.spec", WorkloadSpec, raw["spec"])
        status = raw.get("status")
        if type(status) is dict and type(status.get("admission")) is dict:
            out["status"] = {**status, "admission": _sub("Workload.admission", Admission, status["admission"])}
        return out
    except Exception:  # bad input: the whole object's validation gives the error
        return raw


def slim(m: Any) -> Any:
    """Share the fields-set and short repeated strings of `m` and its sub-models (in place; returns m)."""
    if not isinstance(m, BaseModel):
        return m
    fs = m.__pydantic_fields_set__
    key = frozenset(fs)
    shared = _SETS.get(key)
    if shared is None:
        shared = _SETS[key] = set(key)
    if shared is not fs:
        _set(m, "__pydantic_fields_set__", shared)
    d = m.__dict__
    for k, v in d.items():
        t = type(v)
        if t is str:
            if k not in _UNIQUE and len(v) <= _SHARED_LEN:
                d[k] = _str(v)
        elif t is list:
            for x in v:
                if isinstance(x, BaseModel):
                    slim(x)
        elif isinstance(v, BaseModel):
            if id(v) not in _CANON:
                slim(v)
        elif t is dict and v:
            for dk, dv in v.items():
                if type(dv) is str and len(dv) <= _SHARED_LEN:
                    v[dk] = _str(dv)
    return m


__all__ = ["slim"]
