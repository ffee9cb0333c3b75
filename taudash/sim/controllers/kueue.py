"""The simulated Kueue: Workloads for sources, admission, stop policies, checks, queue status.

One pass per step, only when something changed: (1) the Workload lifecycle (finalizers, creation,
Finished, deactivation, stopPolicy, admission checks, the source's suspend flag); (2) scheduling
cycles as Kueue's pkg/scheduler runs them; (3) ClusterQueue, LocalQueue and AdmissionCheck status.
"""

from __future__ import annotations

from taudash.engine.model.names import JOB_UID_LABEL
from taudash.sim.clock import parse_rfc3339
from taudash.sim.controllers.admission import DEFAULT_BEHAVIOUR, Behaviour, usage_of
from taudash.sim.controllers.base import (
    Controller,
    Obj,
    condition,
    controller_owner,
    deleting,
    is_true,
    labels,
    meta,
    with_condition,
)
from taudash.sim.controllers.jobs import (
    SOURCE_KINDS,
    active,
    build_workload,
    finished,
    priority_label,
    queue_name,
    running,
    short_hash,
    suspend_patch,
    suspended,
)
from taudash.sim.controllers.queues import (
    MULTIKUEUE,
    Tally,
    ac_active,
    check_names,
    cq_active,
    cq_status,
    differs,
    lq_status,
    mk_workers,
    stop_policy,
)
from taudash.sim.controllers.scheduler import Scheduler
from taudash.sim.events import NORMAL

ADMISSION = "kueue-admission"  # the component Kueue's scheduler records its Events as

STOPPED_BY = {"ClusterQueueStopped": "ClusterQueue", "LocalQueueStopped": "LocalQueue"}
# Condition reasons Kueue 0.19 writes here (one place; another release's
# spellings come from `db.kueue.reason`, taudash/sim/kueue_versions.py).
DEACTIVATED = "Deactivated"  # Evicted / Requeued=False after spec.active=false
REACTIVATED = "Reactivated"  # Requeued=True once reactivated
PREEMPTED = "Preempted"  # Evicted after a preemption
PENDING = "Pending"  # QuotaReserved=False once an evicted job is inactive (legacy reason; PendingEvaluation with
# the UnadmittedWorkloadsObservability gate)
REQUEUE_TRUE = frozenset({"Preempted", "NodeFailures"})  # evictions after which Requeued is True right away
INPUTS = {
    *SOURCE_KINDS,
    "Workload",
    "ClusterQueue",
    "LocalQueue",
    "Cohort",
    "ResourceFlavor",
    "AdmissionCheck",
    "MultiKueueConfig",
    "MultiKueueCluster",
    "Namespace",
    "Topology",
    "WorkloadPriorityClass",
    "Node",  # topology placement: a node's room, readiness or cordon changed
}
OUTPUTS = {"ClusterQueue", "LocalQueue", "AdmissionCheck"}  # whose status only Kueue writes


def _relevant(ev) -> bool:
    kind = ev.resource.kind
    if kind not in INPUTS:
        return False
    if kind in OUTPUTS and ev.type == "MODIFIED" and ev.old is not None:
        old, new = ev.old, ev.object
        return any(old.get(k) != new.get(k) for k in new.keys() | old.keys() if k not in ("status", "metadata")) or any(
            meta(old).get(k) != meta(new).get(k) for k in ("labels", "deletionTimestamp", "finalizers")
        )
    return True


class KueueController(Controller):
    name = "kueue"

    def __init__(self, world) -> None:
        super().__init__(world)
        self.scheduler = Scheduler(self)
        self.behaviour: Behaviour = getattr(world, "kueue_behaviour", None) or DEFAULT_BEHAVIOUR

    def reconcile(self, events) -> None:
        if not self.first and not any(_relevant(ev) for ev in events):
            return  # Kueue reacts to changes of its inputs; a quiet cluster needs no pass
        self._lifecycle()
        self.world.sync()
        self.scheduler.run()
        self.world.sync()
        self._publish()

    # --- helpers -----------------------------------------------------------------------------------
    def _status(self, wl: Obj, status: Obj) -> Obj | None:
        m = meta(wl)
        return self.w.status("Workload", m["name"], m["namespace"], status)

    def event(self, obj: Obj | None, type_: str, reason: str, message: str, component: str = ADMISSION) -> None:
        """A core/v1 Event about `obj`, as Kueue records one (taudash/sim/events.py)."""
        recorder = getattr(self.world, "events", None)
        if recorder is not None:
            recorder.record(obj, type_, reason, message, component)

    def _owner(self, wl: Obj) -> Obj | None:
        o = controller_owner(wl)
        if not o or o.get("kind") not in SOURCE_KINDS:
            return None
        src = self.m.get(o["kind"], o.get("name", ""), meta(wl).get("namespace"))
        return src if src is not None and meta(src).get("uid") == o.get("uid") else None

    def _priority(self, src: Obj) -> tuple[int, str]:
        name = priority_label(src)
        wpc = self.m.get("WorkloadPriorityClass", name) if name else None
        return (int(wpc.get("value") or 0), name) if wpc is not None else (0, "")

    def _queue_of(self, wl: Obj) -> tuple[Obj | None, Obj | None]:
        m, spec = meta(wl), wl.get("spec") or {}
        lq = self.m.get("LocalQueue", spec.get("queueName") or "", m.get("namespace"))
        cq_name = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or (
            ((lq or {}).get("spec") or {}).get("clusterQueue")
        )
        return lq, self.m.get("ClusterQueue", cq_name) if cq_name else None

    # --- (1) lifecycle ---------------------------------------------------------------------------
    def _lifecycle(self) -> None:
        wls = self.m.list("Workload")
        owned: dict[str, list[Obj]] = {}
        for wl in wls:
            uid = (controller_owner(wl) or {}).get("uid") or labels(wl).get(JOB_UID_LABEL)
            if uid:
                owned.setdefault(uid, []).append(wl)
            if deleting(wl) and meta(wl).get("finalizers"):
                self.w.patch("Workload", meta(wl)["name"], meta(wl)["namespace"], {"metadata": {"finalizers": None}})
        for kind in SOURCE_KINDS:
            for src in self.m.list(kind):
                if deleting(src) or not queue_name(src):
                    continue
                mine = [w for w in owned.get(meta(src)["uid"], []) if not deleting(w)]
                if kind == "Deployment":
                    self._pods(src, mine)
                elif not mine and not finished(src)[0]:
                    prio, pc = self._priority(src)
                    created = self.w.create(build_workload(src, prio, pc))
                    if created is not None:
                        self.event(src, NORMAL, "CreatedWorkload",
                                   f"Created Workload: {meta(created)['namespace']}/{meta(created)['name']}",
                                   _job_component(src))
                    hold_back = suspend_patch(src, True)
                    # no Workload, no admission: hold the job back
                    if suspended(src) is False and hold_back is not None:
                        self.w.patch(kind, meta(src)["name"], meta(src)["namespace"], hold_back)
        for wl in wls:
            if not deleting(wl) and not is_true(wl, "Finished"):
                self._workload(wl)

    def _pods(self, dep: Obj, mine: list[Obj]) -> None:
        """One single-pod Workload per replica; scale-in removes the newest."""
        m = meta(dep)
        want = (dep.get("spec") or {}).get("replicas", 1)
        want = 1 if want is None else int(want)
        live = sorted(mine, key=lambda w: (meta(w).get("creationTimestamp") or "", meta(w)["name"]))
        for wl in live[want:][::-1]:
            self.w.delete("Workload", meta(wl)["name"], m["namespace"])
        names = {meta(w)["name"] for w in mine}
        prio, pc = self._priority(dep)
        n = 0
        for _ in range(want - len(live)):
            while True:
                pod = f"{m['name']}-{short_hash(m['uid'], 'rs', n=10)}-{short_hash(m['uid'], str(n))}"
                name = f"pod-{pod}-{short_hash('Pod', '', pod, m['uid'])}"
                n += 1
                if name not in names:
                    break
            names.add(name)
            self.w.create(build_workload(dep, prio, pc, name=name))

    def _workload(self, wl: Obj) -> None:
        src = self._owner(wl)
        if src is None:
            return  # an orphan: the garbage collector removes it
        now, m = self.stamp, meta(wl)
        conds = (wl.get("status") or {}).get("conditions") or []
        done, ok, msg = finished(src)
        if done:
            self._status(
                wl, {"conditions": with_condition(conds, "Finished", "True", "Succeeded" if ok else "Failed", msg, now)}
            )
            return
        lq, cq = self._queue_of(wl)
        reserved, admitted = is_true(wl, "QuotaReserved"), is_true(wl, "Admitted")
        evicted = is_true(wl, "Evicted")
        requeued = condition(wl, "Requeued") or {}
        # -- the workload controller: deactivation, reactivation, stop policies, queue restarts
        if not (wl.get("spec") or {}).get("active", True):
            if not evicted:  # also a pending Workload: Kueue marks every deactivated one Evicted
                return self.evict(wl, DEACTIVATED, "The workload is deactivated", clear_requeue_state=True)
        elif requeued.get("status") == "False" and requeued.get("reason") == DEACTIVATED:
            return self._requeued(wl, REACTIVATED, "The workload was reactivated")
        elif reserved and not evicted:
            for obj, kind in ((cq, "ClusterQueue"), (lq, "LocalQueue")):
                policy = stop_policy(obj)
                if policy == "HoldAndDrain" and admitted:
                    return self.evict(wl, f"{kind}Stopped", f"The {kind} is stopped")
                if policy != "None" and not admitted and obj is not None:  # Hold, HoldAndDrain: reservations released
                    return self._release(wl, f"{kind} {meta(obj)['name']} is stopped")
        if requeued.get("status") == "False" and requeued.get("reason") in STOPPED_BY:
            kind = STOPPED_BY[requeued["reason"]]
            obj = cq if kind == "ClusterQueue" else lq
            if obj is not None and stop_policy(obj) == "None":
                return self._requeued(wl, f"{kind}Restarted", f"The {kind} was restarted after being stopped")
        # -- the job reconciler: an evicted Workload's job is stopped; its quota goes once the job is inactive
        if evicted:
            hold = suspended(src)
            stop = suspend_patch(src, True, wl) if hold is False else None
            if stop is not None:  # a job (None: not a suspendable kind)
                self.w.patch(src["kind"], meta(src)["name"], m["namespace"], stop)
            elif hold is not False and reserved and not active(src):
                self._release_evicted(wl, condition(wl, "Evicted") or {})
            return
        if reserved and not admitted and cq is not None:
            admitted = self._checks(wl, cq)
        hold = suspended(src)
        if hold is not None and hold == admitted:  # admitted ⇒ running, otherwise held back
            patch = suspend_patch(src, not admitted, wl, self._flavors())
            if patch is not None and self.w.patch(src["kind"], meta(src)["name"], m["namespace"], patch) and admitted:
                cqn = (((wl.get("status") or {}).get("admission") or {}).get("clusterQueue")
                       or meta(cq or {}).get("name", ""))
                self.event(src, NORMAL, "Started", f"Admitted by clusterQueue {cqn}", _job_component(src))
        if reserved and is_true(wl, "Admitted"):  # admitted before this pass: `conds` is current
            want = (
                ("True", "Started", "All pods reached readiness and the workload is running")
                if running(src)
                else ("False", "WaitForStart", "Not all pods are ready or succeeded")
            )
            have = condition(wl, "PodsReady") or {}
            if (have.get("status"), have.get("reason")) != want[:2]:
                self._status(wl, {"conditions": with_condition(conds, "PodsReady", *want, now)})

    def _requeued(self, wl: Obj, reason: str, message: str) -> None:
        conds = with_condition(
            (wl.get("status") or {}).get("conditions"), "Requeued", "True", reason, message, self.stamp,
            (wl.get("metadata") or {}).get("generation"),
        )
        self._status(wl, {"conditions": conds})

    def evict(self, wl: Obj, reason: str, message: str, preempted: str | None = None,
              clear_requeue_state: bool = False) -> None:
        """Kueue's workload eviction: Evicted=True (and Preempted=True for a preemption), cluster nomination
        and admission checks reset, the eviction counted. Quota stays reserved until the job is inactive."""
        now = self.stamp
        st = wl.get("status") or {}
        gen = meta(wl).get("generation")
        conds = with_condition(st.get("conditions"), "Evicted", "True", reason, message, now, gen)
        if preempted:
            conds = with_condition(conds, "Preempted", "True", preempted, message, now)
        stats = [dict(e) for e in ((st.get("schedulingStats") or {}).get("evictions") or ())]
        hit = next((e for e in stats if e.get("reason") == reason and not e.get("underlyingCause")), None)
        if hit is None:
            # underlyingCause is required (it may be empty): Kueue writes "" when there is no finer cause.
            stats.append({"reason": reason, "underlyingCause": "", "count": 1})
        else:
            hit["count"] = int(hit.get("count") or 0) + 1
            hit["underlyingCause"] = ""
        checks = []
        for c in st.get("admissionChecks") or ():
            if c.get("state") == "Pending":
                checks.append(c)
            else:
                checks.append({"name": c.get("name"), "state": "Pending", "lastTransitionTime": now,
                               "message": f"Reset to Pending after eviction. Previously: {c.get('state')}"})
        update: Obj = {
            "conditions": conds,
            "clusterName": None,
            "nominatedClusterNames": None,
            "schedulingStats": {"evictions": stats},
        }
        if st.get("admissionChecks"):
            update["admissionChecks"] = checks
        if clear_requeue_state:
            update["requeueState"] = None
        if self._status(wl, update) is not None:
            self.event(wl, NORMAL, f"EvictedDueTo{reason}", message, "kueue-workload-controller")
        src = self._owner(wl)
        stop = suspend_patch(src, True, wl) if src is not None and suspended(src) is False else None
        if src is not None and stop is not None:  # the job reconciler stops the job right away
            self.w.patch(src["kind"], meta(src)["name"], meta(src)["namespace"], stop)

    def _flavors(self) -> dict[str, Obj]:
        return {meta(f)["name"]: f for f in self.m.list("ResourceFlavor")}

    def preempt(self, wl: Obj, reason: str, message: str) -> None:
        self.event(wl, NORMAL, "Preempted", message)
        self.evict(wl, PREEMPTED, message, preempted=reason)

    def _release_evicted(self, wl: Obj, ev: Obj) -> None:
        """The job is inactive: the reservation goes (QuotaReserved=False) and the Workload is requeued
        (Requeued=True only after a preemption or a node failure)."""
        now, kv = self.stamp, self.world.db.kueue  # the Kueue release played: its reasons
        reason, message = ev.get("reason") or "", ev.get("message") or ""
        conds = with_condition((wl.get("status") or {}).get("conditions"), "Requeued",
                               "True" if reason in REQUEUE_TRUE else "False", reason, message, now)
        conds = with_condition(conds, "QuotaReserved", "False", kv.reason("QuotaReserved", "PendingEvaluation"),
                               message, now)
        if kv.admitted_on_reservation_loss(is_true(wl, "Admitted")):
            conds = with_condition(conds, "Admitted", "False", "NoReservation", "The workload has no reservation", now)
        if condition(wl, "PodsReady"):
            conds = with_condition(
                conds, "PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded", now
            )
        self._status(wl, {"conditions": conds, "admission": None})

    def _release(self, wl: Obj, message: str) -> None:
        now, kv = self.stamp, self.world.db.kueue  # a stopped queue: Suspended (0.19 gated) / Inadmissible
        conds = with_condition(
            (wl.get("status") or {}).get("conditions"), "QuotaReserved", "False",
            kv.reason("QuotaReserved", "Suspended"), message, now
        )
        if kv.admitted_on_reservation_loss(False):
            conds = with_condition(conds, "Admitted", "False", "NoReservation", "The workload has no reservation", now)
        self._status(wl, {"conditions": conds, "admission": None, "admissionChecks": None})

    def _checks(self, wl: Obj, cq: Obj) -> bool:
        """Admission checks of a reserved Workload; True once all are Ready (then Admitted)."""
        now = self.stamp
        st = wl.get("status") or {}
        current = {c.get("name"): c for c in st.get("admissionChecks") or ()}
        states, cluster = [], None
        for name in check_names(cq):
            ac = self.m.get("AdmissionCheck", name)
            state, message = "Ready", ""
            if ac is not None and (ac.get("spec") or {}).get("controllerName") == MULTIKUEUE:
                _, active, _ = mk_workers(ac, self.m)
                if active:
                    cluster = active[0]
                    message = f'The workload got reservation on "{cluster}"'
                else:
                    state, message = "Pending", "The workload is waiting for a reservation on a worker cluster"
            old = current.get(name) or {}
            states.append(
                {
                    "name": name,
                    "state": state,
                    "message": message,
                    "lastTransitionTime": old.get("lastTransitionTime") if old.get("state") == state else now,
                }
            )
        ready = all(s["state"] == "Ready" for s in states)
        update: Obj = {"admissionChecks": states}
        if ready:
            update["conditions"] = with_condition(
                st.get("conditions"), "Admitted", "True", "Admitted", "The workload is admitted", now
            )
            if cluster:
                # A CEL rule of the Workload CRD: clusterName excludes nominatedClusterNames.
                update["clusterName"] = cluster
                update["nominatedClusterNames"] = None
        if differs(st, update) and self._status(wl, update) is not None and ready and not is_true(wl, "Admitted"):
            since = parse_rfc3339((condition(wl, "QuotaReserved") or {}).get("lastTransitionTime"))
            wait = max(0.0, self.world.clock.now() - since) if since is not None else 0.0
            self.event(wl, NORMAL, "Admitted", f"Admitted by ClusterQueue {meta(cq)['name']}, "
                                               f"wait time since reservation was {wait:.0f}s")
        return ready

    # --- (3) queue and check status --------------------------------------------------------------
    def _publish(self) -> None:
        now = self.stamp
        cq_tally: dict[str, Tally] = {}
        lq_tally: dict[tuple[str, str], Tally] = {}
        for wl in self.m.list("Workload"):
            if deleting(wl) or is_true(wl, "Finished"):
                continue
            ns, q = meta(wl)["namespace"], (wl.get("spec") or {}).get("queueName") or ""
            lq = self.m.get("LocalQueue", q, ns)
            lt = lq_tally.setdefault((ns, q), Tally())
            if is_true(wl, "QuotaReserved"):
                cqn = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or ""
                use = usage_of(wl)
                cq_tally.setdefault(cqn, Tally()).add(use, is_true(wl, "Admitted"))
                lt.add(use, is_true(wl, "Admitted"))
            elif (wl.get("spec") or {}).get("active", True) and lq is not None:
                cq_tally.setdefault((lq.get("spec") or {}).get("clusterQueue") or "", Tally()).pending += 1
                lt.pending += 1
        active: dict[str, bool] = {}
        for cq in self.m.list("ClusterQueue"):
            name = meta(cq)["name"]
            state = cq_active(cq, self.m)
            active[name] = state[0]
            tally = cq_tally.get(name, Tally())
            desired = cq_status(cq, tally, state, now)
            if differs(cq.get("status"), desired):
                self.w.status("ClusterQueue", name, None, desired)
            if deleting(cq) and tally.reserving == 0 and meta(cq).get("finalizers"):
                self.w.patch("ClusterQueue", name, None, {"metadata": {"finalizers": None}})
        for lq in self.m.list("LocalQueue"):
            m = meta(lq)
            cqn = (lq.get("spec") or {}).get("clusterQueue") or ""
            target = self.m.get("ClusterQueue", cqn)
            desired = lq_status(lq, target, active.get(cqn, False), lq_tally.get((m["namespace"], m["name"]), Tally()),
                                now)
            if differs(lq.get("status"), desired):
                self.w.status("LocalQueue", m["name"], m["namespace"], desired)
        for ac in self.m.list("AdmissionCheck"):
            ac_state = ac_active(ac, self.m)
            if ac_state is None:
                continue
            conds = with_condition(
                (ac.get("status") or {}).get("conditions"), "Active", *ac_state, now, meta(ac).get("generation")
            )
            if differs(ac.get("status"), {"conditions": conds}):
                self.w.status("AdmissionCheck", meta(ac)["name"], None, {"conditions": conds})


def _job_component(src: Obj) -> str:
    """The component a job integration records Events as, e.g. batch/job-kueue-controller."""
    api = str(src.get("apiVersion") or "")
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    name = f"{str(src.get('kind') or 'job').lower()}-kueue-controller"
    return f"{group}/{name}" if group else name
