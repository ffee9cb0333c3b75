"""Kueue's scheduling cycles for the simulator (reference/kueue.md §4.1-4.3).

Each cycle takes the head of every active ClusterQueue (priority, then age), nominates a flavor
assignment for it (admission.py), and admits in order: non-borrowing before borrowing, then priority,
then age, re-checking each against the admissions made earlier in the cycle. A head that does not
fit blocks its queue under StrictFIFO and steps aside under BestEffortFIFO. Pending Workloads get
the QuotaReserved=False reason and message that explain why.
"""

from __future__ import annotations

from taudash.sim.controllers.admission import Assignment, Capacity, assign, usage_of
from taudash.sim.controllers.base import FORMATS, Obj, condition, deleting, is_true, labels, meta, qfmt, with_condition
from taudash.sim.controllers.jobs import requests_of
from taudash.sim.controllers.queues import check_names, cq_active, namespace_matches, stop_policy


class Scheduler:
    def __init__(self, kueue) -> None:
        self.k = kueue  # the KueueController: mirror, writer, clock, owner lookup
        self.m = kueue.m
        self._requests: dict[tuple[str, int], list] = {}

    def _order(self, wl: Obj) -> tuple:
        """Queue order: priority, then age. Workloads made in one step share a creation second, so ties
        go to the older source (where Kueue's UID tie-break would be arbitrary)."""
        m = meta(wl)
        src = self.k._owner(wl)
        born = meta(src).get("creationTimestamp") or "" if src is not None else ""
        return (
            -int((wl.get("spec") or {}).get("priority") or 0),
            m.get("creationTimestamp") or "",
            born,
            m.get("uid") or "",
        )

    def run(self) -> None:
        """Scheduling cycles until no ClusterQueue has a head left to try."""
        cqs = {meta(c)["name"]: c for c in self.m.list("ClusterQueue")}
        cap = Capacity(list(cqs.values()), self.m.list("Cohort"))
        flavors = {meta(f)["name"]: f for f in self.m.list("ResourceFlavor")}
        active = {n: cq_active(c, self.m)[0] for n, c in cqs.items()}
        queues: dict[str, list[Obj]] = {}
        waiting: list[tuple[Obj, str, str]] = []
        for wl in self.m.list("Workload"):
            if deleting(wl) or is_true(wl, "Finished"):
                continue
            if is_true(wl, "QuotaReserved"):
                cqn = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue")
                if cqn in cap.cqs:
                    cap.add(cqn, usage_of(wl))
                continue
            if not (wl.get("spec") or {}).get("active", True):
                continue
            why = self._route(wl, cqs, active)
            if isinstance(why, str):
                queues.setdefault(why, []).append(wl)
            else:
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
                    heads.append((cqn, wl, assign(cqs[cqn], self._reqs(wl), cap, flavors, FORMATS)))
            if not heads:
                break
            # Non-borrowing before borrowing, then priority, then age (§4.3).
            heads.sort(key=lambda h: (h[2].borrows, *self._order(h[1])))
            changed = False
            for cqn, wl, a in heads:
                if a.fits and changed:
                    a = assign(cqs[cqn], self._reqs(wl), cap, flavors, FORMATS)  # earlier admissions this cycle
                if a.fits:
                    cap.add(cqn, a.usage)
                    self._admit(wl, cqs[cqn], a)
                    changed = True
                    pos[cqn] += 1
                    continue
                waiting.append((wl, a.reason, a.message))
                if ((cqs[cqn].get("spec") or {}).get("queueingStrategy") or "BestEffortFIFO") == "StrictFIFO":
                    blocked.add(cqn)  # the head keeps its place and blocks the queue
                    head = meta(wl)["name"]
                    for behind in queues[cqn][pos[cqn] + 1 :]:
                        waiting.append(
                            (behind, "Pending", f"StrictFIFO: waiting behind the head {head} of ClusterQueue {cqn}")
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
                self.k._status(wl, {"conditions": conds})

    def _route(self, wl: Obj, cqs: dict[str, Obj], active: dict[str, bool]) -> str | tuple[str, str]:
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
        key = (meta(wl).get("uid") or meta(wl)["name"], int(meta(wl).get("generation") or 0))
        if key not in self._requests:
            if len(self._requests) > 4096:
                self._requests.clear()
            self._requests[key] = requests_of(wl)
        return self._requests[key]

    def _admit(self, wl: Obj, cq: Obj, a: Assignment) -> None:
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
        counts = {ps.get("name", "main"): int(ps.get("count", 1)) for ps in (wl.get("spec") or {}).get("podSets") or ()}
        assignments = [
            {
                "name": ps,
                "count": counts.get(ps, 1),
                "flavors": dict(sorted(a.flavors[ps].items())),
                "resourceUsage": {r: qfmt(v, FORMATS.get(r, "DecimalSI")) for r, v in sorted(tot.items())},
            }
            for ps, tot in a.per_podset.items()
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
        self.k._status(wl, status)
