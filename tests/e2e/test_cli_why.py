"""`taudash why NS/NAME`: the WorkloadWaitReport contract (docs/queue-insight.md) on the demo snapshot."""

from __future__ import annotations

import json

from tools import yamlc

from taudash.cli import main
from taudash.loading import DEMO_SNAPSHOT

PENDING = "train/job-ctx-ablation-32k-bc6fa"  # waits for 4 more H100 GPUs in tau-ws-train


def run_json(capsys, *argv):
    code = main(["why", *argv, "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_demo_pending_workload_contract(capsys):
    code, d = run_json(capsys, PENDING, "--demo")
    assert code == 0
    assert (d["apiVersion"], d["kind"]) == ("taudash/v1", "WorkloadWaitReport")
    assert set(d) == {"apiVersion", "kind", "workload", "queue", "reasons", "ahead", "flavors", "preemption"}
    assert d["workload"]["owner"] == {"kind": "Job", "name": "ctx-ablation-32k"}
    assert d["workload"]["requests"]["nvidia.com/gpu"] == "8"
    q = d["queue"]
    assert (q["localQueue"], q["clusterQueue"], q["cohort"], q["positionSource"]) == (
        "jobqueue", "tau-ws-train", "tau-team-research", "estimated")
    assert q["positionInClusterQueue"] == len(d["ahead"]) == 1
    top = d["reasons"][0]
    assert top["code"] == "InsufficientQuota" and top["severity"] == "waiting"
    assert top["details"]["shortfall"] == {"taugrid-gpu-h100-80gb/nvidia.com/gpu": "4"}
    kueue = next(r for r in d["reasons"] if r["code"] == "KueueCondition")
    assert kueue["details"]["reason"] == "WaitingForQuota" and kueue["details"]["agreesWithEstimate"] is True
    gpu = next(f for f in d["flavors"] if f["flavor"] == "taugrid-gpu-h100-80gb" and f["resource"] == "nvidia.com/gpu")
    assert (gpu["requested"], gpu["available"], gpu["mode"]) == ("8", "4", "Preempt")
    assert {"flavor", "resource", "requested", "available", "nominal", "borrowingLimit", "lendingLimitOfOthers",
            "cohortLendable", "reservedBy"} <= set(gpu)
    assert gpu["reservedBy"] and all(h["amount"] for h in gpu["reservedBy"])
    # A different flavor's node label: Kueue's message says it does not match, and so do we.
    a100 = next(f for f in d["flavors"] if f["flavor"] == "taugrid-gpu-a100-80gb")
    assert a100["mode"] == "NotMatching"
    p = d["preemption"]
    assert p["possible"] is False and p["policy"]["withinClusterQueue"] == "LowerPriority"


def test_table_output_speaks_in_an_operators_words(capsys):
    assert main(["why", PENDING, "--demo"]) == 0
    out = capsys.readouterr().out
    # the JSON's 0-based position 1 is the second in line
    assert "InsufficientQuota" in out and "position #2 in ClusterQueue, #2 in LocalQueue" in out
    assert "   1. waits   InsufficientQuota" in out and " 11 " not in out  # numbered from 1, not by rank
    assert "requested 8 GPUs, available now 4 GPUs, most ever 64 GPUs" in out
    assert "requested 88 cores, available now 105.5 cores" in out and "105520m" not in out
    assert "requested 1,600 GiB, available now 2,316.8 GiB" in out and "Ki" not in out
    # short of GPUs, and preemption cannot help: said together, never "[Preempt]" beside "preemption: no"
    assert "short now: waits for quota to be released (no preemption, see below)" in out
    assert "[Preempt]" not in out and "preemption: no:" in out
    assert "1 Workload ahead in ClusterQueue" in out and "(s)" not in out
    assert "    #1 train/job-longctx-sft-h200-b-0aa54" in out


def test_a_jobs_name_resolves_to_its_workload(capsys):
    assert main(["why", "train/ctx-ablation-32k", "--demo"]) == 0
    captured = capsys.readouterr()
    assert "Job/ctx-ablation-32k → Workload train/job-ctx-ablation-32k-bc6fa" in captured.err
    assert captured.out.startswith("Workload train/job-ctx-ablation-32k-bc6fa")
    code, d = run_json(capsys, "train/ctx-ablation-32k", "--demo")
    assert code == 0 and d["workload"]["name"] == "job-ctx-ablation-32k-bc6fa"


def test_not_found_and_bad_name_exit_2_in_one_line(capsys):
    assert main(["why", "train/nope", "--demo"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not found" in err
    assert main(["why", "no-namespace", "--demo"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def _snapshot_without(tmp_path, resource: str, kind: str):
    doc = yamlc.load(DEMO_SNAPSHOT.read_text())
    doc["objects"] = [o for o in doc["objects"] if o["kind"] != kind]
    for a in doc["access"]:
        if a["resource"] == resource:
            a["state"] = "Forbidden"
    path = tmp_path / "snap.yaml"
    path.write_text(yamlc.dump(doc))
    return path


def test_unreadable_cluster_queues_say_unknown_never_fits(tmp_path, capsys):
    path = _snapshot_without(tmp_path, "clusterqueues.kueue.x-k8s.io", "ClusterQueue")
    code, d = run_json(capsys, PENDING, "--snapshot", str(path))
    assert code == 0
    assert d["reasons"][0]["code"] == "Unknown"
    assert not {"FitsNow", "InsufficientQuota"} & {r["code"] for r in d["reasons"]}
    assert d["preemption"]["possible"] is None


def test_unreadable_workloads_cannot_find_the_workload(tmp_path, capsys):
    path = _snapshot_without(tmp_path, "workloads.kueue.x-k8s.io", "Workload")
    assert main(["why", PENDING, "--snapshot", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unreadable" in err


def test_every_demo_workload_gets_a_consistent_report():
    from datetime import UTC, datetime

    from taudash.engine.rules.base import RuleContext
    from taudash.engine.rules.queue_order import cluster_queue_orders
    from taudash.engine.rules.why import quota_inputs, why_waiting_report
    from taudash.engine.sources.snapshot import load_snapshot

    store = load_snapshot(DEMO_SNAPSHOT).store
    ctx = RuleContext(store=store, now=datetime(2026, 11, 30, 9, tzinfo=UTC))
    inputs, orders = quota_inputs(ctx), cluster_queue_orders(ctx)
    seen = set()
    for w in store.list("Workload"):
        r = why_waiting_report(ctx, w.namespace, w.name, inputs=inputs, orders=orders)
        top = r.reasons[0].code
        seen.add(top)
        if w.finished:
            assert top == "Finished"
        elif w.admitted:
            assert top == "Admitted"
        else:
            assert top not in ("Finished", "Admitted", "Unknown")
        assert (r.queue.position_in_cluster_queue is None) == (w.quota_reserved or w.finished or not w.spec.active)
    assert {"Finished", "Admitted", "InsufficientQuota"} <= seen
