"""Kueue's answer for Workloads whose owner the simulator does not model.

The simulated Kueue drives a Workload through its source (Job, RayJob, RayService, Deployment); one
owned by anything else — a Pod (plain-pod integration), a JobSet, an MPIJob — is left alone there,
so a HoldAndDrain in a fork would never evict it and every drain would look stuck. In a rehearsal
this stand-in does what Kueue does to such a Workload, with the same conditions the simulated Kueue
writes: evicted when its ClusterQueue or LocalQueue is on HoldAndDrain or when it is deactivated,
its reservation released when its queue is stopped before admission. It never admits anything
(admission stays the simulated Kueue's; an unmodelled owner's Workload waits), and it writes through
the world's logged writer, so HTTP watchers and the event log see it like any controller write.
"""

from __future__ import annotations

from taudash.sim.controllers.base import condition, controller_owner, is_true, meta, with_condition
from taudash.sim.controllers.jobs import SOURCE_KINDS
from taudash.sim.controllers.queues import stop_policy
from taudash.sim.errors import Invalid


def reconcile(world) -> int:
    """One pass; returns how many Workloads it evicted or released."""
    m = world.mirror
    now = world.clock.stamp()
    n = 0
    for wl in m.list("Workload"):
        owner = controller_owner(wl)
        if owner is not None and owner.get("kind") in SOURCE_KINDS:
            continue  # the simulated Kueue's own
        if meta(wl).get("deletionTimestamp") or is_true(wl, "Finished") or not is_true(wl, "QuotaReserved"):
            continue
        spec, st = wl.get("spec") or {}, wl.get("status") or {}
        ns = meta(wl).get("namespace")
        lq = m.get("LocalQueue", spec.get("queueName") or "", ns)
        cq_name = (st.get("admission") or {}).get("clusterQueue") or ((lq or {}).get("spec") or {}).get("clusterQueue")
        cq = m.get("ClusterQueue", cq_name) if cq_name else None
        admitted = is_true(wl, "Admitted")
        reason = None
        if not spec.get("active", True):
            reason = ("Deactivated", "The workload is deactivated")
        else:
            for obj, kind in ((cq, "ClusterQueue"), (lq, "LocalQueue")):
                policy = stop_policy(obj)
                if policy == "HoldAndDrain" and admitted:
                    reason = (f"{kind}Stopped", f"The {kind} is stopped")
                    break
                if policy != "None" and not admitted and obj is not None:
                    reason = ("release", f"{kind} {meta(obj)['name']} is stopped")
                    break
        if reason is None:
            continue
        conds = st.get("conditions")
        if reason[0] == "release":
            conds = with_condition(conds, "QuotaReserved", "False", "Inadmissible", reason[1], now)
        else:
            conds = with_condition(conds, "Evicted", "True", reason[0], reason[1], now)
            conds = with_condition(conds, "QuotaReserved", "False", "Pending", reason[1], now)
            conds = with_condition(conds, "Requeued", "False", reason[0], reason[1], now)
            if condition(wl, "PodsReady"):
                conds = with_condition(conds, "PodsReady", "False", "WaitForStart",
                                       "Not all pods are ready or succeeded", now)
        conds = with_condition(conds, "Admitted", "False", "NoReservation", "The workload has no reservation", now)
        world.writer.status("Workload", meta(wl)["name"], ns,
                            {"conditions": conds, "admission": None, "admissionChecks": None})
        n += 1
    return n


def refuse_incomplete_workloads(op: str, resource, new, _old) -> None:
    """An admission hook for the fork: a Workload created without containers in a pod set (derived by
    the simulated Kueue from a partially copied source, e.g. a slim Deployment) is refused up front —
    the Kueue CRD schema refuses it too (`containers: Required value`), only after a costly check."""
    if op != "CREATE" or resource.kind != "Workload" or new is None:
        return
    for i, ps in enumerate((new.get("spec") or {}).get("podSets") or ()):
        if not (((ps or {}).get("template") or {}).get("spec") or {}).get("containers"):
            raise Invalid.of(resource, (new.get("metadata") or {}).get("name") or "",
                             [(f"spec.podSets[{i}].template.spec.containers", "FieldValueRequired", "Required value")])
