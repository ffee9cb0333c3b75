"""Raw HTTP to the simulator's API server in tests (what kubectl or another client would send)."""

from __future__ import annotations

import json
import urllib.request

import aiohttp

from taudash.engine.model import BY_KIND
from taudash.sim.server import SimServer


async def request(sim: SimServer, method: str, path: str, body, ctype: str = "application/merge-patch+json",
                   warnings: list[str] | None = None, token: str | None = None):
    """One request as `token` (default: the kubeconfig's own, the administrator's) → (status, JSON body)."""
    headers = {"Authorization": f"Bearer {token or sim.token}", "Content-Type": ctype}
    async with aiohttp.ClientSession() as s, s.request(method, sim.url + path, data=json.dumps(body), headers=headers,
                                                        ssl=sim.cert.client_context()) as r:
        if warnings is not None:
            warnings.extend(r.headers.getall("Warning", []))
        return r.status, json.loads(await r.read())


def list_served(sim: SimServer, kind: str) -> list[dict]:
    """Every object of `kind` as the simulator serves it at v1beta2 (a plain LIST, as kubectl would read it)."""
    k = BY_KIND[kind]
    ctx = sim.cert.client_context() if sim.cert else None
    req = urllib.request.Request(f"{sim.url}/apis/{k.group}/v1beta2/{k.plural}",
                                 headers={"Authorization": f"Bearer {sim.token}"})
    with urllib.request.urlopen(req, context=ctx) as r:  # noqa: S310 - the loopback simulator
        doc = json.loads(r.read())
    return [{"apiVersion": f"{k.group}/v1beta2", "kind": kind, **o} for o in doc["items"]]
