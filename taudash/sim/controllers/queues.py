"""ClusterQueue / LocalQueue / AdmissionCheck state as Kueue publishes it (Kueue's
clusterqueue, cohort, localqueue and admissioncheck types).

`cq_active` is also what the scheduler consults: an inactive queue admits nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache

from taudash.engine.model.base import LabelSelector
from taudash.engine.model.names import MULTIKUEUE_CONTROLLER as MULTIKUEUE
from taudash.engine.rules.selectors import SelectorError, selector_matches
from taudash.sim.controllers.admission import FR, ZERO
from taudash.sim.controllers.base import FORMATS, Obj, condition, deleting, meta, qfmt, qparse, with_condition

STOP_POLICIES = ("Hold", "HoldAndDrain")


def stop_policy(obj: Obj | None) -> str:
    return ((obj or {}).get("spec") or {}).get("stopPolicy") or "None"


def check_names(cq: Obj) -> list[str]:
    spec = cq.get("spec") or {}
    names = list(spec.get("admissionChecks") or [])
    names += [
        r["name"] for r in ((spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or ()) if r.get("name")
    ]
    return names


def cq_active(cq: Obj, mirror) -> tuple[bool, str, str]:
    """(active, reason, message): the first problem gives the reason, the message lists them all."""
    problems: list[tuple[str, str]] = []
    if stop_policy(cq) != "None":
        problems.append(("Stopped", "is stopped"))
    spec = cq.get("spec") or {}
    flavors = [fl["name"] for rg in spec.get("resourceGroups") or () for fl in rg.get("flavors") or ()]
    missing = [f for f in flavors if mirror.get("ResourceFlavor", f) is None]
    if missing:
        problems.append(("FlavorNotFound", f"references missing ResourceFlavor(s): [{' '.join(missing)}]"))
    checks = check_names(cq)
    absent = [c for c in checks if mirror.get("AdmissionCheck", c) is None]
    if absent:
        problems.append(("AdmissionCheckNotFound", f"references missing AdmissionCheck(s): [{' '.join(absent)}]"))
    inactive = [
        c
        for c in checks
        if c not in absent and (condition(mirror.get("AdmissionCheck", c), "Active") or {}).get("status") != "True"
    ]
    if inactive:
        problems.append(("AdmissionCheckInactive", f"references inactive AdmissionCheck(s): [{' '.join(inactive)}]"))
    mk = [
        c
        for c in checks
        if c not in absent and ((mirror.get("AdmissionCheck", c).get("spec") or {}).get("controllerName") == MULTIKUEUE)
    ]
    if len(mk) > 1:
        problems.append(
            (
                "MultipleMultiKueueAdmissionChecks",
                "Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue",
            )
        )
    named = {(mirror.get("ResourceFlavor", f).get("spec") or {}).get("topologyName") for f in flavors
             if f not in missing}
    topologies = sorted(t for t in named if t)
    gone = [t for t in topologies if mirror.get("Topology", t) is None]
    if gone:
        problems.append(("TopologyNotFound", f"references missing Topology(s): [{' '.join(gone)}]"))
    if deleting(cq):
        problems.append(("Terminating", "is terminating"))
    if not problems:
        return True, "Ready", "Can admit new workloads"
    return False, problems[0][0], "Can't admit new workloads: " + ", ".join(p[1] for p in problems)


@lru_cache(maxsize=256)
def _selector(raw: str) -> LabelSelector | None:
    data = json.loads(raw)
    return None if data is None else LabelSelector.model_validate(data)


def namespace_matches(cq: Obj, ns_labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics (the rules' matcher): null selects nothing, {} everything."""
    raw = (cq.get("spec") or {}).get("namespaceSelector")
    try:
        return selector_matches(_selector(json.dumps(raw, sort_keys=True)), ns_labels)
    except SelectorError:
        return False


# --- status documents -------------------------------------------------------------------------------


@dataclass
class Tally:
    pending: int = 0
    reserving: int = 0
    admitted: int = 0
    reserved: dict[FR, Decimal] = field(default_factory=dict)
    used: dict[FR, Decimal] = field(default_factory=dict)

    def add(self, usage: dict[FR, Decimal], admitted: bool) -> None:
        self.reserving += 1
        self.admitted += int(admitted)
        for fr, v in usage.items():
            self.reserved[fr] = self.reserved.get(fr, ZERO) + v
            if admitted:
                self.used[fr] = self.used.get(fr, ZERO) + v


def _flavor_entries(cq_spec: Obj, totals: dict[FR, Decimal], cohort: bool | None) -> list[Obj]:
    """One entry per flavor of the ClusterQueue, resources sorted. A ClusterQueue's entries carry
    `borrowed` ("0" outside a cohort, as Kueue writes it); a LocalQueue's (cohort None) have none."""
    out = []
    for rg in cq_spec.get("resourceGroups") or ():
        for fl in rg.get("flavors") or ():
            resources = []
            nominal = {r["name"]: r.get("nominalQuota", "0") for r in fl.get("resources") or ()}
            for r in sorted(nominal):
                total = totals.get((fl["name"], r), ZERO)
                entry = {"name": r, "total": qfmt(total, FORMATS.get(r, "DecimalSI"))}
                if cohort is not None:  # without a cohort nothing is borrowed: "0"
                    borrowed = max(ZERO, total - qparse(nominal[r])[0]) if cohort else ZERO
                    entry["borrowed"] = qfmt(borrowed, FORMATS.get(r, "DecimalSI"))
                resources.append(entry)
            out.append({"name": fl["name"], "resources": resources})
    return out


def cq_status(cq: Obj, tally: Tally, active: tuple[bool, str, str], now: str) -> Obj:
    spec = cq.get("spec") or {}
    cohort = bool(spec.get("cohortName") or spec.get("cohort"))
    status = cq.get("status") or {}
    ok, reason, message = active
    return {
        "pendingWorkloads": tally.pending,
        "reservingWorkloads": tally.reserving,
        "admittedWorkloads": tally.admitted,
        "flavorsReservation": _flavor_entries(spec, tally.reserved, cohort),
        "flavorsUsage": _flavor_entries(spec, tally.used, cohort),
        "conditions": with_condition(
            status.get("conditions"),
            "Active",
            "True" if ok else "False",
            reason,
            message,
            now,
            meta(cq).get("generation"),
        ),
    }


def lq_status(lq: Obj, cq: Obj | None, cq_ok: bool, tally: Tally, now: str) -> Obj:
    if stop_policy(lq) != "None":
        active = ("False", "Stopped", "Can't submit new workloads to localQueue: is stopped")
    elif cq is None:
        active = ("False", "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")
    elif not cq_ok:
        active = ("False", "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
    else:
        active = ("True", "Ready", "Can submit new workloads to localQueue")
    spec = (cq or {}).get("spec") or {}
    return {
        "pendingWorkloads": tally.pending,
        "reservingWorkloads": tally.reserving,
        "admittedWorkloads": tally.admitted,
        "flavorsReservation": _flavor_entries(spec, tally.reserved, None),
        "flavorsUsage": _flavor_entries(spec, tally.used, None),
        "conditions": with_condition(
            (lq.get("status") or {}).get("conditions"), "Active", *active, now, meta(lq).get("generation")
        ),
    }


def mk_workers(ac: Obj, mirror) -> tuple[Obj | None, list[str], list[str]]:
    """(MultiKueueConfig or None, active workers, inactive workers) of a MultiKueue AdmissionCheck."""
    params = (ac.get("spec") or {}).get("parameters") or {}
    config = (
        mirror.get("MultiKueueConfig", params.get("name", "")) if params.get("kind") == "MultiKueueConfig" else None
    )
    if config is None:
        return None, [], []
    active: list[str] = []
    inactive: list[str] = []
    for name in (config.get("spec") or {}).get("clusters") or ():
        mc = mirror.get("MultiKueueCluster", name)
        (active if mc is not None and (condition(mc, "Active") or {}).get("status") == "True" else inactive).append(
            name
        )
    return config, active, inactive


def ac_active(ac: Obj, mirror) -> tuple[str, str, str] | None:
    """The Active condition Kueue's MultiKueue controller publishes; None for other controllers."""
    if (ac.get("spec") or {}).get("controllerName") != MULTIKUEUE:
        return None
    config, active, inactive = mk_workers(ac, mirror)
    if config is None:
        return "False", "BadConfig", "Cannot load the AdmissionChecks parameters: MultiKueueConfig not found"
    if not active:
        return "False", "NoUsableClusters", f"Inactive clusters: [{' '.join(inactive)}]"
    if inactive:
        return "True", "SomeActiveClusters", f"Inactive clusters: [{' '.join(inactive)}]"
    return "True", "Active", "The admission check is active"


def differs(current: Obj | None, desired: Obj) -> bool:
    current = current or {}
    return any(current.get(k) != v for k, v in desired.items())
