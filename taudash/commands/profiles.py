"""`taudash profiles select|export|verify` (issue 5)."""

from __future__ import annotations


def register(sub, add_source_args) -> None:
    """TODO(issue 5): add the profiles sub-commands."""
    return None
