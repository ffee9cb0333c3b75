"""`taudash sim serve` (issue 6)."""

from __future__ import annotations


def register(sub, add_source_args) -> None:
    """TODO(issue 6): add `sim serve`."""
    return None
