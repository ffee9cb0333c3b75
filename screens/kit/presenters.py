"""What more than one screen shows or decides, in one place: no screen imports another screen's module.

Row builders and summaries (findings, the pool line, a workspace's phase) and
the one policy every guided-operation key and form consults (`operations_enabled`). Single-screen
builders stay in their screen's module; plain cell formatting is in format.py.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Protocol, runtime_checkable

from rich.console import Group, RenderableType
from rich.text import Text

from taudash.engine.rules.base import Finding
from taudash.engine.rules.workspaces import WorkspaceView
from taudash.engine.session import Session
from taudash.engine.view import ClusterView
from taudash.engine.workflows.journal import workflows_dir

from ..widgets.keyed_table import Col, Row
from .base import DashScreen
from .format import finding_meta, plural, ref_text, severity_cell, short_flavor
from .rowcache import RowCache
from .text import PHASE_TONE, Tones, lit, span

# --- findings (1 Overview, 8 Findings) ------------------------------------------------------------------

FINDING_COLS = [
    Col("sev", "severity", 10, hide=1),
    Col("rule", "rule", 21, hide=2),
    Col("object", "object", 26, ident=True),
    Col("message", "message", flex=True),
]


def finding_key(f: Finding) -> str:
    return "|".join((f.rule, f.object.kind, f.object.namespace or "", f.object.name, f.message))


def finding_rows(view: ClusterView, tones: Tones, cache: RowCache | None = None) -> list[Row]:
    """A row per finding; with `cache`, findings the view kept (the same object) keep their row."""
    cache = cache or RowCache()
    rows, seen = [], set()
    for f in view.findings:
        key = finding_key(f)
        while key in seen:  # the same finding twice: keep both rows
            key += "+"
        seen.add(key)
        rows.append(cache.row(key, f, partial(_finding_row, key, f, tones), tones))
    cache.done()
    return rows


def _finding_cells(f: Finding, tones: Tones) -> tuple:
    return (severity_cell(f.severity.value, tones), lit(f.rule), ref_text(f.object), lit(f.message))


def _finding_row(key: str, f: Finding, tones: Tones) -> Row:
    return Row(key=key, cells=partial(_finding_cells, f, tones), meta=partial(finding_meta, f))


# --- the pool (1 Overview, 2 Pool) ---------------------------------------------------------------------


def pool_summary(view: ClusterView, tones: Tones) -> Text:
    pool = view.pool
    t = span("GPU POOL ", tones.heading)
    if pool.mode == "None":
        t.append("no capacity configuration", style=tones.muted)
        if view.cluster is None:
            t.append(" (no TauCluster)", style=tones.muted)
        return t
    t.append(f"{pool.mode.lower()} · team ")
    t.append(lit(pool.team or "–"))
    t.append(" · cohort ")
    t.append(lit(pool.cohort or "–"))
    t.append(" · ")
    if pool.valid is None:
        t.append("? validity unknown", style=tones.unknown)
    elif pool.valid:
        t.append("✓ config valid", style=tones.ok)
    else:
        t.append(f"✖ config invalid ({plural(len(pool.conflicts), 'conflict')})", style=tones.bad)
    # A valid configuration can still be overcommitted: never let "✓" stand alone beside a negative headroom.
    over = [f for f in pool.flavors if any(q.negative for q in f.headroom.values())]
    if over:
        t.append(" · ⚠ overcommitted (" + ", ".join(short_flavor(f.name) for f in over) + ")", style=tones.warn)
    if pool.zeroed:
        t.append(" · ✖ ZEROED: budget 0 until fixed", style=tones.bad)
    elif pool.mode == "Automatic" and not pool.established:
        t.append(" · ◐ not established", style=tones.warn)
    return t


# --- workspaces (4 Workspaces, the workspace detail) --------------------------------------------------


def phase_text(w: WorkspaceView, tones: Tones) -> Text:
    """Published phase, and the expected one when they differ; a stale status says so."""
    expected = w.expected_phase
    tone = PHASE_TONE.get(expected, "unknown")
    if w.phase == expected:
        t = tones.mark(tone, expected)
    else:
        t = lit(w.phase or "none", tones.muted)
        t.append(" → ")
        t.append(tones.mark(tone, expected))
    if w.stale:
        t.append(" stale", style=tones.warn)
    return t


# --- guided operations (9 Workflows, the wizard, 3 Queues, the workspace detail) ------------------------


@runtime_checkable
class RunningWorkflows(Protocol):
    """What screens may ask the app's workflow host (screens/workflow/host.py `WorkflowHost`)."""

    def directory(self) -> Path: ...

    def live(self) -> dict[str, str]: ...


def workflows_of(app: object) -> RunningWorkflows | None:
    """The app's workflow host, if it has one (a screen built in a test may run in a bare App)."""
    host = getattr(app, "workflows", None)
    return host if isinstance(host, RunningWorkflows) else None


def journal_dir_of(app: object) -> Path:
    """The journal directory the app uses (tests give it one; else the state dir's workflows/)."""
    host = workflows_of(app)
    return host.directory() if host is not None else workflows_dir()


def operations_enabled(session: Session) -> tuple[bool, str]:
    """(writable, why not): guided operations need a session that may write."""
    if session.read_only:
        why = session.actions.why_read_only or f"{session.mode.lower()} source"
        return False, why
    if not session.actions.writable:
        return False, session.actions.why_read_only or "no write path configured"
    return True, ""


def refuse_read_only(screen: DashScreen, what: str) -> bool:
    """True, after a notification saying why, when `screen`'s session may not start guided operations.

    Keys that would start one (n, r, a, w) stay bound in a read-only session so that pressing them
    explains itself instead of doing nothing."""
    ok, why = operations_enabled(screen.session)
    if ok:
        return False
    screen.notify(f"{what} is disabled — {why}", title="read-only", severity="warning", markup=False)
    return True


def read_only_line(session: Session, tones: Tones) -> Text:
    _, why = operations_enabled(session)
    t = span("read-only: guided operations are disabled", tones.warn)
    if why:
        t.append(" (", style=tones.warn)
        t.append(lit(why, tones.warn))
        t.append(")", style=tones.warn)
    t.append(" — status only, nothing can be started or confirmed", style=tones.muted)
    return t


def stack(*parts: RenderableType) -> Group:
    """Renderables one under the other (a Text built with end="" would run into the next one)."""
    for p in parts:
        if isinstance(p, Text) and not p.end:
            p.end = "\n"
    return Group(*parts)
