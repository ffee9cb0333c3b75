"""What if I submit this? The object is added to an in-process simulated fork of the cluster and
admission is run forward in compressed time (docs/whatif.md).

The fork is a `rehearse.Fork` (a consistent copy of what taudash read) seeded into an ObjectDB and a
quiet World (no synthetic arrivals, flaps or cordons: only the jobs already there finish, at drawn
times). No API server is started and no client exists: nothing can reach the real cluster. What the
simulated Kueue does to the object is the prediction: the flavors it assigns, whether it reserves quota
at once, its position while it waits, the Workloads it preempts (their Preempted condition names the
preemptor's UID) and how much it borrows from its cohort when admitted.
"""

from __future__ import annotations

import copy
import logging
import time
from datetime import UTC, datetime
from typing import Any

from taudash.engine.model.names import PROFILE_LABEL
from taudash.engine.rules.base import RuleConfig, RuleContext
from taudash.engine.rules.eta import admission_times, estimate_wait, human
from taudash.engine.rules.queue_order import cluster_queue_orders
from taudash.engine.store import AccessState
from taudash.rehearse.fork import Fork
from taudash.rehearse.run import QUIET
from taudash.sim.controllers.admission import Cluster
from taudash.sim.controllers.base import Obj, condition, controller_owner, is_true, meta
from taudash.sim.controllers.jobs import requests_of
from taudash.sim.errors import ApiError
from taudash.sim.objects import ObjectDB
from taudash.sim.schema import SchemaSet
from taudash.sim.world import World

from . import checks
from .borrow import borrows_of
from .manifest import Manifest, ManifestError

DEFAULT_HORIZON = 6 * 3600.0  # simulated seconds the fork is run forward at most
DEFAULT_STEP = 30.0  # simulated seconds per world step: the resolution of the simulated admission time
NEEDED = ("Workload", "LocalQueue", "ClusterQueue", "ResourceFlavor", "Cohort")  # what admission reads
SETTLE_STEPS = 4  # steps with no time passing: Kueue makes the Workload, then schedules it
STARTS_NOW_STEPS = 4  # a preemptor waits a step or two for its victims' quota: still "now"


def _index(objects: list[Obj]) -> dict[str, dict[tuple[str, str], Obj]]:
    out: dict[str, dict[tuple[str, str], Obj]] = {}
    for o in objects:
        m = o.get("metadata") or {}
        out.setdefault(o.get("kind", ""), {})[(m.get("namespace") or "", m.get("name") or "")] = o
    return out


def predict(fork: Fork, manifest: Manifest, *, config: RuleConfig | None = None, horizon: float = DEFAULT_HORIZON,
            step: float = DEFAULT_STEP, seed: int = 0) -> dict[str, Any]:
    """The prediction body (`prediction` of the WhatIfPrediction document) for `manifest` on `fork`."""
    config = config or RuleConfig()
    wall0 = time.perf_counter()
    obj = copy.deepcopy(manifest.obj)
    now = datetime.fromtimestamp(fork.now, UTC)
    db = ObjectDB(seed=seed, schemas=SchemaSet.shared())
    db.seed(fork.objects)
    world = World(db, seed=seed, start=fork.now, scenario=QUIET, system_namespace=config.system_namespace)
    world.writer.strict = False  # partial copies (slim kinds) may make a derived object incomplete
    logger = logging.getLogger("taudash.sim.controllers.base")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        # TauGrid's state as it was read (the simulated controllers' first pass may re-resolve profiles)
        store = world.mirror.store
        for kind, state in fork.access.items():
            store.set_access(kind, AccessState(state), "as in the forked cluster")
        ws = checks.workspace_of(store, manifest.namespace, config.system_namespace)
        profile, refused = checks.profile_for(store, manifest, (ws.team if ws is not None else None) or "")
        world.step(0)  # the controllers' first look at the copy belongs to the baseline
        _admissible_to_the_api(world, obj, manifest)
        out = _blank(manifest)
        unread = [f"{k} {fork.access[k]}" for k in NEEDED if fork.access.get(k) not in (None, "Synced", "Absent")]
        if unread:  # a queue read in part would give a confident wrong answer: none at all instead
            out["admissible"] = None
            out["reason"] = {"code": "Unknown", "message": f"cannot predict: {', '.join(unread)} in the cluster"}
            return _timed(out, wall0, world, fork)
        raws = _index([o for k in ("LocalQueue", "ClusterQueue", "Cohort", "ResourceFlavor", "Namespace",
                                   "WorkloadPriorityClass") for o in world.mirror.list(k)])
        out["profile"] = profile.to_dict() if profile is not None else None
        if profile is not None and profile.name and not refused:
            _stamp(obj, profile)
        lq, cq, why = checks.route(obj, raws)
        out["localQueue"], out["clusterQueue"] = lq, cq
        why = refused or checks.workspace_not_ready(ws) or why
        try:
            wl_shape = checks.as_workload(obj, raws)
            requests_of(wl_shape)
        except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError) as exc:
            raise ManifestError(f"{manifest.ref()}: cannot read its pod sets: {exc}") from None
        if why is None and cq is not None:
            why = checks.never_fits(wl_shape, cq, raws, now)
        if why is not None:
            out["admissible"], out["reason"] = False, why.to_dict()
            return _timed(out, wall0, world, fork)
        _run(world, obj, manifest, out, horizon, step, now, config)
        return _timed(out, wall0, world, fork)
    finally:
        logger.setLevel(level)
        world.close()


def _admissible_to_the_api(world: World, obj: Obj, manifest: Manifest) -> None:
    """The API server's own checks first (schema, names): what it would refuse is a bad manifest."""
    try:
        world.db.create(obj, dry_run=True)
    except ApiError as exc:
        raise ManifestError(f"{manifest.ref()}: the API server would refuse it: {exc.message}") from None


def _blank(m: Manifest) -> dict[str, Any]:
    return {"object": {"kind": m.kind, "namespace": m.namespace, "name": m.name}, "admissible": True,
            "reason": None, "localQueue": None, "clusterQueue": None, "profile": None, "flavors": [],
            "startsNow": False, "position": None, "eta": None, "preempts": [], "borrows": [], "waiting": None,
            "workloads": []}


def _stamp(obj: Obj, profile: checks.Profile) -> None:
    m = obj["metadata"]
    m.setdefault("labels", {})[PROFILE_LABEL] = profile.name
    m.setdefault("annotations", {}).update(profile.annotations)
    if profile.queue and not checks.queue_of(obj):
        checks.set_queue(obj, profile.queue)


def _timed(out: dict[str, Any], wall0: float, world: World, fork: Fork) -> dict[str, Any]:
    out["simulation"] = {"simulatedSeconds": round(world.clock.now() - fork.now, 3),
                         "wallSeconds": round(time.perf_counter() - wall0, 3), "worldSteps": world.steps}
    return out


def _mine(world: World, created: Obj) -> list[Obj]:
    if created["kind"] == "Workload":
        wl = world.mirror.get("Workload", meta(created)["name"], meta(created)["namespace"])
        return [wl] if wl is not None else []
    uid = meta(created)["uid"]
    return sorted((w for w in world.mirror.list("Workload", meta(created)["namespace"])
                   if (controller_owner(w) or {}).get("uid") == uid), key=lambda w: meta(w)["name"])


def _finished_uids(world: World) -> set[str]:
    return {meta(w).get("uid") or "" for w in world.mirror.list("Workload") if is_true(w, "Finished")}


def _run(world: World, obj: Obj, manifest: Manifest, out: dict[str, Any], horizon: float, step: float,
         now: datetime, config: RuleConfig) -> None:
    try:
        created = world.db.create(obj)
    except ApiError as exc:
        raise ManifestError(f"{manifest.ref()}: the API server would refuse it: {exc.message}") from None
    finished_before = _finished_uids(world)
    admissions = admission_times(world.mirror.store)  # the evidence before the object exists
    for _ in range(SETTLE_STEPS):
        world.step(0)
    mine = _mine(world, created)
    out["workloads"] = [meta(w)["name"] for w in mine]
    if not mine:
        out["admissible"] = False
        out["reason"] = checks.Inadmissible(checks.NOT_MANAGED, "the simulated Kueue made no Workload for it").to_dict()
        return
    uids = {meta(w)["uid"] for w in mine}
    pending = [w for w in mine if not is_true(w, "QuotaReserved")]
    if pending:
        out["position"] = _position(world, pending[0], config)
    start = world.clock.now()
    while pending and world.clock.now() - start < horizon:
        world.step(step)
        mine = _mine(world, created)
        pending = [w for w in mine if not is_true(w, "QuotaReserved")]
    preempts = _preempted_by(world, uids)
    out["preempts"] = preempts
    victims = {p["uid"] for p in preempts}
    freed = _finished_uids(world) - finished_before - victims - uids
    if pending:
        qr = condition(pending[0], "QuotaReserved") or {}
        out["waiting"] = {"reason": qr.get("reason") or "", "message": qr.get("message") or "",
                          "horizonSeconds": horizon}
    out["flavors"] = _flavors(mine)  # of those admitted (every one, unless the horizon ran out)
    if not pending:
        # now: nothing else had to finish first (its own preemptions aside), and within a few steps
        out["startsNow"] = not freed and world.clock.now() - start <= step * STARTS_NOW_STEPS
        out["borrows"] = borrows_of(_cluster(world), out["clusterQueue"], mine)
    admitted_after = None if pending else round(world.clock.now() - now.timestamp(), 3)
    out["eta"] = _eta(out, admissions, now, admitted_after, horizon)


def _position(world: World, wl: Obj, config: RuleConfig) -> dict[str, Any] | None:
    """Its 1-based place in Kueue's queue order (engine/rules/queue_order.py, what the visibility API gives)."""
    ctx = RuleContext(store=world.mirror.store, now=world.clock.datetime(), config=config)
    for order in (cluster_queue_orders(ctx) or {}).values():
        e = order.entry(meta(wl)["namespace"], meta(wl)["name"])
        if e is not None:
            return {"clusterQueue": e.position_in_cluster_queue + 1, "localQueue": e.position_in_local_queue + 1,
                    "aheadInClusterQueue": e.position_in_cluster_queue, "of": len(order.entries)}
    return None


def _preempted_by(world: World, uids: set[str]) -> list[dict[str, Any]]:
    out = []
    for w in world.mirror.list("Workload"):
        c = condition(w, "Preempted") or {}
        msg = c.get("message") or ""
        if c.get("status") != "True" and not msg.startswith("Previously:"):
            continue
        if not any(f"(UID: {u}," in msg for u in uids):
            continue
        owner = controller_owner(w) or {}
        was = ((w.get("status") or {}).get("admission") or {}).get("clusterQueue")
        out.append({"namespace": meta(w)["namespace"], "name": meta(w)["name"], "uid": meta(w).get("uid") or "",
                    "owner": {"kind": owner.get("kind"), "name": owner.get("name")} if owner else None,
                    "reason": c.get("reason") or "", "clusterQueue": was})
    return sorted(out, key=lambda p: (p["namespace"], p["name"]))


def _flavors(mine: list[Obj]) -> list[dict[str, Any]]:
    out = []
    for w in mine:
        for psa in ((w.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ():
            out.append({"workload": meta(w)["name"], "podSet": psa.get("name"), "count": psa.get("count"),
                        "flavors": dict(psa.get("flavors") or {})})
    return out


def _cluster(world: World) -> Cluster:
    holders = []
    for w in world.mirror.list("Workload"):
        cqn = ((w.get("status") or {}).get("admission") or {}).get("clusterQueue")
        if cqn and is_true(w, "QuotaReserved") and not is_true(w, "Finished"):
            holders.append((w, cqn))
    return Cluster(world.mirror.list("ClusterQueue"), world.mirror.list("Cohort"), holders, world.clock.datetime())


def _eta(out: dict[str, Any], admissions: dict, now: datetime, admitted_after: float | None,
         horizon: float) -> dict[str, Any]:
    """The back-tested estimator's interval (engine/rules/eta.py) beside the fork's own admission time."""
    fork = {"simulatedAdmissionSeconds": admitted_after,
            "text": ("within the horizon: not admitted in " + human(horizon)) if admitted_after is None
            else human(admitted_after)}
    if out["startsNow"]:
        return {"estimate": None, "fork": fork, "text": "starts now"}
    pos = out.get("position")
    est = estimate_wait(pos["aheadInClusterQueue"] if pos else None, admissions.get(out["clusterQueue"] or "", []), now)
    estimate = {"known": est.known, "low": est.low, "median": est.median, "high": est.high,
                "evidence": est.evidence, "why": est.why or None, "text": est.text()}
    return {"estimate": estimate, "fork": fork, "text": f"{est.text()}; fork: {fork['text']}"}
