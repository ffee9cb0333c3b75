"""Small hand-built Kubernetes objects for rule tests."""

from __future__ import annotations

from typing import Any

KQ = "kueue.x-k8s.io/v1beta2"
TAU = "tau.azure.com/v1alpha1"


def cond(type_: str, status: str = "True", reason: str = "", message: str = "", gen: int | None = None) -> dict:
    c = {"type": type_, "status": status, "reason": reason or type_, "message": message}
    if gen is not None:
        c["observedGeneration"] = gen
    return c


def workspace(name: str, *, ns: str = "tau-system", gen: int = 1, observed: int = 1, phase: str = "Ready",
              conditions: list[dict] | None = None, team: str | None = "research", **spec: Any) -> dict:
    if conditions is None:
        conditions = [cond("RBACReady", reason="RoleBindingReady"), cond("QueueReady"), cond("DriftDetected", "False", "NoDrift")]
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


def cluster_queue(name: str, *, cohort: str | None = None, stop: str | None = None, pending: int = 0,
                  reserving: int = 0, admitted: int = 0, active: tuple[str, str, str] | None = ("True", "Ready", "Can admit new workloads"),
                  flavors: dict[str, dict[str, str]] | None = None, reservation: dict[str, dict[str, str]] | None = None,
                  usage: dict[str, dict[str, str]] | None = None, labels: dict | None = None, version: str = KQ,
                  limits: dict[tuple[str, str], dict[str, str]] | None = None) -> dict:
    spec: dict[str, Any] = {"namespaceSelector": {}}
    if cohort:
        spec["cohort" if version.endswith("v1beta1") else "cohortName"] = cohort
    if stop:
        spec["stopPolicy"] = stop
    if flavors:
        covered = sorted({r for res in flavors.values() for r in res})
        spec["resourceGroups"] = [{
            "coveredResources": covered,
            "flavors": [
                {"name": f, "resources": [{"name": r, "nominalQuota": q, **(limits or {}).get((f, r), {})} for r, q in res.items()]}
                for f, res in flavors.items()
            ],
        }]

    def usage_list(m):
        return [{"name": f, "resources": [{"name": r, "total": q} for r, q in res.items()]} for f, res in (m or {}).items()]

    status: dict[str, Any] = {
        "pendingWorkloads": pending,
        "reservingWorkloads": reserving,
        "admittedWorkloads": admitted,
        "flavorsReservation": usage_list(reservation),
        "flavorsUsage": usage_list(usage),
    }
    if active:
        status["conditions"] = [cond("Active", active[0], active[1], active[2])]
    return {"apiVersion": version, "kind": "ClusterQueue",
            "metadata": {"name": name, "uid": f"uid-cq-{name}", "labels": labels or {}}, "spec": spec, "status": status}


def cohort(name: str, *, parent: str | None = None, flavors: dict[str, dict[str, str]] | None = None, labels: dict | None = None) -> dict:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent
    if flavors:
        spec["resourceGroups"] = [{
            "coveredResources": sorted({r for res in flavors.values() for r in res}),
            "flavors": [{"name": f, "resources": [{"name": r, "nominalQuota": q} for r, q in res.items()]} for f, res in flavors.items()],
        }]
    return {"apiVersion": KQ, "kind": "Cohort", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def local_queue(name: str, ns: str, cq: str) -> dict:
    return {"apiVersion": KQ, "kind": "LocalQueue", "metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq}}


def workload(name: str, ns: str, *, queue: str = "jobqueue", admitted_to: str | None = None, state: str = "pending",
             reason: str = "", message: str = "", checks: list[dict] | None = None, active: bool = True,
             owner: tuple[str, str, str] | None = None) -> dict:
    """state: pending | reserved | admitted | finished."""
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
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": owner[0], "name": owner[1], "uid": owner[2], "controller": True}]
        meta["labels"] = {"kueue.x-k8s.io/job-uid": owner[2]}
    status: dict[str, Any] = {"conditions": conds}
    if admitted_to and state != "pending":
        status["admission"] = {"clusterQueue": admitted_to, "podSetAssignments": [{"name": "main", "flavors": {}, "count": 1}]}
    if checks:
        status["admissionChecks"] = checks
    return {"apiVersion": KQ, "kind": "Workload", "metadata": meta,
            "spec": {"queueName": queue, "active": active, "podSets": [{"name": "main", "count": 1}]}, "status": status}
