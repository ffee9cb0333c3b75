"""Repository paths cited in code, docs and config, and the ones that point nowhere.

A citation is a path from the repository root written in prose: `engine/rules/pool.py`, `docs/rules.md#pool`,
`tests/unit/test_store.py::test_namespace_and_owner_indexes`, `snapshots/demo.yaml`, a top-level
`ARCHITECTURE.md`, or a Markdown link (`[drain](drain.md)`, relative to the Markdown file). It is dead when the
file (or folder) does not exist, when a `#anchor` into a Markdown file names no heading of it, or when a
member (`::` and a name) names no function, class or assignment of the Python file (a trailing underscore, as
in `tests/unit/test_store.py::test_an_owner_`, names the tests starting with it). A member written alone refers
to the last Python file cited before it on the same line.

What is checked and what is not:
- A path is recognised by its first folder (`ROOTS`) and a top-level file by an upper-case name (`README.md`).
  The reference documents' folder is one of the roots: they live outside the repository (`../shared/`), so
  citing one from the repository root is dead.
- `../shared/` paths (the reference documents and Kueue's CRDs beside the checkout) are checked against the
  `shared` folder beside the repository when that folder exists, and allowed when it does not (a fresh clone).
- Placeholders are checked up to the placeholder (`engine/rules/<area>.py` needs `engine/rules/`), globs need
  one match (`tests/unit/test_rules_*.py`); a last part of the form `v1`/`v1beta2` is an API version, not a path.
- In Python, a string literal that is exactly one path (a test's synthetic file, or a path the code opens and
  would fail on by itself) is data, not a citation; paths inside prose strings, comments and docstrings are
  citations.
- Paths written relative to some other folder (`rules/pool.py` inside engine/) are not recognised.
"""

from __future__ import annotations

import ast
import glob
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOTS = ("engine", "screens", "taudash", "tests", "docs", "snapshots", "deploy", ".ci", "reference")
# Where citations are looked for: the code, the docs and the configuration (folders under the repository root).
SCANNED_DIRS = ("engine", "screens", "taudash", "tests", "docs", "deploy", ".ci", "snapshots")
SCANNED_SUFFIXES = (".py", ".md", ".toml", ".tcss", ".yaml", ".yml", ".sh", ".cfg", ".ini", ".txt")
SKIPPED_PARTS = frozenset({"__snapshots__", "__pycache__", ".venv", ".git", "node_modules"})
SHARED_PREFIX = "../shared/"

_CHARS = r"[\w.*<>{}…/-]"
_ROOTED = rf"(?:{'|'.join(re.escape(r) for r in ROOTS)})/{_CHARS}*"
PATH = re.compile(rf"(?<![\w./$~@:-])(?P<path>\.\./shared/{_CHARS}+|{_ROOTED}|[A-Z][A-Z0-9_-]*\.md)"
                  rf"(?P<anchor>#[\w-]+)?(?P<member>::[A-Za-z_]\w*)?")
MEMBER = re.compile(r"(?<![\w:])::(?P<name>[A-Za-z_]\w*)")
LINK = re.compile(r"\]\((?P<target>[^)\s#]+)(?P<anchor>#[\w-]+)?\)")
API_VERSION = re.compile(r"v\d+((alpha|beta)\d+)?")
PLACEHOLDER = re.compile(r"[<{…]|\.\.\.")


@dataclass(frozen=True)
class Citation:
    file: str  # relative to the repository root
    line: int
    text: str  # as written

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


def scanned_files(root: Path) -> list[Path]:
    """The files whose text is checked: the top-level Markdown and config, and every text file of the folders."""
    out = [p for p in sorted(root.glob("*.md")) if p.is_file()]
    out += [root / n for n in ("pyproject.toml", ".ci/run") if (root / n).is_file()]
    for d in SCANNED_DIRS:
        base = root / d
        if not base.is_dir() or base.is_symlink():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(n for n in dirnames if n not in SKIPPED_PARTS and not n.endswith(".egg-info")
                                 and not (Path(dirpath) / n).is_symlink())
            out += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(SCANNED_SUFFIXES)]
    return sorted(set(out))


def _data_literals(text: str) -> set[tuple[int, int]]:
    """(line, column) of every Python string literal whose whole value is one path (no whitespace)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip() == node.value \
                and node.value and not any(c.isspace() for c in node.value):
            out.add((node.lineno, node.col_offset))
    return out


def citations(path: Path, root: Path) -> Iterator[tuple[Citation, str, str, str]]:
    """(citation, path relative to the repository root, anchor, member) for every path cited in `path`."""
    text = path.read_text(encoding="utf-8", errors="replace")
    rel = path.relative_to(root).as_posix()
    data = _data_literals(text) if path.suffix == ".py" else set()
    for n, line in enumerate(text.splitlines(), 1):
        last_py = ""
        found: list[tuple[int, str, str, str, str]] = []  # (column, written, path, anchor, member)
        for m in PATH.finditer(line):
            p = m.group("path").rstrip(".")
            start = m.start()
            if data and start > 0 and line[start - 1] in "\"'" and (n, start - 1) in data \
                    and line[m.end("path"):m.end("path") + 1] == line[start - 1]:
                continue
            found.append((start, m.group(0).rstrip("."), p, m.group("anchor") or "", (m.group("member") or "")[2:]))
        if path.suffix == ".md":
            for m in LINK.finditer(line):
                target = m.group("target")
                if "://" in target or target.startswith("mailto:"):
                    continue
                resolved = os.path.normpath((path.parent / target).relative_to(root).as_posix()) \
                    if not target.startswith("/") else target.lstrip("/")
                found.append((m.start(), m.group(0), resolved, m.group("anchor") or "", ""))
        for m in MEMBER.finditer(line):
            if not any(c <= m.start() <= c + len(w) for c, w, *_ in found):
                found.append((m.start(), m.group(0), "", "", m.group("name")))
        for _col, written, p, anchor, member in sorted(found):
            if p.endswith(".py"):
                last_py = p
            elif not p and member:
                if not last_py:
                    continue
                p = last_py
            yield Citation(rel, n, written), p, anchor, member


def _headings(md: Path) -> set[str]:
    """The anchors of a Markdown file: GitHub's slugs of its headings, and explicit `<a id=...>` / `{#id}`."""
    out: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in md.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        out |= set(re.findall(r"<a (?:id|name)=\"([\w-]+)\"", line)) | set(re.findall(r"\{#([\w-]+)\}", line))
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            k = seen.get(slug, 0)
            seen[slug] = k + 1
            out.add(slug if k == 0 else f"{slug}-{k}")
    return out


def _members(py: Path) -> set[str]:
    try:
        tree = ast.parse(py.read_text(encoding="utf-8"))
    except SyntaxError:
        return set()
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out


def why_dead(root: Path, shared: Path, path: str, anchor: str = "", member: str = "") -> str | None:
    """Why the cited `path` (with its anchor and member, each possibly empty) points nowhere; None when it points
    somewhere."""
    if path.startswith(SHARED_PREFIX):
        if not shared.is_dir():
            return None  # a checkout without the shared folder beside it: nothing to check against
        base, path = shared, path[len(SHARED_PREFIX):]
    else:
        base = root
    cut = PLACEHOLDER.search(path)
    if cut:
        prefix = path[:cut.start()].rpartition("/")[0]
        return None if (base / prefix).exists() else f"no {prefix}/"
    if "*" in path:
        return None if glob.glob(str(base / path)) else "no file matches"
    target = base / path
    if not target.exists():
        last = path.rstrip("/").rpartition("/")[2]
        if API_VERSION.fullmatch(last):
            return None
        stem, dot, _ = last.partition(".")
        module = target.with_name(stem + ".py") if dot and not path.endswith(SCANNED_SUFFIXES + (".json", ".svg")) \
            else target.with_name(last + ".py")
        if not module.is_file():
            return "does not exist"
        target = module  # `engine/sources/kube.RawGet`, `taudash/sim/schema` style: a module (and a member)
    if anchor and target.suffix == ".md" and anchor[1:] not in _headings(target):
        return f"{target.name} has no heading {anchor}"
    if member and target.suffix == ".py":
        names = _members(target)
        if not (member in names or (member.endswith("_") and any(x.startswith(member) for x in names))):
            return f"{target.name} defines no {member}"
    if member and target.is_dir():
        return "a folder has no members"
    return None


def dead_citations(root: Path, shared: Path | None = None, files: Iterable[Path] | None = None) -> list[Citation]:
    """Every citation in `files` (default: `scanned_files(root)`) that points nowhere."""
    shared = shared if shared is not None else root.parent / "shared"
    out = []
    for f in files if files is not None else scanned_files(root):
        for c, path, anchor, member in citations(f, root):
            why = why_dead(root, shared, path, anchor, member)
            if why:
                out.append(Citation(c.file, c.line, f"{c.text} ({why})"))
    return out
