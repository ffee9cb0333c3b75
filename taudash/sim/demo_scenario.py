#!/usr/bin/env python3
"""Build the demo TauGrid cluster (snapshots/demo.yaml, shipped as taudash/data/demo.yaml).

Used by `taudash demo`, the dashboard snapshot tests and the simulator seed. Deterministic: no
randomness and no clock. Every timestamp is relative to CAPTURED_AT, every UID is a uuid5 of the
object's identity, and every total (root Cohort budget, queue counts, flavor reservation and usage,
"N more needed" messages) is computed from the objects it summarises, never typed by hand.

    .venv/bin/python -m taudash.sim.demo_scenario          # rewrites snapshots/demo.yaml
    .venv/bin/python -m taudash.sim.demo_scenario -o FILE  # writes elsewhere (tests compare the bytes)

The story, so that every screen has something real to show:

* Pool (automatic shared capacity, team `research`, root Cohort `tau-team-research`): three GPU
  classes on 16 nodes plus 2 CPU system nodes. h100-80gb has 9 nodes, one cordoned; a100-80gb has 3
  healthy nodes; h200-141gb has 4 nodes, one NotReady since 48 minutes. The root Cohort already holds
  the shrunken inventory, so h200 reservations (32 GPUs) exceed its budget (24): negative headroom,
  nothing evicted, new h200 admissions wait. A workload on the lost node was evicted (NodeFailures).
* Workspaces: `train` Ready; `eval` Ready but retargeting eval -> eval-v2, its drain Blocked by one of
  each blocker kind (unfinished Workload, Job awaiting its Workload, Retrying RayJob, RayService,
  Kueue-managed Deployment at 0 replicas), with a SelectorIndependent route through the external
  `platform-cq`, and WorkloadIdentityReady False (the new namespace's account has a foreign client
  id); `vision` Degraded because its ClusterQueue references a missing AdmissionCheck.
* Storage: PVC `blob-training` Bound in train and eval, missing in vision; two Ready h200 nodes lack
  `blob.csi.azure.com` in their CSINode.
* Profiles: six profiles, all Ready at generation 12, hash verified; two multiKueue profiles share
  (train, research, remote), so implicit selection is Ambiguous and MultiKueue is NotReady (M5).
* MultiKueue: AdmissionCheck `multikueue` Active (SomeActiveClusters), worker eastus-2 connected,
  westus-2 ClientConnectionFailed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from taudash.engine.model import BY_KIND, Node
from taudash.engine.model.kinds import KINDS
from taudash.engine.model.names import (
    ACCELERATOR_DOMAIN_LABEL,
    APP_INSTANCE_LABEL,
    CLUSTER_GENERATION_ANNOTATION,
    DCGM_EXPORTER_UNAVAILABLE,
    DEFAULT_LOCAL_QUEUE_LABEL,
    EXECUTION_TARGET_LABEL,
    GPU_CLASS_LABEL,
    HOSTNAME_LABEL,
    JOB_LABEL,
    JOB_UID_LABEL,
    KUEUE_MANAGED_LABEL,
    LANE_LABEL,
    LOCAL_QUEUE_LABEL,
    MULTIKUEUE_CONTROLLER,
    NETWORK_DOMAIN_LABEL,
    OWNER_UID_LABEL,
    POD_SUSPENDING_PARENT_ANNOTATION,
    PRIORITY_CLASS_LABEL,
    PROFILE_LABEL,
    PROFILE_SET_HASH_ANNOTATION,
    QUEUE_NAME_LABEL,
    RESOURCE_IN_USE_FINALIZER,
    RESULT_SCOPE_LABEL,
    SITE_LABEL,
    TAU_MANAGED_BY_LABEL,
    TEAM_CLEANUP_FINALIZER,
    TEAM_LABEL,
    WORKLOAD_KIND_LABEL,
    WORKLOAD_PROFILE_ANNOTATION,
    WORKSPACE_CLEANUP_FINALIZER,
    WORKSPACE_LABEL,
)
from taudash.engine.model.names import MANAGED_BY_LABEL as MANAGED_BY
from taudash.engine.model.names import TORCHRUN_HOST_SLOT as HOST_SLOT
from taudash.engine.model.quantity import Quantity
from taudash.engine.model.tau import ResolvedWorkloadProfile
from taudash.engine.rules.pool import node_inventory
from taudash.engine.rules.profilehash import normalize_profile, profile_set_hash, validate_profile
from taudash.sim.health import health_condition
from taudash.sim.topology import FLEX_ACCELERATOR_DOMAIN, REQUIRED_TOPOLOGY, derived_labels

# The repository's copy (taudash/data/demo.yaml links to it and ships in the wheel).
DEFAULT_OUTPUT = Path(__file__).resolve().parents[2] / "snapshots" / "demo.yaml"

# --- the cluster, as data ---------------------------------------------------------------------

CAPTURED_AT = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)
CONTEXT = "aks-eastus-prod-demo"
REGION = "eastus"
SUBSCRIPTION = "3c9b6e1a-52d4-4f8e-9a7b-0d1e2f3a4b5c"
NODE_RESOURCE_GROUP = "MC_rg-taugrid-prod_aks-eastus-prod_eastus"
NODE_IMAGE = "AKSUbuntu-2204gen2containerd-202611.10.0"
KUBELET_VERSION = "v1.31.8"

SYSTEM_NS = "tau-system"
TEAM = "research"
COHORT = f"tau-team-{TEAM}"
TAU_GENERATION = 12  # TauCluster generation; 11 -> 12 added azure.research.remote.burst
PROFILES_CHANGED_AT = 55  # minutes before CAPTURED_AT
TOPOLOGY = "taugrid-gpu-topology"
WORKSPACE_QUEUE = "jobqueue"

MANAGER = "tau-core-controller"
GPU = "nvidia.com/gpu"
RDMA = "rdma/ib"
KQ = "kueue.x-k8s.io/v1beta2"
TAU = "tau.azure.com/v1alpha1"
IMAGE = "taugridacr.azurecr.io/research/trainer:2026.11.3"
RAY_IMAGE = "rayproject/ray-ml:2.40.0-py311-gpu"

MIN = 1
HOUR = 60
DAY = 24 * HOUR


@dataclass(frozen=True)
class NodePool:
    agentpool: str
    vmss: str  # the VMSS id in AKS node names
    sku: str
    count: int
    created: int  # minutes before CAPTURED_AT
    capacity: dict[str, str]
    allocatable: dict[str, str]
    gpu_class: str | None = None
    series: str = ""
    product: str = ""
    arch: str = "amd64"
    racks: tuple[str, ...] = ()  # NVLink domains (net.unbounded-cloud.io/accelerator-domain), nodes split evenly


def _gpu_node(mem_cap: str, mem_alloc: str, rdma: bool) -> tuple[dict[str, str], dict[str, str]]:
    cap = {"cpu": "96", "ephemeral-storage": "1055762868Ki", "memory": mem_cap, GPU: "8", "pods": "250", HOST_SLOT: "1"}
    alloc = {"cpu": "95690m", "ephemeral-storage": "973000123051", "memory": mem_alloc, GPU: "8", "pods": "250",
             HOST_SLOT: "1"}
    if rdma:
        cap[RDMA] = alloc[RDMA] = "8"
    return cap, alloc


_H100 = _gpu_node("1980864372Ki", "1876530548Ki", rdma=True)
_A100 = _gpu_node("1980860216Ki", "1876526392Ki", rdma=False)
_H200 = _gpu_node("1929463536Ki", "1825129712Ki", rdma=False)
# A GB200 compute tray: two Grace CPUs and four Blackwell GPUs, one of nine trays of an NVL36 rack.
_GB200 = ({"cpu": "128", "ephemeral-storage": "1055762868Ki", "memory": "943718400Ki", GPU: "4", "pods": "250",
           HOST_SLOT: "1", RDMA: "4"},
          {"cpu": "127690m", "ephemeral-storage": "973000123051", "memory": "880803840Ki", GPU: "4", "pods": "250",
           HOST_SLOT: "1", RDMA: "4"})

POOLS = (
    NodePool("h100", "27604139", "Standard_ND96isr_H100_v5", 9, 212 * DAY, *_H100,
             gpu_class="h100-80gb", series="nd-h100-v5", product="NVIDIA-H100-80GB-HBM3"),
    NodePool("a100", "51938270", "Standard_ND96amsr_A100_v4", 3, 240 * DAY, *_A100,
             gpu_class="a100-80gb", series="nd-a100-v4", product="NVIDIA-A100-SXM4-80GB"),
    NodePool("h200", "80417362", "Standard_ND96isr_H200_v5", 4, 61 * DAY, *_H200,
             gpu_class="h200-141gb", series="nd-h200-v5", product="NVIDIA-H200"),
    NodePool("system", "13795521", "Standard_D16ds_v5", 2, 240 * DAY,
             {"cpu": "16", "ephemeral-storage": "129886128Ki", "memory": "65842384Ki", "pods": "110"},
             {"cpu": "15740m", "ephemeral-storage": "119703055367", "memory": "58795216Ki", "pods": "110"}),
    NodePool("gb200", "40925117", "Standard_ND128isr_NDR_GB200_v6", 18, 45 * DAY, *_GB200,
             gpu_class="gb200-186gb", series="nd-gb200-v6", product="NVIDIA-GB200", arch="arm64",
             racks=("eus-nvl36-r07", "eus-nvl36-r08")),
)

CORDONED = {("h100", 6): 6 * HOUR}  # (agentpool, index) -> minutes since cordon
# GPU health Node conditions from TauGrid's metrics collector: (agentpool, index) -> (type, present, minutes since).
# h100 #3 lost a GPU off the bus (drain class: unhealthy, its Pods still run: UNO has not drained it yet); a GB200
# tray is thermally throttled (taint class: degraded, still placeable); an a100's DCGM exporter went silent
# (health unknown); an h100 recovered from InfiniBand symbol errors (published False, kept).
GPU_HEALTH = {
    ("h100", 3): (("XIDError79", True, 25 * MIN),),
    ("gb200", 13): (("GPUThermalViolation", True, 12 * MIN),),
    ("a100", 2): ((DCGM_EXPORTER_UNAVAILABLE, True, 8 * MIN),),
    ("h100", 5): (("IBSymbolError", False, 3 * HOUR),),
}
NOT_READY = {("h200", 3): 48 * MIN}  # kubelet stopped posting status
BLOB_MISSING = {("h200", 1), ("h200", 2)}  # CSINode lacks blob.csi.azure.com
CSI_DRIVERS = ("disk.csi.azure.com", "file.csi.azure.com", "blob.csi.azure.com")


@dataclass(frozen=True)
class WorkspaceSpec:
    name: str
    generation: int
    created: int
    target: str  # spec.target.namespace
    resolved: str  # status.target.resolvedNamespace
    phase: str
    client_id: str
    group: str  # Entra group (researcher subject) display name


WORKSPACES = (
    WorkspaceSpec("train", 2, 180 * DAY, "train", "train", "Ready", "7d1c2e4f-8a9b-4c3d-9e1f-2a3b4c5d6e7f",
                  "research-train-researchers"),
    WorkspaceSpec("eval", 3, 150 * DAY, "eval-v2", "eval", "Ready", "0b8e4a6c-2d1f-4e3a-8b7c-6d5e4f3a2b1c",
                  "research-eval-researchers"),
    WorkspaceSpec("vision", 1, 40 * DAY, "vision", "vision", "Degraded", "c4a1e2d3-5b6f-4a7e-8c9d-1e2f3a4b5c6d",
                  "research-vision-researchers"),
)
RETARGET_STARTED = 90 * MIN
EVAL_V2_FOREIGN_CLIENT_ID = "e9f8d7c6-b5a4-4321-8fed-cba987654321"
VISION_MISSING_CHECK = "dws-provisioning"
VISION_CHECK_ADDED = 3 * HOUR
STORAGE_CLAIM = "blob-training"
CLAIM_NAMESPACES = ("train", "eval")  # vision's claim is missing

# External and MultiKueue queues (not managed by TauGrid; never pool flavors).
PLATFORM_CQ = "platform-cq"
MK_CQ = "research-multikueue"
MK_LQ = "multikueue"
MK_FLAVOR = "multikueue-remote"
CPU_FLAVOR = "default-cpu"
MK_CONFIG = "mk-config"
MK_CHECK = "multikueue"
MK_WORKERS = (  # (name, active, reason, message, kubeconfig secret)
    ("westus-2", False, "ClientConnectionFailed",
     'Get "https://aks-westus-prod-w2-dns-4f2a1c7e.hcp.westus2.azmk8s.io:443/api?timeout=32s": dial tcp '
     "20.69.12.4:443: i/o timeout, connection attempts: 4, next connection attempt: 2m8s",
     "mk-westus-2-kubeconfig"),
    ("eastus-2", True, "Active", "Connected", "mk-eastus-2-kubeconfig"),
)
MK_DISCONNECTED = 25 * MIN

EXTRA_QUEUES: tuple[tuple[str, str, dict[str, str], dict[str, Any], tuple[str, ...], float], ...] = (
    # (name, flavor, nominal quotas, namespaceSelector, admission checks, created)
    (PLATFORM_CQ, CPU_FLAVOR, {"cpu": "64", "memory": "256Gi", "pods": "200"}, {}, (), 200 * DAY),
    (MK_CQ, MK_FLAVOR, {"cpu": "1536", "memory": "24Ti", GPU: "128", "pods": "64"},
     {"matchLabels": {TEAM_LABEL: TEAM}}, (MK_CHECK,), 20 * DAY),
)
LOCAL_QUEUES = (  # (namespace, name, clusterQueue, managed by the workspace, created)
    ("train", WORKSPACE_QUEUE, "tau-ws-train", "train", 180 * DAY),
    ("train", MK_LQ, MK_CQ, None, 20 * DAY),
    ("eval", WORKSPACE_QUEUE, "tau-ws-eval", "eval", 150 * DAY),
    ("eval", "shared", PLATFORM_CQ, None, 120 * DAY),
    ("eval-v2", WORKSPACE_QUEUE, "tau-ws-eval", "eval", RETARGET_STARTED - 2),
    ("vision", WORKSPACE_QUEUE, "tau-ws-vision", "vision", 40 * DAY),
)

PRIORITY_CLASSES = (("taugrid-default", 1000, "Default TauGrid workloads."),
                    ("taugrid-priority", 1200,
                     "Priority TauGrid workloads; may preempt taugrid-default in the same queue."))
PRIORITY_VALUE = {name: value for name, value, _ in PRIORITY_CLASSES}
DEFAULT_PRIORITIES = {"workloadPriorityClassName": "taugrid-default", "podPriorityClassName": "taugrid-default"}
HIGH_PRIORITIES = {"workloadPriorityClassName": "taugrid-priority", "podPriorityClassName": "taugrid-priority"}


def _profile(name, description, lanes, namespaces, gpus, workers, mode, placement, queue=WORKSPACE_QUEUE,
             target="singleCluster", priorities=DEFAULT_PRIORITIES):
    return {
        "name": name,
        "description": description,
        "applicability": {"teams": [TEAM], "lanes": list(lanes), "namespaces": list(namespaces)},
        "gpusPerWorker": gpus,
        "workerCount": workers,
        "mode": mode,
        "placement": placement,
        "defaultLocalQueue": queue,
        "executionTarget": target,
        "priorities": dict(priorities),
    }


PROFILES = (
    _profile("azure.research.training.l", "Shared GPU training on one GPU.", ["training"], ["train"],
             1, 1, "fixed", "unconstrained"),
    _profile("azure.research.training.2node", "Two full H100 nodes over InfiniBand.", ["distributed"], ["train"],
             8, 2, "fixed", "same-network-domain", priorities=HIGH_PRIORITIES),
    _profile("azure.research.large-memory.xl", "All eight GPUs of one host.", ["large-memory"], ["train"],
             8, 1, "fixed", "same-host"),
    _profile("azure.research.eval.gpu", "Evaluation on one GPU (old and new eval namespaces).", ["evaluation"],
             ["eval", "eval-v2"], 1, 1, "elastic", "unconstrained"),
    _profile("azure.research.remote.training", "Training dispatched to a MultiKueue worker cluster.", ["remote"],
             ["train"], 8, 1, "fixed", "same-host", queue=MK_LQ, target="multiKueue"),
    _profile("azure.research.remote.burst", "Elastic burst training on MultiKueue worker clusters.", ["remote"],
             ["train"], 8, 2, "elastic", "same-network-domain", queue=MK_LQ, target="multiKueue"),
    _profile("azure.research.training.nvl-gang", "Eight GB200 trays inside one NVLink domain.", ["nvlink"],
             ["train"], 4, 8, "fixed", "same-accelerator-domain"),
)
PROFILE_ADDED_AT_GENERATION = {"azure.research.remote.burst": TAU_GENERATION}

# Per-pod requests of the workloads below.
H100_IB_NODE = {"cpu": "88", "memory": "1600Gi", GPU: "8", RDMA: "8", HOST_SLOT: "1"}
FULL_NODE = {"cpu": "88", "memory": "1600Gi", GPU: "8", HOST_SLOT: "1"}
HALF_NODE = {"cpu": "44", "memory": "800Gi", GPU: "4"}
ONE_GPU = {"cpu": "10", "memory": "180Gi", GPU: "1"}
REMOTE_NODE = {"cpu": "88", "memory": "1600Gi", GPU: "8"}
GB200_TRAY = {"cpu": "120", "memory": "800Gi", GPU: "4", RDMA: "4", HOST_SLOT: "1"}
RAY_HEAD = {"cpu": "8", "memory": "32Gi"}
RAY_SUBMITTER = {"cpu": "500m", "memory": "200Mi"}
CPU_SMALL = {"cpu": "4", "memory": "16Gi"}


@dataclass(frozen=True)
class Source:
    """A Job, RayJob, RayService or Deployment and (unless state says otherwise) its Workload.

    state: pending | no-domain (quota fits, no topology domain has the room) | preempted | node-failure | checks
           | admitted | succeeded | failed | awaiting (no Workload yet) | retrying (RayJob, no Workload)
           | serving (RayService, Workload Finished)
    """

    ns: str
    kind: str
    name: str
    queue: str
    state: str
    gpu_class: str | None  # pins the pool flavor; None for CPU and MultiKueue work
    podsets: tuple[tuple[str, int, dict[str, str]], ...]
    age: int  # minutes since creation
    priority: str = "taugrid-default"
    profile: str | None = None
    lane: str | None = None
    detail: str = ""  # pending reason override or eviction detail
    level: str | None = None  # the topology level its pod template requires (Kueue's podset-required-topology)


def _job(ns, name, state, gpu_class, count, pod, age, **kw):
    return Source(ns, "Job", name, kw.pop("queue", WORKSPACE_QUEUE), state, gpu_class, (("main", count, pod),), age,
                  **kw)


def _ray(ns, name, state, gpu_class, workers, pod, age, **kw):
    podsets = (("head", 1, RAY_HEAD), ("gpu-workers", workers, pod), ("submitter", 1, RAY_SUBMITTER))
    return Source(ns, "RayJob", name, WORKSPACE_QUEUE, state, gpu_class, podsets, age, **kw)


SOURCES = (
    # train: H100 nearly full, H200 over budget, A100 with room; MultiKueue work in its own queue.
    _job("train", "llama-pretrain-13b", "admitted", "h100-80gb", 2, H100_IB_NODE, 9 * HOUR,
         priority="taugrid-priority", profile="azure.research.training.2node", lane="distributed"),
    _job("train", "llama-pretrain-34b", "admitted", "h100-80gb", 2, H100_IB_NODE, 135 * MIN,
         priority="taugrid-priority", profile="azure.research.training.2node", lane="distributed"),
    _job("train", "mixtral-sft-h100", "admitted", "h100-80gb", 1, FULL_NODE, 20 * HOUR,
         profile="azure.research.large-memory.xl", lane="large-memory"),
    _job("train", "rlhf-reward-model", "admitted", "h100-80gb", 1, FULL_NODE, 5 * HOUR,
         profile="azure.research.large-memory.xl", lane="large-memory"),
    _job("train", "code-llm-sft", "admitted", "h100-80gb", 1, FULL_NODE, 3 * HOUR,
         profile="azure.research.large-memory.xl", lane="large-memory"),
    _job("train", "ctx-ablation-32k", "preempted", "h100-80gb", 1, FULL_NODE, 7 * HOUR,
         profile="azure.research.large-memory.xl", lane="large-memory", detail="llama-pretrain-34b"),
    _job("train", "sweep-lr-3e-4", "pending", "h100-80gb", 1, FULL_NODE, 40 * MIN,
         profile="azure.research.large-memory.xl", lane="large-memory"),
    _job("train", "finetune-mistral-lora", "admitted", "a100-80gb", 1, HALF_NODE, 4 * HOUR),
    _job("train", "probe-linear-1x", "admitted", "a100-80gb", 1, ONE_GPU, 30 * MIN,
         profile="azure.research.training.l", lane="training"),
    _job("train", "tokenizer-bench", "succeeded", "a100-80gb", 1, ONE_GPU, 26 * HOUR,
         profile="azure.research.training.l", lane="training"),
    _job("train", "grad-accum-debug", "failed", "a100-80gb", 1, ONE_GPU, 14 * HOUR,
         profile="azure.research.training.l", lane="training"),
    _ray("train", "hparam-search", "admitted", "a100-80gb", 2, HALF_NODE, 6 * HOUR),
    _ray("train", "dataset-dedup", "succeeded", "a100-80gb", 1, HALF_NODE, 30 * HOUR),
    _job("train", "longctx-sft-h200", "admitted", "h200-141gb", 1, FULL_NODE, 11 * HOUR,
         profile="azure.research.large-memory.xl", lane="large-memory"),
    _job("train", "longctx-sft-h200-b", "node-failure", "h200-141gb", 1, FULL_NODE, 8 * HOUR,
         profile="azure.research.large-memory.xl", lane="large-memory", detail="h200:3"),
    _job("train", "dpo-h200-4x", "pending", "h200-141gb", 1, HALF_NODE, 25 * MIN),
    _job("train", "remote-pretrain-a", "admitted", None, 1, REMOTE_NODE, 4 * HOUR, queue=MK_LQ,
         profile="azure.research.remote.training", lane="remote"),
    _job("train", "remote-pretrain-b", "checks", None, 1, REMOTE_NODE, 70 * MIN, queue=MK_LQ,
         profile="azure.research.remote.training", lane="remote"),
    # eval: retargeting to eval-v2; one blocker of each kind, plus work that does not block.
    _job("eval", "mmlu-sweep-17", "admitted", "h100-80gb", 1, HALF_NODE, 2 * HOUR),
    _job("eval", "prep-4", "awaiting", "a100-80gb", 1, ONE_GPU, 0,
         profile="azure.research.eval.gpu", lane="evaluation"),
    _ray("eval", "rl-eval", "retrying", "a100-80gb", 1, HALF_NODE, 3 * HOUR),
    Source("eval", "RayService", "llm", WORKSPACE_QUEUE, "serving", "a100-80gb",
           (("head", 1, RAY_HEAD), ("serve-workers", 1, HALF_NODE)), 6 * DAY),
    Source("eval", "Deployment", "web-ui", WORKSPACE_QUEUE, "awaiting", None, (("main", 0, CPU_SMALL),), 12 * DAY),
    Source("eval", "Deployment", "tensorboard", "", "unmanaged", None, (("main", 1, CPU_SMALL),), 30 * DAY),
    _job("eval", "truthfulqa-eval", "succeeded", "a100-80gb", 1, ONE_GPU, 5 * HOUR,
         profile="azure.research.eval.gpu", lane="evaluation"),
    _job("eval", "humaneval-nightly", "failed", "a100-80gb", 1, ONE_GPU, 9 * HOUR,
         profile="azure.research.eval.gpu", lane="evaluation"),
    _job("eval", "data-validate", "admitted", None, 1, CPU_SMALL, 50 * MIN, queue="shared"),
    # vision: its queue is inactive (missing AdmissionCheck); admitted work keeps running on H200.
    _job("vision", "vit-22b-pretrain", "admitted", "h200-141gb", 2, FULL_NODE, 18 * HOUR),
    _job("vision", "sam2-finetune", "admitted", "h200-141gb", 1, FULL_NODE, 7 * HOUR),
    _job("vision", "clip-distill", "pending", "h200-141gb", 1, HALF_NODE, 2 * HOUR),
    _job("vision", "detr-eval", "succeeded", "h200-141gb", 1, ONE_GPU, 28 * HOUR),
    _ray("vision", "seg-augment", "pending", "h200-141gb", 1, HALF_NODE, 100 * MIN),
    # GB200: 1-GPU jobs that kube-scheduler spread over both NVL36 racks leave each with fewer than eight
    # whole trays free, so the eight-tray gang cannot start although 64 GPUs of quota are free.
    _job("train", "kernel-bench-fp4", "admitted", "gb200-186gb", 1, ONE_GPU, 95 * MIN,
         profile="azure.research.training.l", lane="training"),
    _job("train", "vllm-smoke-gb200", "admitted", "gb200-186gb", 1, ONE_GPU, 80 * MIN,
         profile="azure.research.training.l", lane="training"),
    _job("train", "tokenizer-probe-gb200", "admitted", "gb200-186gb", 1, ONE_GPU, 65 * MIN,
         profile="azure.research.training.l", lane="training"),
    _job("train", "nccl-allreduce-check", "admitted", "gb200-186gb", 1, ONE_GPU, 50 * MIN,
         profile="azure.research.training.l", lane="training"),
    _job("train", "moe-sft-gb200", "admitted", "gb200-186gb", 1, GB200_TRAY, 3 * HOUR),
    _job("train", "nvl-pretrain-70b", "no-domain", "gb200-186gb", 8, GB200_TRAY, 35 * MIN,
         profile="azure.research.training.nvl-gang", lane="nvlink", level=ACCELERATOR_DOMAIN_LABEL),
)

RESERVING = ("checks", "admitted")
UNFINISHED_PENDING = ("pending", "no-domain", "preempted", "node-failure")
FINISHED = ("succeeded", "failed", "serving")
NO_WORKLOAD = ("awaiting", "retrying", "unmanaged")


# --- identity, time, versions ---------------------------------------------------------------

_UID_NS = uuid.UUID("8a7c2f4e-1b3d-5e6f-9a0b-7c8d9e0f1a2b")


def uid(kind: str, name: str, ns: str = "") -> str:
    return str(uuid.uuid5(_UID_NS, f"{kind}/{ns}/{name}"))


def ts(minutes_ago: float) -> str:
    return (CAPTURED_AT - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def short_hash(*parts: str, n: int = 5) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:n]


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def q(s: str) -> Quantity:
    return Quantity.parse(s)


def cond(type_: str, status: str, reason: str, message: str, ago: float, gen: int | None = None) -> dict:
    c: dict[str, Any] = {"type": type_, "status": status, "reason": reason, "message": message,
                         "lastTransitionTime": ts(ago)}
    if gen is not None:
        c["observedGeneration"] = gen
    return c


def meta(kind: str, name: str, ns: str | None = None, *, created: float, labels=None, annotations=None,
         generation: int | None = None, owners=None, finalizers=None) -> dict:
    m: dict[str, Any] = {"name": name}
    if ns:
        m["namespace"] = ns
    m["uid"] = uid(kind, name, ns or "")
    if generation is not None:
        m["generation"] = generation
    m["creationTimestamp"] = ts(created)
    if labels:
        m["labels"] = dict(labels)
    if annotations:
        m["annotations"] = dict(annotations)
    if owners:
        m["ownerReferences"] = list(owners)
    if finalizers:
        m["finalizers"] = list(finalizers)
    return m


def owner_ref(obj: dict, controller: bool = True) -> dict:
    ref = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
           "uid": obj["metadata"]["uid"]}
    if controller:
        ref["controller"] = True
        ref["blockOwnerDeletion"] = True
    return ref


def managed(workspace: str | None = None, team: str | None = None) -> dict[str, str]:
    labels = {MANAGED_BY: MANAGER}
    if team:
        labels[TEAM_LABEL] = team
    if workspace:
        labels[WORKSPACE_LABEL] = workspace
    return labels


def qmap(m: dict[str, Quantity]) -> dict[str, str]:
    return {k: m[k].canonical() for k in sorted(m)}


def _sorted_keys(value: Any) -> Any:
    """kubectl prints object fields in key order; lists keep their order."""
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


# --- nodes, storage ----------------------------------------------------------------------------


def node_name(pool: NodePool, i: int) -> str:
    return f"aks-{pool.agentpool}-{pool.vmss}-vmss{i:06d}"


def build_node(pool: NodePool, i: int) -> dict:
    name = node_name(pool, i)
    labels = {
        "agentpool": pool.agentpool,
        "kubernetes.azure.com/agentpool": pool.agentpool,
        "kubernetes.azure.com/cluster": NODE_RESOURCE_GROUP,
        "kubernetes.azure.com/mode": "user" if pool.gpu_class else "system",
        "kubernetes.azure.com/node-image-version": NODE_IMAGE,
        "kubernetes.io/arch": pool.arch,
        HOSTNAME_LABEL: name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/role": "agent",
        "node.kubernetes.io/instance-type": pool.sku,
        "topology.kubernetes.io/region": REGION,
        "topology.kubernetes.io/zone": "0",
    }
    taints = []
    if pool.gpu_class:
        labels |= {
            "kubernetes.azure.com/accelerator": "nvidia",
            "kueue.azure.com/gpu-series": pool.series,
            "nvidia.com/gpu.count": pool.allocatable[GPU],
            "nvidia.com/gpu.product": pool.product,
            GPU_CLASS_LABEL: pool.gpu_class,
        }
        taints.append({"key": "sku", "value": "gpu", "effect": "NoSchedule"})
    if pool.racks:  # the platform names each tray's NVLink domain; TauGrid derives the accelerator domain from it
        labels[FLEX_ACCELERATOR_DOMAIN] = pool.racks[i * len(pool.racks) // pool.count]
    key = (pool.agentpool, i)
    spec: dict[str, Any] = {
        "podCIDR": f"10.244.{POOLS.index(pool) * 16 + i}.0/24",
        "providerID": (
            f"azure:///subscriptions/{SUBSCRIPTION}/resourceGroups/{NODE_RESOURCE_GROUP.lower()}/providers/"
            f"Microsoft.Compute/virtualMachineScaleSets/aks-{pool.agentpool}-{pool.vmss}-vmss/virtualMachines/{i}"
        ),
    }
    heartbeat = 1.0
    ready = cond("Ready", "True", "KubeletReady", "kubelet is posting ready status", pool.created - 5)
    if key in CORDONED:
        spec["unschedulable"] = True
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                       "timeAdded": ts(CORDONED[key])})
    if key in NOT_READY:
        down = NOT_READY[key]
        heartbeat = down + 0.7
        ready = cond("Ready", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.", down - 0.6)
        taints += [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": ts(down - 0.6)},
                   {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": ts(down - 0.7)}]
    if taints:
        spec["taints"] = taints
    pressure = [
        cond(t, "Unknown" if key in NOT_READY else "False",
             "NodeStatusUnknown" if key in NOT_READY else f"KubeletHas{r}",
             "Kubelet stopped posting node status." if key in NOT_READY else m,
             NOT_READY[key] - 0.6 if key in NOT_READY else pool.created - 5)
        for t, r, m in (
            ("MemoryPressure", "SufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "NoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "SufficientPID", "kubelet has sufficient PID available"),
        )
    ]
    conditions = [*pressure, ready]
    for c in conditions:
        c["lastHeartbeatTime"] = ts(heartbeat)
    for ctype, present, since in GPU_HEALTH.get(key, ()):
        c = health_condition(ctype, present, ts(since))
        c["lastHeartbeatTime"] = ts(heartbeat)
        conditions.append(c)
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta("Node", name, created=pool.created - i * 3, labels=labels,
                         annotations={"node.alpha.kubernetes.io/ttl": "0",
                                      "volumes.kubernetes.io/controller-managed-attach-detach": "true"}),
        "spec": spec,
        "status": {
            "addresses": [{"type": "InternalIP", "address": f"10.224.{POOLS.index(pool)}.{4 + i}"},
                          {"type": "Hostname", "address": name}],
            "allocatable": dict(pool.allocatable),
            "capacity": dict(pool.capacity),
            "conditions": conditions,
            "nodeInfo": {
                "architecture": pool.arch,
                "containerRuntimeVersion": "containerd://1.7.27-1",
                "kernelVersion": "5.15.0-1089-azure",
                "kubeProxyVersion": KUBELET_VERSION,
                "kubeletVersion": KUBELET_VERSION,
                "operatingSystem": "linux",
                "osImage": "Ubuntu 22.04.5 LTS",
            },
        },
    }
    # TauGrid's controller derives the topology labels (they cannot be set by hand): the simulator's own rule.
    node["metadata"]["labels"] = dict(sorted({**labels, **derived_labels(node)}.items()))
    return node


def build_csinode(node: dict, pool: NodePool, i: int) -> dict:
    name = node["metadata"]["name"]
    drivers = []
    for d in CSI_DRIVERS:
        if d == "blob.csi.azure.com" and (pool.agentpool, i) in BLOB_MISSING:
            continue
        entry: dict[str, Any] = {"name": d, "nodeID": name}
        if d == "disk.csi.azure.com":
            entry["allocatable"] = {"count": 32 if pool.gpu_class else 16}
            entry["topologyKeys"] = ["topology.disk.csi.azure.com/zone", "topology.kubernetes.io/zone"]
        drivers.append(entry)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": meta("CSINode", name, created=pool.created - i * 3 - 2, owners=[owner_ref(node, controller=False)]),
        "spec": {"drivers": drivers},
    }


def pool_inventory(nodes: list[dict]) -> dict[str, dict[str, Quantity]]:
    """Per pool flavor, the allocatable of its counted nodes: the engine's own pool rule sizes the
    root budget, so the demo cannot disagree with what taudash derives from it."""
    inv: dict[str, dict[str, Quantity]] = {flavor_name(p.gpu_class): {} for p in POOLS if p.gpu_class}
    for flavor, cls in node_inventory((Node.model_validate(n) for n in nodes), {}).items():
        inv[flavor] = dict(cls.inventory)
    return inv


def covered_resources(inventory: dict[str, dict[str, Quantity]]) -> list[str]:
    return sorted({r for per in inventory.values() for r in per})


def flavor_name(gpu_class: str) -> str:
    return f"taugrid-gpu-{gpu_class}"


def build_storage() -> list[dict]:
    out: list[dict[str, Any]] = []
    for d in CSI_DRIVERS:
        spec: dict[str, Any] = {"attachRequired": d == "disk.csi.azure.com", "fsGroupPolicy": "File",
                                "podInfoOnMount": d != "disk.csi.azure.com",
                                "volumeLifecycleModes": ["Persistent"] if d != "file.csi.azure.com"
                                else ["Persistent", "Ephemeral"]}
        out.append({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                    "metadata": meta("CSIDriver", d, created=240 * DAY,
                                     labels={"addonmanager.kubernetes.io/mode": "Reconcile",
                                             "kubernetes.io/cluster-service": "true"}),
                    "spec": spec})
    classes = (
        ("managed-csi", "disk.csi.azure.com", {"skuname": "StandardSSD_LRS"}, True),
        ("azurefile-csi", "file.csi.azure.com", {"skuName": "Standard_LRS"}, False),
        ("azureblob-fuse", "blob.csi.azure.com", {"protocol": "fuse2", "skuName": "Premium_LRS"}, False),
    )
    for name, prov, params, default in classes:
        annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else None
        out.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                    "metadata": meta("StorageClass", name, created=240 * DAY, annotations=annotations,
                                     labels={"addonmanager.kubernetes.io/mode": "EnsureExists",
                                             "kubernetes.io/cluster-service": "true"}),
                    "provisioner": prov, "parameters": params, "reclaimPolicy": "Delete",
                    "volumeBindingMode": "Immediate", "allowVolumeExpansion": True,
                    **({"mountOptions": ["-o allow_other", "--file-cache-timeout-in-seconds=120"]}
                       if prov == "blob.csi.azure.com" else {})})
    return out


# --- TauGrid objects ---------------------------------------------------------------------------


def workspace_labels(ws: WorkspaceSpec) -> dict[str, str]:
    return {WORKSPACE_LABEL: ws.name, TEAM_LABEL: TEAM,
            LOCAL_QUEUE_LABEL: WORKSPACE_QUEUE, DEFAULT_LOCAL_QUEUE_LABEL: WORKSPACE_QUEUE,
            MANAGED_BY: MANAGER}


def build_namespaces() -> list[dict]:
    def ns(name: str, created: float, labels=None, annotations=None) -> dict:
        return {"apiVersion": "v1", "kind": "Namespace",
                "metadata": meta("Namespace", name, created=created,
                                 labels={"kubernetes.io/metadata.name": name, **(labels or {})},
                                 annotations=annotations),
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}

    psa = {"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/audit": "restricted",
           "pod-security.kubernetes.io/warn": "restricted"}
    out = [ns(n, 240 * DAY) for n in ("default", "kube-system", "kueue-system", "kuberay-system", SYSTEM_NS)]
    for ws in WORKSPACES:
        owner = {OWNER_UID_LABEL: uid("TauWorkspace", ws.name, SYSTEM_NS),
                 RESULT_SCOPE_LABEL: f"/data/projects/{ws.name}/runs"}
        out.append(ns(ws.resolved, ws.created, psa | workspace_labels(ws), owner))
        if ws.target != ws.resolved:  # the retarget's new namespace, already stamped by the controller
            out.append(ns(ws.target, RETARGET_STARTED - 1, psa | workspace_labels(ws), owner))
    return sorted(out, key=lambda o: o["metadata"]["name"])


def build_access(ws: WorkspaceSpec) -> list[dict]:
    """Researcher RoleBindings, reader bindings and the workload-identity ServiceAccount(s)."""
    ws_uid = uid("TauWorkspace", ws.name, SYSTEM_NS)
    owner = {OWNER_UID_LABEL: ws_uid}
    subject = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
               "name": str(uuid.uuid5(_UID_NS, f"entra-group/{ws.group}"))}
    namespaces = [ws.resolved] + ([ws.target] if ws.target != ws.resolved else [])
    out: list[dict[str, Any]] = []
    for n in namespaces:
        created = ws.created if n == ws.resolved else RETARGET_STARTED - 1
        out.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": meta("RoleBinding", "tau-researcher-v1", n, created=created,
                                     labels=managed(ws.name), annotations=owner),
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": "tau-researcher-v1"},
                    "subjects": [subject]})
    reader = f"tau-workspace-reader-{ws.name}"
    out.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": meta("RoleBinding", reader, SYSTEM_NS, created=ws.created, labels=managed(ws.name),
                                 annotations=owner),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": reader},
                "subjects": [subject]})
    out.append(service_account(ws.resolved, ws.client_id, ws.created, managed(ws.name), owner))
    if ws.target != ws.resolved:
        # Pre-created by another tool with a stale client id: the controller refuses to adopt it.
        out.append(service_account(ws.target, EVAL_V2_FOREIGN_CLIENT_ID, 20 * DAY,
                                   {MANAGED_BY: "Helm", APP_INSTANCE_LABEL: "eval-platform"},
                                   {"meta.helm.sh/release-name": "eval-platform",
                                    "meta.helm.sh/release-namespace": ws.target}))
    return out


def service_account(ns: str, client_id: str, created: float, labels: dict, annotations: dict) -> dict:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": meta("ServiceAccount", "tau-workload", ns, created=created,
                             labels={**labels, "azure.workload.identity/use": "true"},
                             annotations={**annotations, "azure.workload.identity/client-id": client_id})}


def build_claims() -> list[dict]:
    out: list[dict[str, Any]] = []
    for ns in CLAIM_NAMESPACES:
        ws = next(w for w in WORKSPACES if w.resolved == ns)
        out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": meta("PersistentVolumeClaim", STORAGE_CLAIM, ns, created=ws.created - 10,
                                     annotations={"pv.kubernetes.io/bind-completed": "yes",
                                                  "pv.kubernetes.io/bound-by-controller": "yes",
                                                  "volume.beta.kubernetes.io/storage-provisioner": "blob.csi.azure.com",
                                                  "volume.kubernetes.io/storage-provisioner": "blob.csi.azure.com"},
                                     finalizers=["kubernetes.io/pvc-protection"]),
                    "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "10Ti"}},
                             "storageClassName": "azureblob-fuse", "volumeMode": "Filesystem",
                             "volumeName": f"pvc-{uid('PersistentVolume', STORAGE_CLAIM, ns)}"},
                    "status": {"accessModes": ["ReadWriteMany"], "capacity": {"storage": "10Ti"},
                               "phase": "Bound"}})
    return out


def workspace_conditions(ws: WorkspaceSpec) -> list[dict]:
    g = ws.generation
    rbac = cond("RBACReady", "True", "RoleBindingReady", "researcher RoleBinding tau-researcher-v1 is reconciled",
                ws.created - 2, g)
    queue = cond("QueueReady", "True", "QueueReady", "workspace queue and backing ClusterQueue are readable",
                 ws.created - 2, g)
    identity = cond("WorkloadIdentityReady", "True", "ServiceAccountReady",
                    f'ServiceAccount "{ws.resolved}/tau-workload" carries the configured client id', ws.created - 2, g)
    drift = cond("DriftDetected", "False", "NoDrift", "no drift observed", ws.created - 2, g)
    if ws.name == "eval":
        identity = cond("WorkloadIdentityReady", "False", "ServiceAccountNotReady",
                        f'ServiceAccount "{ws.target}/tau-workload" client id mismatch: has '
                        f'"{EVAL_V2_FOREIGN_CLIENT_ID}", want "{ws.client_id}" (not owned by this workspace)',
                        RETARGET_STARTED - 1, g)
    if ws.name == "vision":
        queue = cond("QueueReady", "False", "QueueNotReady",
                     f'backing ClusterQueue "tau-ws-{ws.name}" is not ready: Active=False AdmissionCheckNotFound: '
                     f"Can't admit new workloads: references missing AdmissionCheck(s): [{VISION_MISSING_CHECK}]",
                     VISION_CHECK_ADDED - 1, g)
    return [rbac, queue, identity, drift]


def build_workspace(ws: WorkspaceSpec) -> dict:
    spec = {
        "authorization": {"mode": "workspace-rbac"},
        "principalRef": {"provider": "entra", "name": ws.group},
        "kubernetesSubject": {"kind": "Group", "name": str(uuid.uuid5(_UID_NS, f"entra-group/{ws.group}"))},
        "role": "tau-researcher-v1",
        "target": {"namespace": ws.target, "createNamespace": True},
        "queue": WORKSPACE_QUEUE,
        "workloadIdentity": {"serviceAccountName": "tau-workload", "clientId": ws.client_id},
        "teamRef": {"name": TEAM},
        "defaults": {"outputRoot": f"/data/projects/{ws.name}/runs", "priority": "default"},
    }
    cq = f"tau-ws-{ws.name}"
    return {
        "apiVersion": TAU,
        "kind": "TauWorkspace",
        "metadata": meta("TauWorkspace", ws.name, SYSTEM_NS, created=ws.created, generation=ws.generation,
                         finalizers=[WORKSPACE_CLEANUP_FINALIZER]),
        "spec": spec,
        "status": {
            "phase": ws.phase,
            "observedGeneration": ws.generation,
            "target": {"resolvedNamespace": ws.resolved},
            "queue": {"localQueue": WORKSPACE_QUEUE, "clusterQueue": cq, "clusterQueueUID": uid("ClusterQueue", cq)},
            "conditions": workspace_conditions(ws),
        },
    }


def build_team() -> dict:
    return {
        "apiVersion": TAU,
        "kind": "TauTeam",
        "metadata": meta("TauTeam", TEAM, SYSTEM_NS, created=200 * DAY, generation=1,
                         finalizers=[TEAM_CLEANUP_FINALIZER]),
        "spec": {},
        "status": {
            "phase": "Ready",
            "observedGeneration": 1,
            "cohort": COHORT,
            "cohortUID": uid("Cohort", COHORT),
            "conditions": [cond("QuotaReady", "True", "QuotaReady", "team quota hierarchy is reconciled",
                                200 * DAY - 1, 1)],
        },
    }


# --- Kueue objects -------------------------------------------------------------------------------


def build_flavors() -> list[dict]:
    out: list[dict[str, Any]] = []
    for p in POOLS:
        if not p.gpu_class:
            continue
        name = flavor_name(p.gpu_class)
        out.append({"apiVersion": KQ, "kind": "ResourceFlavor",
                    "metadata": meta("ResourceFlavor", name, created=p.created - 1, generation=1,
                                     labels={**managed(), GPU_CLASS_LABEL: p.gpu_class},
                                     finalizers=[RESOURCE_IN_USE_FINALIZER]),
                    "spec": {"nodeLabels": {"kubernetes.io/os": "linux", GPU_CLASS_LABEL: p.gpu_class},
                             "nodeTaints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
                             "topologyName": TOPOLOGY}})
    out.append({"apiVersion": KQ, "kind": "ResourceFlavor",
                "metadata": meta("ResourceFlavor", CPU_FLAVOR, created=200 * DAY, generation=1,
                                 finalizers=[RESOURCE_IN_USE_FINALIZER]),
                "spec": {"nodeLabels": {"kubernetes.azure.com/agentpool": "system"}}})
    out.append({"apiVersion": KQ, "kind": "ResourceFlavor",
                "metadata": meta("ResourceFlavor", MK_FLAVOR, created=20 * DAY, generation=1,
                                 finalizers=[RESOURCE_IN_USE_FINALIZER]),
                "spec": {"nodeLabels": {EXECUTION_TARGET_LABEL: "multikueue"}}})
    return out


def build_topology_and_priorities() -> list[dict]:
    out: list[dict[str, Any]] = [{"apiVersion": KQ, "kind": "Topology",
            "metadata": meta("Topology", TOPOLOGY, created=240 * DAY, generation=1, labels=managed(),
                             finalizers=[RESOURCE_IN_USE_FINALIZER]),
            "spec": {"levels": [{"nodeLabel": lbl} for lbl in (
                SITE_LABEL, NETWORK_DOMAIN_LABEL, ACCELERATOR_DOMAIN_LABEL,
                HOSTNAME_LABEL)]}}]
    for name, value, description in PRIORITY_CLASSES:
        out.append({"apiVersion": KQ, "kind": "WorkloadPriorityClass",
                    "metadata": meta("WorkloadPriorityClass", name, created=240 * DAY, generation=1),
                    "value": value, "description": description})
        out.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": meta("PriorityClass", name, created=240 * DAY),
                    "value": value, "description": description, "globalDefault": False,
                    "preemptionPolicy": "PreemptLowerPriority"})
    return out


def build_cohort(inventory: dict[str, dict[str, Quantity]]) -> dict:
    covered = covered_resources(inventory)
    flavors = [{"name": fl, "resources": [{"name": r, "nominalQuota": inventory[fl].get(r, Quantity(0)).canonical()}
                                          for r in covered]}
               for fl in sorted(inventory)]
    return {
        "apiVersion": KQ,
        "kind": "Cohort",
        "metadata": meta("Cohort", COHORT, created=200 * DAY, generation=9, labels=managed(team=TEAM),
                         annotations={OWNER_UID_LABEL: uid("TauTeam", TEAM, SYSTEM_NS)}),
        "spec": {"resourceGroups": [{"coveredResources": covered, "flavors": flavors}]},
    }


@dataclass
class Usage:
    """Per-queue totals, computed from the Workloads (as Kueue's cache computes its status)."""

    pending: int = 0
    reserving: int = 0
    admitted: int = 0
    reserved: dict[tuple[str, str], Quantity] = field(default_factory=lambda: defaultdict(lambda: Quantity(0)))
    used: dict[tuple[str, str], Quantity] = field(default_factory=lambda: defaultdict(lambda: Quantity(0)))

    def add(self, src: Source, assignments: list[dict]) -> None:
        if src.state in UNFINISHED_PENDING:
            self.pending += 1
            return
        if src.state not in RESERVING:
            return
        self.reserving += 1
        admitted = src.state == "admitted"
        self.admitted += int(admitted)
        for psa in assignments:
            for res, val in psa["resourceUsage"].items():
                key = (psa["flavors"][res], res)
                self.reserved[key] = self.reserved[key] + q(val)
                if admitted:
                    self.used[key] = self.used[key] + q(val)


def flavor_usage(spec_flavors: list[dict], totals: dict[tuple[str, str], Quantity], with_borrowed: bool) -> list[dict]:
    out: list[dict[str, Any]] = []
    for fl in spec_flavors:
        resources = []
        for r in sorted(fl["resources"], key=lambda r: r["name"]):
            total = totals.get((fl["name"], r["name"]), Quantity(0))
            entry = {"name": r["name"], "total": total.canonical()}
            if with_borrowed:
                entry["borrowed"] = (total - q(r["nominalQuota"])).max0().canonical()
            resources.append(entry)
        out.append({"name": fl["name"], "resources": resources})
    return out


def queue_status(spec: dict, usage: Usage, active: dict, cohort: bool) -> dict:
    """ClusterQueue/LocalQueue status; `borrowed` only on a ClusterQueue (zero without a cohort)."""
    flavors = [fl for rg in spec["resourceGroups"] for fl in rg["flavors"]]
    return {
        "pendingWorkloads": usage.pending,
        "reservingWorkloads": usage.reserving,
        "admittedWorkloads": usage.admitted,
        "flavorsReservation": flavor_usage(flavors, usage.reserved, with_borrowed=cohort),
        "flavorsUsage": flavor_usage(flavors, usage.used, with_borrowed=cohort),
        "conditions": [active],
    }


def build_cluster_queues(inventory, usage: dict[str, Usage]) -> list[dict]:
    covered = covered_resources(inventory)
    out: list[dict[str, Any]] = []
    for ws in WORKSPACES:
        name = f"tau-ws-{ws.name}"
        spec: dict[str, Any] = {
            "cohortName": COHORT,
            "namespaceSelector": {"matchLabels": {WORKSPACE_LABEL: ws.name}},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Never",
                           "borrowWithinCohort": {"policy": "Never"}},
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            "resourceGroups": [{"coveredResources": covered,
                                "flavors": [{"name": fl,
                                             "resources": [{"name": r, "nominalQuota": "0"} for r in covered]}
                                            for fl in sorted(inventory)]}],
            "stopPolicy": "None",
        }
        active = ("True", "Ready", "Can admit new workloads")
        since = ws.created - 3
        generation = 4
        if ws.name == "vision":
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": VISION_MISSING_CHECK}]}
            active = ("False", "AdmissionCheckNotFound",
                      f"Can't admit new workloads: references missing AdmissionCheck(s): [{VISION_MISSING_CHECK}]")
            since, generation = VISION_CHECK_ADDED, 5
        out.append({"apiVersion": KQ, "kind": "ClusterQueue",
                    "metadata": meta("ClusterQueue", name, created=ws.created - 1, generation=generation,
                                     labels=managed(ws.name, TEAM),
                                     annotations={OWNER_UID_LABEL: uid("TauWorkspace", ws.name, SYSTEM_NS)},
                                     finalizers=[RESOURCE_IN_USE_FINALIZER]),
                    "spec": spec,
                    "status": queue_status(spec, usage[name], cond("Active", *active, since, generation), cohort=True)})
    for name, flavor, nominal, selector, checks, created in EXTRA_QUEUES:
        spec = {
            "namespaceSelector": selector,
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [{"coveredResources": sorted(nominal),
                                "flavors": [{"name": flavor, "resources": [{"name": r, "nominalQuota": nominal[r]}
                                                                           for r in sorted(nominal)]}]}],
            "stopPolicy": "None",
        }
        if checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
        out.append({"apiVersion": KQ, "kind": "ClusterQueue",
                    "metadata": meta("ClusterQueue", name, created=created, generation=2,
                                     finalizers=[RESOURCE_IN_USE_FINALIZER]),
                    "spec": spec,
                    "status": queue_status(spec, usage[name],
                                           cond("Active", "True", "Ready", "Can admit new workloads", created - 1, 2),
                                           cohort=False)})
    return out


def build_local_queues(cluster_queues: list[dict], usage: dict[tuple[str, str], Usage]) -> list[dict]:
    cqs = {c["metadata"]["name"]: c for c in cluster_queues}
    out: list[dict[str, Any]] = []
    for ns, name, cq, ws_name, created in LOCAL_QUEUES:
        cq_obj = cqs[cq]
        cq_active = cq_obj["status"]["conditions"][0]
        if cq_active["status"] == "True":
            active = cond("Active", "True", "Ready", "Can submit new workloads to localQueue", created - 1, 1)
        else:
            active = cond("Active", "False", "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue", 0,
                          1)
            active["lastTransitionTime"] = cq_active["lastTransitionTime"]
        labels = managed(ws_name, TEAM) if ws_name else None
        annotations = {OWNER_UID_LABEL: uid("TauWorkspace", ws_name, SYSTEM_NS)} if ws_name else None
        status = queue_status(cq_obj["spec"], usage[(ns, name)], active, cohort=False)
        out.append({"apiVersion": KQ, "kind": "LocalQueue",
                    "metadata": meta("LocalQueue", name, ns, created=created, generation=1, labels=labels,
                                     annotations=annotations),
                    "spec": {"clusterQueue": cq, "stopPolicy": "None"},
                    "status": status})
    return out


def build_multikueue() -> list[dict]:
    inactive = [w[0] for w in MK_WORKERS if not w[1]]
    out = [
        {"apiVersion": KQ, "kind": "AdmissionCheck",
         "metadata": meta("AdmissionCheck", MK_CHECK, created=20 * DAY, generation=1),
         "spec": {"controllerName": MULTIKUEUE_CONTROLLER,
                  "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": MK_CONFIG}},
         "status": {"conditions": [cond("Active", "True", "SomeActiveClusters",
                                        f"Inactive clusters: [{' '.join(inactive)}]", MK_DISCONNECTED, 1)]}},
        {"apiVersion": KQ, "kind": "MultiKueueConfig",
         "metadata": meta("MultiKueueConfig", MK_CONFIG, created=20 * DAY, generation=2),
         "spec": {"clusters": [w[0] for w in MK_WORKERS]}},
    ]
    for name, active, reason, message, secret in MK_WORKERS:
        since = MK_DISCONNECTED if not active else 20 * DAY
        out.append({"apiVersion": KQ, "kind": "MultiKueueCluster",
                    "metadata": meta("MultiKueueCluster", name, created=20 * DAY, generation=1),
                    "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret}}},
                    "status": {"conditions": [cond("Active", "True" if active else "False", reason, message,
                                                   since, 1)]}})
    return out


# --- sources and their Workloads ------------------------------------------------------------------


def lq_target(ns: str, name: str) -> str:
    return next(cq for n, lq, cq, _, _ in LOCAL_QUEUES if (n, lq) == (ns, name))


def cq_flavors(cq: str, inventory) -> list[str]:
    if cq.startswith("tau-ws-"):
        return sorted(inventory)
    return [next(fl for name, fl, *_ in EXTRA_QUEUES if name == cq)]


def assigned_flavor(src: Source, inventory) -> str:
    cq = lq_target(src.ns, src.queue)
    return flavor_name(src.gpu_class) if src.gpu_class else cq_flavors(cq, inventory)[0]


def pod_usage(src: Source) -> list[tuple[str, int, dict[str, Quantity]]]:
    out = []
    for name, count, pod in src.podsets:
        total = {r: q(v) * count for r, v in pod.items()}
        total["pods"] = Quantity(count)
        out.append((name, count, total))
    return out


def quota_message(src: Source, inventory, reserved: dict[tuple[str, str], Quantity]) -> str:
    """Kueue's flavor-assignment message for a pod set that does not fit (GPU is the binding resource)."""
    cq = lq_target(src.ns, src.queue)
    target = assigned_flavor(src, inventory)
    need = sum((u[GPU] for _, _, u in pod_usage(src) if GPU in u), Quantity(0))
    budget = inventory[target].get(GPU, Quantity(0))
    free = (budget - reserved.get((target, GPU), Quantity(0))).max0()
    parts = [f"insufficient unused quota for {GPU} in flavor {fl}, {(need - free).canonical()} more needed"
             if fl == target else f"flavor {fl} doesn't match node affinity" for fl in cq_flavors(cq, inventory)]
    return f"couldn't assign flavors to pod set {src.podsets[0][0]}: " + ", ".join(parts)


def team_reservations(inventory) -> dict[tuple[str, str], Quantity]:
    totals: dict[tuple[str, str], Quantity] = defaultdict(lambda: Quantity(0))
    for src in SOURCES:
        if src.state in RESERVING and src.gpu_class:
            fl = assigned_flavor(src, inventory)
            for _, _, use in pod_usage(src):
                for res, val in use.items():
                    totals[(fl, res)] = totals[(fl, res)] + val
    return totals


def pod_spec(src: Source, pod: dict[str, str], restart: str = "Never") -> dict:
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": RAY_IMAGE if src.kind.startswith("Ray") else IMAGE,
                        "resources": {"requests": dict(pod),
                                      "limits": {k: v for k, v in pod.items() if k not in ("cpu", "memory")} or None}}],
        "restartPolicy": restart,
    }
    if spec["containers"][0]["resources"]["limits"] is None:
        del spec["containers"][0]["resources"]["limits"]
    if src.kind != "Deployment":
        spec["serviceAccountName"] = "tau-workload"
        spec["priorityClassName"] = src.priority
    if src.gpu_class:
        spec["nodeSelector"] = {GPU_CLASS_LABEL: src.gpu_class}
        spec["tolerations"] = [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    return spec


def source_labels(src: Source) -> dict[str, str]:
    labels = {QUEUE_NAME_LABEL: src.queue, PRIORITY_CLASS_LABEL: src.priority,
              TAU_MANAGED_BY_LABEL: "tau", TEAM_LABEL: TEAM,
              WORKLOAD_KIND_LABEL: src.kind.lower()}
    if src.profile:
        labels[PROFILE_LABEL] = src.profile
        labels[LANE_LABEL] = src.lane or ""
    if src.gpu_class:
        labels[GPU_CLASS_LABEL] = src.gpu_class
    return labels


def source_annotations(src: Source, hashes: dict[int, str]) -> dict[str, str] | None:
    if not src.profile:
        return None
    generation = TAU_GENERATION if src.age < PROFILES_CHANGED_AT else TAU_GENERATION - 1
    return {CLUSTER_GENERATION_ANNOTATION: str(generation),
            WORKLOAD_PROFILE_ANNOTATION: src.profile,
            PROFILE_SET_HASH_ANNOTATION: hashes.get(generation, "")}


def started_at(src: Source) -> float:
    return src.age - 1


def build_job(src: Source, hashes) -> dict:
    name, count, pod = src.podsets[0]
    suspended = src.state in ("pending", "no-domain", "preempted", "node-failure", "awaiting", "checks")
    template: dict[str, Any] = {"metadata": {"labels": {JOB_LABEL: src.name}}, "spec": pod_spec(src, pod)}
    if src.level:
        template["metadata"]["annotations"] = {REQUIRED_TOPOLOGY: src.level}
    spec: dict[str, Any] = {
        "backoffLimit": 0 if src.state != "failed" else 2,
        "completionMode": "Indexed" if count > 1 else "NonIndexed",
        "completions": count,
        "parallelism": count,
        "suspend": suspended,
        "template": template,
    }
    if src.queue == MK_LQ:
        spec["managedBy"] = MULTIKUEUE_CONTROLLER
    status: dict[str, Any] = {}
    if src.state == "admitted":
        status = {"active": count, "ready": count, "startTime": ts(started_at(src)),
                  "uncountedTerminatedPods": {}}
    elif src.state == "succeeded":
        end = src.age / 3
        status = {"succeeded": count, "ready": 0, "startTime": ts(started_at(src)), "completionTime": ts(end),
                  "conditions": [cond("SuccessCriteriaMet", "True", "CompletionsReached",
                                      "Reached expected number of succeeded pods", end),
                                 cond("Complete", "True", "CompletionsReached",
                                      "Reached expected number of succeeded pods", end)]}
    elif src.state == "failed":
        end = src.age / 2
        status = {"failed": 3, "ready": 0, "startTime": ts(started_at(src)),
                  "conditions": [cond("FailureTarget", "True", "BackoffLimitExceeded",
                                      "Job has reached the specified backoff limit", end),
                                 cond("Failed", "True", "BackoffLimitExceeded",
                                      "Job has reached the specified backoff limit", end)]}
    elif src.state == "checks":
        status = {}
    elif suspended:
        status = {"conditions": [cond("Suspended", "True", "JobSuspended", "Job suspended",
                                      src.age if src.state != "preempted" else src.age - 5)]}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": meta("Job", src.name, src.ns, created=src.age, generation=1 if suspended else 2,
                             labels=source_labels(src), annotations=source_annotations(src, hashes)),
            "spec": spec, "status": status}


def build_rayjob(src: Source, hashes) -> dict:
    head_pod = src.podsets[0][2]
    group, workers, worker_pod = src.podsets[1]
    cluster = f"{src.name}-raycluster-{short_hash(src.ns, src.name)}"
    spec = {
        "entrypoint": f"python -m research.{src.name.replace('-', '_')}",
        "shutdownAfterJobFinishes": True,
        "submissionMode": "K8sJobMode",
        "suspend": src.state == "pending",
        "backoffLimit": 2,
        "rayClusterSpec": {
            "rayVersion": "2.40.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": pod_spec(src, head_pod, "Always")}},
            "workerGroupSpecs": [{"groupName": group, "replicas": workers, "minReplicas": workers,
                                  "maxReplicas": workers, "rayStartParams": {},
                                  "template": {"spec": pod_spec(src, worker_pod, "Always")}}],
        },
    }
    dashboard = f"{cluster}-head-svc.{src.ns}.svc.cluster.local:8265"
    job_id = f"{src.name}-{short_hash(src.name, 'ray', n=5)}"
    status: dict[str, Any] = {"observedGeneration": 1}
    if src.state == "admitted":
        status |= {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING", "rayClusterName": cluster,
                   "dashboardURL": dashboard, "jobId": job_id, "startTime": ts(started_at(src))}
    elif src.state == "succeeded":
        status |= {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "rayClusterName": cluster,
                   "jobId": job_id, "startTime": ts(started_at(src)), "endTime": ts(src.age / 3), "succeeded": 1,
                   "failed": 0}
    elif src.state == "retrying":
        status |= {"jobDeploymentStatus": "Retrying", "jobStatus": "FAILED", "rayClusterName": cluster,
                   "jobId": job_id, "startTime": ts(started_at(src)), "failed": 1, "succeeded": 0,
                   "reason": "AppFailed",
                   "message": "Ray job driver exited with code 1; retrying the deployment (attempt 2 of 3)"}
    else:
        status |= {"jobDeploymentStatus": "Suspended", "jobStatus": ""}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": meta("RayJob", src.name, src.ns, created=src.age, generation=1, labels=source_labels(src),
                             annotations=source_annotations(src, hashes)),
            "spec": spec, "status": status}


def build_rayservice(src: Source) -> dict:
    head_pod = src.podsets[0][2]
    group, workers, worker_pod = src.podsets[1]
    cluster = f"{src.name}-raycluster-{short_hash(src.ns, src.name)}"
    return {"apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": meta("RayService", src.name, src.ns, created=src.age, generation=3, labels=source_labels(src)),
            "spec": {"serveConfigV2": "applications:\n- name: llm\n  import_path: serve.llm:app\n  route_prefix: /\n",
                     "rayClusterConfig": {
                         "rayVersion": "2.40.0",
                         "headGroupSpec": {"rayStartParams": {},
                                           "template": {"spec": pod_spec(src, head_pod, "Always")}},
                         "workerGroupSpecs": [{"groupName": group, "replicas": workers, "minReplicas": workers,
                                               "maxReplicas": workers, "rayStartParams": {},
                                               "template": {"spec": pod_spec(src, worker_pod, "Always")}}]}},
            "status": {"observedGeneration": 3, "serviceStatus": "Running", "numServeEndpoints": 2,
                       "activeServiceStatus": {"rayClusterName": cluster},
                       "conditions": [cond("Ready", "True", "RayServiceReady",
                                           "Number of serve endpoints is greater than 0",
                                           src.age - 10, 3),
                                      cond("UpgradeInProgress", "False", "NoPendingCluster",
                                           "Active Ray cluster exists and no pending Ray cluster", src.age - 10, 3)]}}


def build_deployment(src: Source) -> dict:
    replicas = src.podsets[0][1]
    template_labels = {"app": src.name}
    template_annotations = None
    labels = {"app": src.name}
    if src.queue:
        template_labels |= {KUEUE_MANAGED_LABEL: "true", QUEUE_NAME_LABEL: src.queue,
                            PRIORITY_CLASS_LABEL: src.priority}
        template_annotations = {POD_SUSPENDING_PARENT_ANNOTATION: f"deployment/{src.name}"}
        labels[QUEUE_NAME_LABEL] = src.queue
    template_meta: dict[str, Any] = {"labels": template_labels}
    if template_annotations:
        template_meta["annotations"] = template_annotations
    generation = 4 if src.queue else 1
    status = {"observedGeneration": generation, "replicas": replicas, "readyReplicas": replicas,
              "availableReplicas": replicas, "updatedReplicas": replicas,
              "conditions": [cond("Available", "True", "MinimumReplicasAvailable",
                                  "Deployment has minimum availability.",
                                  src.age - 5),
                             cond("Progressing", "True", "NewReplicaSetAvailable",
                                  f'ReplicaSet "{src.name}-{short_hash(src.name, n=10)}" has successfully progressed.',
                                  src.age - 5)]}
    if replicas == 0:
        for k in ("readyReplicas", "availableReplicas", "updatedReplicas"):
            del status[k]
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": meta("Deployment", src.name, src.ns, created=src.age, generation=generation, labels=labels,
                             annotations={"deployment.kubernetes.io/revision": str(generation)}),
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": src.name}},
                     "template": {"metadata": template_meta, "spec": pod_spec(src, src.podsets[0][2], "Always")}},
            "status": status}


def build_source(src: Source, hashes) -> dict:
    if src.kind == "Job":
        return build_job(src, hashes)
    if src.kind == "RayJob":
        return build_rayjob(src, hashes)
    if src.kind == "RayService":
        return build_rayservice(src)
    return build_deployment(src)


def workload_conditions(src: Source, cq: str, message: str, evictor: dict | None) -> list[dict]:
    created = src.age - 0.05
    reserved_at = src.age - 0.5
    reserved = cond("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {cq}", reserved_at)
    admitted = cond("Admitted", "True", "Admitted", "The workload is admitted", reserved_at - 0.1)
    running = cond("PodsReady", "True", "Started", "All pods reached readiness and the workload is running",
                   reserved_at - 1.5)
    if src.state == "pending":
        reason = "Inadmissible" if message.startswith("ClusterQueue") else "WaitingForQuota"
        return [cond("QuotaReserved", "False", reason, message, created)]
    if src.state == "no-domain":
        return [cond("Admitted", "False", "NoReservation", "The workload has no reservation", created),
                cond("QuotaReserved", "False", "TopologyPlacementFailed", message, created)]
    if src.state in ("preempted", "node-failure"):
        if src.state == "preempted":
            assert evictor is not None
            evicted_at = next(s.age for s in SOURCES if s.name == src.detail) - 0.4
            evicted = cond("Evicted", "True", "Preempted",
                           f"Preempted to accommodate a workload (UID: {evictor['metadata']['uid']}, JobUID: "
                           f"{evictor['metadata']['labels'][JOB_UID_LABEL]}) due to prioritization "
                           "in the ClusterQueue", evicted_at)
            extra = [cond("Preempted", "True", "InClusterQueue",
                          f"Preempted to accommodate a workload (UID: {evictor['metadata']['uid']}) due to "
                          "prioritization in the ClusterQueue", evicted_at)]
        else:
            evicted_at = NOT_READY[("h200", 3)] - 1
            node = node_name(next(p for p in POOLS if p.agentpool == "h200"), 3)
            evicted = cond("Evicted", "True", "NodeFailures",
                           f"Workload was evicted as there was no replacement for a failed node: {node}", evicted_at)
            extra = []
        return [
            cond("Admitted", "False", "NoReservation", "The workload has no reservation", evicted_at - 0.2),
            evicted,
            cond("PodsReady", "False", "WaitForRecovery", "At least one pod has failed, waiting for recovery",
                 evicted_at - 0.1),
            *extra,
            cond("QuotaReserved", "False", "WaitingForQuota", message, evicted_at - 0.3),
            cond("Requeued", "True", evicted["reason"], "The workload was requeued after eviction", evicted_at - 0.3),
        ]
    if src.state == "checks":
        return [cond("Admitted", "False", "UnsatisfiedAdmissionChecks", "The workload has not all admission checks",
                     reserved_at), reserved]
    if src.state == "admitted":
        return [admitted, running, reserved]
    end = src.age / 3 if src.state in ("succeeded", "serving") else src.age / 2
    finished = {
        "succeeded": ("Succeeded", "Job finished successfully"),
        "failed": ("Failed", "Job has reached the specified backoff limit"),
        "serving": ("OutOfSync", "The workload is out of sync with its RayService after the serve config changed"),
    }[src.state]
    return [admitted, cond("Finished", "True", *finished, end), reserved]


def build_workload(src: Source, owner: dict, inventory, reserved_totals, evictor: dict | None,
                   placement_messages: dict[str, str]) -> dict:
    kind = src.kind.lower()
    name = f"{kind}-{src.name}-{short_hash(src.kind, owner['apiVersion'], src.name, owner['metadata']['uid'])}"
    cq = lq_target(src.ns, src.queue)
    flavor = assigned_flavor(src, inventory)
    pods = {ps: pod for ps, _, pod in src.podsets}
    podsets = [{"name": ps, "count": count, "template": {"spec": pod_spec(src, pods[ps])},
                **({"topologyRequest": {"required": src.level}} if src.level else {})}
               for ps, count, _ in src.podsets]
    assignments = [{"name": ps, "count": count, "flavors": {r: flavor for r in sorted(use)},
                    "resourceUsage": qmap(use)} for ps, count, use in pod_usage(src)]
    message = ""
    if src.state in UNFINISHED_PENDING:
        if cq == "tau-ws-vision":
            message = "ClusterQueue tau-ws-vision is inactive"
        elif src.state == "no-domain":
            message = placement_messages.get(src.name, "")
        else:
            message = quota_message(src, inventory, reserved_totals)
    priority = PRIORITY_VALUE[src.priority]
    status: dict[str, Any] = {"conditions": workload_conditions(src, cq, message, evictor)}
    if src.state not in UNFINISHED_PENDING:
        status["admission"] = {"clusterQueue": cq, "podSetAssignments": assignments}
    if cq == MK_CQ:
        state = "Ready" if src.state == "admitted" else "Pending"
        msg = 'The workload got reservation on "eastus-2"' if state == "Ready" else \
            "The workload is waiting for a reservation on a worker cluster"
        status["admissionChecks"] = [{"name": MK_CHECK, "state": state, "message": msg,
                                      "lastTransitionTime": ts(src.age - 1)}]
        if state == "Ready":
            status["clusterName"] = "eastus-2"
        else:
            status["nominatedClusterNames"] = ["eastus-2"]
    if src.state in ("preempted", "node-failure"):
        reason = "Preempted" if src.state == "preempted" else "NodeFailures"
        # underlyingCause is required by the CRD; Kueue writes "" when there is no finer cause.
        stat = {"reason": reason, "underlyingCause": "InClusterQueue" if src.state == "preempted" else "",
                "count": 1}
        status["schedulingStats"] = {"evictions": [stat]}
        status["requeueState"] = {"count": 1}
    return {"apiVersion": KQ, "kind": "Workload",
            "metadata": meta("Workload", name, src.ns, created=src.age - 0.05, generation=1,
                             labels={JOB_UID_LABEL: owner["metadata"]["uid"]},
                             owners=[owner_ref(owner)], finalizers=[RESOURCE_IN_USE_FINALIZER]),
            "spec": {"active": True, "podSets": podsets, "priority": priority,
                     "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                          "name": src.priority},
                     "queueName": src.queue},
            "status": status}


def build_sources_and_workloads(inventory, hashes, placement_messages: dict[str, str] | None = None
                                ) -> tuple[list[dict], list[dict], dict, dict]:
    """Sources, Workloads, and the per-ClusterQueue and per-LocalQueue totals computed from them."""
    reserved_totals = team_reservations(inventory)
    sources: dict[str, dict] = {}
    workloads: dict[str, dict] = {}
    cq_usage: dict[str, Usage] = defaultdict(Usage)
    lq_usage: dict[tuple[str, str], Usage] = defaultdict(Usage)
    # Evictors first, so a preempted Workload can name the Workload that displaced it.
    order = sorted(SOURCES, key=lambda s: s.state == "preempted")
    for src in order:
        obj = build_source(src, hashes)
        sources[f"{src.ns}/{src.kind}/{src.name}"] = obj
        if src.state in NO_WORKLOAD:
            continue
        evictor = workloads.get(f"{src.ns}/Job/{src.detail}") if src.state == "preempted" else None
        wl = build_workload(src, obj, inventory, reserved_totals, evictor, placement_messages or {})
        workloads[f"{src.ns}/{src.kind}/{src.name}"] = wl
        assignments = wl["status"].get("admission", {}).get("podSetAssignments", [])
        cq_usage[lq_target(src.ns, src.queue)].add(src, assignments)
        lq_usage[(src.ns, src.queue)].add(src, assignments)
    key = {f"{s.ns}/{s.kind}/{s.name}": i for i, s in enumerate(SOURCES)}
    return ([sources[k] for k in sorted(sources, key=key.__getitem__)],
            [workloads[k] for k in sorted(workloads, key=key.__getitem__)],
            cq_usage, lq_usage)


# --- workload profiles and the TauCluster -----------------------------------------------------------


def resolve_profile(p: dict, cluster_queues: dict[str, dict], flavors: dict[str, dict]) -> dict:
    """What the controller publishes for a declared profile (its profile observer), all Ready at TAU_GENERATION."""
    g = TAU_GENERATION
    since = PROFILES_CHANGED_AT if p["name"] in PROFILE_ADDED_AT_GENERATION else 30 * DAY
    lqs = [{"namespace": ns, "name": p["defaultLocalQueue"], "clusterQueue": lq_target(ns, p["defaultLocalQueue"])}
           for ns in p["applicability"]["namespaces"]]
    cqs = sorted({lq["clusterQueue"] for lq in lqs})
    fls = sorted({fl["name"] for cq in cqs for rg in cluster_queues[cq]["spec"]["resourceGroups"]
                  for fl in rg["flavors"]})
    topologies = sorted({flavors[f]["spec"]["topologyName"] for f in fls if flavors[f]["spec"].get("topologyName")})
    pri = p["priorities"]
    if p["executionTarget"] == "multiKueue":
        execution = (f'AdmissionCheck "{MK_CHECK}" has an active MultiKueue config "{MK_CONFIG}" and an active worker '
                     "on every ClusterQueue")
    else:
        execution = "no ClusterQueue uses a MultiKueue AdmissionCheck"
    conditions = [
        cond("ClusterQueuesReady", "True", "ClusterQueuesReady", f"{plural(len(cqs), 'ClusterQueue')} active", since,
             g),
        cond("ExecutionReady", "True", "Ready", execution, since, g),
        cond("LocalQueuesResolved", "True", "LocalQueuesResolved",
             f"{plural(len(lqs), 'applicable LocalQueue')} resolved", since, g),
        cond("PriorityClassesReady", "True", "PriorityClassesReady",
             f'WorkloadPriorityClass "{pri["workloadPriorityClassName"]}" and PriorityClass '
             f'"{pri["podPriorityClassName"]}" exist', since, g),
        cond("Ready", "True", "WorkloadProfileReady", "workload profile is ready", since, g),
        cond("ResourceFlavorsReady", "True", "ResourceFlavorsReady", f"{plural(len(fls), 'ResourceFlavor')} found",
             since, g),
        cond("TopologiesReady", "True", "TopologiesReady",
             f"{len(topologies)} {'Topology' if len(topologies) == 1 else 'Topologies'} found", since, g),
    ]
    resolved = dict(p)
    resolved |= {"localQueues": lqs, "clusterQueues": cqs, "resourceFlavors": fls}
    if topologies:
        resolved["topologies"] = topologies
    resolved |= {"workloadPriorityClasses": [pri["workloadPriorityClassName"]],
                 "podPriorityClasses": [pri["podPriorityClassName"]], "conditions": conditions}
    return resolved


def profile_hashes(resolved: list[dict]) -> dict[int, str]:
    """profileSetHash of the current generation and of the previous one (before remote.burst was added)."""
    models = [ResolvedWorkloadProfile.model_validate(r) for r in resolved]
    for m in models:
        problem = validate_profile(normalize_profile(m))
        assert problem is None, f"{m.name}: {problem}"
    previous = [m for m in models if PROFILE_ADDED_AT_GENERATION.get(m.name, 0) < TAU_GENERATION]
    return {TAU_GENERATION: profile_set_hash(models), TAU_GENERATION - 1: profile_set_hash(previous)}


def desired_state_hash(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, separators=(",", ":"), sort_keys=True).encode()).hexdigest()


def build_tau_cluster(resolved: list[dict], hashes: dict[int, str], flavors: list[dict], topology: dict,
                      nodes: list[dict]) -> dict:
    g = TAU_GENERATION
    label_rules = [{"match": {"vmSizes": [p.sku]},
                    "labels": {"kueue.azure.com/gpu-series": p.series, GPU_CLASS_LABEL: p.gpu_class}}
                   for p in POOLS if p.gpu_class]
    spec = {
        "managementMode": "Reconcile",
        "deletionPolicy": "Retain",
        "nodes": {"labelRules": label_rules},
        "queues": {"ownership": "External", "capacityTeamRef": {"name": TEAM}, "topology": {"name": TOPOLOGY}},
        "workspaceDefaults": {"defaultQueue": WORKSPACE_QUEUE},
        "workloadProfiles": [dict(p) for p in PROFILES],
    }
    gpu_nodes = sum(1 for n in nodes if n["metadata"]["labels"].get(GPU_CLASS_LABEL))
    ready = len(resolved)
    managed_resources = [{"apiVersion": KQ, "kind": "Topology", "name": TOPOLOGY, "uid": topology["metadata"]["uid"],
                          "ownership": "Manage"}]
    managed_resources += [{"apiVersion": KQ, "kind": "ResourceFlavor", "name": f["metadata"]["name"],
                           "uid": f["metadata"]["uid"], "ownership": "Manage"}
                          for f in flavors if f["metadata"]["name"].startswith("taugrid-gpu-")]
    conditions = [
        cond("DeletionBlocked", "False", "NoDeletionBlock", "deletion is not blocked", 200 * DAY, g),
        cond("DriftDetected", "False", "NoConflictObserved", "no node-label or topology drift observed", 12 * DAY, g),
        cond("MultiKueueReady", "True", "Ready",
             f'AdmissionCheck "{MK_CHECK}" has an active MultiKueue config and worker', 20 * DAY, g),
        cond("NodesReady", "True", "NodeLabelsReady",
             f"{gpu_nodes} nodes match a label rule and carry the desired labels",
             12 * DAY, g),
        cond("ObserveOnly", "False", "ReconcileMode", "the controller reconciles managed resources", 200 * DAY, g),
        cond("OwnershipConflict", "False", "NoConflictObserved", "no ownership conflict observed", 200 * DAY, g),
        cond("QueuesReady", "True", "TopologyReady", "TauGrid GPU Topology is reconciled", 12 * DAY, g),
        cond("Ready", "True", "TopologyReconciliationReady", "TauGrid cluster reconciliation is ready", 12 * DAY, g),
        cond("ReconcilePaused", "False", "TopologyReconciliationActive", "topology reconciliation is active",
             200 * DAY, g),
        cond("WorkloadProfilesReady", "True", "WorkloadProfilesReady",
             f"{ready} workload profiles resolved successfully", PROFILES_CHANGED_AT, g),
        cond("WorkspacesReady", "Unknown", "ObservationPending", "workspace aggregation is not enabled", 200 * DAY, g),
    ]
    return {
        "apiVersion": TAU,
        "kind": "TauCluster",
        "metadata": meta("TauCluster", "cluster", created=240 * DAY, generation=g),
        "spec": spec,
        "status": {
            "phase": "Ready",
            "observedGeneration": g,
            "desiredStateHash": desired_state_hash(spec),
            "nodes": {"observed": gpu_nodes, "ready": gpu_nodes, "drifted": 0},
            "queues": {"observed": 1 + len(nodes), "ready": 1 + len(nodes), "drifted": 0},
            "workloadProfiles": {"observedGeneration": g, "observed": len(resolved), "ready": ready,
                                 "drifted": len(resolved) - ready, "profileSetHash": hashes[g],
                                 "profiles": sorted(resolved, key=lambda r: r["name"])},
            "managedResources": managed_resources,
            "conditions": conditions,
        },
    }


# --- pods: where the simulator's kube-scheduler put the admitted work ---------------------------------------


def place_pods(objects: list[dict]) -> tuple[list[dict], dict[str, str]]:
    """The Pods of the admitted Workloads, placed by the simulator's own pods controller (so the file and a
    running simulator agree), dated from their jobs' start and Running; and for each Workload waiting on
    the topology, Kueue's verdict on the free room (the simulator's TAS check, controllers/tas.py)."""
    from taudash.sim.controllers.pods import PodsController, phase_status
    from taudash.sim.controllers.scenario import Knobs, Scenario
    from taudash.sim.controllers.tas import ledger_now, place
    from taudash.sim.world import World

    quiet = Scenario(knobs=Knobs(arrivals_per_hour=0, node_flaps_per_hour=0, cordons_per_hour=0, gpu_faults_per_hour=0))
    world = World.from_objects(objects, captured_at=ts(0), seed=0, scenario=quiet)
    next(c for c in world.controllers if isinstance(c, PodsController)).reconcile([])
    world.sync()
    starts = {(o["metadata"].get("namespace"), o["metadata"]["uid"]): o for o in objects if o["kind"] in
              ("Job", "RayJob", "RayService", "Deployment")}
    pods = []
    for pod in world.db.list("Pod"):
        m = pod["metadata"]
        owner = starts[(m["namespace"], m["ownerReferences"][0]["uid"])]
        src = next(s for s in SOURCES
                   if (s.ns, s.kind, s.name) == (m["namespace"], owner["kind"], owner["metadata"]["name"]))
        started = ts(started_at(src))
        if pod["spec"].get("nodeName"):
            pod["status"] = {**pod["status"], **phase_status(pod["spec"], "Running", started, started)}
        else:
            for c in pod["status"]["conditions"]:
                c["lastTransitionTime"] = started
        pod["metadata"] = meta("Pod", m["name"], m["namespace"], created=started_at(src), labels=m["labels"],
                               annotations=m.get("annotations"), owners=m["ownerReferences"])
        pods.append(pod)
    ledger = ledger_now(world.mirror)
    flavors = {f["metadata"]["name"]: f for f in world.mirror.list("ResourceFlavor")}
    messages = {}
    for src in SOURCES:
        if src.state != "no-domain":
            continue
        wl = next(w for w in world.mirror.list("Workload", src.ns)
                  if w["metadata"]["ownerReferences"][0]["name"] == src.name)
        job = world.mirror.get(src.kind, src.name, src.ns)
        verdict = place(ledger, world.mirror, wl, job,
                        {ps: flavor_name(src.gpu_class or "") for ps, _, _ in src.podsets},
                        flavors)
        assert isinstance(verdict, tuple), f"{src.name} is meant to wait on the topology but fits"
        messages[src.name] = verdict[1]
    world.close()
    return sorted(pods, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])), messages


# --- assembly ------------------------------------------------------------------------------------------


def build_objects() -> list[dict]:
    nodes, csinodes = [], []
    for pool in POOLS:
        for i in range(pool.count):
            node = build_node(pool, i)
            nodes.append(node)
            csinodes.append(build_csinode(node, pool, i))
    inventory = pool_inventory(nodes)

    flavors = build_flavors()
    topo_and_priorities = build_topology_and_priorities()
    topology = topo_and_priorities[0]

    # Queue specs are needed to resolve the profiles; their status needs the Workloads, whose
    # annotations need the profile hash. So: specs with empty usage, profiles, then the real thing.
    draft_cqs = build_cluster_queues(inventory, defaultdict(Usage))
    resolved = [resolve_profile(p, {c["metadata"]["name"]: c for c in draft_cqs},
                                {f["metadata"]["name"]: f for f in flavors}) for p in PROFILES]
    hashes = profile_hashes(resolved)
    sources, workloads, cq_usage, lq_usage = build_sources_and_workloads(inventory, hashes)
    cluster_queues = build_cluster_queues(inventory, cq_usage)
    local_queues = build_local_queues(cluster_queues, lq_usage)

    objects: list[dict] = []
    objects += nodes + csinodes + build_storage() + build_namespaces()
    objects.append(build_tau_cluster(resolved, hashes, flavors, topology, nodes))
    objects.append(build_team())
    for ws in WORKSPACES:
        objects.append(build_workspace(ws))
    for ws in WORKSPACES:
        objects += build_access(ws)
    objects += build_claims()
    objects.append(build_cohort(inventory))
    objects += flavors + topo_and_priorities + cluster_queues + local_queues + build_multikueue()
    objects += sources + workloads
    pods, messages = place_pods(objects)
    for wl in workloads:  # the topology verdicts, in the Workloads that wait on them
        for c in wl["status"]["conditions"]:
            if c["reason"] == "TopologyPlacementFailed":
                c["message"] = messages[wl["metadata"]["ownerReferences"][0]["name"]]
    if "Pod" in BY_KIND:  # a snapshot holds the kinds taudash reads (its access list is the same registry)
        objects += pods
    return objects


def assign_resource_versions(objects: list[dict]) -> None:
    """Monotonic, irregular resourceVersions in creation order (as etcd's global revision would be)."""
    ordered = sorted(objects, key=lambda o: (o["metadata"]["creationTimestamp"], o["kind"], o["metadata"]["name"]))
    rv = 3_118_402
    for obj in ordered:
        rv += 17 + int(short_hash(obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"], n=3), 16)
        obj["metadata"]["resourceVersion"] = str(rv)


def build_snapshot() -> dict:
    objects = build_objects()
    assign_resource_versions(objects)
    return {
        "apiVersion": "taudash/v1",
        "kind": "ClusterSnapshot",
        "metadata": {"context": CONTEXT, "capturedAt": ts(0)},
        "access": [{"resource": k.resource, "state": "Synced"} for k in sorted(KINDS, key=lambda k: k.resource)],
        "objects": [_sorted_keys(o) for o in objects],
    }


HEADER = (
    "# The taudash demo cluster (`taudash demo`, dashboard snapshot tests, simulator seed).\n"
    "# Generated by taudash/sim/demo_scenario.py: edit the generator and re-run it, never this file.\n"
)


def render(snapshot: dict) -> str:
    body = yaml.dump(snapshot, Dumper=yaml.SafeDumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=4096)
    return HEADER + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT,
                        help="where to write (default: %(default)s)")
    args = parser.parse_args(argv)
    text = render(build_snapshot())
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
