"""The live source's GETs (engine/sources/client.RawGet) go through the generated API client's own
connection pool and credentials but pick their proxy once, the way a session trusting the environment
would: the kubeconfig's proxy-url first, else HTTPS_PROXY unless NO_PROXY names the host."""

from __future__ import annotations

from types import SimpleNamespace

import aiohttp
from yarl import URL

from taudash.engine.sources.client import RawGet, _env_proxy


def _client(proxy=None, host="https://10.1.2.3:6443"):
    session = SimpleNamespace(connector=aiohttp.TCPConnector())
    rest = SimpleNamespace(pool_manager=session, proxy=proxy, proxy_headers=None, server_hostname="api.internal")
    return SimpleNamespace(rest_client=rest, configuration=SimpleNamespace(host=host),
                           default_headers={"User-Agent": "x"})


def test_the_environment_proxy_is_read_once_and_no_proxy_is_honoured(monkeypatch):
    for var in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    assert _env_proxy("https://10.1.2.3:6443") == {}
    monkeypatch.setenv("HTTPS_PROXY", "http://user:pw@proxy.corp:3128")
    got = _env_proxy("https://10.1.2.3:6443")
    assert (got["proxy"] == URL("http://proxy.corp:3128") and (got["proxy_auth"].login, got["proxy_auth"].password)
            == ("user", "pw"))
    monkeypatch.setenv("NO_PROXY", "10.1.2.3")
    assert _env_proxy("https://10.1.2.3:6443") == {}


async def test_reads_use_the_client_pool_and_the_kubeconfig_proxy_first(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client = _client(proxy="http://kubeconfig-proxy:8080")
    reads = RawGet(client)
    try:
        assert reads._session.connector is client.rest_client.pool_manager.connector
        assert reads._session.trust_env is False  # no per-request netrc/proxy look-ups in threads
        assert reads._extra == {"proxy": "http://kubeconfig-proxy:8080", "server_hostname": "api.internal"}
        assert reads._headers == {"User-Agent": "x", "Accept": "application/json"}
    finally:
        await reads.close()
    assert not client.rest_client.pool_manager.connector.closed  # the client's pool outlives the reads
    other = RawGet(_client())
    try:
        assert other._extra["proxy"] == URL("http://proxy.corp:3128")
    finally:
        await other.close()
        await client.rest_client.pool_manager.connector.close()
