"""Two demos on one machine: each has a kubeconfig of its own, and neither removes the other's."""

from __future__ import annotations

import os
import stat

from taudash.commands.dashboard import _remove_if_ours, demo_kubeconfig


def test_a_second_demo_beside_the_first_writes_its_own_kubeconfig():
    first, lock = demo_kubeconfig()
    try:
        assert first.name == "kubeconfig" and lock is not None
        assert stat.S_IMODE(first.parent.stat().st_mode) == 0o700
        second, none = demo_kubeconfig()  # the first still holds the shared path
        assert none is None and second.name == f"kubeconfig-{os.getpid()}" and second.parent == first.parent
        first.write_text("token-of-the-first")
        second.write_text("token-of-the-second")
        _remove_if_ours(first, "token-of-the-second")  # the second ends: the first's file stays
        assert first.exists()
        _remove_if_ours(second, "token-of-the-second")
        assert not second.exists()
    finally:
        if lock is not None:
            os.close(lock)
    again, lock = demo_kubeconfig()  # the first ended: the next demo takes the shared path again
    try:
        assert again == first and lock is not None
    finally:
        os.close(lock)
