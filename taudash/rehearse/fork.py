"""The fork: a consistent copy of everything the engine reads, taken from a synced store.

The copy is taken in one synchronous pass (no await), so on the event loop that feeds the store no
watch event can land half-way through it. Kinds the live source keeps slim (models only, no raw
JSON: engine/sources/kube.py SLIM_KINDS) are copied from their models: the fields the engine reads,
not every field the API server holds. The fork says which kinds those are, and which kinds were not
readable (their access state carries over: a rehearsal fails closed where the real run would).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from taudash.engine.model import KINDS
from taudash.engine.store import AccessState, Store


@dataclass
class Fork:
    objects: list[dict[str, Any]]
    now: float  # epoch seconds of the copy: where the rehearsal's simulated time starts
    access: dict[str, str] = field(default_factory=dict)  # kind -> state, for kinds not Synced
    partial: list[str] = field(default_factory=list)  # kinds copied from slim models (no raw JSON kept)
    context: str | None = None
    cluster: dict[str, Any] | None = None  # the ClusterIdentity (server, uid) of the forked cluster

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for obj in self.objects:
            out[obj.get("kind", "?")] = out.get(obj.get("kind", "?"), 0) + 1
        return dict(sorted(out.items()))

    def describe(self) -> dict[str, Any]:
        return {"objects": len(self.objects), "kinds": self.counts(), "partialKinds": list(self.partial),
                "access": dict(self.access), "context": self.context, "cluster": self.cluster}


def fork_store(store: Store, now: float, context: str | None = None, cluster: Any = None) -> Fork:
    """Copy a store (call it where nothing else mutates the store meanwhile: the event loop or under
    the session lock). `cluster`: a ClusterIdentity or its dict."""
    objects: list[dict[str, Any]] = []
    partial: set[str] = set()
    for k in KINDS:
        for obj in store.list(k.kind):
            raw = store.raw(k.kind, obj.name, obj.namespace)
            if raw is None:
                partial.add(k.kind)
                raw = obj.model_dump(by_alias=True, mode="json", exclude_none=True)
                raw.setdefault("kind", k.kind)
                if not raw.get("apiVersion"):
                    raw["apiVersion"] = (f"{k.group}/{k.versions[0]}" if k.group else k.versions[0])
            objects.append(raw)  # the simulator clones every seeded object: the store's dicts stay untouched
    access = {kind: a.state.value for kind, a in store.access_states().items() if a.state is not AccessState.SYNCED}
    ident = cluster.to_dict() if hasattr(cluster, "to_dict") else cluster
    return Fork(objects, now, access, sorted(partial), context, ident)
