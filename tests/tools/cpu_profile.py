"""CPU seconds per test, the worker's own and its children's (`pytest -p tools.cpu_profile`).

Wall time (`--durations`) hides where the suite's CPU goes: a test that waits a minute costs little, a
test that starts five CLI processes costs much though it may finish quickly. Each worker appends one
line per test (`cpu<TAB>wall<TAB>nodeid`) to $TAUDASH_CPU_PROFILE (default /tmp/taudash-cpu-profile.tsv).
"""

from __future__ import annotations

import os
import resource
import time

import pytest

# Read once on import: `-p tools.cpu_profile` loads before tests/tools/hermetic.py drops every TAUDASH_* variable.
OUT = os.environ.get("TAUDASH_CPU_PROFILE", "/tmp/taudash-cpu-profile.tsv")


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, wall = _cpu(), time.monotonic()
    yield
    line = f"{_cpu() - cpu:.3f}\t{time.monotonic() - wall:.3f}\t{item.nodeid}\n"
    with open(OUT, "a") as out:
        out.write(line)
