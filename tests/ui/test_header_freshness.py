"""The header's freshness words: fresh while every watch lives (however quiet), stale naming the watches."""

from __future__ import annotations

from datetime import UTC, datetime

from taudash.engine.model import KINDS
from taudash.engine.session import Session
from taudash.engine.store import AccessState, Store
from taudash.engine.view import SourceInfo
from taudash.screens.kit.text import tones_for
from taudash.screens.widgets.header_bar import HeaderBar

T = 1_800_000_000.0
TONES = tones_for({})


def _frame(store: Store, now: float):
    s = Session(store, SourceInfo(type="kube", context="c"))
    return s.frame(datetime.fromtimestamp(now, tz=UTC))


def _store() -> Store:
    store = Store()
    for k in KINDS:
        store.set_access(k.kind, AccessState.SYNCED)
    store.watch_bound = 90
    store.set_watch("Workload", True, T)
    return store


def test_a_quiet_cluster_with_live_watches_is_green_past_the_old_thresholds():
    f = _frame(_store(), T + 76)  # the old header was red at 76 s
    left = HeaderBar._left(f, TONES)
    assert "● 76 s" in left.plain and "stale" not in left.plain
    assert any(span.style == TONES.ok for span in left.spans if "●" in left.plain[span.start:span.end])
    assert HeaderBar._problems(f, TONES) is None


def test_a_silent_watch_beyond_the_bound_is_red_and_named():
    f = _frame(_store(), T + 91)
    left = HeaderBar._left(f, TONES)
    assert "● stale 91 s" in left.plain
    assert any(span.style == TONES.bad for span in left.spans if "●" in left.plain[span.start:span.end])
    problems = HeaderBar._problems(f, TONES)
    assert problems is not None and "watch stale: Workload" in problems.plain and "90 s" in problems.plain
