"""The dependency rule programs -> screens -> engine is enforced by import-linter; prove it bites."""

import re
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
    ("engine/leak.py", "import taudash.screens.kit.base\n", "taudash.engine.leak"),
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


# --- inside the screens: independent screens over their rooms (kit, widgets, workflow) ----------------------

TOY_SCREEN = """from .kit.base import DashScreen
from .kit.text import lit
from .widgets.section import Section
from .workflow.model import run_state_text


class ToyScreen(DashScreen):
    HELP = "Toy: a screen added as one file."
"""


def test_a_new_screen_is_covered_without_editing_a_contract(tmp_path):
    """A screen module dropped into screens/ that uses only the kit, the widgets and the workflow host keeps
    every contract: the independence contract names the screens by wildcard, not one by one."""
    copy = _copy(tmp_path)
    (copy / "screens" / "toy.py").write_text(TOY_SCREEN)
    r = lint_imports(copy, env={"PYTHONPATH": str(copy), "PATH": str(Path(sys.executable).parent)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Screens are independent" in r.stdout and "KEPT" in r.stdout


@pytest.mark.parametrize(("where", "line", "contract", "module"), [
    # a screen imports another screen (the AST test this contract replaced said the same)
    ("screens/toy.py", TOY_SCREEN + "from .pool import PoolScreen\n", "Screens are independent", "taudash.screens.toy"),
    ("screens/toy.py", "from taudash.screens.queues import COLS\n", "Screens are independent", "taudash.screens.toy"),
    # a screen reaches the registry, or a room reaches back up to a screen or the registry (the footer's old circle)
    ("screens/toy.py", "from .registry import REGISTRY\n", "Screens are independent", "taudash.screens.toy"),
    ("screens/widgets/leak.py", "from ..registry import REGISTRY\n", "Screens are independent",
     "taudash.screens.widgets.leak"),
    ("screens/kit/leak.py", "from ..overview import OverviewScreen\n", "Screens are independent",
     "taudash.screens.kit.leak"),
    ("screens/workflow/leak.py", "from ..workflows import WorkflowsScreen\n", "Screens are independent",
     "taudash.screens.workflow.leak"),
    # the rooms' order: a widget uses more of the kit than its vocabulary; the kit uses the workflow host
    ("screens/widgets/leak.py", "from ..kit.format import qty\n", "Screens' rooms", "taudash.screens.widgets.leak"),
    ("screens/kit/leak.py", "from ..workflow.model import RUN_MARK\n", "Screens' rooms", "taudash.screens.kit.leak"),
])
def test_the_screens_contracts_break_on_a_forbidden_import(tmp_path, where, line, contract, module):
    copy = _copy(tmp_path)
    (copy / where).write_text(line)
    r = lint_imports(copy, env={"PYTHONPATH": str(copy), "PATH": str(Path(sys.executable).parent)})
    assert r.returncode != 0, r.stdout
    flat = " ".join(r.stdout.split())  # a long contract name wraps in the report
    assert re.search(re.escape(contract) + r"(?:(?!KEPT).)*? BROKEN", flat), r.stdout
    assert module in r.stdout, r.stdout
