"""engine/rules/eta.py: an interval or "unknown", never a bare number; wider and later further back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import factories
from factories import rule_context

from taudash.engine.rules.eta import Eta, admission_times, estimate_wait

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def every(minutes: float, count: int) -> list[datetime]:
    return [NOW - timedelta(minutes=minutes * i) for i in range(count)]


def test_thin_evidence_is_unknown_and_says_why():
    eta = estimate_wait(0, every(30, 2), NOW)
    assert not eta.known and eta.median is None and eta.low is None
    assert eta.text() == "unknown (only 2 admissions in the last 4h)"
    old = [NOW - timedelta(hours=5 + i) for i in range(10)]  # outside the window: no evidence
    assert not estimate_wait(0, old, NOW).known
    future = [NOW + timedelta(minutes=i + 1) for i in range(10)]  # after `now`: ignored
    assert not estimate_wait(0, future, NOW).known
    assert estimate_wait(None, every(10, 20), NOW).why == "position unknown"
    stopped = estimate_wait(0, every(10, 20), NOW, stopped=True)
    assert not stopped.known and "stopped" in stopped.why


def test_interval_brackets_the_median_and_grows_with_position():
    adm = every(10, 24)  # 6 per hour
    head, back = estimate_wait(0, adm, NOW), estimate_wait(9, adm, NOW)
    assert head.known and head.evidence == 24
    assert head.low < head.median < head.high
    assert back.median > head.median and back.high > head.high
    # ten admissions at six an hour: the median is near 100 minutes
    assert 60 * 60 < back.median < 140 * 60
    assert "80%" in back.text() and back.text().startswith("~")
    assert estimate_wait(9, adm, NOW) == back  # seeded: the same answer for the same inputs


def test_a_faster_queue_is_sooner_and_more_evidence_is_narrower():
    slow, fast = estimate_wait(3, every(20, 12), NOW), estimate_wait(3, every(5, 48), NOW)
    assert fast.median < slow.median
    few, many = (estimate_wait(3, every(60, 4), NOW, dispersion=1.0, window=24 * 3600),
                 estimate_wait(3, every(6, 40), NOW, dispersion=1.0, window=4 * 3600))
    assert isinstance(few, Eta) and few.known and many.known
    assert many.high / many.low < few.high / few.low


def test_admission_times_from_the_store():
    wl = factories.workload("a", "ns", admitted_to="cq", state="admitted")
    next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")["lastTransitionTime"] = \
        "2026-03-01T11:30:00Z"
    untimed = factories.workload("c", "ns", admitted_to="cq", state="admitted")  # no transition time: not counted
    pending = factories.workload("b", "ns")
    times = admission_times(rule_context([wl, untimed, pending]).store)
    assert times == {"cq": [datetime(2026, 3, 1, 11, 30, tzinfo=UTC)]}
