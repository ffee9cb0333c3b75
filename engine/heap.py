"""The program's memory policy, as the engine sees it: told when long-lived bulk builds happen.

The cyclic garbage collector is process state, so the engine never changes it: a program that holds
a fleet-scale model for hours (the dashboard, `serve`, the bench) installs a policy at start-up
(taudash.runtime), and the engine calls it around what it builds in bulk. Without one, nothing is
tuned: a library user or a one-shot command keeps CPython's defaults.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Protocol


class HeapPolicy(Protocol):
    def bulk(self) -> AbstractContextManager[None]:
        """Around building many long-lived, acyclic objects at once (a source's list of a kind)."""
        ...

    def settled(self) -> None:
        """A large long-lived structure was just built (the session's full view)."""
        ...


class DefaultHeap:
    """CPython's defaults: nothing paused, nothing frozen."""

    def bulk(self) -> AbstractContextManager[None]:
        return nullcontext()

    def settled(self) -> None:
        return None


_policy: HeapPolicy = DefaultHeap()


def install(policy: HeapPolicy | None) -> HeapPolicy:
    """Make `policy` the process's (None: back to the defaults); returns the one it replaces."""
    global _policy
    previous, _policy = _policy, policy if policy is not None else DefaultHeap()
    return previous


def current() -> HeapPolicy:
    return _policy
