"""A simulated NVIDIA dcgm-exporter: `/metrics` in the Prometheus text format, one series per GPU of each GPU node
(docs/simulator.md, "The DCGM exporter").

Facts (the shared reference on GPU health and topology, on utilisation): `DCGM_FI_DEV_GPU_UTIL` (percent),
`DCGM_FI_PROF_GR_ENGINE_ACTIVE` (ratio) and `DCGM_FI_DEV_FB_USED` (MiB), labelled `gpu`, `UUID`, `device`,
`modelName`, `Hostname` and, with the pod-resources mapping, `namespace`/`pod`/`container` of the Pod the GPU is
allocated to. Values come from the simulator's own state: a GPU nobody holds is idle; a GPU a Pod holds is busy,
unless that Pod is one of the idle share — picked per Pod by a hash of the seed and the Pod's namespace and name, so
a seed repeats them and every GPU of an idle Pod is idle from its start. The wobble of a busy GPU's value is a hash
of its UUID and the wall-clock minute (the numbers move; busy stays far above any idle threshold).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from aiohttp import web

from taudash.engine.rules.gpu_health import GPU_RESOURCE
from taudash.sim.apiserver import LOOPBACK
from taudash.sim.controllers.base import Obj
from taudash.sim.objects import ObjectDB
from taudash.sim.placement import holds_room, pod_requests

DEFAULT_IDLE_SHARE = 0.25  # of the GPU-holding Pods: the demo shows a few idle allocations
PRODUCT_LABEL = "nvidia.com/gpu.product"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

METRICS = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
)


@dataclass(frozen=True)
class GpuSeries:
    """One GPU as the exporter reports it: where it is, who holds it, how busy it is."""

    node: str
    gpu: int
    uuid: str
    model: str
    namespace: str = ""  # "" when no Pod holds it
    pod: str = ""
    container: str = ""
    util: float = 0.0  # percent

    @property
    def allocated(self) -> bool:
        return bool(self.pod)

    @property
    def idle(self) -> bool:
        return self.util == 0.0


def _unit(*parts: object) -> float:
    """A number in [0, 1) from the parts (a stable hash: the same inputs, the same number)."""
    digest = hashlib.sha256("\0".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def idle_pod(seed: int, share: float, namespace: str, name: str) -> bool:
    """Whether this Pod's GPUs sit idle: the share of Pods the seed picks."""
    return _unit("idle", seed, namespace, name) < share


def _gpus(n: object) -> int:
    try:
        return int(float(str(n)))
    except ValueError:
        return 0


def gpu_series(nodes: Iterable[Obj], pods: Iterable[Obj], *, seed: int = 0, idle_share: float = DEFAULT_IDLE_SHARE,
               minute: int = 0) -> list[GpuSeries]:
    """Every GPU of every GPU node, with the Pod that holds it. A node's GPUs go to its Pods in the order they
    were created (the device plugin hands out free devices as containers start), each Pod as many as it asks."""
    holders: dict[str, list[Obj]] = {}
    for p in pods:
        if holds_room(p):
            holders.setdefault(p["spec"]["nodeName"], []).append(p)
    out: list[GpuSeries] = []
    for n in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = n["metadata"]["name"]
        count = _gpus(((n.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE, 0))
        if count <= 0:
            continue
        model = (n["metadata"].get("labels") or {}).get(PRODUCT_LABEL, "NVIDIA GPU")
        owners: list[tuple[Obj, str]] = []
        ordered = sorted(holders.get(name, ()), key=lambda p: (p["metadata"].get("creationTimestamp") or "",
                                                             p["metadata"].get("namespace") or "",
                                                             p["metadata"]["name"]))
        for p in ordered:
            want = int(pod_requests(p.get("spec") or {}).get(GPU_RESOURCE, 0))
            owners += [(p, _container(p))] * want
        for i in range(count):
            uuid = "GPU-" + hashlib.sha256(f"{seed}/{name}/{i}".encode()).hexdigest()[:32]
            if i < len(owners):
                p, container = owners[i]
                ns, pod = p["metadata"].get("namespace") or "", p["metadata"]["name"]
                util = 0.0 if idle_pod(seed, idle_share, ns, pod) else 60.0 + round(38 * _unit(uuid, minute))
                out.append(GpuSeries(name, i, uuid, model, ns, pod, container, util))
            else:
                out.append(GpuSeries(name, i, uuid, model))
    return out


def _container(p: Obj) -> str:
    """The first container that asks for GPUs (the one the device is mapped to)."""
    for c in (p.get("spec") or {}).get("containers") or ():
        res = c.get("resources") or {}
        if GPU_RESOURCE in (res.get("requests") or {}) or GPU_RESOURCE in (res.get("limits") or {}):
            return str(c.get("name") or "")
    return ""


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def exposition(series: Iterable[GpuSeries]) -> str:
    """The Prometheus text format, as dcgm-exporter writes it (labels in its names and spelling)."""
    rows = list(series)
    lines: list[str] = []
    for metric, kind, help_text in METRICS:
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} {kind}"]
        for s in rows:
            labels = {"gpu": str(s.gpu), "UUID": s.uuid, "device": f"nvidia{s.gpu}", "modelName": s.model,
                      "Hostname": s.node}
            if s.allocated:
                labels |= {"container": s.container, "namespace": s.namespace, "pod": s.pod}
            text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            value = (s.util if metric == "DCGM_FI_DEV_GPU_UTIL" else round(s.util / 100, 4)
                     if metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" else (512 + 600 * s.util if s.allocated else 0))
            lines.append(f"{metric}{{{text}}} {value:g}")
    return "\n".join(lines) + "\n"


class DcgmExporter:
    """Serves `/metrics` on 127.0.0.1 for the GPUs of an ObjectDB, computed from its Nodes and Pods per scrape.

        exporter = DcgmExporter(sim.db, seed=sim.options.seed, idle_share=0.25)
        await exporter.start()      # exporter.url: http://127.0.0.1:PORT/metrics
        exporter.series()           # what a scrape now reports (tests: the idle allocations made)
    """

    def __init__(self, db: ObjectDB, *, port: int = 0, seed: int = 0, idle_share: float = DEFAULT_IDLE_SHARE,
                 minute: Callable[[], int] | None = None) -> None:
        if not 0.0 <= idle_share <= 1.0:
            raise ValueError(f"idle share {idle_share}: must be from 0 to 1")
        self.db = db
        self.seed = seed
        self.idle_share = idle_share
        self._minute = minute or (lambda: int(time.time() // 60))
        self._requested_port = port
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.scrapes = 0

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/metrics"

    def series(self) -> list[GpuSeries]:
        return gpu_series(self.db.list("Node"), self.db.list("Pod"), seed=self.seed, idle_share=self.idle_share,
                          minute=self._minute())

    async def start(self) -> DcgmExporter:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, LOOPBACK, self._requested_port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _metrics(self, request: web.Request) -> web.Response:
        self.scrapes += 1
        return web.Response(body=exposition(self.series()).encode(), headers={"Content-Type": CONTENT_TYPE})
