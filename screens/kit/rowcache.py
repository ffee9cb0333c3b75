"""Rows rebuilt only when what they show changed.

An incremental view keeps the very same row object (a queue, a workspace) while nothing about it
moved, so a screen can key its table rows by that object's identity: a tick over 300 unchanged
queues then builds nothing, and the table skips redrawing rows it already drew (same Row object).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from ..widgets.keyed_table import Row


class RowCache:
    def __init__(self) -> None:
        self._rows: dict[str, tuple[Any, Hashable, Row]] = {}
        self._next: dict[str, tuple[Any, Hashable, Row]] = {}

    def row(self, key: str, source: Any, build: Callable[[], Row], extra: Hashable = None) -> Row:
        """The row for `key`: last tick's when `source` is the same object and `extra` is equal."""
        hit = self._rows.get(key)
        if hit is None or hit[0] is not source or hit[1] != extra:
            hit = (source, extra, build())
        self._next[key] = hit
        return hit[2]

    def done(self) -> None:
        """End of a tick: forget rows that were not asked for (their objects left the view)."""
        self._rows, self._next = self._next, {}
