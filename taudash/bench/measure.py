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
from dataclasses import dataclass, field, replace
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

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "value": self.value, "unit": self.unit, "target": self.target,
                "pass": self.ok, "note": self.note, "runs": self.runs}

    @classmethod
    def of_runs(cls, key: str, label: str, runs: list[float], unit: str, target: float | None = None,
                note: str = "") -> Figure:
        """The median of `runs`, keeping the runs (and so their spread)."""
        return cls(key, label, median(runs), unit, target, note=note, runs=list(runs))


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
    store: Any  # Store (None once an interleaved round dropped it)
    source: Any  # KubeSource, still watching
    target: Any
    seconds: float
    cpu_seconds: float
    counts: dict[str, int] = field(default_factory=dict)
    not_synced: list[str] = field(default_factory=list)
    pages: dict[str, list[int]] = field(default_factory=dict)  # per kind, the size of each list page received
    server_cpu_seconds: float | None = None  # the simulator process's CPU during the sync, when known


async def initial_sync(kubeconfig: Path, store: Store, lock: Any = None,
                       server_cpu: Callable[[], float | None] | None = None) -> SyncResult:
    """Connect and list every kind through engine.sources.kube; the informers keep watching after.
    The size of every list page received is recorded (kind → sizes, in order): the decode baseline
    checks it reads the same pages."""
    from taudash.engine.sources.kube import KubeSource, connect

    pages: dict[str, list[int]] = {}
    target = await connect(None, str(kubeconfig))
    source = KubeSource(store, target, lock=lock, on_page=lambda kind, body: pages.setdefault(kind, []).append(len(body)))
    s0 = server_cpu() if server_cpu else None
    t, c = time.perf_counter(), time.process_time()
    await source.start()
    await source.wait_synced(900)
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    s1 = server_cpu() if server_cpu else None
    counts = {k.kind: store.count(k.kind) for k in KINDS}
    bad = [k for k, a in store.access_states().items() if a.state is not AccessState.SYNCED]
    return SyncResult(store, source, target, seconds, cpu, counts, bad, pages,
                      None if s0 is None or s1 is None else s1 - s0)


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
    seconds: float  # wall time inside the decoder only (reading the spool is not counted)
    cpu_seconds: float
    pages: int
    bytes: int


def decode_spooled(path: Path) -> DecodeRun:
    """orjson over every page in `path`, in this process, one page in memory at a time and under the
    same heap policy as the sync's lists (the collector paused while a list decodes, if the program
    installed one): the same process conditions as the sync it is compared with."""
    from taudash.engine import heap

    wall = cpu = 0.0
    n = total = 0
    with path.open("rb") as f, heap.current().bulk():
        while True:
            head = f.read(8)
            if not head:
                break
            body = f.read(int.from_bytes(head, "little"))
            t, c = time.perf_counter(), time.process_time()
            fast_loads(body)
            wall += time.perf_counter() - t
            cpu += time.process_time() - c
            n += 1
            total += len(body)
    return DecodeRun(wall, cpu, n, total)


@dataclass
class Interleaved:
    """Initial sync and raw decode of the same pages, alternated (sync, decode, sync, decode, …)."""

    syncs: list[SyncResult]
    decodes: list[DecodeRun]
    transport: str  # "https" / "http": what the sync and the spooled pages both travelled over
    same_pages: bool  # every sync received pages of exactly the sizes spooled, kind by kind, in order
    spool_seconds: float  # fetching the pages once more (no decode) over the same client

    @property
    def kept(self) -> SyncResult:
        return self.syncs[-1]

    def sync_runs(self) -> list[float]:
        return [s.seconds for s in self.syncs]

    def decode_runs(self) -> list[float]:
        return [d.seconds for d in self.decodes]

    def ratios(self) -> list[float]:
        """sync / decode of each interleaved pair."""
        return [s.seconds / d.seconds for s, d in zip(self.syncs, self.decodes, strict=True) if d.seconds]

    def cpu_ratios(self) -> list[float]:
        return [s.cpu_seconds / d.cpu_seconds for s, d in zip(self.syncs, self.decodes, strict=True) if d.cpu_seconds]


async def sync_and_decode_interleaved(kubeconfig: Path, spool: Path, last_store: Store, lock: Any = None,
                                      rounds: int = 3, server_cpu: Callable[[], float | None] | None = None,
                                      progress: Callable[[str], None] | None = None) -> Interleaved:
    """`rounds` × (initial sync into a fresh store, then orjson over the same pages while that store
    is alive), in this process. The pages are fetched once, after the first sync, over that sync's own
    client (same TLS or none), spooled to `spool`; every sync's page sizes must match them. Earlier
    rounds' stores are dropped before the next sync; the last round syncs into `last_store` and keeps
    its source watching (the rest of the bench uses it)."""
    syncs: list[SyncResult] = []
    decodes: list[DecodeRun] = []
    spooled: dict[str, list[int]] | None = None
    spool_seconds = 0.0
    transport = ""
    same = True
    for i in range(rounds):
        last = i == rounds - 1
        _settle()
        sync = await initial_sync(kubeconfig, last_store if last else Store(), lock, server_cpu)
        try:
            if spooled is None:
                transport = sync.target.transport
                t = time.perf_counter()
                with spool.open("wb") as out:
                    spooled = await spool_pages(sync.source, out)
                spool_seconds = time.perf_counter() - t
            same = same and sync.pages == spooled
            dec = decode_spooled(spool)
        except BaseException:
            await sync.source.stop()
            await sync.target.close()
            raise
        if progress is not None:
            progress(f"  round {i + 1}: sync {sync.seconds:.3f} s (client CPU {sync.cpu_seconds:.2f} s"
                     + (f", simulator CPU {sync.server_cpu_seconds:.2f} s" if sync.server_cpu_seconds is not None else "")
                     + f"), decode {dec.seconds:.3f} s (CPU {dec.cpu_seconds:.2f} s), "
                     f"ratio {sync.seconds / dec.seconds:.2f}x ({rss_mib() or 0:.0f} MiB)")
        decodes.append(dec)
        if not last:
            await sync.source.stop()
            await sync.target.close()
            sync = replace(sync, store=None, source=None, target=None)  # the store goes before the next round
        syncs.append(sync)
    return Interleaved(syncs, decodes, transport, same, spool_seconds)


def _settle() -> None:
    """Drop what the previous round left (frozen by the heap policy or held in cycles: tasks, sessions)
    before the next sync, so each starts from the same heap."""
    gc.unfreeze()
    gc.collect()


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

    `refresh(now)` derives the view and returns the store revision it reflects. Small incremental updates run inline (they
    are bounded by the changes since the last view); the first one, and any full re-derive, runs in
    a thread so the event loop keeps serving input.
    """

    def __init__(self, store: Store, refresh: Callable[[datetime], int], clock: Callable[[], datetime],
                 probe: LatencyProbe, inline: Callable[[], bool] | None = None) -> None:
        self.store, self.refresh, self.clock, self.probe = store, refresh, clock, probe
        self.inline = inline or (lambda: False)
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.refreshes = 0
        self.durations: list[float] = []  # the update itself (derive + assemble), inline ones only
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

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self.inline():
                t = time.perf_counter()
                rev = self.refresh(self.clock())
                self.durations.append(time.perf_counter() - t)
            else:
                rev = await asyncio.to_thread(self.refresh, self.clock())
            self.refreshes += 1
            self.probe.ready(rev)
            await asyncio.sleep(0)
