"""Headless measurements of `taudash bench`: the simulator process, initial sync against it, the raw
decode baseline of the same bytes, kubectl as the peer, derivation, event→view latency, memory.

Timings are wall-clock medians on a shared machine: the bench reports them with their targets; no
test asserts on them.
"""

from __future__ import annotations

import asyncio
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

    @property
    def ok(self) -> bool | None:
        if self.target is None or self.value is None:
            return None
        return self.value <= self.target if self.lower_is_better else self.value >= self.target

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "value": self.value, "unit": self.unit, "target": self.target,
                "pass": self.ok, "note": self.note}


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
    store: Store
    source: Any  # KubeSource, still watching
    target: Any
    seconds: float
    cpu_seconds: float
    counts: dict[str, int] = field(default_factory=dict)
    not_synced: list[str] = field(default_factory=list)


async def initial_sync(kubeconfig: Path, store: Store, lock: Any = None) -> SyncResult:
    """Connect and list every kind through engine.sources.kube; the informers keep watching after."""
    from taudash.engine.sources.kube import KubeSource, connect

    target = await connect(None, str(kubeconfig))
    source = KubeSource(store, target, lock=lock)
    t, c = time.perf_counter(), time.process_time()
    await source.start()
    await source.wait_synced(900)
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    counts = {k.kind: store.count(k.kind) for k in KINDS}
    bad = [k for k, a in store.access_states().items() if a.state is not AccessState.SYNCED]
    return SyncResult(store, source, target, seconds, cpu, counts, bad)


async def list_bodies(source: KubeSource, out: BinaryIO | None = None) -> list[bytes]:
    """The same list pages the informers read (same paths, same page size), as raw bytes; written
    length-prefixed to the binary file `out` instead of kept, when given."""
    bodies: list[bytes] = []
    for k in source.kinds:
        if source.status[k.kind].version is None:
            continue
        cont = None
        while True:
            body = await source.list_page(k, cont)
            if out is None:
                bodies.append(body)
            else:
                out.write(len(body).to_bytes(8, "little"))
                out.write(body)
            cont = (fast_loads(body).get("metadata") or {}).get("continue")
            if not cont:
                break
    return bodies


def decode_seconds(bodies: list[bytes], repeat: int = 3) -> float:
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        for b in bodies:
            fast_loads(b)
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


_DECODE_CHILD = """
import statistics, sys, time
try:
    from orjson import loads
except ImportError:
    from json import loads
bodies = []
with open(sys.argv[1], "rb") as f:
    while True:
        n = f.read(8)
        if not n:
            break
        bodies.append(f.read(int.from_bytes(n, "little")))
runs = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    for b in bodies:
        loads(b)
    runs.append(time.perf_counter() - t)
print(statistics.median(runs))
"""


def decode_seconds_elsewhere(path: Path, repeat: int = 3) -> float:
    """decode_seconds of the pages in `path`, in a child process: the baseline's own memory (every
    page at once) must not count in the client's peak."""
    p = subprocess.run([sys.executable, "-c", _DECODE_CHILD, str(path), str(repeat)], capture_output=True,
                       text=True, timeout=1800, check=True)
    return float(p.stdout.strip())


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
