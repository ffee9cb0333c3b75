"""Measurement from outside production code, and the GC policy as one runtime hook.

`Session.stats()` is the read-only snapshot benchmarks and tests observe; `TaudashApp(on_frame=...)`
/ `observe_frames` tell an outside observer about every rendered tick; the engine never touches the
garbage collector unless the program installed a policy (taudash.runtime)."""

from __future__ import annotations

import dataclasses
import gc
from datetime import UTC, datetime

import pytest
from factories import workload
from tools import paths
from tools.waiting import FrameCount, eventually, next_renders

from taudash.app import TaudashApp
from taudash.engine import heap
from taudash.engine.incremental import derive
from taudash.engine.model import lookup
from taudash.engine.session import Session, SessionStats
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.view import SourceInfo
from taudash.runtime import GC_THRESHOLDS, LongLivedHeap, tune_gc_for_long_lived_model
from taudash.screens.kit.base import DashScreen

FIXTURES = paths.FIXTURES
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _add_workloads(s: Session, *names: str) -> None:
    """Workload events as a live source applies them (upserts under the session's lock)."""
    with s.writing() as store:
        for name in names:
            doc = workload(name, "team-a")
            store.upsert(lookup(doc["apiVersion"], doc["kind"]).model.model_validate(doc), raw=doc)


def _session(**kw) -> Session:
    path = FIXTURES / "ui-demo.yaml"
    r = load_snapshot(path)
    return Session(r.store, SourceInfo(type="snapshot", context=r.context, path=str(path)), **kw)


@pytest.fixture
def clean_gc():
    """Whatever a test does to the collector and the heap policy is undone afterwards."""
    thresholds, enabled, previous = gc.get_threshold(), gc.isenabled(), heap.install(None)
    # Start from a clean collector: earlier tests in this process (the CLI installs the policy) may have frozen
    # objects, which refcounting then frees one by one: the freeze count would move under this test's feet.
    gc.unfreeze()
    gc.enable()
    yield
    heap.install(previous)
    gc.set_threshold(*thresholds)
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


# Session.stats ------------------------------------------------------------------------------------
def test_stats_follow_full_builds_updates_and_pending_changes():
    s = _session()
    before = s.stats()
    assert before == SessionStats(
        incremental=True, incremental_ready=False, full_builds=0, updates=0, views=0, last_derive_seconds=None,
        derive_seconds_total=0.0, revision=s.store.revision, view_revision=None, pending_changes=None,
        last_event_at=s.store.last_event_at, history_samples=0)

    s.view(NOW)
    first = s.stats()
    assert (first.full_builds, first.updates, first.views, first.pending_changes) == (1, 0, 1, 0)
    assert first.view_revision == s.store.revision and first.incremental_ready
    assert first.last_derive_seconds is not None and first.derive_seconds_total >= first.last_derive_seconds
    assert first.history_samples == 1

    s.view(NOW)  # nothing changed: the cached view, no derive counted
    assert s.stats().views == 1

    _add_workloads(s, "extra-1", "extra-2")
    waiting = s.stats()
    assert waiting.pending_changes == 2 and waiting.revision == first.revision + 2
    assert waiting.incremental_ready  # two changes: a small update, cheap enough to run inline

    s.view(NOW)
    after = s.stats()
    assert (after.full_builds, after.updates, after.views, after.pending_changes) == (1, 1, 2, 0)


def test_stats_of_a_session_with_its_own_derive_are_not_incremental():
    s = _session(derive_fn=derive)
    s.view(NOW)
    st = s.stats()
    assert not st.incremental and not st.incremental_ready
    assert (st.full_builds, st.updates, st.views) == (0, 0, 1)


def test_stats_are_a_frozen_snapshot():
    s = _session()
    st = s.stats()
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.views = 5  # type: ignore[misc]
    s.view(NOW)
    assert st.views == 0 and s.stats().views == 1  # the old snapshot does not move


# frames, observed from outside ------------------------------------------------------------------
async def test_frame_observers_see_each_rendered_tick_and_can_stop():
    seen: list[tuple[object, DashScreen, float]] = []
    app = TaudashApp(_session(), clock=lambda: NOW, tick=0.05,
                     on_frame=[lambda frame, screen, took: seen.append((frame, screen, took))])
    async with app.run_test(size=(120, 36)):
        assert await eventually(lambda: len(seen) >= 2)
        frame, screen, took = seen[-1]
        assert screen is app.screen and isinstance(screen, DashScreen) and screen.nav == "overview"
        assert frame is app.session.last_frame or frame.revision == app.session.store.revision
        assert took >= 0.0
        later = FrameCount(app)
        await next_renders(app, 2)
        assert later.n >= 2
        later.stop()
        stopped_at = later.n
        await next_renders(app, 2)  # the app keeps rendering, the stopped observer hears nothing
        assert later.n == stopped_at


async def test_a_modal_on_top_renders_nothing_and_tells_no_observer():
    app = TaudashApp(_session(), clock=lambda: NOW, tick=3600.0)  # no tick of its own: only these renders
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")  # help on top: rendering pauses
        await pilot.pause()
        count = FrameCount(app)
        app.render_frame(app.session.frame(NOW))
        assert count.n == 0
        await pilot.press("question_mark")
        await pilot.pause()
        app.render_frame(app.session.frame(NOW))
        assert count.n == 1


# GC policy ----------------------------------------------------------------------------------------
def test_the_engine_leaves_the_collector_alone_without_a_policy(clean_gc):
    gc.set_threshold(700, 10, 10)
    frozen = gc.get_freeze_count()
    s = _session()
    s.view(NOW)  # a full build
    assert s.stats().full_builds == 1
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == frozen
    with heap.current().bulk():
        assert gc.isenabled()


def test_the_runtime_hook_tunes_thresholds_and_freezes_after_a_full_build(clean_gc):
    policy = tune_gc_for_long_lived_model()
    assert gc.get_threshold() == GC_THRESHOLDS
    assert heap.current() is policy and isinstance(policy, LongLivedHeap)
    assert tune_gc_for_long_lived_model() is policy  # idempotent: one policy per process
    gc.unfreeze()
    s = _session()
    s.view(NOW)
    assert gc.get_freeze_count() > 0  # what the full build made is out of the collector's reach
    gc.unfreeze()
    _add_workloads(s, "extra-1")
    s.view(NOW)  # an incremental update: nothing to freeze
    assert s.stats().updates == 1 and gc.get_freeze_count() == 0


def test_the_cli_installs_the_policy_for_its_commands(clean_gc, capsys):
    from taudash.cli import main

    gc.set_threshold(700, 10, 10)
    assert not isinstance(heap.current(), LongLivedHeap)
    assert main(["status", "--snapshot", str(FIXTURES / "ui-demo.yaml"), "-o", "json"]) == 0
    assert isinstance(heap.current(), LongLivedHeap) and gc.get_threshold() == GC_THRESHOLDS


def test_bulk_pauses_the_collector_once_for_nested_lists_and_restores_it(clean_gc):
    policy = LongLivedHeap()
    gc.enable()
    gc.unfreeze()
    with policy.bulk():
        assert not gc.isenabled()
        with policy.bulk():  # lists of several kinds overlap
            assert not gc.isenabled()
        assert not gc.isenabled()  # still one list running
        keep = [[i] for i in range(1000)]
    assert gc.isenabled() and gc.get_freeze_count() >= len(keep)

    gc.disable()  # a program that runs with the collector off keeps it off
    with policy.bulk():
        pass
    assert not gc.isenabled()


def test_bulk_restores_the_collector_when_a_list_fails(clean_gc):
    policy = LongLivedHeap()
    gc.enable()
    with pytest.raises(RuntimeError), policy.bulk():
        raise RuntimeError("list cut")
    assert gc.isenabled()
