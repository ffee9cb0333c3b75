"""Kueue's job framework for the simulator (Kueue's jobframework): which sources get a Workload,
what it looks like, and how each kind is suspended, resumed and seen as finished.

Sources: batch/v1 Job, RayJob, RayService (one Workload each) and Kueue-managed Deployments (one
single-pod Workload per replica; without simulated Pods the Deployment owns them directly).
"""

from __future__ import annotations

import hashlib
from decimal import Decimal

from taudash.engine.model.names import RESOURCE_IN_USE_FINALIZER
from taudash.sim.controllers.admission import PodSetRequest
from taudash.sim.controllers.base import (
    JOB_UID_LABEL,
    MANAGED_LABEL,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    Obj,
    is_true,
    labels,
    meta,
    qres,
)
from taudash.sim.topology import template_request

KUEUE_V = "kueue.x-k8s.io/v1beta2"
SOURCE_KINDS = ("Job", "RayJob", "RayService", "Deployment")
API = {"Job": "batch/v1", "RayJob": "ray.io/v1", "RayService": "ray.io/v1", "Deployment": "apps/v1"}
_SUBMITTER = {"containers": [{"name": "submitter", "resources": {"requests": {"cpu": "500m", "memory": "200Mi"}}}]}


def short_hash(*parts: str, n: int = 5) -> str:
    return hashlib.sha1("\x00".join(parts).encode()).hexdigest()[:n]


def workload_name(kind: str, name: str, uid: str, extra: str = "") -> str:
    """`<kind>-<name>-<5 hex of sha1(kind, group, name, uid[, extra])>`, like jobframework."""
    group = API[kind].rsplit("/", 1)[0] if "/" in API[kind] else ""
    prefix = f"{kind.lower()}-{name}"[:247].rstrip("-.")
    return f"{prefix}-{short_hash(kind, group, name, uid, *([extra] if extra else []))}"


def queue_name(src: Obj) -> str:
    """The LocalQueue a source asks for ('' when Kueue does not manage it)."""
    if src["kind"] == "Deployment":
        tmpl = ((src.get("spec") or {}).get("template") or {}).get("metadata") or {}
        tl = tmpl.get("labels") or {}
        return (tl.get(QUEUE_LABEL) or labels(src).get(QUEUE_LABEL) or "") if tl.get(MANAGED_LABEL) == "true" else ""
    if src["kind"] == "RayJob" and (src.get("spec") or {}).get("clusterSelector"):
        return ""  # Kueue ignores RayJobs that run on an existing cluster
    return labels(src).get(QUEUE_LABEL, "")


def podsets(src: Obj) -> list[tuple[str, int, Obj]]:
    """(name, count, pod template) per podset of a source."""
    spec = src.get("spec") or {}
    kind = src["kind"]
    if kind == "Job":
        count = min(
            int(spec.get("parallelism", 1) or 1), int(spec.get("completions") or spec.get("parallelism", 1) or 1)
        )
        return [("main", count, spec.get("template") or {})]
    if kind == "Deployment":
        return [("main", 1, spec.get("template") or {})]
    cluster = spec.get("rayClusterSpec" if kind == "RayJob" else "rayClusterConfig") or {}
    out = [("head", 1, (cluster.get("headGroupSpec") or {}).get("template") or {})]
    for g in cluster.get("workerGroupSpecs") or ():
        count = g.get("replicas", g.get("minReplicas", 1))
        out.append((g.get("groupName") or "workers", int(count or 0), g.get("template") or {}))
    if kind == "RayJob" and (spec.get("submissionMode") or "K8sJobMode") == "K8sJobMode":
        head = out[0][2].get("spec") or {}
        sub = dict(_SUBMITTER)
        for k in ("nodeSelector", "tolerations", "priorityClassName"):
            if k in head:
                sub[k] = head[k]
        out.append(("submitter", 1, {"spec": sub}))
    return out


def pod_requests(template: Obj) -> dict[str, Decimal]:
    """Summed container requests of one pod (limits stand in for missing requests, as defaulting does)."""
    total: dict[str, Decimal] = {}
    for c in ((template.get("spec") or {}).get("containers")) or ():
        res = c.get("resources") or {}
        merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        for r, v in merged.items():
            total[r] = total.get(r, Decimal(0)) + qres(r, v)
    return total


def requests_of(workload: Obj) -> list[PodSetRequest]:
    out = []
    for ps in (workload.get("spec") or {}).get("podSets") or ():
        tspec = (ps.get("template") or {}).get("spec") or {}
        reqs = {r: v for r, v in pod_requests(ps.get("template") or {}).items() if r != "pods"}
        out.append(
            PodSetRequest(
                ps.get("name", "main"),
                int(ps.get("count", 1)),
                reqs,
                dict(tspec.get("nodeSelector") or {}),
                list(tspec.get("tolerations") or []),
                required_terms(tspec),
            )
        )
    return out


def required_terms(pod_spec: Obj) -> list[Obj] | None:
    """The pod's requiredDuringSchedulingIgnoredDuringExecution nodeSelectorTerms, or None."""
    na = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = na.get("nodeSelectorTerms")
    return list(terms) if terms else None


def build_workload(src: Obj, priority: int, priority_class: str, name: str | None = None) -> Obj:
    m = meta(src)
    kind = src["kind"]
    pod_sets = []
    for ps_name, count, tmpl in podsets(src):
        spec = dict(tmpl.get("spec") or {})
        if kind != "Deployment":
            spec["restartPolicy"] = "Never"
        pod_set: Obj = {"name": ps_name, "count": count, "template": {"spec": spec}}
        request = template_request(tmpl)  # the podset-required/preferred-topology annotations
        if request is not None:
            pod_set["topologyRequest"] = request
        pod_sets.append(pod_set)
    wl_spec: Obj = {"active": True, "podSets": pod_sets, "priority": priority, "queueName": queue_name(src)}
    if priority_class:
        wl_spec["priorityClassRef"] = {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": priority_class,
        }
    return {
        "apiVersion": KUEUE_V,
        "kind": "Workload",
        "metadata": {
            "name": name or workload_name(kind, m["name"], m["uid"]),
            "namespace": m["namespace"],
            "labels": {JOB_UID_LABEL: m["uid"]},
            "ownerReferences": [
                {
                    "apiVersion": src.get("apiVersion") or API[kind],
                    "kind": kind,
                    "name": m["name"],
                    "uid": m["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "finalizers": [RESOURCE_IN_USE_FINALIZER],
        },
        "spec": wl_spec,
    }


def priority_label(src: Obj) -> str:
    if src["kind"] == "Deployment":
        tl = (((src.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
        return tl.get(PRIORITY_LABEL) or labels(src).get(PRIORITY_LABEL, "")
    return labels(src).get(PRIORITY_LABEL, "")


# --- per-kind state -------------------------------------------------------------------------------


def finished(src: Obj) -> tuple[bool, bool, str]:
    """(finished, succeeded, message). RayServices and Deployments never finish."""
    kind, st = src["kind"], src.get("status") or {}
    if kind == "Job":
        if is_true(src, "Failed"):
            return True, False, "Job failed"
        if is_true(src, "Complete"):
            return True, True, "Job finished successfully"
        return False, False, ""
    if kind == "RayJob":
        dep = st.get("jobDeploymentStatus") or ""
        if dep in ("Complete", "Failed"):
            ok = dep == "Complete" and st.get("jobStatus", "SUCCEEDED") == "SUCCEEDED"
            return True, ok, st.get("message") or f"RayJob {dep.lower()}"
    return False, False, ""


def running(src: Obj) -> bool:
    """Whether the source's pods are up (Kueue's PodsReady)."""
    kind, st = src["kind"], src.get("status") or {}
    if kind == "Job":
        return int(st.get("active") or 0) > 0 and not (src.get("spec") or {}).get("suspend")
    if kind == "RayJob":
        return st.get("jobDeploymentStatus") == "Running"
    if kind == "RayService":
        return is_true(src, "Ready")
    return True


def active(src: Obj) -> bool:
    """Kueue's job IsActive: a Job with active pods; a RayJob not Suspended or New (a RayJob KubeRay has not
    touched yet, status "", counts as inactive here: the simulator has no KubeRay). Kinds the simulator
    does not suspend (RayService, Deployment) are inactive once evicted."""
    kind, st = src["kind"], src.get("status") or {}
    if kind == "Job":
        return int(st.get("active") or 0) != 0
    if kind == "RayJob":
        return (st.get("jobDeploymentStatus") or "") not in ("", "New", "Suspended")
    return False


def suspended(src: Obj) -> bool | None:
    """Whether the source is held back; None for kinds Kueue does not suspend here."""
    if src["kind"] in ("Job", "RayJob"):
        return bool((src.get("spec") or {}).get("suspend"))
    return None


def suspend_patch(src: Obj, suspend: bool, workload: Obj | None = None,
                  flavors: dict[str, Obj] | None = None) -> Obj | None:
    """Suspend or resume a job. With its Workload, also what Kueue's job framework does to the pod
    templates: on start the admitted flavors' `nodeLabels` join the nodeSelector and their
    `tolerations` are appended (podset.Merge); on stop the Workload's original pod set values are
    restored (RestorePodSetsInfo)."""
    if src["kind"] not in ("Job", "RayJob"):
        return None
    patch: Obj = {"spec": {"suspend": suspend}}
    if workload is not None:
        want = _pod_infos(workload, None if suspend else (flavors or {}))
        _template_patch(src, want, patch)
    return patch


def _pod_infos(workload: Obj, flavors: dict[str, Obj] | None) -> dict[str, tuple[dict, list]]:
    """podset -> (nodeSelector, tolerations): the Workload's originals, merged with the admitted flavors'."""
    out: dict[str, tuple[dict, list]] = {}
    assigned = {
        a.get("name"): sorted(set((a.get("flavors") or {}).values()))
        for a in ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ()
    }
    for ps in (workload.get("spec") or {}).get("podSets") or ():
        spec = (ps.get("template") or {}).get("spec") or {}
        selector = dict(spec.get("nodeSelector") or {})
        tolerations = list(spec.get("tolerations") or [])
        if flavors is not None:
            for name in assigned.get(ps.get("name"), ()):
                rf = (flavors.get(name) or {}).get("spec") or {}
                for k, v in (rf.get("nodeLabels") or {}).items():
                    selector.setdefault(k, v)
                tolerations += [t for t in rf.get("tolerations") or () if t not in tolerations]
        out[ps.get("name", "main")] = (selector, tolerations)
    return out


def _spec_patch(current: Obj, selector: dict, tolerations: list) -> Obj:
    out: Obj = {}
    have = current.get("nodeSelector") or {}
    if have != selector:
        out["nodeSelector"] = {**{k: None for k in have if k not in selector}, **selector} or None
    if list(current.get("tolerations") or []) != tolerations:
        out["tolerations"] = tolerations or None
    return out


def _template_patch(src: Obj, want: dict[str, tuple[dict, list]], patch: Obj) -> None:
    spec = src.get("spec") or {}
    if src["kind"] == "Job":
        if "main" in want:
            sp = _spec_patch(((spec.get("template") or {}).get("spec") or {}), *want["main"])
            if sp:
                patch["spec"]["template"] = {"spec": sp}
        return
    cluster = spec.get("rayClusterSpec") or {}
    head = (cluster.get("headGroupSpec") or {}).get("template") or {}
    rc: Obj = {}
    if "head" in want:
        sp = _spec_patch(head.get("spec") or {}, *want["head"])
        if sp:
            rc["headGroupSpec"] = {"template": {"spec": sp}}
    groups, changed = [], False
    for g in cluster.get("workerGroupSpecs") or ():
        name = g.get("groupName") or "workers"
        tmpl = g.get("template") or {}
        if name in want and _spec_patch(tmpl.get("spec") or {}, *want[name]):
            selector, tolerations = want[name]
            pod = {k: v for k, v in (tmpl.get("spec") or {}).items() if k not in ("nodeSelector", "tolerations")}
            if selector:
                pod["nodeSelector"] = selector
            if tolerations:
                pod["tolerations"] = tolerations
            g = {**g, "template": {**tmpl, "spec": pod}}
            changed = True
        groups.append(g)
    if changed:
        rc["workerGroupSpecs"] = groups
    if rc:
        patch["spec"]["rayClusterSpec"] = rc
