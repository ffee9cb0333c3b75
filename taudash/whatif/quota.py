"""What if the quota changed? The pending queue run forward twice on in-process forks — as the cluster is,
and with the changed ClusterQueues, Cohorts, TauWorkspaces or TauTeams — and compared per queue and team:
admissions gained or lost within the horizon, wait deltas, preemptions (docs/whatif.md, "What if the quota
changed?"). Like `whatif FILE`, nothing is written to the cluster: both forks are ObjectDBs in this process.

The changed objects replace the specs of objects that exist in the fork (a TauWorkspace's quota is turned
into its ClusterQueue's by the simulated TauGrid controller, as on the cluster). Both runs use the same seed;
jobs that start in a different order draw different durations, so small wait deltas are noise.
"""

from __future__ import annotations

import copy
import logging
import statistics
import time
from collections.abc import Callable
from typing import Any

from taudash.engine.model.names import TEAM_LABEL
from taudash.rehearse.fork import Fork
from taudash.rehearse.run import QUIET
from taudash.sim.controllers.base import Obj, condition, is_true, meta
from taudash.sim.errors import ApiError
from taudash.sim.objects import ObjectDB
from taudash.sim.schema import SchemaSet
from taudash.sim.world import World

from .manifest import ManifestError

CHANGEABLE = ("ClusterQueue", "Cohort", "TauWorkspace", "TauTeam")


def parse_changes(docs: list[Any], where: str) -> list[Obj]:
    out = []
    for d in docs:
        if not isinstance(d, dict) or d.get("kind") not in CHANGEABLE:
            kind = d.get("kind") if isinstance(d, dict) else type(d).__name__
            raise ManifestError(f"{where}: {kind!r}: a quota change is a ClusterQueue, Cohort, TauWorkspace or "
                                "TauTeam")
        m = d.get("metadata")
        if not isinstance(m, dict) or not m.get("name") or not isinstance(d.get("spec"), dict):
            raise ManifestError(f"{where}: every {d['kind']} needs metadata.name and a spec")
        out.append(d)
    if not out:
        raise ManifestError(f"{where}: no ClusterQueue, Cohort, TauWorkspace or TauTeam in it")
    return out


def _world(objects: list[Obj], now: float, seed: int, system_ns: str) -> World:
    db = ObjectDB(seed=seed, schemas=SchemaSet.shared())
    db.seed(objects)
    w = World(db, seed=seed, start=now, scenario=QUIET, system_namespace=system_ns)
    w.writer.strict = False
    return w


def _apply(w: World, changes: list[Obj], system_ns: str) -> None:
    for ch in changes:
        kind, name = ch["kind"], ch["metadata"]["name"]
        ns = ch["metadata"].get("namespace") or (system_ns if kind in ("TauWorkspace", "TauTeam") else None)
        cur = w.db.get(kind, name, ns)
        if cur is None:
            raise ManifestError(f"{kind} {name} is not in the cluster: a quota change edits what exists")
        try:
            w.db.update({**cur, "spec": copy.deepcopy(ch["spec"])})
        except ApiError as exc:
            raise ManifestError(f"{kind} {name}: the API server would refuse it: {exc.message}") from None


def _pending(w: World) -> dict[str, dict[str, Any]]:
    """The Workloads waiting for quota (active, not finished), by UID."""
    out: dict[str, dict[str, Any]] = {}
    for wl in w.mirror.list("Workload"):
        if is_true(wl, "QuotaReserved") or is_true(wl, "Finished") or not (wl.get("spec") or {}).get("active", True):
            continue
        out[meta(wl)["uid"]] = {"namespace": meta(wl)["namespace"], "name": meta(wl)["name"],
                                "queue": (wl.get("spec") or {}).get("queueName"), "at": None, "cq": None}
    return out


def _play(w: World, pending: dict[str, dict[str, Any]], horizon: float, step: float) -> dict[str, Any]:
    """When each of `pending` reserved quota (seconds from the start, None: not within the horizon) and in which
    ClusterQueue; and the Workloads evicted on the way. The first pass has no time passing: what the change
    admits at once is admitted at 0 s."""
    pending = copy.deepcopy(pending)
    evicted: set[str] = set()
    start = w.clock.now()
    first = True
    while first or (w.clock.now() - start < horizon and any(p["at"] is None for p in pending.values())):
        w.step(0 if first else step)
        first = False
        for wl in w.mirror.list("Workload"):
            uid = meta(wl)["uid"]
            if (condition(wl, "Evicted") or {}).get("status") == "True":
                evicted.add(uid)
            p = pending.get(uid)
            if p is not None and p["at"] is None and is_true(wl, "QuotaReserved"):
                p["at"] = w.clock.now() - start
                p["cq"] = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue")
    return {"pending": pending, "evicted": evicted}


def _routes(w: World) -> tuple[dict[tuple[str, str], str], dict[str, str]]:
    lqs = {(meta(q)["namespace"], meta(q)["name"]): (q.get("spec") or {}).get("clusterQueue") or ""
           for q in w.mirror.list("LocalQueue")}
    teams = {meta(c)["name"]: (meta(c).get("labels") or {}).get(TEAM_LABEL) or ""
             for c in w.mirror.list("ClusterQueue")}
    return lqs, teams


def _reverted(w: World, changes: list[Obj], system_ns: str) -> list[str]:
    """The changes a controller put back during the run (a TauGrid-managed ClusterQueue's quota is the
    workspace's or the pool's, not an edit's): the prediction then says what the cluster would do — undo it."""
    out = []
    for ch in changes:
        kind, name = ch["kind"], ch["metadata"]["name"]
        ns = ch["metadata"].get("namespace") or (system_ns if kind in ("TauWorkspace", "TauTeam") else None)
        now = (w.db.get(kind, name, ns) or {}).get("spec") or {}
        if any(now.get(k) != v for k, v in ch["spec"].items()):
            out.append(f"{kind} {name}")
    return out


Inspect = Callable[[World, World], dict[str, Any]]


def quota_whatif(fork: Fork, changes: list[Obj], *, horizon: float, step: float, seed: int = 0,
                 system_namespace: str = "tau-system", inspect: Inspect | None = None) -> dict[str, Any]:
    """`inspect(before, after)`, when given, reads both forks at the end of the run (the fields it returns are
    added to the result): a catalog change is judged by its profiles' status as well as by the queue."""
    wall0 = time.perf_counter()
    log = logging.getLogger("taudash.sim.controllers.base")
    level = log.level
    log.setLevel(logging.ERROR)
    base_w = _world(copy.deepcopy(fork.objects), fork.now, seed, system_namespace)
    new_w = _world(copy.deepcopy(fork.objects), fork.now, seed, system_namespace)
    try:
        for w in (base_w, new_w):  # the controllers' first look at the copy is the baseline of both
            w.step(0)
        waiting = _pending(base_w)
        _apply(new_w, changes, system_namespace)
        base, new = _play(base_w, waiting, horizon, step), _play(new_w, waiting, horizon, step)
        lqs, teams = _routes(base_w)
        rows: dict[str, dict[str, Any]] = {}
        for uid, b in base["pending"].items():
            n = new["pending"].get(uid) or {"at": None}
            cq = b["cq"] or n.get("cq") or lqs.get((b["namespace"], b["queue"] or ""), "") or "-"
            r = rows.setdefault(cq, {"clusterQueue": cq, "team": teams.get(cq) or None, "pending": 0,
                                     "admittedBefore": 0, "admittedAfter": 0, "gained": [], "lost": [],
                                     "waitDeltas": [], "evictedBefore": 0, "evictedAfter": 0})
            r["pending"] += 1
            r["admittedBefore"] += b["at"] is not None
            r["admittedAfter"] += n["at"] is not None
            ref = f"{b['namespace']}/{b['name']}"
            if n["at"] is not None and b["at"] is None:
                r["gained"].append(ref)
            elif b["at"] is not None and n["at"] is None:
                r["lost"].append(ref)
            elif b["at"] is not None and n["at"] is not None:
                r["waitDeltas"].append(n["at"] - b["at"])
        for label, side in (("evictedBefore", base), ("evictedAfter", new)):
            for uid in side["evicted"]:
                wl = next((x for x in base_w.mirror.list("Workload") if meta(x)["uid"] == uid), None)
                if wl is None:
                    continue
                cq = lqs.get((meta(wl)["namespace"], (wl.get("spec") or {}).get("queueName") or ""), "-")
                if cq in rows:
                    rows[cq][label] += 1
        queues = []
        for r in sorted(rows.values(), key=lambda x: (x["team"] or "", x["clusterQueue"])):
            d = r.pop("waitDeltas")
            r["medianWaitDeltaSeconds"] = statistics.median(d) if d else None
            r["longerWaits"] = sum(1 for x in d if x > step)
            r["shorterWaits"] = sum(1 for x in d if x < -step)
            queues.append(r)
        teams_out: dict[str, dict[str, int]] = {}
        for r in queues:
            t = teams_out.setdefault(r["team"] or "-", {"pending": 0, "admittedBefore": 0, "admittedAfter": 0,
                                                         "longerWaits": 0, "shorterWaits": 0})
            for k in t:
                t[k] += r[k]
        extra = inspect(base_w, new_w) if inspect is not None else {}
        return {"changes": [f"{c['kind']} {c['metadata']['name']}" for c in changes], "horizonSeconds": horizon,
                "reverted": _reverted(new_w, changes, system_namespace), **extra,
                "queues": queues, "teams": [{"team": k, **v} for k, v in sorted(teams_out.items())],
                "simulation": {"wallSeconds": round(time.perf_counter() - wall0, 3)}}
    finally:
        log.setLevel(level)
        base_w.close()
        new_w.close()
