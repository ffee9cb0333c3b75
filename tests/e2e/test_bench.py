"""`taudash bench`: the synthetic cluster generator and the bench end to end (structure only: no timing
is asserted — the machine is shared and noisy; targets live in docs/benchmarks.md)."""

from __future__ import annotations

import json
import statistics
from collections import Counter

import pytest
from factories import validated_store

from taudash.bench.generate import CAPTURED_AT, SIZES, generate
from taudash.bench.ratios import RATIOS
from taudash.cli import main
from taudash.engine.incremental import derive


@pytest.fixture(scope="module")
def small():
    return generate("S", seed=3)


def test_generator_is_deterministic_per_seed(small):
    assert generate("S", seed=3) == small
    other = generate("S", seed=4)
    assert other != small
    # the declared sizes hold for every seed; Pods follow each seed's mix of admitted, finished and waiting
    # Workloads (a waiting Job has none), so only their count may differ
    assert sum(o["kind"] != "Pod" for o in other) == sum(o["kind"] != "Pod" for o in small)
    assert any(o["kind"] == "Pod" for o in other)


def test_generator_makes_the_declared_sizes(small):
    kinds = Counter(o["kind"] for o in small)
    s = SIZES["S"]
    assert kinds["Node"] == s.nodes
    assert kinds["Workload"] == s.workloads
    assert kinds["Job"] == s.jobs
    assert kinds["RayJob"] == s.rayjobs
    assert kinds["RayService"] == s.rayservices
    assert kinds["Deployment"] == s.deployments
    assert kinds["TauWorkspace"] == s.workspaces
    assert kinds["ClusterQueue"] == s.workspaces
    assert kinds["TauCluster"] == kinds["TauTeam"] == kinds["Cohort"] == 1
    assert kinds["ResourceFlavor"] == 3
    assert SIZES["L"].workloads == 100_000 and SIZES["L"].nodes == 5_000
    assert SIZES["M"].jobs == 10_000


def test_generated_cluster_is_consistent(small):
    view = derive(validated_store(small), CAPTURED_AT)
    rules = Counter(f.rule for f in view.findings)
    assert "DATA-UNREADABLE" not in rules
    # The pool is valid and exactly as the controller would have it: no drift, no conflict.
    assert view.pool.mode == "Automatic" and view.pool.valid is True and view.pool.established
    assert not {"POOL-CONFLICT", "POOL-BUDGET-DRIFT", "POOL-QUEUE-DRIFT", "POOL-UNKNOWN"} & set(rules)
    assert {f.name for f in view.pool.flavors} == {"taugrid-gpu-h100-80gb", "taugrid-gpu-a100-80gb",
                                                    "taugrid-gpu-h200-141gb"}
    # Queue counts are what the Workloads say.
    assert view.cluster_queues
    for q in view.cluster_queues:
        assert q.observed is not None
        assert (q.pending, q.reserving, q.admitted) == (q.observed.pending, q.observed.reserving,
                                                        q.observed.admitted), q.name
    assert sum(q.pending for q in view.cluster_queues) > 0  # the pool is full: some work waits
    assert sum(q.admitted for q in view.cluster_queues) > 0
    assert len(view.workspaces) == SIZES["S"].workspaces
    assert all(w.expected_phase == "Ready" for w in view.workspaces)
    # Retargeted workspaces drain with real blockers.
    assert any(w.drain.state == "Blocked" for w in view.workspaces)


def test_local_queue_counts_match_workloads(small):
    pending: Counter = Counter()
    for o in small:
        if o["kind"] != "Workload":
            continue
        conds = {c["type"]: c["status"] for c in o["status"]["conditions"]}
        if conds.get("QuotaReserved") != "True" and o["spec"]["active"]:
            pending[(o["metadata"]["namespace"], o["spec"]["queueName"])] += 1
    lqs = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in small if o["kind"] == "LocalQueue"}
    assert set(pending) <= set(lqs)
    for key, lq in lqs.items():
        assert lq["status"]["pendingWorkloads"] == pending.get(key, 0), key


FIGURES = {
    "sync_s", "sync_cpu_s", "sync_server_cpu_s", "decode_s", "decode_cpu_s", "sync_vs_decode", "sync_vs_decode_cpu",
    "kubectl_s", "sync_vs_kubectl", "derive_full_s",
    "session_first_view_s", "ui_start_s", "first_paint_max_s", "switch_max_s", "tick_render_max_s",
    "events_per_s", "update_p50_s", "update_p99_s", "incr_p50_s", "incr_p99_s", "key_p95_s", "tick_under_load_s",
    "peak_rss_mib", "sim_rss_mib",
    "ui_composed_s", "ui_screens", "key_cpu_p95_s", "ui_cpu_share",
    # The yardsticks measured in the same run, and every timing target as a ratio to one
    "yardstick_decode_s", "yardstick_table_paint_s", "yardstick_table_render_s", "yardstick_key_s",
    "yardstick_cpu_load_s", "yardstick_cpu_recorder_s",
    *(r.key for r in RATIOS if r.figure not in ("queue_first_paint_s", "queue_tick_s", "queue_key_p95_s")),
}


def test_bench_small_end_to_end_json(capsys):
    code = main(["bench", "--size", "S", "-o", "json", "--stream-seconds", "1.5", "--rate", "300"])
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    assert doc["kind"] == "BenchResult" and doc["size"] == "S"
    assert doc["counts"]["Workload"] >= SIZES["S"].workloads
    assert FIGURES <= set(doc["figures"]), FIGURES - set(doc["figures"])
    for key, f in doc["figures"].items():
        assert set(f) == {"label", "value", "unit", "target", "pass", "note", "runs"}, key
        assert f["value"] is not None, key
        assert f["pass"] is None if f["target"] is None else f["pass"] in (True, False)
        if f["runs"] is not None:  # a median carries its runs
            assert f["value"] == statistics.median(f["runs"]), key
    # Sync and decode interleaved, three pairs; the decode read exactly the pages each sync received.
    sd = doc["syncDecode"]
    assert sd["transport"] == "https" and sd["samePages"] is True
    assert len(sd["rounds"]) == 3 and sd["pages"] >= len(doc["counts"]) and sd["bytes"] > 0
    figs = doc["figures"]
    assert figs["sync_s"]["runs"] == [r["syncSeconds"] for r in sd["rounds"]]
    assert figs["decode_s"]["runs"] == [r["decodeSeconds"] for r in sd["rounds"]]
    assert figs["sync_vs_decode"]["runs"] == [r["syncSeconds"] / r["decodeSeconds"] for r in sd["rounds"]]
    assert "3 interleaved pairs, https, same pages" in figs["sync_vs_decode"]["note"]
    assert len(figs["sync_vs_kubectl"]["runs"]) == 3  # each sync over the one kubectl run
    # Timing targets are ratios: no figure in seconds carries one; each ratio decides pass.
    assert [k for k, f in figs.items() if f["unit"] == "s" and f["target"] is not None] == []
    for r in RATIOS:
        if r.key in figs:
            assert figs[r.key]["unit"] == "x" and figs[r.key]["target"] == r.target, r.key
    assert figs["derive_full_vs_decode"]["runs"] == [
        d / y for d, y in zip(figs["derive_full_s"]["runs"], figs["yardstick_decode_s"]["runs"], strict=True)]
    # Progress went to stderr, never into the JSON.
    assert "[bench" in out.err
    # Every registered screen was visited, the ones without a number key (History, Fleet) too.
    from taudash.screens.registry import REGISTRY

    visited = doc["figures"]["ui_screens"]
    assert visited["value"] == len(REGISTRY) and visited["note"].split(", ") == [*(e.name for e in REGISTRY)][1:] + [
        REGISTRY.home.name]
