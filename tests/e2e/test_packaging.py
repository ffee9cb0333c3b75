"""One namespace: the built wheel installs only `taudash` and runs the demo without a source tree."""

import json
import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from tools.paths import DEMO, REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(REPO)],
                   check=True, capture_output=True, text=True, timeout=600)
    return next(out.glob("taudash-*.whl"))


def test_the_wheel_holds_one_top_level_package_and_the_demo(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"taudash"}
    for must in ("taudash/engine/store.py", "taudash/screens/kit/base.py", "taudash/screens/workflow/host.py",
                 "taudash/screens/widgets/keyed_table.py", "taudash/sim/server.py",
                 "taudash/bench/measure.py", "taudash/data/demo.yaml", "taudash/theme.tcss"):
        assert must in names
    demo = zipfile.ZipFile(wheel).read("taudash/data/demo.yaml")
    assert demo == (DEMO).read_bytes()  # the content, not a link


def test_a_fresh_non_editable_install_runs_the_demo(wheel, tmp_path):
    # A venv of its own with the wheel installed from the file alone. Its dependencies are the ones this suite runs
    # on, put on its path by a .pth file (plain directory lines: the editable install's finder there stays off), so
    # nothing is downloaded; `pip check` says the wheel's declared requirements are met by them.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    Path(purelib, "suite-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-index",
                          "--no-deps", str(wheel)], capture_output=True, text=True, timeout=900)
    assert pip.returncode == 0, pip.stderr[-2000:]
    check = subprocess.run([sys.executable, "-m", "pip", "--python", python, "check"], capture_output=True, text=True,
                           timeout=300)
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["TAUDASH_STATE_DIR"] = str(tmp_path / "state")
    exe = str(venv / "bin" / "taudash")
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import taudash.engine, sys; print(taudash.engine.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert str(venv) in where.stdout  # imported from the install, not from the source tree
    live = subprocess.run([exe, "demo", "--status", "-o", "json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert live.returncode == 0, live.stderr[-2000:]
    doc = json.loads(live.stdout)
    assert doc["kind"] == "ClusterStatus" and doc["source"]["type"] == "sim"
    packaged = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "from taudash.data import demo_snapshot; print(demo_snapshot())"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60).stdout.strip()
    assert str(venv) in packaged
    snap = subprocess.run([exe, "status", "--snapshot", packaged, "-o", "json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert snap.returncode == 0, snap.stderr[-2000:]
    assert json.loads(snap.stdout)["source"]["path"] == packaged
