"""The benchmark (`taudash bench [--size S|M|L] [-o json]`): taudash at fleet scale on a synthetic cluster.

One run: generate the cluster (engine.bench.generate) and serve it from the simulator in its own
process; sync it through the live source; compare with decoding the same bytes and with kubectl;
derive the view; open the dashboard headless and measure paints, ticks and key presses while
events stream at --rate per second; report peak memory. Every figure is printed with its target.
Progress goes to stderr; `-o json` prints one machine-readable object on stdout. The command line is
parsed in taudash/commands/bench.py; `--fleet N` is taudash/bench/fleet.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import gc
import json
import os
import random
import sys
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from taudash.bench.history import history_phase
from taudash.bench.measure import (
    DECODER,
    Figure,
    Interleaved,
    LatencyProbe,
    SimProcess,
    ViewFollower,
    decode_elsewhere,
    derive_seconds,
    kubectl_seconds,
    median,
    peak_rss_mib,
    percentile,
    rss_mib,
    say,
    sync_and_decode_interleaved,
    sync_elsewhere,
)
from taudash.bench.queue_view import queue_view_phase
from taudash.bench.ratios import CPU_LOAD, DECODE, KEY, RATIOS, TABLE_PAINT, TABLE_RENDER, with_ratios, yardstick
from taudash.bench.table import print_table
from taudash.bench.yardstick import cpu_yardstick, key_yardstick, table_yardstick
from taudash.compose import bench_session
from taudash.engine.incremental import derive
from taudash.engine.session import Frame, Session
from taudash.engine.sources.kube import KubeSource
from taudash.engine.store import Store

if TYPE_CHECKING:
    from taudash.screens.kit.base import DashScreen

UI_SIZE = (160, 48)
SYNC_ROUNDS = 3  # interleaved sync/decode pairs: each figure is their median, printed with its spread
DERIVE_ROUNDS = 3  # full derivations, each followed by a raw decode of the same pages (its yardstick)


def run(size: str, seed: int, rate: float, stream_seconds: float | None, kubectl: bool, profile: str | None,
        output: str) -> int:
    """One benchmark run, its result printed as a table or one JSON object on stdout."""
    results = asyncio.run(bench(size, seed, rate, stream_seconds, kubectl, profile_dir=profile))
    if output == "json":
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_table(results)
    return 0


class _Profiles:
    """pyinstrument around a phase when --profile is given (text, slowest call paths first)."""

    def __init__(self, where: str | None) -> None:
        self.dir = Path(where) if where else None
        if self.dir is not None:
            from pyinstrument import Profiler  # noqa: F401 - fail early with a clear ImportError

            self.dir.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def phase(self, name: str):
        if self.dir is None:
            yield
            return
        from pyinstrument import Profiler

        p = Profiler(interval=0.001, async_mode="disabled")
        p.start()
        try:
            yield
        finally:
            p.stop()
            (self.dir / f"{name}.txt").write_text(p.output_text(unicode=True, color=False, show_all=False))


async def bench(size: str, seed: int = 0, rate: float = 1000.0, stream_seconds: float | None = None,
                kubectl: bool = True, progress=say, profile_dir: str | None = None) -> dict:
    started = time.perf_counter()
    prof = _Profiles(profile_dir)
    secs = stream_seconds if stream_seconds is not None else (6.0 if size == "S" else 10.0)
    figs: dict[str, Figure] = {}

    def fig(f: Figure) -> None:
        figs[f.key] = f
        progress(f"  {f.line()}")

    sim = SimProcess(size, seed)
    progress(f"generating size {size} (seed {seed}) and starting the simulator in its own process")
    setup = sim.start()
    progress(f"simulator serving {sim.objects} objects ({setup:.1f} s)")
    store_session = None
    sync = None
    syncdec: dict = {}
    try:
        store, lock = Store(), threading.RLock()  # the session's, once synced: the source writes under its lock

        progress(f"initial sync through engine.sources.kube (list, decode, store) and a raw {DECODER} decode "
                 f"of the same pages, interleaved: (sync, decode) x {SYNC_ROUNDS}")
        if prof.dir is not None:  # profiled apart, in a process of its own: the runs counted are not slowed
            await asyncio.to_thread(sync_elsewhere, sim.kubeconfig, profile=prof.dir / "sync.txt")
        spool = Path(sim.dir) / "pages.bin"
        inter = await sync_and_decode_interleaved(sim.kubeconfig, spool, store, lock, SYNC_ROUNDS,
                                                  sim.cpu_seconds, progress)
        sync = inter.kept
        syncdec = _sync_decode_figures(inter, fig)
        session = store_session = bench_session(sync.live, sim.url)  # the queue view asks the visibility API
        if sync.not_synced:
            progress(f"  not synced: {', '.join(sync.not_synced)}")
        progress(f"  ({sum(sync.counts.values())} objects, {_mem()})")

        if kubectl:
            progress("kubectl get <every resource> -A -o json against the same server (one run)")
            kt, note = await asyncio.to_thread(kubectl_seconds, sim.kubeconfig)
            fig(Figure("kubectl_s", "kubectl (same lists)", kt, "s", note=note))
            fig(Figure.of_runs("sync_vs_kubectl", "initial sync / kubectl",
                               [s / kt for s in inter.sync_runs()] if kt else [],
                               "x", 1.0, note="below 1: faster than kubectl; each sync over the one kubectl run"))

        now = datetime.now(UTC)
        progress(f"full derivation of the ClusterView (every rule), each followed by a raw {DECODER} decode of "
                 f"the same pages in a fresh process (its yardstick) x {DERIVE_ROUNDS}")
        fulls: list[float] = []
        decodes: list[float] = []
        for i in range(DERIVE_ROUNDS):
            with session.lock, prof.phase("derive_full") if i == 0 else contextlib.nullcontext():
                fulls.append(derive_seconds(lambda: derive(store, now, session.config, session.source), repeat=1))
            decodes.append((await asyncio.to_thread(decode_elsewhere, spool)).seconds)
        spool.unlink()
        fig(Figure.of_runs("derive_full_s", "full derivation", fulls, "s"))
        fig(yardstick(DECODE, f"raw decode ({DECODER}), alternated with the derivations", decodes))
        progress(f"  ({_mem()})")

        with session.lock:
            t = time.perf_counter()
            session.view(now)  # the session's first view (what the incremental path starts from)
            first_view = time.perf_counter() - t
        fig(Figure("session_first_view_s", "session: first view", first_view, "s"))
        progress(f"  ({_mem()})")

        before = _source_counts(sync.source, session)
        pauses = _GcPauses()
        ui_yard: dict[str, list[float]] = {TABLE_PAINT: [], TABLE_RENDER: [], KEY: []}
        await _ui_yardsticks(ui_yard, progress)
        await _ui_phase(session, sim, sync.store, rate, secs, fig, progress, prof)
        await _ui_yardsticks(ui_yard, progress)
        pauses.close()
        size_note = f"bare Textual app at {UI_SIZE[0]}x{UI_SIZE[1]}, before and after the dashboard"
        fig(yardstick(TABLE_PAINT, f"yardstick: DataTable screen first paint ({size_note})", ui_yard[TABLE_PAINT]))
        fig(yardstick(TABLE_RENDER, "yardstick: DataTable, every visible cell re-rendered", ui_yard[TABLE_RENDER]))
        fig(yardstick(KEY, "yardstick: key → trivial screen switch", ui_yard[KEY]))
        after = _source_counts(sync.source, session)
        progress(f"  GC during the UI phase: {pauses.describe()}")
        progress("  source during the UI phase: " + ", ".join(f"{k} {after[k] - before[k]}" for k in after))
        fig(Figure("peak_rss_mib", "peak resident memory (client)", peak_rss_mib(), "MiB", 800.0))
        rss = sim.command("rss")
        if rss.startswith("RSS"):
            fig(Figure("sim_rss_mib", "peak resident memory (simulator process)", int(rss.split()[1]) / 1024, "MiB"))
        await asyncio.to_thread(history_phase, fig, progress, size, seed)  # after the RSS figures: its own store
    finally:
        if sync is not None:
            await sync.close()
        sim.stop()
    figs = with_ratios(figs)
    progress("targets as ratios to the yardsticks measured in this run:")
    for r in RATIOS:
        if r.key in figs:
            progress(f"  {figs[r.key].line()}")
    total = time.perf_counter() - started
    progress(f"done in {total:.0f} s")
    del store_session
    return {
        "apiVersion": "taudash/v1",
        "kind": "BenchResult",
        "size": size,
        "seed": seed,
        "rate": rate,
        "streamSeconds": secs,
        "objects": sim.objects,
        "counts": sync.counts if sync else {},
        "decoder": DECODER,
        "syncDecode": syncdec,
        "setupSeconds": round(setup, 3),
        "totalSeconds": round(total, 3),
        "figures": {k: f.to_json() for k, f in figs.items()},
    }


async def _ui_phase(session: Session, sim: SimProcess, store, rate: float, secs: float, fig, progress,
                    prof: _Profiles | None = None) -> None:
    prof = prof or _Profiles(None)
    from textual import events

    from taudash.app import SCREENS, TaudashApp
    from taudash.screens.kit.messages import Navigate
    from taudash.screens.registry import REGISTRY

    # Every registered screen: the numbered ones by their key, the rest (History, Fleet) the way the
    # palette and `:` reach them (a Navigate message to the app).
    keys = {e.name: e.key for e in REGISTRY}
    tick_costs: list[float] = []
    tick_screens: list[str] = []

    def rendered(frame: Frame, screen: DashScreen, seconds: float) -> None:
        # per-tick render on the visible screen (the synchronous part), told by the app
        tick_costs.append(seconds)
        tick_screens.append(screen.nav or type(screen).__name__)

    # TAUDASH_BENCH_PRECOMPOSE=0 measures first visits without the background composition (to compare).
    app = TaudashApp(session, tick=1.0, on_frame=[rendered],
                     precompose=os.environ.get("TAUDASH_BENCH_PRECOMPOSE", "1") != "0")
    # The UI thread's CPU time during each press (the event loop's work while the key waited and was
    # served, whoever's it was): unlike the wall time it does not grow when the machine is busy.
    press_cpu: list[float] = []

    async def switch(pilot, name: str) -> float:
        # The key enters like a terminal's (a Key event to the app) and the clock stops once the new
        # screen has rendered its data and the compositor has refreshed it. (Pilot.press would add
        # Textual's wait-for-idle: at least 40 ms, and up to seconds while events keep the app busy.)
        t, c = time.perf_counter(), time.thread_time()
        key = keys[name]
        app.post_message(events.Key(key, key) if key else Navigate(name))
        for _ in range(60000):
            if isinstance(app.screen, SCREENS[name]) and app.screen.frame is not None:
                break
            await asyncio.sleep(0.001)
        await _painted(app)
        press_cpu.append(time.thread_time() - c)
        return time.perf_counter() - t

    progress(f"headless dashboard at {UI_SIZE[0]}x{UI_SIZE[1]}: first paint and switch of each screen")
    t = time.perf_counter()
    async with app.run_test(size=UI_SIZE) as pilot:
        await pilot.pause()
        fig(Figure("ui_start_s", "dashboard start (overview painted)", time.perf_counter() - t, "s"))
        # The app composes the other screens in the background after the first view; the
        # operator's first visit to each comes after that. A key pressed before it pays one composition.
        for _ in range(60000):
            if app.composed or not app.precompose:
                break
            await asyncio.sleep(0.001)
        await pilot.pause()  # the last screen's widgets handle their resize (a table builds its first page)
        await _painted(app)
        fig(Figure("ui_composed_s", "every screen composed in the background (after start)",
                   time.perf_counter() - t, "s"))
        with prof.phase("ui_first_paint"):
            first = {n: await switch(pilot, n) for n in keys if n != "overview"}
            first["overview"] = await switch(pilot, "overview")
        fig(Figure("ui_screens", "screens visited (every registered one)", len(first), "screens",
                   note=", ".join(first)))
        worst = max(first, key=first.__getitem__)
        fig(Figure("first_paint_max_s", f"first paint, slowest screen ({worst})", first[worst], "s"))
        rounds = [{n: await switch(pilot, n) for n in keys} for _ in range(3)]  # medians per screen
        again = {n: median([r[n] for r in rounds]) or 0.0 for n in keys}
        worst = max(again, key=again.__getitem__)
        fig(Figure("switch_max_s", f"screen switch, slowest screen ({worst})", again[worst], "s"))
        progress("  first paint / switch per screen: " + ", ".join(
            f"{n} {first[n] * 1000:.0f}/{again[n] * 1000:.0f} ms" for n in keys) + f" ({_mem()})")

        progress("per-tick render cost on each screen")
        per_screen: dict[str, float] = {}
        for n in keys:
            await switch(pilot, n)
            runs = []
            for _ in range(3):
                frame = session.frame(datetime.now(UTC))
                # As if the view had changed: a screen skips a tick that shows the view it already shows
                # (compared by identity), so it gets a new view object with the same parts.
                frame = replace(frame, view=copy.copy(frame.view))
                t = time.perf_counter()
                app.render_frame(frame)
                await _painted(app)
                runs.append(time.perf_counter() - t)
            per_screen[n] = median(runs) or 0.0
        progress("  per-tick render per screen: " + ", ".join(f"{n} {v * 1000:.0f} ms" for n, v in per_screen.items())
                 + f" ({_mem()})")
        worst = max(per_screen, key=per_screen.__getitem__)
        fig(Figure("tick_render_max_s", f"per-tick render, slowest screen ({worst})", per_screen[worst], "s"))

        progress(f"load: {rate:.0f} events/s for {secs:.0f} s with the dashboard open")
        probe = LatencyProbe(store)

        def refresh(now: datetime) -> int:
            with session.lock:
                session.view(now)
                return store.revision

        # How the view follows the events (docs/decisions.md): small incremental updates inline on the
        # event loop, one per burst (the default: it measured best for input at L). TAUDASH_BENCH_FOLLOW=thread
        # [:period] derives in a worker thread like the app's own tick, at most every period s (0.1 by default);
        # inline:period coalesces inline updates the same way. Measuring only, to compare.
        follow = os.environ.get("TAUDASH_BENCH_FOLLOW", "inline")
        if os.environ.get("TAUDASH_BENCH_SWITCH"):  # measuring only: the GIL's switch interval (s) for this run
            sys.setswitchinterval(float(os.environ["TAUDASH_BENCH_SWITCH"]))
        mode, _, period = follow.partition(":")
        follower = ViewFollower(store, refresh, lambda: datetime.now(UTC), probe,
                                inline=(lambda: session.stats().incremental_ready) if mode == "inline" else None,
                                period=float(period) if period else (0.0 if mode == "inline" else 0.1))
        progress(f"  view follower: {mode}, a refresh at most every {follower.period:g} s")
        cpu_runs = cpu_yardstick()  # just before the load, and just after it
        tick_costs.clear()
        tick_screens.clear()
        probe.active = True
        follower.start()
        stream = asyncio.create_task(sim.acommand(f"stream {rate} {secs}"))
        presses: list[float] = []
        press_cpu.clear()
        loop_cpu = time.thread_time()
        rng = random.Random(7)
        names = list(keys)
        with prof.phase("load"):
            await asyncio.sleep(0.5)
            while not stream.done() or len(presses) < 3:  # a few presses even when the machine is slow
                presses.append(await switch(pilot, rng.choice([n for n in names if n != app.current_mode])))
                await asyncio.sleep(0.2)
            answer = await stream
        loop_cpu = time.thread_time() - loop_cpu
        await asyncio.sleep(0.5)  # the last events land and are derived
        probe.active = False
        await follower.stop()
        cpu_runs += cpu_yardstick()
        fig(yardstick(CPU_LOAD, "yardstick: fixed CPU loop (before and after the load)", cpu_runs))
        written = int(answer.split()[1]) if answer.startswith("STREAMED") else 0
        fig(Figure("events_per_s", "events applied to the store per second", probe.events / secs, "/s",
                   note=f"{written} writes at the simulator"))
        fig(Figure("update_p50_s", "incremental update, p50", median(follower.durations), "s",
                   note=f"{len(follower.durations)} updates"))
        fig(Figure("update_p99_s", "incremental update, p99", percentile(follower.durations, 99), "s",
                   note="CPU time of the update in the follower's thread" if not mode == "inline" else "wall, inline"))
        fig(Figure("incr_p50_s", "event → view ready, p50 (incl. waiting behind renders)", median(probe.samples), "s"))
        fig(Figure("incr_p99_s", "event → view ready, p99 (incl. waiting behind renders)",
                   percentile(probe.samples, 99), "s"))
        fig(Figure("key_p95_s", "key press → screen change, p95 (under load)", percentile(presses, 95), "s"))
        fig(Figure("key_cpu_p95_s", "key press → screen change, p95 UI-thread CPU (under load)",
                   percentile(press_cpu, 95), "s", note="the event loop's work during the press; steadier than wall"))
        fig(Figure("ui_cpu_share", "UI thread CPU under load (share of one core)", loop_cpu / secs, "x",
                   note="decode + apply of watch events, renders, Textual; the follower's thread excluded"))
        fig(Figure("tick_under_load_s", "per-tick render under load, median", median(tick_costs), "s"))
        progress("  ticks under load: " + ", ".join(f"{n} {c * 1000:.0f} ms" for n, c in zip(tick_screens, tick_costs,
                                                                                            strict=True)))
        progress(f"  ({len(probe.samples)} latency samples, {follower.refreshes} view refreshes, "
                 f"{len(presses)} key presses, {len(tick_costs)} ticks; {_mem()})")
        with prof.phase("queue_view"):
            await queue_view_phase(app, fig, progress, _painted)
        progress(f"  (after the queue view: {_mem()})")  # the 10k ClusterQueue (taudash/bench/queue_view.py)


class _GcPauses:
    """Collections of the oldest generation and how long they paused the process."""

    def __init__(self) -> None:
        self.full: list[float] = []
        self._t = 0.0
        gc.callbacks.append(self._cb)

    def _cb(self, phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._t = time.perf_counter()
        else:
            self.full.append(time.perf_counter() - self._t)

    def close(self) -> None:
        gc.callbacks.remove(self._cb)

    def describe(self) -> str:
        if not self.full:
            return "no full collection"
        return (f"{len(self.full)} full collections, longest {max(self.full) * 1000:.0f} ms, total "
                f"{sum(self.full) * 1000:.0f} ms")


def _sync_decode_figures(inter: Interleaved, fig) -> dict:
    """The figures of the interleaved sync/decode rounds (medians with their runs), and the record of
    how they were measured for the JSON output."""
    mb = inter.decodes[0].bytes / 1e6
    fig(Figure.of_runs("sync_s", "initial sync", inter.sync_runs(), "s"))
    fig(Figure.of_runs("sync_cpu_s", "initial sync, client CPU", [s.cpu_seconds for s in inter.syncs], "s"))
    server = [s.server_cpu_seconds for s in inter.syncs if s.server_cpu_seconds is not None]
    if server:
        fig(Figure.of_runs("sync_server_cpu_s", "initial sync, simulator CPU (serving the lists)", server, "s"))
    fig(Figure.of_runs("decode_s", f"raw decode ({DECODER}, {mb:.0f} MB, the same pages)", inter.decode_runs(), "s"))
    fig(Figure.of_runs("decode_cpu_s", "raw decode, CPU", [d.cpu_seconds for d in inter.decodes], "s"))
    pages = "same pages" if inter.same_pages else "PAGES DIFFER"
    fig(Figure.of_runs("sync_vs_decode", "initial sync / raw decode", inter.ratios(), "x", 2.0,
                       note=f"{len(inter.syncs)} interleaved pairs, {inter.transport}, {pages}"))
    fig(Figure.of_runs("sync_vs_decode_cpu", "initial sync / raw decode, CPU", inter.cpu_ratios(), "x",
                       note="client CPU of the sync over the decode's"))
    return {
        "transport": inter.transport,
        "samePages": inter.same_pages,
        "process": "each sync and each decode in a fresh process: the first sync is the bench's own (kept), "
                   "the others and every decode run in child processes; the collector paused while decoding",
        "pages": inter.decodes[0].pages,
        "bytes": inter.decodes[0].bytes,
        "spoolSeconds": round(inter.spool_seconds, 3),
        "rounds": [{"syncSeconds": s.seconds, "syncCpuSeconds": s.cpu_seconds, "serverCpuSeconds": s.server_cpu_seconds,
                    "decodeSeconds": d.seconds, "decodeCpuSeconds": d.cpu_seconds}
                   for s, d in zip(inter.syncs, inter.decodes, strict=True)],
    }


async def _ui_yardsticks(runs: dict[str, list[float]], progress) -> None:
    """One round of the Textual yardsticks (bare apps in this process), their runs appended to `runs`."""
    paints, renders = await table_yardstick(UI_SIZE, _painted)
    keys = await key_yardstick(UI_SIZE, _painted)
    runs[TABLE_PAINT] += paints
    runs[TABLE_RENDER] += renders
    runs[KEY] += keys
    progress(f"  yardsticks: DataTable first paint {', '.join(f'{x * 1000:.0f}' for x in paints)} ms, re-render "
             f"{', '.join(f'{x * 1000:.0f}' for x in renders)} ms; key → screen "
             f"{', '.join(f'{x * 1000:.1f}' for x in keys)} ms")


def _source_counts(source: KubeSource, session: Session) -> dict[str, int]:
    stats = session.stats()
    return {"re-lists": sum(st.relists for st in source.status.values()),
            "watch restarts": sum(st.watch_restarts for st in source.status.values()),
            "full view builds": stats.full_builds, "incremental updates": stats.updates}


async def _painted(app) -> None:
    """Until the current screen has repainted what changed, including refreshes its widgets asked for
    while processing the change (a table measuring its new rows refreshes once more)."""
    for _ in range(2):
        await app.screen.wait_for_refresh()


def _mem() -> str:
    now = rss_mib()
    return (f"RSS now {now:.0f} MiB, peak {peak_rss_mib():.0f} MiB" if now is not None
            else f"peak RSS {peak_rss_mib():.0f} MiB")


