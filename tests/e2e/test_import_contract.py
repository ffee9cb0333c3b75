"""The dependency rule programs -> screens -> engine is enforced by import-linter; prove it bites."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tools.paths import REPO


def lint_imports(cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "lint-imports"
    return subprocess.run([str(exe)], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_contract_holds_on_the_tree():
    r = lint_imports(REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy(REPO / "pyproject.toml", copy)
    for pkg in ("engine", "screens", "taudash"):  # taudash/engine and taudash/screens are links to these
        shutil.copytree(REPO / pkg, copy / pkg, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.mark.parametrize(("where", "line", "module"), [
    ("engine/leak.py", "import textual\n", "taudash.engine.leak"),
    ("engine/leak.py", "import taudash.sim.server\n", "taudash.engine.leak"),
    ("engine/leak.py", "from taudash.bench import measure\n", "taudash.engine.leak"),
    ("engine/leak.py", "import taudash.screens.base\n", "taudash.engine.leak"),
    ("screens/leak.py", "import taudash.cli\n", "taudash.screens.leak"),
    ("taudash/stray.py", "X = 1\n", "taudash.stray"),  # a new program module must be placed in a layer
    # the programs' own layers: a lower one never imports a higher one, siblings marked `|` never each other
    ("taudash/live.py", "import taudash.compose\n", "taudash.live"),
    ("taudash/commands/options.py", "import taudash.cli\n", "taudash.commands.options"),
    ("taudash/loading.py", "import taudash.sim.server\n", "taudash.loading"),
    ("taudash/commands/why.py", "from . import dashboard\n", "taudash.commands.why"),
    ("taudash/commands/stray.py", "X = 1\n", "taudash.commands.stray"),
])
def test_contract_breaks_on_a_forbidden_import(tmp_path, where, line, module):
    copy = _copy(tmp_path)
    (copy / where).write_text(line)
    r = lint_imports(copy, env={"PYTHONPATH": str(copy), "PATH": str(Path(sys.executable).parent)})
    assert r.returncode != 0, r.stdout
    assert module in r.stdout + r.stderr
