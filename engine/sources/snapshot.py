"""Snapshot source: cluster snapshot files (docs/rules.md#output-contract) into a Store.

Accepted: a YAML or JSON multi-document stream of Kubernetes objects, `kind: List`, or the
`taudash/v1 ClusterSnapshot` envelope with access states. Unknown kinds are counted and
skipped; Secrets are never loaded. One bad object is reported and never hides the rest.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..model import BY_RESOURCE, KINDS, QuantityError, lookup
from ..model.kinds import NEVER_READ
from ..store import AccessState, Store
from ..text import clean
from .snapshot_yaml import yaml_documents


class SnapshotError(Exception):
    """The file cannot be used at all (missing, unreadable, not YAML/JSON). One line, with position."""


@dataclass
class LoadIssue:
    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        pos = f":{self.line}" if self.line else ""
        # One line, inert: names and keys in the message come from the file.
        return f"{self.path}{pos}: {clean(self.message)}"


@dataclass
class LoadResult:
    store: Store
    issues: list[LoadIssue] = field(default_factory=list)
    unknown_kinds: Counter[str] = field(default_factory=Counter)
    context: str | None = None
    captured_at: str | None = None
    objects: int = 0


def _describe_validation(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    msg = err.get("msg", "invalid")
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    extra = f" (+{len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{loc}: {msg}{extra}" if loc else f"{msg}{extra}"


def _yaml_docs(text: str, path: str) -> list[tuple[int | None, Any]]:
    try:
        return yaml_documents(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        pos = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SnapshotError(f"{path}{pos}: invalid YAML: {problem}") from None
    except RecursionError:
        raise SnapshotError(f"{path}: invalid YAML: nested too deeply") from None
    except ValueError as exc:  # a constructor refusing a scalar, e.g. an integer of thousands of digits
        raise SnapshotError(f"{path}: invalid YAML: {str(exc).splitlines()[0][:120]}") from None


# Parsed documents of the large files read lately, by their text's digest, as JSON: a process that loads
# the same big snapshot again (the demo, behind every simulator start and `--demo` session) decodes JSON
# in milliseconds instead of constructing the YAML again (~0.5 s for the demo). A copy per call: callers
# own (and mutate) what they get.
_PARSED: OrderedDict[bytes, str] = OrderedDict()
_PARSED_LOCK = threading.Lock()
_PARSED_MIN_CHARS = 32_768
_PARSED_ENTRIES = 4


def _read_docs(text: str, path: str) -> list[tuple[int | None, Any]]:
    if len(text) < _PARSED_MIN_CHARS:
        return _parse_docs(text, path)
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _PARSED_LOCK:
        cached = _PARSED.get(key)
        if cached is not None:
            _PARSED.move_to_end(key)
    if cached is not None:
        return [(line, doc) for line, doc in json.loads(cached)]
    docs = _parse_docs(text, path)
    try:
        encoded = json.dumps(docs)
    except (TypeError, ValueError):  # a YAML value JSON cannot hold (a date, a set): parsed each time
        return docs
    if json.loads(encoded) != [list(d) for d in docs]:  # e.g. a mapping with integer keys: JSON makes them text
        return docs
    with _PARSED_LOCK:
        _PARSED[key] = encoded
        while len(_PARSED) > _PARSED_ENTRIES:
            _PARSED.popitem(last=False)
    return docs


def _parse_docs(text: str, path: str) -> list[tuple[int | None, Any]]:
    stripped = text.lstrip()
    if stripped.startswith("{") or stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SnapshotError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
        except RecursionError:
            raise SnapshotError(f"{path}: invalid JSON: nested too deeply") from None
        except ValueError as exc:  # e.g. an integer of thousands of digits
            raise SnapshotError(f"{path}: invalid JSON: {str(exc).splitlines()[0][:120]}") from None
        return [(1, d) for d in data] if isinstance(data, list) else [(1, data)]
    return _yaml_docs(text, path)


def load_documents(docs: list[tuple[int | None, Any]], path: str = "<objects>",
                   store: Store | None = None) -> LoadResult:
    """Load parsed documents (line, object) into a store. Used by files and tests alike."""
    result = LoadResult(store=store or Store())
    access: dict[str, AccessState] = {}
    items: list[tuple[int | None, str, Any]] = []
    for line, doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            result.issues.append(LoadIssue(path, line, f"document is a {type(doc).__name__}, not a Kubernetes object"))
            continue
        if doc.get("kind") == "ClusterSnapshot" and str(doc.get("apiVersion", "")).startswith("taudash/"):
            meta = doc.get("metadata") or {}
            if not isinstance(meta, dict):
                result.issues.append(LoadIssue(path, line, "ClusterSnapshot metadata is not a mapping"))
                meta = {}
            result.context = _text_or_none(meta.get("context"))
            result.captured_at = _text_or_none(meta.get("capturedAt"))
            for entry in _as_list(doc.get("access"), "ClusterSnapshot access", path, line, result):
                if not isinstance(entry, dict):
                    result.issues.append(LoadIssue(path, line, f"access entry {entry!r} is not a mapping"[:200]))
                    continue
                info = BY_RESOURCE.get(str(entry.get("resource")))
                try:
                    state = AccessState(str((entry or {}).get("state")))
                except ValueError:
                    result.issues.append(LoadIssue(path, line, f"access entry {entry!r} has an unknown state"))
                    continue
                if info is not None:
                    access[info.kind] = state
            objs = _as_list(doc.get("objects"), "ClusterSnapshot objects", path, line, result)
            items += [(line, f"objects[{i}]", o) for i, o in enumerate(objs)]
        elif doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List") and "items" in doc):
            objs = _as_list(doc.get("items"), "List items", path, line, result)
            items += [(line, f"items[{i}]", o) for i, o in enumerate(objs)]
        else:
            items.append((line, "", doc))

    store = result.store
    for line, where, obj in items:
        prefix = f"{where}: " if where else ""
        if not isinstance(obj, dict) or "kind" not in obj or "apiVersion" not in obj:
            result.issues.append(LoadIssue(path, line, f"{prefix}not a Kubernetes object (needs apiVersion and kind)"))
            continue
        api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
        if kind in NEVER_READ:
            continue
        info = lookup(api_version, kind)
        if info is None:
            result.unknown_kinds[f"{kind}.{api_version}"] += 1
            continue
        meta = obj.get("metadata")
        label = f'{kind} "{meta.get("name")}"' if isinstance(meta, dict) and meta.get("name") else kind
        if not isinstance(meta, dict):
            result.issues.append(LoadIssue(path, line, f"{prefix}{kind} has no metadata"))
            continue
        if not meta.get("name"):
            result.issues.append(LoadIssue(path, line, f"{prefix}{kind} has no metadata.name"))
            continue
        labels = meta.get("labels")
        if info.label_selector and not info.selects(labels if isinstance(labels, dict) else {}):
            continue  # not one of the objects taudash reads of this kind (another controller's Lease)
        if info.namespaced and not meta.get("namespace"):
            result.issues.append(LoadIssue(path, line, f"{prefix}{label} is namespaced but has no metadata.namespace"))
            continue
        try:
            model = info.model.model_validate(obj)
        except ValidationError as exc:
            result.issues.append(LoadIssue(path, line, f"{prefix}{label}: {_describe_validation(exc)}"))
            continue
        except QuantityError as exc:  # pragma: no cover - pydantic wraps it
            result.issues.append(LoadIssue(path, line, f"{prefix}{label}: {exc}"))
            continue
        store.upsert(model, raw=obj)
        result.objects += 1
    for k in KINDS:
        store.set_access(k.kind, access.get(k.kind, AccessState.SYNCED))
    result.issues.sort(key=lambda i: i.line or 0)
    return result


def _as_list(value: Any, what: str, path: str, line: int | None, result: LoadResult) -> list[Any]:
    """A list part of a document; anything else is one issue (a string is not a list of objects)."""
    if value is None:
        return []
    if not isinstance(value, list):
        result.issues.append(LoadIssue(path, line, f"{what} is a {type(value).__name__}, not a list"))
        return []
    return value


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def load_snapshot(path: str | Path) -> LoadResult:
    p = Path(path)
    name = str(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SnapshotError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise SnapshotError(f"{name}: is a directory, not a snapshot file") from None
    except PermissionError:
        raise SnapshotError(f"{name}: permission denied") from None
    except UnicodeDecodeError as exc:
        raise SnapshotError(f"{name}: not a text file ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise SnapshotError(f"{name}: cannot read: {exc.strerror}") from None
    docs = _read_docs(text, name)
    if not any(d is not None for _, d in docs):
        raise SnapshotError(f"{name}: empty snapshot (no documents)")
    return load_documents(docs, name)


def store_from_objects(objects: list[dict[str, Any]]) -> Store:
    """Build a fully synced store from plain object dicts (tests, tools). Raises on a bad object."""
    result = load_documents([(None, o) for o in objects])
    if result.issues:
        raise ValueError("; ".join(str(i) for i in result.issues))
    return result.store
