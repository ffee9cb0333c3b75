"""SimServer: a seeded ObjectDB behind the API server, with a kubeconfig, as one async context.

    async with SimServer(snapshot="snapshots/demo.yaml") as sim:
        sim.kubeconfig   # a 0600 kubeconfig for kubectl / kubernetes_asyncio
        sim.db           # the cluster state; in-process reads, writes and subscriptions
        sim.faults       # fault injection
        sim.api.writes   # write requests received, by verb

Controllers (added later) plug in as coroutine functions `async def run(sim): ...`, started as
tasks after the API server is up and cancelled on stop; `sim.options` carries speed and seed.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taudash.data import demo_snapshot
from taudash.engine.sources.snapshot import LoadResult
from taudash.engine.store import AccessState
from taudash.sim.apiserver import BOOKMARK_INTERVAL, LOOPBACK, ApiServer
from taudash.sim.faults import Faults
from taudash.sim.kubeconfig import DEFAULT_CONTEXT, user_context, write_kubeconfig
from taudash.sim.kueue_versions import KueueVersion
from taudash.sim.kueue_versions import kueue_version as _kueue_version
from taudash.sim.objects import ObjectDB
from taudash.sim.resources import Registry, resources_for
from taudash.sim.schema import SchemaSet, crd_root
from taudash.sim.tls import ServerCert, make_cert


def default_snapshot() -> Path | None:
    """The demo scenario, shipped as package data."""
    path = demo_snapshot()
    return path if path.is_file() else None


@dataclass(frozen=True)
class SimOptions:
    speed: float = 1.0  # simulated seconds per wall-clock second, for the controllers
    seed: int = 0  # every random choice of the simulation derives from it


Controller = Callable[["SimServer"], Coroutine[Any, Any, Any]]

_DEFAULT = object()


class SimServer:
    """Seeds an ObjectDB, serves it on 127.0.0.1 and writes a kubeconfig; stops cleanly.

    `snapshot`: a file, None for an empty cluster, or (default) the demo scenario. `objects`:
    extra raw objects seeded after it. `kubeconfig`: where to write it (default: a private temp
    dir removed on stop). Access states in a snapshot envelope become faults when `apply_access`:
    Forbidden → 403, Error → 500, Absent → the resource is not served. `tls` (default) serves
    https with a per-run certificate pinned in the kubeconfig: kubectl sends tokens only over TLS.
    `kueue_version`: the Kueue release played — "0.14" (v1beta1 only), "0.15" (v1beta1 stored,
    v1beta2 served by conversion) or "0.19" (default: v1beta2 stored, v1beta1 served); it picks the
    served and storage versions, the short names, the CRDs that validate writes and the condition
    reasons the controllers write (`sim.kueue`, taudash/sim/kueue_versions.py). `kueue_gates`
    switches Kueue feature gates, e.g. {"UnadmittedWorkloadsObservability": False}. `warm_lists`
    (default) encodes the seeded objects for list pages at start (ObjectDB.warm_encodings), so the
    first list is served from the cache like later ones. `users`: operators besides the administrator,
    each with a token of its own (SelfSubjectReview answers its name) and a context `<context>-<user>`.
    `rbac`: the stored Roles, ClusterRoles and bindings decide every request but the administrator's (the
    kubeconfig's token stays all-powerful; taudash/sim/rbac.py); ServiceAccount tokens come from the
    TokenRequest subresource (`kubectl create token`) or `service_account_token()`.
    `real_clock`: the snapshot's timestamps are moved so its capture time is the moment the server starts,
    and the simulated clock starts there (ages read as kubectl shows them); default: the capture time.
    """

    def __init__(self, snapshot: str | Path | None | object = _DEFAULT, *, objects: Iterable[dict] = (),
                 port: int = 0, token: str | None = None, kubeconfig: str | Path | None = None,
                 context: str = DEFAULT_CONTEXT, namespace: str | None = None, ray: bool = True,
                 speed: float = 1.0, seed: int = 0, history: int = 10_000, bookmark_interval: float = BOOKMARK_INTERVAL,
                 watch_timeout: float = 1800.0, gone_as: str = "event", clock: Callable[[], float] | None = None,
                 apply_access: bool = True, controllers: Iterable[Controller] = (), tls: bool = True,
                 simulate: bool = False, scenario: Any = None, kueue_version: str | KueueVersion | None = None,
                 kueue_gates: dict[str, bool] | None = None,
                 kueue_crds: str | Path | None | object = _DEFAULT, warm_lists: bool = True,
                 users: Iterable[str] = (), real_clock: bool = False, rbac: bool = False) -> None:
        self.snapshot: Path | None = (default_snapshot() if snapshot is _DEFAULT
                                      else (Path(snapshot) if snapshot else None))  # type: ignore[arg-type]
        self.options = SimOptions(speed=speed, seed=seed)
        # `kueue_crds`: the `kueue` test-data folder whose CRDs validate writes (default: crd_root());
        # None turns validation off. An absent folder also runs unvalidated, said once in `validation`.
        self.kueue = _kueue_version(kueue_version, kueue_gates)
        crd_folder = crd_root() if kueue_crds is _DEFAULT else kueue_crds
        crds = self.kueue.crd_folder
        schemas = SchemaSet.shared(crd_folder, crds) if crd_folder is not None else None  # type: ignore[arg-type]
        self.validation = (schemas.describe() if schemas is not None else
                           f"no schema validation (Kueue CRDs not found at {crd_folder}/crds/{crds})"
                           if crd_folder is not None else "no schema validation (turned off)")
        registry = Registry(resources_for(self.kueue), self.kueue)
        self.db = ObjectDB(registry=registry, history=history, clock=clock, seed=seed, schemas=schemas)
        self.faults = Faults(self.db.registry, seed=seed)
        self.api = ApiServer(self.db, host=LOOPBACK, port=port, token=token, ray=ray, faults=self.faults,
                             bookmark_interval=bookmark_interval, watch_timeout=watch_timeout, gone_as=gone_as,
                             rbac=rbac)
        self.context = context
        self.namespace = namespace
        self.apply_access = apply_access
        self.load_result: LoadResult | None = None
        self.real_clock = real_clock
        self.clock_start: float | None = None  # where the simulated clock starts (None: the snapshot's capture)
        self._objects = list(objects)
        self._kubeconfig_arg = Path(kubeconfig) if kubeconfig else None
        self._tmpdir: str | None = None
        self.kubeconfig: Path | None = None
        self.tls = tls
        self.cert: ServerCert | None = None
        self._controllers: list[Controller] = list(controllers)
        self._tasks: list[asyncio.Task] = []
        self.running = False
        self.controller_errors: list[BaseException] = []
        # The simulated world (taudash.sim.world): with `simulate`, built once seeded and ticked in real time.
        self.simulate = simulate
        self.scenario = scenario
        self.world: Any = None
        self.warm_lists = warm_lists
        # Operators besides the administrator: each its own token, identity and kubeconfig context.
        self.user_tokens = {u: self.api.add_user(u) for u in dict.fromkeys(users)}

    @property
    def url(self) -> str:
        return self.api.url

    @property
    def token(self) -> str:
        return self.api.token

    def service_account_token(self, namespace: str, name: str) -> str:
        """A bearer token of a ServiceAccount (it need not exist yet; `kubectl create token` checks that it does)."""
        return self.api.service_account_token(namespace, name)

    def context_of(self, user: str) -> str:
        """The kubeconfig context an operator given in `users` connects with."""
        if user not in self.user_tokens:
            raise KeyError(f"no simulated user {user!r} (users: {', '.join(self.user_tokens) or 'none'})")
        return user_context(self.context, user)

    def add_controller(self, controller: Controller) -> None:
        """Run `await controller(sim)` as a task while the server runs (now, if it already does)."""
        self._controllers.append(controller)
        if self.running:
            self._start_task(controller)

    async def start(self) -> SimServer:
        if self.snapshot is not None:
            if self.real_clock:
                self.clock_start = time.time()
            self.load_result = self.db.seed_from_snapshot(self.snapshot, at=self.clock_start)
            if self.apply_access:
                self._apply_access(self.load_result)
        if self._objects:
            self.db.seed(self._objects)
        self._fresh_cluster_uid()
        if self.warm_lists:
            self.db.warm_encodings()  # the seeded objects' list encodings, before any client lists them
        self._tmpdir = tempfile.mkdtemp(prefix="taudash-sim-")  # 0700: the key and token stay private
        try:
            if self.tls:
                self.cert = await asyncio.to_thread(make_cert, self._tmpdir)
                self.api.ssl_context = self.cert.server_context()
            await self.api.start()
            target = self._kubeconfig_arg or Path(self._tmpdir) / "kubeconfig"
            self.kubeconfig = write_kubeconfig(target, self.api.url, self.api.token, self.context, self.namespace,
                                               ca_pem=self.cert.pem() if self.cert else None, users=self.user_tokens)
        except BaseException:
            await self.api.stop()
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
            raise
        if self.simulate and self.world is None:
            from taudash.sim.world import World

            self.world = World.for_server(self, self.scenario)
            self._controllers.append(self.world.serve)
        self.running = True
        for c in self._controllers:
            self._start_task(c)
        return self

    async def stop(self) -> None:
        self.running = False
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except asyncio.CancelledError:
                pass
            except Exception as exc:  # a failed controller must not block shutdown; keep it for tests
                self.controller_errors.append(exc)
        self._tasks.clear()
        await self.api.stop()
        self.db.close_subscriptions()
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    async def __aenter__(self) -> SimServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _start_task(self, controller: Controller) -> None:
        name = getattr(controller, "__name__", type(controller).__name__)
        self._tasks.append(asyncio.create_task(controller(self), name=f"sim-controller-{name}"))

    def _fresh_cluster_uid(self) -> None:
        """Each run is its own cluster: a kube-system Namespace with a new UID (clients fingerprint a
        cluster by it), created when the seed lacks it, re-identified when the seed carries one."""
        ns = self.db.get("namespaces", "kube-system") or {
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "kube-system", "labels": {"kubernetes.io/metadata.name": "kube-system"}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
        ns["metadata"]["uid"] = str(uuid.uuid4())
        self.db.seed([ns])

    def _apply_access(self, result: LoadResult) -> None:
        for r in self.db.registry.all:
            if not r.engine_kind:
                continue  # served beside the engine's kinds (Events): a snapshot says nothing of them
            state = result.store.access(r.engine_kind).state
            if state is AccessState.FORBIDDEN:
                self.faults.forbid(r)
            elif state is AccessState.ERROR:
                self.faults.fail(500, resource=r)
            elif state is AccessState.ABSENT:
                self.api.set_resource_enabled(r, False)
