"""Write a store as a `taudash/v1 ClusterSnapshot` envelope (the input of `--snapshot`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from ..model import BY_KIND, KINDS
from ..store import Store


def snapshot_document(store: Store, context: str | None, captured_at: str) -> dict[str, Any]:
    objects: list[dict[str, Any]] = []
    for k in KINDS:
        for obj in store.list(k.kind):
            raw = store.raw(k.kind, obj.name, obj.namespace)
            if raw is None:  # built in-process without a raw form: serialise the model
                raw = obj.model_dump(by_alias=True, mode="json", exclude_none=True)
            objects.append(raw)
    return {
        "apiVersion": "taudash/v1",
        "kind": "ClusterSnapshot",
        "metadata": {"context": context, "capturedAt": captured_at},
        "access": [
            {"resource": BY_KIND[kind].resource, "state": acc.state.value}
            for kind, acc in sorted(store.access_states().items(), key=lambda kv: BY_KIND[kv[0]].resource)
        ],
        "objects": objects,
    }


def write_atomic(path: str | Path, text: str, mode: int = 0o600) -> None:
    """Temp file in the same directory, fsync, chmod, rename: a crash never leaves half a file."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(target.parent or Path("."), os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def export_snapshot(store: Store, path: str | Path, context: str | None, captured_at: str) -> int:
    doc = snapshot_document(store, context, captured_at)
    write_atomic(path, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), mode=0o600)
    return len(doc["objects"])
