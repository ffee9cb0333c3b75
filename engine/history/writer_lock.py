"""One recorder per history file: the dashboard and `taudash serve` on one host and cluster share the
file, and one of them writes it at a time (docs/decisions.md, decision 111).

A recorder keeps what it last wrote in memory — the findings open, the drain states, the last sample
time — and writes the difference each pass. Two recorders on one file would each write the other's
changes again: a finding opened by one is opened again by the other (an IntegrityError on
`open_findings`), every event twice. Both would record the same cluster, so one recording is the
whole history: the second stands by (it still reads the file: the History screen, the sparklines)
and takes over when the first stops. The lock is `flock` on `<file>.lock`, so the kernel releases it
when its holder exits, however it exits (kill -9 included); the holder writes who it is into the
lock file so the one standing by can say so.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import sys
import time
from pathlib import Path

from .db import HistoryError


class RecorderBusy(HistoryError):
    """Another process records this file (the message names it); retry later to take over."""


def this_process() -> str:
    """What this process is, for the message another one shows: `taudash serve`, `taudash demo`,
    `taudash` (the dashboard) — the program and its command word, never its other arguments."""
    argv = sys.argv or [""]
    program = "taudash" if "taudash" in argv[0] else (os.path.basename(argv[0]) or "python")
    command = argv[1] if len(argv) > 1 and re.fullmatch(r"[a-z][a-z-]{0,31}", argv[1]) else ""
    return f"{program} {command}".strip()


class WriterLock:
    """An exclusive, non-blocking lock on `<database>.lock`, held while a Recorder has the file open."""

    def __init__(self, database: Path | str) -> None:
        self.path = Path(f"{database}.lock")
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, owner: str | None = None) -> None:
        """Take the lock or raise RecorderBusy naming its holder."""
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise RecorderBusy(self.busy_message()) from None
        record = {"pid": os.getpid(), "program": owner or this_process(), "since": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode() + b"\n", 0)
        self._fd = fd

    def holder(self) -> dict[str, object] | None:
        """Who holds the lock, as it wrote itself down (None when unreadable or not yet written)."""
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8") or "null")
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    def busy_message(self) -> str:
        who = self.holder()
        if who is None:
            name = "another taudash process"
        else:
            since = who.get("since")
            when = time.strftime(" since %Y-%m-%d %H:%M:%S", time.localtime(since)) \
                if isinstance(since, int | float) else ""
            name = f"{who.get('program') or 'taudash'} (pid {who.get('pid')}{when})"
        database = self.path.with_suffix("")
        return (f"history: {database} is recorded by {name}; this process reads it and records nothing "
                "while that one runs (it takes over when that one stops)")

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)  # nobody holds it: a reader finds no stale name
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
