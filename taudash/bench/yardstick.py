"""Yardsticks: fixed work measured in the same run as the figures it judges, so a target stated
as a ratio to it means the same on a fast machine and a slow one (taudash/bench/ratios.py).

- `cpu_yardstick`: a fixed pure-Python loop (build small dicts, group, sort, sum) — the kind of work an
  incremental view update or a recorder pass does, and nothing of taudash's own code, so a faster
  taudash cannot make its own yardstick faster.
- `table_yardstick`: a bare Textual app at the bench's screen size showing a DataTable of as many rows
  as the screen holds: its first paint (a screen pushed → painted) and one re-render of every visible
  cell (the per-tick analogue).
- `key_yardstick`: a bare Textual app with two trivial screens and a key that switches between them:
  key event in → the other screen painted.

The Textual ones wait for the paint the way the bench's own switch timing does: the caller passes its
`painted` (run.py `_painted`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

CPU_ROWS = 3000
TABLE_COLUMNS = 8  # 8 columns of 18 characters (with padding) fill the 160-column screen

Painted = Callable[[Any], Awaitable[None]]


def cpu_work(rows: int = CPU_ROWS) -> int:
    """The fixed loop: `rows` Workload-like dicts grouped by queue, each queue sorted by priority, the
    GPUs of its first ten summed. Returns the sum (so nothing is optimised away)."""
    items: list[dict[str, Any]] = [{"name": f"wl-{i:05d}", "queue": f"q-{i % 37}", "gpus": i % 8, "priority": (i * 7919) % 1000}
             for i in range(rows)]
    by_queue: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_queue.setdefault(item["queue"], []).append(item)
    total = 0
    for queue, members in by_queue.items():
        members.sort(key=lambda m: (-m["priority"], m["name"]))
        total += sum(m["gpus"] for m in members[:10]) + len(queue)
    return total


def cpu_yardstick(repeat: int = 5, rows: int = CPU_ROWS) -> list[float]:
    """Wall time of `cpu_work`, `repeat` times (the caller takes the median)."""
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        cpu_work(rows)
        runs.append(time.perf_counter() - t)
    return runs


def _cells(rows: int, generation: int) -> list[list[str]]:
    return [[f"r{r:03d}-c{c}-g{generation:04d}-abcdef"[:16] for c in range(TABLE_COLUMNS)] for r in range(rows)]


async def _until(done: Callable[[], bool]) -> None:
    for _ in range(60000):
        if done():
            return
        await asyncio.sleep(0.001)
    raise RuntimeError("the yardstick app did not reach the expected state")


async def table_yardstick(size: tuple[int, int], painted: Painted, rounds: int = 5) -> tuple[list[float], list[float]]:
    """(first paints, re-renders), `rounds` of each after one unmeasured warm-up round."""
    from textual.app import App, ComposeResult
    from textual.coordinate import Coordinate
    from textual.screen import Screen
    from textual.widgets import DataTable, Static

    rows = size[1] - 1  # the header takes one line

    class TableScreen(Screen):
        def compose(self) -> ComposeResult:
            table: DataTable = DataTable()
            table.add_columns(*(f"column {c}" for c in range(TABLE_COLUMNS)))
            table.add_rows(_cells(rows, 0))
            yield table

    class Bare(App):
        def compose(self) -> ComposeResult:
            yield Static("yardstick")

    paints: list[float] = []
    renders: list[float] = []
    app = Bare()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for i in range(rounds + 1):
            screen = TableScreen()
            t = time.perf_counter()
            app.push_screen(screen)
            await _until(lambda s=screen: app.screen is s)  # type: ignore[misc]
            await painted(app)
            paint = time.perf_counter() - t
            table = screen.query_one(DataTable)
            t = time.perf_counter()
            for r, row in enumerate(_cells(rows, i + 1)):
                for c, value in enumerate(row):
                    table.update_cell_at(Coordinate(r, c), value)
            await painted(app)
            render = time.perf_counter() - t
            if i:  # round 0 warms up (Textual's first DataTable: styles parsed, caches filled)
                paints.append(paint)
                renders.append(render)
            app.pop_screen()
            await _until(lambda s=screen: app.screen is not s)  # type: ignore[misc]
            await painted(app)
    return paints, renders


async def key_yardstick(size: tuple[int, int], painted: Painted, presses: int = 20) -> list[float]:
    """Key event in → the other of two trivial screens painted, `presses` times after one warm-up."""
    from textual import events
    from textual.app import App, ComposeResult
    from textual.screen import Screen
    from textual.widgets import Static

    class Plain(Screen):
        def compose(self) -> ComposeResult:
            yield Static(f"screen {type(self).__name__}")

    class A(Plain):
        pass

    class B(Plain):
        pass

    class Bare(App):
        MODES = {"a": A, "b": B}
        DEFAULT_MODE = "a"
        BINDINGS = [("a", "switch_mode('a')", "A"), ("b", "switch_mode('b')", "B")]

    runs: list[float] = []
    app = Bare()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for i in range(presses + 1):
            name = "b" if isinstance(app.screen, A) else "a"
            want = B if name == "b" else A
            t = time.perf_counter()
            app.post_message(events.Key(name, name))
            await _until(lambda w=want: isinstance(app.screen, w))  # type: ignore[misc]
            await painted(app)
            if i:
                runs.append(time.perf_counter() - t)
    return runs


__all__ = ["cpu_work", "cpu_yardstick", "key_yardstick", "table_yardstick"]
