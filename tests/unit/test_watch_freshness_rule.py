"""Freshness is watch health (engine/store.py, engine/session.py): pure, time passed in."""

from __future__ import annotations

from datetime import UTC, datetime

from taudash.engine.session import Session
from taudash.engine.store import BROKEN_GRACE, Store, WatchHealth, watch_freshness
from taudash.engine.view import SourceInfo

T = 1_800_000_000.0


def test_open_watches_heard_within_the_bound_are_fresh_however_long_nothing_changed():
    fr = watch_freshness({"Workload": WatchHealth(True, T - 50), "Node": WatchHealth(True, T - 10)}, T, bound=90)
    assert fr.stale == () and fr.age == 50  # age: the stalest watch, not the last change


def test_an_open_watch_silent_beyond_the_bound_is_stale():
    fr = watch_freshness({"Workload": WatchHealth(True, T - 91), "Node": WatchHealth(True, T - 1)}, T, bound=90)
    assert fr.stale == ("Workload",) and fr.age == 91


def test_a_broken_watch_is_stale_after_the_grace_not_the_bound():
    broken = {"Workload": WatchHealth(False, T - 1)}
    assert watch_freshness(broken, T, bound=90).stale == ()  # being re-opened (milliseconds, normally)
    late = {"Workload": WatchHealth(False, T - BROKEN_GRACE - 1)}
    assert watch_freshness(late, T, bound=90).stale == ("Workload",)
    assert watch_freshness({"Workload": WatchHealth(False, T - 2)}, T, bound=1).stale == ("Workload",)  # bound < grace


def test_nothing_heard_yet_is_no_age_and_not_stale():
    fr = watch_freshness({"Workload": WatchHealth(False, None)}, T)
    assert fr.age is None and fr.stale == ()
    assert watch_freshness({}, T).age is None


def test_the_store_keeps_the_last_heard_moment_when_a_watch_ends_and_emits_no_change():
    s = Store()
    s.set_watch("Workload", True, T)
    rev = s.revision
    s.set_watch("Workload", False)
    assert s.watch_health() == {"Workload": WatchHealth(False, T)} and s.revision == rev
    s.forget_watch("Workload")
    assert s.watch_health() == {}


def _session(store: Store) -> Session:
    return Session(store, SourceInfo(type="kube", context="c"))


def test_session_freshness_says_fresh_or_which_watches_are_stale():
    s = Store()
    s.watch_bound = 30
    s.set_watch("Workload", True, T)
    s.set_watch("Node", True, T)
    fr = _session(s).freshness(datetime.fromtimestamp(T + 29, tz=UTC))
    assert fr.fresh and fr.watched and fr.age == 29 and fr.watch_bound == 30
    fr = _session(s).freshness(datetime.fromtimestamp(T + 31, tz=UTC))
    assert not fr.fresh and fr.stale_watches == ("Node", "Workload")


def test_a_snapshot_has_no_watches_and_is_never_called_fresh():
    fr = Session(Store(), SourceInfo(type="snapshot")).freshness(datetime.fromtimestamp(T, tz=UTC))
    assert not fr.watched and not fr.fresh and fr.age is None and fr.stale_watches == ()
