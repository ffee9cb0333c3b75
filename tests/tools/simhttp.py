"""Raw HTTP to the simulator's API server in tests (what kubectl or another client would send)."""

from __future__ import annotations

import json

import aiohttp

from taudash.sim.server import SimServer


async def request(sim: SimServer, method: str, path: str, body, ctype: str = "application/merge-patch+json",
                   warnings: list[str] | None = None):
    headers = {"Authorization": f"Bearer {sim.token}", "Content-Type": ctype}
    async with aiohttp.ClientSession() as s, s.request(method, sim.url + path, data=json.dumps(body), headers=headers,
                                                        ssl=sim.cert.client_context()) as r:
        if warnings is not None:
            warnings.extend(r.headers.getall("Warning", []))
        return r.status, json.loads(await r.read())
