"""Data that ships with taudash: the demo cluster (`taudash demo`, the simulator's default seed).

`demo.yaml` here links to the repository's `snapshots/demo.yaml`; a wheel carries its content, so an
installed taudash runs the demo without a source tree.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def demo_snapshot() -> Path:
    return Path(str(files(__name__) / "demo.yaml"))
