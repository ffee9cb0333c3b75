"""Tests never see the user's taudash: their own home, XDG folders and kubeconfig, and a guard on the real home.

A pytest plugin (tests/conftest.py loads it; `-p tools.hermetic` loads it elsewhere, with tests/ on the path):

- `isolate_process()`, once per pytest process (the xdist controller and every worker) before any test module is
  imported: HOME and the XDG base folders point into a throwaway folder, KUBECONFIG is empty, and no TAUDASH_*
  variable is inherited (the suite's own `SUITE_ENV` is set instead; `PASSED_ON` says where the test data is).
  Module- and session-scoped fixtures, and every subprocess they start, run in that environment.
- the autouse fixture `hermetic_home`: each test gets its own empty home (HOME, XDG_STATE_HOME, XDG_CONFIG_HOME,
  XDG_CACHE_HOME, XDG_DATA_HOME under it), the same empty KUBECONFIG and no TAUDASH_* variable; tests that want
  one set it with monkeypatch. Subprocesses inherit `os.environ` as it is when they start, so they get it too.
- the guard: an audit hook (`sys.addaudithook`) that refuses (PermissionError) and records every open, listing,
  mkdir, rename, removal, chmod, sqlite connect and chdir of a path under a real home, and every subprocess
  started with a cwd there or with HOME, XDG_*, KUBECONFIG or TAUDASH_* pointing there. The test it happened in
  fails at teardown, naming the paths (a touch outside any test, e.g. while collecting, fails the next test to
  finish, or the session after the last one). Reading the Python installation (pyenv keeps it under the home on
  this machine kind) and anything in the repository or the temp folder is allowed.

"The real home" is every home the run could have found: HOME as the first pytest process saw it and the
password database's entry (what `~` means when HOME is unset). xdist workers inherit the controller's already
isolated environment, so the controller hands the list on in `REAL_HOMES_VAR`.

PYTEST_DONT_REWRITE: conftest imports this module before pytest loads it as a plugin (it has no asserts).
"""

from __future__ import annotations

import atexit
import itertools
import os
import pwd
import shutil
import site
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

REAL_HOMES_VAR = "HERMETIC_TESTS_REAL_HOMES"
# The suite's own settings: a simulated controller's write the Kueue CRDs refuse raises in tests instead of
# being logged and dropped (taudash/sim/controllers/base.py), so a controller bug fails loudly.
SUITE_ENV = {"TAUDASH_SIM_STRICT": "1"}
# Where the tests' input data is (the Kueue CRDs and examples, sim/schema), not the user's taudash: passed on.
PASSED_ON = frozenset({"TAUDASH_KUEUE_CRDS"})
HOME_VARS = ("HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")
REPO = Path(__file__).resolve().parents[2]

# Audit events naming paths, and which of their arguments are paths (CPython's audit events table).
_PATH_ARGS: dict[str, tuple[int, ...]] = {
    "open": (0,), "os.listdir": (0,), "os.scandir": (0,), "os.mkdir": (0,), "os.rmdir": (0,),
    "os.remove": (0,), "os.rename": (0, 1), "os.chmod": (0,), "os.chown": (0,), "os.utime": (0,),
    "os.truncate": (0,), "os.symlink": (0, 1), "os.link": (0, 1), "os.chdir": (0,), "os.chflags": (0,),
    "os.setxattr": (0,), "os.removexattr": (0,), "glob.glob": (0,), "glob.glob/2": (0,),
    "shutil.rmtree": (0,), "shutil.copyfile": (0, 1), "shutil.copytree": (0, 1), "shutil.move": (0, 1),
    "shutil.make_archive": (0,), "shutil.unpack_archive": (0, 1), "sqlite3.connect": (0,),
}
# (executable, args, cwd, env), (path, args, env), (path, argv, env), (mode, path, args, env)
_SPAWN_ENV_ARG = {"subprocess.Popen": 3, "os.exec": 2, "os.posix_spawn": 2, "os.spawn": 3}
_SPAWN = frozenset(_SPAWN_ENV_ARG)
_EVENTS = frozenset(_PATH_ARGS) | _SPAWN
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _norm(path: str) -> str:
    return os.path.normpath(os.path.join(os.getcwd(), path))


def _variants(path: str) -> set[str]:
    return {_norm(path), os.path.realpath(path)}


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _strictly_inside(path: str, root: str) -> bool:
    return path != root and _inside(path, root)


class Guard:
    """The audit hook: refuses and records touches of the real homes (see the module's docstring)."""

    def __init__(self, homes: list[str]) -> None:
        self.homes = sorted({v for h in homes if h and h != os.sep for v in _variants(h)})
        self.touches: list[str] = []
        self.reported = 0
        self.current = "outside any test"
        self.read_only: list[str] = []
        self.writable: list[str] = []

    def install(self) -> None:
        """Allow-lists are fixed when the hook goes in: the Python installation (read; its __pycache__ written)
        and the repository and the temp folder (anything), when they sit inside a home."""
        code = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, site.getusersitepackages(),
                *site.getsitepackages(), *sysconfig.get_paths().values(),
                *(p for p in sys.path if p and os.path.isdir(p))}
        self.read_only = self._within_homes(code)
        self.writable = self._within_homes({str(REPO), tempfile.gettempdir()})
        sys.addaudithook(self._hook)

    def _within_homes(self, paths: set[str]) -> list[str]:
        return sorted({v for p in paths for v in _variants(p) if any(_strictly_inside(v, h) for h in self.homes)})

    def unreported(self) -> list[str]:
        """The touches since the last call; what follows is outside any test until the next one starts."""
        new, self.reported = self.touches[self.reported:], len(self.touches)
        self.current = "outside any test"
        return new

    def _hook(self, event: str, args: tuple) -> None:
        if event not in _EVENTS or not self.homes:
            return
        if event in _SPAWN:
            self._check_spawn(event, args)
            return
        writes = event != "open" or _opens_for_writing(args)
        if event in ("os.listdir", "os.scandir", "glob.glob", "glob.glob/2", "os.chdir", "sqlite3.connect"):
            writes = event == "sqlite3.connect"
        for i in _PATH_ARGS[event]:
            if i < len(args):
                self._check_path(event, args[i], writes)

    def _check_path(self, event: str, arg: object, writes: bool) -> None:
        if isinstance(arg, int) or arg is None:
            return  # a descriptor: its path was checked when it was opened
        try:
            raw = os.fsdecode(os.fspath(arg))  # type: ignore[arg-type]
        except TypeError:
            return
        if raw in ("", ":memory:") or raw.startswith("file:"):
            return
        path = _norm(raw)
        if not any(_inside(path, h) for h in self.homes):
            return
        if any(_inside(path, w) for w in self.writable):
            return
        if any(_inside(path, r) for r in self.read_only) and (not writes or "__pycache__" in path):
            return
        self._refuse(f"{event} {path}")

    def _check_spawn(self, event: str, args: tuple) -> None:
        cwd = args[2] if event == "subprocess.Popen" and len(args) > 2 else None
        at = _SPAWN_ENV_ARG[event]
        env = args[at] if len(args) > at else None
        if cwd is not None:
            self._check_path(f"{event} cwd", cwd, writes=True)
        if isinstance(env, dict):
            for key, value in env.items():
                name = os.fsdecode(key)
                if (name in HOME_VARS or name.startswith("XDG_") or name in ("KUBECONFIG",)
                        or name.startswith("TAUDASH_")):
                    for part in os.fsdecode(value).split(os.pathsep):
                        if part:
                            self._check_path(f"{event} env {name}", part, writes=True)

    def _refuse(self, what: str) -> None:
        self.touches.append(f"{self.current}: {what}")
        raise PermissionError(f"tests must not touch the real home ({what}); see tests/tools/hermetic.py")


def _opens_for_writing(args: tuple) -> bool:
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 else 0
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return bool(isinstance(flags, int) and flags & _WRITE_FLAGS)


def real_homes() -> list[str]:
    """Every home this run could have found (see the module's docstring); stable across xdist workers."""
    if os.environ.get(REAL_HOMES_VAR):
        return os.environ[REAL_HOMES_VAR].split(os.pathsep)
    homes = [os.environ.get("HOME", ""), pwd.getpwuid(os.getuid()).pw_dir]
    return [h for h in dict.fromkeys(homes) if h]


def hermetic_env(home: Path, base: dict[str, str]) -> dict[str, str]:
    """`base` with nothing of the user's taudash: HOME and XDG under `home`, KUBECONFIG empty, no TAUDASH_*, and
    not in a Pod (no KUBERNETES_SERVICE_*: a suite run in CI's Pod would otherwise connect in-cluster)."""
    env = {k: v for k, v in base.items() if (not k.startswith("TAUDASH_") or k in PASSED_ON)
           and not k.startswith("KUBERNETES_SERVICE_")}
    env.update(SUITE_ENV)
    env["HOME"] = str(home)
    env["XDG_STATE_HOME"] = str(home / ".local" / "state")
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    env["KUBECONFIG"] = ""
    return env


GUARD: Guard | None = None


def isolate_process() -> Guard:
    """Isolate this process's environment and install the guard (idempotent)."""
    global GUARD
    if GUARD is not None:
        return GUARD
    homes = real_homes()
    base = Path(tempfile.mkdtemp(prefix="taudash-tests-home-"))
    atexit.register(shutil.rmtree, base, True)
    env = hermetic_env(base, dict(os.environ))
    env[REAL_HOMES_VAR] = os.pathsep.join(homes)
    os.environ.clear()
    os.environ.update(env)
    GUARD = Guard(homes)
    GUARD.install()
    return GUARD


_numbers = itertools.count()


@pytest.fixture(autouse=True)
def hermetic_home(tmp_path_factory, monkeypatch) -> Path:
    """This test's own empty home (HOME, XDG_*); KUBECONFIG empty; no TAUDASH_* variable."""
    home = tmp_path_factory.getbasetemp() / "homes" / str(next(_numbers))
    home.mkdir(parents=True)
    for name in [k for k in os.environ if k.startswith("TAUDASH_") and k not in PASSED_ON]:
        monkeypatch.delenv(name)
    for name, value in hermetic_env(home, {}).items():
        monkeypatch.setenv(name, value)
    return home


def pytest_configure(config) -> None:
    isolate_process()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    isolate_process().current = item.nodeid


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the test's fixtures are gone (module and session ones too, when this is their last test): the
    touches since the last check fail it, those made outside any test (collection) included."""
    result = yield
    touched = isolate_process().unreported()
    if touched:
        pytest.fail("tests must not touch the real home:\n  " + "\n  ".join(touched), pytrace=False)
    return result


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus) -> None:
    """Touches after the last test's teardown fail the run."""
    touched = GUARD.unreported() if GUARD is not None else []
    if touched:
        sys.stderr.write("tests must not touch the real home:\n  " + "\n  ".join(touched) + "\n")
        if session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
