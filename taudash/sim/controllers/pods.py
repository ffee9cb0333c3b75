"""Pods: what the Job controller, KubeRay, kube-scheduler and the kubelet do for an admitted Workload.

Once Kueue has admitted a Workload and its job runs (a Job or RayJob no longer suspended; a RayService or
Deployment replica at once), each of its pod sets gets its Pods, owned by the job as Kubernetes owns them
(a Job's Pods carry `batch.kubernetes.io/job-name` and a controller reference to the Job). They are bound
to nodes right away by the simulated kube-scheduler (placement.py): onto the hosts of the Workload's
topology assignment when Kueue made one, all inside one domain of the pod set's topology level when it
asks for one (its request or its workload profile's placement), otherwise each on the least allocated
node. A Pod no node has room for stays Pending and unscheduled (`PodScheduled=False Unschedulable`) and
is tried again on every pass. Phases follow the job: Pending (bound, containers creating) → Running
while the job runs → Succeeded or Failed when it finishes (kept until the job is deleted); a job that is
suspended again (an eviction) or a Workload no longer admitted loses its non-terminal Pods, and Pods of a
deleted job or bound to a deleted node are removed (garbage collection, gc.py, for the owner).

Simplified (docs/simulator.md): the simulator has no RayCluster or ReplicaSet, so a RayJob's head,
worker and submitter Pods and a RayService's are owned by the RayJob/RayService, and a Kueue-managed
Deployment replica's Pod by the Deployment (named after its Workload); Pods of MultiKueue-dispatched
Workloads run on the worker cluster, not here; jobs Kueue does not manage get no Pods; deletion is
immediate (no grace period); containers never restart.
"""

from __future__ import annotations

import hashlib

from taudash.sim.controllers.base import (
    Controller,
    Obj,
    condition,
    controller_owner,
    deleting,
    is_true,
    labels,
    meta,
)
from taudash.sim.controllers.jobs import SOURCE_KINDS, finished, podsets, running, suspended
from taudash.sim.controllers.queues import MULTIKUEUE
from taudash.sim.conversion import slices_to_domains
from taudash.sim.placement import (
    HOSTNAME_LABEL,
    Ledger,
    Miss,
    pod_requests,
    pod_spec_on,
    terminal,
    unschedulable_message,
)
from taudash.sim.topology import podset_levels

# Labels Kubernetes, KubeRay and Kueue put on the Pods they make.
JOB_NAME = "batch.kubernetes.io/job-name"
JOB_UID = "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME = "job-name"
LEGACY_JOB_UID = "controller-uid"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
RAY_CLUSTER = "ray.io/cluster"
RAY_NODE_TYPE = "ray.io/node-type"
RAY_GROUP = "ray.io/group"
PODSET = "kueue.x-k8s.io/podset"
POD_TEMPLATE_HASH = "pod-template-hash"

INPUTS = {*SOURCE_KINDS, "Workload", "Node", "Pod", "TauCluster"}
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's generateName alphabet


def suffix(*parts: str, n: int = 5) -> str:
    """A deterministic `generateName` suffix: the same inputs, the same name (the seed's promise)."""
    digest = hashlib.sha1("\x00".join(parts).encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:n])


def topology_hosts(workload: Obj) -> dict[str, list[str]]:
    """Pod set → the host of each of its pods, from Kueue's topology assignment (hostname level only)."""
    out: dict[str, list[str]] = {}
    for psa in ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ():
        ta = psa.get("topologyAssignment")
        if not isinstance(ta, dict):
            continue
        domains = slices_to_domains(ta) if "slices" in ta else ta
        levels = list(domains.get("levels") or ())
        if HOSTNAME_LABEL not in levels:
            continue
        i = levels.index(HOSTNAME_LABEL)
        hosts: list[str] = []
        for d in domains.get("domains") or ():
            values = d.get("values") or []
            if i < len(values):
                hosts += [str(values[i])] * int(d.get("count") or 0)
        out[psa.get("name", "main")] = hosts
    return out


def multikueue(workload: Obj, m) -> bool:
    """Dispatched to a worker cluster: the manager runs no Pods for it."""
    st = workload.get("status") or {}
    if st.get("clusterName"):
        return True
    for c in st.get("admissionChecks") or ():
        ac = m.get("AdmissionCheck", c.get("name") or "")
        if ac is not None and (ac.get("spec") or {}).get("controllerName") == MULTIKUEUE:
            return True
    return False


class PodsController(Controller):
    name = "pods"

    def __init__(self, world) -> None:
        super().__init__(world)
        self._made: dict[tuple[str, str, int], int] = {}  # (owner uid, pod set, index) -> Pods made for it
        self._ledger: Ledger | None = None
        self._pods: list[Obj] = []
        self._room_changed = True  # since the last pass a Pod ended or went, or a Node changed

    def reconcile(self, events) -> None:
        # Whatever could let a waiting Pod bind or start (a Pod gone or finished, a node back, a job running)
        # arrives as an event: a quiet cluster needs no pass.
        if not self.first and not any(ev.resource.kind in INPUTS for ev in events):
            return
        # Unbound Pods are tried again only when room may have appeared (kube-scheduler's requeue on events).
        self._room_changed = self.first or any(_frees_room(ev) for ev in events)
        pods = self.m.list("Pod")
        nodes = {meta(n)["name"]: n for n in self.m.list("Node")}
        for pod in pods:  # Pods bound to a node that is gone (Kubernetes' pod garbage collector)
            node = (pod.get("spec") or {}).get("nodeName")
            if node and node not in nodes:
                self.w.delete("Pod", meta(pod)["name"], meta(pod)["namespace"])
        pods = [p for p in pods if not (p.get("spec") or {}).get("nodeName") or p["spec"]["nodeName"] in nodes]
        self._pods, self._ledger = pods, None
        self.nodes = nodes
        by_owner: dict[str, list[Obj]] = {}
        for pod in pods:
            uid = (controller_owner(pod) or {}).get("uid")
            if uid:
                by_owner.setdefault(uid, []).append(pod)
        tau_cluster = self.m.get("TauCluster", "cluster")
        # Admitted first (by when their quota was reserved, then name), so older work binds first.
        wls = sorted(self.m.list("Workload"), key=lambda w: (
            (condition(w, "QuotaReserved") or {}).get("lastTransitionTime") or "", meta(w)["namespace"],
            meta(w)["name"]))
        replicas: set[tuple[str, str]] = set()  # the Deployment replica Pods some Workload still stands for
        for wl in wls:
            src = self._source(wl)
            if src is None:
                continue
            mine = [p for p in by_owner.get(meta(src)["uid"], ()) if self._of_workload(p, wl, src)]
            if src["kind"] == "Deployment":
                replicas.add((meta(wl)["namespace"], _replica_pod_name(wl)))
            self._reconcile(wl, src, mine, tau_cluster)
        for pod in pods:  # a replica scaled away: its Workload went, so does its Pod
            if (controller_owner(pod) or {}).get("kind") == "Deployment" and \
                    (meta(pod)["namespace"], meta(pod)["name"]) not in replicas:
                self.w.delete("Pod", meta(pod)["name"], meta(pod)["namespace"])

    @property
    def ledger(self) -> Ledger:
        """The nodes' room, built the first time a pass binds a Pod (most passes bind none)."""
        if self._ledger is None:
            self._ledger = Ledger(self.nodes.values(), self._pods)
        return self._ledger

    # --- one Workload ------------------------------------------------------------------------------
    def _source(self, wl: Obj) -> Obj | None:
        o = controller_owner(wl)
        if not o or o.get("kind") not in SOURCE_KINDS:
            return None
        src = self.m.get(o["kind"], o.get("name", ""), meta(wl).get("namespace"))
        return src if src is not None and meta(src).get("uid") == o.get("uid") and not deleting(src) else None

    @staticmethod
    def _of_workload(pod: Obj, wl: Obj, src: Obj) -> bool:
        if src["kind"] != "Deployment":
            return True
        return meta(pod)["name"] == _replica_pod_name(wl)

    def _reconcile(self, wl: Obj, src: Obj, mine: list[Obj], tau_cluster: Obj | None) -> None:
        live = [p for p in mine if not terminal(p)]
        done, ok, _ = finished(src)
        if done or is_true(wl, "Finished"):
            phase = "Succeeded" if ok or not done else "Failed"
            for pod in live:
                self._set_phase(pod, phase)
            return
        admitted = is_true(wl, "Admitted") and not is_true(wl, "Evicted") and not deleting(wl)
        started = suspended(src) is not True
        if not (admitted and started) or multikueue(wl, self.m):
            for pod in live:
                self.w.delete("Pod", meta(pod)["name"], meta(pod)["namespace"])
            return
        have: dict[str, list[Obj]] = {}
        for pod in mine:
            have.setdefault(labels(pod).get(PODSET, "main"), []).append(pod)
        levels: dict[str, tuple[str, bool]] | None = None
        hosts: dict[str, list[str]] | None = None
        runs = running(src)
        for ps_name, count, job_template in podsets(src):
            if src["kind"] == "Deployment":
                count = 1
            template = self._template(wl, ps_name, job_template)
            current = [p for p in have.get(ps_name, []) if not terminal(p)]
            for pod in current:
                self._advance(pod, runs)
            missing = count - len(current)
            if missing > 0:
                if levels is None or hosts is None:  # worked out only for a Workload that needs Pods made
                    levels, hosts = podset_levels(wl, src, tau_cluster), topology_hosts(wl)
                self._create(wl, src, ps_name, template, count, current, levels.get(ps_name), hosts.get(ps_name))

    def _template(self, wl: Obj, ps_name: str, template: Obj) -> Obj:
        """The template the job controller stamps a pod set's Pods from: the job's own, with what Kueue set
        when it started the job (the admitted flavor's nodeLabels and tolerations). A job copied without its
        pod spec — a rehearsal's fork keeps only the fields taudash reads of a job — falls back on the
        Workload's copy of the pod set (requests, nodeSelector, tolerations), so its Pods land alike."""
        spec = dict(template.get("spec") or {})
        if not spec.get("containers"):
            for ps in (wl.get("spec") or {}).get("podSets") or ():
                if ps.get("name", "main") == ps_name:
                    spec = {**((ps.get("template") or {}).get("spec") or {}), **{k: v for k, v in spec.items() if v}}
        flavor = None
        for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ():
            if psa.get("name", "main") == ps_name and psa.get("flavors"):
                flavor = self.m.get("ResourceFlavor", sorted(psa["flavors"].values())[0])
        return {**template, "spec": pod_spec_on(spec, flavor)}

    # --- making and moving Pods ----------------------------------------------------------------------
    def _create(self, wl: Obj, src: Obj, ps_name: str, template: Obj, count: int, current: list[Obj],
                level: tuple[str, bool] | None, hosts: list[str] | None) -> None:
        taken = {int(labels(p).get(COMPLETION_INDEX, -1)) for p in current}
        slots = [i for i in range(count) if i not in taken][: count - len(current)]
        spec = dict(template.get("spec") or {})
        placed: list[str | None]
        if hosts:  # Kueue's topology assignment: each pod to its host
            placed = []
            for i in slots:
                host = hosts[i] if i < len(hosts) else None
                pinned = {**spec, "nodeSelector": {**(spec.get("nodeSelector") or {}), HOSTNAME_LABEL: host}}
                node = self.ledger.spread(pinned, pod_requests(pinned)) if host else None  # the one host
                if node is not None:
                    self.ledger.bind(node, pod_requests(pinned))
                placed.append(node)
        elif level is not None:
            domain = self._domain_of(current, level[0])
            scoped = ({**spec, "nodeSelector": {**(spec.get("nodeSelector") or {}), level[0]: domain}} if domain
                      else spec)
            got = self.ledger.place(scoped, len(slots), level[0], level[1])
            placed = [None] * len(slots) if isinstance(got, Miss) else list(got)
        else:
            keys = [f"{meta(src)['uid']}/{ps_name}/{i}" for i in slots]
            placed = self.ledger.place(spec, len(slots), None, False, keys)  # type: ignore[assignment]
        for i, node in zip(slots, placed, strict=True):
            self.w.create(self._pod(wl, src, ps_name, template, i, count, node, hosts))

    def _domain_of(self, pods: list[Obj], level: str) -> str | None:
        """The domain the pod set's bound pods are in: the ones made again join them."""
        for pod in pods:
            node = self.nodes.get((pod.get("spec") or {}).get("nodeName") or "")
            if node is not None and labels(node).get(level):
                return labels(node)[level]
        return None

    def _pod(self, wl: Obj, src: Obj, ps_name: str, template: Obj, index: int, count: int, node: str | None,
             hosts: list[str] | None) -> Obj:
        m = meta(src)
        kind, uid = src["kind"], m["uid"]
        # A Pod made again (its node went) gets a new name, as generateName would give it.
        again = self._made.get((uid, ps_name, index), 0)
        self._made[(uid, ps_name, index)] = again + 1
        salt = f"{(condition(wl, 'QuotaReserved') or {}).get('lastTransitionTime') or ''}/{again}"
        tmeta = template.get("metadata") or {}
        lbl = dict(tmeta.get("labels") or {})
        spec = dict(template.get("spec") or {})
        if hosts and index < len(hosts):
            spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), HOSTNAME_LABEL: hosts[index]}
        if kind == "Job":
            indexed = (src.get("spec") or {}).get("completionMode") == "Indexed"
            name = f"{m['name']}-{index}-{suffix(uid, str(index), salt)}" if indexed else \
                f"{m['name']}-{suffix(uid, str(index), salt)}"
            lbl |= {JOB_UID: uid, JOB_NAME: m["name"], LEGACY_JOB_UID: uid, LEGACY_JOB_NAME: m["name"]}
            if indexed:
                lbl[COMPLETION_INDEX] = str(index)
        elif kind == "Deployment":
            name = _replica_pod_name(wl)
            lbl[POD_TEMPLATE_HASH] = name.rsplit("-", 2)[-2] if name.count("-") >= 2 else suffix(uid, n=10)
        elif ps_name == "submitter":
            name = f"{m['name']}-{suffix(uid, 'submitter', salt)}"
            lbl |= {JOB_NAME: m["name"], LEGACY_JOB_NAME: m["name"]}
        else:
            cluster = ((src.get("status") or {}).get("rayClusterName")
                       or f"{m['name']}-raycluster-{suffix(uid, 'cluster', salt)}")
            head = ps_name == "head"
            name = (f"{cluster}-head-{suffix(uid, 'head', salt)}" if head
                    else f"{cluster}-{ps_name}-worker-{suffix(uid, ps_name, str(index), salt)}")
            lbl |= {RAY_CLUSTER: cluster, RAY_NODE_TYPE: "head" if head else "worker",
                    RAY_GROUP: "headgroup" if head else ps_name}
        lbl[PODSET] = ps_name
        spec.setdefault("restartPolicy", "Never" if kind in ("Job", "RayJob") else "Always")
        spec.setdefault("schedulerName", "default-scheduler")
        now = self.stamp
        status: Obj
        if node is None:
            spec.pop("nodeName", None)
            status = {"phase": "Pending", "conditions": [self._unschedulable(spec, now)]}
        else:
            spec["nodeName"] = node
            status = {
                "phase": "Pending",
                "hostIP": _internal_ip(self.nodes.get(node)),
                "conditions": [
                    _cond("PodScheduled", "True", now),
                    _cond("Initialized", "True", now),
                    _cond("ContainersReady", "False", now, "ContainersNotReady"),
                    _cond("Ready", "False", now, "ContainersNotReady"),
                ],
                "containerStatuses": [_container(c, "waiting", now) for c in spec.get("containers") or ()],
            }
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": m["namespace"],
                "labels": lbl,
                **({"annotations": dict(tmeta["annotations"])} if tmeta.get("annotations") else {}),
                "ownerReferences": [{"apiVersion": src.get("apiVersion") or "", "kind": kind, "name": m["name"],
                                     "uid": uid, "controller": True, "blockOwnerDeletion": True}],
            },
            "spec": spec,
            "status": status,
        }

    def _unschedulable(self, spec: Obj, now: str) -> Obj:
        return {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": unschedulable_message(self.ledger, spec), "lastTransitionTime": now, "lastProbeTime": None}

    def _advance(self, pod: Obj, runs: bool) -> None:
        """An unbound Pod is tried again; a bound one starts running once its job runs."""
        spec, st = pod.get("spec") or {}, pod.get("status") or {}
        m = meta(pod)
        if not spec.get("nodeName"):
            if not self._room_changed:
                return
            req = pod_requests(spec)
            node = self.ledger.spread(spec, req, m["name"])
            if node is None:
                msg = unschedulable_message(self.ledger, spec)
                sched: Obj = next((c for c in st.get("conditions") or () if c.get("type") == "PodScheduled"), {})
                if sched.get("message") != msg:
                    self.w.status("Pod", m["name"], m["namespace"],
                                  {"conditions": [self._unschedulable(spec, self.stamp)]})
                return
            # Binding: the scheduler's pods/binding call, here a write of the node name and a fresh status.
            self.ledger.bind(node, req)
            self.w.patch("Pod", m["name"], m["namespace"], {"spec": {"nodeName": node}})
            now = self.stamp
            self.w.status("Pod", m["name"], m["namespace"], {
                "hostIP": _internal_ip(self.nodes.get(node)),
                "conditions": [_cond("PodScheduled", "True", now), _cond("Initialized", "True", now),
                               _cond("ContainersReady", "False", now, "ContainersNotReady"),
                               _cond("Ready", "False", now, "ContainersNotReady")],
                "containerStatuses": [_container(c, "waiting", now) for c in spec.get("containers") or ()],
            })
            return
        if st.get("phase") == "Pending" and runs:
            self._set_phase(pod, "Running")

    def _set_phase(self, pod: Obj, phase: str) -> None:
        m, spec = meta(pod), pod.get("spec") or {}
        if not spec.get("nodeName") and phase != "Running":
            self.w.delete("Pod", m["name"], m["namespace"])  # never scheduled: nothing ran, nothing to keep
            return
        now = self.stamp
        started = (pod.get("status") or {}).get("startTime") or now
        self.w.status("Pod", m["name"], m["namespace"], phase_status(spec, phase, started, now))


def phase_status(spec: Obj, phase: str, started: str, now: str) -> Obj:
    """A bound Pod's status once it runs (since `started`) or finished (at `now`)."""
    ready = "True" if phase == "Running" else "False"
    reason = None if phase == "Running" else "PodCompleted" if phase == "Succeeded" else "PodFailed"
    state = {"Running": "running", "Succeeded": "completed", "Failed": "error"}[phase]
    return {
        "phase": phase,
        "startTime": started,
        "conditions": [_cond("PodScheduled", "True", started), _cond("Initialized", "True", started),
                       _cond("ContainersReady", ready, now if phase != "Running" else started, reason),
                       _cond("Ready", ready, now if phase != "Running" else started, reason)],
        "containerStatuses": [_container(c, state, now, started) for c in spec.get("containers") or ()],
    }


# --- status pieces ---------------------------------------------------------------------------------------


def _frees_room(ev) -> bool:
    """A change after which a Pod that fitted nowhere may fit: a Node changed, a Pod went or finished."""
    kind = ev.resource.kind
    if kind == "Node":
        return True
    if kind != "Pod":
        return False
    return ev.type == "DELETED" or (terminal(ev.object) and not (ev.old is not None and terminal(ev.old)))


def _replica_pod_name(wl: Obj) -> str:
    """A Deployment replica's Pod, named in its Workload's name (`pod-<pod>-<5 hex>`, jobs.py)."""
    name = meta(wl)["name"]
    return name[4:-6] if name.startswith("pod-") and len(name) > 10 else name


def _internal_ip(node: Obj | None) -> str | None:
    for a in ((node or {}).get("status") or {}).get("addresses") or ():
        if a.get("type") == "InternalIP":
            return a.get("address")
    return None


def _cond(ctype: str, status: str, now: str, reason: str | None = None) -> Obj:
    c: Obj = {"type": ctype, "status": status, "lastTransitionTime": now, "lastProbeTime": None}
    if reason:
        c["reason"] = reason
    return c


def _container(c: Obj, state: str, now: str, started: str | None = None) -> Obj:
    """A container's status: waiting (creating), running, or terminated (completed / error)."""
    out: Obj = {"name": c.get("name", "main"), "image": c.get("image", ""), "restartCount": 0,
                "ready": state == "running", "started": state == "running"}
    if state == "waiting":
        out["state"] = {"waiting": {"reason": "ContainerCreating"}}
    elif state == "running":
        out["state"] = {"running": {"startedAt": started or now}}
    else:
        code, reason = (0, "Completed") if state == "completed" else (1, "Error")
        out["state"] = {"terminated": {"exitCode": code, "reason": reason, "startedAt": started or now,
                                       "finishedAt": now}}
    return out
