"""Where taudash keeps its state (XDG base directories), created private (0700)."""

from __future__ import annotations

import os
from pathlib import Path


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
