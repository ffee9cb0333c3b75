"""docs/rules.md and the engine cannot drift: every finding ID the engine can emit is in the rule book,
and every ID the rule book lists is emitted somewhere in engine/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tools.paths import REPO

BOOK = REPO / "docs" / "rules.md"
ENGINE = REPO / "engine"

# A finding ID: upper-case words joined by hyphens ("POOL-CONFLICT", "WS-IDENTITY-NOT-READY").
# Letters only, so version-like strings ("SHA-256", "UTF-8") never count as IDs.
ID = re.compile(r"[A-Z]{2,}(?:-[A-Z]+)+")
# In the book, an ID is written as code in the first cell of a table row.
BOOK_ROW = re.compile(r"^\|\s*`([A-Z]{2,}(?:-[A-Z]+)+)`\s*\|", re.MULTILINE)
# The anchors code comments and other documents link to.
ANCHORS = ("pool", "cohorts-and-queues", "workspace-phase", "drain", "identity", "profiles", "multikueue",
           "storage", "change-procedure", "output-contract", "cluster-and-data-access", "finding-index",
           "workspace-expected-phase", "pool-mode", "pool-nodes", "pool-inventory", "pool-budget", "pool-queues",
           "pool-validation", "pool-zeroing", "pool-leaving", "cohorts", "cluster-queues", "waiting-workloads",
           "drain-mode", "drain-routes", "drain-blockers", "drain-state", "profiles-usable", "profiles-hash",
           "profiles-selection", "profiles-snapshot")


def ids_in_code(root: Path) -> dict[str, set[str]]:
    """Every string constant under `root` that is exactly a finding ID, with the files using it."""
    out: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and ID.fullmatch(node.value):
                out.setdefault(node.value, set()).add(str(path.relative_to(root)))
    return out


def ids_in_book(text: str) -> set[str]:
    """The IDs the book documents (a table row each) — and every ID it mentions anywhere."""
    return set(BOOK_ROW.findall(text)) | set(ID.findall(text))


def documented(text: str) -> set[str]:
    return set(BOOK_ROW.findall(text))


def heading_anchors(text: str) -> set[str]:
    """GitHub's anchors for the `##` headings, plus explicit `<a id>` anchors."""
    out = set(re.findall(r'<a id="([^"]+)"></a>', text))
    for title in re.findall(r"^#{2,3} (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def test_every_emitted_id_is_documented():
    code = ids_in_code(ENGINE)
    # The scan sees the rules (not an empty set that would pass trivially).
    assert {"POOL-CONFLICT", "DRAIN-UNKNOWN", "WS-DEGRADED", "MK-NOT-READY"} <= set(code)
    missing = {i: sorted(f) for i, f in code.items() if i not in documented(BOOK.read_text(encoding="utf-8"))}
    assert missing == {}, f"finding IDs emitted by the engine but not documented in docs/rules.md: {missing}"


def test_every_documented_id_is_emitted():
    text = BOOK.read_text(encoding="utf-8")
    mentioned = ids_in_book(text)
    assert len(documented(text)) >= 30
    ghosts = sorted(mentioned - set(ids_in_code(ENGINE)))
    assert ghosts == [], f"docs/rules.md names finding IDs the engine never emits: {ghosts}"


def test_each_documented_id_has_one_row_with_a_severity():
    text = BOOK.read_text(encoding="utf-8")
    for rid in documented(text):
        rows = re.findall(rf"^\|\s*`{re.escape(rid)}`\s*\|\s*([^|]*)\|", text, re.MULTILINE)
        # once in the index, once in its section's table
        assert len(rows) == 2, (rid, rows)
        for severity in rows:
            assert re.match(r"(critical|warning|info)\b", severity.strip()), (rid, severity)


def test_stable_anchors_exist():
    anchors = heading_anchors(BOOK.read_text(encoding="utf-8"))
    assert set(ANCHORS) <= anchors, sorted(set(ANCHORS) - anchors)


def test_the_check_catches_drift_both_ways(tmp_path):
    """The scanners find an undocumented ID in code and a documented ID no code emits."""
    pkg = tmp_path / "engine"
    pkg.mkdir()
    (pkg / "rule.py").write_text(
        'from x import finding\n'
        'def r():\n'
        '    return finding("warning", "POOL-NEW-THING", "Node", "n", None, "m")\n'
        'VERSION = "SHA-256"\n',
        encoding="utf-8",
    )
    code = ids_in_code(pkg)
    assert set(code) == {"POOL-NEW-THING"}  # version-like strings are not IDs
    book = "| `POOL-NEW-THING` | warning | x |\n| `POOL-GONE` | info | y |\nSee also `DRAIN-OLD`.\n"
    assert documented(book) == {"POOL-NEW-THING", "POOL-GONE"}
    assert ids_in_book(book) - set(code) == {"POOL-GONE", "DRAIN-OLD"}
    assert set(code) - documented("| `POOL-GONE` | info | y |\n") == {"POOL-NEW-THING"}
