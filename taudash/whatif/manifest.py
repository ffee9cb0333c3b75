"""The object a what-if is asked about: one Job, RayJob, Deployment (Kueue-managed) or Workload manifest.

Anything else is refused with one line (the command exits 2): several documents, a list, another kind,
no name. The namespace defaults to `default`, as `kubectl apply` without `-n` on a default context.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import yaml

KINDS = {"Job": "batch/", "RayJob": "ray.io/", "Deployment": "apps/", "Workload": "kueue.x-k8s.io/"}
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")


class ManifestError(ValueError):
    """A manifest whatif cannot ask about; str() is the one line the command prints."""


@dataclass(frozen=True)
class Manifest:
    obj: dict[str, Any]  # the object to create, without server-set fields or status

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"]["namespace"])

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.obj["metadata"].get("labels") or {})

    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def parse(text: str, where: str = "manifest") -> Manifest:
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise ManifestError(f"{where}: not valid YAML{at}: {getattr(exc, 'problem', None) or exc}") from None
    if not docs:
        raise ManifestError(f"{where}: empty: give one Job, RayJob, Deployment or Workload")
    if len(docs) > 1:
        raise ManifestError(f"{where}: {len(docs)} documents: give one object per what-if")
    return from_object(docs[0], where)


def from_object(doc: Any, where: str = "manifest") -> Manifest:
    if not isinstance(doc, dict):
        raise ManifestError(f"{where}: expected a Kubernetes object (a mapping), got {type(doc).__name__}")
    kind, api = doc.get("kind"), doc.get("apiVersion")
    if kind not in KINDS:
        shown = f"kind {kind!r}" if kind else "no kind"
        raise ManifestError(f"{where}: {shown}: whatif takes a Job, RayJob, Deployment or Workload")
    if not isinstance(api, str) or not api.startswith(KINDS[kind]):
        raise ManifestError(f"{where}: apiVersion {api!r} is not a {kind}'s ({KINDS[kind]}…)")
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ManifestError(f"{where}: metadata.name is required (generateName is not predicted)")
    if not isinstance(doc.get("spec"), dict):
        raise ManifestError(f"{where}: {kind} {meta['name']} has no spec")
    obj = copy.deepcopy(doc)
    obj.pop("status", None)
    meta = obj["metadata"]
    for key in SERVER_FIELDS:
        meta.pop(key, None)
    ns = meta.get("namespace") or "default"
    if not isinstance(ns, str):
        raise ManifestError(f"{where}: metadata.namespace must be a string")
    meta["namespace"] = ns
    labels = meta.get("labels")
    if labels is not None and (not isinstance(labels, dict)
                               or not all(isinstance(v, str) for v in labels.values())):
        raise ManifestError(f"{where}: metadata.labels must map names to strings")
    return Manifest(obj)


def from_text_or_path(text: str, path: str) -> Manifest:
    """What the dashboard's modal gives: a path (read here) or the pasted YAML."""
    if path:
        from pathlib import Path

        try:
            text = Path(path).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ManifestError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
        return parse(text, path)
    return parse(text, "the pasted manifest")
