"""Ctrl-C during a workflow run (taudash/commands/workflow.py `run_interruptible`): the run's task is cancelled,
and cancelled again while it still runs, so a cancellation lost in a library's timeout race cannot leave the
operator's Ctrl-C unanswered; KeyboardInterrupt follows once the task has ended."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from taudash.commands import workflow


def _press_ctrl_c_after(seconds: float) -> None:
    asyncio.get_running_loop().call_later(seconds, os.kill, os.getpid(), signal.SIGINT)


def test_a_run_that_loses_the_first_cancel_is_cancelled_again(monkeypatch):
    monkeypatch.setattr(workflow, "RECANCEL_SECONDS", 0.2)
    seen: list[str] = []

    async def run() -> int:
        _press_ctrl_c_after(0.05)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("first cancel lost")  # as a racing wait_for would drop it
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled again")
            raise
        return 0

    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        workflow.run_interruptible(run())
    assert seen == ["first cancel lost", "cancelled again"]
    assert time.monotonic() - t0 < 10  # not the 30 s the lost cancel would have waited


def test_a_run_that_ends_on_the_first_cancel_is_a_keyboard_interrupt_once(monkeypatch):
    monkeypatch.setattr(workflow, "RECANCEL_SECONDS", 0.2)
    cancels: list[int] = []

    async def run() -> int:
        _press_ctrl_c_after(0.05)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancels.append(1)
            await asyncio.sleep(0.5)  # its own clean-up, longer than the re-cancel interval: cut short, once more
            raise
        return 0

    with pytest.raises(KeyboardInterrupt):
        workflow.run_interruptible(run())
    assert cancels == [1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is given back


def test_a_run_without_ctrl_c_returns_its_exit_code_and_a_cancel_from_elsewhere_stays_a_cancel():
    async def done() -> int:
        return 4

    assert workflow.run_interruptible(done()) == 4

    async def cancelled() -> int:
        asyncio.current_task().cancel()
        await asyncio.sleep(1)
        return 0

    with pytest.raises(asyncio.CancelledError):
        workflow.run_interruptible(cancelled())
