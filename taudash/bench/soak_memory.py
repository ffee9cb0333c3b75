"""`taudash bench --soak … --trace-memory`: where the soak's processes grow, by allocation site.

tracemalloc in the soak process (the dashboard and its recorder) and in serve (started through
`python -m taudash.bench.soak_memory PREFIX serve …`, which dumps a snapshot on SIGUSR1). A snapshot
is taken once the warm-up ends (the base) and then every `every` seconds; at the end the sites whose
allocations grew the most from the base to the last snapshot are written to `memory-<process>.txt` in the
output folder, with the counts of live objects by type (the dashboard only).
Tracing costs time and memory (about twice each): figures of a traced run are not the untraced ones.
"""

from __future__ import annotations

import collections
import gc
import os
import runpy
import signal
import sys
import threading
import tracemalloc
from pathlib import Path

FRAMES = 10
TOP = 25
_IGNORED = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>", "<unknown>",
            tracemalloc.__file__)


def _filtered(snapshot: tracemalloc.Snapshot) -> tracemalloc.Snapshot:
    return snapshot.filter_traces([tracemalloc.Filter(False, f) for f in _IGNORED])


def growth_report(base: tracemalloc.Snapshot, now: tracemalloc.Snapshot, title: str, top: int = TOP) -> str:
    """The `top` allocation sites (whole tracebacks) that grew the most from `base` to `now`, and by line."""
    base, now = _filtered(base), _filtered(now)
    total = sum(s.size_diff for s in now.compare_to(base, "filename"))
    lines = [title, f"net growth of every site: {total / 2**20:+.1f} MiB", ""]
    by_line = [s for s in now.compare_to(base, "lineno") if s.size_diff > 0][:top]
    # Whole tracebacks only for the traces allocated at those lines: grouping every trace by its traceback
    # takes minutes on a heap of millions of blocks.
    sites = [tracemalloc.Filter(True, s.traceback[0].filename, s.traceback[0].lineno) for s in by_line]
    by_traceback = [s for s in now.filter_traces(sites).compare_to(base.filter_traces(sites), "traceback")
                    if s.size_diff > 0][:top] if sites else []
    for key, heading, stats in (("lineno", "by line", by_line), ("traceback", "by traceback", by_traceback)):
        lines.append(f"## {heading}")
        for s in stats:
            lines.append(f"{s.size_diff / 2**20:+8.2f} MiB {s.count_diff:+9d} blocks  (now {s.size / 2**20:.1f} MiB)")
            frames = s.traceback.format(most_recent_first=True)
            lines.extend("      " + f.strip() for f in (frames if key == "traceback" else frames[:1]))
        lines.append("")
    return "\n".join(lines)


def type_counts() -> collections.Counter[str]:
    """Live objects the collector tracks, by type — frozen ones too (the GC policy freezes the model, and
    gc.get_objects does not list frozen objects): thawed for the count and frozen again, as the policy's
    next freeze would anyway."""
    from textual.widgets import DataTable

    frozen = gc.get_freeze_count() > 0
    if frozen:
        gc.unfreeze()
    try:
        objects = gc.get_objects()
        counts = collections.Counter(type(o).__qualname__ for o in objects)
        # The tables' render caches (fixed sizes, filled as rows change): entries, not objects.
        for o in objects:
            if isinstance(o, DataTable):
                for cache in ("_cell_render_cache", "_row_render_cache", "_line_cache"):
                    counts[f"[entries in DataTable.{cache}]"] += len(getattr(o, cache, ()))
        return counts
    finally:
        if frozen:
            gc.freeze()


def type_report(base: collections.Counter[str], now: collections.Counter[str], top: int = TOP) -> str:
    diff = sorted(((now[k] - base.get(k, 0), k) for k in now), reverse=True)[:top]
    return "\n".join(["## live objects by type, growth since the base", *(f"{d:+9d}  {k} (now {now[k]})"
                                                                          for d, k in diff if d > 0)])


class MemoryTrace:
    """The soak process's side: traces itself and signals serve (traced through `main` below). During the
    run each process only dumps snapshots (`<process>-snapshot-<n>.snap`, the base and the newest kept);
    `report()` compares them once the soak is over: grouping millions of traces takes minutes, and done
    beside a running dashboard it would be the stall it is looking for."""

    def __init__(self, out: Path, every: float = 120.0, allocations: bool = True) -> None:
        """`allocations`: tracemalloc in both processes; else only the live objects by type in this one,
        counted every `every` seconds (a pause of a fraction of a second each at S; nothing else slows)."""
        self.out, self.every, self.allocations = out, every, allocations
        self.series: list[tuple[float, collections.Counter[str]]] = []
        self.taken = 0
        self.base_at = self.last_at = 0.0
        self.base_types: collections.Counter[str] = collections.Counter()
        self.types: collections.Counter[str] = collections.Counter()
        self.serve_pid: int | None = None
        self._thread: threading.Thread | None = None

    @property
    def serve_prefix(self) -> Path | None:
        return self.out / "serve-snapshot" if self.allocations else None

    def start(self) -> None:
        if self.allocations:
            tracemalloc.start(FRAMES)

    def due(self, t: float) -> bool:
        busy = self._thread is not None and self._thread.is_alive()
        return not busy and (self.taken == 0 or t - self.last_at >= self.every)

    def take_in_background(self, t: float) -> None:
        """`take` on a thread of its own (a dump of a big heap takes seconds; the soak's clock goes on)."""
        self.last_at = t
        self._thread = threading.Thread(target=self.take, args=(t,), name="soak-memory-trace", daemon=True)
        self._thread.start()

    def take(self, t: float) -> None:
        if not self.allocations:
            self.series.append((t, type_counts()))
            self.taken += 1
            return
        gc.collect()
        self._signal_serve()
        self.taken += 1
        tracemalloc.take_snapshot().dump(str(self.out / f"dashboard-snapshot-{self.taken}.snap"))
        if self.taken == 1:
            self.base_at, self.base_types = t, type_counts()
        else:
            self.types = type_counts()
            if self.taken > 2:  # keep the base and the newest
                (self.out / f"dashboard-snapshot-{self.taken - 1}.snap").unlink(missing_ok=True)
        self.last_at = t

    def _signal_serve(self) -> None:
        if self.serve_pid is not None:
            try:
                os.kill(self.serve_pid, signal.SIGUSR1)
            except OSError:
                self.serve_pid = None

    def stop(self) -> None:
        if self._thread is not None:
            self._thread.join()
        if self.allocations:
            tracemalloc.stop()

    def _objects_report(self, top: int = TOP) -> Path:
        """The types whose live count grew the most from the first count to the last, with every count
        between (a plateau shows as a flat tail)."""
        first, last = self.series[0][1], self.series[-1][1]
        grown = sorted(((last[k] - first.get(k, 0), k) for k in last), reverse=True)[:top]
        lines = [f"live objects by type (gc.get_objects: what the collector tracks) at "
                 f"{', '.join(f'{t:.0f}' for t, _ in self.series)} s; the {top} that grew the most", ""]
        lines += [f"{d:+9d}  {k:<40} " + " ".join(f"{c[k]}" for _, c in self.series) for d, k in grown if d > 0]
        tables = sorted(k for k in last if k.startswith("[entries"))
        lines += ["", *(f"{last[k] - first.get(k, 0):+9d}  {k:<40} " + " ".join(f"{c[k]}" for _, c in self.series)
                        for k in tables)]
        path = self.out / "memory-objects.txt"
        path.write_text("\n".join(lines) + "\n")
        return path

    def report(self) -> list[Path]:
        """memory-dashboard.txt and memory-serve.txt: growth from each process's first snapshot to its last."""
        if not self.allocations:
            return [self._objects_report()] if len(self.series) >= 2 else []
        written = []
        for name, title in (("dashboard", "the soak's dashboard process (and its recorder)"),
                            ("serve", "taudash serve")):
            snaps = sorted(self.out.glob(f"{name}-snapshot-*.snap"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
            if name == "serve":  # complete dumps only (serve touches .done after each)
                snaps = [p for p in snaps if p.with_suffix(".done").exists()]
            if len(snaps) < 2:
                continue
            text = growth_report(tracemalloc.Snapshot.load(str(snaps[0])), tracemalloc.Snapshot.load(str(snaps[-1])),
                                 f"{title}: growth from {snaps[0].name} to {snaps[-1].name}")
            if name == "dashboard":
                text += f"\n{type_report(self.base_types, self.types)}\n"
            path = self.out / f"memory-{name}.txt"
            path.write_text(text + "\n")
            written.append(path)
        return written


def main(argv: list[str]) -> int:
    """`python -m taudash.bench.soak_memory PREFIX ARGS…`: the CLI with ARGS, traced; SIGUSR1 dumps a snapshot
    to PREFIX-<n>.snap (then touches PREFIX-<n>.done)."""
    prefix, args = argv[0], argv[1:]
    count = 0

    def dump(signum: int, frame: object) -> None:
        nonlocal count
        count += 1
        gc.collect()
        path = f"{prefix}-{count}"
        tracemalloc.take_snapshot().dump(path + ".snap")
        Path(path + ".done").touch()

    tracemalloc.start(FRAMES)
    signal.signal(signal.SIGUSR1, dump)
    # The CLI as `python -m taudash.cli` runs it (run by name: the bench sits below the CLI in the layers).
    sys.argv = ["taudash", *args]
    try:
        runpy.run_module("taudash.cli", run_name="__main__", alter_sys=True)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 0 if done.code is None else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
