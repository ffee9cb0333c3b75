"""The cluster client: where a kubeconfig points, and how taudash reads from that API server.

`connect()` loads credentials the way kubectl does and answers a `ClusterTarget` (the server, the
generated API client that writes go through, and `get_bytes`/`get_json`: the raw GET every reader
shares). `ApiStatusError` is an HTTP error answer; `status_message()` and `why()` word an answer's
body and a failure in one line. The informers (kube.py), Kueue's visibility API (visibility.py), the
reads made on demand (ondemand.py) and export's re-reads (export.py) all read through this module.
"""

from __future__ import annotations

import logging
import os
import re
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
from orjson import loads as _loads  # several times faster than json on list pages (a dependency)

from ..model import ResourceKind
from . import kube_import
from .kubeconfig import ConfigError as ConfigError  # re-exported: callers catch it from here
from .kubeconfig import Resolved as KubeconfigContext
from .kubeconfig import resolve as resolve_kubeconfig
from .library_files import closing_library_descriptors

Deadline = float | aiohttp.ClientTimeout  # seconds in all, or aiohttp's per-phase timeouts (a watch)


class ApiStatusError(Exception):
    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(f"HTTP {status}: {message}" if message else f"HTTP {status}")
        self.status = status


class Unreachable(Exception):
    """The API server cannot be reached at all (connection refused, DNS, TLS, timeout)."""


@dataclass
class ClusterTarget:
    """Where and how to connect: resolved from a kubeconfig and a context."""

    context: str
    server: str
    api_client: Any  # kubernetes_asyncio.client.ApiClient
    user: str = ""  # the kubeconfig user of the context: who writes, for the audit log
    namespace: str = ""  # the context's namespace (in a Pod: its own); "" when none is named
    _reads: RawGet | None = field(default=None, repr=False)

    def reads(self) -> RawGet:
        """The GETs of the live source (lists, watches, discovery), on the API client's own connections."""
        if self._reads is None:
            self._reads = RawGet(self.api_client)
        return self._reads

    @property
    def transport(self) -> str:
        """"https" or "http": what every read of this target travels over (the bench records it)."""
        return "https" if self.server.startswith("https:") else "http"

    async def get_bytes(self, path: str, query: list[tuple[str, Any]] | None, deadline: Deadline) -> bytes:
        """The body of one GET; ApiStatusError (with the server's message) on an HTTP error."""
        resp = await self.reads()(path, query, deadline)
        try:
            body: bytes = await resp.read()
            if resp.status >= 400:
                raise ApiStatusError(resp.status, status_message(body))
            return body
        finally:
            resp.release()

    async def get_json(self, path: str, query: list[tuple[str, Any]] | None, deadline: Deadline) -> dict[str, Any]:
        doc: dict[str, Any] = _loads(await self.get_bytes(path, query, deadline))
        return doc

    async def close(self) -> None:
        if self._reads is not None:
            await self._reads.close()
            self._reads = None
        await self.api_client.close()


class RawGet:
    """GET requests on the generated API client's connection pool, TLS context, credentials and proxy,
    without its per-request work: the generated client's session trusts the environment, which costs
    two thread hand-offs per request (a ~/.netrc read and a proxy look-up in executor threads: at fleet
    scale ~700 list requests, each waiting for the GIL behind the decode), plus parameter sanitising.
    The proxy is resolved once here, the way that session would (the kubeconfig's proxy-url, else
    HTTPS_PROXY/NO_PROXY); credentials are applied per request by the client itself, so a token that
    refreshes (exec plugins, in-cluster files) keeps refreshing."""

    def __init__(self, api_client: Any) -> None:
        rest = api_client.rest_client
        self._api = api_client
        self._host: str = api_client.configuration.host
        self._headers = {**api_client.default_headers, "Accept": "application/json"}
        self._extra: dict[str, Any] = {}
        if rest.proxy:
            self._extra["proxy"] = rest.proxy
        else:
            self._extra.update(_env_proxy(self._host))
        if rest.proxy_headers:
            self._extra["proxy_headers"] = rest.proxy_headers
        if rest.server_hostname:
            self._extra["server_hostname"] = rest.server_hostname
        # The generated client's connector: one pool of (TLS) connections for its writes and these reads.
        self._session = aiohttp.ClientSession(connector=rest.pool_manager.connector, connector_owner=False,
                                              trust_env=False, read_bufsize=2**21)

    async def __call__(self, path: str, query: list[tuple[str, Any]] | None,
                       deadline: Deadline) -> aiohttp.ClientResponse:
        headers = dict(self._headers)
        await self._api.update_params_for_auth(headers, None, ["BearerToken"])
        url = self._host + path + ("?" + urlencode(query) if query else "")
        timeout = deadline if isinstance(deadline, aiohttp.ClientTimeout) else aiohttp.ClientTimeout(total=deadline)
        return await self._session.get(url, headers=headers, timeout=timeout, **self._extra)

    async def close(self) -> None:
        await self._session.close()


def _env_proxy(host: str) -> dict[str, Any]:
    """The proxy a session trusting the environment would pick for `host` (none: {})."""
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        proxy, auth = get_env_proxy_for_url(URL(host))
    except (LookupError, ValueError):
        return {}
    return {"proxy": proxy, "proxy_auth": auth} if auth is not None else {"proxy": proxy}


def kubeconfig_path(explicit: str | None = None) -> str:
    return explicit or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")


SERVICEACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
IN_CLUSTER = "in-cluster"  # the context name of the in-cluster connection (history keys, the audit log)


def in_cluster_dir(context: str | None, kubeconfig: str | None) -> Path | None:
    """The ServiceAccount's folder (token, ca.crt, namespace) when taudash runs in a Pod and no kubeconfig
    is given: no --kubeconfig, no $KUBECONFIG, no ~/.kube/config, no --context, and the Pod's
    KUBERNETES_SERVICE_HOST set — kubectl's rule. $TAUDASH_SERVICEACCOUNT_DIR moves the folder (tests)."""
    if context or kubeconfig or os.environ.get("KUBECONFIG") or not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    if (Path.home() / ".kube" / "config").exists():
        return None
    folder = Path(os.environ.get("TAUDASH_SERVICEACCOUNT_DIR") or SERVICEACCOUNT_DIR)
    return folder if (folder / "token").is_file() else None


async def connect_in_cluster(folder: Path) -> ClusterTarget:
    """The Pod's ServiceAccount: KUBERNETES_SERVICE_HOST/PORT, its token (re-read as the kubelet rotates
    it) and the cluster's CA. A missing or empty file is a ConfigError of one line."""
    client = kube_import.load()
    from kubernetes_asyncio.config.config_exception import ConfigException
    from kubernetes_asyncio.config.incluster_config import InClusterConfigLoader

    cfg = client.Configuration()
    try:
        InClusterConfigLoader(str(folder / "token"), str(folder / "ca.crt")).load_and_set(cfg)
        with closing_library_descriptors():
            api_client = client.ApiClient(configuration=cfg)
    except ConfigException as exc:
        raise ConfigError(f"in-cluster ServiceAccount {folder}: {_first_line(str(exc))}") from None
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"in-cluster ServiceAccount {folder}: ca.crt cannot be loaded: "
                          f"{_first_line(str(getattr(exc, 'reason', None) or exc))}") from None
    try:
        ns = (folder / "namespace").read_text().strip()
    except OSError:
        ns = ""
    return ClusterTarget(context=IN_CLUSTER, server=str(cfg.host), api_client=api_client,
                         user=f"serviceaccount in {ns}" if ns else "serviceaccount", namespace=ns)


async def connect(context: str | None = None, kubeconfig: str | None = None) -> ClusterTarget:
    """Load credentials the way kubectl does (KUBECONFIG, --kubeconfig, --context; in a Pod without any,
    its ServiceAccount). Every kubeconfig or credential problem is a ConfigError of one line
    (engine/sources/kubeconfig.py checks the file first); the server is not contacted here."""
    client = kube_import.load()
    from kubernetes_asyncio import config
    from kubernetes_asyncio.config.config_exception import ConfigException

    folder = in_cluster_dir(context, kubeconfig)
    if folder is not None:
        return await connect_in_cluster(folder)
    path = kubeconfig_path(kubeconfig)
    resolved = resolve_kubeconfig(path, context)
    cfg = client.Configuration()
    _quiet_library_log()
    try:
        # The context resolved above, by name: kubectl's choice of current-context (the first file's).
        with closing_library_descriptors():  # the library leaves one open per inline certificate
            await config.load_kube_config(config_file=path, context=resolved.context, client_configuration=cfg)
            api_client = client.ApiClient(configuration=cfg)  # loads the CA and client certificate and key
    except ConfigException as exc:
        raise ConfigError(f"kubeconfig {path}: {_credential_problem(str(exc), resolved)}") from None
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"kubeconfig {path}: {_tls_problem(exc, resolved)}") from None
    except Exception as exc:  # noqa: BLE001 - a shape the check missed: still one line, never a traceback
        raise ConfigError(f"kubeconfig {path}: context {resolved.context!r} cannot be used: "
                          f"{type(exc).__name__}: {_first_line(str(exc))}") from None
    return ClusterTarget(context=resolved.context, server=str(cfg.host), api_client=api_client, user=resolved.user,
                         namespace=resolved.namespace)


def _credential_problem(message: str, resolved: KubeconfigContext) -> str:
    """The library's ConfigException in the kubeconfig's words (an exec plugin's failure names it)."""
    if resolved.exec_command and message.startswith("exec:"):
        failed = re.match(r"exec: process returned (-?\d+)\.? ?(.*)", message, re.S)
        plugin = f"user {resolved.user!r}: exec plugin {resolved.exec_command!r}"
        if failed:
            said = _first_line(failed.group(2))
            return f"{plugin} failed (exit {failed.group(1)})" + (f": {said}" if said else "")
        return f"{plugin}: {_first_line(message.removeprefix('exec:').strip())}"
    return f"context {resolved.context!r}: {_first_line(message)}"


def _tls_problem(exc: OSError, resolved: KubeconfigContext) -> str:
    if resolved.exec_command and isinstance(exc, FileNotFoundError | PermissionError):
        return f"user {resolved.user!r}: exec plugin {resolved.exec_command!r} cannot run: {exc.strerror}"
    reason = getattr(exc, "reason", None) or exc.strerror or str(exc)
    who = f"user {resolved.user!r}" if resolved.user else f"context {resolved.context!r}"
    return f"{who}: the certificate or key cannot be loaded: {_first_line(str(reason))}"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:200]


def _quiet_library_log() -> None:
    """The client library logs an exec plugin's failure before raising it; taudash words the raised error
    once (ConfigError), so the log record is not printed as well (Python's last-resort handler would)."""
    log = logging.getLogger("kubernetes_asyncio.config")
    if not any(isinstance(h, logging.NullHandler) for h in log.handlers):
        log.addHandler(logging.NullHandler())


def list_path(k: ResourceKind, version: str) -> str:
    """The collection path of a kind at one of its versions (lists and watches)."""
    return f"/apis/{k.group}/{version}/{k.plural}" if k.group else f"/api/{version}/{k.plural}"


def api_version(k: ResourceKind, version: str) -> str:
    """`group/version` (plain version for the core group): an object's apiVersion as served at `version`."""
    return f"{k.group}/{version}" if k.group else version


def status_message(body: bytes) -> str:
    """An error answer's message (a Kubernetes Status), in at most 300 characters."""
    try:
        return str(_loads(body).get("message", ""))[:300]
    except (ValueError, AttributeError):
        return body[:200].decode("utf-8", "replace")


def why(exc: BaseException) -> str:
    """A failure (connection, timeout, decode) in one line."""
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]
