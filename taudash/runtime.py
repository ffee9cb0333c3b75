"""Process-wide runtime policy for the programs that hold a fleet-scale model for hours.

`tune_gc_for_long_lived_model()` is called once by the program, at the CLI's entry (taudash.cli),
never by the engine: the garbage collector is the process's, and a library user of the engine keeps
CPython's defaults (docs/decisions.md). Even one-shot commands list a whole fleet, which
decodes several times faster with the collector paused.
"""

from __future__ import annotations

import ctypes
import gc
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from taudash.engine import heap

# Young collections every 20k allocations instead of 700; full ones a hundred times rarer.
GC_THRESHOLDS = (20_000, 20, 100)


# At most this often a freeze first thaws and collects everything (see LongLivedHeap._freeze).
THAW_SECONDS = 60.0

# At most this often a freeze hands the allocator's free pages back to the system (see release_freed_pages).
TRIM_SECONDS = 10.0


_UNLOADED = object()
_trim: Any = _UNLOADED  # glibc's malloc_trim, looked up at the first trim (not at every command's start)


def _libc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim from the process's own symbols, or None where the C library has none (musl,
    macOS). `ctypes.util.find_library` would run `ldconfig` in a subprocess: ~16 ms."""
    try:
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:
        return None
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_freed_pages() -> bool:
    """Return the C allocator's free pages to the system. A re-list frees a kind's old objects while
    its new ones are already built: glibc keeps the freed chunks (its free only shrinks the heap's top,
    and after the first large free it stops giving big buffers their own mappings), so the process's
    resident size stays at every re-list's peak — the soak's RSS rose in steps at each API-server
    restart, 410 storm and 403 flip and never came down (docs/reliability.md, section 10).
    malloc_trim(0) gives back every whole free page in every arena (MADV_DONTNEED)."""
    global _trim
    if _trim is _UNLOADED:
        _trim = _libc_trim()
    if _trim is None:
        return False
    _trim(0)
    return True


class LongLivedHeap:
    """The engine's bulk builds (lists, full views) make millions of long-lived objects, almost none
    in reference cycles (refcounting frees them). The cyclic GC would re-walk them on every full
    collection: pauses of up to half a second at fleet scale. Lists run with the collector paused,
    and what a list or a full view built is frozen out of its reach afterwards (gc.freeze).

    A freeze also takes whatever else is alive at that moment — connections, the dashboard's widgets,
    the view being replaced — and what later dies of it in a reference cycle can never be collected:
    frozen objects are not examined again. A process that re-lists or rebuilds its view now and then
    (a source's reconnections, a kind turning Forbidden and back) kept every such generation: the soak
    measured +120 MiB per API-server restart at M (docs/reliability.md, "Soak"). So a freeze thaws the
    frozen objects and collects everything first, at most every `THAW_SECONDS` (one full collection,
    a pause of the order of the one the freeze avoids, at a moment that follows a bulk build anyway);
    the freezes in between leave their garbage to the next thaw: bounded, never growing."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        thaw_seconds: float = THAW_SECONDS,
        trim_seconds: float = TRIM_SECONDS,
    ) -> None:
        self._depth = 0  # lists of several kinds run concurrently: pause once, resume after the last
        self._was_enabled = True
        # A full view build (a worker thread) may overlap a re-list (the event loop): the count is shared.
        self._lock = threading.Lock()
        self._clock = clock
        self._thaw_seconds = thaw_seconds
        self._thawed: float | None = None
        self.thaws = 0
        self._trim_seconds = trim_seconds
        self._trimmed: float | None = None
        self.trims = 0

    def _freeze(self) -> None:
        now = self._clock()
        if self._thawed is not None and now - self._thawed >= self._thaw_seconds:
            gc.unfreeze()
            gc.collect()
            self.thaws += 1
            self._thawed = now
        elif self._thawed is None:
            self._thawed = now  # the first freeze (the initial sync): nothing frozen yet to thaw
        gc.freeze()
        # After a bulk build is when a kind's previous objects have just been freed.
        if self._trimmed is None or now - self._trimmed >= self._trim_seconds:
            self._trimmed = now
            if release_freed_pages():
                self.trims += 1

    def bulk(self) -> AbstractContextManager[None]:
        return self._bulk()

    @contextmanager
    def _bulk(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self._freeze()
                    if self._was_enabled:
                        gc.enable()

    def settled(self) -> None:
        with self._lock:
            self._freeze()


def tune_gc_for_long_lived_model() -> LongLivedHeap:
    """Set the collector's thresholds and install the long-lived heap policy (idempotent)."""
    if gc.get_threshold() != GC_THRESHOLDS:
        gc.set_threshold(*GC_THRESHOLDS)
    policy = heap.current()
    if not isinstance(policy, LongLivedHeap):
        policy = LongLivedHeap()
        heap.install(policy)
    return policy
