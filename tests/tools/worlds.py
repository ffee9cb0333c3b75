"""Reading a simulated World (taudash.sim.world) in tests: what its ObjectDB holds, derived the way the dashboard
would. Building worlds is factories.sim_world / factories.small_world."""

from __future__ import annotations

from taudash.engine.incremental import derive
from taudash.engine.model.quantity import Quantity
from taudash.engine.sources.snapshot import load_documents

GPU = "nvidia.com/gpu"


def db_view(w):
    """engine.incremental.derive over a fresh store of everything the ObjectDB holds (not the world's mirror)."""
    objs = [o for r in w.db.registry.all for o in w.db.list(r)]
    return derive(load_documents([(None, o) for o in objs]).store, w.clock.datetime())


def conditions(obj: dict) -> dict[str, dict]:
    """An object's status conditions by type."""
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or ()}


def root_gpus(w, flavor: str, cohort: str = "tau-team-research") -> Quantity:
    """The GPU nominal quota of `flavor` in the team's root Cohort."""
    co = w.db.get("Cohort", cohort)
    for fl in co["spec"]["resourceGroups"][0]["flavors"]:
        if fl["name"] == flavor:
            return Quantity.parse(next(r["nominalQuota"] for r in fl["resources"] if r["name"] == GPU))
    raise AssertionError(flavor)
