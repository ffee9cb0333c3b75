"""A taudash state directory at a fixed path, for snapshots of screens that show it ("journal dir …"): the same
text on every machine, whatever the test's own home is.

A fixed path is shared by every process on the machine (xdist workers, another checkout's run), so the test holds
an exclusive lock on `<path>.lock` from the copy to the removal: tests using one path run one at a time."""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def fixed_state_dir(monkeypatch, path: Path, source: Path | None = None) -> Iterator[Path]:
    """TAUDASH_STATE_DIR → `path`, a copy of `source` (empty without one), removed afterwards."""
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(path, ignore_errors=True)
        if source is not None:
            shutil.copytree(source, path)
        else:
            path.mkdir(mode=0o700)
        monkeypatch.setenv("TAUDASH_STATE_DIR", str(path))
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
