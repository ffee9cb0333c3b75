"""The suite fails a test that leaves file descriptors open (tests/tools/fd_guard.py). The negative controls run
an inner pytest in a subprocess (pytester), so this suite stays green while the inner one fails."""

import sys

import pytest
from tools import fd_guard
from tools.paths import TESTS

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guard reads /proc (Linux)")

INNER = '''
import asyncio, gc, os, socket
import pytest

KEPT = []


@pytest.fixture(scope="module")
def module_server():
    server = socket.create_server(("127.0.0.1", 0))
    yield server
    server.close()


def test_leaks_a_tcp_socket():
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    KEPT.extend([server, client])


def test_leaks_a_file(tmp_path):
    KEPT.append(open(tmp_path / "left-open.txt", "w"))


def test_closes_what_it_opens(tmp_path):
    with socket.create_server(("127.0.0.1", 0)), open(tmp_path / "closed.txt", "w"):
        pass


def test_drops_a_socket_in_a_cycle_without_closing_it():
    holder = {"sock": socket.socket()}
    holder["self"] = holder  # only the collector frees it; its finalizer closes the descriptor


def test_keeps_one_event_loop_for_the_process():
    KEPT.append(asyncio.new_event_loop())  # epoll and its wake-up socket pair: created once, kept


def test_keeps_a_second_event_loop():
    KEPT.append(asyncio.new_event_loop())  # the slack is spent: a second one is a leak


def test_uses_a_module_fixture_first(module_server):
    assert module_server.fileno() >= 0


def test_uses_a_module_fixture_last(module_server):
    assert module_server.fileno() >= 0
'''


def test_a_test_leaving_descriptors_open_fails_naming_them(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "tools.fd_guard", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           "-p", "no:randomly", "-rA", timeout=240)
    out = result.stdout.str()
    result.assert_outcomes(passed=8, errors=3)
    failed = {name for name in ("leaks_a_tcp_socket", "leaks_a_file", "keeps_a_second_event_loop", "closes_what",
                                "drops_a_socket", "keeps_one_event_loop", "uses_a_module_fixture")
              if f"ERROR at teardown of test_{name}" in out}
    assert failed == {"leaks_a_tcp_socket", "leaks_a_file", "keeps_a_second_event_loop"}, out
    # each descriptor is named: the TCP pair with its addresses and state, the file by its path, the loop's parts
    assert "the test left 2 file descriptor(s) open" in out
    assert out.count("tcp 127.0.0.1:") >= 2 and "LISTEN" in out and "ESTABLISHED" in out
    assert "left-open.txt" in out
    assert "anon_inode:[eventpoll]" in out and "unix-unnamed" in out


def test_sockets_are_named_by_address_and_state():
    import socket

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        target = fd_guard.open_descriptors()[server.fileno()]
        assert (fd_guard.describe(target, fd_guard.socket_table())
                == f"{target} tcp 127.0.0.1:{port} -> 0.0.0.0:0 LISTEN")


class Cycle:
    def __init__(self) -> None:
        self.me = self  # only the collector frees it


def test_after_a_test_that_froze_the_base_is_remade_and_pins_nothing_dead():
    import gc
    import weakref

    from taudash.engine import heap
    from taudash.runtime import GC_THRESHOLDS

    policy, thresholds, moves = heap.current(), gc.get_threshold(), fd_guard.FROZEN.moves
    assert thresholds == GC_THRESHOLDS  # the suite runs the collector as the programs do
    node = Cycle()
    dead = weakref.ref(node)
    gc.freeze()  # as the programs' policy does after a bulk build (counted)
    del node
    gc.collect()
    assert dead() is not None  # frozen while alive: the collector no longer sees it
    fd_guard.restore_gc(policy, thresholds, moves)
    assert dead() is None and fd_guard.FROZEN.moves == moves + 1


def test_a_test_that_froze_nothing_leaves_the_base_alone():
    import gc
    import weakref

    from taudash.engine import heap

    policy, thresholds, moves = heap.current(), gc.get_threshold(), fd_guard.FROZEN.moves
    node = Cycle()
    dead = weakref.ref(node)
    fd_guard.FROZEN._freeze()  # uncounted: the base as it stands after collection holds it
    del node
    try:
        fd_guard.restore_gc(policy, thresholds, moves)
        gc.collect()
        assert dead() is not None and fd_guard.FROZEN.moves == moves  # no full collection, no remade base
    finally:
        fd_guard.FROZEN.rebuild()
    assert dead() is None
