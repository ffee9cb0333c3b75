"""Why an object can never be admitted as the cluster stands: the checks made before the fork runs.

Each returns an `Inadmissible` (a reason code and Kueue-like wording) or None. "Never" means no amount
of waiting helps: no LocalQueue, no ClusterQueue, a namespace the queue does not select, a request above
what the queue could hold with nothing else admitted (its own quota plus what its cohort tree can lend),
no flavor the pods can use, a TauGrid profile or workspace that is not Ready. A stopped or inactive queue
is not among them: the object waits until it is released (the prediction says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from taudash.engine.model import TauWorkspace
from taudash.engine.model.names import LANE_LABEL, PROFILE_LABEL, QUEUE_NAME_LABEL
from taudash.engine.rules.profiles import load_profile_set, select_profile, taugrid_absent
from taudash.engine.store import Store
from taudash.sim.controllers.admission import MODE_NOFIT, Cluster, assign, workload_model
from taudash.sim.controllers.base import FORMATS, Obj, labels, meta
from taudash.sim.controllers.jobs import build_workload, priority_label, queue_name, requests_of
from taudash.sim.controllers.queues import namespace_matches

from .manifest import Manifest

NO_LOCAL_QUEUE = "NoLocalQueue"
NOT_MANAGED = "NotManagedByKueue"
LOCAL_QUEUE_NOT_FOUND = "LocalQueueNotFound"
CLUSTER_QUEUE_NOT_FOUND = "ClusterQueueNotFound"
NAMESPACE_NOT_SELECTED = "NamespaceNotSelected"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
PROFILE_NOT_READY = "ProfileNotReady"
WORKSPACE_NOT_READY = "WorkspaceNotReady"


@dataclass(frozen=True)
class Inadmissible:
    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass
class Profile:
    """The TauGrid profile the object would be stamped with (None on a plain Kueue cluster)."""

    name: str | None
    selected_by: str  # label | implicit | none
    message: str
    annotations: dict[str, str]
    queue: str | None = None  # the LocalQueue the profile names for the namespace

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "selectedBy": self.selected_by, "message": self.message,
                "annotations": dict(self.annotations)}


def workspace_of(store: Store, namespace: str, system_ns: str) -> TauWorkspace | None:
    if not store.readable("TauWorkspace"):
        return None
    for ws in store.list(TauWorkspace, system_ns):
        if (ws.status.target.resolved_namespace or ws.desired_namespace) == namespace:
            return ws
    return None


def workspace_not_ready(ws: TauWorkspace | None) -> Inadmissible | None:
    if ws is None or ws.status.phase in ("", "Ready"):
        return None
    return Inadmissible(WORKSPACE_NOT_READY, f"TauWorkspace {ws.name} is {ws.status.phase}, not Ready: "
                        f"its namespace {ws.desired_namespace} takes no new work until it is")


def profile_for(store: Store, m: Manifest, team: str) -> tuple[Profile | None, Inadmissible | None]:
    """The profile stamped on the object: the one its label names (it must be Ready and authorised), or the
    only ready profile that applies to (namespace, team, lane); none when TauGrid is absent."""
    if taugrid_absent(store):
        return None, None
    explicit = m.labels.get(PROFILE_LABEL)
    ps = load_profile_set(store)
    sel = select_profile(ps, m.namespace, team, m.labels.get(LANE_LABEL, ""), explicit)
    if sel.profile is None:
        if explicit:
            return Profile(explicit, "label", sel.message, {}), Inadmissible(PROFILE_NOT_READY, sel.message)
        return Profile(None, "none", sel.message, {}), None
    queue = None
    p = ps.get(sel.profile)
    if p is not None:
        queue = next((lq.name for lq in p.local_queues if lq.namespace == m.namespace), None) \
            or p.default_local_queue or None
    return Profile(sel.profile, "label" if explicit else "implicit", sel.message, dict(sel.annotations), queue), None


def queue_of(obj: Obj) -> str:
    if obj["kind"] == "Workload":
        return str((obj.get("spec") or {}).get("queueName") or "")
    return queue_name(obj)


def set_queue(obj: Obj, queue: str) -> None:
    """Stamp the queue the profile gives on an object that names none (what the TauGrid CLI renders)."""
    if obj["kind"] == "Workload":
        obj["spec"]["queueName"] = queue
        return
    target = obj["metadata"]
    if obj["kind"] == "Deployment":
        target = obj["spec"].setdefault("template", {}).setdefault("metadata", {})
    target.setdefault("labels", {})[QUEUE_NAME_LABEL] = queue


def as_workload(obj: Obj, raws: dict[str, dict[tuple[str, str], Obj]]) -> Obj:
    """The Workload Kueue would make for `obj` (itself for a Workload), as the simulated Kueue builds it."""
    if obj["kind"] == "Workload":
        wl = dict(obj)
        wl.setdefault("spec", {}).setdefault("priority", 0)
        wl["metadata"] = {**obj["metadata"], "uid": "whatif"}
        return wl
    pc = priority_label(obj)
    wpc = raws.get("WorkloadPriorityClass", {}).get(("", pc)) if pc else None
    prio = int((wpc or {}).get("value") or 0)
    src = {**obj, "metadata": {**obj["metadata"], "uid": "whatif"}}
    return build_workload(src, prio, pc if wpc is not None else "")


def route(obj: Obj, raws: dict[str, dict[tuple[str, str], Obj]]) -> tuple[str | None, str | None, Inadmissible | None]:
    """(LocalQueue, ClusterQueue, why it can never be queued)."""
    ns = meta(obj)["namespace"]
    lqs = [lq for (lns, _), lq in raws.get("LocalQueue", {}).items() if lns == ns]
    q = queue_of(obj)
    if not lqs:
        return q or None, None, Inadmissible(NO_LOCAL_QUEUE, f"namespace {ns} has no LocalQueue: "
                                             "Kueue admits nothing submitted there")
    if not q:
        names = ", ".join(sorted(meta(lq)["name"] for lq in lqs))
        return None, None, Inadmissible(NOT_MANAGED, f"no {QUEUE_NAME_LABEL} label: Kueue would not manage it "
                                        f"(LocalQueues in {ns}: {names})")
    lq = raws["LocalQueue"].get((ns, q))
    if lq is None:
        return q, None, Inadmissible(LOCAL_QUEUE_NOT_FOUND, f"LocalQueue {q} doesn't exist in namespace {ns}")
    cqn = (lq.get("spec") or {}).get("clusterQueue") or ""
    cq = raws.get("ClusterQueue", {}).get(("", cqn))
    if cq is None:
        return q, cqn or None, Inadmissible(CLUSTER_QUEUE_NOT_FOUND, f"ClusterQueue {cqn} doesn't exist")
    ns_obj = raws.get("Namespace", {}).get(("", ns))
    if not namespace_matches(cq, labels(ns_obj) if ns_obj else {}):
        return q, cqn, Inadmissible(NAMESPACE_NOT_SELECTED, f"namespace {ns} doesn't match the namespaceSelector "
                                    f"of ClusterQueue {cqn}")
    return q, cqn, None


def never_fits(wl: Obj, cqn: str, raws: dict[str, dict[tuple[str, str], Obj]], now: datetime) -> Inadmissible | None:
    """Kueue's flavor assignment with nothing else admitted: NoFit there is NoFit forever."""
    cqs = list(raws.get("ClusterQueue", {}).values())
    cl = Cluster(cqs, list(raws.get("Cohort", {}).values()), [], now)
    flavors = {k[1]: f for k, f in raws.get("ResourceFlavor", {}).items()}
    a = assign(cl, cqn, workload_model(wl), requests_of(wl), flavors, FORMATS)
    if a.mode != MODE_NOFIT:
        return None
    reason = a.no_fit_reason()
    code = EXCEEDS_MAX_QUOTA if reason == "ExceedsMaxQuota" else NO_MATCHING_FLAVOR
    return Inadmissible(code, a.message() or f"no flavor of ClusterQueue {cqn} fits it")
