"""`taudash serve --web` in-process against an in-process simulator, a websocket viewer that needs no
browser, and the simulator's own count of watch requests and writes: shared by the wallboard tests
and the wallboard measurement (docs/benchmarks.md, "Wallboard")."""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import time
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import yaml

from taudash.commands.options import DEFAULT_SYSTEM_NAMESPACE
from taudash.commands.serve import web_options
from taudash.serve.service import Serve
from taudash.sim.server import SimServer

CQ = "clusterqueues.kueue.x-k8s.io"


def serve_args(sim: SimServer, **over) -> argparse.Namespace:
    args = argparse.Namespace(
        snapshot=None, context=None, kubeconfig=str(sim.kubeconfig), demo=False, read_only=False,
        system_namespace=DEFAULT_SYSTEM_NAMESPACE, pvc=[], interval=0.3, metrics=None, speed=10.0, seed=1,
        web="127.0.0.1:0", web_token=None, kiosk=None, kiosk_interval=30.0)
    for k, v in over.items():
        setattr(args, k, v)
    return args


@asynccontextmanager
async def wallboard(sim: SimServer, within: float = 60.0, hooks=(), **over):
    """`taudash serve --web` on this loop; yields the Serve (its `.web` is the WallboardServer).
    `metrics="127.0.0.1:0"` adds the Prometheus endpoint; `hooks` are per-tick hooks (the recorder's seat)."""
    from taudash.serve.exporter import parse_address

    args = serve_args(sim, **over)
    serve = Serve(args, parse_address(args.metrics) if args.metrics else None, web_options(args))
    serve.on_tick += list(hooks)
    task = asyncio.create_task(serve.main())
    deadline = time.monotonic() + within
    while serve.web is None or serve.web.session is None or serve.web.session.last_frame is None:
        if task.done():
            task.result()
            raise AssertionError("taudash serve stopped before the wallboard was up")
        assert time.monotonic() < deadline, "the wallboard did not come up"
        await asyncio.sleep(0.05)
    try:
        yield serve
    finally:
        serve._stop.set()
        assert await asyncio.wait_for(task, 30) == 0


def watch_requests(sim: SimServer) -> int:
    return sum(1 for r in sim.api.requests if r.verb == "watch")


def writes(sim: SimServer) -> int:
    return sum(sim.api.writes.values())


def _client_ssl(sim: SimServer) -> ssl.SSLContext | bool:
    cfg = yaml.safe_load(Path(sim.kubeconfig).read_text())
    if sim.cert is None:
        return False
    ctx = ssl.create_default_context(cadata=sim.cert.pem().decode())
    assert cfg["clusters"][0]["cluster"]["server"].startswith("https://")
    return ctx


async def api_patch(sim: SimServer, resource: str, name: str, patch: dict) -> int:
    """A merge patch through the simulator's HTTP API, as any other client of the cluster would send it."""
    group, _, _ = resource.partition(".")
    path = {CQ: f"/apis/kueue.x-k8s.io/v1beta2/clusterqueues/{name}"}[resource]
    async with aiohttp.ClientSession() as http, http.patch(
            sim.api.url + path, data=json.dumps(patch), ssl=_client_ssl(sim),
            headers={"Authorization": f"Bearer {sim.api.token}",
                     "Content-Type": "application/merge-patch+json"}) as resp:
        await resp.read()
        return resp.status


class Viewer:
    """A browser tab without the browser: the wallboard's websocket protocol, terminal output counted."""

    def __init__(self, url: str, width: int = 160, height: int = 48, headers: dict | None = None) -> None:
        self.url = url
        self.size = (width, height)
        self.headers = headers or {}
        self.received = bytearray()
        self._http: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self._reader: asyncio.Task | None = None

    async def open(self) -> Viewer:
        self._http = aiohttp.ClientSession()
        w, h = self.size
        self.ws = await self._http.ws_connect(f"{self.url}ws?width={w}&height={h}", headers=self.headers)
        await self.ws.send_str(json.dumps(["resize", {"width": w, "height": h}]))
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self.ws is not None
        async for msg in self.ws:
            if msg.type == aiohttp.WSMsgType.BINARY:
                self.received += msg.data

    def saw(self, text: str) -> bool:
        return text.encode() in self.received

    async def keys(self, data: str) -> None:
        assert self.ws is not None
        await self.ws.send_str(json.dumps(["stdin", data]))

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 10)
            except (TimeoutError, aiohttp.ClientError):
                self._reader.cancel()
        if self._http is not None:
            await self._http.close()
