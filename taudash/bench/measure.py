"""Headless measurements of `taudash bench`: the simulator process, initial sync against it, the raw
decode baseline of the same bytes, kubectl as the peer, derivation, event→view latency, memory.

Timings are wall-clock medians on a shared machine: the bench reports them with their targets; no
test asserts on them.
"""

from __future__ import annotations

import asyncio
import gc
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from taudash.engine.model import KINDS
from taudash.engine.store import AccessState, Change, Store

if TYPE_CHECKING:
    from taudash.engine.sources.kube import KubeSource

# The fastest decoder available is the baseline (orjson is a dependency).
DECODER = "orjson"


def fast_loads(b: bytes) -> Any:
    return orjson.loads(b)

Progress = Callable[[str], None]


@dataclass
class Figure:
    key: str
    label: str
    value: float | None
    unit: str
    target: float | None = None  # None: reported, no target
    lower_is_better: bool = True
    note: str = ""
    runs: list[float] | None = None  # every run behind a median (value), in the order measured

    @property
    def ok(self) -> bool | None:
        if self.target is None or self.value is None:
            return None
        return self.value <= self.target if self.lower_is_better else self.value >= self.target

    @property
    def spread(self) -> tuple[float, float] | None:
        """(min, max) of the runs, when there were several."""
        return (min(self.runs), max(self.runs)) if self.runs and len(self.runs) > 1 else None

    def line(self) -> str:
        """The progress line: label, value (with the runs' spread) and pass/MISS against the target."""
        val = "n/a" if self.value is None else f"{self.value:.4g} {self.unit}"
        if self.spread is not None:
            val += f" ({self.spread[0]:.4g}–{self.spread[1]:.4g})"
        return f"{self.label}: {val} {({True: 'pass', False: 'MISS', None: ''})[self.ok]}".rstrip()

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "value": self.value, "unit": self.unit, "target": self.target,
                "pass": self.ok, "note": self.note, "runs": self.runs}

    @classmethod
    def of_runs(cls, key: str, label: str, runs: list[float], unit: str, target: float | None = None,
                note: str = "") -> Figure:
        """The median of `runs`, keeping the runs (and so their spread)."""
        return cls(key, label, median(runs), unit, target, note=note, runs=list(runs))


def say(msg: str) -> None:
    """The bench's progress line on stderr, timestamped."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def percentile(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    k = min(len(s) - 1, max(0, int(round(p / 100 * (len(s) - 1)))))
    return s[k]


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def rss_mib() -> float | None:
    """Resident memory now (Linux), to tell which phase sets the peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


# --- the simulator in its own process ---------------------------------------------------------


class SimProcess:
    """`python -m engine.bench.simproc` serving the synthetic cluster; commands over stdin."""

    def __init__(self, size: str, seed: int) -> None:
        self.size, self.seed = size, seed
        self.dir = tempfile.mkdtemp(prefix="taudash-bench-")
        self.kubeconfig = Path(self.dir) / "kubeconfig"
        self.proc: subprocess.Popen | None = None
        self.objects = 0
        self.url = ""

    def start(self, timeout: float = 600.0) -> float:
        root = Path(__file__).resolve().parents[2]
        env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        t = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "taudash.bench.simproc", "--size", self.size, "--seed", str(self.seed),
             "--kubeconfig", str(self.kubeconfig)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=root)
        line = self._readline(timeout)
        if not line.startswith("READY"):
            raise RuntimeError(f"the bench simulator did not start: {line!r}")
        _, self.url, n = line.split()
        self.objects = int(n)
        return time.perf_counter() - t

    def _readline(self, timeout: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise RuntimeError("the bench simulator did not answer in time")
        return self.proc.stdout.readline().strip()

    def command(self, line: str, timeout: float = 600.0) -> str:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self._readline(timeout)

    def cpu_seconds(self) -> float | None:
        """The simulator process's CPU time so far (user + system; Linux /proc), None if unknown."""
        if self.proc is None:
            return None
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    async def acommand(self, line: str, wait: float = 600.0) -> str:
        return await asyncio.to_thread(self.command, line, wait)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")  # type: ignore[union-attr]
                self.proc.stdin.flush()  # type: ignore[union-attr]
                self.proc.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# --- initial sync, decode baseline, kubectl ---------------------------------------------------


@dataclass
class SyncResult:
    store: Any  # Store (None for a sync run in another process)
    source: Any  # KubeSource, still watching (None: ditto)
    target: Any
    seconds: float
    cpu_seconds: float
    counts: dict[str, int] = field(default_factory=dict)
    not_synced: list[str] = field(default_factory=list)
    pages: dict[str, list[int]] = field(default_factory=dict)  # per kind, the size of each list page received
    server_cpu_seconds: float | None = None  # the simulator process's CPU during the sync, when known
    live: Any = None  # the LiveCluster (taudash/live.py) the sync went through; None for one in another process

    async def close(self) -> None:
        if self.live is not None:
            await self.live.close()


async def initial_sync(kubeconfig: Path, store: Store, lock: Any = None,
                       server_cpu: Callable[[], float | None] | None = None) -> SyncResult:
    """Connect and list every kind through the programs' own LiveCluster (engine.sources.kube); the
    informers keep watching after. The size of every list page received is recorded (kind → sizes, in
    order): the decode baseline checks it reads the same pages."""
    from taudash.live import LiveCluster

    pages: dict[str, list[int]] = {}
    live = LiveCluster(None, str(kubeconfig), sync_timeout=900, lock=lock, never_writes="the bench never writes",
                       store=store, on_page=lambda kind, body: pages.setdefault(kind, []).append(len(body)))
    await live.connect()
    s0 = server_cpu() if server_cpu else None
    t, c = time.perf_counter(), time.process_time()
    await live.start()
    await live.wait_synced()
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    s1 = server_cpu() if server_cpu else None
    counts = {k.kind: store.count(k.kind) for k in KINDS}
    bad = [k for k, a in store.access_states().items() if a.state is not AccessState.SYNCED]
    return SyncResult(store, live.source, live.target, seconds, cpu, counts, bad, pages,
                      None if s0 is None or s1 is None else s1 - s0, live)


async def spool_pages(source: KubeSource, out: BinaryIO) -> dict[str, list[int]]:
    """The list pages the informers read (same paths, page size and versions, over the same client and
    transport), written length-prefixed to the binary file `out` one at a time; → kind → page sizes."""
    sizes: dict[str, list[int]] = {}
    for k in source.kinds:
        if source.status[k.kind].version is None:
            continue
        cont = None
        while True:
            body = await source.list_page(k, cont)
            out.write(len(body).to_bytes(8, "little"))
            out.write(body)
            sizes.setdefault(k.kind, []).append(len(body))
            cont = (fast_loads(body).get("metadata") or {}).get("continue")
            if not cont:
                break
    return sizes


@dataclass
class DecodeRun:
    seconds: float  # wall time inside the decoder only (reading the pages is not counted)
    cpu_seconds: float
    pages: int
    bytes: int


def read_spool(path: Path) -> list[bytes]:
    bodies = []
    with path.open("rb") as f:
        while head := f.read(8):
            bodies.append(f.read(int.from_bytes(head, "little")))
    return bodies


def decode_pages(bodies: list[bytes]) -> DecodeRun:
    """orjson over every page, once, with the collector paused (as the sync's lists run)."""
    was = gc.isenabled()
    gc.disable()
    try:
        t, c = time.perf_counter(), time.process_time()
        for body in bodies:
            fast_loads(body)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
    finally:
        if was:
            gc.enable()
    return DecodeRun(wall, cpu, len(bodies), sum(len(b) for b in bodies))


# A round of the baseline runs in a fresh process of its own: the heap of a process that holds (or
# held) a fleet's store makes allocation-heavy decoding 2-3x slower (orjson over the L pages: 1.1 s
# of CPU in a fresh process, 3.0-3.7 s beside a synced store, 1.9-2.4 s after dropping it), and
# the product's own sync runs in a fresh process (the dashboard's start). Same condition for both.


def _child(args: list[str], timeout: float = 1800.0) -> dict[str, Any]:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    p = subprocess.run([sys.executable, "-m", "taudash.bench.measure", *args], capture_output=True, text=True,
                       timeout=timeout, env=env, cwd=root)
    if p.returncode != 0:
        raise RuntimeError(f"bench child {args[0]} failed: {p.stderr.strip()[-2000:]}")
    doc: dict[str, Any] = orjson.loads(p.stdout.strip().splitlines()[-1])
    return doc


def decode_elsewhere(spool: Path) -> DecodeRun:
    """`decode_pages` of the spooled pages in a fresh process (pages read before the clock starts)."""
    d = _child(["decode", str(spool)])
    return DecodeRun(d["seconds"], d["cpuSeconds"], d["pages"], d["bytes"])


def sync_elsewhere(kubeconfig: Path, server_cpu: Callable[[], float | None] | None = None,
                   profile: Path | None = None) -> SyncResult:
    """`initial_sync` in a fresh process (the store dies with it); the server's CPU is read around the
    whole child (its imports cost the server nothing)."""
    s0 = server_cpu() if server_cpu else None
    d = _child(["sync", str(kubeconfig), *(["--profile", str(profile)] if profile else [])])
    s1 = server_cpu() if server_cpu else None
    return SyncResult(None, None, None, d["seconds"], d["cpuSeconds"], d["counts"], d["notSynced"], d["pages"],
                      None if s0 is None or s1 is None else s1 - s0)


@dataclass
class Interleaved:
    """Initial sync and raw decode of the same pages, alternated (sync, decode, sync, decode, …)."""

    syncs: list[SyncResult]  # the first is the one kept (its store and source live on)
    decodes: list[DecodeRun]
    transport: str  # "https" / "http": what the sync and the spooled pages both travelled over
    same_pages: bool  # every sync received pages of exactly the sizes spooled, kind by kind, in order
    spool_seconds: float  # fetching the pages once more (no decode) over the same client

    @property
    def kept(self) -> SyncResult:
        return self.syncs[0]

    def sync_runs(self) -> list[float]:
        return [s.seconds for s in self.syncs]

    def decode_runs(self) -> list[float]:
        return [d.seconds for d in self.decodes]

    def ratios(self) -> list[float]:
        """sync / decode of each interleaved pair."""
        return [s.seconds / d.seconds for s, d in zip(self.syncs, self.decodes, strict=True) if d.seconds]

    def cpu_ratios(self) -> list[float]:
        return [s.cpu_seconds / d.cpu_seconds for s, d in zip(self.syncs, self.decodes, strict=True) if d.cpu_seconds]


async def sync_and_decode_interleaved(kubeconfig: Path, spool: Path, store: Store, lock: Any = None,
                                      rounds: int = 3, server_cpu: Callable[[], float | None] | None = None,
                                      progress: Callable[[str], None] | None = None) -> Interleaved:
    """`rounds` × (initial sync, then orjson over the same pages), each in a fresh process. The first
    sync is this process's, into `store` (nothing fleet-sized has lived here yet); it keeps watching
    for the rest of the bench. Its pages are fetched once more over its own client (same TLS or none)
    and spooled to `spool`; every sync's page sizes must match them. The other syncs and every decode
    run in child processes."""
    syncs: list[SyncResult] = []
    decodes: list[DecodeRun] = []
    kept = await initial_sync(kubeconfig, store, lock, server_cpu)
    try:
        t = time.perf_counter()
        with spool.open("wb") as out:
            spooled = await spool_pages(kept.source, out)
        spool_seconds = time.perf_counter() - t
        for i in range(rounds):
            sync = kept if i == 0 else await asyncio.to_thread(sync_elsewhere, kubeconfig, server_cpu)
            dec = await asyncio.to_thread(decode_elsewhere, spool)
            if progress is not None:
                progress(f"  round {i + 1}: sync {sync.seconds:.3f} s (client CPU {sync.cpu_seconds:.2f} s"
                         + (f", simulator CPU {sync.server_cpu_seconds:.2f} s" if sync.server_cpu_seconds is not None
                            else "")
                         + f"), decode {dec.seconds:.3f} s (CPU {dec.cpu_seconds:.2f} s), "
                         f"ratio {sync.seconds / dec.seconds:.2f}x{'' if sync.pages == spooled else ', PAGES DIFFER'}")
            syncs.append(sync)
            decodes.append(dec)
    except BaseException:
        await kept.close()
        raise
    return Interleaved(syncs, decodes, kept.target.transport, all(s.pages == spooled for s in syncs), spool_seconds)


async def _sync_main(kubeconfig: str, profile: str | None) -> dict[str, Any]:
    from taudash.runtime import tune_gc_for_long_lived_model

    tune_gc_for_long_lived_model()  # the program's policy, as the CLI installs it
    import kubernetes_asyncio.client  # noqa: F401 - imported before any profile starts, as in the bench process
    import kubernetes_asyncio.config  # noqa: F401

    prof = None
    if profile:
        from pyinstrument import Profiler

        prof = Profiler(interval=0.001, async_mode="disabled")
        prof.start()
    sync = await initial_sync(Path(kubeconfig), Store())
    text = ""
    if prof is not None:
        prof.stop()
        text = prof.output_text(unicode=True, color=False, show_all=False)
    await sync.close()
    return {"seconds": sync.seconds, "cpuSeconds": sync.cpu_seconds, "counts": sync.counts,
            "notSynced": sync.not_synced, "pages": sync.pages, "peakRssMiB": peak_rss_mib(), "profile": text}


def main(argv: list[str] | None = None) -> int:
    """The fresh-process halves of the baseline: `sync KUBECONFIG [--profile FILE]` | `decode SPOOL`;
    one JSON line on stdout."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["sync"] and len(args) in (2, 4):
        profile = args[3] if len(args) == 4 and args[2] == "--profile" else None
        doc = asyncio.run(_sync_main(args[1], profile))
        if profile:
            Path(profile).write_text(doc.pop("profile"))
    elif args[:1] == ["decode"] and len(args) == 2:
        bodies = read_spool(Path(args[1]))
        run = decode_pages(bodies)
        doc = {"seconds": run.seconds, "cpuSeconds": run.cpu_seconds, "pages": run.pages, "bytes": run.bytes}
    else:
        print("usage: python -m taudash.bench.measure sync KUBECONFIG [--profile FILE] | decode SPOOL", file=sys.stderr)
        return 2
    sys.stdout.write(orjson.dumps(doc).decode() + "\n")
    return 0


def kubectl_seconds(kubeconfig: Path, repeat: int = 1) -> tuple[float | None, str]:
    """`kubectl get <every resource> -A -o json` against the same server: one command, the same lists."""
    exe = shutil.which("kubectl")
    if exe is None:
        return None, "kubectl not on PATH"
    resources = ",".join(k.resource for k in KINDS)
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        p = subprocess.run([exe, "--kubeconfig", str(kubeconfig), "get", resources, "-A", "-o", "json"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=900)
        runs.append(time.perf_counter() - t)
        if p.returncode != 0:
            return None, f"kubectl failed: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}"
    return statistics.median(runs), f"kubectl get {len(KINDS)} resources -A -o json"


# --- derivation and event → view latency ---------------------------------------------------------


def derive_seconds(fn: Callable[[], Any], repeat: int = 3) -> float:
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


class LatencyProbe:
    """Stamps each store change as it lands; `ready(revision)` turns every stamped change up to that
    revision into one latency sample (event at the store → a view that reflects it is ready)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._pending: list[tuple[int, float]] = []
        self.samples: list[float] = []
        self.events = 0
        self.active = False
        store.subscribe(self._on_change)

    def _on_change(self, change: Change) -> None:
        if self.active:
            self._pending.append((change.revision, time.perf_counter()))
            self.events += 1

    def ready(self, revision: int) -> None:
        now = time.perf_counter()
        keep = []
        for rev, at in self._pending:
            if rev <= revision:
                self.samples.append(now - at)
            else:
                keep.append((rev, at))
        self._pending = keep


class ViewFollower:
    """Keeps the session's view current as events land: one refresh in flight, bursts coalesced.

    `refresh(now)` derives the view and returns the store revision it reflects. While `inline()` is true
    (the next view is a small incremental update) it runs on the event loop; otherwise in a worker
    thread, as the dashboard's own derive does (app.py: timer → derive in a thread → render). Measured at
    L (docs/decisions.md): the thread does not make input faster — its updates hold the GIL and
    the event loop waits for it on every turn — so the bench runs small updates inline by default.
    `durations` is the update itself: wall time inline, the thread's CPU time in a thread (what waiting
    for the GIL or the machine adds is not the update's cost).

    Refreshes start at most every `period` seconds: events that land meanwhile coalesce into the next
    one (the dashboard renders once a second; a view per burst of a few events bought nothing but
    fixed per-update work competing with input). 0 refreshes as soon as the previous one ends.
    """

    def __init__(self, store: Store, refresh: Callable[[datetime], int], clock: Callable[[], datetime],
                 probe: LatencyProbe, inline: Callable[[], bool] | None = None, period: float = 0.1) -> None:
        self.store, self.refresh, self.clock, self.probe = store, refresh, clock, probe
        self.inline = inline or (lambda: False)
        self.period = period
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.refreshes = 0
        self.durations: list[float] = []  # the update itself (derive + assemble)
        self.walls: list[float] = []  # the same updates' wall time in the thread (incl. waiting for the GIL)
        store.subscribe(lambda _c: self._wake.set())

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="bench-view-follower")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    def _timed(self, now: datetime) -> int:
        c, t = time.thread_time(), time.perf_counter()
        rev = self.refresh(now)
        self.durations.append(time.thread_time() - c)
        self.walls.append(time.perf_counter() - t)
        return rev

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            started = time.perf_counter()
            if self.inline():
                t = time.perf_counter()
                rev = self.refresh(self.clock())
                self.durations.append(time.perf_counter() - t)
                self.walls.append(self.durations[-1])
            else:
                rev = await asyncio.to_thread(self._timed, self.clock())
            self.refreshes += 1
            self.probe.ready(rev)
            await asyncio.sleep(max(0.0, self.period - (time.perf_counter() - started)))


if __name__ == "__main__":
    sys.exit(main())
