"""A synthetic TauGrid fleet for `taudash bench`: deterministic from (size, seed), consistent like the demo.

One team (`research`) owns the automatic GPU pool; every workspace has its namespace, LocalQueue,
zero-nominal ClusterQueue in the team's root Cohort, identity and researcher binding. The root
Cohort's budget is the counted nodes' allocatable; queue counts and flavor reservation/usage are
summed from the Workloads, as Kueue's cache would. Objects carry what real ones carry (pod
templates, conditions, owner references), so decode and memory costs are realistic.
"""

from __future__ import annotations

import random
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from taudash.engine.model.names import (
    DEFAULT_LOCAL_QUEUE_LABEL,
    GPU_CLASS_LABEL,
    HOSTNAME_LABEL,
    JOB_LABEL,
    JOB_UID_LABEL,
    KUEUE_MANAGED_LABEL,
    LOCAL_QUEUE_LABEL,
    NETWORK_DOMAIN_LABEL,
    OWNER_UID_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    RESOURCE_IN_USE_FINALIZER,
    TEAM_CLEANUP_FINALIZER,
    TEAM_LABEL,
    WORKSPACE_CLEANUP_FINALIZER,
    WORKSPACE_LABEL,
)
from taudash.engine.model.names import MANAGED_BY_LABEL as MANAGED_BY
from taudash.engine.model.quantity import Quantity

Obj = dict[str, Any]


@dataclass(frozen=True)
class Size:
    name: str
    nodes: int
    workloads: int
    jobs: int
    rayjobs: int
    rayservices: int
    deployments: int
    workspaces: int
    # Pending Workloads of one "hot" ClusterQueue (HOT_QUEUE): the last plain Pod Workloads, routed to
    # the first workspace and left pending, so the queue views are measured at 10k (bench L). Same
    # object count; the other queues keep their share, only the last Pod Workloads move.
    hot_pending: int = 0


SIZES: dict[str, Size] = {
    "S": Size("S", 100, 2_000, 1_000, 40, 4, 10, 6),
    "M": Size("M", 1_000, 20_000, 10_000, 400, 40, 100, 60),
    "L": Size("L", 5_000, 100_000, 50_000, 2_000, 200, 500, 300, hot_pending=10_000),
    # Twice L, for the scaling table (docs/benchmarks.md): does any figure grow faster than the objects?
    "XL": Size("XL", 10_000, 200_000, 100_000, 4_000, 400, 1_000, 600, hot_pending=10_000),
}

CAPTURED_AT = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)
SYSTEM_NS = "tau-system"
TEAM = "research"
COHORT = f"tau-team-{TEAM}"
QUEUE = "jobqueue"
MANAGER = "tau-core-controller"
GPU = "nvidia.com/gpu"
KQ = "kueue.x-k8s.io/v1beta2"
TAU = "tau.azure.com/v1alpha1"
IMAGE = "taugridacr.azurecr.io/research/trainer:2026.11.3"
RAY_IMAGE = "rayproject/ray-ml:2.40.0-py311-gpu"

# (gpu class, share of GPU nodes, sku, allocatable memory)
CLASSES = (
    ("h100-80gb", 0.5, "Standard_ND96isr_H100_v5", "1876530548Ki"),
    ("a100-80gb", 0.3, "Standard_ND96amsr_A100_v4", "1876526392Ki"),
    ("h200-141gb", 0.2, "Standard_ND96isr_H200_v5", "1825129712Ki"),
)
GPU_SHAPES = ((1, "10", "180Gi"), (2, "20", "360Gi"), (4, "44", "800Gi"), (8, "88", "1600Gi"))
# Workers of a Job's or RayJob's gang (one Pod each, on a node of its flavor): most run one, a training gang
# several, so L holds the ~150k Pods of the issue (docs/benchmarks.md counts them per size).
WORKERS = (1, 2, 2, 4, 8)


def flavor_name(gpu_class: str) -> str:
    return f"taugrid-gpu-{gpu_class}"


class _Gen:
    def __init__(self, size: Size, seed: int) -> None:
        self.size = size
        self.rng = random.Random(f"taudash-bench/{size.name}/{seed}")
        self.objects: list[Obj] = []

    # helpers ------------------------------------------------------------------------------
    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    @staticmethod
    def ts(minutes_ago: float) -> str:
        return (CAPTURED_AT - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def meta(self, name: str, ns: str | None = None, *, age: float, labels=None, annotations=None,
             generation: int = 1, owners=None, finalizers=None) -> Obj:
        m: Obj = {"name": name}
        if ns:
            m["namespace"] = ns
        m["uid"] = self.uid()
        m["generation"] = generation
        m["creationTimestamp"] = self.ts(age)
        if labels:
            m["labels"] = dict(labels)
        if annotations:
            m["annotations"] = dict(annotations)
        if owners:
            m["ownerReferences"] = owners
        if finalizers:
            m["finalizers"] = list(finalizers)
        return m

    def cond(self, type_: str, status: str, reason: str, message: str, ago: float, gen: int | None = None) -> Obj:
        c: Obj = {"type": type_, "status": status, "reason": reason, "message": message,
                  "lastTransitionTime": self.ts(ago)}
        if gen is not None:
            c["observedGeneration"] = gen
        return c

    def add(self, obj: Obj) -> Obj:
        self.objects.append(obj)
        return obj

    # the cluster --------------------------------------------------------------------------
    def build(self) -> list[Obj]:
        self.nodes()
        self.storage()
        self.tau()
        self.kueue_static()
        self.workspaces()
        self.sources_and_workloads()
        self.queues()
        return self.objects

    def nodes(self) -> None:
        s = self.size
        system = max(2, s.nodes // 50)
        gpu_nodes = s.nodes - system
        self.inventory: dict[str, dict[str, Quantity]] = {flavor_name(c[0]): {} for c in CLASSES}
        self.node_names: list[str] = []
        self.rooms: dict[str, list[list]] = {}  # flavor -> [node, free GPUs] of its schedulable Ready nodes
        self.cursor: dict[str, int] = defaultdict(int)
        plan: list[tuple[str | None, str, str]] = []
        left = gpu_nodes
        for i, (cls, share, sku, mem) in enumerate(CLASSES):
            n = left if i == len(CLASSES) - 1 else int(gpu_nodes * share)
            left -= n
            plan += [(cls, sku, mem)] * n
        plan += [(None, "Standard_D16ds_v5", "58795216Ki")] * system
        for i, (gclass, sku, mem) in enumerate(plan):
            pool = gclass.split("-")[0] if gclass else "system"
            name = f"aks-{pool}-27604139-vmss{i:06x}"
            labels = {
                "agentpool": pool, "kubernetes.azure.com/agentpool": pool, "kubernetes.io/arch": "amd64",
                HOSTNAME_LABEL: name, "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": sku, "topology.kubernetes.io/region": "eastus",
                "topology.kubernetes.io/zone": str(i % 3 + 1),
                "kubernetes.azure.com/mode": "user" if gclass else "system",
            }
            alloc = {"cpu": "95690m", "ephemeral-storage": "973000123051", "memory": mem, "pods": "250"}
            taints = []
            if gclass:
                labels |= {GPU_CLASS_LABEL: gclass, "nvidia.com/gpu.count": "8",
                           NETWORK_DOMAIN_LABEL: f"azure-ib-eastus-{pool}-{i // 64}"}
                alloc[GPU] = "8"
                taints.append({"key": "sku", "value": "gpu", "effect": "NoSchedule"})
            else:
                alloc = {"cpu": "15740m", "ephemeral-storage": "119703055367", "memory": mem, "pods": "110"}
            roll = self.rng.random()
            ready = ("True", "KubeletReady", "kubelet is posting ready status")
            spec: Obj = {"providerID": f"azure:///subscriptions/x/virtualMachines/{i}"}
            if gclass and roll < 0.005:
                ready = ("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
            elif gclass and roll < 0.012:
                spec["unschedulable"] = True
                taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
            if taints:
                spec["taints"] = taints
            conds = [self.cond(t, "False", r, m, 9000) for t, r, m in (
                ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"))]
            conds.append(self.cond("Ready", *ready, 9000))
            node = self.add({
                "apiVersion": "v1", "kind": "Node",
                "metadata": self.meta(name, age=90 * 1440 - i, labels=labels,
                                      annotations={"node.alpha.kubernetes.io/ttl": "0"}),
                "spec": spec,
                "status": {"allocatable": alloc, "capacity": dict(alloc), "conditions": conds,
                           "addresses": [{"type": "InternalIP",
                                          "address": f"10.{i // 65536}.{i // 256 % 256}.{i % 256}"},
                                         {"type": "Hostname", "address": name}],
                           "nodeInfo": {"architecture": "amd64", "kubeletVersion": "v1.31.8",
                                        "operatingSystem": "linux", "osImage": "Ubuntu 22.04.5 LTS",
                                        "containerRuntimeVersion": "containerd://1.7.27-1",
                                        "kernelVersion": "5.15.0-1089-azure"}},
            })
            self.node_names.append(name)
            self.add({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                      "metadata": self.meta(name, age=90 * 1440 - i, owners=[{
                          "apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}]),
                      "spec": {"drivers": [{"name": d, "nodeID": name} for d in (
                          "disk.csi.azure.com", "file.csi.azure.com", "blob.csi.azure.com")]}})
            if gclass:
                self.daemon_pods(name, i)
            if gclass and ready[0] == "True" and not spec.get("unschedulable"):
                self.rooms.setdefault(flavor_name(gclass), []).append([name, 8])
                slot = self.inventory[flavor_name(gclass)]
                for res, val in alloc.items():
                    slot[res] = slot.get(res, Quantity(0)) + Quantity.parse(val)
        self.covered = sorted({r for inv in self.inventory.values() for r in inv})
        # GPUs left to reserve per flavor: admission stops at the budget, the rest pends.
        self.free = {fl: int(inv.get(GPU, Quantity(0)).as_float()) for fl, inv in self.inventory.items()}

    def storage(self) -> None:
        for d in ("disk.csi.azure.com", "file.csi.azure.com", "blob.csi.azure.com"):
            self.add({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                      "metadata": self.meta(d, age=300 * 1440), "spec": {"attachRequired": False}})
        self.add({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                  "metadata": self.meta("azureblob-fuse", age=300 * 1440), "provisioner": "blob.csi.azure.com",
                  "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"})
        for name, value in (("taugrid-default", 1000), ("taugrid-priority", 1200)):
            self.add({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                      "metadata": self.meta(name, age=300 * 1440), "value": value})
            self.add({"apiVersion": KQ, "kind": "WorkloadPriorityClass",
                      "metadata": self.meta(name, age=300 * 1440), "value": value})

    def tau(self) -> None:
        g = 7
        conds = [self.cond(t, "True", r, m, 1440, g) for t, r, m in (
            ("NodesReady", "NodeLabelsReady", "nodes match a label rule and carry the desired labels"),
            ("QueuesReady", "TopologyReady", "TauGrid GPU Topology is reconciled"),
            ("Ready", "TopologyReconciliationReady", "TauGrid cluster reconciliation is ready"))]
        self.add({"apiVersion": TAU, "kind": "TauCluster",
                  "metadata": self.meta("cluster", age=300 * 1440, generation=g),
                  "spec": {"managementMode": "Reconcile",
                           "nodes": {"labelRules": [{"match": {"vmSizes": [sku]},
                                                     "labels": {GPU_CLASS_LABEL: cls}}
                                                    for cls, _, sku, _ in CLASSES]},
                           "queues": {"ownership": "External", "capacityTeamRef": {"name": TEAM}},
                           "workspaceDefaults": {"defaultQueue": QUEUE}},
                  "status": {"phase": "Ready", "observedGeneration": g, "conditions": conds}})
        self.add({"apiVersion": TAU, "kind": "TauTeam",
                  "metadata": self.meta(TEAM, SYSTEM_NS, age=200 * 1440, finalizers=[TEAM_CLEANUP_FINALIZER]),
                  "spec": {},
                  "status": {"phase": "Ready", "observedGeneration": 1, "cohort": COHORT,
                             "conditions": [self.cond("QuotaReady", "True", "QuotaReady",
                                                      "team quota hierarchy is reconciled", 1440, 1)]}})
        for name in ("default", "kube-system", "kueue-system", "kuberay-system", SYSTEM_NS):
            self.add({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": self.meta(name, age=300 * 1440, labels={"kubernetes.io/metadata.name": name}),
                      "status": {"phase": "Active"}})

    def kueue_static(self) -> None:
        for cls, *_ in CLASSES:
            self.add({"apiVersion": KQ, "kind": "ResourceFlavor",
                      "metadata": self.meta(flavor_name(cls), age=200 * 1440,
                                            labels={MANAGED_BY: MANAGER, GPU_CLASS_LABEL: cls},
                                            finalizers=[RESOURCE_IN_USE_FINALIZER]),
                      "spec": {"nodeLabels": {"kubernetes.io/os": "linux", GPU_CLASS_LABEL: cls},
                               "nodeTaints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]}})
        flavors = [{"name": fl, "resources": [{"name": r, "nominalQuota": inv.get(r, Quantity(0)).canonical()}
                                              for r in self.covered]}
                   for fl, inv in sorted(self.inventory.items())]
        self.add({"apiVersion": KQ, "kind": "Cohort",
                  "metadata": self.meta(COHORT, age=200 * 1440, generation=9,
                                        labels={MANAGED_BY: MANAGER, TEAM_LABEL: TEAM}),
                  "spec": {"resourceGroups": [{"coveredResources": self.covered, "flavors": flavors}]}})

    def workspaces(self) -> None:
        self.ws_names = [f"ws-{i:03d}" for i in range(self.size.workspaces)]
        # One workspace in 50 is retargeting: its old namespace keeps routing until the drain clears.
        pick = 7 if len(self.ws_names) > 7 else len(self.ws_names) - 1
        self.retarget = {n for i, n in enumerate(self.ws_names) if i % 50 == pick}
        for name in self.ws_names:
            ws_uid = self.uid()
            target = f"{name}-v2" if name in self.retarget else name
            wl = {WORKSPACE_LABEL: name, TEAM_LABEL: TEAM, LOCAL_QUEUE_LABEL: QUEUE,
                  DEFAULT_LOCAL_QUEUE_LABEL: QUEUE, MANAGED_BY: MANAGER}
            owner = {OWNER_UID_LABEL: ws_uid}
            cq = f"tau-ws-{name}"
            namespaces = [name] + ([target] if target != name else [])
            for ns in namespaces:
                self.add({"apiVersion": "v1", "kind": "Namespace",
                          "metadata": self.meta(ns, age=100 * 1440, labels={"kubernetes.io/metadata.name": ns, **wl},
                                                annotations=owner),
                          "status": {"phase": "Active"}})
                self.add({"apiVersion": "v1", "kind": "ServiceAccount",
                          "metadata": self.meta("tau-workload", ns, age=100 * 1440,
                                                labels={**wl, "azure.workload.identity/use": "true"},
                                                annotations={**owner, "azure.workload.identity/client-id": ws_uid})})
                self.add({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                          "metadata": self.meta("tau-researcher-v1", ns, age=100 * 1440,
                                                labels={MANAGED_BY: MANAGER, WORKSPACE_LABEL: name},
                                                annotations=owner),
                          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                      "name": "tau-researcher-v1"},
                          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                        "name": f"group-{name}"}]})
                self.add({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                          "metadata": self.meta("blob-training", ns, age=100 * 1440),
                          "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "azureblob-fuse",
                                   "resources": {"requests": {"storage": "10Ti"}}},
                          "status": {"phase": "Bound"}})
            g = 2
            conds = [self.cond("RBACReady", "True", "RoleBindingReady", "researcher RoleBinding is reconciled", 900, g),
                     self.cond("QueueReady", "True", "QueueReady", "workspace queue is readable", 900, g),
                     self.cond("WorkloadIdentityReady", "True", "ServiceAccountReady", "client id matches", 900, g),
                     self.cond("DriftDetected", "False", "NoDrift", "no drift observed", 900, g)]
            self.add({"apiVersion": TAU, "kind": "TauWorkspace",
                      "metadata": self.meta(name, SYSTEM_NS, age=100 * 1440, generation=g,
                                            finalizers=[WORKSPACE_CLEANUP_FINALIZER]),
                      "spec": {"authorization": {"mode": "workspace-rbac"},
                               "kubernetesSubject": {"kind": "Group", "name": f"group-{name}"},
                               "role": "tau-researcher-v1", "target": {"namespace": target, "createNamespace": True},
                               "queue": QUEUE, "teamRef": {"name": TEAM},
                               "workloadIdentity": {"serviceAccountName": "tau-workload", "clientId": ws_uid}},
                      "status": {"phase": "Ready", "observedGeneration": g, "target": {"resolvedNamespace": name},
                                 "queue": {"localQueue": QUEUE, "clusterQueue": cq},
                                 "conditions": conds}})
            self.add({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                      "metadata": self.meta(f"tau-workspace-reader-{name}", SYSTEM_NS, age=100 * 1440,
                                            labels={MANAGED_BY: MANAGER, WORKSPACE_LABEL: name},
                                            annotations=owner),
                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": f"tau-workspace-reader-{name}"},
                      "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                    "name": f"group-{name}"}]})
        self.lq_ns = {n: [n] + ([f"{n}-v2"] if n in self.retarget else []) for n in self.ws_names}

    # sources and their Workloads ------------------------------------------------------------------
    def pod_spec(self, image: str, cpu: str, mem: str, gpus: int, gpu_class: str | None) -> Obj:
        requests = {"cpu": cpu, "memory": mem}
        c: Obj = {"name": "main", "image": image, "command": ["python", "-m", "research.train"],
                  "env": [{"name": "TAU_RUN_ROOT", "value": "/data/runs"}, {"name": "NCCL_DEBUG", "value": "WARN"}],
                  "resources": {"requests": requests}}
        if gpus:
            requests[GPU] = str(gpus)
            c["resources"]["limits"] = {GPU: str(gpus)}
        spec: Obj = {"containers": [c], "restartPolicy": "Never", "serviceAccountName": "tau-workload",
                     "priorityClassName": "taugrid-default"}
        if gpu_class:
            spec["nodeSelector"] = {GPU_CLASS_LABEL: gpu_class}
            spec["tolerations"] = [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
        return spec

    def sources_and_workloads(self) -> None:
        s = self.size
        kinds = (["Job"] * s.jobs + ["RayJob"] * s.rayjobs + ["RayService"] * s.rayservices
                 + ["Deployment"] * s.deployments)
        self.rng.shuffle(kinds)
        n_dep_pods = max(0, min(s.workloads - len(kinds) + s.deployments, s.deployments * 8))
        per_dep = n_dep_pods // max(1, s.deployments)
        self.cq_usage: dict[str, _Usage] = defaultdict(_Usage)
        self.lq_usage: dict[tuple[str, str], _Usage] = defaultdict(_Usage)
        made = 0
        for i, kind in enumerate(kinds):
            ws = self.ws_names[self.rng.randrange(len(self.ws_names))]
            ns = self.lq_ns[ws][-1] if ws in self.retarget and self.rng.random() < 0.5 else ws
            name = f"{kind.lower()}-{i:06d}"
            src = self.source(kind, name, ns)
            if kind == "Deployment":
                for r in range(per_dep):
                    pod = {"apiVersion": "v1", "kind": "Pod", "name": f"{name}-7d9f-{r:04d}", "uid": self.uid()}
                    self.workload("pod", pod, ns, age=src["age"])
                    made += 1
            else:
                self.workload(kind.lower(), src["obj"], ns, age=src["age"])
                made += 1
        # The rest are plain Pod workloads (Kueue's pod integration): no source object taudash reads.
        j = 0
        hot_from = s.workloads - min(s.hot_pending, max(0, s.workloads - made))
        while made < s.workloads:
            hot = made >= hot_from
            ws = self.ws_names[0] if hot else self.ws_names[self.rng.randrange(len(self.ws_names))]
            pod = {"apiVersion": "v1", "kind": "Pod", "name": f"pod-{j:06d}", "uid": self.uid()}
            self.workload("pod", pod, ws, age=self.rng.uniform(1, 3000), state="pending" if hot else None)
            made += 1
            j += 1

    def source(self, kind: str, name: str, ns: str) -> Obj:
        age = self.rng.uniform(1, 3000)
        gpu_class = self.pick_class()
        gpus, cpu, mem = self.rng.choice(GPU_SHAPES)
        labels = {QUEUE_NAME_LABEL: QUEUE, PRIORITY_CLASS_LABEL: "taugrid-default",
                  TEAM_LABEL: TEAM, GPU_CLASS_LABEL: gpu_class}
        pod = self.pod_spec(RAY_IMAGE if kind.startswith("Ray") else IMAGE, cpu, mem, gpus, gpu_class)
        workers = self.rng.choice(WORKERS) if kind in ("Job", "RayJob") else 1
        self._shape = (gpu_class, gpus, cpu, mem, workers)
        if kind == "Job":
            obj = {"apiVersion": "batch/v1", "kind": "Job",
                   "metadata": self.meta(name, ns, age=age, labels=labels),
                   "spec": {"backoffLimit": 0, "completions": workers, "parallelism": workers, "suspend": False,
                            "template": {"metadata": {"labels": {JOB_LABEL: name}}, "spec": pod}},
                   "status": {}}
        elif kind == "RayJob":
            obj = {"apiVersion": "ray.io/v1", "kind": "RayJob",
                   "metadata": self.meta(name, ns, age=age, labels=labels),
                   "spec": {"entrypoint": "python -m research.sweep", "shutdownAfterJobFinishes": True,
                            "rayClusterSpec": {"rayVersion": "2.40.0",
                                               "headGroupSpec": {"template": {"spec": pod}},
                                               "workerGroupSpecs": [{"groupName": "gpu", "replicas": workers,
                                                                     "template": {"spec": pod}}]}},
                   "status": {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}}
        elif kind == "RayService":
            obj = {"apiVersion": "ray.io/v1", "kind": "RayService",
                   "metadata": self.meta(name, ns, age=age, labels=labels),
                   "spec": {"serveConfigV2": "applications:\n- name: llm\n  import_path: serve.llm:app\n",
                            "rayClusterConfig": {"headGroupSpec": {"template": {"spec": pod}}}},
                   "status": {"serviceStatus": "Running"}}
        else:
            tmpl_labels = {"app": name, KUEUE_MANAGED_LABEL: "true", QUEUE_NAME_LABEL: QUEUE}
            obj = {"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": self.meta(name, ns, age=age, labels={"app": name, QUEUE_NAME_LABEL: QUEUE}),
                   "spec": {"replicas": 8, "selector": {"matchLabels": {"app": name}},
                            "template": {"metadata": {"labels": tmpl_labels}, "spec": pod}},
                   "status": {"replicas": 8, "readyReplicas": 8, "availableReplicas": 8}}
        self.add(obj)
        return {"obj": obj, "age": age}

    def pick_class(self) -> str:
        r, acc = self.rng.random(), 0.0
        for cls, share, *_ in CLASSES:
            acc += share
            if r < acc:
                return cls
        return CLASSES[-1][0]

    def workload(self, prefix: str, owner: Obj, ns: str, age: float, state: str | None = None) -> None:
        if prefix == "pod":
            gpu_class = self.pick_class()
            gpus, cpu, mem = self.rng.choice(GPU_SHAPES)
            workers = 1
        else:
            gpu_class, gpus, cpu, mem, workers = self._shape
        oname = owner["name"] if "name" in owner else owner["metadata"]["name"]
        ouid = owner["uid"] if "uid" in owner else owner["metadata"]["uid"]
        okind = owner["kind"]
        name = f"{prefix}-{oname}-{ouid[:5]}"
        fl = flavor_name(gpu_class)
        cq = f"tau-ws-{self.ws_of(ns)}"
        use = {"cpu": Quantity.parse(cpu) * workers, "memory": Quantity.parse(mem) * workers,
               GPU: Quantity(gpus * workers), "pods": Quantity(workers)}
        if state is None:  # a given state (the hot queue's pending) skips the roll
            roll = self.rng.random()
            if roll < 0.45:
                state = "finished"
            elif roll < 0.455:
                state = "inactive"
            elif self.free[fl] >= gpus * workers:
                self.free[fl] -= gpus * workers
                state = "admitted"
            else:
                state = "pending"
        status: Obj = {}
        t0 = age - 0.05
        if state == "pending" or state == "inactive":
            status["conditions"] = [self.cond(
                "QuotaReserved", "False", "Pending",
                f"couldn't assign flavors to pod set main: insufficient unused quota for {GPU} in flavor {fl}, "
                f"{gpus * workers} more needed", t0)]
        else:
            status["admission"] = {"clusterQueue": cq, "podSetAssignments": [
                {"name": "main", "count": workers, "flavors": {r: fl for r in sorted(use)},
                 "resourceUsage": {r: q.canonical() for r, q in sorted(use.items())}}]}
            conds = [self.cond("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {cq}", t0),
                     self.cond("Admitted", "True", "Admitted", "The workload is admitted", t0),
                     self.cond("PodsReady", "True", "Started", "All pods reached readiness", t0 - 1)]
            if state == "finished":
                conds.append(self.cond("Finished", "True", "Succeeded", "Job finished successfully", age / 3))
            status["conditions"] = conds
        owner_ref = {"apiVersion": owner["apiVersion"], "kind": okind, "name": oname, "uid": ouid,
                     "controller": True, "blockOwnerDeletion": True}
        self.add({"apiVersion": KQ, "kind": "Workload",
                  "metadata": self.meta(name, ns, age=t0, labels={JOB_UID_LABEL: ouid},
                                        owners=[owner_ref], finalizers=[RESOURCE_IN_USE_FINALIZER]),
                  "spec": {"active": state != "inactive", "queueName": QUEUE, "priority": 1000,
                           "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                                "name": "taugrid-default"},
                           "podSets": [{"name": "main", "count": workers, "template": {
                               "metadata": {"labels": {TEAM_LABEL: TEAM}},
                               "spec": self.pod_spec(IMAGE, cpu, mem, gpus, gpu_class)}}]},
                  "status": status})
        for u in (self.cq_usage[cq], self.lq_usage[(ns, QUEUE)]):
            u.add(state, fl, use)
        # A plain Pod workload's Pod exists in every state (Kueue gates it while it waits); a job's only runs
        # once admitted (and stays, Succeeded, once finished).
        if state in ("admitted", "finished") or prefix == "pod":
            for _ in range(workers):
                self.pod(owner_ref, ns, age, state, fl, gpu_class, gpus, cpu, mem)

    def pod(self, owner: Obj, ns: str, age: float, state: str, fl: str, gpu_class: str, gpus: int, cpu: str,
            mem: str) -> None:
        """One Pod (a worker) of a Workload: Running and bound to a node of its flavor with room (the next one from a
        rotating cursor, so jobs scatter), Succeeded once finished, Pending and unbound while it waits."""
        node, phase = "", {"admitted": "Running", "finished": "Succeeded"}.get(state, "Pending")
        if state in ("admitted", "finished"):
            rooms = self.rooms.get(fl) or []
            for k in range(min(64, len(rooms))):
                slot = rooms[(self.cursor[fl] + k) % len(rooms)]
                if slot[1] >= gpus:
                    node = slot[0]
                    if state == "admitted":
                        slot[1] -= gpus
                    self.cursor[fl] = (self.cursor[fl] + k + 1) % len(rooms)
                    break
            if not node:
                phase = "Pending"
        name = owner["name"] if owner["kind"] == "Pod" else f"{owner['name']}-{self.uid()[:5]}"
        meta = self.meta(name, ns, age=age, labels={TEAM_LABEL: TEAM, QUEUE_NAME_LABEL: QUEUE},
                         owners=None if owner["kind"] == "Pod" else [owner])
        if owner["kind"] == "Pod":
            meta["uid"] = owner["uid"]  # the Workload's owner is this Pod
        spec = self.pod_spec(IMAGE, cpu, mem, gpus, gpu_class)
        if node:
            spec["nodeName"] = node
        ready = phase == "Running"
        status: Obj = {"phase": phase, "containerStatuses": [] if phase == "Pending" else [{
            "name": "main", "ready": ready, "restartCount": 0,
            "state": {"running": {}} if ready else {"terminated": {"reason": "Completed", "exitCode": 0}}}]}
        self.add({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})

    def daemon_pods(self, node: str, i: int) -> None:
        """The per-node agents of a GPU node (no GPU requests): the DCGM exporter and node-problem-detector."""
        for ds in ("nvidia-dcgm-exporter", "node-problem-detector"):
            owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds, "uid": f"uid-ds-{ds}",
                     "controller": True, "blockOwnerDeletion": True}
            spec = {"nodeName": node, "containers": [{"name": ds, "resources": {"requests": {
                "cpu": "100m", "memory": "128Mi"}}}], "tolerations": [{"operator": "Exists"}]}
            self.add({"apiVersion": "v1", "kind": "Pod",
                      "metadata": self.meta(f"{ds}-{i:05x}", "kube-system", age=9000, labels={"app": ds},
                                            owners=[owner]),
                      "spec": spec, "status": {"phase": "Running", "containerStatuses": [
                          {"name": ds, "ready": True, "restartCount": 0, "state": {"running": {}}}]}})

    def ws_of(self, ns: str) -> str:
        return ns[: -len("-v2")] if ns.endswith("-v2") else ns

    def queues(self) -> None:
        for name in self.ws_names:
            cq = f"tau-ws-{name}"
            spec = {"cohortName": COHORT,
                    "namespaceSelector": {"matchLabels": {WORKSPACE_LABEL: name}},
                    "queueingStrategy": "BestEffortFIFO",
                    "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Never"},
                    "resourceGroups": [{"coveredResources": self.covered, "flavors": [
                        {"name": fl, "resources": [{"name": r, "nominalQuota": "0"} for r in self.covered]}
                        for fl in sorted(self.inventory)]}],
                    "stopPolicy": "None"}
            self.add({"apiVersion": KQ, "kind": "ClusterQueue",
                      "metadata": self.meta(cq, age=100 * 1440, generation=4,
                                            labels={MANAGED_BY: MANAGER, TEAM_LABEL: TEAM,
                                                    WORKSPACE_LABEL: name},
                                            finalizers=[RESOURCE_IN_USE_FINALIZER]),
                      "spec": spec,
                      "status": self.cq_usage[cq].status(spec, self.cond("Active", "True", "Ready",
                                                                          "Can admit new workloads", 900, 4), True)})
            for ns in self.lq_ns[name]:
                self.add({"apiVersion": KQ, "kind": "LocalQueue",
                          "metadata": self.meta(QUEUE, ns, age=100 * 1440,
                                                labels={MANAGED_BY: MANAGER, WORKSPACE_LABEL: name}),
                          "spec": {"clusterQueue": cq, "stopPolicy": "None"},
                          "status": self.lq_usage[(ns, QUEUE)].status(spec, self.cond(
                              "Active", "True", "Ready", "Can submit new workloads to localQueue", 900, 1), False)})


class _Usage:
    """Per-queue counts and flavor totals, summed from the Workloads as Kueue's cache does."""

    def __init__(self) -> None:
        self.pending = self.reserving = self.admitted = 0
        self.reserved: dict[tuple[str, str], Quantity] = {}

    def add(self, state: str, fl: str, use: dict[str, Quantity]) -> None:
        if state == "pending":
            self.pending += 1
        elif state == "admitted":
            self.reserving += 1
            self.admitted += 1
            for r, q in use.items():
                self.reserved[(fl, r)] = self.reserved.get((fl, r), Quantity(0)) + q

    def status(self, spec: Obj, active: Obj, cohort: bool) -> Obj:
        flavors = [fl for rg in spec["resourceGroups"] for fl in rg["flavors"]]

        def usage() -> list[Obj]:
            out = []
            for fl in flavors:
                res = []
                for r in fl["resources"]:
                    total = self.reserved.get((fl["name"], r["name"]), Quantity(0))
                    e: Obj = {"name": r["name"], "total": total.canonical()}
                    if cohort:
                        e["borrowed"] = (total - Quantity.parse(r["nominalQuota"])).max0().canonical()
                    res.append(e)
                out.append({"name": fl["name"], "resources": res})
            return out

        return {"pendingWorkloads": self.pending, "reservingWorkloads": self.reserving,
                "admittedWorkloads": self.admitted, "flavorsReservation": usage(), "flavorsUsage": usage(),
                "conditions": [active]}


def hot_queue(size: str | Size) -> str | None:
    """The ClusterQueue holding `hot_pending` pending Workloads at this size (None when there is none)."""
    sz = SIZES[size.upper()] if isinstance(size, str) else size
    return "tau-ws-ws-000" if sz.hot_pending and sz.workspaces else None


def generate(size: str | Size, seed: int = 0) -> list[Obj]:
    """The raw objects of a synthetic cluster of `size` (S, M, L), the same for the same seed."""
    sz = SIZES[size.upper()] if isinstance(size, str) else size
    return _Gen(sz, seed).build()


__all__ = ["CAPTURED_AT", "SIZES", "SYSTEM_NS", "Size", "generate", "hot_queue"]
