"""Write a store as a `taudash/v1 ClusterSnapshot` envelope (the input of `--snapshot`).

Faithful: an exported object is the object as the API served it. Kinds the store keeps raw are
written as kept. The high-volume kinds keep only a slim model (engine/sources/kube.py SLIM_KINDS and
the fast structs): from a live source they are re-read at export time — a paged LIST per kind,
each page written to the file as it arrives, never the whole kind in memory. When no re-read is
possible (no live source, or the LIST fails) the slim model is written as it is, without the
fields it invented (empty defaults), marked `taudash.io/partial: "true"` and named in the
envelope's `notes` — never passed off as the served object.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import IO, Any, TextIO

import yaml

from ..model import BY_KIND, KINDS, ResourceKind
from ..paths import atomic_file
from ..store import AccessState, Store
from .client import api_version, list_path

PARTIAL = "taudash.io/partial"

# A re-reader: the kind's served objects, one page (list of raw dicts) at a time.
Relist = Callable[[ResourceKind], AsyncIterator[list[dict[str, Any]]]]


def kube_relist(source: Any, page_size: int = 500) -> Relist:
    """A re-reader over a started KubeSource: a paged LIST at the version the source reads, through its
    cluster client (client.py)."""

    async def pages(k: ResourceKind) -> AsyncIterator[list[dict[str, Any]]]:
        version = source.version_of(k.kind) or k.versions[0]
        served = api_version(k, version)
        token: str | None = None
        while True:
            query: list[tuple[str, Any]] = [("limit", page_size)]
            if token:
                query.append(("continue", token))
            doc = await source.target.get_json(list_path(k, version), query, source.request_timeout)
            items = doc.get("items") or []
            for raw in items:
                raw.setdefault("apiVersion", served)
            yield items
            token = (doc.get("metadata") or {}).get("continue")
            if not token:
                return

    return pages


def _header(store: Store, context: str | None, captured_at: str) -> dict[str, Any]:
    return {
        "apiVersion": "taudash/v1",
        "kind": "ClusterSnapshot",
        "metadata": {"context": context, "capturedAt": captured_at},
        "access": [
            {"resource": BY_KIND[kind].resource, "state": acc.state.value}
            for kind, acc in sorted(store.access_states().items(), key=lambda kv: BY_KIND[kv[0]].resource)
        ],
    }


# Strings the API requires even when empty (conditions, admission checks, eviction stats).
_MAY_BE_EMPTY = frozenset({"message", "reason", "underlyingCause"})


def _prune(v: Any) -> Any:
    """Drop what a model adds that the served object may not have had: None, "", {} and []."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            x = _prune(x)
            if x is None or x == {} or x == [] or (x == "" and k not in _MAY_BE_EMPTY):
                continue
            out[k] = x
        return out
    if isinstance(v, list):
        return [_prune(x) for x in v]
    return v


def partial_object(obj: Any) -> dict[str, Any]:
    """A model without its raw form: what it holds, marked partial (fields it never read are missing)."""
    try:  # pydantic models know which fields the input set; the fast structs do not
        dumped = obj.model_dump(by_alias=True, mode="json", exclude_none=True, exclude_unset=True)
    except TypeError:
        dumped = obj.model_dump(by_alias=True, mode="json", exclude_none=True)
    out: dict[str, Any] = _prune(dumped)
    meta = out.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), PARTIAL: "true"}
    return out


def _kept(store: Store, k: ResourceKind) -> tuple[list[dict[str, Any]], int]:
    """The kind's objects from the store: raw where kept, else partial; and how many are partial."""
    out, partial = [], 0
    for obj in store.list(k.kind):
        raw = store.raw(k.kind, obj.name, obj.namespace)
        if raw is None:
            raw = partial_object(obj)
            partial += 1
        out.append(raw)
    return out, partial


def _needs_relist(store: Store, k: ResourceKind) -> bool:
    if store.access(k.kind).state is not AccessState.SYNCED:
        return False
    return any(store.raw(k.kind, o.name, o.namespace) is None for o in store.list(k.kind))


class _Writer:
    """The envelope streamed to a text file: header, then `objects:` one item at a time."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.count = 0

    def header(self, doc: dict[str, Any]) -> None:
        self.out.write(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
        self.out.write("objects:\n")

    def objects(self, objs: Iterable[dict[str, Any]]) -> None:
        for o in objs:
            self.out.write(yaml.safe_dump([o], sort_keys=False, allow_unicode=True))
            self.count += 1

    def empty(self) -> None:
        if self.count == 0:  # `objects:` alone would be null
            self.out.write("[]\n")


def _notes(partial: dict[str, int]) -> list[str]:
    return [f"{n} {kind} object(s) are partial (annotation {PARTIAL}: the slim model, not the served object)"
            for kind, n in partial.items() if n]


def snapshot_document(store: Store, context: str | None, captured_at: str) -> dict[str, Any]:
    """The whole envelope in memory, from the store alone (slim kinds without raw are partial)."""
    doc = _header(store, context, captured_at)
    objects: list[dict[str, Any]] = []
    partial: dict[str, int] = {}
    for k in KINDS:
        objs, partial[k.kind] = _kept(store, k)
        objects.extend(objs)
    if notes := _notes(partial):
        doc["notes"] = notes
    doc["objects"] = objects
    return doc


async def relist_kinds(store: Store, relist: Relist) -> tuple[dict[str, tuple[IO[str], int]], dict[str, str]]:
    """Re-read every kind the store holds slim, page by page, into one temporary YAML file per kind
    (disk, not memory). Returns {kind: (file, count)} and {kind: why its re-read failed}."""
    spooled: dict[str, tuple[IO[str], int]] = {}
    failed: dict[str, str] = {}
    for k in KINDS:
        if not _needs_relist(store, k):
            continue
        spool = tempfile.TemporaryFile("w+", encoding="utf-8")
        n = 0
        try:
            async for page in relist(k):
                for raw in page:
                    raw.setdefault("apiVersion", k.api_version)
                    raw.setdefault("kind", k.kind)
                    spool.write(yaml.safe_dump([raw], sort_keys=False, allow_unicode=True))
                    n += 1
        except Exception as exc:  # noqa: BLE001 - any failure: the partial models stand in
            spool.close()
            failed[k.kind] = str(exc) or type(exc).__name__
            continue
        spool.seek(0)
        spooled[k.kind] = (spool, n)
    return spooled, failed


def write_envelope(store: Store, out: TextIO, context: str | None, captured_at: str,
                   spooled: dict[str, tuple[IO[str], int]] | None = None,
                   failed: dict[str, str] | None = None) -> int:
    """Stream the envelope to `out`: kinds in `spooled` from their re-read, the rest from the store."""
    spooled, failed = spooled or {}, failed or {}
    body: list[tuple[ResourceKind, list[dict[str, Any]] | None]] = []
    partial: dict[str, int] = {}
    objs: list[dict[str, Any]] | None
    for k in KINDS:
        if k.kind in spooled:
            body.append((k, None))
        else:
            objs, partial[k.kind] = _kept(store, k)
            body.append((k, objs))
    doc = _header(store, context, captured_at)
    notes = _notes(partial) + [f"{kind}: re-read from the API failed ({why})" for kind, why in failed.items()]
    if notes:
        doc["notes"] = notes
    w = _Writer(out)
    w.header(doc)
    for k, objs in body:
        if objs is not None:
            w.objects(objs)
        else:
            spool, n = spooled[k.kind]
            shutil.copyfileobj(spool, out)
            w.count += n
    w.empty()
    return w.count


async def export_to(store: Store, path: str | Path, context: str | None, captured_at: str,
                    relist: Relist | None = None) -> int:
    """`write_snapshot` to a file, atomically (temp file, fsync, rename) and private (0600)."""
    spooled, failed = await relist_kinds(store, relist) if relist is not None else ({}, {})
    try:
        return _write_file(store, path, context, captured_at, spooled, failed)
    finally:
        for spool, _ in spooled.values():
            spool.close()


def _write_file(store: Store, path: str | Path, context: str | None, captured_at: str,
                spooled: dict[str, tuple[IO[str], int]], failed: dict[str, str]) -> int:
    with atomic_file(path, 0o600) as fh:
        n = write_envelope(store, fh, context, captured_at, spooled, failed)
    return n


def export_snapshot(store: Store, path: str | Path, context: str | None, captured_at: str) -> int:
    """From the store alone (no live source): slim kinds without raw are written partial."""
    return _write_file(store, path, context, captured_at, {}, {})
