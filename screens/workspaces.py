"""4 Workspaces: which workspaces are unhealthy and why — phase vs the phase their conditions imply,
staleness, drain, identity and storage. Enter opens the workspace detail."""

from __future__ import annotations

from functools import partial

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from taudash.engine.rules.workspaces import WorkspaceView
from taudash.engine.session import Frame

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.format import drain_cell, kv_grid
from .kit.presenters import phase_text
from .kit.text import Tones, lit
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

BLOCKER_LINES = 5  # the pane names this many drain blockers, then "+n more"
COLS = [
    Col("name", "workspace", 16, ident=True),
    Col("ns", "namespace", 14),
    Col("phase", "phase (expected)", 18),
    Col("drain", "drain", 14),
    Col("identity", "identity/access", 15),
    Col("storage", "storage", 10),
]





def identity_text(w: WorkspaceView, tones: Tones) -> Text:
    ident = w.identity
    access = ident.access_state
    if access in ("NotRevoked", "Unexpected"):
        return tones.mark("bad", f"access {access}")
    if ident.state == "RevocationPending":
        return tones.mark("warn", "revoke pending")
    if ident.state == "Unknown" or access == "Unknown":
        return tones.mark("unknown", "unknown")
    if access == "Missing":
        return tones.mark("warn", "no binding")
    if ident.state == "Retained":
        return tones.mark("partial", "retained")
    if ident.state == "CleanupPending":
        return tones.mark("partial", "cleanup")
    if access == "ClusterWide":
        return Text("– cluster-wide", style=tones.muted)
    if ident.state == "NotConfigured":
        return Text("– no identity", style=tones.muted)
    return tones.mark("ok", "ok")


def storage_text(w: WorkspaceView, tones: Tones) -> Text:
    st = w.storage.state
    if st in ("NotConfigured", "Skipped"):
        return Text("– none", style=tones.muted)
    return {"Ready": tones.mark("ok", "Ready"), "NotReady": tones.mark("bad", "NotReady")}.get(
        st, tones.mark("unknown", st or "unknown"))


def problems(w: WorkspaceView) -> list[str]:
    """What is wrong with a workspace, most important first, in words."""
    out = []
    for c in w.conditions:
        if c.type == "DriftDetected" and c.status == "True":
            out.append(f"DriftDetected {c.reason}: {c.message}")
        elif c.type in ("RBACReady", "QueueReady") and c.status != "True":
            out.append(f"{c.type}={c.status} {c.reason}: {c.message}".rstrip(": "))
    if w.stale:
        out.append("status is stale (observedGeneration behind the spec)")
    if w.drain.state in ("Blocked", "Unknown"):
        out.append(f"drain {w.drain.state}: {len(w.drain.blockers)} blockers"
                   + (f", unreadable {', '.join(u.resource for u in w.drain.unknown)}" if w.drain.unknown else ""))
    for c in w.conditions:
        if c.type == "WorkloadIdentityReady" and c.status == "False":
            out.append(f"WorkloadIdentityReady=False {c.reason}: {c.message} (diagnostic)")
    return out


def _ws_cells(w, tones: Tones) -> tuple:
    ns = lit(w.namespace)
    if w.drain.mode == "Retarget" and w.drain.new_namespace:
        ns.append(" → ")
        ns.append(lit(w.drain.new_namespace))
    name = lit(w.name, "bold")
    if w.deleting:
        name.append(" deleting", style=tones.warn)
    return (name, ns, phase_text(w, tones), drain_cell(w.drain.state, tones, len(w.drain.blockers)),
            identity_text(w, tones), storage_text(w, tones))


def _ws_row(w, tones: Tones, sysns: str) -> Row:
    return Row(w.name, partial(_ws_cells, w, tones),
               RowMeta(kind="TauWorkspace", namespace=sysns, name=w.name,
                       text=" ".join(filter(None, [w.namespace, w.team, w.phase, w.expected_phase, w.drain.state]))))


class WorkspacesScreen(DashScreen):
    HELP = """\
Workspaces: which TauWorkspaces are unhealthy, and why.

phase (expected)   the published phase; "Ready → ✖ Degraded" when the conditions imply another
                   phase. A stale status (observedGeneration behind the spec) is never counted Ready.
drain              NotDraining, Clear, Blocked (n blockers) or Unknown (data unreadable: fail closed).
identity/access    workload identity retention/revocation and the researcher RoleBinding state.
storage            configured claims (--pvc): Bound and the CSI driver on every pool node.

The line below the table says what is wrong with the highlighted workspace.
enter   workspace detail: every condition, routes, blockers with guidance, identity, storage"""

    # A short table takes the height of its rows and the pane saying what is wrong follows it (a long one
    # stops at 60 percent of the screen and scrolls); own classes: the app's theme.tcss outranks DEFAULT_CSS.
    DEFAULT_CSS = """
    WorkspacesScreen .fit { height: auto; margin: 0; }
    WorkspacesScreen .fit > KeyedTable { height: auto; max-height: 60vh; }
    """

    def compose_body(self) -> ComposeResult:
        with Vertical(id="body"):
            yield Section("WORKSPACES",
                          KeyedTable(COLS, empty="no TauWorkspaces in the system namespace", id="workspaces"),
                          classes="fit")
            yield Static(id="ws-why", classes="detail")

    def render_frame(self, frame: Frame) -> None:
        tones = self.tones
        sysns = self.session.config.system_namespace
        cache = self.row_cache("workspaces")
        rows = [cache.row(w.name, w, partial(_ws_row, w, tones, sysns), tones) for w in frame.view.workspaces]
        cache.done()
        table = self.query_one("#workspaces", KeyedTable)
        table.sync(rows)
        self._why(table.selected_key())

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._why(event.row_key.value)

    def _why(self, key: str | None) -> None:
        pane = self.query_one("#ws-why", Static)
        w = next((x for x in self.frame.view.workspaces if x.name == key), None) if self.frame else None
        tones = self.tones
        if w is None:
            pane.update("")
            return
        found = problems(w)
        t = Text()
        t.append(lit(w.name, "bold"))
        if not found:
            t.append("  ✓ nothing wrong: Ready proves RBAC and queue reconciliation only", style=tones.ok)
        t.append("   enter: conditions, routes, blockers, identity, storage", style=tones.muted)
        rows = [("⚠", lit(p)) for p in found]
        # each blocker whole, with its reason (the table of them is in the detail)
        shown = BLOCKER_LINES if len(w.drain.blockers) > BLOCKER_LINES + 1 else len(w.drain.blockers)
        for b in w.drain.blockers[:shown]:
            line = lit(f"{b.kind} {b.namespace}/{b.name}" if b.namespace else f"{b.kind} {b.name}")
            line.append("  ")
            line.append(lit(b.reason, tones.warn))
            if b.message and self.size.height >= 40:  # a tall terminal has room for why each one blocks
                line.append(": ", style=tones.muted)
                line.append(lit(b.message, tones.muted))
            rows.append(("  ·", line))
        if len(w.drain.blockers) > shown:
            rows.append(("  ·", lit(f"+{len(w.drain.blockers) - shown} more — enter lists every blocker", tones.muted)))
        grid = kv_grid(rows, tones.warn)
        pane.update(Group(t, grid) if found else t)
