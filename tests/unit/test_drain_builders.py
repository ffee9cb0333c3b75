"""Hand-built objects shared by the drain, identity and storage tests (this module holds no tests).

The baseline world: TauWorkspace `eval` (team `research`) whose resolved namespace is `eval`,
team ClusterQueue `tau-ws-eval` selecting `tau.azure.com/workspace=eval`, and LocalQueue
`jobqueue` in `eval` pointing at it. `mode` makes the workspace drain by Deletion or Retarget
(to `eval-v2`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from taudash.engine.rules.base import RuleConfig, RuleContext
from taudash.engine.rules.drain import derive_drain
from taudash.engine.sources.snapshot import store_from_objects

KQ = "kueue.x-k8s.io/v1beta2"
TAU = "tau.azure.com/v1alpha1"
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
MODES = ("Deletion", "Retarget")
OLD = "eval"
NEW = "eval-v2"
WS_UID = "uid-ws-eval"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def cond(type_: str, status: str = "True", reason: str = "") -> dict:
    return {"type": type_, "status": status, "reason": reason or type_, "message": ""}


def workspace(
    mode: str | None = "Retarget",
    *,
    name: str = "eval",
    resolved: str | None = OLD,
    target: str | None = None,
    queue_uid: str | None = "uid-cq-tau-ws-eval",
    identity: tuple[str, str] | None = ("eval-runner", "client-1"),
    subject: tuple[str, str] | None = ("Group", "eval-researchers"),
    cluster_wide: bool = False,
) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": "tau-system", "generation": 1, "uid": WS_UID}
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
        "app.kubernetes.io/managed-by": "tau-core-controller",
    }


def namespace(name: str, labels: dict[str, str] | None = None) -> dict:
    lab = {"kubernetes.io/metadata.name": name, **(labels or {})}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": lab}}


def cluster_queue(name: str, selector: dict | None, *, uid: str | None = None) -> dict:
    spec: dict[str, Any] = {"namespaceSelector": selector}
    return {"apiVersion": KQ, "kind": "ClusterQueue", "metadata": {"name": name, "uid": uid or f"uid-cq-{name}"}, "spec": spec}


def team_queue(ws: str = "eval") -> dict:
    return cluster_queue(f"tau-ws-{ws}", {"matchLabels": {"tau.azure.com/workspace": ws}})


def local_queue(name: str, ns: str, cq: str) -> dict:
    return {"apiVersion": KQ, "kind": "LocalQueue", "metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq}}


def workload(
    name: str,
    ns: str = OLD,
    *,
    queue: str = "jobqueue",
    finished: bool = False,
    admitted_to: str | None = None,
    owner: tuple[str, str, str] | None = None,
    job_uid_label: str | None = None,
    owner_api: str = "batch/v1",
) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-wl-{name}"}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": owner_api, "kind": owner[0], "name": owner[1], "uid": owner[2], "controller": True}
        ]
    if job_uid_label:
        meta["labels"] = {"kueue.x-k8s.io/job-uid": job_uid_label}
    conds = [cond("QuotaReserved", "True"), cond("Admitted", "True")] if admitted_to else [cond("QuotaReserved", "False", "Pending")]
    if finished:
        conds.append(cond("Finished", "True", "Succeeded"))
    status: dict[str, Any] = {"conditions": conds}
    if admitted_to:
        status["admission"] = {"clusterQueue": admitted_to}
    return {"apiVersion": KQ, "kind": "Workload", "metadata": meta, "spec": {"queueName": queue}, "status": status}


def job(name: str, ns: str = OLD, *, queue: str | None = "jobqueue", uid: str | None = None, done: str | None = None) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": uid or f"uid-job-{name}"}
    if queue:
        meta["labels"] = {QUEUE_LABEL: queue}
    status = {"conditions": [cond(done)]} if done else {}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {"suspend": True}, "status": status}


def rayjob(name: str, ns: str = OLD, *, queue: str | None = "jobqueue", deployment: str = "Running", job_status: str = "") -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-rayjob-{name}"}
    if queue:
        meta["labels"] = {QUEUE_LABEL: queue}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": meta,
        "spec": {"shutdownAfterJobFinishes": True},
        "status": {"jobDeploymentStatus": deployment, "jobStatus": job_status},
    }


def rayservice(name: str, ns: str = OLD, *, queue: str | None = "jobqueue") -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-raysvc-{name}"}
    if queue:
        meta["labels"] = {QUEUE_LABEL: queue}
    return {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": meta, "spec": {}, "status": {}}


def deployment(
    name: str,
    ns: str = OLD,
    *,
    template_labels: dict[str, str] | None = None,
    root_labels: dict[str, str] | None = None,
    replicas: int = 1,
    paused: bool = False,
    deleting: bool = False,
) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-deploy-{name}", "labels": root_labels or {}}
    if deleting:
        meta["deletionTimestamp"] = "2025-06-01T11:30:00Z"
        meta["finalizers"] = ["example.com/hold"]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "paused": paused,
            "template": {"metadata": {"labels": {"app": name, **(template_labels or {})}}},
        },
    }


def managed_template(queue: str = "jobqueue") -> dict[str, str]:
    return {"kueue.x-k8s.io/managed": "true", QUEUE_LABEL: queue}


def world(mode: str | None = "Retarget", *extra: dict, ws: dict | None = None, ns_labels: dict | None = None) -> list[dict]:
    """The baseline objects plus `extra`."""
    objs = [
        ws or workspace(mode),
        namespace(OLD, ws_labels() if ns_labels is None else ns_labels),
        namespace(NEW, ws_labels()),
        team_queue(),
        local_queue("jobqueue", OLD, "tau-ws-eval"),
    ]
    return objs + list(extra)


def ctx_for(objs: list[dict], access: dict | None = None, claims: tuple[str, ...] = ()) -> RuleContext:
    store = store_from_objects(objs)
    for kind, state in (access or {}).items():
        store.set_access(kind, state)
    return RuleContext(store=store, now=NOW, config=RuleConfig(storage_claims=claims))


def the_workspace(ctx: RuleContext):
    return ctx.store.get("TauWorkspace", "eval", "tau-system")


def drain(objs: list[dict], access: dict | None = None):
    ctx = ctx_for(objs, access)
    return derive_drain(ctx, the_workspace(ctx))


def blocker_names(view) -> list[tuple[str, str]]:
    return [(b.kind, b.name) for b in view.blockers]


def rules(findings) -> list[str]:
    return sorted(f.rule for f in findings)
