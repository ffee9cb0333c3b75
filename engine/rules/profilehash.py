"""profileSetHash, reproduced byte for byte (TauGrid's ProfileSetHash; docs/rules.md#profiles-hash).

The controller hashes the normalised resolved profiles with Go's `encoding/json`. To compare our
value with the published one we must produce the very same bytes: Go's field order, Go's
`omitempty` rules, Go's HTML-safe string escaping and Go's (not Python's) case and space rules.
Pure functions only: the demo generator (taudash/sim/demo_scenario.py) and the snapshot exporter import
them too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..model.base import Condition
from ..model.tau import ProfileApplicability, ProfilePriorities, ResolvedLocalQueue, ResolvedWorkloadProfile

__all__ = [
    "ProfileHashError",
    "canonical_json",
    "contains_or_global",
    "go_json",
    "hash_input",
    "normalize_label",
    "normalize_name",
    "normalize_profile",
    "normalize_profiles",
    "profile_set_hash",
    "validate_profile",
]

SINGLE_CLUSTER = "singleCluster"
MULTI_KUEUE = "multiKueue"
MODES = ("fixed", "elastic")
PLACEMENTS = ("unconstrained", "same-host", "same-accelerator-domain", "same-network-domain", "same-site")


class ProfileHashError(ValueError):
    """The set cannot be hashed (the controller would publish an empty hash)."""


# --- Go string semantics ---------------------------------------------------------------

# unicode.IsSpace: narrower than str.isspace (which also counts U+001C..U+001F).
_GO_SPACE = frozenset(
    "\t\n\v\f\r \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def _go_trim_space(s: str) -> str:
    start, end = 0, len(s)
    while start < end and s[start] in _GO_SPACE:
        start += 1
    while end > start and s[end - 1] in _GO_SPACE:
        end -= 1
    return s[start:end]


def _go_lower(s: str) -> str:
    # strings.ToLower maps rune by rune with the simple case mapping: no final-sigma context
    # (per-character lower() avoids it) and İ → i, where Python's full mapping gives "i̇".
    out = []
    for ch in s:
        low = ch.lower()
        out.append(low if len(low) == 1 else low[0])
    return "".join(out)


def normalize_label(value: str) -> str:
    """Lowercase, trim, `_` and space → `-` (teams, lanes, mode, placement)."""
    return _go_lower(_go_trim_space(value or "")).replace("_", "-").replace(" ", "-")


def normalize_name(value: str) -> str:
    """normalize_label, then strip leading/trailing dots (names, queues, namespaces, classes)."""
    return normalize_label(value).strip(".")


def _normalize_target(value: str) -> str:
    trimmed = _go_trim_space(value or "")
    low = _go_lower(trimmed)
    if low in ("", SINGLE_CLUSTER.lower()):
        return SINGLE_CLUSTER
    if low == MULTI_KUEUE.lower():
        return MULTI_KUEUE
    return trimmed  # unknown (e.g. the beta-era "multiKueueBeta"): kept, validation rejects it


def _normalize_list(values: Iterable[str], fn: Callable[[str], str]) -> list[str]:
    # Applicability: normalised and sorted; duplicates and empties are kept for validation to reject.
    return sorted(fn(v) for v in values)


def _normalize_set(values: Iterable[str]) -> list[str]:
    # Resolved identities: normalised, empties dropped, de-duplicated, sorted.
    return sorted({normalize_name(v) for v in values} - {""})


def _normalize_local_queues(queues: Iterable[ResolvedLocalQueue]) -> list[ResolvedLocalQueue]:
    out: list[ResolvedLocalQueue] = []
    seen: set[tuple[str, str]] = set()
    for q in queues:
        item = ResolvedLocalQueue(
            namespace=normalize_name(q.namespace),
            name=normalize_name(q.name),
            cluster_queue=normalize_name(q.cluster_queue),
        )
        key = (item.namespace, item.name)
        if key in seen:
            raise ProfileHashError(f"duplicate resolved LocalQueue {item.namespace}/{item.name}")
        seen.add(key)
        out.append(item)
    return sorted(out, key=lambda q: (q.namespace, q.name))


def _as_profile(p: ResolvedWorkloadProfile | Mapping[str, Any]) -> ResolvedWorkloadProfile:
    return p if isinstance(p, ResolvedWorkloadProfile) else ResolvedWorkloadProfile.model_validate(p)


def normalize_profile(p: ResolvedWorkloadProfile | Mapping[str, Any]) -> ResolvedWorkloadProfile:
    """The canonical form used for hashing, selection and snapshots. Conditions sorted by type."""
    p = _as_profile(p)
    app = p.applicability
    pri = p.priorities
    return p.model_copy(
        update={
            "name": normalize_name(p.name),
            "description": _go_trim_space(p.description),
            "applicability": ProfileApplicability(
                teams=_normalize_list(app.teams, normalize_label),
                lanes=_normalize_list(app.lanes, normalize_label),
                namespaces=_normalize_list(app.namespaces, normalize_name),
            ),
            "mode": normalize_label(p.mode),
            "placement": normalize_label(p.placement),
            "default_local_queue": normalize_name(p.default_local_queue),
            "execution_target": _normalize_target(p.execution_target),
            "priorities": ProfilePriorities(
                workload_priority_class_name=normalize_name(pri.workload_priority_class_name),
                pod_priority_class_name=normalize_name(pri.pod_priority_class_name),
                disable_default_priorities=pri.disable_default_priorities,
            ),
            "local_queues": _normalize_local_queues(p.local_queues),
            "cluster_queues": _normalize_set(p.cluster_queues),
            "resource_flavors": _normalize_set(p.resource_flavors),
            "topologies": _normalize_set(p.topologies),
            "workload_priority_classes": _normalize_set(p.workload_priority_classes),
            "pod_priority_classes": _normalize_set(p.pod_priority_classes),
            "conditions": sorted(p.conditions, key=lambda c: c.type),  # stable, like sort.SliceStable
        }
    )


def normalize_profiles(
    profiles: Iterable[ResolvedWorkloadProfile | Mapping[str, Any]],
) -> list[ResolvedWorkloadProfile]:
    """Normalise every profile, reject duplicate names, sort by name."""
    out: list[ResolvedWorkloadProfile] = []
    seen: set[str] = set()
    for raw in profiles:
        p = normalize_profile(raw)
        if p.name in seen:
            raise ProfileHashError(f"duplicate workload profile {p.name!r}")
        seen.add(p.name)
        out.append(p)
    return sorted(out, key=lambda p: p.name)


# --- Go encoding/json ------------------------------------------------------------------

_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _go_string(s: str) -> str:
    # json.Marshal escapes HTML (<, >, &) and the JS line separators; other non-ASCII stays UTF-8.
    # \b and \f are short escapes since Go 1.22 (TauGrid builds with a newer Go).
    out = ['"']
    for ch in s:
        cp = ord(ch)
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif cp < 0x20 or ch in "<>&" or cp in (0x2028, 0x2029):
            out.append(f"\\u{cp:04x}")
        elif 0xD800 <= cp <= 0xDFFF:
            out.append("\ufffd")  # a lone surrogate cannot reach Go: its decoder already made it U+FFFD
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_json(value: Any) -> str:
    """Compact Go-style JSON of dicts (insertion order kept), lists, str, int, bool, None."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_go_string(k)}:{go_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__} as Go JSON")


def hash_input(p: ResolvedWorkloadProfile) -> dict[str, Any]:
    """One normalised profile in Go field order: declared fields inline, then the resolved lists;
    no conditions. The hash input, and the body of a snapshot profile."""
    d: dict[str, Any] = {"name": p.name}
    if p.description:
        d["description"] = p.description
    app: dict[str, Any] = {}  # a struct: never omitted, even when empty
    for key, values in (
        ("teams", p.applicability.teams),
        ("lanes", p.applicability.lanes),
        ("namespaces", p.applicability.namespaces),
    ):
        if values:
            app[key] = list(values)
    d["applicability"] = app
    d["gpusPerWorker"] = p.gpus_per_worker
    d["workerCount"] = p.worker_count
    d["mode"] = p.mode
    d["placement"] = p.placement
    d["defaultLocalQueue"] = p.default_local_queue
    if p.execution_target:
        d["executionTarget"] = p.execution_target
    pri: dict[str, Any] = {}
    if p.priorities.workload_priority_class_name:
        pri["workloadPriorityClassName"] = p.priorities.workload_priority_class_name
    if p.priorities.pod_priority_class_name:
        pri["podPriorityClassName"] = p.priorities.pod_priority_class_name
    if p.priorities.disable_default_priorities:
        pri["disableDefaultPriorities"] = True
    d["priorities"] = pri
    if p.local_queues:
        d["localQueues"] = [
            {"namespace": q.namespace, "name": q.name, "clusterQueue": q.cluster_queue} for q in p.local_queues
        ]
    for key, values in (
        ("clusterQueues", p.cluster_queues),
        ("resourceFlavors", p.resource_flavors),
        ("topologies", p.topologies),
        ("workloadPriorityClasses", p.workload_priority_classes),
        ("podPriorityClasses", p.pod_priority_classes),
    ):
        if values:
            d[key] = list(values)
    return d


def canonical_json(profiles: Iterable[ResolvedWorkloadProfile | Mapping[str, Any]]) -> bytes:
    """The exact bytes the controller hashes."""
    return go_json([hash_input(p) for p in normalize_profiles(profiles)]).encode("utf-8")


def profile_set_hash(profiles: list[ResolvedWorkloadProfile]) -> str:
    """SHA-256 (lowercase hex) of the canonical JSON of the resolved profiles.

    Raises ProfileHashError for a duplicate profile name or LocalQueue pair. It does not run
    the controller's field validation (see `validate_profile`): an invalid set never carries a
    published hash, so the comparison fails closed either way.
    """
    return hashlib.sha256(canonical_json(profiles)).hexdigest()


# --- validation (the controller's, for snapshot verification and diagnostics) ------------


def _dns1123_subdomain(value: str) -> bool:
    if not value or len(value) > 253:
        return False
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789-.")
    if any(c not in allowed for c in value):
        return False
    return all(part and part[0].isalnum() and part[-1].isalnum() for part in value.split("."))


def _label_value(value: str) -> bool:
    if len(value) > 63:
        return False
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
    return all(c in allowed for c in value) and value[0].isalnum() and value[-1].isalnum()


def validate_profile(p: ResolvedWorkloadProfile) -> str | None:
    """First validation error of a *normalised* profile, or None. Mirrors the controller's declared-schema rules."""
    if not _dns1123_subdomain(p.name):
        return f"name {p.name!r} is not a DNS-1123 subdomain"
    for field, values in (
        ("applicability.teams", p.applicability.teams),
        ("applicability.lanes", p.applicability.lanes),
        ("applicability.namespaces", p.applicability.namespaces),
    ):
        for i, v in enumerate(values):
            if not v:
                return f"{field} values must not be empty"
            if i and v == values[i - 1]:
                return f"{field} contains duplicate value {v!r}"
            ok = _dns1123_subdomain(v) if field.endswith("namespaces") else _label_value(v)
            if not ok:
                return f"{field} value {v!r} is invalid"
    if p.gpus_per_worker < 0:
        return f"gpusPerWorker must be non-negative, got {p.gpus_per_worker}"
    if p.worker_count < 1:
        return f"workerCount must be positive, got {p.worker_count}"
    if p.mode not in MODES:
        return f"mode must be fixed or elastic, got {p.mode!r}"
    if p.placement not in PLACEMENTS:
        return f"placement must be one of {', '.join(PLACEMENTS)}, got {p.placement!r}"
    if not _dns1123_subdomain(p.default_local_queue):
        return f"defaultLocalQueue {p.default_local_queue!r} is invalid"
    if p.execution_target not in (SINGLE_CLUSTER, MULTI_KUEUE):
        return f"executionTarget must be singleCluster or multiKueue, got {p.execution_target!r}"
    pri = p.priorities
    if pri.disable_default_priorities:
        if pri.workload_priority_class_name or pri.pod_priority_class_name:
            return "disableDefaultPriorities cannot be combined with priority class names"
    elif not (_dns1123_subdomain(pri.workload_priority_class_name) and _dns1123_subdomain(pri.pod_priority_class_name)):
        return "workload and pod priority class names are required unless disableDefaultPriorities is true"
    for q in p.local_queues:
        if not (_dns1123_subdomain(q.namespace) and _dns1123_subdomain(q.name) and _dns1123_subdomain(q.cluster_queue)):
            return f"localQueues entry {q.namespace}/{q.name} -> {q.cluster_queue!r} is invalid"
    for field, values in (
        ("clusterQueues", p.cluster_queues),
        ("resourceFlavors", p.resource_flavors),
        ("topologies", p.topologies),
        ("workloadPriorityClasses", p.workload_priority_classes),
        ("podPriorityClasses", p.pod_priority_classes),
    ):
        for v in values:
            if not _dns1123_subdomain(v):
                return f"{field} value {v!r} is invalid"
    return None


def contains_or_global(values: list[str], value: str) -> bool:
    """Applicability: an empty list allows everything."""
    return not values or value in values


def ready_condition(p: ResolvedWorkloadProfile) -> Condition | None:
    for c in p.conditions:
        if c.type == "Ready":
            return c
    return None
