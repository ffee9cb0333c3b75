"""Where taudash keeps its state (XDG base directories), created private (0700)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO


def state_dir() -> Path:
    base = os.environ.get("TAUDASH_STATE_DIR")
    if base:
        path = Path(base)
    else:
        xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        path = Path(xdg) / "taudash"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def append_private(path: Path, line: str) -> None:
    """Append one line and fsync it; the file is created 0600 (it may hold cluster data)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("utf-8") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_file(path: str | Path, mode: int = 0o600) -> Iterator[TextIO]:
    """A text file written in full or not at all: a temp file in the same directory (0600 from the first
    byte), fsync, chmod, rename, fsync the directory. Readers never see a partial file, and a crash leaves
    either the old file or the new one."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(dfd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(dfd)


def write_atomic(path: str | Path, text: str, mode: int = 0o600) -> None:
    """`text` as the whole new content of `path` (see atomic_file)."""
    with atomic_file(path, mode) as fh:
        fh.write(text)
