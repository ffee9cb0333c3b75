"""One description per kind (engine/model/kinds.py): the store, the live source and the simulator read it."""

from __future__ import annotations

from factories import workload
from tools.paths import REPO

from taudash.engine.model import BY_KIND, KINDS, lookup
from taudash.engine.model.fast import FastObject
from taudash.engine.model.kinds import DRAIN_KINDS, HIGH_VOLUME, WORKLOAD_SOURCES
from taudash.engine.store import Store


def test_the_kind_sets_are_read_from_the_descriptions():
    assert HIGH_VOLUME == {"Workload", "Job", "RayJob", "RayService", "Deployment", "Pod"}
    # a Pod is many and read slim, but neither blocks a drain nor is a Workload's source object
    assert DRAIN_KINDS == HIGH_VOLUME - {"Pod"} | {"LocalQueue"}
    assert WORKLOAD_SOURCES == HIGH_VOLUME - {"Workload", "Pod"}
    for k in KINDS:
        assert k.codec == ("msgspec" if issubclass(k.model, FastObject) else "pydantic")
        assert (k.kind in HIGH_VOLUME) is k.high_volume


def test_high_volume_kinds_are_scanned_not_label_indexed():
    store = Store()
    wl = workload("w", "train")
    wl["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": "u1"}
    store.upsert(lookup(wl["apiVersion"], "Workload").model.model_validate(wl))
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "train", "labels": {"team": "r"}}}
    store.upsert(BY_KIND["Namespace"].model.model_validate(ns))
    assert store._by_label["Workload"] == {}  # high-volume: no index
    assert ("team", "r") in store._by_label["Namespace"]
    # both are found by label all the same
    assert [o.name for o in store.by_label("Workload", "kueue.x-k8s.io/job-uid", "u1")] == ["w"]
    assert [o.name for o in store.by_label("Namespace", "team", "r")] == ["train"]
    assert store.by_label("Workload", "kueue.x-k8s.io/job-uid", "other") == []


def test_the_simulator_serves_the_engines_short_names():
    from taudash.sim.resources import Registry

    reg = Registry()
    for k in KINDS:
        served = reg.resolve(k.kind).short_names
        if k.group == "kueue.x-k8s.io":
            # Kueue's short names depend on the release the simulator plays (0.19 dropped `wl`); taudash
            # understands every one of them, and keeps `wl` for its own `:` jump.
            assert set(served) <= set(k.short_names), (k.kind, served)
        else:
            assert tuple(served) == tuple(k.short_names), k.kind
            for short in k.short_names:
                assert reg.resolve(short).engine_kind == k.kind
    assert reg.resolve("cq").kind == "ClusterQueue"


def test_well_known_keys_are_spelled_only_in_names_py():
    """Label, annotation and finalizer keys are defined once (engine/model/names.py) and imported:
    a string literal of one anywhere else in engine/, screens/ or taudash/ fails."""
    import ast

    from taudash.engine.model import names

    root = REPO
    keys = {v for k, v in vars(names).items() if k.isupper() and isinstance(v, str)}
    assert "tau.azure.com/gpu-class" in keys and "taudash.io/deactivated-by" in keys
    found = []
    linked = (root / "taudash" / "engine", root / "taudash" / "screens")  # links to the top-level folders
    files = [p for base in ("engine", "screens", "taudash") for p in (root / base).rglob("*.py")
             if not p.is_relative_to(linked[0]) and not p.is_relative_to(linked[1])]
    for p in files:
        if p == root / "engine" / "model" / "names.py":
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in keys:
                found.append(f"{p.relative_to(root)}:{node.lineno}: {node.value}")
    assert files and not found, "\n".join(found)
