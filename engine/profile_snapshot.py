"""`TauWorkloadProfileSnapshot` files: export a ready revision, verify a file (docs/rules.md#profiles-snapshot,
the file `tau cluster profiles export` writes).

A snapshot is an immutable review artifact for client-side rendering. It never authorizes a
server dry-run or an apply, and its annotations identify a revision, not quota or capacity.
This module does file I/O; the rules it calls stay pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from . import paths
from .model.base import Condition
from .model.tau import ResolvedWorkloadProfile
from .rules.base import RuleContext
from .rules.profilehash import (
    ProfileHashError,
    hash_input,
    normalize_profiles,
    profile_set_hash,
    validate_profile,
)
from .rules.profiles import ProfileSet, load_profile_set
from .store import Store

API_VERSION = "tau.azure.com/v1alpha1"
KIND = "TauWorkloadProfileSnapshot"


class ProfileSnapshotError(Exception):
    """One line: why a snapshot cannot be exported or is not valid."""


@dataclass(frozen=True)
class VerifiedSnapshot:
    generation: int
    profile_set_hash: str
    profiles: tuple[ResolvedWorkloadProfile, ...]


# --- building ---------------------------------------------------------------------------


def _condition_doc(c: Condition) -> dict[str, Any]:
    doc: dict[str, Any] = {"type": c.type, "status": c.status}
    if c.observed_generation:
        doc["observedGeneration"] = c.observed_generation
    if c.last_transition_time:
        doc["lastTransitionTime"] = c.last_transition_time
    doc["reason"] = c.reason
    doc["message"] = c.message
    return doc


def _profile_doc(p: ResolvedWorkloadProfile) -> dict[str, Any]:
    doc = hash_input(p)
    if p.conditions:
        doc["conditions"] = [_condition_doc(c) for c in p.conditions]  # normalised: sorted by type
    return doc


def build_snapshot(source: RuleContext | Store | ProfileSet) -> dict[str, Any]:
    """The snapshot document of the observed revision, or ProfileSnapshotError when it is not a
    ready, verified revision (the usable-set checks, every profile Ready, the hash verified)."""
    ps = source if isinstance(source, ProfileSet) else load_profile_set(source)
    if not ps.usable:
        raise ProfileSnapshotError(f"refusing to export: {ps.unusable_message}")
    for p in ps.profiles:
        ready, ctype, reason, msg = ps.readiness(p)
        if not ready:
            detail = f"{ctype} {reason}" + (f": {msg}" if msg else "")
            raise ProfileSnapshotError(
                f"refusing to export: workload profile {p.name!r} is not Ready at generation {ps.generation} "
                f"({detail}); export needs every profile Ready"
            )
    doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "tauClusterGeneration": ps.generation,
        "profileSetHash": ps.published_hash,
        "profiles": [_profile_doc(p) for p in ps.profiles],
    }
    verify_document(doc, "<export>")  # the file we write must pass our own verification
    return doc


def render_snapshot(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, default_flow_style=False)


def write_atomic(path: str | Path, text: str) -> None:
    """Atomic like every file taudash writes, but 0644: a snapshot is a review artifact meant to be
    shared (TauGrid's own export does the same); it holds profile declarations, no credentials."""
    paths.write_atomic(path, text, mode=0o644)


def export_snapshot(source: RuleContext | Store | ProfileSet, path: str | Path) -> dict[str, Any]:
    doc = build_snapshot(source)
    try:
        write_atomic(path, render_snapshot(doc))
    except OSError as exc:
        raise ProfileSnapshotError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return doc


# --- verifying --------------------------------------------------------------------------

# Go reads snapshots through sigs.k8s.io/yaml + encoding/json, which matches keys without regard
# to case; yaml.v3 writes metav1.Condition keys lower-cased (`observedgeneration`). Accept both.
_PROFILE_KEYS = (
    "name description applicability gpusPerWorker workerCount mode placement defaultLocalQueue executionTarget "
    "priorities localQueues clusterQueues resourceFlavors topologies workloadPriorityClasses podPriorityClasses "
    "conditions"
).split()
_NESTED_KEYS = {
    "applicability": "teams lanes namespaces".split(),
    "priorities": "workloadPriorityClassName podPriorityClassName disableDefaultPriorities".split(),
    "localQueues": "namespace name clusterQueue".split(),
    "conditions": "type status observedGeneration lastTransitionTime reason message".split(),
}


def _canon(d: dict[str, Any], names: list[str]) -> dict[str, Any]:
    lower = {n.lower(): n for n in names}
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = k if k in names else lower.get(str(k).lower(), k)
        if key not in out or k == key:  # an exact spelling wins over a case-folded one, as in Go
            out[key] = v
    return out


def _canon_profile(raw: dict[str, Any]) -> dict[str, Any]:
    p = _canon(raw, _PROFILE_KEYS)
    for key, names in _NESTED_KEYS.items():
        v = p.get(key)
        if isinstance(v, dict):
            p[key] = _canon(v, names)
        elif isinstance(v, list):
            p[key] = [_canon(x, names) if isinstance(x, dict) else x for x in v]
    for c in p.get("conditions") or []:
        # An unquoted YAML timestamp parses as a datetime; it never affects verification.
        if isinstance(c, dict) and "lastTransitionTime" in c and not isinstance(c["lastTransitionTime"], str):
            t = c.pop("lastTransitionTime")
            if isinstance(t, datetime):
                c["lastTransitionTime"] = t.isoformat().replace("+00:00", "Z")
    return p


def _validation_text(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()))
    return f"{loc}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg", "invalid"))


def verify_document(doc: Any, name: str = "<snapshot>") -> VerifiedSnapshot:
    """Check a parsed snapshot the way TauGrid decodes one: envelope, generation, valid profiles,
    every profile Ready at the generation, and the hash."""
    if not isinstance(doc, dict):
        raise ProfileSnapshotError(f"{name}: not a {KIND} (the document is not a mapping)")
    doc = _canon(doc, ["apiVersion", "kind", "tauClusterGeneration", "profileSetHash", "profiles"])
    if doc.get("apiVersion") != API_VERSION:
        raise ProfileSnapshotError(
            f"{name}: unsupported workload profile snapshot apiVersion {doc.get('apiVersion')!r}"
        )
    if doc.get("kind") != KIND:
        raise ProfileSnapshotError(f"{name}: unsupported workload profile snapshot kind {doc.get('kind')!r}")
    gen = doc.get("tauClusterGeneration")
    if isinstance(gen, bool) or not isinstance(gen, int) or gen < 1:
        raise ProfileSnapshotError(f"{name}: tauClusterGeneration must be a positive integer, got {gen!r}")
    raw_profiles = doc.get("profiles")
    if raw_profiles is None:
        raw_profiles = []
    if not isinstance(raw_profiles, list):
        raise ProfileSnapshotError(f"{name}: profiles must be a list")

    models = []
    for i, raw in enumerate(raw_profiles):
        if not isinstance(raw, dict):
            raise ProfileSnapshotError(f"{name}: profiles[{i}] is not a mapping")
        try:
            models.append(ResolvedWorkloadProfile.model_validate(_canon_profile(raw)))
        except ValidationError as exc:
            raise ProfileSnapshotError(f"{name}: profiles[{i}]: {_validation_text(exc)}") from None
    try:
        profiles = normalize_profiles(models)
    except ProfileHashError as exc:
        raise ProfileSnapshotError(f"{name}: {exc}") from None
    for p in profiles:
        problem = validate_profile(p)
        if problem:
            raise ProfileSnapshotError(f"{name}: profile {p.name!r} is invalid: {problem}")
    for p in profiles:
        ready = next((c for c in p.conditions if c.type == "Ready"), None)
        if ready is None:
            raise ProfileSnapshotError(f"{name}: profile {p.name!r} has no Ready condition")
        if not ready.is_true or (ready.observed_generation or 0) != gen:
            raise ProfileSnapshotError(
                f"{name}: profile {p.name!r} Ready condition is not True at TauCluster generation {gen} "
                f"(status {ready.status}, observedGeneration {ready.observed_generation or 0})"
            )
    computed = profile_set_hash(profiles)
    published = doc.get("profileSetHash")
    if published != computed:
        raise ProfileSnapshotError(f"{name}: profileSetHash mismatch: file has {published!r}, calculated {computed!r}")
    return VerifiedSnapshot(generation=gen, profile_set_hash=computed, profiles=tuple(profiles))


def verify(path: str | Path) -> VerifiedSnapshot:
    """Read and verify a snapshot file; ProfileSnapshotError (one line, naming the file) otherwise."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProfileSnapshotError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ProfileSnapshotError(f"{name}: is a directory") from None
    except UnicodeDecodeError as exc:
        raise ProfileSnapshotError(f"{name}: not a text file ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ProfileSnapshotError(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        if text.lstrip().startswith("{"):
            docs = [json.loads(text)]
        else:
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except json.JSONDecodeError as exc:
        raise ProfileSnapshotError(f"{name}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        pos = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ProfileSnapshotError(f"{name}{pos}: invalid YAML: {problem}") from None
    if len(docs) != 1:
        raise ProfileSnapshotError(f"{name}: expected one {KIND} document, found {len(docs)}")
    return verify_document(docs[0], name)
