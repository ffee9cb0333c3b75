"""The agent's document: `GET /api/v1/status` beside /metrics (docs/fleet.md, "A fleet from agents").

The body is the cluster's `ClusterStatus` exactly as `taudash status -o json` prints it (findings
included; compact JSON), from the serve loop's newest view: a summary, never the store (size S: ~510
KiB, ~27 KiB gzipped — most of it the `waiting` report of each pending Workload). A client that accepts
gzip gets it gzipped; one that sends the ETag it holds (If-None-Match) gets 304 while the document is
unchanged. `?view=summary` answers the same document with only the fields a fleet's row reads
(SUMMARY_FIELDS: no `waiting` report, no workspaces): what the Fleet screen polls. Its age travels in
headers, so the body stays the contract:

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

import gzip
import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs

from taudash.engine.session import Freshness
from taudash.engine.view import SUMMARY_FIELDS, ClusterView

from .access import authorized

STATUS_PATH = "/api/v1/status"


@dataclass(frozen=True)
class Published:
    body: bytes  # compact JSON
    gzipped: bytes  # the same, gzip-encoded (for a client that accepts it: a fleet polls every few seconds)
    etag: str  # of the body: an unchanged document is answered 304 to If-None-Match
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
        self._summary: Published | None = None
        self._lock = threading.Lock()

    def publish(self, view: ClusterView, fresh: Freshness | None, at: float) -> None:
        contract = view.to_contract()
        age, stale = (fresh.age, stale_reason(fresh)) if fresh else (None, "")
        full = self._encoded(contract, self.latest, at, age, stale)
        summary = self._encoded({k: contract[k] for k in SUMMARY_FIELDS if k in contract}, self.summary, at, age, stale)
        with self._lock:
            self._latest, self._summary = full, summary

    @staticmethod
    def _encoded(doc: dict, previous: Published | None, at: float, age: float | None, stale: str) -> Published:
        body = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        if previous is not None and previous.body == body:  # unchanged: keep its encoding and tag
            gz, etag = previous.gzipped, previous.etag
        else:
            gz, etag = gzip.compress(body, 6, mtime=0), '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        return Published(body, gz, etag, at, age, stale)

    @property
    def latest(self) -> Published | None:
        with self._lock:
            return self._latest

    @property
    def summary(self) -> Published | None:
        """The same document with only SUMMARY_FIELDS (`?view=summary`): what a fleet's row reads."""
        with self._lock:
            return self._summary

    def headers(self, doc: Published) -> list[tuple[str, str]]:
        out = [("Content-Type", "application/json"), ("Cache-Control", "no-cache"), ("ETag", doc.etag),
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
        query = parse_qs(environ.get("QUERY_STRING", ""))
        view = query.get("view", ["full"])[-1]
        if view not in ("full", "summary"):
            return answer("400 Bad Request", "400: view is full (the default) or summary\n")
        doc = document.summary if view == "summary" else document.latest
        if doc is None:
            return answer("503 Service Unavailable", "503: not synced yet\n")
        headers = document.headers(doc)
        if environ.get("HTTP_IF_NONE_MATCH", "") == doc.etag:  # the client holds this document already
            start_response("304 Not Modified", [h for h in headers if h[0] != "Content-Type"])
            return []
        body = doc.body
        if "gzip" in environ.get("HTTP_ACCEPT_ENCODING", ""):
            body = doc.gzipped
            headers += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
        start_response("200 OK", [*headers, ("Content-Length", str(len(body)))])
        return [] if environ.get("REQUEST_METHOD") == "HEAD" else [body]

    return app
