"""Kueue's scheduling cycles for the simulator (Kueue's pkg/scheduler and pkg/cache/queue).

Each cycle takes the head of every active ClusterQueue (engine/rules/queue_order.py's order),
nominates a flavor assignment for it (admission.py: the engine's quota tree, Kueue's flavor
assigner and classical preemption), and processes the heads: already non-borrowing before
borrowing, then priority, then age. A head that fits is admitted; one that needs preemption
evicts its victims and waits (`WaitingForPreemptedWorkloads`) until their jobs are inactive and
their quota is released; one that does not fit — in quota, or (tas.py) in the free room of any domain of
the topology level it asks for (`TopologyPlacementFailed`) — steps aside (BestEffortFIFO) or blocks its
queue (StrictFIFO). Pending Workloads get the QuotaReserved=False reason and message that explain why.
"""

from __future__ import annotations

from taudash.engine.rules.queue_order import ADMISSION_GATED_BY, order_key
from taudash.sim.clock import parse_rfc3339
from taudash.sim.controllers.admission import (
    DEFAULT_BEHAVIOUR,
    MODE_NOFIT,
    MODE_PREEMPT,
    Assignment,
    Cluster,
    Preemptor,
    assign,
    cq_path,
    fits_now,
    preemption_message,
    preemption_targets,
    workload_model,
)
from taudash.sim.controllers.base import FORMATS, Obj, condition, deleting, is_true, labels, meta, qfmt, with_condition
from taudash.sim.controllers.jobs import requests_of
from taudash.sim.controllers.queues import check_names, cq_active, namespace_matches, stop_policy
from taudash.sim.controllers.tas import ledger_now, place
from taudash.sim.placement import Ledger

WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
WAITING_FOR_QUOTA = "WaitingForQuota"


class Scheduler:
    def __init__(self, kueue) -> None:
        self.k = kueue  # the KueueController: mirror, writer, clock, owner lookup, evict
        self.m = kueue.m
        self._requests: dict[tuple[str, str], list] = {}

    def _order(self, wl: Obj) -> tuple:
        """Kueue's queue order (engine/rules/queue_order.py: priority, queue-order time, UID). Workloads
        made in one simulated step share a creation second: the older source goes first before the UID
        tie-break (Kueue's UID order would be arbitrary there)."""
        src = self.k._owner(wl)
        born = meta(src).get("creationTimestamp") or "" if src is not None else ""
        key = order_key(workload_model(wl))
        return (*key[:2], born, *key[2:])

    def run(self) -> None:
        """Scheduling cycles until no ClusterQueue has a head left to try."""
        behaviour = getattr(self.k, "behaviour", DEFAULT_BEHAVIOUR)
        self._issued: set[str] = set()  # victims evicted in this pass (the raw objects read are older)
        self._room: Ledger | None = None  # the nodes' free room, built when a head first needs it (tas.py)
        cqs = {meta(c)["name"]: c for c in self.m.list("ClusterQueue")}
        flavors = {meta(f)["name"]: f for f in self.m.list("ResourceFlavor")}
        holders: list[tuple[Obj, str]] = []
        pending: list[Obj] = []
        for wl in self.m.list("Workload"):
            if deleting(wl) or is_true(wl, "Finished"):
                continue
            if is_true(wl, "QuotaReserved"):
                cqn = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue")
                if cqn is not None and cqn in cqs:
                    holders.append((wl, cqn))
                continue
            if not (wl.get("spec") or {}).get("active", True):
                continue
            if (meta(wl).get("annotations") or {}).get(ADMISSION_GATED_BY):
                continue  # Kueue does not queue an admission-gated Workload
            pending.append(wl)
        cl = Cluster(list(cqs.values()), self.m.list("Cohort"), holders, self.k.world.clock.datetime())
        active = {n: cq_active(c, self.m)[0] and not cl.node(n).in_cycle for n, c in cqs.items()}
        queues: dict[str, list[Obj]] = {}
        waiting: list[tuple[Obj, str, str]] = []
        for wl in pending:
            why = self._route(wl, cqs, active)
            if isinstance(why, str):
                queues.setdefault(why, []).append(wl)
            elif why is not None:
                waiting.append((wl, *why))
        for q in queues.values():
            q.sort(key=self._order)
        pos = dict.fromkeys(queues, 0)
        blocked: set[str] = set()
        while True:
            heads = []
            for cqn in sorted(queues):
                if cqn not in blocked and pos[cqn] < len(queues[cqn]):
                    wl = queues[cqn][pos[cqn]]
                    a = assign(cl, cqn, workload_model(wl), self._reqs(wl), flavors, FORMATS, behaviour)
                    heads.append((cqn, wl, a, self._targets(cl, cqn, wl, a)))
            if not heads:
                break
            # Non-borrowing before borrowing, then priority, then age (Kueue's scheduler.go).
            heads.sort(key=lambda h: (h[2].borrowing, *self._order(h[1])))
            preempted: set[str] = set()
            for cqn, wl, a, targets in heads:
                outcome = self._process(cl, cqn, wl, a, targets, preempted, flavors, behaviour)
                if outcome is None:  # admitted
                    pos[cqn] += 1
                    continue
                reason, message, hold = outcome
                waiting.append((wl, reason, message))
                strict = ((cqs[cqn].get("spec") or {}).get("queueingStrategy") or "BestEffortFIFO") == "StrictFIFO"
                if strict or hold:
                    # StrictFIFO: the head keeps its place and blocks the queue. A preemptor waiting for its
                    # victims stays the head as well (Kueue's sticky preemptor under BestEffortFIFO).
                    blocked.add(cqn)
                    head = meta(wl)["name"]
                    for behind in queues[cqn][pos[cqn] + 1 :]:
                        waiting.append(
                            (behind, "Pending", f"StrictFIFO: waiting behind the head {head} of ClusterQueue {cqn}")
                            if strict
                            else (behind, WAITING_FOR_QUOTA,
                                  f"waiting behind {head}, which is preempting in ClusterQueue {cqn}")
                        )
                else:
                    pos[cqn] += 1  # BestEffortFIFO: inadmissible for now, the next one becomes the head
        kv = self.k.world.db.kueue  # the Kueue release played: without the gate, NoFit reasons read "Pending"
        for wl, reason, message in waiting:
            reason = kv.reason("QuotaReserved", reason)
            qr = condition(wl, "QuotaReserved") or {}
            adm = condition(wl, "Admitted") or {}
            # with the 0.19 gate Admitted follows QuotaReserved: NoReservation on a workload never admitted
            sync_admitted = kv.granular and (adm.get("status"), adm.get("reason")) != ("False", "NoReservation")
            if (qr.get("status"), qr.get("reason"), qr.get("message")) != ("False", reason, message) or sync_admitted:
                conds = with_condition(
                    (wl.get("status") or {}).get("conditions"), "QuotaReserved", "False", reason, message, self.k.stamp
                )
                if sync_admitted:
                    conds = with_condition(
                        conds, "Admitted", "False", "NoReservation", "The workload has no reservation", self.k.stamp
                    )
                if self.k._status(wl, {"conditions": conds}) is not None and qr.get("message") != message:
                    self.k.event(wl, "Warning", "Pending", message)

    def _targets(self, cl: Cluster, cqn: str, wl: Obj, a: Assignment) -> list:
        if a.mode != MODE_PREEMPT:
            return []
        p = Preemptor(cqn, workload_model(wl), a.frs_needing_preemption(), dict(a.usage))
        return preemption_targets(cl, p)

    def _process(self, cl: Cluster, cqn: str, wl: Obj, a: Assignment, targets: list, preempted: set[str],
                 flavors: dict, behaviour) -> tuple[str, str, bool] | None:
        """None when admitted, else (reason, message, keeps its place as the head)."""
        if a.mode == MODE_NOFIT:
            return a.no_fit_reason(), a.message(), False
        if a.mode == MODE_PREEMPT and not targets:
            return WAITING_FOR_QUOTA, a.message(), False
        uids = {t.holder.uid for t in targets}
        if uids & preempted:
            return WAITING_FOR_QUOTA, "Workload has overlapping preemption targets with another workload", False
        if not fits_now(cl, cqn, a.usage, [t.holder for t in targets]):
            if targets:
                return WAITING_FOR_QUOTA, "Workload no longer fits after processing another workload", False
            # another head took the room this cycle: Kueue tries again next cycle, here against the cluster as it is now
            a = assign(cl, cqn, workload_model(wl), self._reqs(wl), flavors, FORMATS, behaviour)
            if not a.fits:
                return (a.no_fit_reason() if a.mode == MODE_NOFIT else WAITING_FOR_QUOTA), a.message(), False
        tas: dict[str, Obj] = {}
        if not targets:
            chosen = {ps.name: min(fl for fl, _ in ps.flavors.values()) for ps in a.podsets if ps.flavors}
            placed = place(self._ledger(), self.m, wl, self.k._owner(wl), chosen, flavors)
            if isinstance(placed, tuple):  # quota fits, no domain of the level it asks for has the room
                return placed[0], placed[1], False
            tas = placed
        preempted |= uids
        if targets:
            cl.add(cqn, a.usage)  # the preemptor's claim: nothing else takes the room it is freeing
            n = 0
            for t in targets:
                if not t.holder.evicted and t.holder.uid not in self._issued:  # Kueue's preemption expectations
                    self._issued.add(t.holder.uid)
                    msg = preemption_message(wl, t.reason, cq_path(cl, cqn), cq_path(cl, t.holder.cq))
                    self.k.preempt(t.holder.raw, t.reason, msg)
                n += 1
            return WAITING_FOR_PREEMPTED, f"{a.message()}. Pending the preemption of {n} workload(s)", True
        cl.admit(cqn, wl, a.usage)
        self._admit(wl, cl.raw[cqn], a, tas)
        return None

    def _ledger(self) -> Ledger:
        if self._room is None:
            self._room = ledger_now(self.m)
        return self._room

    def _route(self, wl: Obj, cqs: dict[str, Obj], active: dict[str, bool]) -> str | tuple[str, str] | None:
        """The ClusterQueue a pending Workload queues in, or (reason, message) why it cannot."""
        ns, q = meta(wl)["namespace"], (wl.get("spec") or {}).get("queueName") or ""
        lq = self.m.get("LocalQueue", q, ns)
        if lq is None:
            return "Inadmissible", f"LocalQueue {q} doesn't exist"
        cqn = (lq.get("spec") or {}).get("clusterQueue") or ""
        cq = cqs.get(cqn)
        if cq is None:
            return "Inadmissible", f"ClusterQueue {cqn} doesn't exist"
        if stop_policy(lq) != "None":
            return "Suspended", f"LocalQueue {q} is stopped"  # "Inadmissible" without the 0.19 gate
        if not active[cqn]:
            state = "stopped" if stop_policy(cq) != "None" else "inactive"
            return ("Suspended" if state == "stopped" else "Inadmissible"), f"ClusterQueue {cqn} is {state}"
        ns_obj = self.m.get("Namespace", ns)
        if not namespace_matches(cq, labels(ns_obj) if ns_obj else {}):
            return "Inadmissible", "Workload namespace doesn't match ClusterQueue selector"
        return cqn

    def _reqs(self, wl: Obj) -> list:
        key = (meta(wl).get("uid") or meta(wl)["name"], str(meta(wl).get("generation") or 0))
        if key not in self._requests:
            if len(self._requests) > 4096:
                self._requests.clear()
            self._requests[key] = requests_of(wl)
        return self._requests[key]

    def _admit(self, wl: Obj, cq: Obj, a: Assignment, topology: dict[str, Obj] | None = None) -> None:
        now, cqn = self.k.stamp, meta(cq)["name"]
        st = wl.get("status") or {}
        conds = with_condition(
            st.get("conditions"), "QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {cqn}", now
        )
        for ctype in ("Evicted", "Preempted"):
            c = condition(wl, ctype)
            if c and c.get("status") == "True":
                conds = with_condition(
                    conds, ctype, "False", "QuotaReserved", f"Previously: {c.get('message', '')}", now
                )
        checks = check_names(cq)
        if checks and self.k.world.db.kueue.granular:  # without the 0.19 gate Admitted is left until it is True
            conds = with_condition(
                conds,
                "Admitted",
                "False",
                "UnsatisfiedAdmissionChecks",
                "The workload has not all admission checks",
                now,
            )
        elif not checks:
            conds = with_condition(conds, "Admitted", "True", "Admitted", "The workload is admitted", now)
        assignments = [
            {
                "name": ps.name,
                "count": ps.count,
                "flavors": {r: fl for r, (fl, _) in sorted(ps.flavors.items())},
                "resourceUsage": {
                    r: qfmt(v.value, FORMATS.get(r, "DecimalSI")) for r, v in sorted(ps.totals.items())
                },
                **({"topologyAssignment": topology[ps.name]} if topology and ps.name in topology else {}),
            }
            for ps in a.podsets
        ]
        status: Obj = {
            "admission": {"clusterQueue": cqn, "podSetAssignments": assignments},
            "conditions": conds,
            "requeueState": None,
        }
        if checks:
            status["admissionChecks"] = [
                {"name": c, "state": "Pending", "message": "", "lastTransitionTime": now} for c in checks
            ]
        if self.k._status(wl, status) is None:
            return
        requeued = condition(wl, "Requeued") or {}
        queued = parse_rfc3339(requeued.get("lastTransitionTime") if requeued.get("status") == "True" else None) \
            or parse_rfc3339(meta(wl).get("creationTimestamp"))
        wait = max(0.0, self.k.world.clock.now() - queued) if queued is not None else 0.0
        self.k.event(wl, "Normal", "QuotaReserved",
                     f"Quota reserved in ClusterQueue {cqn}, wait time since queued was {wait:.0f}s")
        if not checks:
            self.k.event(wl, "Normal", "Admitted",
                         f"Admitted by ClusterQueue {cqn}, wait time since reservation was 0s")
