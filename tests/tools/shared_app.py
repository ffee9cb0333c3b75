"""One running Textual app behind many `snap_compare` snapshots (pytest-textual-snapshot), instead of one per test.

Starting an app, composing its first screen and deriving its first frame is most of a snapshot test's CPU; the
tests of one module that photograph the same read-only app at one size can share it. Each test still calls
`snap_compare` and keeps its own SVG file, comparison, `--snapshot-update` and failure report: only
`textual._doc.take_svg_screenshot`, which would have started a fresh app, is replaced for that call by a
screenshot of the shared one.

The app runs on an event loop of its own that only turns while a test takes its screenshot (paused in
between, timers included), so nothing else in the process runs beside it. Before each screenshot the app is put
back where a fresh one starts (`reset`), then driven exactly as `take_svg_screenshot`'s autopilot drives a fresh
app. Only for apps no test changes: a screen that keeps state a test made (a sort, a cursor, a filter) would
leak into the next test.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable

import pytest
import textual._doc
from textual.app import App
from textual.pilot import Pilot

Reset = Callable[[Pilot], Awaitable[None]]


class LiveApp:
    """`app` running headless at `size`, taking screenshots on request."""

    def __init__(self, app: App, size: tuple[int, int], reset: Reset, loop: asyncio.AbstractEventLoop) -> None:
        self.app, self.size, self.reset, self.loop = app, size, reset, loop
        self.jobs: asyncio.Queue = asyncio.Queue()
        self.task = self.loop.create_task(app.run_async(headless=True, size=size, auto_pilot=self._serve))

    async def _serve(self, pilot: Pilot) -> None:
        while True:
            try:
                job = await asyncio.wait_for(self.jobs.get(), 0.1)
            except TimeoutError:
                if self.app.is_running:
                    continue
                return  # the app stopped (a crash): the waiting test hears it from the app's task
            if job is None:
                self.app.exit()
                return
            press, run_before, answer = job
            try:
                answer.set_result(await self._screenshot(pilot, press, run_before))
            except Exception as exc:  # noqa: BLE001 - handed to the test that asked
                answer.set_exception(exc)

    async def _screenshot(self, pilot: Pilot, press: Iterable[str], run_before) -> str:
        await self.reset(pilot)
        # from here on, as textual._doc.take_svg_screenshot's autopilot drives a fresh app
        if run_before is not None:
            result = run_before(pilot)
            if inspect.isawaitable(result):
                await result
        await pilot.pause()
        await pilot.press(*press)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        return self.app.export_screenshot(title=self.app.title, simplify=True)

    def take_svg_screenshot(self, app: App, press: Iterable[str] = (), terminal_size: tuple[int, int] = (80, 24),
                            run_before=None, **unused) -> str:
        """What snap_compare calls: this app's screenshot after `run_before` and `press`."""
        assert app is self.app and tuple(terminal_size) == self.size and not unused, "not this shared app's call"
        answer = self.loop.create_future()
        self.jobs.put_nowait((tuple(press), run_before, answer))
        self.loop.run_until_complete(asyncio.wait({answer, self.task}, return_when=asyncio.FIRST_COMPLETED))
        if not answer.done():
            self.task.result()  # the app's own error, if it had one
            raise RuntimeError(f"the shared app at {self.size} stopped")
        return answer.result()

    def close(self) -> None:
        if not self.task.done():
            self.jobs.put_nowait(None)
        self.loop.run_until_complete(self.task)


class SharedApps:
    """One LiveApp per terminal size, each made by `make()` on its first use, on an event loop of its own made
    here (a module-scoped fixture's, not the first test's: tests/tools/fd_guard.py), all closed by `close()`."""

    def __init__(self, make: Callable[[], App], reset: Reset, sizes: Iterable[tuple[int, int]]) -> None:
        self.make, self.reset = make, reset
        self.loops = {tuple(size): asyncio.new_event_loop() for size in sizes}
        self.running: dict[tuple[int, int], LiveApp] = {}

    def compare(self, snap_compare, size: tuple[int, int], press: Iterable[str] = (), run_before=None) -> bool:
        """snap_compare of the shared app at `size` (started within the calling test, under its fixtures)."""
        live = self.running.get(size)
        if live is None:
            live = self.running[size] = LiveApp(self.make(), size, self.reset, self.loops[size])
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(textual._doc, "take_svg_screenshot", live.take_svg_screenshot)
            return snap_compare(live.app, press=press, terminal_size=size, run_before=run_before)

    def close(self) -> None:
        try:
            for live in self.running.values():
                live.close()
        finally:
            self.running.clear()
            for loop in self.loops.values():
                loop.close()


async def back_home(pilot: Pilot) -> None:
    """A taudash dashboard as it starts: its home screen, nothing pushed over the screen a test left."""
    app = pilot.app
    while len(app.screen_stack) > 1:
        await app.pop_screen()
    home = app.screen_registry.home.name
    if app.current_mode != home:
        await app.switch_mode(home)
