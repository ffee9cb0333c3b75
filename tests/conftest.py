"""Shared fixtures for every test level (tests/unit, tests/ui, tests/sim, tests/e2e).

Every test is hermetic (tests/tools/hermetic.py, loaded here before any project module is imported): its own
empty HOME and XDG folders, an empty KUBECONFIG, no TAUDASH_* variable from the caller, and a guard that fails
a test touching the real home. Tests that want a variable set it with monkeypatch.

Objects are built with tests/factories.py; paths come from tests/tools/paths.py (never from a test file's own
depth). The fixtures here wrap both for the common cases:

- `repo_root`, `fixtures_dir`, `demo_snapshot`: paths.
- `store_of(*objs)`: a Store of hand-built objects; `demo_store`: a fresh Store of the shipped demo snapshot.
- `state_dir`: TAUDASH_STATE_DIR pointed at an empty tmp directory (journals, audit log, history).
- `cli_env`: a clean environment for CLI tests (no read-only/config/kubeconfig variables from the caller; XDG
  config and state under tmp; cwd tmp).
- `sim_server`: an in-process simulator (SimServer, frozen: nothing simulated) on the test's loop.
- `demo_sim`: one frozen simulator of the demo snapshot per module, on its own loop thread, for
  synchronous tests (the CLI's `main()` runs its own event loop).
- `no_terminal_ui`: replaces the terminal UI with a recorder of the apps the CLI would have run.
- every snapshot test (one using `snap_compare`) holds a text cursor steady: the blink is a 0.5 s timer, and on a
  busy machine a snapshot taken a moment later would show the other phase.
"""

import asyncio
import sys
import threading
from pathlib import Path

import pytest

# Tests import small helpers (tests/factories.py, tests/tools/) by module name.
sys.path.insert(0, str(Path(__file__).parent))

from tools import hermetic  # noqa: E402

# Before anything reads the environment or the home: the project's modules, the test modules, the fixtures.
hermetic.isolate_process()

import factories  # noqa: E402
from tools import paths  # noqa: E402

pytest_plugins = ("pytester", "tools.hermetic", "tools.fd_guard")


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config) -> int | None:
    """`-n auto` (pyproject.toml): one worker more than the cores this process may use (docs/decisions.md 160).

    A fifth of two cores' time in the suite was a worker waiting (a real Prometheus evaluating a minute of
    idleness, subprocesses starting, simulators answering) while its core sat idle; a spare worker runs a test in
    that gap. PYTEST_XDIST_AUTO_NUM_WORKERS still wins, as xdist documents.
    """
    import os

    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return len(os.sched_getaffinity(0)) + 1


@pytest.fixture(autouse=True)
def steady_cursor(request, monkeypatch) -> None:
    if "snap_compare" not in request.fixturenames:
        return
    from textual.widgets import Input

    def keep_visible(self) -> None:
        self._cursor_visible = True

    monkeypatch.setattr(Input, "_toggle_cursor", keep_visible)


@pytest.fixture
def repo_root() -> Path:
    return paths.REPO


@pytest.fixture
def fixtures_dir() -> Path:
    return paths.FIXTURES


@pytest.fixture
def demo_snapshot() -> Path:
    return paths.DEMO


@pytest.fixture
def store_of():
    """`store_of(*objs)`: a Store of raw Kubernetes objects (dicts), every kind readable."""
    return factories.store_of


@pytest.fixture
def demo_store():
    """A fresh Store of the shipped demo snapshot (each test may change its own)."""
    from taudash.engine.sources.snapshot import load_snapshot

    return load_snapshot(paths.DEMO).store


@pytest.fixture
def state_dir(tmp_path, monkeypatch) -> Path:
    """TAUDASH_STATE_DIR → tmp_path/state (created on first write by the code under test)."""
    d = tmp_path / "state"
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(d))
    return d


@pytest.fixture
def cli_env(tmp_path, monkeypatch) -> Path:
    """A clean environment for the CLI: nothing inherited that changes its behaviour; returns tmp_path (the cwd)."""
    for var in ("TAUDASH_READ_ONLY", "TAUDASH_CONFIG", "KUBECONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
async def sim_server():
    """A frozen simulator of its default cluster, started on the test's event loop and stopped after it."""
    from taudash.sim.server import SimServer

    async with SimServer() as sim:
        yield sim


@pytest.fixture(scope="module")
def demo_sim():
    """One frozen simulator of the demo snapshot for the module, served from its own event loop thread."""
    from taudash.sim.server import SimServer

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = SimServer(paths.DEMO)
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(60)
    yield server
    asyncio.run_coroutine_threadsafe(server.stop(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


@pytest.fixture
def no_terminal_ui(monkeypatch) -> list:
    """Replace the terminal UI with a recorder of the app it would have run (the list of apps)."""
    import taudash.app

    apps: list = []

    async def run_async(self, *a, **kw):
        apps.append(self)

    monkeypatch.setattr(taudash.app.TaudashApp, "run", lambda self, *a, **kw: apps.append(self))
    monkeypatch.setattr(taudash.app.TaudashApp, "run_async", run_async)
    return apps
