"""Kubernetes garbage collection, the part the simulator needs: a Workload or Pod whose controller
owner is gone (deleted, or replaced by a namesake with another UID) is deleted. The apiserver of the
simulator does no GC itself (docs/simulator.md)."""

from __future__ import annotations

from taudash.sim.controllers.base import Controller, controller_owner, deleting, meta

OWNED_KINDS = ("Workload", "Pod")


class GarbageCollector(Controller):
    name = "gc"

    def reconcile(self, events) -> None:
        if not self.first and not any(ev.type == "DELETED" or ev.resource.kind in OWNED_KINDS for ev in events):
            return
        for kind in OWNED_KINDS:
            for obj in self.m.list(kind):
                o = controller_owner(obj)
                if o is None or deleting(obj) or not o.get("kind"):
                    continue
                if kind == "Workload" and o["kind"] == "Pod":
                    continue  # Kueue's plain-pod Workloads are not simulated: their Pods are not the simulator's
                m = meta(obj)
                try:
                    owner = self.m.get(o["kind"], o.get("name", ""), m.get("namespace"))
                except KeyError:  # an owner kind the simulator does not hold (a ReplicaSet, a RayCluster)
                    continue
                if owner is None or meta(owner).get("uid") != o.get("uid"):
                    self.w.delete(kind, m["name"], m.get("namespace"))
