"""The programs' GC policy (taudash/runtime.py): a freeze keeps what is alive out of the collector's reach, and
what dies of it later in a reference cycle is collected at the next thaw — at most every THAW_SECONDS — instead
of staying frozen for the process's life."""

from __future__ import annotations

import gc
import weakref

import pytest

from taudash.runtime import LongLivedHeap


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


@pytest.fixture
def thawed():
    gc.collect()
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_cyclic_garbage_frozen_while_alive_is_collected_at_the_next_thaw(thawed):
    now = [1000.0]
    heap = LongLivedHeap(clock=lambda: now[0], thaw_seconds=60.0)
    heap.settled()  # the first freeze: nothing to thaw yet
    node = Node()
    alive = weakref.ref(node)
    heap.settled()  # frozen while alive (a connection, a widget, the view being replaced)
    del node
    gc.collect()
    assert alive() is not None  # frozen: out of the collector's reach
    now[0] += 30
    heap.settled()  # within the minute: no thaw, the garbage waits
    gc.collect()
    assert alive() is not None and heap.thaws == 0
    now[0] += 31
    heap.settled()  # a minute since the last thaw: thawed and collected, then frozen again
    assert alive() is None and heap.thaws == 1 and gc.get_freeze_count() > 0


def test_a_bulk_build_freezes_what_it_built_and_thaws_the_same_way(thawed):
    now = [0.0]
    heap = LongLivedHeap(clock=lambda: now[0], thaw_seconds=60.0)
    with heap.bulk():
        assert not gc.isenabled()
        built = [Node() for _ in range(10)]
    assert gc.isenabled() and gc.get_freeze_count() >= 10
    gone = weakref.ref(built[0])
    del built
    now[0] += 61
    with heap.bulk():
        pass
    assert gone() is None and heap.thaws == 1


def test_a_freeze_gives_freed_pages_back_at_most_every_trim_seconds(thawed, monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr("taudash.runtime._trim", lambda pad: calls.append(pad) or 1)
    now = [0.0]
    heap = LongLivedHeap(clock=lambda: now[0], thaw_seconds=60.0, trim_seconds=10.0)
    heap.settled()  # the initial sync: its temporary buffers are freed by now
    now[0] += 4
    heap.settled()  # within ten seconds: no second trim
    assert calls == [0] and heap.trims == 1
    now[0] += 7
    with heap.bulk():  # a re-list eleven seconds later: the old objects just freed go back
        pass
    assert calls == [0, 0] and heap.trims == 2


def test_without_malloc_trim_the_policy_still_freezes(thawed, monkeypatch):
    monkeypatch.setattr("taudash.runtime._trim", None)
    heap = LongLivedHeap(clock=lambda: 0.0)
    heap.settled()
    assert heap.trims == 0 and gc.get_freeze_count() > 0
