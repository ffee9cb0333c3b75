"""bench/generate.py's hot ClusterQueue (the queue view is measured with 10k pending at size L):
the last Pod Workloads go pending to the first workspace's queue; the object count and sizes S/M are unchanged."""

from __future__ import annotations

from collections import Counter
from dataclasses import fields, replace
from datetime import UTC, datetime

from taudash.bench.generate import SIZES, generate, hot_queue
from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.queue_order import cluster_queue_orders
from taudash.engine.sources.snapshot import load_documents

SMALL = replace(SIZES["S"], name="S-hot", hot_pending=300)


def test_the_hot_queue_holds_the_pending_workloads_and_the_count_is_kept():
    objs = generate(SMALL, seed=1)
    plain = generate(SIZES["S"], seed=1)
    # Every kind keeps its count but Pods: a job's Pod exists once it is admitted, and the hot queue's pending
    # Workloads leave budget that admits other jobs.
    kinds, plain_kinds = Counter(o["kind"] for o in objs), Counter(o["kind"] for o in plain)
    assert kinds.pop("Pod") > 0 and plain_kinds.pop("Pod") > 0
    assert kinds == plain_kinds
    store = load_documents([(None, o) for o in objs]).store
    orders = cluster_queue_orders(RuleContext(store, datetime.now(UTC)))
    hot = hot_queue(SMALL)
    assert hot == "tau-ws-ws-000"
    assert len(orders[hot].entries) >= 300
    assert max(len(o.entries) for name, o in orders.items() if name != hot) < 300
    # the status Kueue would publish counts them too
    cq = next(o for o in objs if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == hot)
    assert cq["status"]["pendingWorkloads"] == len(orders[hot].entries)


def test_no_hot_queue_below_l():
    assert hot_queue("S") is None and hot_queue("M") is None
    assert SIZES["S"].hot_pending == SIZES["M"].hot_pending == 0
    assert SIZES["L"].hot_pending == 10_000 and hot_queue("L") == "tau-ws-ws-000"


def test_xl_is_twice_l_in_every_kind_for_the_scaling_table():
    counts = [f.name for f in fields(SIZES["L"]) if f.name not in ("name", "hot_pending")]
    assert counts and all(getattr(SIZES["XL"], c) == 2 * getattr(SIZES["L"], c) for c in counts)
    assert SIZES["XL"].hot_pending == SIZES["L"].hot_pending  # the queue view is measured at the same 10k
