"""The demo cluster (snapshots/demo.yaml): loads cleanly, is reproducible, and tells its story.

The story is checked through the public rules (`engine.incremental.derive`), so a rule change that breaks
what the demo is meant to show fails here, next to the generator that would need the fix.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import datetime

import pytest
from tools.paths import DEMO, REPO

from taudash.engine.incremental import derive
from taudash.engine.model import Quantity
from taudash.engine.rules.base import RuleConfig
from taudash.engine.rules.queues import ObservedCounts
from taudash.engine.sources.snapshot import load_snapshot

GENERATOR = REPO / "taudash" / "sim" / "demo_scenario.py"
GPU = "nvidia.com/gpu"
H100, A100, H200 = "taugrid-gpu-h100-80gb", "taugrid-gpu-a100-80gb", "taugrid-gpu-h200-141gb"
GB200 = "taugrid-gpu-gb200-186gb"


@pytest.fixture(scope="module")
def loaded():
    return load_snapshot(DEMO)


@pytest.fixture(scope="module")
def store(loaded):
    return loaded.store


@pytest.fixture(scope="module")
def now(loaded):
    return datetime.fromisoformat(loaded.captured_at.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def view(store, now):
    return derive(store, now, RuleConfig(storage_claims=("blob-training",)))


def qty(s: str) -> Quantity:
    return Quantity.parse(s)


# --- the file itself ---------------------------------------------------------------------------


def test_demo_loads_with_no_issues_and_no_unknown_kinds(loaded):
    assert loaded.issues == []
    assert not loaded.unknown_kinds
    assert loaded.context == "aks-eastus-prod-demo"
    assert loaded.captured_at == "2026-11-30T09:00:00Z"
    assert all(a.readable for a in loaded.store.access_states().values())


def test_demo_never_contains_secrets():
    assert not re.search(r"^\s*kind: Secret\s*$", DEMO.read_text(encoding="utf-8"), re.MULTILINE)


def test_generator_reproduces_demo_byte_for_byte(tmp_path):
    out = tmp_path / "demo.yaml"
    proc = subprocess.run([sys.executable, "-m", "taudash.sim.demo_scenario", "-o", str(out)], capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == DEMO.read_bytes(), "snapshots/demo.yaml is stale: run python -m taudash.sim.demo_scenario"


def test_object_counts(store):
    counts = {k: store.count(k) for k in store.kinds()}
    assert counts["Node"] == 36 and counts["CSINode"] == 36
    classes = Counter(n.labels.get("tau.azure.com/gpu-class") for n in store.list("Node"))
    assert classes == {"h100-80gb": 9, "a100-80gb": 3, "h200-141gb": 4, "gb200-186gb": 18, None: 2}
    assert (counts["TauCluster"], counts["TauTeam"], counts["TauWorkspace"]) == (1, 1, 3)
    assert counts["Workload"] >= 24 and counts["Job"] + counts["RayJob"] >= 24
    assert counts["MultiKueueCluster"] == 2 and counts["AdmissionCheck"] == 1


# --- consistency the generator promises -----------------------------------------------------------


def test_workloads_are_owned_by_their_sources(store):
    for wl in store.list("Workload"):
        owner = wl.owner
        assert owner is not None and owner.controller, wl.name
        src = store.get(owner.kind, owner.name, wl.namespace)
        assert src is not None, f"{wl.name}: owner {owner.kind} {owner.name} missing"
        assert src.uid == owner.uid == wl.labels["kueue.x-k8s.io/job-uid"]
        assert re.fullmatch(rf"{owner.kind.lower()}-{re.escape(owner.name)}-[0-9a-f]{{5}}", wl.name), wl.name


def test_queue_status_counts_match_the_workloads(view):
    for cq in view.cluster_queues:
        assert cq.observed == ObservedCounts(pending=cq.pending, reserving=cq.reserving, admitted=cq.admitted), cq.name
    by = {q.name: q for q in view.cluster_queues}
    assert (by["tau-ws-train"].pending, by["tau-ws-vision"].pending) == (5, 2)
    assert by["research-multikueue"].reserving == 2 and by["research-multikueue"].admitted == 1


def test_local_queue_status_counts_match_the_workloads(store):
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for wl in store.list("Workload"):
        if wl.finished:
            continue
        c = counts[(wl.namespace, wl.spec.queue_name)]
        if wl.quota_reserved:
            c[1] += 1
            c[2] += int(wl.admitted)
        else:
            c[0] += 1
    for lq in store.list("LocalQueue"):
        st = lq.status
        assert [st.pending_workloads, st.reserving_workloads,
                st.admitted_workloads] == counts[(lq.namespace, lq.name)], (
            f"{lq.namespace}/{lq.name}"
        )


def test_flavor_reservation_and_usage_sum_the_workloads(store):
    reserved: dict[tuple[str, str, str], Quantity] = defaultdict(lambda: Quantity(0))
    used: dict[tuple[str, str, str], Quantity] = defaultdict(lambda: Quantity(0))
    for wl in store.list("Workload"):
        if wl.finished or not wl.quota_reserved:
            continue
        for psa in wl.status.admission.pod_set_assignments:
            for res, val in psa.resource_usage.items():
                key = (wl.status.admission.cluster_queue, psa.flavors[res], res)
                reserved[key] += val
                if wl.admitted:
                    used[key] += val
    for cq in store.list("ClusterQueue"):
        for entries, expected in ((cq.status.flavors_reservation, reserved), (cq.status.flavors_usage, used)):
            for fl in entries:
                for r in fl.resources:
                    assert r.total == expected[(cq.name, fl.name, r.name)], (cq.name, fl.name, r.name)
                    # Workspace queues have nominal 0 in the team cohort: everything they hold is borrowed.
                    assert r.borrowed == (r.total if cq.spec.cohort_name else Quantity(0)), (cq.name, fl.name, r.name)


def _counted(node) -> bool:
    ready = node.condition("Ready")
    return (
        bool(node.labels.get("tau.azure.com/gpu-class"))
        and node.labels.get("kubernetes.io/os") == "linux"
        and ready is not None
        and ready.is_true
        and not node.spec.unschedulable
    )


def test_root_cohort_holds_the_current_inventory(store, view):
    inventory: dict[tuple[str, str], Quantity] = defaultdict(lambda: Quantity(0))
    for node in filter(_counted, store.list("Node")):
        flavor = f"taugrid-gpu-{node.labels['tau.azure.com/gpu-class']}"
        for res, val in node.status.allocatable.items():
            inventory[(flavor, res)] += val
    cohort = store.get("Cohort", "tau-team-research")
    (group,) = cohort.spec.resource_groups
    nominal = {(fl.name, r.name): r.nominal_quota for fl in group.flavors for r in fl.resources}
    assert {k: v for k, v in nominal.items() if v} == dict(inventory)
    assert nominal[(A100, "rdma/ib")] == 0 and nominal[(H100, "rdma/ib")] == qty("64")

    (co,) = [c for c in view.cohorts if c.name == "tau-team-research"]
    assert not co.implicit and co.managed and co.team == "research" and co.parent is None
    assert co.members == ["tau-ws-eval", "tau-ws-train", "tau-ws-vision"]
    gpu = {fl.name: next(r for r in fl.resources if r.name == GPU) for fl in co.flavors}
    assert (gpu[H200].nominal, gpu[H200].reserved, gpu[H200].borrowed) == (qty("24"), qty("32"), qty("32"))


# --- the story, through the rules -------------------------------------------------------------------


def test_workspaces_ready_ready_degraded(view):
    by = {w.name: w for w in view.workspaces}
    assert {n: (w.phase, w.expected_phase, w.stale) for n, w in by.items()} == {
        "train": ("Ready", "Ready", False),
        "eval": ("Ready", "Ready", False),
        "vision": ("Degraded", "Degraded", False),
    }
    ident = next(c for c in by["eval"].conditions if c.type == "WorkloadIdentityReady")
    assert (ident.status, ident.reason) == ("False", "ServiceAccountNotReady") and "client id mismatch" in ident.message
    queue = next(c for c in by["vision"].conditions if c.type == "QueueReady")
    assert queue.status == "False" and 'backing ClusterQueue "tau-ws-vision" is not ready' in queue.message


def test_pool_is_valid_and_h200_is_overcommitted(view):
    pool = view.pool
    assert (pool.mode, pool.team, pool.cohort) == ("Automatic", "research", "tau-team-research")
    assert pool.valid is True and pool.established and not pool.zeroed and pool.conflicts == []
    by = {f.name: f for f in pool.flavors}
    assert set(by) == {H100, A100, H200, GB200}
    assert [(e.node, e.reason) for e in by[H100].excluded] == [("aks-h100-27604139-vmss000006", "Unschedulable")]
    assert [(e.node, e.reason) for e in by[H200].excluded] == [("aks-h200-80417362-vmss000003", "NotReady")]
    assert by[A100].excluded == [] and by[GB200].excluded == []
    summary = {n: (f.nodes, f.inventory[GPU], f.budget[GPU], f.reserved[GPU], f.headroom[GPU]) for n, f in by.items()}
    assert summary == {
        H100: (8, qty("64"), qty("64"), qty("60"), qty("4")),
        A100: (3, qty("24"), qty("24"), qty("13"), qty("11")),
        H200: (3, qty("24"), qty("24"), qty("32"), qty("-8")),
        GB200: (18, qty("72"), qty("72"), qty("8"), qty("64")),
    }
    for f in pool.flavors:
        # Budget = inventory on every covered resource; one a flavor lacks (rdma/ib off h100) is 0, not unlimited.
        assert f.budget == f.observed_budget and not f.disappeared
        assert {r: v for r, v in f.budget.items() if v} == f.inventory
    assert by[A100].budget["rdma/ib"] == 0
    over = [f for f in view.findings if f.rule == "POOL-OVERCOMMITTED"]
    assert [f.object.name for f in over] == [H200]


def test_eval_retarget_is_blocked_by_one_of_each(view):
    by = {w.name: w for w in view.workspaces}
    assert by["train"].drain.state == by["vision"].drain.state == "NotDraining"
    drain = by["eval"].drain
    assert ((drain.state, drain.mode, drain.old_namespace, drain.new_namespace)
            == ("Blocked", "Retarget", "eval", "eval-v2"))
    routes = {(r.local_queue, r.cluster_queue): r for r in drain.routes}
    assert routes[("jobqueue", "tau-ws-eval")].state == "Required"
    assert routes[("jobqueue", "tau-ws-eval")].uid_continuity == "Unchanged"
    assert routes[("shared", "platform-cq")].state == "SelectorIndependent"
    blockers = {(b.kind, b.name) for b in drain.blockers}
    assert {k for k, _ in blockers} == {"Workload", "Job", "RayJob", "RayService", "Deployment"}
    assert {("Job", "prep-4"), ("RayJob", "rl-eval"), ("RayService", "llm"), ("Deployment", "web-ui")} <= blockers
    # Not blockers: the unmanaged Deployment, and work routed through the external queue.
    assert not {n for _, n in blockers} & {"tensorboard", "data-validate"}
    assert all(b.route == "tau-ws-eval" for b in drain.blockers)


def test_eval_identity_is_retained_and_access_is_clean(view):
    eval_ws = next(w for w in view.workspaces if w.name == "eval")
    assert eval_ws.identity.state == "Retained"
    assert eval_ws.identity.retained == ["eval/tau-workload"] and eval_ws.identity.obsolete == []
    rules = {f.rule for f in view.findings}
    assert not rules & {"IDENTITY-REVOCATION-PENDING", "ACCESS-NOT-REVOKED", "ACCESS-UNEXPECTED"}


def test_storage_claim_missing_in_vision_and_blob_driver_missing_on_two_h200_nodes(view):
    by = {w.name: w for w in view.workspaces}
    claims = {(c.namespace, c.name): c for w in view.workspaces for c in w.storage.claims}
    assert claims[("vision", "blob-training")].state == "Missing"
    for ns in ("train", "eval"):
        c = claims[(ns, "blob-training")]
        assert c.phase == "Bound" and c.driver == "blob.csi.azure.com"
        assert c.nodes_missing_driver == ["aks-h200-80417362-vmss000001", "aks-h200-80417362-vmss000002"]
    assert by["vision"].storage.state == "NotReady"


def test_profiles_usable_with_verified_hash_and_one_ambiguous_tuple(view, store):
    prof = view.profiles
    assert prof.usable and prof.generation == 12
    assert prof.profile_set_hash and prof.profile_set_hash == prof.computed_hash
    assert len(prof.profiles) == 7 and all(p.ready for p in prof.profiles)
    assert sorted(p.name for p in prof.profiles if p.execution_target == "multiKueue") == [
        "azure.research.remote.burst",
        "azure.research.remote.training",
    ]
    sel = {(s.namespace, s.team, s.lane): s for s in prof.selections}
    assert sel[("train", "research", "remote")].error == "Ambiguous"
    assert sel[("train", "research", "training")].profile == "azure.research.training.l"
    assert sel[("eval-v2", "research", "evaluation")].profile == "azure.research.eval.gpu"
    ambiguous = [f for f in view.findings if f.rule == "PROFILE-AMBIGUOUS"]
    assert len(ambiguous) == 1 and "lane=remote" in ambiguous[0].message
    # Work submitted at the current generation carries the published hash.
    tc = store.get("TauCluster", "cluster")
    stamped = [j for j in store.list("Job")
               if j.metadata.annotations.get("tau.azure.com/tau-cluster-generation") == "12"]
    assert stamped and all(
        j.metadata.annotations["tau.azure.com/workload-profile-set-hash"]
        == tc.status.workload_profiles.profile_set_hash
        for j in stamped
    )


def test_multikueue_not_ready_only_through_ambiguity(view):
    mk = view.multikueue
    assert mk.state == "NotReady"
    assert {c.id: c.ok for c in mk.checks} == {"M1": True, "M2": True, "M3": True, "M4": True, "M5": False}
    workers = {w.name: (w.active, w.reason) for w in mk.workers}
    assert workers == {"eastus-2": (True, "Active"), "westus-2": (False, "ClientConnectionFailed")}
    assert "connection attempts: 4" in next(w.message for w in mk.workers if w.name == "westus-2")


def test_why_work_waits(view):
    waiting = {(w.namespace, w.name.rsplit("-", 1)[0]): w for w in view.waiting}
    dpo = waiting[("train", "job-dpo-h200-4x")]
    assert (dpo.reason, dpo.cluster_queue) == ("WaitingForQuota", "tau-ws-train")
    assert f"insufficient unused quota for {GPU} in flavor {H200}, 4 more needed" in dpo.message
    assert "4 more needed" in waiting[("train", "job-sweep-lr-3e-4")].message
    assert waiting[("vision", "job-clip-distill")].message == "ClusterQueue tau-ws-vision is inactive"
    remote = waiting[("train", "job-remote-pretrain-b")]
    assert remote.status == "quotaReserved" and "admission check multikueue: Pending" in remote.message


def test_findings_tell_the_story_and_nothing_else(view):
    rules = Counter(f.rule for f in view.findings)
    for rule in ("WS-DEGRADED", "WS-IDENTITY-NOT-READY", "CQ-INACTIVE", "DRAIN-BLOCKED", "POOL-OVERCOMMITTED",
                 "PROFILE-AMBIGUOUS", "MK-NOT-READY", "STORAGE-PVC-MISSING", "STORAGE-CSI-MISSING"):
        assert rules[rule] >= 1, rule
    unexpected = {"WS-STALE", "WS-PHASE-MISMATCH", "POOL-CONFLICT", "POOL-ZEROED", "POOL-BUDGET-DRIFT",
                  "POOL-QUEUE-DRIFT", "POOL-NOT-ESTABLISHED", "DRAIN-UNKNOWN", "DRAIN-QUEUE-REPLACED",
                  "PROFILES-STALE", "PROFILES-NOT-READY", "PROFILES-HASH-MISMATCH", "DATA-UNREADABLE",
                  "CLUSTER-NOT-READY"}
    assert not set(rules) & unexpected
    critical = {(f.rule, f.object.name) for f in view.findings if f.severity.value == "critical"}
    assert critical == {("WS-DEGRADED", "vision"), ("MK-NOT-READY", "cluster")}


def test_status_cli_reads_the_demo(capsys):
    from taudash.cli import main

    assert main(["status", "--snapshot", str(DEMO), "-o", "json"]) == 0
    assert '"kind": "ClusterStatus"' in capsys.readouterr().out


# --- capacity reality: topology, GPU health ---------------------------------------------------------------


def test_gb200_gang_waits_on_the_topology_although_quota_is_free(view, store):
    """Eight whole GB200 trays in one NVLink domain: the pool has 64 GPUs of headroom, but the 1-GPU jobs
    spread over both racks leave each with fewer than eight whole trays free."""
    wl = next(w for w in store.list("Workload") if w.owner is not None and w.owner.name == "nvl-pretrain-70b")
    qr = wl.condition("QuotaReserved")
    assert qr is not None and (qr.status, qr.reason) == ("False", "TopologyPlacementFailed")
    assert qr.message.startswith('couldn\'t assign flavors to pod set main: topology "taugrid-gpu-topology" '
                                 "allows to fit only 7 out of 8 pod(s)")
    assert wl.spec.pod_sets[0].topology_request == {"required": "tau.azure.com/accelerator-domain"}
    gb200 = next(f for f in view.pool.flavors if f.name == GB200)
    assert gb200.headroom[GPU] >= qty("32")  # 8 × 4 GPUs: quota is not what stops it
    racks = Counter(n.labels["tau.azure.com/accelerator-domain"] for n in store.list("Node")
                    if n.labels.get("tau.azure.com/gpu-class") == "gb200-186gb")
    assert racks == {"azure-accelerator-eus-nvl36-r07": 9, "azure-accelerator-eus-nvl36-r08": 9}
    topology = store.get("Topology", "taugrid-gpu-topology")
    assert [lv.node_label for lv in topology.spec.levels] == [
        "tau.azure.com/site", "tau.azure.com/network-domain", "tau.azure.com/accelerator-domain",
        "kubernetes.io/hostname"]
    assert all(f.spec.topology_name == "taugrid-gpu-topology" for f in store.list("ResourceFlavor")
               if f.name.startswith("taugrid-gpu-"))


def test_gpu_health_conditions_from_the_metrics_collector(store):
    """One drain-class fault (its node not cordoned: its Pods still run), one taint-class, one silent
    exporter, one cleared fault kept as False; every other GPU node carries none."""
    faults = {}
    for n in store.list("Node"):
        for c in n.status.conditions:
            if c.type not in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
                faults[(n.name, c.type)] = c.status
    assert faults == {
        ("aks-h100-27604139-vmss000003", "XIDError79"): "True",
        ("aks-gb200-40925117-vmss000013", "GPUThermalViolation"): "True",
        ("aks-a100-51938270-vmss000002", "DcgmExporterUnavailable"): "True",
        ("aks-h100-27604139-vmss000005", "IBSymbolError"): "False",
    }
    assert not store.get("Node", "aks-h100-27604139-vmss000003").spec.unschedulable
