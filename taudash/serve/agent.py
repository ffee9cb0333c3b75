"""The agent's document: `GET /api/v1/status` beside /metrics (docs/fleet.md, "A fleet from agents").

The body is the cluster's `ClusterStatus` exactly as `taudash status -o json` prints it (findings
included), from the serve loop's newest view: a few kilobytes per cluster, never the store. Its age
travels in headers, so the body stays the contract:

    Age: 3                          seconds since the view was derived
    X-Taudash-Derived-At: 1764…     epoch seconds of that derive
    X-Taudash-Watch-Age: 1.2        seconds since the agent's stalest watch was last heard from ("" unknown)
    X-Taudash-Stale: <why>          present when the agent's own data is not current (watches failing,
                                    API unreachable): the fleet shows that cluster stale, with the why

503 until the first view of a synced source; read-only (GET only, 405 otherwise). Access as the
wallboard's (serve/access.py): on loopback without a token, else only with `Authorization: Bearer TOKEN`
(`--web-token` / TAUDASH_WEB_TOKEN); a non-loopback agent without a token answers 403 and says why.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from taudash.engine.session import Freshness
from taudash.engine.view import ClusterView

from .access import authorized

STATUS_PATH = "/api/v1/status"


@dataclass(frozen=True)
class Published:
    body: bytes
    derived_at: float  # epoch seconds
    watch_age: float | None
    stale: str  # "" when current


def stale_reason(fresh: Freshness) -> str:
    """Why an agent's own data is not current, in one line ("" when it is)."""
    if fresh.unreachable:
        return f"the agent's API is unreachable: {fresh.unreachable_why or 'no answer'}"
    if fresh.problems:
        return "the agent's watches report problems: " + "; ".join(
            p.describe() for p in fresh.problems[:3])[:300]
    if fresh.stale_watches:
        return "the agent's watches are silent past their bound: " + ", ".join(fresh.stale_watches[:5])
    return ""


class StatusDocument:
    """The newest published document, swapped whole (the metrics thread reads it while serve derives)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._latest: Published | None = None
        self._lock = threading.Lock()

    def publish(self, view: ClusterView, fresh: Freshness | None, at: float) -> None:
        body = json.dumps(view.to_contract(), indent=2, ensure_ascii=False).encode() + b"\n"
        doc = Published(body, at, fresh.age if fresh else None, stale_reason(fresh) if fresh else "")
        with self._lock:
            self._latest = doc

    @property
    def latest(self) -> Published | None:
        with self._lock:
            return self._latest

    def headers(self, doc: Published) -> list[tuple[str, str]]:
        out = [("Content-Type", "application/json"), ("Cache-Control", "no-store"),
               ("Age", str(max(0, int(self.clock() - doc.derived_at)))),
               ("X-Taudash-Derived-At", f"{doc.derived_at:.3f}"),
               ("X-Taudash-Watch-Age", "" if doc.watch_age is None else f"{doc.watch_age:.1f}")]
        if doc.stale:
            out.append(("X-Taudash-Stale", doc.stale.encode("ascii", "replace").decode()))
        return out


def status_app(document: StatusDocument, token: str | None, loopback: bool) -> Callable:
    """The WSGI handler of STATUS_PATH (the metrics server routes that path here)."""

    def app(environ: dict, start_response: Callable) -> list[bytes]:
        def answer(status: str, text: str, extra: list[tuple[str, str]] | None = None) -> list[bytes]:
            start_response(status, [("Content-Type", "text/plain"), *(extra or [])])
            return [text.encode()]

        if token is None and not loopback:
            return answer("403 Forbidden", "403: this agent listens beyond loopback without an access token: "
                          "start serve with --web-token or TAUDASH_WEB_TOKEN to publish its status\n")
        if not authorized(token, environ.get("HTTP_AUTHORIZATION", "")):
            return answer("401 Unauthorized", "401: the agent's status needs its access token "
                          "(Authorization: Bearer …)\n", [("WWW-Authenticate", 'Bearer realm="taudash agent"')])
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return answer("405 Method Not Allowed", "405: read-only\n", [("Allow", "GET, HEAD")])
        doc = document.latest
        if doc is None:
            return answer("503 Service Unavailable", "503: not synced yet\n")
        start_response("200 OK", document.headers(doc))
        return [] if environ.get("REQUEST_METHOD") == "HEAD" else [doc.body]

    return app
