"""The pool rule inside a deriver (rules/pool.py PoolPart) keeps a workspace queue's row while its ClusterQueue
is the same object or reads the same for the pool (the rule's fingerprint): the recorder's team sums compare rows
by identity. A row whose queue moved, went or changed team is built again; the view equals a fresh derivation."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from factories import demo_raw_objects, validated_store

from taudash.engine.incremental import IncrementalDeriver
from taudash.engine.model import lookup
from taudash.engine.model.names import TEAM_LABEL
from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.pool import derive_pool

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)


def _setup():
    store = validated_store(demo_raw_objects())
    inc = IncrementalDeriver(store)
    return store, inc, inc.view(NOW).pool


def _put(store, raw: dict) -> None:
    store.upsert(lookup(raw["apiVersion"], raw["kind"]).model.model_validate(raw), raw=raw)


def _cq(store, name: str) -> dict:
    return copy.deepcopy(store.raw("ClusterQueue", name))


def _rows(pool) -> dict:
    return {q.cluster_queue: q for q in pool.queues}


def _scratch(store):
    return derive_pool(RuleContext(store=store, now=NOW))[0]


def test_a_reservation_that_moves_rebuilds_its_row_and_keeps_the_others():
    store, inc, before = _setup()
    train = _cq(store, "tau-ws-train")
    train["status"]["flavorsReservation"][0]["resources"][0]["total"] = "999"
    _put(store, train)
    vision = _cq(store, "tau-ws-vision")  # a new object, only its counts moved: the same for the pool
    vision["status"]["pendingWorkloads"] = 41
    _put(store, vision)
    after = inc.view(NOW).pool
    old, new = _rows(before), _rows(after)
    assert new["tau-ws-train"] is not old["tau-ws-train"]
    assert new["tau-ws-vision"] is old["tau-ws-vision"]
    assert new["tau-ws-eval"] is old["tau-ws-eval"]
    assert after == _scratch(store)
    assert new["tau-ws-train"] != old["tau-ws-train"]


def test_a_queue_that_goes_or_changes_team_is_not_kept():
    store, inc, before = _setup()
    train = _cq(store, "tau-ws-train")
    train["status"]["flavorsReservation"][0]["resources"][0]["total"] = "999"
    _put(store, train)  # the pool re-derives
    store.delete("ClusterQueue", "tau-ws-eval")
    vision = _cq(store, "tau-ws-vision")
    vision["metadata"].setdefault("labels", {})[TEAM_LABEL] = "another"
    _put(store, vision)
    after = inc.view(NOW).pool
    old, new = _rows(before), _rows(after)
    assert after == _scratch(store)
    assert new["tau-ws-eval"].missing and new["tau-ws-eval"] is not old["tau-ws-eval"]  # fail closed: not kept
    assert new["tau-ws-vision"] is not old["tau-ws-vision"]


def test_a_plain_derivation_keeps_nothing():
    store, _, _ = _setup()
    assert _rows(_scratch(store))["tau-ws-eval"] is not _rows(_scratch(store))["tau-ws-eval"]
