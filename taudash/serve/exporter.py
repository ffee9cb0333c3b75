"""The metrics endpoint: `--metrics ADDR` parsed and served over HTTP by prometheus_client."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.registry import Collector, CollectorRegistry

LOOPBACK = "127.0.0.1"


class AddressError(ValueError):
    pass


@dataclass(frozen=True)
class ListenAddress:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False  # a host name: whatever it resolves to is not known to be private

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}/metrics"


def parse_address(text: str) -> ListenAddress:
    """`PORT`, `:PORT`, `HOST:PORT` or `[IPv6]:PORT`. Without a host, loopback: exposing cluster state
    on every interface has to be asked for by naming the host."""
    s = text.strip()
    if s.startswith("["):
        host, sep, port = s[1:].partition("]:")
        if not sep:
            raise AddressError(f"--metrics {text!r}: expected [IPV6]:PORT")
    elif ":" in s:
        host, _, port = s.rpartition(":")
        if ":" in host:
            raise AddressError(f"--metrics {text!r}: write an IPv6 host in brackets, [HOST]:PORT")
    else:
        host, port = "", s
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise AddressError(f"--metrics {text!r}: the port must be a number from 0 to 65535")
    if host and not _valid_host(host):
        raise AddressError(f"--metrics {text!r}: {host!r} is not an IP address or host name")
    return ListenAddress(host or LOOPBACK, int(port))


def _valid_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        labels = host.split(".")
        return all(0 < len(p) <= 63 and p.replace("-", "").isalnum() and p.isascii() for p in labels)


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a slow scraper never holds the process at exit


class _ThreadingServer6(_ThreadingServer):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass  # a scrape every 15 s is not news


def _wsgi(metrics: Callable, ready: Callable[[], bool], status: Callable | None = None) -> Callable:
    """/healthz: the process answers (liveness); /readyz: 200 once the first sync is done, else 503 (a
    Pod is not Ready while /metrics would describe an empty cluster); /api/v1/status: the agent's
    document (serve/agent.py), when given; every other path: the metrics."""

    def app(environ: dict, start_response: Callable) -> list[bytes]:
        path = environ.get("PATH_INFO", "")
        if status is not None and path == "/api/v1/status":
            return list(status(environ, start_response))
        if path == "/healthz":
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"ok\n"]
        if path == "/readyz":
            if ready():
                start_response("200 OK", [("Content-Type", "text/plain")])
                return [b"ok\n"]
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"not synced yet\n"]
        return list(metrics(environ, start_response))

    return app


class MetricsServer:
    """prometheus_client's metrics on its own registry (only taudash's collector, no process metrics of
    the library's default registry), beside /healthz and /readyz for the kubelet's probes."""

    def __init__(self, address: ListenAddress, collector: Collector,
                 ready: Callable[[], bool] = lambda: True, status: Callable | None = None) -> None:
        self.address = address
        self.status = status
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self.ready = ready
        self._httpd: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        """Bind and serve in a daemon thread; returns the bound port. OSError when it cannot bind."""
        app = _wsgi(make_wsgi_app(self.registry), self.ready, self.status)
        httpd = make_server(self.address.host, self.address.port, app,
                            _ThreadingServer6 if ":" in self.address.host else _ThreadingServer,
                            handler_class=_QuietHandler)
        self._thread = threading.Thread(target=httpd.serve_forever, name="taudash-metrics", daemon=True)
        self._thread.start()
        self._httpd = httpd
        return int(httpd.server_address[1])

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
