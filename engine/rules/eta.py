"""When will a pending Workload likely be admitted? An interval from the ClusterQueue's observed
admission rate, never a bare number (docs/queue-insight.md, "When will it likely run?").

Model: a Workload at 0-based position k in its ClusterQueue is admitted after about k+1 more
admissions in that queue (the ones ahead and its own). Admissions are treated as a Poisson process
whose rate is learnt from the admissions observed in a recent window (n in W seconds); the rate's
uncertainty (Gamma(n, W)) and the arrival randomness (Gamma(k+1, rate)) are both sampled, with a
fixed seed, so the function stays pure and repeatable. The answer is the 10th–90th percentile
interval and the median. Fewer than `min_events` admissions in the window, a stopped queue, or an
unknown position → "unknown": thin evidence gives no number at all.

Not modelled: size (a large Workload may wait for several finishes while small ones pass it under
BestEffortFIFO), preemption, and changes of the rate (the window follows it with a lag).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..model import Workload

DEFAULT_WINDOW = 4 * 3600.0  # seconds of admissions the rate is learnt from
MIN_EVENTS = 3
SAMPLES = 2000
LOW_Q, HIGH_Q = 0.1, 0.9  # an 80 % interval
DISPERSION = 8.0  # calibrated on seed 1 of the back-test (docs/queue-insight.md), evaluated on others


@dataclass(frozen=True)
class Eta:
    known: bool
    low: float | None = None  # seconds from now
    median: float | None = None
    high: float | None = None
    evidence: int = 0  # admissions observed in the window
    window: float = DEFAULT_WINDOW
    why: str = ""  # for unknown: the reason

    def text(self) -> str:
        if not self.known:
            return f"unknown ({self.why})"
        return f"~{human(self.median)} ({human(self.low)}–{human(self.high)}, 80%)"


def human(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = max(0.0, seconds)
    if s < 90:
        return f"{s:.0f}s"
    if s < 5400:
        return f"{s / 60:.0f}m"
    if s < 172800:
        return f"{s / 3600:.1f}h".replace(".0h", "h")
    return f"{s / 86400:.1f}d".replace(".0d", "d")


def _quantile(sorted_values: list[float], q: float) -> float:
    i = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[i]


def estimate_wait(position: int | None, admissions: list[datetime], now: datetime, *,
                  window: float = DEFAULT_WINDOW, min_events: int = MIN_EVENTS, stopped: bool = False,
                  dispersion: float = DISPERSION, seed: int = 0) -> Eta:
    """The time to admission of the Workload at `position` (0-based) in a ClusterQueue whose
    admissions happened at `admissions` (any order; those after `now` are ignored)."""
    if position is None:
        return Eta(False, window=window, why="position unknown")
    if stopped:
        return Eta(False, window=window, why="the queue is stopped: it admits nothing until released")
    start = now.timestamp() - window
    n = sum(1 for t in admissions if start < t.timestamp() <= now.timestamp())
    if n < min_events:
        return Eta(False, evidence=n, window=window,
                   why=f"only {n} admission{'s' if n != 1 else ''} in the last {human(window)}")
    rng = random.Random(seed)
    k = position + 1
    waits = []
    for _ in range(SAMPLES):
        rate = rng.gammavariate(n, 1.0 / window)  # admissions per second, uncertain from n events
        # over-dispersed: same mean k/rate, variance × dispersion (jumps by priority and size, bursts)
        waits.append(rng.gammavariate(k / dispersion, dispersion / rate))
    waits.sort()
    return Eta(True, _quantile(waits, LOW_Q), _quantile(waits, 0.5), _quantile(waits, HIGH_Q), n, window)


def admission_times(store: Any) -> dict[str, list[datetime]]:
    """Per ClusterQueue, when the Workloads in the store got their quota reserved (QuotaReserved=True's
    transition time): the admissions a live session can still see (finished Workloads that kept their
    admission included; deleted ones are gone, so the rate reads low after a burst of deletions)."""
    from .queue_order import parse_time

    out: dict[str, list[datetime]] = {}
    for wl in store.list(Workload):
        adm = wl.status.admission
        qr = wl.condition("QuotaReserved")
        if adm is None or not adm.cluster_queue or qr is None or qr.status != "True":
            continue
        t = parse_time(qr.last_transition_time)
        if t is not None:
            out.setdefault(adm.cluster_queue, []).append(t)
    return out


__all__ = ["DEFAULT_WINDOW", "MIN_EVENTS", "Eta", "admission_times", "estimate_wait", "human"]
