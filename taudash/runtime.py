"""Process-wide runtime policy for the programs that hold a fleet-scale model for hours.

`tune_gc_for_long_lived_model()` is called once by the program, at the CLI's entry (taudash.cli),
never by the engine: the garbage collector is the process's, and a library user of the engine keeps
CPython's defaults (docs/decisions.md). Even one-shot commands list a whole fleet, which
decodes several times faster with the collector paused.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from taudash.engine import heap

# Young collections every 20k allocations instead of 700; full ones a hundred times rarer.
GC_THRESHOLDS = (20_000, 20, 100)


class LongLivedHeap:
    """The engine's bulk builds (lists, full views) make millions of long-lived objects, almost none
    in reference cycles (refcounting frees them). The cyclic GC would re-walk them on every full
    collection: pauses of up to half a second at fleet scale. Lists run with the collector paused,
    and what a list or a full view built is frozen out of its reach afterwards (gc.freeze)."""

    def __init__(self) -> None:
        self._depth = 0  # lists of several kinds run concurrently: pause once, resume after the last
        self._was_enabled = True
        # A full view build (a worker thread) may overlap a re-list (the event loop): the count is shared.
        self._lock = threading.Lock()

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
                    gc.freeze()
                    if self._was_enabled:
                        gc.enable()

    def settled(self) -> None:
        gc.freeze()


def tune_gc_for_long_lived_model() -> LongLivedHeap:
    """Set the collector's thresholds and install the long-lived heap policy (idempotent)."""
    if gc.get_threshold() != GC_THRESHOLDS:
        gc.set_threshold(*GC_THRESHOLDS)
    policy = heap.current()
    if not isinstance(policy, LongLivedHeap):
        policy = LongLivedHeap()
        heap.install(policy)
    return policy
