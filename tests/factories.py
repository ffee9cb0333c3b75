"""Every hand-built Kubernetes object, model, store and simulated world the tests use (one vocabulary).

Import what you need: `from factories import cluster_queue, workload, store_of`. The common cases are also
pytest fixtures in tests/conftest.py (`store_of`, `demo_store`, `sim_server`, `state_dir`, ...).

Sections:
- constants and conditions;
- Kueue objects (ClusterQueue, Cohort, LocalQueue, ResourceFlavor, Workload, AdmissionCheck, MultiKueue*);
- TauGrid objects (TauWorkspace, TauTeam, TauCluster, workload profiles);
- core objects (Namespace, Node, Job, Ray*, Deployment, ServiceAccount, RoleBinding, storage);
- stores, rule contexts and simulated worlds;
- named scenarios shared by several modules: the drain world (workspace `eval` leaving namespace `eval`) and the
  healthy automatic pool (team `research`, two h100 nodes).

A test module builds its objects here; a module-level function in a test module may compose them into that
module's scenario but never spells out an object itself (tests/unit/test_layout.py enforces this).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from tools.paths import DEMO, REPO

from taudash.engine.model import KINDS, Quantity
from taudash.engine.rules.base import RuleConfig, RuleContext
from taudash.engine.sources.snapshot import store_from_objects
from taudash.engine.store import Store

KQ = "kueue.x-k8s.io/v1beta2"
TAU = "tau.azure.com/v1alpha1"
GPU = "nvidia.com/gpu"
SYS = "tau-system"
H100 = "taugrid-gpu-h100"
A100 = "taugrid-gpu-a100"
H200 = "taugrid-gpu-h200"
TEAM_COHORT = "tau-team-research"  # the root Cohort of team research
MANAGED = {"app.kubernetes.io/managed-by": "tau-core-controller"}
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # the demo snapshot's capture time
# The conditions a TauCluster reports per workload profile, in the controller's order.
PROFILE_CONDITIONS = ("LocalQueuesResolved", "ClusterQueuesReady", "ExecutionReady", "ResourceFlavorsReady",
                      "TopologiesReady", "PriorityClassesReady", "Ready")
EVERY_NAMESPACE: dict = {}
OLD = "eval"  # the drain world's workspace namespace, and the default namespace of workload objects below
NEW = "eval-v2"  # where the drain world's workspace retargets to


def q(s: str) -> Quantity:
    return Quantity.parse(s)


def cond(type_: str, status: str = "True", reason: str | None = "", message: str = "", gen: int | None = None,
         at: str | None = None) -> dict:
    """A status condition; reason defaults to the type. gen → observedGeneration, at → lastTransitionTime."""
    c = {"type": type_, "status": status, "reason": reason or type_, "message": message}
    if gen is not None:
        c["observedGeneration"] = gen
    if at is not None:
        c["lastTransitionTime"] = at
    return c


# --- Kueue ------------------------------------------------------------------------------------------------------


def resource_groups(flavors: dict[str, dict[str, Any]] | None, limits: dict | None = None, *,
                    every_resource: bool = False) -> list[dict]:
    """{flavor: {resource: nominal | (nominal, borrowingLimit, lendingLimit)}} → one resource group.

    limits: {(flavor, resource): {"borrowingLimit": ..., "lendingLimit": ...}}. every_resource: each flavor lists
    every covered resource (a missing one at nominal 0), as the Kueue API requires."""
    if not flavors:
        return []
    covered = sorted({r for res in flavors.values() for r in res})
    out = []
    for f, res in flavors.items():
        entries = []
        for r in covered if every_resource else res:
            v = res.get(r, "0")
            nominal, borrow, lend = v if isinstance(v, tuple) else (v, None, None)
            entry: dict[str, Any] = {"name": r, "nominalQuota": nominal, **(limits or {}).get((f, r), {})}
            if borrow is not None:
                entry["borrowingLimit"] = borrow
            if lend is not None:
                entry["lendingLimit"] = lend
            entries.append(entry)
        out.append({"name": f, "resources": entries})
    return [{"coveredResources": covered, "flavors": out}]


def flavor_usage(m: dict[str, dict[str, str]] | None, *, borrowed: bool = False) -> list[dict]:
    extra = {"borrowed": "0"} if borrowed else {}
    return [{"name": f, "resources": [{"name": r, "total": v, **extra} for r, v in res.items()]}
            for f, res in (m or {}).items()]


def cluster_queue(name: str, *, cohort: str | None = None, stop: str | None = None, pending: int = 0,
                  reserving: int = 0, admitted: int = 0,
                  active: tuple[str, str, str] | None = ("True", "Ready", "Can admit new workloads"),
                  flavors: dict[str, dict[str, Any]] | None = None,
                  reservation: dict[str, dict[str, str]] | None = None,
                  usage: dict[str, dict[str, str]] | None = None, labels: dict | None = None, version: str = KQ,
                  limits: dict[tuple[str, str], dict[str, str]] | None = None, selector: dict | None = EVERY_NAMESPACE,
                  uid: str | None = None, status: bool = True, borrowed: bool = False, every_resource: bool = False,
                  **spec: Any) -> dict:
    """A ClusterQueue. status=False: spec only (as written by a client); `spec` keywords are added to the spec
    verbatim (stopPolicy, queueingStrategy, preemption, ...)."""
    body: dict[str, Any] = {"namespaceSelector": copy.deepcopy(selector)}
    if cohort:
        body["cohort" if version.endswith("v1beta1") else "cohortName"] = cohort
    if stop:
        body["stopPolicy"] = stop
    if flavors:
        body["resourceGroups"] = resource_groups(flavors, limits, every_resource=every_resource)
    body.update(spec)
    meta = {"name": name, "uid": uid or f"uid-cq-{name}", "labels": labels or {}}
    obj = {"apiVersion": version, "kind": "ClusterQueue", "metadata": meta, "spec": body}
    if status:
        st: dict[str, Any] = {
            "pendingWorkloads": pending,
            "reservingWorkloads": reserving,
            "admittedWorkloads": admitted,
            "flavorsReservation": flavor_usage(reservation, borrowed=borrowed),
            "flavorsUsage": flavor_usage(usage, borrowed=borrowed),
        }
        if active:
            st["conditions"] = [cond("Active", active[0], active[1], active[2])]
        obj["status"] = st
    return obj


def cohort(name: str, *, parent: str | None = None, flavors: dict[str, dict[str, Any]] | None = None,
           labels: dict | None = None, every_resource: bool = False) -> dict:
    spec: dict[str, Any] = {"resourceGroups": resource_groups(flavors, every_resource=every_resource)}
    if parent:
        spec["parentName"] = parent
    return {"apiVersion": KQ, "kind": "Cohort", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def local_queue(name: str, ns: str, cq: str) -> dict:
    return {"apiVersion": KQ, "kind": "LocalQueue", "metadata": {"name": name, "namespace": ns},
            "spec": {"clusterQueue": cq}}


def resource_flavor(name: str, node_labels: dict | None = None, *, topology: str | None = None) -> dict:
    spec: dict[str, Any] = {"nodeLabels": node_labels or {}}
    if topology:
        spec["topologyName"] = topology
    return {"apiVersion": KQ, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def topology(name: str, *levels: str) -> dict:
    """A Kueue Topology with these node-label levels, highest first."""
    return {"apiVersion": KQ, "kind": "Topology", "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": lv} for lv in levels]}}


def pod(name: str, ns: str = "ns", *, node: str | None = None, gpus: int = 1, phase: str = "Running",
        owner: tuple[str, str, str] | None = None, init_gpus: int | None = None, **spec: Any) -> dict:
    """A core/v1 Pod of one container requesting `gpus` GPUs and one CPU, bound to `node` (None: unbound);
    owner (kind, name, uid) is its batch/v1 controller; init_gpus: an init container asking that many GPUs;
    `spec` keywords join its spec (nodeSelector, tolerations, ...)."""
    body: dict[str, Any] = {"containers": [{"name": "main", "resources": {"requests": {GPU: str(gpus), "cpu": "1"}}}],
                            **spec}
    if init_gpus is not None:
        body["initContainers"] = [{"name": "init", "resources": {"requests": {GPU: str(init_gpus)}}}]
    if node:
        body["nodeName"] = node
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": owner[0], "name": owner[1], "uid": owner[2],
                                    "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body, "status": {"phase": phase}}


def job_pod(name: str, node: str) -> dict:
    """A Job's Running Pod as the API serves it: a GPU limit and no GPU request, a larger init container,
    overhead, a toleration, a container status with restarts (what the slim Pod struct must read)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "train", "uid": f"uid-{name}", "labels": {"job-name": "j"},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u-j"}]},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "trainer:1", "env": [{"name": "A"}],
                                                       "resources": {"limits": {"nvidia.com/gpu": "4"},
                                                                     "requests": {"cpu": "2"}}}],
                     "initContainers": [{"name": "fetch", "resources": {"requests": {"cpu": "6"}}}],
                     "overhead": {"cpu": "100m"}, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "main", "ready": True, "restartCount": 2, "state": {"running": {"startedAt": "x"}}}]}}


def workload_priority_class(name: str, value: int) -> dict:
    return {"apiVersion": KQ, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


def workload(name: str, ns: str, *, queue: str = "jobqueue", admitted_to: str | None = None, state: str = "pending",
             reason: str = "", message: str = "", checks: list[dict] | None = None, active: bool = True,
             owner: tuple[str, str, str] | None = None) -> dict:
    """A Workload in state pending | reserved | admitted | finished; owner (kind, name, uid) is a batch/v1 owner and
    sets the job-uid label."""
    conds = []
    if state == "pending":
        conds.append(cond("QuotaReserved", "False", reason or "Pending", message))
    if state in ("reserved", "admitted", "finished"):
        conds.append(cond("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {admitted_to}"))
    if state in ("admitted", "finished"):
        conds.append(cond("Admitted", "True", "Admitted"))
    if state == "reserved":
        conds.append(cond("Admitted", "False", "UnsatisfiedAdmissionChecks", ""))
    if state == "finished":
        conds.append(cond("Finished", "True", "Succeeded", "Job finished successfully"))
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-wl-{name}"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": owner[0], "name": owner[1], "uid": owner[2],
                                    "controller": True}]
        meta["labels"] = {"kueue.x-k8s.io/job-uid": owner[2]}
    status: dict[str, Any] = {"conditions": conds}
    if admitted_to and state != "pending":
        status["admission"] = {"clusterQueue": admitted_to,
                               "podSetAssignments": [{"name": "main", "flavors": {}, "count": 1}]}
    if checks:
        status["admissionChecks"] = checks
    return {"apiVersion": KQ, "kind": "Workload", "metadata": meta,
            "spec": {"queueName": queue, "active": active, "podSets": [{"name": "main", "count": 1}]}, "status": status}


def deactivated_workload(name: str, ns: str, *, by: str, queue: str = "jobqueue", state: str = "pending") -> dict:
    """A Workload a taudash workflow (run `by`) deactivated: spec.active false and the deactivated-by annotation."""
    from taudash.engine.model.names import DEACTIVATED_BY_ANNOTATION

    wl = workload(name, ns, queue=queue, state=state, active=False)
    wl["metadata"]["annotations"] = {DEACTIVATED_BY_ANNOTATION: by}
    return wl


def workload_request(name: str = "w", ns: str = "ns", *, queue: str = "jobqueue", labels: dict | None = None,
                     pod_sets: bool = False, **status: Any) -> dict:
    """A Workload as a client creates it (no uid; status only if given): for the simulator's API."""
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels is not None:
        meta["labels"] = labels
    spec: dict[str, Any] = {"queueName": queue}
    if pod_sets:
        spec["podSets"] = [{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}]
    obj = {"apiVersion": KQ, "kind": "Workload", "metadata": meta, "spec": spec}
    if status or pod_sets:
        obj["status"] = status
    return obj


def cluster_queue_request(name: str, **spec: Any) -> dict:
    """A ClusterQueue as a client creates it: metadata.name and the given spec only."""
    return {"apiVersion": KQ, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def admission_check(name: str = "mk", active: str = "True", config: str | None = "mk-config",
                    controller: str = "kueue.x-k8s.io/multikueue") -> dict:
    obj = {"apiVersion": KQ, "kind": "AdmissionCheck", "metadata": {"name": name},
           "spec": {"controllerName": controller},
           "status": {"conditions": [cond("Active", active, "Active" if active == "True" else "BadConfig")]}}
    if config:
        obj["spec"]["parameters"] = {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": config}
    return obj


def multikueue_config(name: str = "mk-config", clusters: Iterable[str] = ("worker-1", "worker-2")) -> dict:
    return {"apiVersion": KQ, "kind": "MultiKueueConfig", "metadata": {"name": name},
            "spec": {"clusters": list(clusters)}}


def multikueue_cluster(name: str, active: str = "True") -> dict:
    ok = active == "True"
    return {"apiVersion": KQ, "kind": "MultiKueueCluster", "metadata": {"name": name},
            "status": {"conditions": [cond("Active", active, "Active" if ok else "ClientConnectionFailed",
                                           "Connected" if ok else "dial tcp: refused")]}}


MULTIKUEUE_ORIGIN = "kueue.x-k8s.io/multikueue-origin"


def dispatched_workload(name: str, ns: str = "train", *, on: str | None = None, nominated: list[str] | None = None,
                        state: str = "admitted", at: str | None = None) -> dict:
    """A manager's Workload MultiKueue dispatched: admitted on worker `on` (status.clusterName) or nominated to
    `nominated`; `at`: the lastTransitionTime of its conditions."""
    w = workload(name, ns, queue="mk", admitted_to="mk-cq", state=state)
    for c in w["status"]["conditions"]:
        if at:
            c["lastTransitionTime"] = at
    if on:
        w["status"]["clusterName"] = on
    if nominated:
        w["status"]["nominatedClusterNames"] = nominated
    return w


def multikueue_mirror(name: str, ns: str = "train", *, state: str = "admitted", created: str | None = None,
                      origin: str = "multikueue") -> dict:
    """The mirror of a manager's Workload on a worker (labelled with its MultiKueue origin)."""
    w = workload(name, ns, queue="mk", admitted_to="mk-cq", state=state)
    w["metadata"]["labels"] = {MULTIKUEUE_ORIGIN: origin}
    if created:
        w["metadata"]["creationTimestamp"] = created
    return w


# --- TauGrid ----------------------------------------------------------------------------------------------------


def workspace(name: str, *, ns: str = SYS, gen: int = 1, observed: int = 1, phase: str = "Ready",
              conditions: list[dict] | None = None, team: str | None = "research", **spec: Any) -> dict:
    """A Ready TauWorkspace resolving to namespace `name` (the rules' usual case); `spec` keywords verbatim."""
    if conditions is None:
        conditions = [cond("RBACReady", reason="RoleBindingReady"), cond("QueueReady"),
                      cond("DriftDetected", "False", "NoDrift")]
    s: dict[str, Any] = dict(spec)
    if team:
        s["teamRef"] = {"name": team}
    return {
        "apiVersion": TAU,
        "kind": "TauWorkspace",
        "metadata": {"name": name, "namespace": ns, "generation": gen, "uid": f"uid-ws-{name}"},
        "spec": s,
        "status": {"phase": phase, "observedGeneration": observed, "target": {"resolvedNamespace": name},
                   "conditions": conditions},
    }


def quota_entries(entries: dict[tuple[str, str], str] | None) -> list[dict]:
    return [{"flavor": f, "resource": r, "nominalQuota": v} for (f, r), v in (entries or {}).items()]


def team(name: str = "research", *, quota: dict | None = None, cohort: str | None = None, ns: str = SYS) -> dict:
    obj: dict[str, Any] = {"apiVersion": TAU, "kind": "TauTeam", "metadata": {"name": name, "namespace": ns},
                           "spec": {}, "status": {"phase": "Ready"}}
    if quota:
        obj["spec"]["quota"] = quota_entries(quota)
    if cohort:
        obj["status"]["cohort"] = cohort
    return obj


def pool_workspace(name: str, team: str | None = "research", *, quota: dict | None = None, cq: str | None = None,
                   deleting: bool = False, ns: str = SYS, status: bool = True, target: str | None = None) -> dict:
    """A TauWorkspace as the pool sees it: team, target namespace `name`, optional quota and queue status.
    status=False: spec only (a workspace the controller has not reconciled)."""
    spec: dict[str, Any] = {"target": {"namespace": target or name}}
    if team:
        spec["teamRef"] = {"name": team}
    if quota:
        spec["quota"] = quota_entries(quota)
    meta: dict[str, Any] = {"name": name, "namespace": ns, "generation": 1}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-30T08:00:00Z"
        meta["finalizers"] = ["tau.azure.com/workspace-cleanup"]
    obj = {"apiVersion": TAU, "kind": "TauWorkspace", "metadata": meta, "spec": spec}
    if status:
        obj["status"] = {"phase": "Ready", "observedGeneration": 1, "target": {"resolvedNamespace": name}}
        if cq:
            obj["status"]["queue"] = {"localQueue": "jobqueue", "clusterQueue": cq}
    return obj


def profile_conditions(ready: bool = True, *, gen: int | None = 1, at: str | None = None,
                       order: Iterable[str] = PROFILE_CONDITIONS) -> list[dict]:
    return [cond(t, "True" if ready else "False", gen=gen, at=at) for t in order]


def workload_profile(name: str, *, teams: Iterable[str] = (), lanes: Iterable[str] = (),
                     namespaces: Iterable[str] = (), target: str | None = "singleCluster", queue: str = "jobqueue",
                     cluster_queue: str | None = None, list_cluster_queues: bool = True, gpus: int = 1,
                     ready: bool = True, gen: int = 1, conditions: list[dict] | None = None,
                     priorities: dict | None = None, **extra: Any) -> dict:
    """One entry of a TauCluster's status.workloadProfiles.profiles. Its LocalQueues (one per namespace) point at
    `cluster_queue` (default `cq-<queue>`); target None: no executionTarget; `extra` keys are added verbatim."""
    cq = cluster_queue or f"cq-{queue}"
    p: dict[str, Any] = {
        "name": name,
        "applicability": {"teams": list(teams), "lanes": list(lanes), "namespaces": list(namespaces)},
        "gpusPerWorker": gpus,
        "workerCount": 1,
        "mode": "fixed",
        "placement": "unconstrained",
        "defaultLocalQueue": queue,
    }
    if target is not None:
        p["executionTarget"] = target
    p["priorities"] = priorities if priorities is not None else {
        "workloadPriorityClassName": "taugrid-default", "podPriorityClassName": "taugrid-default"}
    p["localQueues"] = [{"namespace": ns, "name": queue, "clusterQueue": cq} for ns in p["applicability"]["namespaces"]]
    if list_cluster_queues:
        p["clusterQueues"] = [cq]
    p.update(extra)
    p["conditions"] = conditions if conditions is not None else profile_conditions(ready, gen=gen)
    return p


def tau_cluster(profiles: list[dict] | None = None, *, name: str = "cluster", gen: int = 1,
                observed: int | None = None, hash_value: str | None = None, conditions: list[dict] | None = None,
                declare: bool = False, team: str | None = None, selector: dict | None = None,
                managed: bool = False) -> dict:
    """The TauCluster. With `profiles`: the published workload profiles (observed at `observed`, default `gen`,
    with their set hash unless `hash_value`), conditions default WorkloadProfilesReady; declare=True also lists
    them in the spec. managed=True (or team/selector): a Reconcile-mode spec whose capacity team is `team` and whose
    nodes are `selector` (the pool's view)."""
    from taudash.engine.rules.profilehash import profile_set_hash

    obj: dict[str, Any] = {"apiVersion": TAU, "kind": "TauCluster", "metadata": {"name": name, "generation": gen}}
    if managed or team or selector:
        spec: dict[str, Any] = {"managementMode": "Reconcile", "queues": {}}
        if team:
            spec["queues"]["capacityTeamRef"] = {"name": team}
        if selector:
            spec["nodes"] = {"selector": selector}
        obj["spec"] = spec
    if declare:
        obj["spec"] = {"workloadProfiles": [{k: v for k, v in p.items() if k in ("name", "applicability")}
                                            for p in profiles or ()]}
    if profiles is not None:
        obj["status"] = {
            "conditions": conditions if conditions is not None else [cond("WorkloadProfilesReady", gen=gen)],
            "workloadProfiles": {
                "observedGeneration": gen if observed is None else observed,
                "profileSetHash": profile_set_hash(profiles) if hash_value is None else hash_value,
                "profiles": profiles,
            },
        }
    return obj


# --- core -------------------------------------------------------------------------------------------------------


def namespace(name: str, labels: dict[str, str] | None = None, *, name_label: bool = True) -> dict:
    lab = {"kubernetes.io/metadata.name": name} if name_label else {}
    lab.update(labels or {})
    meta: dict[str, Any] = {"name": name}
    if name_label or labels is not None:
        meta["labels"] = lab
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def node(name: str, gpu_class: str | None = "h100", *, alloc: dict | None = None, os: str | None = "linux",
         os_info: str | None = None, ready: str | None = "True", unschedulable: bool = False,
         deleting: bool = False, labels: dict | None = None, conditions: dict[str, str] | None = None,
         taints: list[dict] | None = None) -> dict:
    """A Node: gpu-class and os labels (None: absent), allocatable (default 8 GPUs), Ready condition,
    nodeInfo.operatingSystem if os_info; conditions: more condition types and their status (GPU health);
    taints: spec.taints."""
    lab: dict[str, str] = {}
    if gpu_class is not None:
        lab["tau.azure.com/gpu-class"] = gpu_class
    if os is not None:
        lab["kubernetes.io/os"] = os
    lab.update(labels or {})
    meta: dict[str, Any] = {"name": name, "labels": lab}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-30T08:00:00Z"
        meta["finalizers"] = ["example.com/drain"]
    status: dict[str, Any] = {"allocatable": alloc if alloc is not None else {GPU: "8"}}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready, "reason": "KubeletReady"}]
    for ctype, cstatus in (conditions or {}).items():
        status.setdefault("conditions", []).append({"type": ctype, "status": cstatus, "reason": ctype})
    if os_info is not None:
        status["nodeInfo"] = {"operatingSystem": os_info}
    spec: dict[str, Any] = {"unschedulable": True} if unschedulable else {}
    if taints:
        spec["taints"] = taints
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


def job(name: str, ns: str = OLD, *, queue: str | None = "jobqueue", uid: str | None = None, done: str | None = None,
        gpus: int | None = None, priority: str = "", selector: dict | None = None, minute: int | None = None) -> dict:
    """A suspended batch Job in `queue` (None: no queue label). gpus: a full pod template requesting them (what
    the simulator runs); done: a terminal condition type (Complete/Failed); minute: created at 11:MM on
    2026-03-01."""
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if gpus is None:
        meta["uid"] = uid or f"uid-job-{name}"
    if queue:
        meta["labels"] = {QUEUE_LABEL: queue}
        if priority:
            meta["labels"]["kueue.x-k8s.io/priority-class"] = priority
    if minute is not None:
        meta["creationTimestamp"] = f"2026-03-01T11:{minute:02d}:00Z"
    if gpus is None:
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {"suspend": True},
                "status": {"conditions": [cond(done)]} if done else {}}
    pod: dict[str, Any] = {"containers": [{"name": "main", "resources": {"requests": {GPU: str(gpus)}}}],
                           "restartPolicy": "Never"}
    if selector:
        pod["nodeSelector"] = selector
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"parallelism": 1, "completions": 1, "suspend": True, "template": {"spec": pod}}}


def rayjob(name: str, ns: str = OLD, *, queue: str | None = "jobqueue", deployment: str = "Running",
           job_status: str = "") -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-rayjob-{name}"}
    if queue:
        meta["labels"] = {QUEUE_LABEL: queue}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": meta, "spec": {"shutdownAfterJobFinishes": True},
            "status": {"jobDeploymentStatus": deployment, "jobStatus": job_status}}


def rayservice(name: str, ns: str = OLD, *, queue: str | None = "jobqueue") -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-raysvc-{name}"}
    if queue:
        meta["labels"] = {QUEUE_LABEL: queue}
    return {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": meta, "spec": {}, "status": {}}


def deployment(name: str, ns: str = OLD, *, template_labels: dict[str, str] | None = None,
               root_labels: dict[str, str] | None = None, replicas: int = 1, paused: bool = False,
               deleting: bool = False) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-deploy-{name}", "labels": root_labels or {}}
    if deleting:
        meta["deletionTimestamp"] = "2025-06-01T11:30:00Z"
        meta["finalizers"] = ["example.com/hold"]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"replicas": replicas, "paused": paused,
                     "template": {"metadata": {"labels": {"app": name, **(template_labels or {})}}}}}


def managed_template(queue: str = "jobqueue") -> dict[str, str]:
    """Pod-template labels of a workload Kueue manages through `queue`."""
    return {"kueue.x-k8s.io/managed": "true", QUEUE_LABEL: queue}


def service_account(name: str, ns: str, *, labels: dict | None = None, annotations: dict | None = None,
                    deleting: bool = False) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels or {}, "annotations": annotations or {}}
    if deleting:
        meta["deletionTimestamp"] = "2025-06-01T11:45:00Z"
        meta["finalizers"] = ["example.com/token-cleanup"]
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}


def role_binding(name: str, ns: str, subject: tuple[str, str], *, role: str = "tau-researcher-v1",
                 labels: dict | None = None, annotations: dict | None = None) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": subject[0], "name": subject[1], "apiGroup": "rbac.authorization.k8s.io"}]}


def granted_service_account(ns: str, name: str, rules: list[dict], *, cluster: bool = True) -> list[dict]:
    """A ServiceAccount, a ClusterRole (or a Role in `ns`) with `rules`, and the binding between them."""
    kind = "ClusterRole" if cluster else "Role"
    where = {} if cluster else {"namespace": ns}
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": f"{name}-role"}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": f"{name}-role", **where},
         "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": f"{kind}Binding",
         "metadata": {"name": f"{name}-binding", **where}, "roleRef": ref,
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]},
    ]


def pvc(name: str, ns: str, *, phase: str = "Bound", storage_class: str | None = "azureblob-fuse") -> dict:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"]}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
            "spec": spec, "status": {"phase": phase}}


def storage_class(name: str = "azureblob-fuse", provisioner: str = "blob.csi.azure.com") -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner}


def csinode(name: str, *drivers: str) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [{"name": d, "nodeID": name} for d in drivers]}}


def claim_lease(target: str, holder: str, *, workflow: str = "hold", who: str = "alice", host: str = "laptop-1",
                acquired: datetime | None = None, renewed: datetime | None = NOW, duration: int | None = 120,
                ns: str = SYS, labelled: bool = True) -> dict:
    """A workflow's claim on `target` ("ClusterQueue tau-ws-train"), as engine/workflows/claims.py writes it:
    a Lease held by workflow `holder`, renewed at `renewed` (None: never)."""
    from taudash.engine.model import names
    from taudash.engine.workflows.claims import Target, lease_name, micro_time

    kind, _, name = target.partition(" ")
    key, _, value = names.CLAIM_SELECTOR.partition("=")
    spec: dict[str, Any] = {"holderIdentity": holder, "leaseTransitions": 0,
                            "acquireTime": micro_time((acquired or renewed or NOW).timestamp())}
    if renewed is not None:
        spec["renewTime"] = micro_time(renewed.timestamp())
    if duration is not None:
        spec["leaseDurationSeconds"] = duration
    meta: dict[str, Any] = {"name": lease_name(Target(kind, name)), "namespace": ns,
                            "annotations": {names.CLAIM_TARGET_ANNOTATION: target,
                                            names.CLAIM_WORKFLOW_ANNOTATION: workflow,
                                            names.CLAIM_WHO_ANNOTATION: who, names.CLAIM_HOST_ANNOTATION: host}}
    if labelled:
        meta["labels"] = {key: value}
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": spec}


def raw_object(kind: str, name: str, *, api_version: str = "v1", namespace: str | None = None,
               uid: str | None = None, labels: dict | None = None, **fields: Any) -> dict:
    """Any object with exactly these top-level fields: for malformed objects and kinds nothing else builds."""
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if uid is not None:
        meta["uid"] = uid
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **fields}


def snapshot_document(objs: Iterable[dict], *, context: str, captured_at: str = "2026-11-30T09:00:00+00:00") -> dict:
    """A taudash ClusterSnapshot document (what `taudash export` writes)."""
    return {"apiVersion": "taudash/v1", "kind": "ClusterSnapshot",
            "metadata": {"context": context, "capturedAt": captured_at}, "objects": list(objs)}


def object_list(objs: Iterable[dict]) -> dict:
    """A `kind: List` document (what `kubectl get -o json` writes)."""
    return {"apiVersion": "v1", "kind": "List", "items": list(objs)}


# --- stores, contexts, worlds -----------------------------------------------------------------------------------


def store_of(*objs: dict, access: dict | None = None) -> Store:
    """A Store of raw objects; access: {kind: AccessState} overrides (e.g. a kind the user cannot list)."""
    store = store_from_objects(list(objs))
    for kind, state in (access or {}).items():
        store.set_access(kind, state)
    return store


def validated_store(raws: Iterable[dict]) -> Store:
    """A Store of raw objects validated with the full models (what a source delivers), every kind synced."""
    from taudash.engine.model import lookup
    from taudash.engine.store import AccessState

    store = Store()
    by: dict[str, list] = {}
    for o in raws:
        k = lookup(o["apiVersion"], o["kind"])
        assert k is not None, o["kind"]
        by.setdefault(k.kind, []).append((k.model.model_validate(o), o))
    for k in KINDS:
        store.replace(k.kind, by.get(k.kind, []))
        store.set_access(k.kind, AccessState.SYNCED)
    return store


def upsert_raw(store: Store, *raws: dict) -> Store:
    """Add raw objects to a store (validated with the kind's model, as a source would)."""
    from taudash.engine.model import lookup

    for o in raws:
        k = lookup(o["apiVersion"], o["kind"])
        assert k is not None, o["kind"]
        store.upsert(k.model.model_validate(o), o)
    return store


def rule_context(objs: Iterable[dict], *, now: datetime = NOW, access: dict | None = None,
                 config: RuleConfig | None = None) -> RuleContext:
    return RuleContext(store=store_of(*objs, access=access), now=now, config=config or RuleConfig())


def view_of(*objs: dict, now: datetime = NOW, access: dict | None = None):
    """engine.incremental.derive over a store of `objs`."""
    from taudash.engine.incremental import derive

    return derive(store_of(*objs, access=access), now)


@functools.cache
def _demo_raw() -> tuple[tuple[dict, ...], str | None]:
    from taudash.engine.sources.snapshot import load_snapshot

    result = load_snapshot(DEMO)
    kinds = [k.kind for k in KINDS]
    objs = tuple(r for k in kinds for o in result.store.list(k)
                 if (r := result.store.raw(k, o.metadata.name, o.metadata.namespace)) is not None)
    return objs, result.captured_at


def demo_raw_objects() -> list[dict]:
    """The demo snapshot's raw objects as the store holds them (a fresh copy each call)."""
    return copy.deepcopy(list(_demo_raw()[0]))


QUIET_KNOBS = {"arrivalsPerHour": 0, "nodeFlapsPerHour": 0, "cordonsPerHour": 0, "gpuFaultsPerHour": 0}


def sim_scenario(events: Iterable[dict] = (), **knobs: Any):
    """A simulator Scenario: quiet (no arrivals, flaps, cordons or GPU faults) unless `knobs` say otherwise."""
    from taudash.sim.controllers.scenario import Scenario

    return Scenario.parse({"knobs": {**QUIET_KNOBS, **knobs}, "events": list(events)})


def sim_world(seed: int = 1, events: Iterable[dict] = (), **knobs: Any):
    """The simulated world on the demo cluster, quiet unless `knobs` say otherwise, driven by `World.step()`."""
    from taudash.sim.world import World

    objects, captured = _demo_raw()
    return World.from_objects(list(objects), captured_at=captured, seed=seed, scenario=sim_scenario(events, **knobs))


def small_world(*objects: dict, namespaces: Iterable[str] = ("team-a", "team-b"), flavor: str = "gpu",
                captured_at: str = "2026-03-01T12:00:00Z", seed: int = 3, granular_reasons: bool = True):
    """A quiet simulated world of `objects` plus the namespaces and one ResourceFlavor. It plays Kueue 0.19 with
    UnadmittedWorkloadsObservability on by default: the admission tests read why a Workload waits from the
    granular QuotaReserved reasons (WaitingForQuota, Suspended, …); granular_reasons=False plays the upstream
    default (Pending, Inadmissible)."""
    from taudash.sim.kueue_versions import OBSERVABILITY, kueue_version
    from taudash.sim.world import World

    base = [namespace(ns, name_label=False) for ns in namespaces] + [resource_flavor(flavor)]
    return World.from_objects(base + list(objects), captured_at=captured_at, seed=seed, scenario=sim_scenario(),
                              kueue=kueue_version("0.19", {OBSERVABILITY: granular_reasons}))


def dashboard_app(path=DEMO, *, now: datetime, writable: bool = False, demo: bool = True, tick: float = 3600.0,
                  on_demand=None, queue_positions=None, history_reader=None, precompose: bool = False):
    """The dashboard over a snapshot file, its clock frozen at `now`; a long tick by default (the first frame is
    derived at mount, so nothing changes while a snapshot SVG is taken).

    writable=False: the session `taudash --snapshot` opens (read-only; the path shown relative to the repository,
    observed at the capture time). writable=True: the demo cluster as `taudash demo` shows it (source `sim`, events
    just in, a write path that nothing in a UI test confirms). `on_demand`, `queue_positions`: the session's reads
    on demand (a live program's); `history_reader`: the cluster's history handle a live program gives it.
    precompose: the other screens composed in the background as the programs do — off here, a snapshot or key
    test shows one screen, and composing the rest beside it only slows the test (tests/ui/test_app_precompose.py
    holds that a precomposed screen draws as one composed on its first visit)."""
    from taudash.app import TaudashApp
    from taudash.engine.actions import Actions
    from taudash.engine.session import Session
    from taudash.engine.sources.snapshot import load_snapshot
    from taudash.engine.view import SourceInfo

    r = load_snapshot(path)
    if not writable:
        shown = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
        src = SourceInfo(type="snapshot", context=r.context, path=shown, observed_at=r.captured_at)
        session = Session(r.store, src, demo=demo, on_demand=on_demand, queue_positions=queue_positions,
                          history_reader=history_reader)
        return TaudashApp(session, clock=lambda: now, tick=tick, precompose=precompose)
    r.store.last_event_at = now.timestamp() - 0.8
    session = Session(r.store, SourceInfo(type="sim", context=r.context, path="https://127.0.0.1:6443"), demo=demo,
                      actions=Actions.live(object(), "operator", r.context, None), on_demand=on_demand,
                      queue_positions=queue_positions, history_reader=history_reader)
    return TaudashApp(session, clock=lambda: now, tick=tick, precompose=precompose)


# --- object lists -----------------------------------------------------------------------------------------------


def replace(objs: list[dict], *new: dict) -> list[dict]:
    """`objs` with each object of `new` replacing the one of the same kind and name (or appended)."""
    keys = {(o["kind"], o["metadata"]["name"]) for o in new}
    return [o for o in objs if (o["kind"], o["metadata"]["name"]) not in keys] + list(new)


def without(objs: list[dict], kind: str, name: str) -> list[dict]:
    return [o for o in objs if (o["kind"], o["metadata"]["name"]) != (kind, name)]


def rules(findings) -> list[str]:
    """The rule ids of `findings`, sorted."""
    return sorted(f.rule for f in findings)


def only(findings, rule: str):
    """The one finding of `rule` (fails listing them all otherwise)."""
    hits = [f for f in findings if f.rule == rule]
    assert len(hits) == 1, [(f.rule, f.message) for f in findings]
    return hits[0]


# --- scenario: the healthy automatic pool -----------------------------------------------------------------------


def team_cq(ws: str, *, team: str = "research", cohort: str = TEAM_COHORT, flavors: dict | None = None,
            **kw: Any) -> dict:
    """A controller-owned workspace queue: zero nominal on every h100 resource unless told otherwise."""
    labels = {**MANAGED, "tau.azure.com/workspace": ws, "tau.azure.com/team": team}
    return pool_cq(f"tau-ws-{ws}", cohort=cohort, flavors=flavors if flavors is not None else {H100: {GPU: "0"}},
                   labels=labels, **kw)


def pool_tau_cluster(team: str | None = "research", selector: dict | None = None) -> dict:
    """The TauCluster the pool reads: Reconcile mode, capacity team `team`, nodes `selector`."""
    return tau_cluster(managed=True, team=team, selector=selector)


def pool_cq(name: str, **kw: Any) -> dict:
    """A ClusterQueue as the pool reads it: resource groups and flavor reservation/usage, no counts."""
    obj = cluster_queue(name, active=None, borrowed=True, **kw)
    obj["spec"].setdefault("resourceGroups", [])
    for k in ("pendingWorkloads", "reservingWorkloads", "admittedWorkloads"):
        del obj["status"][k]
    return obj


def root_cohort(flavors: dict | None = None, *, team: str = "research", name: str = TEAM_COHORT) -> dict:
    return cohort(name, flavors=flavors if flavors is not None else {H100: {GPU: "16"}},
                  labels={**MANAGED, "tau.azure.com/team": team})


def healthy_pool(reserved_train: str = "6", reserved_eval: str = "4") -> list[dict]:
    """A valid, established automatic pool: team `research`, two h100 nodes (8 GPUs each), workspaces `train` and
    `eval` with zero-nominal queues in the root Cohort `tau-team-research`."""
    return [
        pool_tau_cluster(),
        team(),
        node("gpu-1"),
        node("gpu-2"),
        pool_workspace("train"),
        pool_workspace("eval"),
        root_cohort(),
        team_cq("train", reservation={H100: {GPU: reserved_train}}, usage={H100: {GPU: reserved_train}}),
        team_cq("eval", reservation={H100: {GPU: reserved_eval}}, usage={H100: {GPU: "2"}}),
        resource_flavor(H100, {"kubernetes.io/os": "linux", "tau.azure.com/gpu-class": "h100"}),
    ]


def pool_of(objs: list[dict], access: dict | None = None):
    from taudash.engine.rules.pool import derive_pool

    return derive_pool(RuleContext(store=store_of(*objs, access=access), now=NOW))


# --- scenario: the drain world ----------------------------------------------------------------------------------
# TauWorkspace `eval` (team `research`) whose resolved namespace is `eval`, team ClusterQueue `tau-ws-eval`
# selecting `tau.azure.com/workspace=eval`, and LocalQueue `jobqueue` in `eval` pointing at it. `mode` makes the
# workspace drain by Deletion or Retarget (to `eval-v2`).

DRAIN_NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
DRAIN_MODES = ("Deletion", "Retarget")
WS_UID = "uid-ws-eval"


def drain_workspace(mode: str | None = "Retarget", *, name: str = "eval", resolved: str | None = OLD,
                    target: str | None = None, queue_uid: str | None = "uid-cq-tau-ws-eval",
                    identity: tuple[str, str] | None = ("eval-runner", "client-1"),
                    subject: tuple[str, str] | None = ("Group", "eval-researchers"),
                    cluster_wide: bool = False) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": SYS, "generation": 1, "uid": WS_UID}
    spec: dict[str, Any] = {"teamRef": {"name": "research"}, "queue": "jobqueue"}
    if mode == "Deletion":
        meta["deletionTimestamp"] = "2025-06-01T11:00:00Z"
        meta["finalizers"] = ["tau.azure.com/workspace-cleanup"]
    if target is None and mode == "Retarget":
        target = NEW
    if target:
        spec["target"] = {"namespace": target}
    if identity:
        spec["workloadIdentity"] = {"serviceAccountName": identity[0], "clientId": identity[1]}
    if cluster_wide:
        spec["authorization"] = {"mode": "cluster-wide"}
    elif subject:
        spec["authorization"] = {"mode": "workspace-rbac"}
        spec["principalRef"] = {"provider": "entra", "name": subject[1]}
        spec["kubernetesSubject"] = {"kind": subject[0], "name": subject[1]}
        spec["role"] = "tau-researcher-v1"
    status: dict[str, Any] = {
        "phase": "Ready",
        "observedGeneration": 1,
        "target": {"resolvedNamespace": resolved} if resolved else {},
        "queue": {"localQueue": "jobqueue", "clusterQueue": "tau-ws-eval"},
        "conditions": [cond("RBACReady"), cond("QueueReady"), cond("DriftDetected", "False", "NoDrift")],
    }
    if queue_uid:
        status["queue"]["clusterQueueUID"] = queue_uid
    return {"apiVersion": TAU, "kind": "TauWorkspace", "metadata": meta, "spec": spec, "status": status}


def ws_labels(ws: str = "eval", queue: str = "jobqueue") -> dict[str, str]:
    """The labels the controller stamps on a workspace namespace."""
    return {
        "tau.azure.com/workspace": ws,
        "tau.azure.com/team": "research",
        "tau.azure.com/local-queue": queue,
        "kueue.x-k8s.io/default-local-queue": queue,
        **MANAGED,
    }


def team_queue(ws: str = "eval") -> dict:
    """The workspace's ClusterQueue as the controller writes it (spec only), selecting the workspace label."""
    return cluster_queue(f"tau-ws-{ws}", selector={"matchLabels": {"tau.azure.com/workspace": ws}}, status=False)


def drain_workload(name: str, ns: str = OLD, *, queue: str = "jobqueue", finished: bool = False,
                   admitted_to: str | None = None, owner: tuple[str, str, str] | None = None,
                   job_uid_label: str | None = None, owner_api: str = "batch/v1") -> dict:
    """A Workload for the drain rules: owner (kind, name, uid) of any API; the job-uid label only if given."""
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-wl-{name}"}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": owner_api, "kind": owner[0], "name": owner[1], "uid": owner[2], "controller": True}
        ]
    if job_uid_label:
        meta["labels"] = {"kueue.x-k8s.io/job-uid": job_uid_label}
    conds = ([cond("QuotaReserved", "True"), cond("Admitted", "True")] if admitted_to
             else [cond("QuotaReserved", "False", "Pending")])
    if finished:
        conds.append(cond("Finished", "True", "Succeeded"))
    status: dict[str, Any] = {"conditions": conds}
    if admitted_to:
        status["admission"] = {"clusterQueue": admitted_to}
    return {"apiVersion": KQ, "kind": "Workload", "metadata": meta, "spec": {"queueName": queue}, "status": status}


def drain_world(mode: str | None = "Retarget", *extra: dict, ws: dict | None = None,
                ns_labels: dict | None = None) -> list[dict]:
    """The baseline objects plus `extra`."""
    return [
        ws or drain_workspace(mode),
        namespace(OLD, ws_labels() if ns_labels is None else ns_labels),
        namespace(NEW, ws_labels()),
        team_queue(),
        local_queue("jobqueue", OLD, "tau-ws-eval"),
        *extra,
    ]


def drain_ctx(objs: list[dict], access: dict | None = None, claims: tuple[str, ...] = ()) -> RuleContext:
    return RuleContext(store=store_of(*objs, access=access), now=DRAIN_NOW, config=RuleConfig(storage_claims=claims))


def the_workspace(ctx: RuleContext):
    return ctx.store.get("TauWorkspace", "eval", SYS)


def drain(objs: list[dict], access: dict | None = None):
    from taudash.engine.rules.drain import derive_drain

    ctx = drain_ctx(objs, access)
    return derive_drain(ctx, the_workspace(ctx))


def blocker_names(view) -> list[tuple[str, str]]:
    return [(b.kind, b.name) for b in view.blockers]


def pool_flavor(view, name: str):
    """The pool view's flavor `name`."""
    return next(f for f in view.flavors if f.name == name)


def workload_holding_gpus(gpus: int, name: str = "local-job", ns: str = "train", queue: str = "multikueue") -> dict:
    """A Workload that holds `gpus` GPUs of its queue's quota (QuotaReserved=True): fills a simulated worker."""
    return {"apiVersion": KQ, "kind": "Workload",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "x", "resources": {
                    "requests": {"nvidia.com/gpu": str(gpus)}}}]}}}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                       "message": "", "lastTransitionTime": "2026-12-01T00:00:00Z"}]}}


def list_response(api_version: str, kind: str, metadata: dict, items: list) -> dict:
    """A Kubernetes List response (`<Kind>List`): what an API server's list endpoint returns."""
    return {"apiVersion": api_version, "kind": f"{kind}List", "metadata": metadata, "items": items}


def kubeconfig_doc(clusters: dict[str, dict], user: dict, contexts: dict[str, str], current: str) -> dict:
    """A kubeconfig document: clusters by name, one user entry, contexts as name -> cluster name."""
    return {"apiVersion": "v1", "kind": "Config", "current-context": current, "users": [user],
            "clusters": [{"name": n, "cluster": c} for n, c in clusters.items()],
            "contexts": [{"name": n, "context": {"cluster": c, "user": user["name"]}} for n, c in contexts.items()]}


def kubeconfig_of(contexts: dict[str, dict], current: str | None = None) -> dict:
    """A kubeconfig document with a cluster (`<name>-cluster`) and a user per context: name → {"server", "user"
    (its name; "" for none; default the context's), "namespace", "token", and any other cluster field
    (certificate-authority-data, insecure-skip-tls-verify)}. Users of the same name are listed once."""
    clusters, users, entries = [], {}, []
    for name, given in contexts.items():
        cluster = dict(given)
        user, ns, token = cluster.pop("user", name), cluster.pop("namespace", ""), cluster.pop("token", "t")
        clusters.append({"name": f"{name}-cluster", "cluster": cluster})
        if user:
            users.setdefault(user, {"name": user, "user": {"token": token}})
        entries.append({"name": name, "context": {"cluster": f"{name}-cluster", **({"user": user} if user else {}),
                                                  **({"namespace": ns} if ns else {})}})
    doc = {"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": list(users.values()),
           "contexts": entries}
    if current:
        doc["current-context"] = current
    return doc


def submittable(kind: str, name: str, ns: str, *, queue: str | None = "jobqueue", gpus: int = 1,
                workers: int = 1, replicas: int = 1) -> dict:
    """A manifest as a user submits it (no uid, no status): Job, RayJob (a head and `workers` GPU workers),
    Deployment (Kueue-managed, `replicas` pods) or Workload, each pod asking for `gpus` GPUs."""
    pod: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox",
                                           "resources": {"requests": {GPU: str(gpus)}}}]}
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if kind == "Job":
        return job(name, ns, queue=queue, gpus=gpus)
    if kind == "Workload":
        spec: dict[str, Any] = {"queueName": queue or "", "podSets": [{"name": "main", "count": 1,
                                                                      "template": {"spec": pod}}]}
        return {"apiVersion": KQ, "kind": "Workload", "metadata": meta, "spec": spec}
    if kind == "Deployment":
        labels = {"app": name, **(managed_template(queue) if queue else {})}
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": labels}, "spec": pod}}}
    if queue:
        meta["labels"] = {QUEUE_LABEL: queue}
    head = {"containers": [{"name": "head", "image": "ray", "resources": {"requests": {"cpu": "1"}}}]}
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": meta,
            "spec": {"entrypoint": "python run.py", "submissionMode": "HTTPMode",
                     "rayClusterSpec": {"headGroupSpec": {"template": {"spec": head}},
                                        "workerGroupSpecs": [{"groupName": "gpu", "replicas": workers,
                                                              "template": {"spec": pod}}]}}}


def whatif_prediction(pid: str, obj: tuple[str, str, str] = ("Job", "train", "try-me"), *,
                      created: str = "2026-11-30T09:00:00+00:00", flavor: str = "h100", starts_now: bool = True,
                      interval: tuple[float, float] | None = None, fork_wait: float | None = 0.0,
                      preempts: Iterable[tuple[str, str]] = ()) -> dict:
    """A kept `taudash/v1 WhatIfPrediction` (docs/whatif.md) for (kind, namespace, name)."""
    kind, ns, name = obj
    est = {"known": True, "low": interval[0], "median": sum(interval) / 2, "high": interval[1]} if interval else None
    return {"apiVersion": "taudash/v1", "kind": "WhatIfPrediction",
            "metadata": {"id": pid, "createdAt": created, "source": "live"},
            "spec": {"object": {"kind": kind, "namespace": ns, "name": name}},
            "prediction": {"admissible": True, "clusterQueue": "tau-ws-train", "startsNow": starts_now,
                           "flavors": [{"podSet": "main", "count": 1, "flavors": {GPU: flavor, "cpu": flavor}}],
                           "eta": {"estimate": est, "fork": {"simulatedAdmissionSeconds": fork_wait}},
                           "preempts": [{"namespace": n, "name": w} for n, w in preempts]},
            "writesToCluster": 0}


def told(app) -> list[str]:
    """What the app notifies from now on (each message, as text), still shown as it would be."""
    said: list[str] = []
    notify = app.notify

    def record(message, *a, **kw):
        said.append(str(message))
        return notify(message, *a, **kw)

    app.notify = record
    return said
