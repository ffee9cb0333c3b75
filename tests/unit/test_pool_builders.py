"""Builders for the pool tests (tests/test_pool_*.py). No tests here.

`healthy()` is a valid, established automatic pool: team `research`, two h100 nodes (8 GPUs each),
workspaces `train` and `eval` with zero-nominal queues in the root Cohort `tau-team-research`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from taudash.engine.model import Quantity
from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.pool import derive_pool
from taudash.engine.sources.snapshot import store_from_objects

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SYS = "tau-system"
TAU = "tau.azure.com/v1alpha1"
KQ = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
H100 = "taugrid-gpu-h100"
A100 = "taugrid-gpu-a100"
H200 = "taugrid-gpu-h200"
ROOT = "tau-team-research"
MANAGED = {"app.kubernetes.io/managed-by": "tau-core-controller"}


def q(s: str) -> Quantity:
    return Quantity.parse(s)


def node(name: str, cls: str | None = "h100", *, alloc: dict | None = None, os: str | None = "linux",
         os_info: str | None = None, ready: str | None = "True", unschedulable: bool = False,
         deleting: bool = False, labels: dict | None = None) -> dict:
    lab: dict[str, str] = {}
    if cls is not None:
        lab["tau.azure.com/gpu-class"] = cls
    if os is not None:
        lab["kubernetes.io/os"] = os
    lab.update(labels or {})
    meta: dict[str, Any] = {"name": name, "labels": lab}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-30T08:00:00Z"
    status: dict[str, Any] = {"allocatable": alloc if alloc is not None else {GPU: "8"}}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready, "reason": "KubeletReady"}]
    if os_info is not None:
        status["nodeInfo"] = {"operatingSystem": os_info}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "spec": {"unschedulable": True} if unschedulable else {}, "status": status}


def tau_cluster(team: str | None = "research", selector: dict | None = None) -> dict:
    spec: dict[str, Any] = {"managementMode": "Reconcile", "queues": {}}
    if team:
        spec["queues"]["capacityTeamRef"] = {"name": team}
    if selector:
        spec["nodes"] = {"selector": selector}
    return {"apiVersion": TAU, "kind": "TauCluster", "metadata": {"name": "cluster", "generation": 1}, "spec": spec}


def _quota(entries: dict[tuple[str, str], str] | None) -> list[dict]:
    return [{"flavor": f, "resource": r, "nominalQuota": v} for (f, r), v in (entries or {}).items()]


def team(name: str = "research", *, quota: dict | None = None, cohort: str | None = None, ns: str = SYS) -> dict:
    obj: dict[str, Any] = {"apiVersion": TAU, "kind": "TauTeam", "metadata": {"name": name, "namespace": ns},
                           "spec": {}, "status": {"phase": "Ready"}}
    if quota:
        obj["spec"]["quota"] = _quota(quota)
    if cohort:
        obj["status"]["cohort"] = cohort
    return obj


def workspace(name: str, team: str | None = "research", *, quota: dict | None = None, cq: str | None = None,
              deleting: bool = False, ns: str = SYS) -> dict:
    spec: dict[str, Any] = {"target": {"namespace": name}}
    if team:
        spec["teamRef"] = {"name": team}
    if quota:
        spec["quota"] = _quota(quota)
    meta: dict[str, Any] = {"name": name, "namespace": ns, "generation": 1}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-30T08:00:00Z"
        meta["finalizers"] = ["tau.azure.com/workspace-cleanup"]
    status: dict[str, Any] = {"phase": "Ready", "observedGeneration": 1, "target": {"resolvedNamespace": name}}
    if cq:
        status["queue"] = {"localQueue": "jobqueue", "clusterQueue": cq}
    return {"apiVersion": TAU, "kind": "TauWorkspace", "metadata": meta, "spec": spec, "status": status}


def _groups(flavors: dict[str, dict[str, str]] | None, limits: dict | None = None) -> list[dict]:
    if not flavors:
        return []
    covered = sorted({r for res in flavors.values() for r in res})
    return [{"coveredResources": covered, "flavors": [
        {"name": f, "resources": [{"name": r, "nominalQuota": v, **(limits or {}).get((f, r), {})} for r, v in res.items()]}
        for f, res in flavors.items()
    ]}]


def _usage(m: dict[str, dict[str, str]] | None) -> list[dict]:
    return [{"name": f, "resources": [{"name": r, "total": v, "borrowed": "0"} for r, v in res.items()]} for f, res in (m or {}).items()]


def cq(name: str, *, cohort: str | None = None, flavors: dict | None = None, reservation: dict | None = None,
       usage: dict | None = None, labels: dict | None = None, limits: dict | None = None) -> dict:
    spec: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": _groups(flavors, limits)}
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": KQ, "kind": "ClusterQueue", "metadata": {"name": name, "labels": labels or {}}, "spec": spec,
            "status": {"flavorsReservation": _usage(reservation), "flavorsUsage": _usage(usage)}}


def team_cq(ws: str, *, team: str = "research", cohort: str = ROOT, flavors: dict | None = None, **kw: Any) -> dict:
    """A controller-owned workspace queue: zero nominal on every h100 resource unless told otherwise."""
    labels = {**MANAGED, "tau.azure.com/workspace": ws, "tau.azure.com/team": team}
    return cq(f"tau-ws-{ws}", cohort=cohort, flavors=flavors if flavors is not None else {H100: {GPU: "0"}},
              labels=labels, **kw)


def cohort(name: str, *, flavors: dict | None = None, labels: dict | None = None, parent: str | None = None) -> dict:
    spec: dict[str, Any] = {"resourceGroups": _groups(flavors)}
    if parent:
        spec["parentName"] = parent
    return {"apiVersion": KQ, "kind": "Cohort", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def root_cohort(flavors: dict | None = None, *, team: str = "research", name: str = ROOT) -> dict:
    return cohort(name, flavors=flavors if flavors is not None else {H100: {GPU: "16"}},
                  labels={**MANAGED, "tau.azure.com/team": team})


def rf(name: str, node_labels: dict | None = None) -> dict:
    return {"apiVersion": KQ, "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": {"nodeLabels": node_labels or {}}}


def healthy(reserved_train: str = "6", reserved_eval: str = "4") -> list[dict]:
    return [
        tau_cluster(),
        team(),
        node("gpu-1"),
        node("gpu-2"),
        workspace("train"),
        workspace("eval"),
        root_cohort(),
        team_cq("train", reservation={H100: {GPU: reserved_train}}, usage={H100: {GPU: reserved_train}}),
        team_cq("eval", reservation={H100: {GPU: reserved_eval}}, usage={H100: {GPU: "2"}}),
        rf(H100, {"kubernetes.io/os": "linux", "tau.azure.com/gpu-class": "h100"}),
    ]


def replace(objs: list[dict], *new: dict) -> list[dict]:
    """`objs` with each object of `new` replacing the one of the same kind and name (or appended)."""
    keys = {(o["kind"], o["metadata"]["name"]) for o in new}
    return [o for o in objs if (o["kind"], o["metadata"]["name"]) not in keys] + list(new)


def without(objs: list[dict], kind: str, name: str) -> list[dict]:
    return [o for o in objs if (o["kind"], o["metadata"]["name"]) != (kind, name)]


def pool_of(objs: list[dict], access: dict | None = None):
    store = store_from_objects(objs)
    for kind, state in (access or {}).items():
        store.set_access(kind, state)
    return derive_pool(RuleContext(store=store, now=NOW))


def rules(findings) -> list[str]:
    return sorted(f.rule for f in findings)


def only(findings, rule: str):
    hits = [f for f in findings if f.rule == rule]
    assert len(hits) == 1, [(f.rule, f.message) for f in findings]
    return hits[0]


def flavor(view, name: str):
    return next(f for f in view.flavors if f.name == name)
