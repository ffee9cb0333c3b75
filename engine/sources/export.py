"""Write a store as a `taudash/v1 ClusterSnapshot` envelope (the input of `--snapshot`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..model import BY_KIND, KINDS
from ..paths import write_atomic
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


def export_snapshot(store: Store, path: str | Path, context: str | None, captured_at: str) -> int:
    doc = snapshot_document(store, context, captured_at)
    write_atomic(path, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), mode=0o600)
    return len(doc["objects"])
