"""The test tree keeps its shape: every test module sits in a level directory, builds its objects through
tests/factories.py, and module basenames stay unique (pytest imports test modules by basename)."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest
from tools.paths import TESTS

LEVELS = ("unit", "ui", "sim", "e2e")
BUILDER_PREFIXES = ("make_", "build_", "_make_", "_build_", "mk_", "_mk_", "new_", "_new_")
# What a unit test must not reach: the simulator, the UI, the programs (CLI, live cluster, exporter).
NOT_IN_UNIT = ("textual", "taudash.app", "taudash.screens", "taudash.sim", "taudash.cli", "taudash.commands",
               "taudash.live", "taudash.serve", "tools.livedash")


def all_test_modules() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def module_imports(tree: ast.Module) -> set[str]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out.add(n.module)
    return out


def object_builders(tree: ast.Module) -> list[str]:
    """Module-level functions and classes that spell out a Kubernetes object (a dict literal with an apiVersion key)
    or are named like a builder."""
    found = []
    for n in tree.body:
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                or n.name.startswith(("test_", "Test")):
            continue
        if any("composite" in ast.unparse(d) for d in getattr(n, "decorator_list", ())):
            continue  # a hypothesis strategy draws random objects for one property test: it is not a builder
        if n.name.startswith(BUILDER_PREFIXES):
            found.append(n.name)
            continue
        if any(isinstance(d, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "apiVersion" for k in d.keys)
               for d in ast.walk(n)):
            found.append(n.name)
    return found


def test_every_test_module_sits_in_a_level_directory():
    misplaced = [str(p.relative_to(TESTS)) for p in all_test_modules() if p.parent.parent != TESTS
                 or p.parent.name not in LEVELS]
    assert not misplaced, f"move these into tests/{{{','.join(LEVELS)}}}/ (see ARCHITECTURE.md, Testing): {misplaced}"
    for level in LEVELS:  # and every level has tests (the layout is not an empty promise)
        assert list((TESTS / level).glob("test_*.py")), level


def test_module_basenames_are_unique():
    twice = [name for name, n in Counter(p.name for p in all_test_modules()).items() if n > 1]
    assert not twice, f"pytest imports test modules by basename; rename: {twice}"


@pytest.mark.parametrize("path", all_test_modules(), ids=lambda p: str(p.relative_to(TESTS)))
def test_objects_are_built_by_the_factories(path: Path):
    builders = object_builders(ast.parse(path.read_text(encoding="utf-8")))
    assert not builders, f"{path.name}: build objects with tests/factories.py (extend it), not here: {builders}"


@pytest.mark.parametrize("path", all_test_modules(), ids=lambda p: str(p.relative_to(TESTS)))
def test_a_module_holds_tests_and_imports_no_other_test_module_across_levels(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               and n.name.startswith(("test_", "Test"))
               for n in tree.body), (f"{path.name} holds no tests: shared code goes to tests/factories.py or "
                                     "tests/tools/")
    siblings = {p.stem for p in path.parent.glob("test_*.py")}
    foreign = [m for m in module_imports(tree)
               if m.split(".")[-1].startswith("test_") and (m.startswith("tests.") or m not in siblings)]
    assert not foreign, f"{path.name} imports test modules of another level: {foreign}"


@pytest.mark.parametrize("path", sorted((TESTS / "unit").glob("test_*.py")), ids=lambda p: p.name)
def test_unit_tests_use_the_engine_only(path: Path):
    imports = module_imports(ast.parse(path.read_text(encoding="utf-8")))
    reached = sorted(m for m in imports if m.startswith(NOT_IN_UNIT))
    assert not reached, f"{path.name} reaches {reached}: it belongs in tests/ui, tests/sim or tests/e2e"


# The checks themselves: they catch what they are meant to.


def test_the_builder_check_sees_object_literals_and_builder_names():
    tree = ast.parse(
        "def make_thing():\n    return 1\n"
        "def cq(name):\n    return {'apiVersion': 'kueue.x-k8s.io/v1beta2', 'kind': 'ClusterQueue'}\n"
        "class Rig:\n    def obj(self):\n        return {'apiVersion': 'v1'}\n"
        "def helper(wl):\n    return wl['apiVersion']\n"
        "def test_inline():\n    assert {'apiVersion': 'v1'}\n"
    )
    assert object_builders(tree) == ["make_thing", "cq", "Rig"]


def test_the_unit_check_sees_a_reach_into_the_simulator():
    tree = ast.parse("from taudash.sim.server import SimServer\nimport taudash.engine.store\n")
    assert sorted(m for m in module_imports(tree) if m.startswith(NOT_IN_UNIT)) == ["taudash.sim.server"]
