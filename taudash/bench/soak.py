"""`taudash bench --soak MINUTES --size S|M [--fault-every SECONDS] [--out DIR] [-o json]`: run the console for
a long time under faults and report what leaked, what was lost and what stalled (docs/reliability.md, "Soak").

Three processes, as an operator's host has them: the simulator (taudash/bench/soak_sim.py: the bench's
generated cluster, changing `rate` times a second, faults on command); this process — the dashboard,
headless, on a live source, with its history recorder, switching screens now and then; and `taudash serve`
with metrics and the wallboard, a viewer on the wallboard (a websocket client speaking the browser's
protocol) and a Prometheus scraper on the metrics. Both the dashboard and serve record the same cluster
into one history file: the dashboard records, serve stands by (engine/history/writer_lock.py).

Every `fault_every` seconds one fault, in turn: an API-server restart, a watch 410 storm, a 5xx burst, a
403 flip on a kind, a hang, slow answers, a clock jump (the dashboard's and recorder's clock steps
forward). Each lasts `min(10 s, fault_every / 3)`, then clears. Every `SAMPLE_SECONDS` the soak samples
resident memory (all three processes), open descriptors and threads (this process and serve), asyncio
tasks, tick latency (the longest gap between the dashboard's rendered ticks, the longest render, the
event loop's longest lag) and the recorder's rows. The sample just before each fault is a settled one
(the last fault cleared a while ago): descriptor, task and thread growth compare settled samples.

At the end the churn stops and the source settles; then the store is compared with the server (every kind,
by resourceVersion: taudash/bench/soak_check.py), the findings with those derived from a fresh list of
the server at the same instant, and the recorder's file with the digests of what it committed.

Figures (the bench's format: value, unit, target, pass): faults injected, RSS growth after warm-up
(≤ 10 %), descriptor growth (0), asyncio task growth (0), thread growth (0), stalled ticks (> 1 s late:
0), objects differing (0), recorder rows lost (0), history errors (0), findings wrong after the faults
cleared (0). Plots of memory, descriptors and latency go to `--out` (default: a new folder under the
state directory's `soak/`), with `soak.json` and the processes' logs.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from taudash.bench.measure import Figure, percentile, rss_mib
from taudash.bench.soak_check import CountedRecorder, differing, finding_difference, lost_passes
from taudash.bench.soak_memory import MemoryTrace
from taudash.bench.soak_plot import Marker, write_plots
from taudash.bench.soak_stall import StallWatch
from taudash.engine.history import RecorderThread, cluster_key
from taudash.engine.history import db as hdb
from taudash.engine.incremental import derive
from taudash.engine.paths import state_dir
from taudash.engine.rules.base import RuleConfig
from taudash.engine.session import Session
from taudash.engine.store import AccessState, Store
from taudash.engine.view import SourceInfo

SAMPLE_SECONDS = 5.0
TICK_SECONDS = 1.0
STALL_SECONDS = 1.0  # a tick later than its period by more than this is stalled
RSS_GROWTH_TARGET = 0.10
RATE = {"S": 20.0, "M": 50.0}  # cluster changes per second
FAULTS = ("api-restart", "watch-410-storm", "5xx-burst", "403-flip", "hang", "slow-answers", "clock-jump")
FORBIDDEN_KINDS = ("workloads.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io", "nodes", "localqueues.kueue.x-k8s.io")
CLOCK_JUMP = timedelta(minutes=10)
SCREENS = ("overview", "pool", "queues", "workspaces", "findings", "history", "sources")


def _progress(msg: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Clock:
    """The dashboard's and recorder's wall clock, which a clock-jump fault steps forward."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


class SimChild:
    """The simulator process (soak_sim.py): one command line in, one answer line out."""

    def __init__(self, size: str, seed: int, rate: float, directory: Path) -> None:
        self.kubeconfig = directory / "kubeconfig"
        self.log = directory / "simulator.log"
        self._err = open(self.log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "taudash.bench.soak_sim", "--size", size, "--seed", str(seed), "--rate", str(rate),
             "--kubeconfig", str(self.kubeconfig)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True)
        self._lock = threading.Lock()
        self.url = ""
        self.objects = 0

    def ready(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("READY"):
            raise RuntimeError(f"the simulator did not start: {line!r} (see {self.log})")
        _, self.url, objects = line.split()
        self.objects = int(objects)

    def command(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self._lock:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            return self.proc.stdout.readline().strip()

    async def acommand(self, line: str) -> str:
        return await asyncio.to_thread(self.command, line)

    def stop(self) -> None:
        try:
            if self.proc.poll() is None:
                with contextlib.suppress(OSError, ValueError):
                    self.command("quit")
                self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        finally:
            for f in (self.proc.stdin, self.proc.stdout):
                if f is not None:
                    f.close()
            self._err.close()


def threads_of_our_own() -> int:
    """This process's threads, less the event loop's executor workers: a bounded pool (asyncio.to_thread)
    that starts a worker when calls overlap and keeps it — growth there is not a leak."""
    return sum(1 for t in threading.enumerate() if not t.name.startswith("asyncio_"))


def proc_status(pid: int | str) -> dict[str, float]:
    """RSS (MiB), threads and open descriptors of a process, from /proc (empty off Linux)."""
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                out["rss_mib"] = int(line.split()[1]) / 1024
            elif line.startswith("Threads:"):
                out["threads"] = int(line.split()[1])
        out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError):
        pass
    return out


@dataclass
class Ticks:
    """The dashboard's rendered ticks: gaps between them and render costs, per sample window."""

    last: float | None = None
    gap: float = 0.0
    render: float = 0.0
    gaps: list[float] = field(default_factory=list)  # every gap, for the stall count and percentiles
    frames: int = 0

    def observe(self, frame: Any, screen: Any, seconds: float) -> None:
        now = time.monotonic()
        if self.last is not None:
            g = now - self.last
            self.gaps.append(g)
            self.gap = max(self.gap, g)
        self.last = now
        self.render = max(self.render, seconds)
        self.frames += 1

    def window(self) -> tuple[float, float]:
        out = (self.gap, self.render)
        self.gap = self.render = 0.0
        return out


class LoopLag:
    """How late the event loop wakes a sleeper (a blocked loop is a frozen dashboard)."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        while True:
            t = time.monotonic()
            await asyncio.sleep(0.25)
            self.worst = max(self.worst, time.monotonic() - t - 0.25)

    def window(self) -> float:
        out, self.worst = self.worst, 0.0
        return out


class ServeChild:
    """`taudash serve --metrics --web` on the same cluster, its log in the output folder."""

    def __init__(self, kubeconfig: Path, directory: Path, state: Path, traced: Path | None = None) -> None:
        self.log = directory / "serve.log"
        self.traced = traced  # tracemalloc on, a snapshot per SIGUSR1 (taudash/bench/soak_memory.py)
        self.kubeconfig = kubeconfig
        self.env = {**os.environ, "TAUDASH_STATE_DIR": str(state)}
        self.proc: asyncio.subprocess.Process | None = None
        self.web = self.metrics = ""

    async def start(self, within: float = 300.0) -> None:
        fh = await asyncio.to_thread(open, self.log, "wb")
        try:
            program = ["taudash.bench.soak_memory", str(self.traced)] if self.traced else ["taudash.cli"]
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", *program, "serve", "--kubeconfig", str(self.kubeconfig), "--interval", "2",
                "--metrics", "127.0.0.1:0", "--web", "127.0.0.1:0", stdin=subprocess.DEVNULL,
                stdout=fh, stderr=subprocess.STDOUT, env=self.env)
        finally:
            fh.close()
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            text = self.text()
            web, metrics = re.search(r"wallboard on (http://\S+/)", text), re.search(r"metrics on (http://\S+)", text)
            if web and metrics and "serving" in text:
                self.web, self.metrics = web.group(1), metrics.group(1)
                return
            if self.proc.returncode is not None:
                break
            await asyncio.sleep(0.2)
        raise RuntimeError(f"taudash serve did not start:\n{self.text()[-2000:]}")

    def text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def history_errors(self) -> list[str]:
        """Lines where serve's history recorder reported a problem (standing by and taking over are not)."""
        lines = [ln for ln in self.text().splitlines() if "history:" in ln]
        return [ln for ln in lines if "is recorded by" not in ln and "recording now" not in ln]

    async def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 60)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        return self.proc.returncode


class Viewer:
    """A wallboard viewer (the browser's protocol over a websocket) and a Prometheus scraper: reconnects
    when cut, counts what it got."""

    def __init__(self, web: str, metrics: str) -> None:
        self.web, self.metrics = web, metrics
        self.bytes = 0
        self.connects = 0
        self.scrapes = 0
        self.scrape_failures = 0
        self.tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self.tasks = [asyncio.ensure_future(self._view()), asyncio.ensure_future(self._scrape())]

    async def _view(self) -> None:
        import aiohttp

        async with aiohttp.ClientSession() as http:
            while True:
                try:
                    async with http.ws_connect(f"{self.web}ws?width=160&height=48") as ws:
                        self.connects += 1
                        await ws.send_str(json.dumps(["resize", {"width": 160, "height": 48}]))
                        async for msg in ws:
                            if msg.type == aiohttp.WSMsgType.BINARY:
                                self.bytes += len(msg.data)
                except (aiohttp.ClientError, OSError):
                    pass
                await asyncio.sleep(2)

    async def _scrape(self) -> None:
        import aiohttp

        async with aiohttp.ClientSession() as http:
            while True:
                await asyncio.sleep(10)
                try:
                    async with http.get(self.metrics, timeout=aiohttp.ClientTimeout(total=10)) as r:
                        await r.read()
                        self.scrapes += r.status == 200
                        self.scrape_failures += r.status != 200
                except (aiohttp.ClientError, OSError, TimeoutError):
                    self.scrape_failures += 1

    async def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


@dataclass
class Injected:
    name: str
    at: float  # seconds since the start
    seconds: float  # how long it lasted
    detail: str = ""
    answer: str = ""


class Faults:
    """One fault at a time, in turn; each cleared after `duration` seconds."""

    def __init__(self, sim: SimChild, clock: Clock, duration: float) -> None:
        self.sim, self.clock, self.duration = sim, clock, duration
        self.injected: list[Injected] = []
        self._forbidden = 0

    async def inject(self, n: int, t: float) -> Injected:
        name = FAULTS[n % len(FAULTS)]
        d = self.duration
        detail = ""
        if name == "api-restart":
            cmd = f"fault restart {min(3.0, d):g}"
        elif name == "watch-410-storm":
            cmd = "fault gone 10"
        elif name == "5xx-burst":
            cmd = "fault 5xx 0.5"
        elif name == "403-flip":
            detail = FORBIDDEN_KINDS[self._forbidden % len(FORBIDDEN_KINDS)]
            self._forbidden += 1
            cmd = f"fault forbid {detail}"
        elif name == "hang":
            cmd = f"fault hang {d:g}"
        elif name == "slow-answers":
            cmd = "fault slow 1.5"
        else:
            cmd = ""
            self.clock.offset += CLOCK_JUMP
            detail = f"+{CLOCK_JUMP.total_seconds():.0f} s"
        answer = await self.sim.acommand(cmd) if cmd else "OK clock"
        if not answer.startswith("OK"):
            raise RuntimeError(f"the simulator refused {cmd!r}: {answer}")
        f = Injected(name, t, d, detail or cmd, answer)
        self.injected.append(f)
        return f

    async def clear(self) -> None:
        answer = await self.sim.acommand("clear")
        if not answer.startswith("OK"):
            raise RuntimeError(f"the simulator refused to clear the faults: {answer}")


def _settled(store: Store) -> bool:
    return all(a.state in (AccessState.SYNCED, AccessState.ABSENT) for a in store.access_states().values())


async def soak(size: str, minutes: float, fault_every: float, out: Path, seed: int = 0,
               progress: Any = _progress, trace_memory: str | None = None) -> dict[str, Any]:
    from taudash.app import TaudashApp
    from taudash.engine.sources.client import connect
    from taudash.engine.sources.kube import KubeSource

    total = minutes * 60.0
    warmup = max(60.0, 0.1 * total)
    duration = min(10.0, fault_every / 3)
    await asyncio.to_thread(out.mkdir, parents=True, exist_ok=True)
    state = out / "state"
    started = time.monotonic()
    wall0 = time.time()
    rate = RATE.get(size, 50.0)
    progress(f"simulator: size {size} (seed {seed}), {rate:g} changes/s; output in {out}")
    sim = SimChild(size, seed, rate, out)
    samples: list[dict[str, Any]] = []
    settled: list[dict[str, Any]] = []
    clock = Clock()
    result: dict[str, Any] = {}
    trace = (MemoryTrace(out, every=120.0 if trace_memory == "allocations" else 60.0,
                         allocations=trace_memory == "allocations") if trace_memory else None)
    stalls = StallWatch(threshold=STALL_SECONDS)
    serve: ServeChild | None = None
    if trace is not None:
        trace.start()
    try:
        await asyncio.to_thread(sim.ready)
        progress(f"  serving {sim.objects} objects at {sim.url}")
        target = await connect(None, str(sim.kubeconfig))
        session = Session(Store(), SourceInfo(type="sim", context=target.context, path=target.server), RuleConfig(),
                          read_only=True)
        source = KubeSource(session.store, target, lock=session.lock)
        await source.start()
        if not await source.wait_synced(600):
            raise RuntimeError("the dashboard's source did not sync within 10 minutes")
        key = cluster_key(target.context, target.server)
        path = hdb.db_path(key, state)
        recorders: list[CountedRecorder] = []

        def open_recorder() -> CountedRecorder:
            rec = CountedRecorder(path, owner="taudash (the soak's dashboard)")
            recorders.append(rec)
            return rec

        history = RecorderThread(open_recorder, session, clock, period=5.0).start()
        ticks, lag = Ticks(), LoopLag()
        app = TaudashApp(session, clock=clock, tick=TICK_SECONDS, on_frame=[ticks.observe])
        serve = ServeChild(sim.kubeconfig, out, state, trace.serve_prefix if trace else None)
        viewer: Viewer | None = None
        faults = Faults(sim, clock, duration)
        async with app.run_test(size=(160, 48)):
            lag.task = asyncio.ensure_future(lag.run())
            stalls.start()
            for _ in range(600):  # the dashboard records first: serve stands by
                if history.recorder is not None or history.error:
                    break
                await asyncio.sleep(0.1)
            if history.recorder is None:
                raise RuntimeError(f"the dashboard's recorder did not open its file: {history.error}")
            await serve.start()
            serve_pid = serve.proc.pid if serve.proc else None
            if trace is not None:
                trace.serve_pid = serve_pid
            progress(f"  dashboard synced and recording; serve (pid {serve_pid}) on {serve.web} and {serve.metrics}")
            viewer = Viewer(serve.web, serve.metrics)
            viewer.start()
            for name in SCREENS:  # every screen the soak visits composed once before the warm-up
                app.action_go(name)
                await asyncio.sleep(1.0)

            def sample(kind: str) -> dict[str, Any]:
                """A sample; only the periodic ones ("run") take the latency window (a settled or final one
                is a snapshot of the counts beside them)."""
                me, sv = proc_status("self"), proc_status(serve_pid) if serve_pid else {}
                sim_rss = proc_status(sim.proc.pid).get("rss_mib")
                gap, render = ticks.window() if kind == "run" else (None, None)
                loop = lag.window() if kind == "run" else None
                rec = recorders[-1] if recorders else None
                s = {"t": round(time.monotonic() - started, 1), "wall": time.time(), "kind": kind,
                     "rss_mib": me.get("rss_mib", rss_mib()), "fds": me.get("fds"), "threads": threads_of_our_own(),
                     "tasks": len(asyncio.all_tasks()), "serve_rss_mib": sv.get("rss_mib"), "serve_fds": sv.get("fds"),
                     "serve_threads": sv.get("threads"), "sim_rss_mib": sim_rss,
                     # Counting the frozen objects walks them all (half a second for two million, the event
                     # loop held): the end's sample only, when no tick is measured any more.
                     **({"frozen_objects": gc.get_freeze_count()} if kind == "final" else {}),
                     "recorder_passes": len(rec.passes) if rec else 0,
                     **({} if gap is None or render is None or loop is None else {
                         "tick_gap_ms": gap * 1000, "render_ms": render * 1000, "loop_lag_ms": loop * 1000})}
                samples.append(s)
                return s

            t0 = time.monotonic()
            offset = t0 - started  # samples count from the start, faults from the end of the setup
            next_fault, next_sample, n = fault_every, 0.0, 0
            screen_i = 0
            active: Injected | None = None
            while (elapsed := time.monotonic() - t0) < total:
                if active is not None and elapsed >= active.at + active.seconds:
                    await faults.clear()
                    active = None
                if active is None and elapsed >= next_fault and elapsed + duration < total:
                    settled.append(sample("settled"))  # just before a fault: the last one cleared long ago
                    active = await faults.inject(n, elapsed)
                    progress(f"  {elapsed:6.0f} s  fault {n + 1}: {active.name} {active.detail}".rstrip())
                    n += 1
                    next_fault += fault_every
                if elapsed >= next_sample:
                    sample("run")
                    next_sample += SAMPLE_SECONDS
                if int(elapsed // 20) != screen_i:  # an operator looking around now and then
                    screen_i = int(elapsed // 20)
                    app.action_go(SCREENS[screen_i % len(SCREENS)])
                if trace is not None and elapsed >= warmup and trace.due(elapsed):
                    trace.take_in_background(elapsed)
                await asyncio.sleep(0.2)
            if active is not None:
                await faults.clear()
            progress(f"  {total:.0f} s done ({len(faults.injected)} faults); the churn stops, the source settles")
            await sim.acommand("churn off")
            difference: dict[str, list[str]] = {}
            deadline = time.monotonic() + 180
            server_file = out / "server-state.json"
            while True:
                await asyncio.sleep(2)
                await sim.acommand(f"state {server_file}")
                server = json.loads(await asyncio.to_thread(server_file.read_text))
                with session.lock:
                    difference = differing(server, session.store)
                    ok = _settled(session.store)
                if (ok and not difference) or time.monotonic() > deadline:
                    break
            settle_seconds = time.monotonic() - t0 - total
            await asyncio.sleep(SAMPLE_SECONDS)  # a last quiet window: descriptors of the last reconnects closed
            final = sample("final")
            progress(f"  settled after {settle_seconds:.0f} s; objects differing: "
                     f"{sum(len(v) for v in difference.values())}")

            # the findings the live store gives against those of a fresh list, at one instant
            fresh = Store()
            fresh_target = await connect(None, str(sim.kubeconfig))
            fresh_source = KubeSource(fresh, fresh_target)
            try:
                await fresh_source.start()
                fresh_ok = await fresh_source.wait_synced(600)
            finally:
                await fresh_source.stop()
                await fresh_target.close()
            now = clock()
            with session.lock:
                live_view = session.view(now)
            fresh_view = derive(fresh, now, session.config, session.source)
            wrong = finding_difference(live_view, fresh_view) if fresh_ok else ["the fresh list did not sync"]
            await viewer.stop()
            serve_rc = await serve.stop()
            lag.task.cancel()
            await stalls.stop()
            await asyncio.gather(lag.task, return_exceptions=True)
        history.stop()
        await source.stop()
        await target.close()
        lost, written = (lost_passes(recorders[-1].passes, path) if recorders else (0, 0))
        failed = sum(r.failed_writes for r in recorders)
        result = _figures(size, minutes, fault_every, warmup, samples, settled, final, faults.injected, difference,
                          wrong, lost, written, failed, history.error, serve.history_errors(), serve_rc, ticks,
                          len(live_view.findings), viewer, settle_seconds)
    finally:
        if serve is not None:
            await serve.stop()  # a soak that failed on the way must not leave serve running (idempotent)
        await asyncio.to_thread(sim.stop)
        if trace is not None:
            await asyncio.to_thread(trace.stop)
            progress("  comparing the memory snapshots" + (" (a few minutes)" if trace.allocations else ""))
            await asyncio.to_thread(trace.report)
    markers = [Marker(f.at + offset, f.name) for f in faults.injected]
    result["plots"] = [str(p) for p in await asyncio.to_thread(write_plots, samples, markers, out)]
    result["out"] = str(out)
    result["startedAt"] = datetime.fromtimestamp(wall0, UTC).isoformat(timespec="seconds")
    result["totalSeconds"] = round(time.monotonic() - started, 1)
    await asyncio.to_thread((out / "samples.json").write_text, json.dumps(samples, indent=1))
    await asyncio.to_thread((out / "stalls.txt").write_text, stalls.report(started))
    await asyncio.to_thread((out / "soak.json").write_text, json.dumps(result, indent=2))
    return result


def _figures(size: str, minutes: float, fault_every: float, warmup: float, samples: list[dict[str, Any]],
             settled: list[dict[str, Any]], final: dict[str, Any], injected: list[Injected],
             difference: dict[str, list[str]], wrong: list[str], lost: int, written: int, failed: int,
             dash_error: str | None, serve_errors: list[str], serve_rc: int | None, ticks: Ticks, findings: int,
             viewer: Viewer | None, settle_seconds: float) -> dict[str, Any]:
    after = [s for s in settled if s["t"] >= warmup] or settled[-1:] or [final]
    base = after[0]
    run = [s for s in samples if s["kind"] != "final"]
    first_minute = [s["rss_mib"] for s in run if base["t"] <= s["t"] < base["t"] + 60] or [base["rss_mib"]]
    last_minute = [s["rss_mib"] for s in run if s["t"] >= run[-1]["t"] - 60] or [final["rss_mib"]]
    rss0, rss1 = statistics.median(first_minute), statistics.median(last_minute)
    stalls = [g for g in ticks.gaps if g > TICK_SECONDS + STALL_SECONDS]
    differ = sum(len(v) for v in difference.values())
    kinds = sorted({f.name for f in injected})
    history_errors = [*serve_errors, *([dash_error] if dash_error else []),
                      *([f"{failed} failed writes"] if failed else [])]
    figs = [
        Figure("faults", "faults injected", len(injected), "faults", 15 if minutes >= 10 else None, False,
               note=f"every {fault_every:g} s: {', '.join(kinds)}"),
        Figure("rss_growth", f"RSS growth after warm-up ({warmup / 60:.0f} min)", (rss1 - rss0) / rss0, "ratio",
               RSS_GROWTH_TARGET, note=f"{rss0:.0f} → {rss1:.0f} MiB (medians of the first and last minute)"),
        Figure("fd_growth", "descriptor growth (settled, after warm-up)", final["fds"] - base["fds"], "descriptors", 0,
               note=f"{base['fds']} → {final['fds']}; serve {base['serve_fds']} → {final['serve_fds']}"),
        Figure("task_growth", "asyncio task growth (settled, after warm-up)", final["tasks"] - base["tasks"], "tasks",
               0,
               note=f"{base['tasks']} → {final['tasks']}"),
        Figure("thread_growth", "thread growth (settled, after warm-up; the loop's executor pool aside)",
               final["threads"] - base["threads"], "threads",
               0, note=f"{base['threads']} → {final['threads']}; serve {base['serve_threads']} → "
                       f"{final['serve_threads']}"),
        Figure("stalled_ticks", f"stalled ticks (> {STALL_SECONDS:g} s late)", len(stalls), "ticks", 0,
               note=f"{ticks.frames} ticks; gap p99 {(percentile(ticks.gaps, 99) or 0) * 1000:.0f} ms, longest "
                    f"{max(ticks.gaps, default=0) * 1000:.0f} ms"),
        Figure("objects_differing", "store == server at the end: objects differing", differ, "objects", 0,
               note=(f"by resourceVersion over every kind, {settle_seconds:.0f} s after the last fault"
                     + (f"; {', '.join(f'{k}: {v[:3]}' for k, v in difference.items())}" if difference else ""))),
        Figure("recorder_rows_lost", "recorder rows lost (sample passes not read back exactly)", lost, "passes", 0,
               note=f"{written} sample passes committed by the dashboard's recorder"),
        Figure("history_errors", "history errors (dashboard + serve)", len(history_errors), "errors", 0,
               note="; ".join(history_errors[:3])
               or f"serve stood by while the dashboard recorded; serve exit {serve_rc}"),
        Figure("findings_wrong", "findings wrong after the faults cleared (live vs a fresh list)", len(wrong),
               "findings", 0, note="; ".join(wrong[:3]) or f"{findings} findings, the same in both"),
    ]
    return {
        "apiVersion": "taudash/v1",
        "kind": "SoakResult",
        "size": size,
        "minutes": minutes,
        "faultEverySeconds": fault_every,
        "faults": [f.__dict__ for f in injected],
        "viewer": {"bytes": viewer.bytes, "connects": viewer.connects, "scrapes": viewer.scrapes,
                   "scrapeFailures": viewer.scrape_failures} if viewer else None,
        "serveExit": serve_rc,
        "figures": {f.key: f.to_json() for f in figs},
    }


def default_out() -> Path:
    base = state_dir() / "soak"
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=base))


def run_soak(args: Any) -> int:
    """`taudash bench --soak`: the call from the bench command."""
    if not args.soak > 0 or not args.fault_every > 0:
        from taudash.errors import UsageError

        raise UsageError("--soak MINUTES and --fault-every SECONDS must be positive")
    out = Path(args.out) if args.out else default_out()
    try:
        result = asyncio.run(soak(args.size, args.soak, args.fault_every, out, args.seed,
                                  trace_memory=getattr(args, "trace_memory", None)))
    except RuntimeError as exc:  # a process of the soak did not start or sync: said in words, logs kept
        print(f"taudash bench --soak: {exc}\nlogs in {out}", file=sys.stderr)
        return 2
    if args.output == "json":
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_table(result)
    print(f"taudash bench --soak: plots, samples and logs in {result['out']}", file=sys.stderr)
    failed = [f for f in result["figures"].values() if f["pass"] is False]
    return 1 if failed else 0


def print_table(result: dict[str, Any]) -> None:
    print(f"taudash bench --soak {result['minutes']:g} --size {result['size']} "
          f"(a fault every {result['faultEverySeconds']:g} s, {result['totalSeconds']:.0f} s in all)")
    for f in result["figures"].values():
        value = f"{f['value'] * 100:.1f} %" if f["unit"] == "ratio" else f"{f['value']:g} {f['unit']}"
        target = "" if f["target"] is None else (f"≤ {f['target'] * 100:.0f} %" if f["unit"] == "ratio"
                                                 else f"{'≥' if f['label'].startswith('faults') else '≤'} "
                                                      f"{f['target']:g}")
        res = {True: "pass", False: "MISS", None: ""}[f["pass"]]
        print(f"  {f['label']:<66} {value:>16} {target:>8}  {res}  ({f['note']})")
