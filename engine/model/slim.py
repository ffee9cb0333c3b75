"""Slimmer models for high-volume kinds: share what every copy of a model holds identically.

A validated pydantic model carries, per instance, the set of field names the input set
(`__pydantic_fields_set__`); a Workload is ~14 model instances, and those sets are almost half of
its memory. Objects are frozen, so instances with the same set may share one: `model_copy()` and
`__copy__` copy the set before changing it, and nothing else mutates it. Short repeated strings
(condition types, reasons, queue, flavor and namespace names) are shared the same way. Equality and
serialisation are unchanged (tests/test_bench_slim.py).

Whole sub-objects that many objects hold equal — a Workload's spec (its pod sets without the pod
templates' containers, which the model never keeps), its admission, a Job's template metadata —
are shared too: one instance per distinct value.
"""

from __future__ import annotations

from typing import Any

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


# Sub-models shared whole, by (model class, field): equal values are common across a fleet.
_SHARE: dict[str, frozenset[str]] = {
    "Workload": frozenset({"spec"}),
    "WorkloadStatus": frozenset({"admission"}),
    "JobSpec": frozenset({"template"}),
    "DeploymentSpec": frozenset({"template", "selector"}),
}
_MODELS: dict[tuple, BaseModel] = {}
_MODELS_MAX = 100_000


def _freeze(v: Any) -> Any:
    """A hashable value equal for equal models (model class included)."""
    if isinstance(v, BaseModel):
        return (type(v), tuple(_freeze(x) for x in v.__dict__.values()))
    t = type(v)
    if t is list:
        return (list, tuple(_freeze(x) for x in v))
    if t is dict:
        return (dict, tuple((k, _freeze(x)) for k, x in v.items()))
    return v  # str, int, bool, None, Quantity (hashable, equal by value)


def _shared(v: Any) -> Any:
    if isinstance(v, BaseModel):
        try:
            key = _freeze(v)
            hit = _MODELS.get(key)
        except TypeError:  # something unhashable inside: keep this one as it is
            return v
        if hit is not None:
            return hit
        if len(_MODELS) >= _MODELS_MAX:
            _MODELS.clear()
        _MODELS[key] = v
    return v


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
    share = _SHARE.get(type(m).__name__)
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
            slim(v)
            if share is not None and k in share:
                d[k] = _shared(v)
        elif t is dict and v:
            for dk, dv in v.items():
                if type(dv) is str and len(dv) <= _SHARED_LEN:
                    v[dk] = _str(dv)
    return m


__all__ = ["slim"]
