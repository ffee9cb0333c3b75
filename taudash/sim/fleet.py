"""A simulated fleet: one MultiKueue manager and N workers, each its own SimServer (issue 21).

    async with SimFleet(workers=2) as fleet:
        fleet.kubeconfig            # one kubeconfig: taudash-manager, taudash-worker-1, …
        fleet.manager.db            # the manager's cluster state (the demo by default)
        fleet.worker("taudash-worker-1").faults
        await fleet.down("taudash-worker-1")   # stop that worker's API server

Every cluster has its own API server, port, token, certificate and cluster UID. The fleet-level
MultiKueue controller (`dispatch`) talks to every cluster's ObjectDB in-process, as Kueue's
manager talks to its workers through their kubeconfigs. What it simplifies is in
docs/simulator.md ("A simulated fleet").
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from taudash.engine.model.names import MULTIKUEUE_CONTROLLER as MULTIKUEUE
from taudash.engine.model.quantity import Quantity
from taudash.sim.kubeconfig import kubeconfig_dict
from taudash.sim.server import _DEFAULT, SimServer

MANAGER = "taudash-manager"
WORKER = "taudash-worker-{}"
WORKER_FLAVOR = "gpu-worker"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
Obj = dict[str, Any]


def _meta(o: Obj) -> Obj:
    return o.get("metadata") or {}


def _is_true(o: Obj, type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in (o.get("status") or {}).get("conditions") or ())


def _with(conds: list | None, type_: str, status: str, reason: str, message: str, now: str) -> list:
    out = [c for c in conds or () if c.get("type") != type_]
    old = next((c for c in conds or () if c.get("type") == type_), None)
    at = old["lastTransitionTime"] if old and old.get("status") == status and old.get("lastTransitionTime") else now
    out.append({"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": at})
    return out


def _requests(wl: Obj) -> dict[str, Quantity]:
    """Total requests of a Workload (count × the first container requests of each pod set, plus pods)."""
    total: dict[str, Quantity] = {}
    for ps in (wl.get("spec") or {}).get("podSets") or ():
        count = int(ps.get("count") or 1)
        spec = (ps.get("template") or {}).get("spec") or {}
        for c in spec.get("containers") or ():
            for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
                total[k] = total.get(k, Quantity.parse("0")) + Quantity.parse(str(v)) * count
        total["pods"] = total.get("pods", Quantity.parse("0")) + Quantity.parse(str(count))
    return total


class SimFleet:
    """A manager (seeded from `snapshot`, default the demo) and `workers` small worker clusters.

    The manager's MultiKueueClusters are mapped onto the workers in order (`mk_names`); workers
    beyond them get a MultiKueueCluster named after their context, added to every MultiKueueConfig.
    `gpus`: each worker ClusterQueue's nvidia.com/gpu nominal quota.
    """

    def __init__(self, workers: int = 2, *, snapshot: str | Path | None | object = _DEFAULT,
                 kubeconfig: str | Path | None = None, gpus: int = 16, interval: float | None = 0.5,
                 bookmark_interval: float = 5.0, kueue_crds: Any = _DEFAULT) -> None:
        if workers < 1:
            raise ValueError("a fleet has at least one worker")
        extra: dict[str, Any] = {"bookmark_interval": bookmark_interval}
        if kueue_crds is not _DEFAULT:
            extra["kueue_crds"] = kueue_crds
        self.manager = SimServer(snapshot, context=MANAGER, **extra)
        self.workers = [SimServer(None, context=WORKER.format(i + 1), **extra) for i in range(workers)]
        self.gpus = gpus
        self.interval = interval
        self._kubeconfig_arg = Path(kubeconfig) if kubeconfig else None
        self.kubeconfig: Path | None = None
        self.config: Path | None = None  # a taudash config file mapping the MultiKueueClusters to contexts
        self.mk_names: dict[str, SimServer] = {}  # MultiKueueCluster name → worker
        self.up: dict[str, bool] = {}
        self.errors: list[BaseException] = []
        self._task: asyncio.Task | None = None

    @property
    def contexts(self) -> list[str]:
        return [self.manager.context, *(w.context for w in self.workers)]

    def worker(self, context: str) -> SimServer:
        return next(w for w in self.workers if w.context == context)

    def mk_name_of(self, worker: SimServer) -> str:
        return next(n for n, w in self.mk_names.items() if w is worker)

    # --- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> SimFleet:
        await self.manager.start()
        try:
            self._map_workers()
            for w in self.workers:
                w.db.seed(self._worker_seed())
                await w.start()
                self.up[w.context] = True
            self.kubeconfig = self._write_kubeconfig()
            self.config = self._write_config()
        except BaseException:
            await self.stop()
            raise
        if self.interval is not None:  # None: no background controller; the caller runs dispatch()
            self._task = asyncio.create_task(self._run(), name="sim-fleet-multikueue")
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        for s in (*self.workers, self.manager):
            await s.stop()
        if self.kubeconfig is not None and self._kubeconfig_arg is None:
            self.kubeconfig.unlink(missing_ok=True)
        if self.config is not None:
            self.config.unlink(missing_ok=True)

    async def __aenter__(self) -> SimFleet:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def down(self, context: str) -> None:
        """Stop one worker's API server (its clients see connection refused; dispatch skips it)."""
        w = self.worker(context)
        self.up[context] = False
        await w.api.stop()

    async def restore(self, context: str) -> None:
        """Serve a stopped worker again on its port."""
        w = self.worker(context)
        w.api._requested_port = w.api.port or 0
        await w.api.start()
        self.up[context] = True

    # --- seeding ---------------------------------------------------------------------------------
    def _map_workers(self) -> None:
        db = self.manager.db
        names: list[str] = []
        for cfg in db.list("multikueueconfigs"):
            names += [n for n in (cfg.get("spec") or {}).get("clusters") or () if n not in names]
        for i, w in enumerate(self.workers):
            if i < len(names):
                self.mk_names[names[i]] = w
                continue
            self.mk_names[w.context] = w
            db.seed([{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
                      "metadata": {"name": w.context},
                      "spec": {"clusterSource": {"kubeConfig": {"location": f"{w.context}-kubeconfig",
                                                                "locationType": "Secret"}}}}])
            for cfg in db.list("multikueueconfigs"):
                cfg["spec"]["clusters"] = [*(cfg["spec"].get("clusters") or ()), w.context]
                db.seed([cfg])

    def _mk_queues(self) -> tuple[list[str], list[tuple[str, str]]]:
        """(ClusterQueues using a MultiKueue check, their LocalQueues (namespace, name)) on the manager."""
        db = self.manager.db
        checks = {_meta(a)["name"] for a in db.list("admissionchecks")
                  if (a.get("spec") or {}).get("controllerName") == MULTIKUEUE}
        cqs = [_meta(cq)["name"] for cq in db.list("clusterqueues") if set(_check_names(cq)) & checks]
        lqs = [(_meta(lq)["namespace"], _meta(lq)["name"]) for lq in db.list("localqueues")
               if (lq.get("spec") or {}).get("clusterQueue") in cqs]
        return cqs, lqs

    def _worker_seed(self) -> list[Obj]:
        """A small worker: one flavor, the manager's MultiKueue ClusterQueues and LocalQueues (same names)."""
        cqs, lqs = self._mk_queues()
        kv = "kueue.x-k8s.io/v1beta2"
        out: list[Obj] = [{"apiVersion": kv, "kind": "ResourceFlavor", "metadata": {"name": WORKER_FLAVOR}, "spec": {}}]
        for name in cqs:
            out.append({"apiVersion": kv, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
                "namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO", "stopPolicy": "None",
                "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu", "pods"], "flavors": [
                    {"name": WORKER_FLAVOR, "resources": [
                        {"name": "cpu", "nominalQuota": str(self.gpus * 12)},
                        {"name": "memory", "nominalQuota": f"{self.gpus * 200}Gi"},
                        {"name": "nvidia.com/gpu", "nominalQuota": str(self.gpus)},
                        {"name": "pods", "nominalQuota": str(self.gpus)}]}]}]},
                "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Ready",
                                           "message": "Can admit new workloads",
                                           "lastTransitionTime": "2026-11-10T09:00:00Z"}]}})
        for ns in sorted({ns for ns, _ in lqs}):
            out.append({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}})
        mdb = self.manager.db
        for ns, name in lqs:
            lq = mdb.get("localqueues", name, ns) or {}
            out.append({"apiVersion": kv, "kind": "LocalQueue", "metadata": {"name": name, "namespace": ns},
                        "spec": {"clusterQueue": (lq.get("spec") or {}).get("clusterQueue"), "stopPolicy": "None"}})
        return out

    def _write_kubeconfig(self) -> Path:
        merged: Obj = {"apiVersion": "v1", "kind": "Config", "preferences": {}, "clusters": [], "users": [],
                       "contexts": [], "current-context": MANAGER}
        for s in (self.manager, *self.workers):
            one = kubeconfig_dict(s.api.url, s.api.token, s.context, None, s.cert.pem() if s.cert else None)
            for key in ("clusters", "users", "contexts"):
                merged[key] += one[key]
        target = self._kubeconfig_arg or Path(str(self.manager.kubeconfig)).with_name("fleet-kubeconfig")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.touch(mode=0o600)
        tmp.write_text(yaml.safe_dump(merged, sort_keys=False), encoding="utf-8")
        tmp.replace(target)
        return target

    @property
    def mapping(self) -> dict[str, str]:
        """MultiKueueCluster name → the worker's context (what `fleet.multiKueueClusters` says)."""
        return {n: w.context for n, w in self.mk_names.items()}

    def _write_config(self) -> Path:
        """A taudash config file (TAUDASH_CONFIG) with the fleet's MultiKueueCluster → context mapping."""
        assert self.kubeconfig is not None
        target = self.kubeconfig.with_name(f"{self.kubeconfig.name}.taudash.yaml")
        target.write_text(yaml.safe_dump({"fleet": {"multiKueueClusters": self.mapping}}, sort_keys=False),
                          encoding="utf-8")
        return target

    # --- the MultiKueue controller ---------------------------------------------------------------
    async def _run(self) -> None:
        while True:
            try:
                self.dispatch()
            except Exception as exc:  # kept for tests; the fleet keeps serving
                self.errors.append(exc)
            await asyncio.sleep(self.interval or 0.5)

    def dispatch(self) -> None:
        """One pass of the MultiKueue admission check controller over the fleet."""
        m = self.manager.db
        now = _now()
        self._publish_clusters(now)
        checks = {_meta(a)["name"]: a for a in m.list("admissionchecks")
                  if (a.get("spec") or {}).get("controllerName") == MULTIKUEUE}
        for wl in m.list("workloads"):
            st = wl.get("status") or {}
            if _meta(wl).get("deletionTimestamp") or _is_true(wl, "Finished") or not _is_true(wl, "QuotaReserved"):
                continue
            mine = [c for c in st.get("admissionChecks") or () if c.get("name") in checks]
            if not mine:
                continue
            if st.get("clusterName"):
                self._keep_mirror(wl, st["clusterName"], now)
                continue
            self._dispatch_one(wl, mine[0]["name"], checks[mine[0]["name"]], now)
        for w in self.workers:
            if self.up.get(w.context):
                self._publish_queues(w, now)

    def _publish_clusters(self, now: str) -> None:
        """MultiKueueCluster Active mirrors whether the manager can reach each worker."""
        m = self.manager.db
        for name, w in self.mk_names.items():
            mc = m.get("multikueueclusters", name)
            if mc is None:
                continue
            up = self.up.get(w.context, False)
            want = ("True", "Active", "Connected") if up else (
                "False", "ClientConnectionFailed", f"Get \"{w.api.url}/api\": connect: connection refused")
            conds = (mc.get("status") or {}).get("conditions") or []
            cur: dict[str, Any] = next((c for c in conds if c.get("type") == "Active"), {})
            if (cur.get("status"), cur.get("reason")) != want[:2]:
                m.update_status({**mc, "status": {"conditions": _with(conds, "Active", *want, now)}})

    def _workers_of(self, ac: Obj) -> list[tuple[str, SimServer]]:
        params = (ac.get("spec") or {}).get("parameters") or {}
        cfg = self.manager.db.get("multikueueconfigs", params.get("name", "")) or {}
        return [(n, self.mk_names[n]) for n in (cfg.get("spec") or {}).get("clusters") or ()
                if n in self.mk_names and self.up.get(self.mk_names[n].context)]

    def _dispatch_one(self, wl: Obj, check: str, ac: Obj, now: str) -> None:
        m = self.manager.db
        meta = _meta(wl)
        ns, name = meta["namespace"], meta["name"]
        targets = self._workers_of(ac)
        winner: str | None = None
        for mk, w in targets:
            mirror = w.db.get("workloads", name, ns)
            if mirror is None:
                mirror = self._mirror(w, wl)
            if winner is None and (_is_true(mirror, "Admitted") or self._admit(w, mirror, now)):
                winner = mk
        st = wl.get("status") or {}
        if winner is None:
            nominated = [mk for mk, _ in targets]
            if nominated != (st.get("nominatedClusterNames") or []):
                m.update_status({**wl, "status": {**st, "nominatedClusterNames": nominated or None}})
            return
        for mk, w in self.mk_names.items():  # the other mirrors are removed
            if mk != winner and self.up.get(w.context) and w.db.get("workloads", name, ns) is not None:
                w.db.delete("workloads", name, ns)
        checks = [{**c, "state": "Ready", "message": f'The workload got reservation on "{winner}"',
                   "lastTransitionTime": now} if c.get("name") == check else c for c in st.get("admissionChecks") or ()]
        conds = st.get("conditions")
        if all(c.get("state") == "Ready" for c in checks):
            conds = _with(conds, "Admitted", "True", "Admitted", "The workload is admitted", now)
        status = {**st, "admissionChecks": checks, "conditions": conds, "clusterName": winner}
        status.pop("nominatedClusterNames", None)
        m.update_status({**wl, "status": status})

    def _publish_queues(self, w: SimServer, now: str) -> None:
        """A worker's ClusterQueue counts and reservations, as its Kueue would publish them (the worker
        runs no other controller): pending, reserving and admitted mirrors, their quota by flavor."""
        from decimal import Decimal

        from taudash.sim.controllers.base import qparse
        from taudash.sim.controllers.queues import Tally, cq_status

        tallies: dict[str, Tally] = {}
        for wl in w.db.list("workloads"):
            if _is_true(wl, "Finished"):
                continue
            st = wl.get("status") or {}
            cq = (st.get("admission") or {}).get("clusterQueue")
            if cq is None:
                lq = w.db.get("localqueues", (wl.get("spec") or {}).get("queueName") or "", _meta(wl)["namespace"])
                name = ((lq or {}).get("spec") or {}).get("clusterQueue")
                if name:
                    tallies.setdefault(name, Tally()).pending += 1
                continue
            usage: dict[tuple[str, str], Decimal] = {}
            for k, v in _requests(wl).items():
                usage[(WORKER_FLAVOR, k)] = qparse(str(v))[0]
            tallies.setdefault(cq, Tally()).add(usage, _is_true(wl, "Admitted"))
        for cq in w.db.list("clusterqueues"):
            status = cq_status(cq, tallies.get(_meta(cq)["name"], Tally()), (True, "Ready", "Can admit new workloads"),
                               now)
            if status != cq.get("status"):
                w.db.update_status({**cq, "status": status})

    def _keep_mirror(self, wl: Obj, cluster: str, now: str) -> None:
        """A Workload already running on a worker (e.g. seeded so) has its admitted mirror there."""
        w = self.mk_names.get(cluster)
        if w is None or not self.up.get(w.context):
            return
        meta = _meta(wl)
        if w.db.get("workloads", meta["name"], meta["namespace"]) is None:
            self._admit(w, self._mirror(w, wl), now, force=True)

    def _mirror(self, w: SimServer, wl: Obj) -> Obj:
        meta = _meta(wl)
        return w.db.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                            "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                                         "labels": {**(meta.get("labels") or {}), ORIGIN_LABEL: MANAGER}},
                            "spec": copy.deepcopy({k: v for k, v in (wl.get("spec") or {}).items()
                                                   if k != "priorityClassRef"})})

    def _admit(self, w: SimServer, mirror: Obj, now: str, force: bool = False) -> bool:
        """Admit a mirror on its worker when its ClusterQueue has room for it (nominal quota, no borrowing)."""
        ns = _meta(mirror)["namespace"]
        lq = w.db.get("localqueues", (mirror.get("spec") or {}).get("queueName") or "", ns)
        cq = w.db.get("clusterqueues", ((lq or {}).get("spec") or {}).get("clusterQueue") or "")
        if cq is None:
            return False
        nominal: dict[str, Quantity] = {}
        for rg in (cq.get("spec") or {}).get("resourceGroups") or ():
            for fl in rg.get("flavors") or ():
                for r in fl.get("resources") or ():
                    nominal[r["name"]] = nominal.get(r["name"], Quantity.parse("0")) + Quantity.parse(str(r["nominalQuota"]))
        used: dict[str, Quantity] = {}
        for other in w.db.list("workloads"):
            if other is not mirror and _is_true(other, "QuotaReserved") and not _is_true(other, "Finished"):
                for k, v in _requests(other).items():
                    used[k] = used.get(k, Quantity.parse("0")) + v
        want = _requests(mirror)
        if not force and any(k not in nominal or used.get(k, Quantity.parse("0")) + v > nominal[k] for k, v in want.items()):
            return False
        cqn = _meta(cq)["name"]
        ps = [{"name": p.get("name", "main"), "count": int(p.get("count") or 1),
               "flavors": {k: WORKER_FLAVOR for k in want}} for p in (mirror.get("spec") or {}).get("podSets") or ()]
        conds = _with(None, "QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {cqn}", now)
        conds = _with(conds, "Admitted", "True", "Admitted", "The workload is admitted", now)
        w.db.update_status({**mirror, "status": {"admission": {"clusterQueue": cqn, "podSetAssignments": ps},
                                                 "conditions": conds}})
        return True


def _check_names(cq: Obj) -> Iterable[str]:
    spec = cq.get("spec") or {}
    names = [c.get("name") for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or ()]
    return [*names, *(spec.get("admissionChecks") or ())]


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
