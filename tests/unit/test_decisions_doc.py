"""docs/decisions.md keeps its index true: one row per decision, in order, and a decision marked superseded in
the index carries the same mark where it is written (and the other way round); every "decision N" cited in
the code and the docs exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tools.citations import scanned_files
from tools.paths import REPO

DECISIONS = REPO / "docs" / "decisions.md"
ROW = re.compile(r"^\| (\d+) \| (.+?) \| (.+?) \|$", re.M)
ENTRY = re.compile(r"^(\d+)\. (?:\*\[(Superseded|In part superseded) by (\d+)[.:][^\]]*\]\*\s+)?\*\*", re.M)
STATUS = re.compile(r"in force|(superseded|in part superseded) by (\d+)")
CITED = re.compile(r"\bdecisions?(?: |\.md )(\d+)(?:[–-](\d+))?")


def _kind(how: str | None, by: str) -> str:
    return "" if not how else f"{'part' if 'part' in how.lower() else 'whole'} {by}"


def parse(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(index rows as (number, status), decisions as (number, mark)); a mark or status is "", "whole N" or
    "part N"."""
    head, _, body = text.partition("\n## Decisions\n")
    rows = []
    for n, _title, status in ROW.findall(head):
        m = STATUS.fullmatch(status)
        assert m, f"index row {n}: status {status!r} is not 'in force', 'superseded by N' or 'in part superseded by N'"
        rows.append((int(n), _kind(m.group(1), m.group(2))))
    entries = [(int(n), _kind(how, by)) for n, how, by in ENTRY.findall(body)]
    return rows, entries


def problems(text: str) -> list[str]:
    rows, entries = parse(text)
    out = []
    numbers = [n for n, _ in entries]
    if numbers != sorted(set(numbers)):
        out.append(f"decision numbers are not increasing and unique: {numbers}")
    if [n for n, _ in rows] != numbers:
        out.append(f"the index lists {[n for n, _ in rows]}, the document has {numbers}")
    marks = dict(entries)
    for n, status in rows:
        if n in marks and marks[n] != status:
            said = marks[n] or "in force"
            out.append(f"decision {n}: the index says {status or 'in force'!r}, the decision {said!r}")
        if status:
            by = int(status.split()[1])
            if by not in marks or by <= n:
                out.append(f"decision {n} is superseded by {by}, which is not a later decision")
    return out


def test_the_index_and_the_marks_agree():
    assert problems(DECISIONS.read_text(encoding="utf-8")) == []


def test_superseded_decisions_are_marked():
    rows, _ = parse(DECISIONS.read_text(encoding="utf-8"))
    assert any(status.startswith("whole") for _, status in rows) and any(s.startswith("part") for _, s in rows)


def _doc(rows: str, body: str) -> str:
    return f"# Decisions\n\n## Index\n\n| # | decision | status |\n|---|---|---|\n{rows}\n\n## Decisions\n\n{body}"


GOOD_BODY = "1. *[Superseded by 2.]*\n   **One.** Text.\n2. **Two.** Text.\n"


@pytest.mark.parametrize(("rows", "body", "problem"), [
    ("| 1 | one | in force |\n| 2 | two | in force |", GOOD_BODY, "decision 1: the index says 'in force'"),
    ("| 1 | one | superseded by 2 |", GOOD_BODY, "the index lists [1], the document has [1, 2]"),
    ("| 1 | one | superseded by 2 |\n| 2 | two | superseded by 1 |",
     "1. *[Superseded by 2.]*\n   **One.**\n2. *[Superseded by 1.]*\n   **Two.**\n",
     "superseded by 1, which is not a later"),
    ("| 1 | one | in part superseded by 2 |\n| 2 | two | in force |", GOOD_BODY, "the index says 'part 2'"),
    ("| 1 | one | superseded by 2 |\n| 2 | two | in force |", "2. **Two.**\n1. *[Superseded by 2.]*\n   **One.**\n",
     "not increasing"),
])
def test_a_wrong_index_is_named(rows, body, problem):
    assert problems(_doc("| 1 | one | superseded by 2 |\n| 2 | two | in force |", GOOD_BODY)) == []
    found = problems(_doc(rows, body))
    assert any(problem in p for p in found), found


def cited_decisions(files: list[Path]) -> list[tuple[str, int]]:
    out = []
    for f in files:
        for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for m in CITED.finditer(line):
                first, last = int(m.group(1)), int(m.group(2) or m.group(1))
                out += [(f"{f.relative_to(REPO)}:{n}", d) for d in range(first, last + 1)]
    return out


def test_every_cited_decision_exists():
    _, entries = parse(DECISIONS.read_text(encoding="utf-8"))
    known = {n for n, _ in entries}
    cited = cited_decisions(scanned_files(REPO))
    assert cited, "the scan finds the decisions the docs cite"
    assert [f"{where}: decision {d}" for where, d in cited if d not in known] == []
