"""Signs that point somewhere: every repository path cited in the code, the docs and the config exists
(tests/tools/citations.py says what a citation is). The synthetic trees below spell their paths through
variables (`{DOCS}/gone.md`) so that this file itself cites only what exists."""

from __future__ import annotations

from pathlib import Path

import pytest
from tools.citations import dead_citations, scanned_files
from tools.paths import REPO

ENGINE, DOCS, TESTS, REF = "engine", "docs", "tests", "reference"


def test_every_cited_repository_path_exists():
    dead = dead_citations(REPO)
    assert not dead, "cited paths that point nowhere (fix the path, or say in words where the fact comes from):\n" + \
        "\n".join(map(str, dead))


def test_the_scan_reads_code_docs_and_config():
    files = {p.relative_to(REPO).as_posix() for p in scanned_files(REPO)}
    assert {"README.md", "ARCHITECTURE.md", "pyproject.toml", ".ci/run", "docs/rules.md", "engine/store.py",
            "screens/registry.py", "taudash/cli.py", "tests/conftest.py"} <= files
    assert not any(f.startswith(("taudash/engine/", "taudash/screens/")) for f in files)  # the links: read once
    assert not any("__snapshots__" in f for f in files)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small repository: one engine module, one test module, one guide with headings."""
    return _tree(tmp_path / "repo", {
        f"{ENGINE}/pool.py": '"""The pool."""\nLIMIT = 3\n\n\ndef derive():\n    return LIMIT\n',
        f"{TESTS}/unit/test_pool.py": "def test_limit():\n    pass\n\n\ndef test_limit_again():\n    pass\n",
        f"{DOCS}/guide.md": "# Guide\n\n## The pool, in short\n\nText.\n",
    })


def _dead(repo: Path, text: str, name: str = f"{DOCS}/notes.md", shared: Path | None = None) -> list[str]:
    _tree(repo, {name: text})
    return [c.text for c in dead_citations(repo, shared if shared is not None else repo.parent / "shared")]


def test_live_citations_are_not_reported(repo):
    assert _dead(repo, f"See {ENGINE}/pool.py, `{DOCS}/guide.md#the-pool-in-short`, [guide](guide.md#guide),\n"
                       f"{TESTS}/unit/test_pool.py::test_limit and ::test_limit_again, {ENGINE}/pool.py::LIMIT,\n"
                       f"{TESTS}/unit/test_pool.py::test_limit_ (a prefix), {ENGINE}/<area>.py,\n"
                       f"{TESTS}/unit/test_*.py,\n"
                       f"{DOCS}/ and the kind's apiVersion taudash/v1.\n") == []


@pytest.mark.parametrize(("text", "why"), [
    (f"moved: {ENGINE}/gone.py", "does not exist"),
    (f"the old flat path {TESTS}/test_pool.py", "does not exist"),
    ("a link [gone](gone.md)", "does not exist"),
    (f"{DOCS}/guide.md#no-such-heading", "guide.md has no heading #no-such-heading"),
    (f"{TESTS}/unit/test_pool.py::test_renamed", "test_pool.py defines no test_renamed"),
    (f"{TESTS}/unit/test_pool.py::test_limit, then ::test_gone", "test_pool.py defines no test_gone"),
    (f"{ENGINE}/rules/<area>.py", "no engine/rules/"),
    (f"{TESTS}/unit/test_rules_*.py", "no file matches"),
    (f"{REF}/kueue.md §4.5", "does not exist"),
    ("CHANGELOG.md", "does not exist"),  # a top-level file, by its capitals
])
def test_a_dead_citation_is_named_with_its_file_and_line(repo, text, why):
    dead = dead_citations(_tree(repo, {f"{DOCS}/notes.md": f"# Notes\n\n{text}\n"}), repo.parent / "shared")
    assert [(c.file, c.line) for c in dead] == [("docs/notes.md", 3)], dead
    assert dead[0].text.endswith(f"({why})"), dead[0]


def test_python_prose_is_checked_and_a_bare_path_literal_is_data(repo):
    code = (f'"""Reads {ENGINE}/gone.py."""\n'
            f'# and {DOCS}/gone.md\n'
            f'SYNTHETIC = "{ENGINE}/leak.py"\n'
            f'HELP = "see {DOCS}/also-gone.md"\n')
    assert _dead(repo, code, f"{ENGINE}/reader.py") == [
        f"{ENGINE}/gone.py (does not exist)", f"{DOCS}/gone.md (does not exist)",
        f"{DOCS}/also-gone.md (does not exist)"]


def test_shared_paths_are_checked_only_where_the_shared_folder_is(repo):
    text = "the fact: ../shared/reference/kueue.md §4.5\n"
    assert _dead(repo, text) == []  # a fresh clone: no shared folder beside it
    shared = _tree(repo.parent / "shared", {"reference/taugrid.md": "# TauGrid\n"})
    assert _dead(repo, text, shared=shared) == ["../shared/reference/kueue.md (does not exist)"]
    _tree(shared, {"reference/kueue.md": "# Kueue\n"})
    assert _dead(repo, text, shared=shared) == []
