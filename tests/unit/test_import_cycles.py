"""No import circles in the package: the graph of every `taudash` module (engine and screens through their
links), read with `ast`, has no strongly connected component. A failure names each circle found."""

from __future__ import annotations

from pathlib import Path

from tools.import_graph import a_cycle, describe, import_graph, strongly_connected
from tools.paths import REPO

# Circles allowed for a while (each entry one component, or any part of it); an entry that no longer matches
# anything fails below, so this set can only shrink. None is left: every circle is refused.
KNOWN_ENGINE_CYCLES: tuple[frozenset[str], ...] = ()


def unexplained(components: list[frozenset[str]],
                known: tuple[frozenset[str], ...]) -> tuple[list[frozenset[str]], list[frozenset[str]]]:
    """(components no known entry covers, known entries that cover no component any more)."""
    new = [c for c in components if not any(c <= k for k in known)]
    stale = [k for k in known if not any(c <= k for c in components)]
    return new, stale


def test_the_package_has_no_import_circle():
    graph = import_graph(REPO / "taudash")
    assert "taudash.engine.session" in graph and "taudash.screens.kit.base" in graph  # the links were walked
    new, stale = unexplained(strongly_connected(graph), KNOWN_ENGINE_CYCLES)
    assert not new, "import circles:\n" + "\n".join(describe(graph, c) for c in new)
    assert not stale, ("these circles are gone: remove them from KNOWN_ENGINE_CYCLES:\n"
                       + "\n".join(", ".join(sorted(k)) for k in stale))


def test_the_programs_and_the_screens_have_no_circle_at_all():
    graph = import_graph(REPO / "taudash")
    outside_the_engine = [c for c in strongly_connected(graph) if any(not m.startswith("taudash.engine.") for m in c)]
    assert not outside_the_engine, "\n".join(describe(graph, c) for c in outside_the_engine)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_circle_is_found_and_named(tmp_path):
    """Negative control: a synthetic package with a circle through a relative import, a function-level import
    and a linked folder (as taudash/engine is linked)."""
    _tree(tmp_path / "core", {"__init__.py": "", "low.py": "def f():\n    from pkg.top import run\n"})
    pkg = _tree(tmp_path / "pkg", {"__init__.py": "", "top.py": "from .mid import x\ndef run(): ...\n",
                                   "mid.py": "from pkg.core import low\nx = 1\n", "leaf.py": "import pkg.mid\n"})
    (pkg / "core").symlink_to(tmp_path / "core", target_is_directory=True)
    graph = import_graph(pkg)
    assert graph["pkg.top"] == {"pkg.mid"} and graph["pkg.mid"] == {"pkg.core.low"}
    assert graph["pkg.core.low"] == {"pkg.top"}
    components = strongly_connected(graph)
    assert components == [frozenset({"pkg.top", "pkg.mid", "pkg.core.low"})]
    assert a_cycle(graph, components[0]) == ["pkg.core.low", "pkg.top", "pkg.mid", "pkg.core.low"]
    new, stale = unexplained(components, ())
    assert new == components and stale == []
    assert "pkg.core.low -> pkg.top -> pkg.mid -> pkg.core.low" in describe(graph, components[0])


def test_a_tree_without_circles_passes_and_a_stale_allowance_is_reported(tmp_path):
    pkg = _tree(tmp_path / "pkg", {"__init__.py": "", "a.py": "from . import b\n", "b.py": "import os\n",
                                   "sub/__init__.py": "from ..a import b\n"})
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.sub"] == {"pkg.a"}
    assert strongly_connected(graph) == []
    gone = frozenset({"pkg.a", "pkg.b"})
    assert unexplained([], (gone,)) == ([], [gone])
