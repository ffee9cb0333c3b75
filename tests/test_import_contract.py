"""The dependency rule taudash -> screens -> engine is enforced by import-linter; prove it bites."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "lint-imports"
    return subprocess.run([str(exe)], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_contract_holds_on_the_tree():
    r = lint_imports(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


def test_contract_fails_when_engine_imports_textual(tmp_path):
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy(ROOT / "pyproject.toml", copy)
    for pkg in ("engine", "screens", "taudash"):
        shutil.copytree(ROOT / pkg, copy / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "engine" / "leak.py").write_text("import textual\n")
    r = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports")],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(copy), "PATH": str(Path(sys.executable).parent)},
    )
    assert r.returncode != 0
    assert "engine.leak" in r.stdout and "BROKEN" in r.stdout.upper()
