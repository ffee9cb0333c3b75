"""The kubeconfig's contexts as `:ctx` lists them, and the probe of each (engine/sources/contexts.py): merged
files in kubectl's order, the current-context marked, missing parts shown empty; reachable only for a 2xx
answer to GET /version — an HTTP error, a refused connection, a server that never answers and a kubeconfig
problem are each unreachable with their reason, and a probe never raises."""

from __future__ import annotations

import asyncio
import socket

import pytest
import yaml
from aiohttp import web
from factories import kubeconfig_of

from taudash.engine.sources.client import ConfigError
from taudash.engine.sources.contexts import REACHABLE, UNREACHABLE, contexts, probe


def write(path, servers: dict[str, str], current: str | None = None, namespace: dict[str, str] | None = None):
    doc = kubeconfig_of({n: {"server": s, "user": "u", "namespace": (namespace or {}).get(n, "")}
                         for n, s in servers.items()}, current)
    path.write_text(yaml.safe_dump(doc))
    return path


def test_contexts_merge_the_files_in_order_and_mark_the_current_one(tmp_path):
    a = write(tmp_path / "a", {"east": "https://east:6443"}, current="east", namespace={"east": "tau-system"})
    b = write(tmp_path / "b", {"west": "https://west:6443", "east": "https://shadowed:1"}, current="west")
    listed = contexts(f"{a}:{b}")
    assert [(e.name, e.server, e.user, e.namespace, e.current) for e in listed] == [
        ("east", "https://east:6443", "u", "tau-system", True),  # the first file's wins, as kubectl merges
        ("west", "https://west:6443", "u", "", False)]


def test_contexts_of_an_unreadable_kubeconfig_is_one_config_error(tmp_path):
    (tmp_path / "bad").write_text("[not, a, kubeconfig]")
    with pytest.raises(ConfigError, match="expected a kubeconfig"):
        contexts(str(tmp_path / "bad"))
    with pytest.raises(ConfigError, match="no such file"):
        contexts(str(tmp_path / "missing"))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def serve(handler) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_get("/version", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, f"http://127.0.0.1:{port}"


async def test_probe_says_reachable_only_for_an_answer(tmp_path):
    async def ok(_request):
        return web.json_response({"major": "1", "minor": "31"})

    async def refused(_request):
        return web.json_response({"kind": "Status", "message": "Unauthorized"}, status=401)

    release = asyncio.Event()

    async def hangs(_request):
        await release.wait()  # accepts, never answers (until the test ends)
        return web.json_response({})

    runners = []
    servers = {}
    for name, handler in (("ok", ok), ("401", refused), ("hangs", hangs)):
        runner, url = await serve(handler)
        runners.append(runner)
        servers[name] = url
    servers["closed"] = f"http://127.0.0.1:{closed_port()}"
    path = str(write(tmp_path / "kc", servers))
    answering = [n for n in servers if n != "hangs"]
    try:
        answers = dict(zip(answering, await asyncio.gather(*(probe(n, path) for n in answering)), strict=True))
        answers["hangs"] = await probe("hangs", path, within=1.0)  # alone: its deadline is the only timer
    finally:
        release.set()
        for runner in runners:
            await runner.cleanup()
    assert answers["ok"].state == REACHABLE, answers
    assert answers["ok"].seconds is not None and not answers["ok"].error
    assert answers["401"].state == UNREACHABLE and "HTTP 401: Unauthorized" in answers["401"].error
    assert answers["hangs"].state == UNREACHABLE and answers["hangs"].error.startswith("no answer within 1 s")
    assert answers["closed"].state == UNREACHABLE and servers["closed"] in answers["closed"].error
    unknown = await probe("nowhere", path)
    assert unknown.state == UNREACHABLE and "'nowhere' is not in the kubeconfig" in unknown.error
