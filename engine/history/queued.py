"""Recording from a per-tick hook (`taudash serve`): collect where the hook runs, write elsewhere.

`QueuedRecorder.hook(view, store, now)` is called under the session's lock (serve's `on_tick`): it
only collects (recorder.py `collect`: plain values) and hands the observation to its own writer thread,
which writes and applies retention outside the lock — a slow disk never holds a derive. While the
previous observation is still being written the tick is skipped (the next one reads the store's
changes since the last write, so nothing is lost). The database is opened on the writer thread, before
the first collect. Errors are kept and reported through `say`; a file from a newer taudash stops
recording for good. While another process records the file (a dashboard on the same cluster:
writer_lock.py) the writer thread stands by, says so once, and tries again every `retry` seconds,
taking over when that one stops.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from . import db as hdb
from .recorder import Observation, Recorder
from .writer_lock import RecorderBusy


class QueuedRecorder:
    def __init__(self, open_recorder: Callable[[], Recorder], say: Callable[[str], None] = lambda _: None,
                 retry: float = 5.0) -> None:
        self.open_recorder = open_recorder
        self.say = say
        self.retry = retry
        self.standby: str | None = None  # another process records the file (its RecorderBusy message)
        self.recorder: Recorder | None = None
        self.error: str | None = None
        self.stopped = False  # permanently (a newer schema): the hook does nothing
        self.writes = 0  # observations written
        self.costs: list[float] = []  # seconds per collect+write (the newest 100)
        self._queue: queue.Queue[tuple[Observation, float] | None] = queue.Queue(maxsize=1)
        self._ready = threading.Event()
        self._stopping = threading.Event()
        self._busy = threading.Event()  # an observation is queued or being written
        self._thread = threading.Thread(target=self._run, name="taudash-history-writer", daemon=True)

    def start(self) -> QueuedRecorder:
        self._thread.start()
        return self

    def hook(self, view: Any, store: Any, now: Any) -> None:
        """The per-tick hook: collect under the caller's lock, queue the write."""
        if self.stopped or not self._ready.is_set() or self._busy.is_set():
            return
        t0 = time.perf_counter()
        if self.recorder is None:  # set before _ready
            return
        obs = self.recorder.collect(view, store, now)
        self._busy.set()
        self._queue.put_nowait((obs, time.perf_counter() - t0))

    def _fail(self, text: str) -> None:
        if text != self.error:  # said once per distinct error, not every tick
            self.say(text)
        self.error = text

    def _open(self) -> Recorder | None:
        """The recorder, once this process may write the file; None when stopped meanwhile or for good."""
        while not self._stopping.is_set():
            try:
                recorder = self.open_recorder()
            except RecorderBusy as exc:
                if self.standby is None:
                    self.say(str(exc))
                self.standby = str(exc)
                self._stopping.wait(self.retry)
                continue
            except hdb.NewerSchema as exc:
                self.stopped = True
                self._fail(str(exc))
                return None
            except Exception as exc:
                self.stopped = True
                self._fail(f"history: not recording: {type(exc).__name__}: {exc}")
                return None
            if self.standby is not None:
                self.say("history: recording now (the other process stopped recording)")
                self.standby = None
            return recorder
        return None

    def _run(self) -> None:
        self.recorder = self._open()
        if self.recorder is None:
            return
        self._ready.set()
        while True:
            item = self._queue.get()
            if item is None:
                break
            obs, collect_cost = item
            t0 = time.perf_counter()
            try:
                self.recorder.write(obs)
                self.recorder.maintain_if_due(obs.now)
                self.writes += 1
                self.error = None
            except hdb.NewerSchema as exc:
                self.stopped = True
                self._fail(str(exc))
            except Exception as exc:  # a full disk, a locked file: serve goes on, the next tick retries
                self._fail(f"history: {type(exc).__name__}: {exc}")
            self.costs = [*self.costs[-99:], collect_cost + time.perf_counter() - t0]
            self._busy.clear()

    def stop(self, timeout: float = 10.0) -> None:
        """Write what is queued, then close the database."""
        self.stopped = True
        self._stopping.set()
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout)
        if self.recorder is not None:
            self.recorder.close()
