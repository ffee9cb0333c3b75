"""A simulated fleet: one MultiKueue manager and N workers, each its own SimServer (docs/fleet.md).

    async with SimFleet(workers=2) as fleet:
        fleet.kubeconfig            # one kubeconfig: taudash-manager, taudash-worker-1, …
        fleet.manager.db            # the manager's cluster state (the demo by default)
        fleet.worker("taudash-worker-1").faults
        await fleet.down("taudash-worker-1")   # stop that worker's API server
        await fleet.set_faults([parse_fault("worker-2=hang")])   # per-cluster faults (docs/simulator.md)

Every cluster is served through a small TCP relay in front of its API server (the kubeconfig names
the relay): `hang` stops the relay forwarding (connections are accepted, nothing is answered, open
watch streams freeze) without touching the server, as a hung API server looks to its clients.

Every cluster has its own API server, port, token, certificate and cluster UID. The fleet-level
MultiKueue controller (`dispatch`) talks to every cluster's ObjectDB in-process, as Kueue's
manager talks to its workers through their kubeconfigs. What it simplifies is in
docs/simulator.md ("A simulated fleet").
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from taudash.engine.model.names import MULTIKUEUE_CONTROLLER as MULTIKUEUE
from taudash.engine.model.quantity import Quantity
from taudash.sim.apiserver import BOOKMARK_INTERVAL, LOOPBACK
from taudash.sim.faults import ClusterFault, FaultSpecError, parse_fault_lines
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
    return any(c.get("type") == type_ and c.get("status") == "True" for c in (o.get("status") or {}).get("conditions")
               or ())


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


class Relay:
    """A TCP relay on loopback in front of one API server. `hold()`: accept, forward nothing (a hung
    server); `release()`: forward again (what was held flows on); `stop()`: refuse, cut every connection."""

    def __init__(self, upstream: SimServer) -> None:
        self.upstream = upstream
        self.open = asyncio.Event()
        self.open.set()
        self.port: int | None = None
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task] = set()

    @property
    def held(self) -> bool:
        return not self.open.is_set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, LOOPBACK, self.port or 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._writers):
            w.transport.abort()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    def hold(self) -> None:
        self.open.clear()

    def release(self) -> None:
        self.open.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        up_writer: asyncio.StreamWriter | None = None
        try:
            await self.open.wait()
            try:
                up_reader, up_writer = await asyncio.open_connection(LOOPBACK, self.upstream.api.port)
            except OSError:
                return
            self._writers.add(up_writer)
            await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # stopped (cancelled) or cut: the connection ends here either way
        finally:
            for w in (writer, up_writer):
                if w is not None:
                    self._writers.discard(w)
                    w.transport.abort()
            self._tasks.discard(task)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while chunk := await reader.read(65536):
            await self.open.wait()
            writer.write(chunk)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.write_eof()


class SimFleet:
    """A manager (seeded from `snapshot`, default the demo) and `workers` small worker clusters.

    The manager's MultiKueueClusters are mapped onto the workers in order (`mk_names`); workers
    beyond them get a MultiKueueCluster named after their context, added to every MultiKueueConfig.
    `gpus`: each worker ClusterQueue's nvidia.com/gpu nominal quota.
    """

    def __init__(self, workers: int = 2, *, snapshot: str | Path | None | object = _DEFAULT,
                 kubeconfig: str | Path | None = None, gpus: int = 16, interval: float | None = 0.5,
                 bookmark_interval: float = BOOKMARK_INTERVAL, kueue_crds: Any = _DEFAULT) -> None:
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
        self.relays: dict[str, Relay] = {}
        self.faults: list[ClusterFault] = []  # in force, as set by set_faults (the CLI, the control file)
        self.control: Path | None = None  # the control file: its lines are the faults in force
        self.control_status = ""  # what the last change of the control file did ("applied: …", "rejected: …")
        self.on_control: Any = None  # called with control_status after each change (sim serve prints it)
        self._control_seen: str | None = None
        self._control_task: asyncio.Task | None = None
        self._stopped: set[str] = set()  # contexts whose API server is down

    @property
    def contexts(self) -> list[str]:
        return [self.manager.context, *(w.context for w in self.workers)]

    def worker(self, context: str) -> SimServer:
        return next(w for w in self.workers if w.context == context)

    def server(self, context: str) -> SimServer:
        return next(s for s in (self.manager, *self.workers) if s.context == context)

    def url_of(self, s: SimServer) -> str:
        """The URL clients reach `s` at (its relay)."""
        scheme = "https" if s.cert is not None else "http"
        return f"{scheme}://{LOOPBACK}:{self.relays[s.context].port}"

    @staticmethod
    def cluster_names(workers: int) -> dict[str, str]:
        """Every name a fault may use for a cluster → its context: the context, or without `taudash-`."""
        contexts = [MANAGER, *(WORKER.format(i + 1) for i in range(workers))]
        return {**{c: c for c in contexts}, **{c.removeprefix("taudash-"): c for c in contexts}}

    @classmethod
    def check_faults(cls, faults: Iterable[ClusterFault], workers: int) -> None:
        """FaultSpecError naming a cluster that is not in a fleet of `workers` workers."""
        names = cls.cluster_names(workers)
        for f in faults:
            if f.cluster not in names:
                known = ", ".join(["manager", *(f"worker-{i + 1}" for i in range(workers))])
                raise FaultSpecError(f"{str(f)!r}: no cluster {f.cluster!r} in this fleet (one of {known}, "
                                     "or its context name)")

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
            for s in (self.manager, *self.workers):
                self.relays[s.context] = Relay(s)
                await self.relays[s.context].start()
            self.kubeconfig = self._write_kubeconfig()
            self.config = self._write_config()
            self.control = self.kubeconfig.with_name(f"{self.kubeconfig.name}.faults")
            self._write_control()
        except BaseException:
            await self.stop()
            raise
        if self.interval is not None:  # None: no background controller; the caller runs dispatch()
            self._task = asyncio.create_task(self._run(), name="sim-fleet-multikueue")
        self._control_task = asyncio.create_task(self._watch_control(), name="sim-fleet-control")
        return self

    async def stop(self) -> None:
        for attr in ("_task", "_control_task"):
            task = getattr(self, attr)
            if task is not None:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
                setattr(self, attr, None)
        for relay in self.relays.values():
            relay.release()
            await relay.stop()
        for s in (*self.workers, self.manager):
            await s.stop()
        if self.control is not None:
            self.control.unlink(missing_ok=True)
        if self.kubeconfig is not None and self._kubeconfig_arg is None:
            self.kubeconfig.unlink(missing_ok=True)
        if self.config is not None:
            self.config.unlink(missing_ok=True)

    async def __aenter__(self) -> SimFleet:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def down(self, context: str) -> None:
        """Stop one cluster's API server (its clients see connection refused; dispatch skips a worker down)."""
        s = self.server(context)
        self.up[context] = False
        self._stopped.add(context)
        await self.relays[context].stop()
        await s.api.stop()

    async def restore(self, context: str) -> None:
        """Serve a stopped cluster again on its port."""
        s = self.server(context)
        s.api._requested_port = s.api.port or 0
        await s.api.start()
        await self.relays[context].start()
        self._stopped.discard(context)
        self.up[context] = not self.relays[context].held

    # --- faults per cluster (the CLI's --fault, the control file) --------------------------------
    async def set_faults(self, faults: Iterable[ClusterFault]) -> None:
        """Make `faults` the faults in force (every other cluster healthy). Raises FaultSpecError (and
        changes nothing) for a cluster not in the fleet or a resource its API server does not serve."""
        faults = list(faults)
        names = self.cluster_names(len(self.workers))
        self.check_faults(faults, len(self.workers))
        for f in faults:
            for r in f.resources:
                try:
                    self.server(names[f.cluster]).db.registry.resolve(r)
                except KeyError:
                    raise FaultSpecError(f"{str(f)!r}: {names[f.cluster]} serves no resource {r!r}") from None
        for s in (self.manager, *self.workers):
            mine = [f for f in faults if names[f.cluster] == s.context]
            await self._apply(s, mine)
        self.faults = faults
        self._write_control()

    async def _apply(self, s: SimServer, faults: list[ClusterFault]) -> None:
        ctx, relay = s.context, self.relays[s.context]
        kinds = {f.kind for f in faults}
        latency = sum(f.seconds for f in faults if f.kind == "slow")
        forbidden = {r for f in faults if f.kind == "forbidden" for r in f.resources}
        old = [f for f in self.faults if self.cluster_names(len(self.workers)).get(f.cluster) == ctx]
        old_latency = sum(f.seconds for f in old if f.kind == "slow")
        old_forbidden = {r for f in old if f.kind == "forbidden" for r in f.resources}
        if latency != old_latency or forbidden != old_forbidden:
            s.faults.clear()
            if latency:
                s.faults.latency(latency)
            for r in sorted(forbidden):
                s.faults.forbid(r)
            if forbidden != old_forbidden:
                s.faults.drop_watches()  # clients watch again and meet the 403 (or its end)
        if "hang" in kinds:
            relay.hold()
        else:
            relay.release()
        if "down" in kinds and ctx not in self._stopped:
            await self.down(ctx)
        elif "down" not in kinds and ctx in self._stopped:
            await self.restore(ctx)
        self.up[ctx] = ctx not in self._stopped and not relay.held

    def _write_control(self) -> None:
        if self.control is None:
            return
        text = ("# Faults in force in this simulated fleet, one a line (docs/simulator.md, \"Faults per cluster\").\n"
                "# Edit this file to change them while it runs, e.g.  worker-1=down  worker-2=hang\n"
                "#   worker-2=slow:5s  manager=forbidden:Workload ; an empty file: every cluster healthy.\n"
                + "".join(f"{f}\n" for f in self.faults))
        tmp = self.control.with_name(f".{self.control.name}.tmp")
        tmp.touch(mode=0o600)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(self.control)
        self._control_seen = text

    async def _watch_control(self, every: float = 0.3) -> None:
        """Apply the control file whenever its text changes; a line that does not parse rejects the
        whole change (the faults in force stay), said in `control_status`."""
        pending: str | None = None
        while True:
            await asyncio.sleep(every)
            pending = await self.poll_control(pending)

    async def poll_control(self, pending: str | None) -> str | None:
        """One read of the control file. `pending` is a changed text read once before: a change is applied
        when two reads agree, because `echo … > file` truncates, then writes, and a read between the two
        sees an empty file, which would mean "every cluster healthy". Answers the new pending text."""
        assert self.control is not None
        try:
            text = self.control.read_text(encoding="utf-8")
        except OSError:
            return pending
        if text == self._control_seen:
            return None
        if text != pending:
            return text
        self._control_seen = text
        try:
            faults = parse_fault_lines(text, self.manager.db.registry)
            await self.set_faults(faults)
            self._control_seen = self.control.read_text(encoding="utf-8") if self.control.exists() else None
            self.control_status = "applied: " + (" ".join(str(f) for f in faults) or "every cluster healthy")
        except FaultSpecError as exc:
            self.control_status = f"rejected ({exc}); still in force: " + (
                " ".join(str(f) for f in self.faults) or "no fault")
        except Exception as exc:  # noqa: BLE001 - the control loop keeps serving; the error is said
            self.control_status = f"failed: {type(exc).__name__}: {exc}"
        if self.on_control is not None:
            self.on_control(self.control_status)
        return None

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
            one = kubeconfig_dict(self.url_of(s), s.api.token, s.context, None, s.cert.pem() if s.cert else None)
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
                "False", "ClientConnectionFailed", f"Get \"{self.url_of(w)}/api\": "
                + ("context deadline exceeded" if self.relays[w.context].held else "connect: connection refused"))
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
                    nominal[r["name"]] = (nominal.get(r["name"], Quantity.parse("0"))
                                          + Quantity.parse(str(r["nominalQuota"])))
        used: dict[str, Quantity] = {}
        for other in w.db.list("workloads"):
            if other is not mirror and _is_true(other, "QuotaReserved") and not _is_true(other, "Finished"):
                for k, v in _requests(other).items():
                    used[k] = used.get(k, Quantity.parse("0")) + v
        want = _requests(mirror)
        if (not force
                and any(k not in nominal or used.get(k, Quantity.parse("0")) + v > nominal[k]
                        for k, v in want.items())):
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
