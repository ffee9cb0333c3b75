"""The suite is hermetic (tests/tools/hermetic.py): each test has its own home, XDG folders and an empty
KUBECONFIG, inherits no TAUDASH_* variable, and a test touching the real home fails. The negative controls run
an inner pytest in a subprocess (pytester), so this suite stays green while the inner one fails."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tools import hermetic
from tools.paths import TESTS

from taudash import config as taudash_config
from taudash.engine.paths import state_dir
from taudash.engine.sources.client import kubeconfig_path

REAL_HOMES = hermetic.real_homes()


@pytest.fixture(scope="module")
def module_home() -> str:
    """What a module-scoped fixture (set up before any function fixture) sees as its home."""
    return os.environ["HOME"]


def under(path: str | Path, root: str | Path) -> bool:
    return Path(path).resolve().is_relative_to(Path(root).resolve())


def test_each_test_has_its_own_home_xdg_folders_and_an_empty_kubeconfig(hermetic_home, module_home):
    assert REAL_HOMES and all(not under(hermetic_home, h) for h in REAL_HOMES)
    assert os.environ["HOME"] == str(hermetic_home) != module_home
    assert all(not under(module_home, h) for h in REAL_HOMES)
    for var in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        assert under(os.environ[var], hermetic_home), var
    assert os.environ["KUBECONFIG"] == ""
    assert {k for k in os.environ if k.startswith("TAUDASH_")} - hermetic.PASSED_ON == set(hermetic.SUITE_ENV)
    assert list(hermetic_home.iterdir()) == []


def test_taudash_finds_its_state_config_and_kubeconfig_in_the_tests_home(hermetic_home):
    assert state_dir() == hermetic_home / ".local" / "state" / "taudash"
    assert taudash_config.config_path(os.environ) == (hermetic_home / ".config" / "taudash" / "config.yaml", False)
    assert kubeconfig_path() == str(hermetic_home / ".kube" / "config")


def test_a_subprocess_inherits_the_tests_environment(hermetic_home):
    out = subprocess.run([sys.executable, "-c", "import os, json; print(json.dumps(dict(os.environ)))"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    import json

    env = json.loads(out)
    assert env["HOME"] == str(hermetic_home) and env["KUBECONFIG"] == ""
    assert env["XDG_STATE_HOME"] == str(hermetic_home / ".local" / "state")
    assert not {k for k in env if k.startswith("TAUDASH_")} - set(hermetic.SUITE_ENV) - hermetic.PASSED_ON


INNER = '''
import os, subprocess, sys
import pytest
from tools import hermetic

HOME = hermetic.real_homes()[0]
PROBE = os.path.join(HOME, ".taudash-hermetic-probe-never-created")


def test_reads_the_real_home():
    with pytest.raises(PermissionError):  # refused before the system call: nothing is read
        open(PROBE)


def test_lists_the_real_home():
    with pytest.raises(PermissionError):
        os.listdir(HOME)


def test_writes_the_real_home():
    with pytest.raises(PermissionError):  # refused before the system call: nothing is created
        os.makedirs(os.path.join(PROBE, "state"))


def test_starts_a_subprocess_with_the_real_home():
    with pytest.raises(PermissionError):
        subprocess.run([sys.executable, "-c", "pass"], env={**os.environ, "HOME": HOME})


def test_swallows_the_refusal():
    try:
        open(os.path.join(HOME, ".kube", "config"))
    except OSError:
        pass  # code under test that treats an unreadable file as absent still fails the test


def test_reads_the_python_installation_and_sees_a_clean_environment():
    with open(os.__file__) as fh:  # the standard library (under the home with pyenv)
        assert fh.read(1)
    assert os.environ["HOME"] not in hermetic.real_homes()
    assert os.environ["KUBECONFIG"] == "" and "TAUDASH_READ_ONLY" not in os.environ
'''


def run_inner(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    # The caller's environment is polluted the way a developer's is; the inner suite must not see it.
    monkeypatch.setenv("TAUDASH_READ_ONLY", "1")
    monkeypatch.setenv("KUBECONFIG", str(pytester.path / "kubeconfig"))
    pytester.makepyfile(test_inner=INNER)
    return pytester.runpytest_subprocess("-p", "tools.hermetic", "-p", "no:cacheprovider", "-p", "no:xdist",
                                         "-rA", timeout=240)


def test_a_test_touching_the_real_home_fails(pytester, monkeypatch):
    result = run_inner(pytester, monkeypatch)
    out = result.stdout.str()
    # every touching test passed its body (each touch was refused) and then failed at teardown
    result.assert_outcomes(passed=6, errors=5)
    for name in ("reads", "lists", "writes", "starts_a_subprocess_with", "swallows_the_refusal"):
        assert f"ERROR at teardown of test_{name}" in out or f"ERROR test_inner.py::test_{name}" in out, name
    assert "tests must not touch the real home" in out
    home = REAL_HOMES[0]
    assert f"open {os.path.join(home, '.taudash-hermetic-probe-never-created')}" in out
    assert f"os.listdir {home}" in out and f"subprocess.Popen env HOME {home}" in out
    assert f"open {os.path.join(home, '.kube', 'config')}" in out
    assert not os.path.exists(os.path.join(home, ".taudash-hermetic-probe-never-created"))
    assert "ERROR at teardown of test_reads_the_python_installation" not in out
