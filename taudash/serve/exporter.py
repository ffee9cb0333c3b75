"""The metrics endpoint: `--metrics ADDR` parsed and served over HTTP by prometheus_client."""

from __future__ import annotations

import ipaddress
import threading
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import start_http_server
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


class MetricsServer:
    """prometheus_client's HTTP server on its own registry (only taudash's collector, no process
    metrics of the library's default registry)."""

    def __init__(self, address: ListenAddress, collector: Collector) -> None:
        self.address = address
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self._httpd: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        """Bind and serve in a daemon thread; returns the bound port. OSError when it cannot bind."""
        httpd, self._thread = start_http_server(self.address.port, self.address.host, self.registry)
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
