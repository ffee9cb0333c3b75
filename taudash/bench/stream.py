"""The bench's event load: Kueue-like writes through the simulator's ObjectDB at a fixed rate.

Mostly Workload status moves (a pending Workload's message changes, an admitted one finishes),
new pending Workloads, deletions of finished ones, and ClusterQueue status counts moving: the
mix a busy Kueue produces. Deterministic for a seed; the rate is held by writing in small bursts.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from typing import Any

from taudash.engine.model.names import JOB_UID_LABEL
from taudash.sim.objects import ObjectDB

GPU = "nvidia.com/gpu"


class Mutator:
    def __init__(self, db: ObjectDB, seed: int = 0, queue: str = "jobqueue") -> None:
        self.db = db
        self.rng = random.Random(f"taudash-bench-stream/{seed}")
        self.queue = queue
        self.wl = db.resource("Workload")
        self.cq = db.resource("ClusterQueue")
        # Keys only; objects are read when touched (the db's stored dicts are shared: never mutated here).
        self.workloads: list[tuple[str, str]] = db.keys(self.wl)
        self.queues: list[str] = [k[1] for k in db.keys(self.cq)]
        self.namespaces = sorted({ns for ns, _ in self.workloads})
        self.made = 0

    def _ts(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def one(self) -> None:
        r = self.rng.random()
        if r < 0.15 or not self.workloads:
            self._create()
        elif r < 0.9:
            self._move()
        else:
            self._queue_counts()

    def _remove(self, ns: str, name: str) -> None:
        """Delete a Workload as Kueue's finalizer lets it go: marked deleting, then the finalizer dropped."""
        self.db.delete(self.wl, name, ns)
        if self.db.peek(self.wl, name, ns) is not None:
            self.db.patch_merge(self.wl, name, {"metadata": {"finalizers": None}}, ns)

    def _move(self) -> None:
        self._move_at(self.rng.randrange(len(self.workloads)))

    def _move_at(self, i: int) -> None:
        ns, name = self.workloads[i]
        cur = self.db.peek(self.wl, name, ns)
        if cur is None:
            self.workloads[i] = self.workloads[-1]
            self.workloads.pop()
            return
        conds = (cur.get("status") or {}).get("conditions") or []
        types = {c["type"]: c["status"] for c in conds}
        if types.get("Finished") == "True":
            self._remove(ns, name)
            self.workloads[i] = self.workloads[-1]
            self.workloads.pop()
            return
        if types.get("Admitted") == "True":
            new = [*conds, {"type": "Finished", "status": "True", "reason": "Succeeded",
                            "message": "Job finished successfully", "lastTransitionTime": self._ts()}]
        else:
            more = self.rng.randint(1, 64)
            fl = self.rng.choice(("h100-80gb", "a100-80gb", "h200-141gb"))
            new = [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                    "message": f"couldn't assign flavors to pod set main: insufficient unused quota for {GPU} in "
                               f"flavor taugrid-gpu-{fl}, {more} more needed", "lastTransitionTime": self._ts()}]
        self.db.patch_merge(self.wl, name, {"status": {"conditions": new}}, ns, subresource="status")

    def _create(self) -> None:
        ns = self.rng.choice(self.namespaces)
        self.made += 1
        uid = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        name = f"pod-stream-{self.made:07d}-{uid[:5]}"
        obj: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns, "labels": {JOB_UID_LABEL: uid},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": f"stream-{self.made}",
                                              "uid": uid, "controller": True}]},
            "spec": {"active": True, "queueName": self.queue, "priority": 1000,
                     "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                         {"name": "main", "image": "trainer", "resources": {"requests": {GPU: "1"}}}]}}}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                       "message": "waiting for quota", "lastTransitionTime": self._ts()}]},
        }
        self.db.create(obj, with_status=True)
        self.workloads.append((ns, name))

    def _queue_counts(self) -> None:
        name = self.rng.choice(self.queues)
        cur = self.db.peek(self.cq, name)
        if cur is None:
            return
        pending = int((cur.get("status") or {}).get("pendingWorkloads") or 0)
        pending = max(0, pending + self.rng.choice((-1, 1)))
        self.db.patch_merge(self.cq, name, {"status": {"pendingWorkloads": pending}}, subresource="status")

    async def stream(self, rate: float, seconds: float) -> tuple[int, float]:
        """Write `rate` changes per second for `seconds`, in 10 ms bursts; returns (writes, elapsed)."""
        start = time.perf_counter()
        done = 0
        while True:
            now = time.perf_counter()
            elapsed = now - start
            if elapsed >= seconds:
                break
            due = int(elapsed * rate) + 1
            while done < due:
                self.one()
                done += 1
            await asyncio.sleep(0.01)
        return done, time.perf_counter() - start
