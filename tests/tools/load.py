"""Load: a steady stream of watch events (default 2,000/s) into the live source with the dashboard open.

    cd tests && ../.venv/bin/python -m tools.load --rate 2000 --seconds 60 --warmup 10 [--size S] [-o json]

The simulated cluster is a synthetic fleet (engine.bench.generate); the simulator runs in its own
process (`--in-process` puts it on the same event loop, as the short test does). The write mix keeps
the cluster's size steady — Workload status moves, churn Workloads created and deleted in equal
numbers, ClusterQueue counts — so memory that grows is a leak, not data. Measured: events written
and applied, the source's pending writes and the server's per-watch buffers (bounded), UI lag from
tick to render and from key press to screen switch, RSS after warm-up and at the end, and that the
store equals the server's state (namespace, name, resourceVersion) once the stream stops.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
GPU = "nvidia.com/gpu"
SCREEN_KEYS = (("2", "pool"), ("3", "queues"), ("5", "sources"), ("4", "workspaces"), ("8", "findings"),
               ("1", "overview"))


# --- the write stream (runs where the simulator runs) ------------------------------------------------

class SteadyMutator:
    """Writes through the simulator's ObjectDB (what every watcher sees) at a fixed rate, keeping the
    object count steady: 80 % Workload status moves, 9.5 % churn creates, 9.5 % churn deletes, 1 %
    ClusterQueue count moves."""

    def __init__(self, db, seed: int = 0, churn: int = 200) -> None:
        self.db, self.rng = db, random.Random(f"taudash-load/{seed}")
        self.wl, self.cq = db.resource("Workload"), db.resource("ClusterQueue")
        # Status moves go to the fleet's small pending Workloads (hot ones are small in a real
        # cluster too: no pod template churn), so the simulator can sustain the rate on one core.
        self.workloads = sorted(k for k, o in db._objects[self.wl.key].items() if k[1].startswith("hot-"))
        self.queues = sorted(k[1] for k in db._objects[self.cq.key])
        self.namespaces = sorted({ns for ns, _ in self.workloads})
        self.churn: list[tuple[str, str]] = []
        self.churn_size = churn
        self.made = 0
        self.writes = 0

    def one(self) -> None:
        r = self.rng.random()
        if r < 0.80:
            self._move()
        elif r < 0.99:
            if len(self.churn) >= self.churn_size or (r >= 0.895 and self.churn):
                ns, name = self.churn.pop(0)
                self.db.delete(self.wl, name, ns)
            else:
                self._create()
        else:
            name = self.rng.choice(self.queues)
            self.db.patch_merge(self.cq, name, {"status": {"pendingWorkloads": self.rng.randrange(0, 50)}},
                                subresource="status")
        self.writes += 1

    def _move(self) -> None:
        ns, name = self.workloads[self.rng.randrange(len(self.workloads))]
        more = self.rng.randint(1, 64)
        cond = {"type": "QuotaReserved", "status": "False", "reason": "Pending",
                "message": f"couldn't assign flavors to pod set main: insufficient unused quota for {GPU}, "
                           f"{more} more needed", "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ")}
        self.db.patch_merge(self.wl, name, {"status": {"conditions": [cond]}}, ns, subresource="status")

    def _create(self) -> None:
        self.made += 1
        ns = self.namespaces[self.made % len(self.namespaces)]
        name = f"churn-{self.made:07d}"
        self.db.create(small_workload(name, ns, self.rng))
        self.churn.append((ns, name))

    async def stream(self, rate: float, seconds: float, on_tick=None) -> tuple[int, float]:
        start = time.perf_counter()
        done = 0
        burst = max(1, int(rate / 50))  # a starved writer falls behind instead of writing seconds' worth at once
        while (elapsed := time.perf_counter() - start) < seconds:
            due = min(int(elapsed * rate) + 1, done + burst)
            while done < due:
                self.one()
                done += 1
            if on_tick is not None:
                on_tick()
            await asyncio.sleep(0.01)
        return done, time.perf_counter() - start


def small_workload(name: str, ns: str, rng: random.Random) -> dict[str, Any]:
    uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/job-uid": uid}},
        "spec": {"active": True, "queueName": "jobqueue", "priority": 1000,
                 "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                     {"name": "main", "image": "trainer", "resources": {"requests": {GPU: "1"}}}]}}}]},
    }


def fleet(size, seed: int, hot: int = 500) -> list[dict[str, Any]]:
    """The synthetic fleet plus `hot` small pending Workloads the stream keeps moving."""
    from taudash.bench.generate import generate

    objects = generate(size, seed)
    namespaces = sorted({o["metadata"]["namespace"] for o in objects if o["kind"] == "LocalQueue"})
    rng = random.Random(f"taudash-load-hot/{seed}")
    objects += [small_workload(f"hot-{i:05d}", namespaces[i % len(namespaces)], rng) for i in range(hot)]
    return objects


class WatchBuffers:
    """The server's per-watch event buffers: the largest backlog seen, and watches it cut for lagging."""

    def __init__(self, sim) -> None:
        self.sim, self.max_pending, self.subs = sim, 0, []
        real = sim.db.subscribe

        def subscribe(*a, **k):
            sub = real(*a, **k)
            self.subs.append(sub)
            return sub

        sim.db.subscribe = subscribe
        self.limit = sim.db._subscriber_buffer

    def sample(self) -> None:
        for w in list(self.sim.api._watches):
            self.max_pending = max(self.max_pending, w.sub.pending())

    @property
    def overflows(self) -> int:
        return sum(1 for s in self.subs if s.overflowed)


def server_state(sim) -> dict[str, list]:
    from taudash.engine.model import KINDS

    out = {}
    for k in KINDS:
        try:
            objs = sim.db.list(k.resource)
        except Exception:
            continue
        out[k.kind] = sorted([o["metadata"].get("namespace") or "", o["metadata"]["name"],
                              o["metadata"]["resourceVersion"]] for o in objs)
    return out


async def serve(args: argparse.Namespace) -> None:
    """The simulator process: `stream RATE SECONDS`, `state PATH`, `quit` on stdin."""
    from taudash.sim.server import SimServer

    sim = SimServer(snapshot=None, objects=fleet(args.size, args.seed), kubeconfig=args.kubeconfig,
                    history=200_000, bookmark_interval=5.0)
    await sim.start()
    mutator = SteadyMutator(sim.db, args.seed)
    buffers = WatchBuffers(sim)
    print(f"READY {sim.url}", flush=True)
    try:
        while True:
            line = await asyncio.to_thread(sys.stdin.readline)
            cmd = line.split()
            if not cmd or cmd[0] == "quit":
                break
            if cmd[0] == "stream":
                writes, secs = await mutator.stream(float(cmd[1]), float(cmd[2]), buffers.sample)
                print(f"STREAMED {writes} {secs:.3f} {buffers.max_pending} {buffers.overflows} {buffers.limit}",
                      flush=True)
            elif cmd[0] == "state":
                Path(cmd[1]).write_text(json.dumps(server_state(sim)))
                print("STATE", flush=True)
    finally:
        await sim.stop()


# --- the client: source + dashboard, measured -------------------------------------------------------

@dataclass
class LoadResult:
    rate: float
    seconds: float
    size: str
    in_process: bool
    objects: int = 0
    written: int = 0
    write_seconds: float = 0.0
    applied: int = 0  # watch events the source applied to the store during the stream and catch-up
    catch_up: float | None = None  # seconds from the end of the stream until the store equals the server
    converged: bool = False
    pending_writes_max: int = 0
    pending_writes_end: int = 0
    watch_buffer_max: int = 0
    watch_buffer_limit: int = 0
    watch_overflows: int = 0
    relists: int = 0
    frames: int = 0
    tick_to_render: dict[str, float | None] = field(default_factory=dict)
    tick_period: dict[str, float | None] = field(default_factory=dict)
    key_to_screen: dict[str, float | None] = field(default_factory=dict)
    rss_warm_mib: float = 0.0
    rss_end_mib: float = 0.0
    rss_peak_mib: float = 0.0
    store_objects_warm: int = 0
    store_objects_end: int = 0
    feed_len_end: int = 0
    bounded: dict[str, list[int]] = field(default_factory=dict)  # name -> [length at the end, its limit]
    rss_series: list[list[float]] = field(default_factory=list)  # [seconds into the stream, MiB, objects]


def rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def stats(xs: list[float]) -> dict[str, float | None]:
    if not xs:
        return {"p50": None, "p95": None, "max": None, "n": 0}
    s = sorted(xs)
    return {"p50": round(statistics.median(s), 4), "p95": round(s[min(len(s) - 1, int(0.95 * (len(s) - 1) + 0.5))], 4),
            "max": round(s[-1], 4), "n": len(s)}


def make_app(session, tick: float):
    from taudash.app import TaudashApp

    class LoadApp(TaudashApp):
        """The dashboard, timing each tick from the timer firing to the frame on screen."""

        CSS_PATH = str(Path(sys.modules[TaudashApp.__module__].__file__).parent / TaudashApp.CSS_PATH)

        def __init__(self, *a, **k) -> None:
            super().__init__(*a, **k)
            self.lags: list[float] = []
            self.renders: list[float] = []
            self._tick_at: float | None = None
            self.rendered = 0  # ticks rendered on a screen (told through the app's frame observers)
            self.observe_frames(self._count)

        def _count(self, frame, screen, seconds: float) -> None:
            self.rendered += 1

        def _tick(self) -> None:
            self._tick_at = time.perf_counter()
            super()._tick()

        def render_frame(self, frame) -> None:
            super().render_frame(frame)
            now = time.perf_counter()
            if self._tick_at is not None:
                self.lags.append(now - self._tick_at)
                self._tick_at = None
            self.renders.append(now)

    return LoadApp(session, clock=lambda: datetime.now(UTC), tick=tick)


class SimProcess:
    def __init__(self, size: str, seed: int) -> None:
        self.dir = tempfile.mkdtemp(prefix="taudash-load-")
        self.kubeconfig = Path(self.dir) / "kubeconfig"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
        self.proc = subprocess.Popen([sys.executable, "-m", "tools.load", "--serve", "--size", size, "--seed",
                                      str(seed),
                                      "--kubeconfig", str(self.kubeconfig)], cwd=REPO / "tests", env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("READY"):
            raise RuntimeError(f"the load simulator did not start: {line!r}")

    def command(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def stop(self) -> None:
        try:
            self.command("quit")
            self.proc.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)


async def run_load(rate: float = 2000, seconds: float = 60, warmup: float = 10, size: str = "S", seed: int = 0,
                   in_process: bool = False, tick: float = 1.0, settle: float = 60.0,
                   history: int = 200_000) -> LoadResult:
    from taudash.bench.generate import SIZES, Size
    from taudash.engine.session import Session
    from taudash.engine.sources.client import connect
    from taudash.engine.sources.kube import KubeSource
    from taudash.engine.store import Store
    from taudash.engine.view import SourceInfo

    res = LoadResult(rate=rate, seconds=seconds, size=size, in_process=in_process)
    sim = proc = None
    if in_process:
        from taudash.sim.server import SimServer

        sz = SIZES.get(size) or Size(size, 20, 300, 150, 4, 2, 2, 3)  # a small fleet for the quick test
        sim = SimServer(snapshot=None, objects=fleet(sz, seed, hot=100), history=history, bookmark_interval=5.0)
        await sim.start()
        kubeconfig = sim.kubeconfig
        mutator, buffers = SteadyMutator(sim.db, seed), WatchBuffers(sim)
    else:
        proc = await asyncio.to_thread(SimProcess, size, seed)
        kubeconfig = proc.kubeconfig
    try:
        target = await connect(kubeconfig=str(kubeconfig))
        store = Store()
        session = Session(store, SourceInfo(type="sim", context=target.context, path=target.server), read_only=True)
        source = KubeSource(store, target, lock=session.lock)
        await source.start()
        await source.wait_synced(600)
        res.objects = sum(store.count(k) for k in store.kinds())
        changes = [0]
        store.subscribe(lambda _c: changes.__setitem__(0, changes[0] + 1))
        app = make_app(session, tick)
        keys: list[float] = []
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            changes[0] = 0
            stop = asyncio.Event()

            async def sample() -> None:
                started = time.monotonic()
                warm_at = started + warmup
                next_key = started + 2.0
                next_rss = started
                k = 0
                while not stop.is_set():
                    res.pending_writes_max = max(res.pending_writes_max, source.pending_writes)
                    if sim is not None:
                        buffers.sample()
                    now = time.monotonic()
                    if warm_at and now >= warm_at:
                        res.rss_warm_mib = rss_mib()
                        res.store_objects_warm = sum(store.count(x) for x in store.kinds())
                        warm_at = 0
                    if now >= next_key:  # an operator switching screens during the load
                        key, mode = SCREEN_KEYS[k % len(SCREEN_KEYS)]
                        k += 1
                        t = time.perf_counter()
                        app.simulate_key(key)
                        while app.current_mode != mode and time.perf_counter() - t < 30:
                            await asyncio.sleep(0.005)
                        keys.append(time.perf_counter() - t)
                        next_key = now + 2.0
                    res.rss_peak_mib = max(res.rss_peak_mib, rss_mib())
                    if now >= next_rss:
                        res.rss_series.append([round(now - started, 1), round(rss_mib(), 1),
                                               sum(store.count(x) for x in store.kinds())])
                        next_rss = now + 5.0
                    await asyncio.sleep(0.1)

            sampler = asyncio.create_task(sample())
            if sim is not None:
                res.written, res.write_seconds = await mutator.stream(rate, seconds)
            else:
                out = (await asyncio.to_thread(proc.command, f"stream {rate} {seconds}")).split()
                res.written, res.write_seconds = int(out[1]), float(out[2])
                res.watch_buffer_max, res.watch_overflows = int(out[3]), int(out[4])
                res.watch_buffer_limit = int(out[5])
            ended = time.monotonic()
            # catch up: the store equals the server's state
            want = None
            while time.monotonic() - ended < settle:
                if sim is not None:
                    want = server_state(sim)
                elif want is None:
                    path = Path(proc.dir) / "state.json"
                    await asyncio.to_thread(proc.command, f"state {path}")
                    want = json.loads(path.read_text())
                with session.lock:
                    have = {k: sorted([o.namespace or "", o.name, o.metadata.resource_version]
                                      for o in store.list(k)) for k in want}
                if have == want and source.pending_writes == 0:
                    res.catch_up = round(time.monotonic() - ended, 3)
                    res.converged = True
                    break
                await asyncio.sleep(0.2)
            await pilot.pause(tick * 2)
            stop.set()
            await sampler
            await pilot.pause(2.0)  # a key posted just before the stop is handled before the app closes
            res.frames = app.rendered
            res.tick_to_render = stats(app.lags)
            res.tick_period = stats([b - a for a, b in zip(app.renders, app.renders[1:], strict=False)])
        res.key_to_screen = stats(keys)
        res.applied = changes[0]
        res.pending_writes_end = source.pending_writes
        res.relists = sum(st.relists for st in source.status.values())
        res.rss_end_mib = rss_mib()
        res.store_objects_end = sum(store.count(k) for k in store.kinds())
        res.feed_len_end = len(store._feed)
        res.bounded = {"store change feed": [len(store._feed), store._feed.maxlen],
                       "session history samples": [len(session._samples), session._samples.maxlen]}
        if sim is not None:
            res.watch_buffer_max, res.watch_overflows = buffers.max_pending, buffers.overflows
            res.watch_buffer_limit = buffers.limit
            res.bounded["server event history"] = [len(sim.db._history), sim.db._history.maxlen]
            res.bounded["server request log"] = [len(sim.api.requests), sim.api.requests.maxlen]
        await source.stop()
        await target.close()
    finally:
        if sim is not None:
            await sim.stop()
        if proc is not None:
            await asyncio.to_thread(proc.stop)
    return res


def report(r: LoadResult) -> str:
    def ms(d: dict) -> str:
        return "n/a" if d.get("p50") is None else (f"p50 {d['p50'] * 1000:.0f} ms, p95 {d['p95'] * 1000:.0f} ms, max "
                                                   f"{d['max'] * 1000:.0f} ms")

    lines = [
        f"load: {r.written} writes in {r.write_seconds:.1f} s ({r.written / max(r.write_seconds, 1e-9):.0f}/s) "
        f"into a {r.size} fleet of {r.objects} objects "
        f"({'in-process' if r.in_process else 'simulator in its own process'})",
        f"events applied by the source: {r.applied}; caught up {r.catch_up} s after the stream; converged "
        f"{r.converged}; re-lists {r.relists}",
        f"source pending writes: max {r.pending_writes_max}, end {r.pending_writes_end}; server per-watch buffer: max "
        f"{r.watch_buffer_max} of {r.watch_buffer_limit}, watches cut for lagging {r.watch_overflows}",
        f"UI tick→render: {ms(r.tick_to_render)} ({r.frames} frames); tick period {ms(r.tick_period)}",
        f"key→screen switch: {ms(r.key_to_screen)} ({r.key_to_screen.get('n', 0)} presses)",
        f"RSS: {r.rss_warm_mib:.0f} MiB after warm-up, {r.rss_end_mib:.0f} MiB at the end, peak {r.rss_peak_mib:.0f} "
        f"MiB; objects {r.store_objects_warm} → {r.store_objects_end}; change feed {r.feed_len_end}",
        "RSS over time (s: MiB): " + ", ".join(f"{t:.0f}: {m:.0f}" for t, m, _ in r.rss_series),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=float, default=2000)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--warmup", type=float, default=10)
    p.add_argument("--size", default="S")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tick", type=float, default=1.0)
    p.add_argument("--in-process", action="store_true")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        asyncio.run(serve(args))
        return 0
    r = asyncio.run(run_load(args.rate, args.seconds, args.warmup, args.size, args.seed, args.in_process, args.tick))
    print(json.dumps(asdict(r), indent=2) if args.output == "json" else report(r))
    return 0 if r.converged else 1


if __name__ == "__main__":
    sys.exit(main())
