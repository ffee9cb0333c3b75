"""Freshness is watch health, end to end: the live source against the simulator, read by the session, the
header's words and the metrics. A frozen healthy cluster stays fresh; a broken or silent watch turns stale."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from prometheus_client.registry import CollectorRegistry
from tools.paths import FIXTURES

from taudash.engine.incremental import derive
from taudash.engine.session import Session
from taudash.engine.sources.client import connect
from taudash.engine.sources.kube import KubeSource
from taudash.engine.store import Store
from taudash.engine.view import SourceInfo
from taudash.serve import metrics as m
from taudash.sim.server import SimServer

FIXTURE = FIXTURES / "sim-cluster.yaml"
BOUND = 30.0  # seconds of the source's clock


class Clock:
    """The source's clock, moved by the test: simulated time spans without waiting for them."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


async def until(pred, within: float = 60.0) -> bool:
    """Wait on a condition (generous: a busy machine); the caller asserts the condition itself."""
    deadline = time.monotonic() + within
    while not pred() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return bool(pred())


async def live(sim: SimServer, clock, bound: float = BOUND):
    store = Store()
    target = await connect(kubeconfig=str(sim.kubeconfig))
    source = KubeSource(store, target, clock=clock, watch_bound=bound, backoff_base=0.05, backoff_cap=0.2)
    await source.start()
    assert await source.wait_synced(30)
    return store, target, source


def session(store: Store) -> Session:
    return Session(store, SourceInfo(type="kube", context="sim"))


def at(t: float) -> datetime:
    return datetime.fromtimestamp(t, tz=UTC)


def scrape(store: Store, now: float) -> CollectorRegistry:
    latest = m.Latest()
    latest.publish(m.sample_of(derive(store, at(now)), store, now))
    reg = CollectorRegistry()
    reg.register(m.TaudashCollector(latest, "kube", "sim", clock=lambda: now))
    return reg


def heard_since(store: Store, t: float) -> bool:
    watches = store.watch_health()
    return bool(watches) and all(w.open and (w.heard_at or 0) >= t for w in watches.values())


async def test_a_frozen_healthy_cluster_stays_fresh_for_ten_simulated_minutes():
    clock = Clock(1_800_000_000.0)
    async with SimServer(FIXTURE, bookmark_interval=0.05) as sim:  # no controllers: nothing changes
        store, target, source = await live(sim, clock)
        try:
            s = session(store)
            assert await until(lambda: heard_since(store, clock.t))
            last_change = store.last_event_at
            start = clock.t
            while clock.t - start < 600:  # 10 minutes: past every old threshold (5 s, 45 s, 60 s) many times
                clock.t += BOUND / 2
                assert await until(lambda: heard_since(store, clock.t)), "bookmarks stopped arriving"
                now = clock.t + BOUND * 0.9  # just before the bound: still fresh, though nothing changed
                fr = s.freshness(at(now))
                assert fr.fresh and not fr.stale_watches and fr.age is not None and fr.age <= BOUND, fr
                reg = scrape(store, now)
                assert reg.get_sample_value("taudash_data_age_seconds") <= BOUND
                assert reg.get_sample_value("taudash_watch_healthy", {"resource": "workloads.kueue.x-k8s.io"}) == 1
            assert store.last_event_at == last_change  # no event in 10 minutes: age is not "since the last change"
            assert clock.t - last_change >= 600
            # the same store read past the bound with no bookmark since: stale (the negative control)
            later = clock.t + BOUND + 1
            assert not s.freshness(at(later)).fresh
            assert scrape(store, later).get_sample_value("taudash_watch_healthy",
                                                         {"resource": "workloads.kueue.x-k8s.io"}) == 0
        finally:
            await source.stop()
            await target.close()


async def test_a_broken_watch_turns_stale_within_the_bound():
    clock = Clock(1_800_000_000.0)
    async with SimServer(FIXTURE, bookmark_interval=0.05) as sim:
        store, target, source = await live(sim, clock)
        try:
            s = session(store)
            assert await until(lambda: heard_since(store, clock.t))
            assert s.freshness(at(clock.t)).fresh
            # watches on Workloads refused from now on; the open one is cut
            sim.faults.fail(500, resource="workloads.kueue.x-k8s.io", verbs={"watch", "list"})
            sim.faults.drop_watches()
            assert await until(lambda: not store.watch_health()["Workload"].open)
            others_open = lambda: all(w.open for k, w in store.watch_health().items() if k != "Workload")  # noqa: E731
            assert await until(others_open)  # the other kinds' watches resumed (dropped too)
            broke_at = store.watch_health()["Workload"].heard_at
            fr = s.freshness(at(broke_at + BOUND))
            assert "Workload" in fr.stale_watches and not fr.fresh
            assert scrape(store, broke_at + BOUND).get_sample_value(
                "taudash_watch_healthy", {"resource": "workloads.kueue.x-k8s.io"}) == 0
            assert scrape(store, broke_at + BOUND).get_sample_value(
                "taudash_watch_healthy", {"resource": "clusterqueues.kueue.x-k8s.io"}) == 1
            # healed: the watch re-opens and is fresh again
            sim.faults.clear()
            clock.t += 1
            assert await until(lambda: heard_since(store, clock.t))
            assert s.freshness(at(clock.t)).fresh
        finally:
            await source.stop()
            await target.close()


async def test_a_paused_stream_open_but_silent_turns_stale_and_recovers():
    async with SimServer(FIXTURE, bookmark_interval=0.05) as sim:
        store, target, source = await live(sim, time.time, bound=1.0)  # the real clock, a short bound
        try:
            s = session(store)
            assert await until(lambda: s.freshness(datetime.now(UTC)).fresh)
            sim.faults.pause_watches()
            assert await until(lambda: "Workload" in s.freshness(datetime.now(UTC)).stale_watches)
            assert store.watch_health()["Workload"].open  # stale although the connection never closed
            sim.faults.pause_watches(False)
            assert await until(lambda: s.freshness(datetime.now(UTC)).fresh)
        finally:
            await source.stop()
            await target.close()
