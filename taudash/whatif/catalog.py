"""What if the workload-profile catalog changed? The TauCluster's `spec.workloadProfiles` replaced in an
in-process fork, the simulated TauGrid controller left to resolve it, and both forks compared: which profiles
would be Ready (and the first condition that fails for those that would not), which are added, removed or
changed, how many submitted jobs carry each removed or changed profile, and the pending queue run forward both
ways as `whatif --quota` runs it (docs/whatif.md, "What if the catalog changed?"). Nothing is written.

The catalog file is the one `workflow start catalog` applies (engine/workflows/catalog.py `load_catalog`: a
TauCluster, the chart's `tauCluster.workloadProfiles`, `workloadProfiles: [...]` or a list of profiles). Helm
lists replace rather than merge, so the file is the whole catalog, never a patch.
"""

from __future__ import annotations

from typing import Any

from taudash.engine.model.names import WORKLOAD_PROFILE_ANNOTATION
from taudash.engine.rules.profiles import CLUSTER_NAME, CONDITION_ORDER
from taudash.engine.workflows.catalog import profile_changes
from taudash.rehearse.fork import Fork
from taudash.sim.controllers.base import Obj, is_true, meta
from taudash.sim.world import World

from .manifest import ManifestError
from .quota import quota_whatif

JOB_KINDS = ("Job", "RayJob", "JobSet", "PyTorchJob", "MPIJob", "Deployment", "Workload")


def check_names(profiles: list[Any], where: str) -> list[dict[str, Any]]:
    """The profiles, each a mapping with a name of its own (the comparison is by name), or ManifestError."""
    seen: set[str] = set()
    for i, p in enumerate(profiles):
        if not isinstance(p, dict) or not isinstance(p.get("name"), str) or not p["name"]:
            raise ManifestError(f"{where}: profile {i + 1} has no name")
        if p["name"] in seen:
            raise ManifestError(f"{where}: profile {p['name']!r} is declared twice")
        seen.add(p["name"])
    return profiles


def catalog_whatif(fork: Fork, profiles: list[dict[str, Any]], *, horizon: float, step: float, seed: int = 0,
                   system_namespace: str = "tau-system") -> dict[str, Any]:
    tc = next((o for o in fork.objects if o.get("kind") == "TauCluster" and meta(o).get("name") == CLUSTER_NAME),
              None)
    if tc is None:
        raise ManifestError(f"the cluster has no TauCluster {CLUSTER_NAME!r} to change the catalog of")
    change = {"kind": "TauCluster", "metadata": {"name": CLUSTER_NAME},
              "spec": {**(tc.get("spec") or {}), "workloadProfiles": profiles}}
    stamped = _stamped(fork.objects)
    return quota_whatif(fork, [change], horizon=horizon, step=step, seed=seed, system_namespace=system_namespace,
                        inspect=lambda before, after: _compare_profiles(before, after, stamped))


def _compare_profiles(before: World, after: World, stamped: dict[str, dict[str, int]]) -> dict[str, Any]:
    b, a = _catalog(before), _catalog(after)
    changes = profile_changes(list(b["declared"].values()), list(a["declared"].values()))
    rows = []
    for name in sorted(set(b["declared"]) | set(a["declared"])):
        change, fields = changes.get(name, ("same", []))
        rows.append({"name": name, "change": change, "fields": [f for f, _old, _new in fields],
                     "before": b["status"].get(name), "after": a["status"].get(name),
                     "submitted": stamped.get(name, {"pending": 0, "admitted": 0})})
    return {"profiles": rows, "catalog": {"before": b["summary"], "after": a["summary"]}}


def _catalog(w: World) -> dict[str, Any]:
    """The declared profiles, each one's resolved readiness, and the set's, from a fork's TauCluster — `None`
    readiness when the controller has not resolved the current generation (never assumed Ready)."""
    tc = w.db.get("TauCluster", CLUSTER_NAME, None) or {}
    declared = {str(p.get("name")): p for p in (tc.get("spec") or {}).get("workloadProfiles") or ()
                if isinstance(p, dict)}
    st = (tc.get("status") or {}).get("workloadProfiles") or {}
    current = st.get("observedGeneration") == meta(tc).get("generation")
    status: dict[str, Any] = {}
    for p in st.get("profiles") or ():
        if str(p.get("name")) in declared:
            status[str(p["name"])] = _readiness(p) if current else {"ready": None, "reason": "NotObserved",
                                                                 "message": "the controller has not resolved it"}
    for name in declared:
        status.setdefault(name, {"ready": None, "reason": "NotObserved", "message": "the controller has not "
                                 "published it"})
    set_ready = next((c for c in (tc.get("status") or {}).get("conditions") or ()
                      if c.get("type") == "WorkloadProfilesReady"), None)
    summary = {"profiles": len(declared), "ready": sum(1 for s in status.values() if s["ready"]),
               "setReady": (set_ready or {}).get("status") == "True" if current and set_ready else None,
               "profileSetHash": st.get("profileSetHash") or "" if current else ""}
    return {"declared": declared, "status": status, "summary": summary}


def _readiness(p: dict[str, Any]) -> dict[str, Any]:
    conds = {c.get("type"): c for c in p.get("conditions") or ()}
    for t in CONDITION_ORDER:
        c = conds.get(t)
        if c is None or c.get("status") != "True":
            return {"ready": False, "reason": (c or {}).get("reason") or f"{t}Missing",
                    "message": (c or {}).get("message") or f"no {t} condition"}
    return {"ready": True, "reason": "", "message": ""}


def _stamped(objects: list[Obj]) -> dict[str, dict[str, int]]:
    """Per profile, the jobs stamped with it as the cluster stands (the fork's copy, before any simulated
    time): waiting for quota, or admitted (their Workload holds quota). A profile removed or changed leaves
    them on their queue; what changes is what new submissions get."""
    admitted: set[str] = set()
    for wl in objects:
        if wl.get("kind") == "Workload" and is_true(wl, "QuotaReserved") and not is_true(wl, "Finished"):
            admitted.update(str(r.get("uid")) for r in meta(wl).get("ownerReferences") or ())
            admitted.add(str(meta(wl).get("uid")))
    out: dict[str, dict[str, int]] = {}
    for obj in objects:
        if obj.get("kind") not in JOB_KINDS:
            continue
        m = meta(obj)
        name = (m.get("annotations") or {}).get(WORKLOAD_PROFILE_ANNOTATION)
        if not name or _finished(obj):
            continue
        row = out.setdefault(name, {"pending": 0, "admitted": 0})
        row["admitted" if str(m.get("uid")) in admitted else "pending"] += 1
    return out


def _finished(obj: Obj) -> bool:
    return any(c.get("type") in ("Complete", "Failed", "Finished") and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or ())
