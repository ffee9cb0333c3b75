"""The workloads themselves: arrivals, and Jobs and RayJobs that run once Kueue lets them.

Arrivals follow a Poisson process (exponential gaps drawn from the seeded RNG, so they land at the
same simulated instants whatever the step size) and go to each workspace's current namespace and
queue. A Job runs while `spec.suspend` is false and completes after a drawn duration (or fails);
suspending it (an eviction) keeps the remaining time. A RayJob goes Initializing → Running
(→ Retrying → Initializing) → Complete/Failed. RayServices and Deployments never finish.
Generated sources are deleted `finished_ttl_minutes` after they finish.
"""

from __future__ import annotations

import math

from taudash.engine.model.names import ACCELERATOR_DOMAIN_LABEL, JOB_LABEL, TAU_MANAGED_BY_LABEL, TEAM_LABEL
from taudash.engine.model.names import GPU_CLASS_LABEL as GPU_CLASS
from taudash.engine.model.names import TORCHRUN_HOST_SLOT as HOST_SLOT
from taudash.engine.model.names import WORKLOAD_KIND_LABEL as GENERATED
from taudash.engine.rules.pool import FLAVOR_PREFIX
from taudash.sim.clock import parse_rfc3339, rfc3339
from taudash.sim.controllers.base import (
    PRIORITY_LABEL,
    QUEUE_LABEL,
    Controller,
    Obj,
    condition,
    deleting,
    is_true,
    labels,
    meta,
    qres,
)
from taudash.sim.controllers.jobs import short_hash
from taudash.sim.topology import REQUIRED_TOPOLOGY

GPU = "nvidia.com/gpu"
RDMA = "rdma/ib"

# (weight, GPUs per pod, pods): one GPU, half a node, a full node, two full nodes; a class's nodes must hold
# the pod's GPUs. Where an NVLink domain spans several hosts, also a gang of eight 4-GPU pods that must stay
# inside one (Kueue's podset-required-topology: the accelerator domain).
SHAPES = ((5, 1, 1), (2, 4, 1), (2, 8, 1), (1, 8, 2))
GANG = (1, 4, 8)
JOB_NAMES = ("sweep-lr", "sft", "eval-mmlu", "pretrain", "ablation", "distill", "probe", "finetune")
RAY_NAMES = ("hparam", "rl-rollout", "dedup", "ray-eval")


def _pod(gpus: int, rdma: bool, per_node: int = 8) -> dict[str, str]:
    if gpus >= per_node:  # a whole host: an 8-GPU node, or a 4-GPU GB200 tray (less memory per host)
        pod = {"cpu": "88", "memory": "1600Gi"} if per_node >= 8 else {"cpu": "120", "memory": "800Gi"}
        pod |= {GPU: str(per_node), HOST_SLOT: "1"}
        if rdma:
            pod[RDMA] = str(per_node)
        return pod
    return {
        "cpu": str(11 * gpus - 1 if gpus > 1 else 10),
        "memory": f"{200 * gpus if gpus > 1 else 180}Gi",
        GPU: str(gpus),
    }


def _pod_spec(gpu_class: str, pod: dict[str, str], account: str | None, priority: str) -> Obj:
    spec: Obj = {
        "containers": [
            {
                "name": "main",
                "image": "taugridacr.azurecr.io/research/trainer:sim",
                "resources": {
                    "requests": dict(pod),
                    "limits": {k: v for k, v in pod.items() if k not in ("cpu", "memory")},
                },
            }
        ],
        "nodeSelector": {GPU_CLASS: gpu_class},
        "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
        "restartPolicy": "Never",
    }
    if account:
        spec["serviceAccountName"] = account
    if priority:
        spec["priorityClassName"] = priority
    return spec


class WorkloadsController(Controller):
    name = "workloads"

    def __init__(self, world) -> None:
        super().__init__(world)
        self.rng = world.rng("workloads")
        self._next_arrival: float | None = None
        self._seq = 0
        self._until: dict[str, float] = {}  # uid -> when the current phase ends
        self._remaining: dict[str, float] = {}  # uid -> run time left when a Job was suspended
        self._expiry: dict[str, float] = {}  # uid -> when a finished source is deleted

    def reconcile(self, events) -> None:
        for ev in events:  # forget the timers of sources that are gone
            if ev.type == "DELETED" and ev.resource.kind in ("Job", "RayJob"):
                uid = meta(ev.object).get("uid") or ""
                for book in (self._until, self._remaining, self._expiry):
                    book.pop(uid, None)
        now = self.world.clock.now()
        self._arrivals(now)
        for job in self.m.list("Job"):
            self._job(job, now)
        for rj in self.m.list("RayJob"):
            self._rayjob(rj, now)

    def _minutes(self, span: tuple[float, float]) -> float:
        return 60.0 * self.rng.uniform(*span)

    # --- arrivals ------------------------------------------------------------------------------------
    def _arrivals(self, now: float) -> None:
        rate = self.world.knobs.arrivals_per_hour / 3600.0
        if rate <= 0:
            return
        if self._next_arrival is None:
            self._next_arrival = now + self.rng.expovariate(rate)
        while self._next_arrival <= now:
            self._submit()
            self._next_arrival += self.rng.expovariate(rate)

    def _targets(self) -> list[tuple[str, str, str | None, str | None]]:
        """(namespace, LocalQueue, service account, team) of each workspace that can take work."""
        out = []
        system_ns = self.world.system_namespace
        for ws in self.m.list("TauWorkspace", system_ns):
            if deleting(ws):
                continue
            spec, st = ws.get("spec") or {}, ws.get("status") or {}
            ns = (spec.get("target") or {}).get("namespace") or meta(ws)["name"]
            queue = (st.get("queue") or {}).get("localQueue") or spec.get("queue") or "jobqueue"
            if self.m.get("LocalQueue", queue, ns) is None:
                continue
            account = (spec.get("workloadIdentity") or {}).get("serviceAccountName")
            out.append((ns, queue, account, (spec.get("teamRef") or {}).get("name")))
        return out

    def _classes(self) -> list[tuple[str, bool, int, bool]]:
        """(gpu class, has RDMA, GPUs per node, an NVLink domain spans hosts) of each pool flavor."""
        rdma: dict[str, bool] = {}
        size: dict[str, int] = {}
        domains: dict[str, dict[str, int]] = {}
        for node in self.m.list("Node"):
            lbl = labels(node)
            cls = lbl.get(GPU_CLASS)
            if cls:
                alloc = (node.get("status") or {}).get("allocatable") or {}
                rdma[cls] = rdma.get(cls, False) or RDMA in alloc
                size[cls] = max(size.get(cls, 0), int(qres(GPU, alloc.get(GPU, "0"))))
                per = domains.setdefault(cls, {})
                ad = lbl.get(ACCELERATOR_DOMAIN_LABEL, "")
                per[ad] = per.get(ad, 0) + 1
        out = []
        for rf in self.m.list("ResourceFlavor"):
            cls = ((rf.get("spec") or {}).get("nodeLabels") or {}).get(GPU_CLASS)
            if meta(rf)["name"].startswith(FLAVOR_PREFIX) and cls:
                spans = any(n > 1 for ad, n in domains.get(cls, {}).items() if ad)
                out.append((cls, rdma.get(cls, False), size.get(cls, 8), spans))
        return out

    def _submit(self) -> None:
        targets, classes = self._targets(), self._classes()
        if not targets or not classes:
            return
        ns, queue, account, team = targets[self.rng.randrange(len(targets))]
        gpu_class, rdma, per_node, spans = classes[self.rng.randrange(len(classes))]
        shapes = [sh for sh in SHAPES if sh[1] <= per_node] + ([GANG] if spans and GANG[1] <= per_node else [])
        if not shapes:
            return
        _, gpus, pods = self.rng.choices(shapes, weights=[sh[0] for sh in shapes])[0]
        gang = (gpus, pods) == GANG[1:] and spans
        ray = self.rng.random() < self.world.knobs.rayjob_fraction
        names = RAY_NAMES if ray else JOB_NAMES
        base = names[self.rng.randrange(len(names))]
        kind = "RayJob" if ray else "Job"
        while True:
            self._seq += 1
            name = f"{base}-{self._seq:04d}"
            if self.m.get(kind, name, ns) is None:
                break
        priority = "taugrid-default" if self.m.get("WorkloadPriorityClass", "taugrid-default") else ""
        lbls = {QUEUE_LABEL: queue, GPU_CLASS: gpu_class, GENERATED: kind.lower(), TAU_MANAGED_BY_LABEL: "tau"}
        if priority:
            lbls[PRIORITY_LABEL] = priority
        if team:
            lbls[TEAM_LABEL] = team
        pod = _pod(gpus, rdma, per_node)
        ttl = int(self.world.knobs.finished_ttl_minutes * 60)
        workers: Obj = {"spec": _pod_spec(gpu_class, pod, account, priority)}
        if gang:
            workers["metadata"] = {"annotations": {REQUIRED_TOPOLOGY: ACCELERATOR_DOMAIN_LABEL}}
        if ray:
            head = {"cpu": "8", "memory": "32Gi"}
            spec: Obj = {
                "entrypoint": f"python -m research.{base.replace('-', '_')}",
                "submissionMode": "K8sJobMode",
                "shutdownAfterJobFinishes": True,
                "suspend": True,
                "backoffLimit": 2,
                "ttlSecondsAfterFinished": ttl,
                "rayClusterSpec": {
                    "rayVersion": "2.40.0",
                    "headGroupSpec": {
                        "rayStartParams": {},
                        "template": {"spec": _pod_spec(gpu_class, head, account, priority)},
                    },
                    "workerGroupSpecs": [
                        {
                            "groupName": "gpu-workers",
                            "replicas": pods,
                            "minReplicas": pods,
                            "maxReplicas": pods,
                            "rayStartParams": {},
                            "template": workers,
                        }
                    ],
                },
            }
            obj = {
                "apiVersion": "ray.io/v1",
                "kind": "RayJob",
                "metadata": {"name": name, "namespace": ns, "labels": lbls},
                "spec": spec,
            }
        else:
            spec = {
                "parallelism": pods,
                "completions": pods,
                "completionMode": "Indexed" if pods > 1 else "NonIndexed",
                "backoffLimit": 0,
                "suspend": True,
                "ttlSecondsAfterFinished": ttl,
                "template": {
                    **workers,
                    "metadata": {**workers.get("metadata", {}), "labels": {JOB_LABEL: name}},
                },
            }
            obj = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": ns, "labels": lbls},
                "spec": spec,
            }
        self.w.create(obj)

    # --- Jobs ------------------------------------------------------------------------------------------
    def _expired(self, obj: Obj, finished_at: str | None, now: float) -> bool:
        uid = meta(obj)["uid"]
        if uid not in self._expiry:  # a finished source stays finished: work its deadline out once
            ttl = (obj.get("spec") or {}).get("ttlSecondsAfterFinished")
            end = parse_rfc3339(finished_at)
            self._expiry[uid] = end + float(ttl) if ttl is not None and end is not None else math.inf
        return now >= self._expiry[uid]

    def _job(self, job: Obj, now: float) -> None:
        if deleting(job):
            return
        m, st, spec = meta(job), job.get("status") or {}, job.get("spec") or {}
        uid = m["uid"]
        if uid in self._until and now < self._until[uid] and not spec.get("suspend"):
            return  # running, not due yet: the common case, kept cheap
        if uid in self._expiry or is_true(job, "Complete") or is_true(job, "Failed"):
            end = st.get("completionTime") or (condition(job, "Failed") or condition(job, "Complete") or {}).get(
                "lastTransitionTime"
            )
            if self._expired(job, end, now):
                self.w.delete("Job", m["name"], m["namespace"])
            return
        count = int(spec.get("parallelism", 1) or 1)
        running = uid in self._until or int(st.get("active") or 0) > 0
        if spec.get("suspend") and not running:
            return  # waiting for Kueue
        stamp = rfc3339(now)
        if spec.get("suspend"):
            if running:
                if uid in self._until:
                    self._remaining[uid] = max(0.0, self._until.pop(uid) - now)
                conds = [c for c in st.get("conditions") or () if c.get("type") != "Suspended"]
                conds.append(
                    {
                        "type": "Suspended",
                        "status": "True",
                        "reason": "JobSuspended",
                        "message": "Job suspended",
                        "lastProbeTime": stamp,
                        "lastTransitionTime": stamp,
                    }
                )
                self.w.status(
                    "Job", m["name"], m["namespace"], {"active": 0, "ready": 0, "startTime": None, "conditions": conds}
                )
            return
        if uid not in self._until:
            left = self._remaining.pop(uid, None)
            self._until[uid] = now + (left if left is not None else self._minutes(self.world.knobs.job_minutes))
            if int(st.get("active") or 0) != count or not st.get("startTime"):
                conds = [c for c in st.get("conditions") or () if c.get("type") != "Suspended"]
                if condition(job, "Suspended"):
                    conds.append(
                        {
                            "type": "Suspended",
                            "status": "False",
                            "reason": "JobResumed",
                            "message": "Job resumed",
                            "lastProbeTime": stamp,
                            "lastTransitionTime": stamp,
                        }
                    )
                self.w.status(
                    "Job",
                    m["name"],
                    m["namespace"],
                    {"active": count, "ready": count, "startTime": st.get("startTime") or stamp, "conditions": conds},
                )
            return
        if now < self._until[uid]:
            return
        del self._until[uid]
        conds = [c for c in st.get("conditions") or () if c.get("type") != "Suspended"]
        if self.rng.random() < self.world.knobs.failure_probability:
            msg = "Job has reached the specified backoff limit"
            conds += [
                {
                    "type": t,
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": msg,
                    "lastProbeTime": stamp,
                    "lastTransitionTime": stamp,
                }
                for t in ("FailureTarget", "Failed")
            ]
            self.w.status(
                "Job", m["name"], m["namespace"], {"active": 0, "ready": 0, "failed": count, "conditions": conds}
            )
        else:
            msg = "Reached expected number of succeeded pods"
            conds += [
                {
                    "type": t,
                    "status": "True",
                    "reason": "CompletionsReached",
                    "message": msg,
                    "lastProbeTime": stamp,
                    "lastTransitionTime": stamp,
                }
                for t in ("SuccessCriteriaMet", "Complete")
            ]
            self.w.status(
                "Job",
                m["name"],
                m["namespace"],
                {"active": 0, "ready": 0, "succeeded": count, "completionTime": stamp, "conditions": conds},
            )

    # --- RayJobs ---------------------------------------------------------------------------------------
    def _rayjob(self, rj: Obj, now: float) -> None:
        if deleting(rj):
            return
        m, st, spec = meta(rj), rj.get("status") or {}, rj.get("spec") or {}
        uid = m["uid"]
        if uid in self._until and now < self._until[uid] and not spec.get("suspend"):
            return
        phase = st.get("jobDeploymentStatus") or ""
        if phase in ("Complete", "Failed"):
            if self._expired(rj, st.get("endTime"), now):
                self.w.delete("RayJob", m["name"], m["namespace"])
            return
        if spec.get("suspend") and phase in ("", "Suspended"):
            return  # waiting for Kueue
        stamp = rfc3339(now)

        def put(status: Obj, until: float | None) -> None:
            if until is None:
                self._until.pop(uid, None)
            else:
                self._until[uid] = until
            self.w.status("RayJob", m["name"], m["namespace"], status)

        if spec.get("suspend"):
            if phase not in ("", "Suspended"):
                put(
                    {
                        "jobDeploymentStatus": "Suspended",
                        "jobStatus": "",
                        "message": "RayJob suspended by Kueue",
                        "reason": None,
                    },
                    None,
                )
            return
        until = self._until.get(uid)
        if phase in ("", "New", "Suspended"):
            cluster = f"{m['name']}-raycluster-{short_hash(uid, str(int(now)))}"
            put(
                {
                    "jobDeploymentStatus": "Initializing",
                    "jobStatus": "PENDING",
                    "rayClusterName": cluster,
                    "startTime": st.get("startTime") or stamp,
                    "message": None,
                    "reason": None,
                },
                now + self.rng.uniform(30, 120),
            )
        elif until is None:  # seeded mid-phase: give the current phase a time to end
            span = self.world.knobs.rayjob_minutes if phase == "Running" else (0.5, 2.0)
            self._until[uid] = now + self._minutes(span)
        elif now < until:
            return
        elif phase in ("Initializing", "Retrying"):
            put(
                {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING", "message": None, "reason": None},
                now + self._minutes(self.world.knobs.rayjob_minutes),
            )
        elif phase == "Running":
            failed = int(st.get("failed") or 0)
            roll = self.rng.random()
            knobs = self.world.knobs
            if roll < knobs.retry_probability and failed < int(spec.get("backoffLimit") or 0):
                put(
                    {
                        "jobDeploymentStatus": "Retrying",
                        "jobStatus": "FAILED",
                        "failed": failed + 1,
                        "reason": "AppFailed",
                        "message": f"Ray job driver exited with code 1; retrying the deployment (attempt {failed + 2} "
                                   "of "
                        f"{int(spec.get('backoffLimit') or 0) + 1})",
                    },
                    now + 60.0,
                )
            elif roll < knobs.retry_probability + knobs.failure_probability:
                put(
                    {
                        "jobDeploymentStatus": "Failed",
                        "jobStatus": "FAILED",
                        "failed": failed + 1,
                        "reason": "AppFailed",
                        "message": "Ray job driver exited with code 1",
                        "endTime": stamp,
                    },
                    None,
                )
            else:
                put(
                    {
                        "jobDeploymentStatus": "Complete",
                        "jobStatus": "SUCCEEDED",
                        "succeeded": 1,
                        "reason": None,
                        "message": "Job finished successfully",
                        "endTime": stamp,
                    },
                    None,
                )
