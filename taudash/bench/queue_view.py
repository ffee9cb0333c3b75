"""Bench phase "queue view" (docs/queue-insight.md): open the ClusterQueue with the most pending Workloads (10k at
size L: generate.hot_queue) from the Queues screen by key, and measure

- first paint: the Enter key event in → the queue view rendered its frame and the compositor refreshed
  (as every screen's first paint is measured: commands/bench.py `switch`);
- positions on screen: Enter → the pending list (the visibility API's answer, or the estimate) drawn —
  reported, no target: it depends on the API server;
- per-tick render of the queue view with its positions shown (a new view object, as a tick after a change);
- key → screen while a position refresh is in flight: `r` starts a refresh (a worker), then `]`/`[`
  page the pending table (a one-page queue: the cursor moves); the clock stops when it is painted. A sample
  counts as "in flight" when the refresh had not finished when the page was painted.

Runs inside the dashboard the UI phase opened (`app`), after it; reads nothing else of the harness.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from taudash.bench.measure import Figure, median, percentile

PAGE_PRESSES = 8


async def queue_view_phase(app: Any, fig: Callable[[Figure], None], progress: Callable[[str], None],
                           painted: Callable[[Any], Awaitable[None]]) -> None:
    from textual import events

    from taudash.screens.queue_detail import QueueDetailScreen
    from taudash.screens.queues import QueuesScreen
    from taudash.screens.widgets.keyed_table import PAGE_ROWS, KeyedTable

    session = app.session
    frame = session.frame(datetime.now(UTC))
    if not frame.view.cluster_queues:
        progress("queue view: no ClusterQueue, skipped")
        return
    cq = max(frame.view.cluster_queues, key=lambda q: q.pending)
    progress(f"queue view: ClusterQueue {cq.name} ({cq.pending} pending in its status), "
             f"positions from {'the session fetch' if session.queue_positions else 'the estimate'}")

    async def key(k: str, char: str | None = None) -> None:
        app.post_message(events.Key(k, char))
        await asyncio.sleep(0)

    # the Queues screen with the cursor on the queue's row
    app.post_message(events.Key("3", "3"))
    for _ in range(60000):
        if isinstance(app.screen, QueuesScreen) and app.screen.frame is not None:
            break
        await asyncio.sleep(0.001)
    await painted(app)
    table = app.screen.query_one("#queues", KeyedTable)
    table.focus()
    table.move_cursor(row=table.get_row_index(f"cq:{cq.name}"))
    await painted(app)

    t = time.perf_counter()
    await key("enter")
    for _ in range(60000):
        if isinstance(app.screen, QueueDetailScreen) and app.screen.frame is not None:
            break
        await asyncio.sleep(0.001)
    await painted(app)
    first = time.perf_counter() - t
    screen: QueueDetailScreen = app.screen
    pending = screen.query_one("#qd-pending", KeyedTable)
    for _ in range(600000):
        if screen.fetches >= 1:
            break
        await asyncio.sleep(0.001)
    await painted(app)
    shown = time.perf_counter() - t
    pos = screen.positions
    n = len(pos.items) if pos is not None and pos.items is not None else 0
    fig(Figure("queue_first_paint_s", f"queue view: first paint ({cq.name}, {cq.pending} pending)", first, "s"))
    fig(Figure("queue_positions_s", "queue view: Enter → positions on screen", shown, "s",
               note=f"{n} rows, {pos.label if pos is not None else 'none'}; the table holds one page"))

    runs, cpu = [], []
    for _ in range(3):
        f = session.frame(datetime.now(UTC))
        f = replace(f, view=copy.copy(f.view))  # as if the view had changed
        t, c = time.perf_counter(), time.thread_time()
        app.render_frame(f)
        await painted(app)
        runs.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
    fig(Figure("queue_tick_s", "queue view: per-tick render", median(runs), "s"))
    fig(Figure("queue_tick_cpu_s", "queue view: per-tick render, UI-thread CPU", median(cpu), "s"))

    pending.focus()
    await painted(app)
    presses: list[float] = []
    in_flight = 0
    for i in range(PAGE_PRESSES):
        done = screen.fetches
        await key("r", "r")  # a refresh starts (a worker): the page key must not wait for it
        await asyncio.sleep(0.005)
        paged = pending.shown > PAGE_ROWS  # one page only (a small fleet): the cursor moves instead
        before = (pending.page, pending.cursor_row)
        char: str | None
        if paged:
            k, char = ("right_square_bracket", "]") if i % 2 == 0 else ("left_square_bracket", "[")
        else:
            k, char = ("down", None) if i % 2 == 0 else ("up", None)
        t = time.perf_counter()
        await key(k, char)
        for _ in range(60000):
            if (pending.page, pending.cursor_row) != before:
                break
            await asyncio.sleep(0.001)
        await painted(app)
        presses.append(time.perf_counter() - t)
        in_flight += screen.fetches == done
        for _ in range(600000):  # the refresh lands before the next sample
            if screen.fetches > done:
                break
            await asyncio.sleep(0.001)
    fig(Figure("queue_key_p95_s", "queue view: key → screen while positions refresh, p95",
               percentile(presses, 95), "s",
               note=f"{in_flight}/{len(presses)} with the refresh still in flight"))
    progress(f"  page keys: {', '.join(f'{p * 1000:.0f}' for p in presses)} ms")
    await key("escape")
    for _ in range(60000):  # the queue view popped (waiting on its refresh would wait forever)
        if app.screen is not screen:
            break
        await asyncio.sleep(0.001)
    await painted(app)


__all__ = ["queue_view_phase"]
