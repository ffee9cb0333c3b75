"""What the soak's event loop was doing when it stalled: a watchdog thread samples the loop thread's stack
whenever a heartbeat on the loop is late by more than `threshold` seconds, and keeps each distinct stack
with how often and how long it was seen (written to `stalls.txt` in the soak's output folder).

A sampler, not a tracer: it costs one wake-up every `interval` seconds and nothing on the loop.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field


@dataclass
class Stall:
    stack: str
    seen: int = 0
    longest: float = 0.0
    at: list[float] = field(default_factory=list)  # monotonic times of the first sample of each stall


class StallWatch:
    def __init__(self, threshold: float = 1.0, interval: float = 0.1) -> None:
        self.threshold, self.interval = threshold, interval
        self.beat = time.monotonic()
        self.stalls: dict[str, Stall] = {}
        self._loop_thread = threading.get_ident()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task[None] | None = None

    async def _heartbeat(self) -> None:
        while True:
            self.beat = time.monotonic()
            await asyncio.sleep(self.interval)

    def start(self) -> None:
        self._loop_thread = threading.get_ident()
        self._task = asyncio.ensure_future(self._heartbeat())
        self._thread = threading.Thread(target=self._watch, name="soak-stall-watch", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        current: Stall | None = None
        while not self._stop.wait(self.interval):
            late = time.monotonic() - self.beat
            if late < self.threshold:
                current = None
                continue
            frame = sys._current_frames().get(self._loop_thread)
            if frame is None:
                continue
            stack = "".join(traceback.format_stack(frame, limit=25))
            s = self.stalls.setdefault(stack, Stall(stack))
            s.seen += 1
            s.longest = max(s.longest, late)
            if current is not s:
                s.at.append(self.beat)
            current = s

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 5)

    def report(self, since: float) -> str:
        if not self.stalls:
            return f"no stall: the event loop never went {self.threshold:g} s without running its heartbeat\n"
        out = []
        for s in sorted(self.stalls.values(), key=lambda s: -s.seen):
            at = ", ".join(f"{t - since:.0f} s" for t in s.at[:10])
            out.append(f"seen {s.seen} times ({s.seen * self.interval:.1f} s), late up to {s.longest:.1f} s, "
                       f"at {at}:\n{s.stack}")
        return "\n".join(out)
