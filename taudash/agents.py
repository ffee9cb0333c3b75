"""A fleet from agents: many clusters read from the documents their `taudash serve` publishes (docs/fleet.md,
"A fleet from agents").

Each agent (`taudash serve --metrics ADDR` in its cluster) publishes its ClusterStatus at
`/api/v1/status` (serve/agent.py). Here a fleet of them is polled, each on its own (one unanswered
agent never delays another), and kept as one parsed ClusterView per cluster: memory grows with the
clusters × the summary, never with their stores. `taudash --fleet-from URL …` opens the Fleet screen
on them; `status`/`check --fleet-from …` print and judge them as a FleetStatus. A cluster is opened live
(its own connection and store) only when Enter asks for it, and only when a kubeconfig context for it
is known (`fleet.agents[].context`, or a context named like the agent).

Freshness per agent: `live` once a document was read; `stale` (the row's error says why) when the last
poll failed or nothing was read for the freshness bound, or the agent says its own data is not current
(`X-Taudash-Stale`); `unreachable` when no document was ever read. The MultiKueue join is not made
over agents (it reads each cluster's Workloads, which a summary does not carry): the FleetStatus says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from taudash.engine.rules.base import RuleConfig
from taudash.engine.session import Frame, Freshness
from taudash.engine.store import Store
from taudash.engine.view import SUMMARY_FIELDS, ClusterView

from .errors import UsageError
from .fleet import DEFAULT_FRESHNESS_BOUND, FleetMember

STATUS_PATH = "/api/v1/status"
TOKEN_ENV = "TAUDASH_AGENT_TOKEN"  # the bearer token the client presents to every agent
ALL = "all"  # `--fleet-from all`: every agent of the config file's fleet.agents
NO_JOIN = "agents publish summaries: the MultiKueue join needs each cluster's Workloads (open them with --context)"


@dataclass(frozen=True)
class Agent:
    """Where one cluster's agent answers, what to call it, and the kube context that opens it live."""

    name: str
    url: str  # the status document's URL
    context: str | None = None


def status_url(url: str) -> str:
    """The document's URL from an agent's address (`http://host:port` or the full status URL)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--fleet-from {url!r}: an agent's URL is http(s)://HOST:PORT")
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{path if path.endswith(STATUS_PATH) else path + STATUS_PATH}"


def resolve_agents(given: list[str], configured: list[Agent]) -> list[Agent]:
    """`--fleet-from` values → agents: a URL (named by the config entry with that URL, else HOST:PORT), the
    name of a config entry, or `all` (every entry). Bad input is UsageError (exit 2)."""
    by_name = {a.name: a for a in configured}
    by_url = {status_url(a.url): a for a in configured}
    out: list[Agent] = []
    for value in given:
        if value == ALL:
            if not configured:
                raise UsageError("--fleet-from all: the config file lists no fleet.agents")
            out += configured
        elif value in by_name:
            out.append(by_name[value])
        elif "://" in value:
            url = status_url(value)
            out.append(by_url.get(url) or Agent(urlsplit(url).netloc, url))
        else:
            known = ", ".join(by_name) or "none in the config file"
            raise UsageError(f"--fleet-from {value!r}: not a URL (http(s)://HOST:PORT) nor an agent of "
                             f"fleet.agents (known: {known})")
    seen: dict[str, Agent] = {}
    for a in out:
        if a.name in seen and seen[a.name].url != a.url:
            raise UsageError(f"--fleet-from: two agents named {a.name!r} ({seen[a.name].url}, {a.url})")
        seen.setdefault(a.name, a)
    return list(seen.values())


def agent_token(environ: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if environ is None else environ
    return env.get(TOKEN_ENV) or None


@dataclass
class Reading:
    """One answered poll: the document (None when only the row's fields were kept), the view parsed from
    it, and its age as the agent said it."""

    doc: dict[str, Any] | None
    view: ClusterView
    fetched_at: float  # epoch seconds
    age: float  # seconds the document was old when fetched (Age header)
    watch_age: float | None  # the agent's own freshness (X-Taudash-Watch-Age)
    stale: str  # why the agent's own data is not current ("": it is)
    etag: str = ""


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


async def fetch(http: Any, agent: Agent, token: str | None, within: float, held: Reading | None = None,
                row_only: bool = False) -> Reading:
    """GET the agent's document; any failure raises (its message is what the row shows). `held`: the
    reading this client has (its ETag is sent; a 304 renews it without parsing). `row_only`: keep of the
    view only what the Fleet row reads (the agent's `?view=summary`: SUMMARY_FIELDS), and not the document."""
    import aiohttp

    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if held is not None and held.etag:
        headers["If-None-Match"] = held.etag
    url = agent.url + ("?view=summary" if row_only else "")
    async with http.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=within),
                        allow_redirects=False) as resp:
        age = _number(resp.headers.get("Age")) or 0.0
        watch_age = _number(resp.headers.get("X-Taudash-Watch-Age"))
        stale = resp.headers.get("X-Taudash-Stale", "")
        if resp.status == 304 and held is not None:
            return Reading(held.doc, held.view, time.time(), age, watch_age, stale, held.etag)
        if resp.status != 200:
            text = (await resp.text(errors="replace")).strip().splitlines()
            raise RuntimeError(f"HTTP {resp.status}: {text[0][:160] if text else resp.reason}")
        doc = await resp.json(content_type=None)
        if not isinstance(doc, dict) or doc.get("kind") != "ClusterStatus":
            raise RuntimeError("not a ClusterStatus document")
        view = ClusterView.model_validate({k: doc[k] for k in SUMMARY_FIELDS if k in doc} if row_only else doc)
        return Reading(None if row_only else doc, view, time.time(), age, watch_age, stale,
                       resp.headers.get("ETag", ""))


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    text = str(exc) or type(exc).__name__
    return (text if isinstance(exc, RuntimeError) else f"{type(exc).__name__}: {text}")[:200]


class AgentSummary:
    """What the Fleet screen reads of a member's `session`: its newest frame (from the agent's document),
    and an empty store (an agent's cluster keeps no objects here)."""

    EMPTY = Store()

    def __init__(self) -> None:
        self.last_frame: Frame | None = None
        self.store = self.EMPTY

    def labelled(self, kind: str, label: str) -> int:
        return 0


class AgentMember:
    """One agent of the fleet: polled every bound/5 s, each poll answered within bound/2 s (the fleet's
    liveness probe's cadence). Duck-types a FleetMember for the Fleet screen (context, state, error,
    session.last_frame, probe_seconds)."""

    def __init__(self, agent: Agent, freshness_bound: float = DEFAULT_FRESHNESS_BOUND) -> None:
        self.agent = agent
        self.context = agent.name
        self.state = "connecting"
        self.error: str | None = None
        self.freshness_bound = freshness_bound
        self.session = AgentSummary()
        self.reading: Reading | None = None
        self.poll_error: str | None = None  # why the last poll failed; None once one is answered
        self.probe_seconds: float | None = None  # how long the last answered poll took
        self.polls = 0

    def record(self, reading: Reading | None, error: str | None, took: float) -> None:
        self.polls += 1
        if reading is not None:
            self.reading, self.poll_error, self.probe_seconds = reading, None, took
            self.state, self.error = "live", None
        elif self.reading is None:
            self.state, self.error = "unreachable", error
        else:
            self.poll_error = error

    def stale_why(self, now: float) -> tuple[float, str] | None:
        """(since, why) when this cluster's data is not current; None when it is."""
        r = self.reading
        if r is None:
            return None
        silent = now - r.fetched_at
        if self.poll_error is not None or silent > self.freshness_bound:
            return r.fetched_at, f"agent: {self.poll_error or 'no document'} (last read {silent:.0f} s ago)"
        if r.stale:
            return r.fetched_at - r.age, r.stale
        return None

    def frame(self, now: datetime) -> Frame:
        """The agent's document as a frame: its view, its age (the document's and the agent's watches'),
        and an outage when it is not current."""
        r = self.reading
        if r is None:
            raise RuntimeError(f"{self.context}: no document read yet")
        t = now.timestamp()
        age = max(0.0, t - r.fetched_at) + r.age + (r.watch_age or 0.0)
        stale = self.stale_why(t)
        fresh = Freshness(mode="LIVE", read_only=True, age=age, observed_at=r.view.source.observed_at,
                          revision=self.polls, read_only_why="fleet from agents",
                          unreachable=stale is not None, unreachable_since=stale[0] if stale else None,
                          unreachable_why=stale[1] if stale else "", watch_bound=self.freshness_bound)
        f = Frame(r.view, fresh, now, self.polls)
        self.session.last_frame = f
        return f

    async def run(self, http: Any, token: str | None) -> None:
        """Poll until cancelled; never raises (every failure is this cluster's state)."""
        every, timeout = self.freshness_bound / 5, self.freshness_bound / 2
        while True:
            t = time.monotonic()
            reading, error = None, None
            try:
                reading = await fetch(http, self.agent, token, timeout, self.reading, row_only=True)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - refused, reset, HTTP error, bad document: all "no answer"
                error = _why(exc)
            self.record(reading, error, time.monotonic() - t)
            await asyncio.sleep(max(0.0, every - (time.monotonic() - t)))


@dataclass
class AgentFleet:
    """The agents of one dashboard; `opened`: the one cluster opened live on demand (its FleetMember)."""

    members: list[AgentMember]
    config: RuleConfig | None = None
    kubeconfig: str | None = None
    subject: str = ""
    mapping: dict[str, str] = field(default_factory=dict)
    joins: dict = field(default_factory=dict)  # no MultiKueue join over summaries (NO_JOIN)
    join_error: str | None = None
    join_note: str = NO_JOIN
    opened: FleetMember | None = None
    _tasks: list[asyncio.Task] = field(default_factory=list)
    _opened_task: asyncio.Task | None = None
    _http: Any = None

    def join(self, now: datetime) -> dict:
        return self.joins

    def member(self, context: str) -> AgentMember | None:
        return next((m for m in self.members if m.context == context), None)

    def start(self, token: str | None) -> None:
        import aiohttp

        # one connection pool for every agent, sized so none waits for another's connection
        self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=max(100, len(self.members) * 2)))
        self._tasks = [asyncio.create_task(m.run(self._http, token), name=f"agent-{m.context}")
                       for m in self.members]

    def live_context(self, m: AgentMember) -> str | None:
        """The kube context that opens this agent's cluster live: the config entry's, else a context of
        the kubeconfig named like the agent or like the context its document reports; None: not known."""
        if m.agent.context:
            return m.agent.context
        from .fleet import all_contexts

        try:
            known = set(all_contexts(self.kubeconfig))
        except UsageError:
            return None
        reported = m.reading.view.source.context if m.reading else None
        return next((c for c in (m.context, reported) if c and c in known), None)

    async def open(self, context: str) -> FleetMember:
        """Open one cluster live (its own connection, store and session), closing the one opened before."""
        await self.close_opened()
        member = FleetMember(context, self.config)
        member.freshness_bound = self.members[0].freshness_bound if self.members else DEFAULT_FRESHNESS_BOUND
        self.opened = member
        self._opened_task = asyncio.create_task(member.run(self.kubeconfig), name=f"agent-open-{context}")
        return member

    async def close_opened(self) -> None:
        task, self._opened_task, self.opened = self._opened_task, None, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()
        await self.close_opened()
        if self._http is not None:
            await self._http.close()
            self._http = None


# --- status and check over agents (one poll each, all at once) -------------------------------------


@dataclass
class AgentResult:
    agent: Agent
    reading: Reading | None = None
    error: str | None = None

    @property
    def reachable(self) -> bool:
        return self.reading is not None


async def read_agents(agents: list[Agent], token: str | None, within: float = 10.0) -> list[AgentResult]:
    import aiohttp

    async def one(http: Any, agent: Agent) -> AgentResult:
        try:
            return AgentResult(agent, reading=await fetch(http, agent, token, within))
        except Exception as exc:  # noqa: BLE001 - one agent's failure never hides the others
            return AgentResult(agent, error=_why(exc))

    async with aiohttp.ClientSession() as http:
        return list(await asyncio.gather(*(one(http, a) for a in agents)))


def agents_contract(results: list[AgentResult]) -> dict:
    """A FleetStatus over agents: each cluster's `status` is its agent's document as published."""
    clusters = []
    for r in results:
        reading = r.reading
        view = reading.view if reading else None
        role = ("unknown" if view is None else "manager" if view.multikueue.state != "NotConfigured" else "none")
        clusters.append({
            "context": r.agent.name,
            "reachable": r.reachable,
            "error": r.error,
            "agent": {"url": r.agent.url, "age": None if reading is None else round(reading.age, 1),
                      "watchAge": None if reading is None else reading.watch_age,
                      "stale": None if reading is None else (reading.stale or None)},
            "multikueue": {"role": role, "dispatched": [], "unknown": NO_JOIN},
            "status": reading.doc if reading else None,
        })
    return {"apiVersion": "taudash/v1", "kind": "FleetStatus", "clusters": clusters, "findings": []}


def agents_of_config(environ: Mapping[str, str] | None = None) -> list[Agent]:
    """The config file's `fleet.agents` (its schema checks every key)."""
    from .config import load_config

    return [Agent(a.name, status_url(a.url), a.context) for a in load_config(environ).agents]
