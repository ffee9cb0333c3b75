"""The bench's queue-view phase (taudash/bench/queue_view.py) on a small generated fleet with a hot queue:
it opens the fullest ClusterQueue by key, pages its pending list while refreshes run, and reports its
figures (structure only: no timing is asserted)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from taudash.bench.generate import SIZES, generate
from taudash.bench.queue_view import queue_view_phase
from taudash.engine.rules.base import RuleConfig
from taudash.engine.session import Session
from taudash.engine.sources.snapshot import load_documents
from taudash.engine.view import SourceInfo
from taudash.screens.queues import QueuesScreen

FIGURES = {"queue_first_paint_s", "queue_positions_s", "queue_tick_s", "queue_tick_cpu_s", "queue_key_p95_s"}


async def painted(app) -> None:
    for _ in range(2):
        await app.screen.wait_for_refresh()


async def test_queue_view_phase_reports_its_figures():
    from taudash.app import TaudashApp

    size = replace(SIZES["S"], name="S-hot", hot_pending=250)
    store = load_documents([(None, o) for o in generate(size, seed=2)]).store
    session = Session(store, SourceInfo(type="sim", context="bench", path="x"), RuleConfig())
    app = TaudashApp(session, tick=3600.0, clock=lambda: datetime.now(UTC))
    figs, lines = {}, []
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await queue_view_phase(app, lambda f: figs.__setitem__(f.key, f), lines.append, painted)
        await pilot.pause()
        assert isinstance(app.screen, QueuesScreen)  # esc went back
    assert set(figs) == FIGURES
    assert all(f.value is not None and f.value > 0 for f in figs.values())
    assert "tau-ws-ws-000" in figs["queue_first_paint_s"].label
    assert "estimated order" in figs["queue_positions_s"].note  # no visibility API in this session
    assert int(figs["queue_positions_s"].note.split()[0]) >= 250
    assert "/8 with the refresh still in flight" in figs["queue_key_p95_s"].note
