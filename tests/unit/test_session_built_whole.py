"""A Session is built whole: the program gives it every collaborator in the constructor (taudash/compose.py) and
nothing replaces one afterwards — they are read-only properties, and no module assigns them."""

from __future__ import annotations

import ast
import threading

import pytest
from factories import store_of
from tools.paths import REPO, TESTS

from taudash.engine.actions import Actions
from taudash.engine.identity import ClusterIdentity
from taudash.engine.session import Session
from taudash.engine.view import SourceInfo

# What the program decides about a session; each is given once, to the constructor.
COLLABORATORS = ("store", "source", "config", "lock", "read_only", "read_only_why", "demo", "issues", "actions",
                 "cluster", "queue_positions", "on_demand", "history_reader")


async def _positions(**_kw):
    return None


def test_every_collaborator_given_to_the_constructor_is_kept_and_cannot_be_replaced():
    lock = threading.RLock()
    actions = Actions.read_only("who asked", "ctx")
    ident = ClusterIdentity("https://api.example:6443", "uid-1")
    reader, on_demand = object(), object()
    s = Session(store_of(), SourceInfo(type="kube", context="ctx"), read_only=True, read_only_why="flag", demo=True,
                issues=("a.yaml:3: bad",), lock=lock, actions=actions, cluster=ident, queue_positions=_positions,
                on_demand=on_demand, history_reader=reader)  # type: ignore[arg-type]
    assert (s.lock, s.actions, s.cluster, s.queue_positions, s.on_demand, s.history_reader) == (
        lock, actions, ident, _positions, on_demand, reader)
    assert (s.read_only, s.read_only_why, s.demo, s.issues) == (True, "flag", True, ("a.yaml:3: bad",))
    for name in COLLABORATORS:
        with pytest.raises(AttributeError):
            setattr(s, name, None)
    assert s.actions is actions and s.store is not None  # unchanged by the attempts


def test_without_a_write_path_the_session_cannot_write_and_a_snapshot_is_read_only():
    live = Session(store_of(), SourceInfo(type="kube"))
    assert not live.read_only and not live.actions.writable
    assert live.actions.why_read_only == "no write path configured"
    snap = Session(store_of(), SourceInfo(type="snapshot"), read_only=False)
    assert snap.read_only and snap.actions.why_read_only == "read-only session" and snap.actions.api_client is None
    assert live.cluster is None and live.queue_positions is None and live.on_demand is None
    assert isinstance(live.lock, type(threading.RLock()))  # its own, when the program shares none


def test_a_session_that_precedes_its_cluster_reads_the_identity_through_the_function_it_was_given():
    known: list[ClusterIdentity] = []
    s = Session(store_of(), SourceInfo(type="kube"), cluster=lambda: known[-1] if known else None)
    assert s.cluster is None  # not connected yet
    known.append(ClusterIdentity("https://a:6443", "uid-a"))
    assert s.cluster == known[-1]


def _assigned_on_a_session(tree: ast.AST) -> list[tuple[int, str]]:
    """Assignments `<…session>.<collaborator> = …` and `setattr(<…session>, "<collaborator>", …)`."""
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            if (isinstance(t, ast.Attribute) and t.attr in COLLABORATORS
                    and ast.unparse(t.value).split(".")[-1].endswith("session")):
                found.append((node.lineno, ast.unparse(t)))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in COLLABORATORS and ast.unparse(node.args[0]).endswith("session")):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_assigns_a_collaborator_to_a_session_after_construction():
    own = REPO / "engine" / "session.py"
    files = [p for root in (REPO / "taudash", REPO / "engine", REPO / "screens", TESTS) for p in root.rglob("*.py")
             if p != own and "__snapshots__" not in p.parts and p != TESTS / "unit" / "test_session_built_whole.py"]
    assert len(files) > 300
    found = {str(p.relative_to(REPO)): hits for p in files
             if (hits := _assigned_on_a_session(ast.parse(p.read_text(encoding="utf-8"))))}
    assert not found, f"give these to Session(...) instead (taudash/compose.py): {found}"


def test_the_scan_finds_an_assignment_after_construction():
    code = ("s = Session(store, info)\nself.session.actions = a\napp.session.on_demand: object = x\n"
            "setattr(session, 'cluster', c)\nctx.actions = a\nself.cluster = c\n")
    assert [line for line, _ in _assigned_on_a_session(ast.parse(code))] == [2, 3, 4]
