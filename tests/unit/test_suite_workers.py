"""The suite's own worker count (decision 160): `-n auto` starts one worker more than the usable cores, and the
variable xdist documents still sets it."""

import os


def auto_workers(config) -> int:
    """What xdist asks for `-n auto`: the first answer of the hook, as its plugin takes it."""
    return config.hook.pytest_xdist_auto_num_workers(config=config)


def test_auto_starts_one_worker_more_than_the_usable_cores(pytestconfig, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert auto_workers(pytestconfig) == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})  # a one-core container: two workers
    assert auto_workers(pytestconfig) == 2


def test_the_documented_variable_still_sets_the_count(pytestconfig, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "1")
    assert auto_workers(pytestconfig) == 1
