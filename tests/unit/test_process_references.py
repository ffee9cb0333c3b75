"""Code says the fact, not where the project once discussed it: no issue numbers (nor an owning issue), no
numbered seed documents, no sections of design documents outside the repository (the design document by name, a
bare section sign), no talk of who asked for what, in the code and the tests. Point to docs/rules.md or another
document in the repository instead; docs/decisions.md may keep the history. The negative controls below spell
each reference in pieces so that this file holds none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tools.paths import REPO

SCANNED = ("engine", "screens", "taudash", "tests")
SUFFIXES = (".py", ".tcss", ".yaml", ".yml")
SKIPPED = ("__snapshots__", "__pycache__", "golden")
PROCESS = re.compile(
    r"\bissues?\s+#?\d+"  # the project's issue tracker
    r"|\bowner:\s*issue"
    r"|\bseeds?\s+0\d\d\b"  # the numbered seed documents
    r"|(?-i:\bDESIGN\b)"  # the design document outside the repository (by name, in capitals)
    r"|(?<!\.md )§\s*\d"  # a section of a document not named in the repository
    r"|\bthe (?:brief|lead)\b",
    re.IGNORECASE)


def code_files(root: Path) -> list[Path]:
    out = []
    for d in SCANNED:
        base = root / d
        if base.is_dir() and not base.is_symlink():
            out += [p for p in base.rglob("*") if p.suffix in SUFFIXES and p.is_file()
                    and not any(part in SKIPPED for part in p.relative_to(root).parts)
                    and not any(q.is_symlink() for q in p.relative_to(root).parents if q != Path("."))]
    return sorted(out)


def process_references(root: Path, files: list[Path] | None = None) -> list[str]:
    out = []
    for f in files if files is not None else code_files(root):
        for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            out += [f"{f.relative_to(root)}:{n}: {m.group(0)!r}" for m in PROCESS.finditer(line)]
    return out


def test_code_names_no_process_documents():
    assert process_references(REPO) == [], "state the fact, or point to docs/rules.md"


def test_the_scan_reads_every_layer_and_the_tests():
    files = {p.relative_to(REPO).parts[0] for p in code_files(REPO)}
    assert files == set(SCANNED)


ISSUE, SEED, DOC, SECTION = "iss" + "ue", "se" + "ed", "DES" + "IGN", "\u00a7"


@pytest.mark.parametrize("line", [
    f'"""The fleet screen ({ISSUE} 21): one row per cluster."""',
    f"# writes ({ISSUE.capitalize()} 9) ------",
    f'"""Storage readiness. Owner: {ISSUE} 4."""',
    f"# calibrated on {SEED} 001 of the documents",
    f"# {SEED}s 001 and 002",
    f"# The rules are in {DOC} {SECTION}5.2.",
    f"# then priority, then age ({SECTION}4.3).",
    "# release-specific spellings are reconciled by the " + "lead",
])
def test_a_process_reference_is_found(tmp_path, line):
    f = tmp_path / "engine" / "mod.py"
    f.parent.mkdir()
    f.write_text(f"X = 1\n{line}\n")
    assert sorted({r.split(": ")[0] for r in process_references(tmp_path)}) == [f"{f.relative_to(tmp_path)}:2"]


@pytest.mark.parametrize("line", [
    "# calibrated on seed 1 of the back-test (a random seed, not a document)",
    "DISPERSION = 8.0  # see docs/queue-insight.md",
    "# the audit log (docs/reliability.md \u00a78)",  # a section of a document in the repository
    "# Kueue's scheduler (kubernetes-sigs/kueue#12449)",
    "def issued_at(x): return x  # issued, not an issue",
])
def test_facts_and_repository_documents_are_not_process_references(tmp_path, line):
    f = tmp_path / "taudash" / "mod.py"
    f.parent.mkdir()
    f.write_text(line + "\n")
    assert process_references(tmp_path) == []
