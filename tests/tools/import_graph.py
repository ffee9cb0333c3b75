"""The import graph of a package, read from its source with `ast` (nothing is imported), and its cycles.

Every import counts, wherever it stands (module level, inside a function, under TYPE_CHECKING): each is
a dependency a reader follows. Relative imports are resolved against the importing module's package;
`from a import b` is an edge to the module `a.b` when that module exists, else to `a`. Folders linked
into the package (taudash/engine, taudash/screens) are walked through their links, so their modules
are named as the package imports them.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from pathlib import Path

Graph = dict[str, set[str]]


def modules_of(root: Path) -> dict[str, Path]:
    """Module name → file, for the package at `root` (its folder name is the package name)."""
    out: dict[str, Path] = {}
    for folder, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        base = Path(folder)
        parts = (root.name, *base.relative_to(root).parts)
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            stem = name[:-3]
            out[".".join(parts if stem == "__init__" else (*parts, stem))] = base / name
    return out


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(module: str, path: Path, known: Iterable[str]) -> set[str]:
    """The package's own modules that `module` (source at `path`) imports."""
    known = set(known)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    out: set[str] = set()

    def add(name: str) -> None:
        while name and name not in known:  # `import a.b.c` of a name inside a module: the module
            name = name.rpartition(".")[0]
        if name and name != module:
            out.add(name)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node)
            for alias in node.names:
                full = f"{target}.{alias.name}"
                add(full if full in known else target)
    return out


def import_graph(root: Path) -> Graph:
    mods = modules_of(root)
    return {m: imports_of(m, p, mods) for m, p in mods.items()}


def strongly_connected(graph: Graph) -> list[frozenset[str]]:
    """The graph's cycles as its strongly connected components of two or more modules (Tarjan's
    algorithm, iterative: a deep package must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.add(m)
                    if m == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return sorted(found, key=lambda c: sorted(c))


def a_cycle(graph: Graph, component: frozenset[str]) -> list[str]:
    """One shortest circle through the component's first module, as a path `a, b, …, a`."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    return [*paths[node], start]
                if nxt in component and nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return [start]  # unreachable for a strongly connected component


def describe(graph: Graph, component: frozenset[str]) -> str:
    return (f"{len(component)} modules, e.g. {' -> '.join(a_cycle(graph, component))}"
            f" (all: {', '.join(sorted(component))})")
