"""Every test closes what it opens: a pytest plugin that fails a test leaving file descriptors open.

tests/conftest.py loads it (`-p tools.fd_guard` loads it elsewhere, with tests/ on the path). The autouse fixture
`fd_guard` counts /proc/self/fd (the numbers, one listing) before the test's function-scoped fixtures are set up
and again after they are torn down (module- and session-scoped fixtures are set up before and torn down after:
their descriptors are not the test's). When more are open after, it runs the collector (an object dropped without
`close()` is closed by its finalizer: not a leak that outlives the test) and counts again, reading targets now;
what is still open fails the test at teardown, naming each descriptor's target as `readlink /proc/self/fd/N` gives it — a path, `pipe:[…]`, `anon_inode:[…]`, or
`socket:[inode]` resolved through /proc/net to its addresses and TCP state.

The slack: a process creates a few things lazily, once, and keeps them for its life — an event loop kept in a
module (its epoll descriptor and the socket pair that wakes it), a thread pool's wake-up pipe. Up to
`PROCESS_SLACK` descriptors of those kinds (`PROCESS_WIDE`: epoll, eventfd, pipes, unnamed Unix sockets) are
accepted once per process, the first time they are left open, and are part of every later test's baseline; a
test that creates them again fails like any other. TCP sockets and files are never accepted: a test that leaves
one open fails. tests/unit/test_fd_guard.py is the negative control.

A test that runs the CLI in-process installs the programs' garbage-collector policy (taudash/runtime.py: higher
thresholds, and `gc.freeze()` after bulk builds), and it would stay for every later test of the process: a
later freeze then pins whatever garbage exists at that moment — an abandoned event loop's transports, with
their sockets — for the process's life. The fixture puts the policy and the thresholds back as they were before
the guard counts, and remakes the suite's frozen base when the test froze or thawed anything (FrozenBase: the
suite runs the collector with the programs' thresholds and its long-lived objects frozen after collection).

Linux only (/proc); elsewhere the guard does nothing but that.
"""

from __future__ import annotations

import gc
import os
import socket
import struct
import time
from collections.abc import Callable

import pytest

from taudash.engine import heap
from taudash.runtime import GC_THRESHOLDS

PROC_FD = "/proc/self/fd"
PROCESS_SLACK = 3
SETTLE_SECONDS = 5.0  # how long a test's descriptors may take to close after it (see leaks)
PROCESS_WIDE = ("anon_inode:[eventpoll]", "anon_inode:[eventfd]", "pipe:[", "unix-unnamed")
TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
              "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN",
              "0B": "CLOSING"}

_accepted: dict[int, str] = {}  # descriptors of this process accepted under the slack: fd -> target


def open_descriptors() -> dict[int, str]:
    """fd -> readlink target of every descriptor open now (the listing's own descriptor left out)."""
    out = {}
    for name in os.listdir(PROC_FD):
        try:
            out[int(name)] = os.readlink(f"{PROC_FD}/{name}")
        except OSError:  # the listing's own descriptor, closed by now
            continue
    return out


def _address(hexaddr: str) -> str:
    ip, port = hexaddr.split(":")
    if len(ip) == 8:
        host = socket.inet_ntop(socket.AF_INET, struct.pack("<I", int(ip, 16)))
    else:
        host = socket.inet_ntop(socket.AF_INET6, b"".join(struct.pack("<I", int(ip[i:i + 8], 16))
                                                          for i in range(0, 32, 8)))
    return f"{host}:{int(port, 16)}"


def socket_table() -> dict[str, str]:
    """socket inode -> what it is: `tcp 127.0.0.1:5000 -> 127.0.0.1:40000 CLOSE_WAIT`, `unix /path`,
    `unix-unnamed` (a socket pair), from this process's network namespace."""
    table: dict[str, str] = {}
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        try:
            with open(f"/proc/self/net/{proto}") as f:
                next(f)
                for line in f:
                    p = line.split()
                    state = TCP_STATES.get(p[3], p[3]) if proto.startswith("tcp") else ""
                    table[p[9]] = f"{proto} {_address(p[1])} -> {_address(p[2])} {state}".rstrip()
        except (OSError, StopIteration, ValueError):
            continue
    try:
        with open("/proc/self/net/unix") as f:
            next(f)
            for line in f:
                p = line.split()
                table[p[6]] = f"unix {p[7]}" if len(p) > 7 else "unix-unnamed"
    except (OSError, StopIteration):
        pass
    return table


def describe(target: str, sockets: dict[str, str]) -> str:
    if target.startswith("socket:[") and target.endswith("]"):
        return f"{target} {sockets.get(target[8:-1], '(not in /proc/net)')}"
    return target


def _process_wide(target: str, sockets: dict[str, str]) -> bool:
    return describe(target, sockets).split(" ", 1)[-1].startswith(PROCESS_WIDE)


def descriptor_numbers() -> frozenset[int]:
    """The numbers of the descriptors open now, without a readlink each (the per-test count). The listing's
    own descriptor is in the listing and closed after it; the next descriptor opened takes the lowest free
    number, so a probe opened now names it (and the test's first leak would reuse it: it must not count)."""
    names = os.listdir(PROC_FD)
    probe = os.open(os.devnull, os.O_RDONLY)
    try:
        return frozenset(int(name) for name in names) - {probe}
    finally:
        os.close(probe)


def left_open(before: frozenset[int], after: dict[int, str]) -> dict[int, str]:
    """Descriptors open after whose numbers were not open before."""
    return {fd: t for fd, t in after.items() if fd not in before}


def leaks(before: frozenset[int]) -> list[str]:
    """What the test left open beyond the slack, described; [] when it closed everything. The cheap check
    first: a test that leaves no more descriptors open than it found costs two listings of /proc/self/fd."""
    if len(descriptor_numbers()) <= len(before):
        return []
    # Finalizers close what was dropped unclosed; a simulator on a fixture's own thread in this process closes
    # its side of the test's connections when it reads their end, which on a busy machine can come a moment
    # after the test: count again until `SETTLE_SECONDS` have passed before calling anything a leak. What the
    # slack accepts (created once for the process's life) is accepted at once: it will not close.
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        gc.collect()
        after = open_descriptors()
        new = left_open(before, after)
        if len(after) <= len(before) or not new:
            return []
        sockets = socket_table()
        kept = {fd: t for fd, t in new.items() if _accepted.get(fd) != t}
        wide = [fd for fd, t in sorted(kept.items()) if _process_wide(t, sockets)]
        if len(wide) == len(kept) and len(_accepted) + len(wide) <= PROCESS_SLACK:
            _accepted.update({fd: kept[fd] for fd in wide})
            return []
        if time.monotonic() >= deadline:
            return [f"fd {fd} -> {describe(t, sockets)}" for fd, t in sorted(kept.items())]
        time.sleep(0.1)


class FrozenBase:
    """The collector as the programs run it (taudash/runtime.py GC_THRESHOLDS: young collections every 20k
    allocations, full ones rarer), and what the process holds for the whole run — its modules, the collected
    tests, the fixtures' shared objects — frozen once the tests are collected, so that the collector does not
    walk it again in every full collection (a fifth to a quarter of a worker's CPU was full collections of
    that base).

    `gc.freeze` and `gc.unfreeze` are counted (the programs' policy and some tests call them): after a test
    that called either, the base is made again — thawed, collected (the test's garbage goes, so nothing dead
    is pinned), frozen. A test that never touched them costs nothing here."""

    def __init__(self) -> None:
        self.moves = 0
        self._freeze, self._unfreeze = gc.freeze, gc.unfreeze

    def install(self) -> None:
        gc.set_threshold(*GC_THRESHOLDS)
        gc.freeze, gc.unfreeze = self._counted(self._freeze), self._counted(self._unfreeze)
        self.rebuild()

    def _counted(self, call: Callable[[], None]) -> Callable[[], None]:
        def counted() -> None:
            self.moves += 1
            call()
        return counted

    def rebuild(self) -> None:
        self._unfreeze()
        gc.collect()
        self._freeze()


FROZEN = FrozenBase()


def pytest_collection_finish(session) -> None:
    FROZEN.install()


def restore_gc(policy: heap.HeapPolicy, thresholds: tuple[int, int, int], moves: int) -> None:
    """The collector as it was before the test (see the module's docstring and FrozenBase)."""
    if heap.current() is not policy:
        heap.install(policy)
    if gc.get_threshold() != thresholds:
        gc.set_threshold(*thresholds)
    if FROZEN.moves != moves:
        FROZEN.rebuild()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.stash[_CALL_FAILED] = report.failed
    return report


_CALL_FAILED = pytest.StashKey[bool]()


@pytest.fixture(autouse=True)
def fd_guard(request):
    """Fails the test (at teardown) when it leaves descriptors open; see the module's docstring. A test
    that failed is not checked: it stopped before its own cleanup, and its failure is the news."""
    policy, thresholds, moves = heap.current(), gc.get_threshold(), FROZEN.moves
    if not os.path.isdir(PROC_FD):
        yield
        restore_gc(policy, thresholds, moves)
        return
    before = descriptor_numbers()
    yield
    restore_gc(policy, thresholds, moves)
    if request.node.stash.get(_CALL_FAILED, False):
        return
    found = leaks(before)
    if found:
        pytest.fail(f"the test left {len(found)} file descriptor(s) open (tests/tools/fd_guard.py):\n  "
                    + "\n  ".join(found[:40]) + ("\n  …" if len(found) > 40 else ""), pytrace=False)
