"""Rehearsals: run a guided operation on a simulated fork of the cluster before running it for real.

    fork = fork_store(live.store, time.time(), context, identity)   # a consistent copy, as objects
    report = await rehearse("hold", params, fork)                    # nothing reaches the real cluster
    save(report)                                                     # <state dir>/rehearsals/<id>.json

The rehearsal engine uses the simulator (taudash.sim), so it lives in the program layer; the engine
(taudash.engine) never imports it. The report is the documented `taudash/v1 RehearsalReport`
(docs/rehearsal.md).
"""

from __future__ import annotations

from .fork import Fork, fork_store
from .report import (
    NOT_MODELLED,
    RehearsalError,
    compare,
    load,
    rehearsals_dir,
    render_table,
    save,
)
from .run import rehearse

__all__ = ["NOT_MODELLED", "Fork", "RehearsalError", "compare", "fork_store", "load", "rehearsals_dir", "rehearse",
           "render_table", "save"]
