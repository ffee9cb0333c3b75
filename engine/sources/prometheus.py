"""GPU utilisation from Prometheus: DCGM exporter metrics read through the HTTP API (`/api/v1/query`), on a cadence
of their own, each round a `UtilisationReading` with Prometheus's evaluation time (docs/capacity.md, "Utilisation").

Per allocated GPU (a series with a `pod` label) three instant queries, evaluated at the same time, answer "how busy
now, and since when below the threshold": the value now; the last time it was at or above the threshold within the
lookback (`max_over_time(timestamp(X >= T)[L:S])`); the first time the series was seen within it
(`min_over_time(timestamp(X)[L:S])`). Idle for = now − the later of the two. `DCGM_FI_PROF_GR_ENGINE_ACTIVE` (×100)
is used where a GPU has it, else `DCGM_FI_DEV_GPU_UTIL`. A failed request, a timeout or no DCGM series at all make
the reading unknown, never idle.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..rules.gpu_usage import GPU_UTIL, GR_ENGINE_ACTIVE, GpuSample, UtilisationReading

_SKIP = frozenset({"__name__", "job", "instance"})
METRICS = ((GR_ENGINE_ACTIVE, f"({GR_ENGINE_ACTIVE} * 100)"), (GPU_UTIL, GPU_UTIL))
MIN_LOOKBACK = 6 * 3600.0


class QueryError(Exception):
    pass


def lookback_for(idle_seconds: float) -> float:
    """How far back a reading looks: long enough to rank idle allocations well beyond the threshold."""
    return max(MIN_LOOKBACK, 4 * idle_seconds)


def step_for(lookback: float) -> int:
    """The subqueries' resolution (seconds): about 720 points over the lookback, at most a minute apart."""
    return int(min(60, max(1, lookback // 720)))


def queries(metric: str, threshold: float, lookback: float) -> tuple[str, str, str]:
    span = f"[{int(lookback)}s:{step_for(lookback)}s]"
    return (metric, f"max_over_time(timestamp({metric} >= {threshold:g}){span})",
            f"min_over_time(timestamp({metric}){span})")


def _key(metric: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in metric.items() if k not in _SKIP))


class PrometheusClient:
    """Instant queries against one Prometheus (stdlib HTTP: no dependency), each bounded by `timeout`."""

    def __init__(self, url: str, timeout: float) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def query(self, expr: str, at: float) -> list[dict[str, Any]]:
        qs = urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/query?{qs}", timeout=self.timeout) as r:
                body = json.loads(r.read())
        except urllib.error.HTTPError as exc:
            raise QueryError(f"HTTP {exc.code} from {self.url}") from None
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            raise QueryError(f"{self.url} unreachable: {reason}") from None
        except ValueError:
            raise QueryError(f"{self.url} answered something other than JSON") from None
        if not isinstance(body, dict) or body.get("status") != "success":
            raise QueryError(f"{self.url}: {body.get('error', 'query failed') if isinstance(body, dict) else body}")
        data = body.get("data") or {}
        if data.get("resultType") != "vector":
            raise QueryError(f"{self.url}: expected a vector, got {data.get('resultType')}")
        result = data.get("result") or []
        return result if isinstance(result, list) else []


def read_utilisation(client: PrometheusClient, *, threshold: float, idle_seconds: float,
                     at: float) -> UtilisationReading:
    """One round of queries at time `at` (epoch seconds): every allocated GPU's sample, or an unknown reading."""
    when = datetime.fromtimestamp(at, UTC)
    lookback = lookback_for(idle_seconds)
    found: dict[tuple[tuple[str, str], ...], GpuSample] = {}
    seen: set[tuple[str, str, str]] = set()  # GPUs already read (node, index, UUID)
    series = 0
    try:
        for name, expr in METRICS:
            now_q, busy_q, first_q = queries(expr, threshold, lookback)
            current = client.query(now_q, at)
            series += len(current)
            busy = {_key(s["metric"]): float(s["value"][1]) for s in client.query(busy_q, at)} if current else {}
            first = {_key(s["metric"]): float(s["value"][1]) for s in client.query(first_q, at)} if current else {}
            for s in current:
                labels = s.get("metric") or {}
                if not labels.get("pod"):
                    continue  # a GPU no Pod holds
                key = _key(labels)
                gpu_key = (labels.get("Hostname", ""), labels.get("gpu", ""), labels.get("UUID", ""))
                if gpu_key in seen:
                    continue  # the graphics-engine reading of this GPU came first
                seen.add(gpu_key)
                util = float(s["value"][1])
                since = max(busy.get(key, 0.0), first.get(key, at))
                found[key] = GpuSample(namespace=labels.get("namespace", ""), pod=labels["pod"],
                                       node=labels.get("Hostname", ""), gpu=labels.get("gpu", ""),
                                       uuid=labels.get("UUID", ""), util=util,
                                       idle_seconds=0.0 if util >= threshold else max(0.0, at - since),
                                       metric=name, container=labels.get("container", ""))
    except (QueryError, KeyError, IndexError, TypeError, ValueError) as exc:
        reason = str(exc) if isinstance(exc, QueryError) else f"{client.url}: malformed answer ({exc!r})"
        return UtilisationReading(at=when, known=False, reason=reason, lookback_seconds=lookback)
    if not series:
        return UtilisationReading(at=when, known=False, lookback_seconds=lookback,
                                  reason=f"no DCGM series in Prometheus at {client.url} ({GR_ENGINE_ACTIVE}, "
                                         f"{GPU_UTIL})")
    samples = tuple(sorted(found.values(), key=lambda g: (g.namespace, g.pod, g.node, g.gpu)))
    return UtilisationReading(at=when, known=True, samples=samples, series=series, lookback_seconds=lookback)


class PrometheusFeed:
    """Reads utilisation every `interval` seconds on a daemon thread of its own (never on a refresh, never under
    the session's lock); `latest()` is the newest reading. The first `latest()` waits for the first round (at most
    the round's timeouts), so a one-shot command judges a real reading, not an empty one."""

    def __init__(self, url: str, *, threshold: float, idle_seconds: float, interval: float, timeout: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.url = url
        self.client = PrometheusClient(url, timeout)
        self.threshold = threshold
        self.idle_seconds = idle_seconds
        self.interval = interval
        self.clock = clock
        self.rounds = 0
        self._latest: UtilisationReading | None = None
        self._first = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        # the longest the first round can take: six queries, each bounded by the timeout
        self._first_wait = 6 * timeout + 1.0

    def read_now(self) -> UtilisationReading:
        reading = read_utilisation(self.client, threshold=self.threshold, idle_seconds=self.idle_seconds,
                                   at=self.clock())
        with self._lock:
            self._latest = reading
            self.rounds += 1
        self._first.set()
        return reading

    def start(self) -> PrometheusFeed:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="taudash-prometheus", daemon=True)
                self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def latest(self) -> UtilisationReading | None:
        self.start()
        self._first.wait(self._first_wait)
        with self._lock:
            return self._latest

    def _run(self) -> None:
        while not self._stop.is_set():
            self.read_now()
            self._stop.wait(self.interval)
