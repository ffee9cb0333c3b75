"""Session.labelled: how many objects of a kind carry a label, counted once and then followed through the store's
changes (the Fleet screen asks for the MultiKueue origin label on every tick; at fleet scale a scan was 0.1 s)."""

from __future__ import annotations

from factories import store_of, workload

from taudash.engine.model import BY_KIND
from taudash.engine.session import Session
from taudash.engine.view import SourceInfo

ORIGIN = "kueue.x-k8s.io/multikueue-origin"


def _labelled(name: str, labels: dict[str, str] | None) -> dict:
    raw = workload(name, "team-a")
    raw["metadata"]["labels"] = {**raw["metadata"].get("labels", {}), **(labels or {})}
    return raw


def _upsert(session: Session, raw: dict) -> None:
    session.store.upsert(BY_KIND["Workload"].model.model_validate(raw), raw=raw)


def test_labelled_counts_then_follows_adds_label_changes_and_deletes():
    s = Session(store_of(_labelled("a", {ORIGIN: "mgr"}), _labelled("b", None)), SourceInfo(type="snapshot"))
    assert s.labelled("Workload", ORIGIN) == 1
    assert s.labelled("Workload", "no-such-label") == 0
    _upsert(s, _labelled("c", {ORIGIN: "mgr"}))  # added with the label
    assert s.labelled("Workload", ORIGIN) == 2
    _upsert(s, _labelled("b", {ORIGIN: "mgr"}))  # gains it
    assert s.labelled("Workload", ORIGIN) == 3
    _upsert(s, _labelled("a", None))  # loses it
    assert s.labelled("Workload", ORIGIN) == 2
    s.store.delete("Workload", "c", "team-a")
    assert s.labelled("Workload", ORIGIN) == 1
    s.store.replace("Workload", [])  # a re-list that found none
    assert s.labelled("Workload", ORIGIN) == 0
    assert s.labelled("Workload", "no-such-label") == 0


def test_labelled_ignores_other_kinds_with_the_label():
    s = Session(store_of(_labelled("a", None)), SourceInfo(type="snapshot"))
    assert s.labelled("Workload", ORIGIN) == 0
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labels": {ORIGIN: "mgr"}}}
    s.store.upsert(BY_KIND["Namespace"].model.model_validate(ns), raw=ns)
    assert s.labelled("Workload", ORIGIN) == 0
