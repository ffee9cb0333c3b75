"""6 MultiKueue: is it usable? The M1–M5 checks with their messages, and every worker cluster."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from taudash.engine.model import MULTIKUEUE_CONTROLLER, AdmissionCheck, MultiKueueConfig
from taudash.engine.session import Frame

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.focus_hops import FocusHops
from .kit.format import kv_grid, tri
from .kit.text import lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

CHECK_TEXT = {
    "M1": "MultiKueue APIs installed",
    "M2": "TauCluster MultiKueueReady",
    "M3": "active check → config → worker",
    "M4": "ready multiKueue profile, own queue",
    "M5": "profile resolves uniquely",
}
CHECK_COLS = [Col("id", "check", 5), Col("what", "what it needs", 36), Col("ok", "result", 8),
              Col("msg", "message", flex=True)]
WORKER_COLS = [Col("name", "worker cluster", 20, ident=True), Col("config", "config", 14), Col("active", "Active", 9),
               Col("reason", "reason", 24), Col("msg", "message", flex=True)]
OBJECT_COLS = [Col("kind", "kind", 18), Col("name", "name", 24, ident=True), Col("state", "state", flex=True)]


class MultiKueueScreen(FocusHops, DashScreen):
    HOPS = ("mk-checks", "mk-workers", "mk-objects")
    BINDINGS = [*FocusHops.HOP_BINDINGS]
    HELP = """\
MultiKueue: can work be dispatched to worker clusters right now?

NotConfigured   no profile targets multiKueue and no AdmissionCheck uses kueue.x-k8s.io/multikueue.
Ready           only when every check holds:
  M1  the MultiKueueConfig and MultiKueueCluster APIs are installed
  M2  TauCluster condition MultiKueueReady is True at the current generation
  M3  an Active MultiKueue AdmissionCheck references an existing MultiKueueConfig that lists at
      least one Active MultiKueueCluster
  M4  a ready profile with executionTarget multiKueue has a dedicated LocalQueue
  M5  that profile resolves uniquely for its applicability
WORKERS         each MultiKueueCluster with its Active reason and message (connection errors).
OBJECTS         the MultiKueue objects in the store (enter opens them).
DETAIL          under the checks: the highlighted check's or worker's whole message, wrapped.
down / up       past a table's last (first) row: the next (previous) table; tab does the same.
The platform owner owns worker credentials, rotation and revocation."""

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static(id="mk-state", classes="tile")
            yield Section("CHECKS", KeyedTable(CHECK_COLS, empty="no checks evaluated", id="mk-checks"))
            yield Static(id="mk-detail", classes="detail")
            yield Section("WORKERS", KeyedTable(WORKER_COLS, empty="no MultiKueueClusters", id="mk-workers"))
            yield Section("OBJECTS",
                          KeyedTable(OBJECT_COLS, empty="no MultiKueue objects in the store", id="mk-objects"))

    def render_frame(self, frame: Frame) -> None:
        tones = self.tones
        mk = frame.view.multikueue
        t = span("MULTIKUEUE ", tones.heading)
        if mk.state == "NotConfigured":
            t.append("– not configured: ", style=tones.muted)
            t.append("no profile targets multiKueue and no AdmissionCheck uses "
                     f"{MULTIKUEUE_CONTROLLER}", style=tones.muted)
        else:
            t.append(tones.mark("ok" if mk.state == "Ready" else "bad", mk.state))
            failing = [c.id for c in mk.checks if not c.ok]
            if failing:
                t.append(f" · failing {', '.join(failing)}", style=tones.bad)
            active = sum(1 for w in mk.workers if w.active)
            t.append(f" · {active}/{len(mk.workers)} workers active")
        self.query_one("#mk-state", Static).update(t)
        self.query_one("#mk-checks", KeyedTable).sync([
            Row(c.id, (lit(c.id, "bold"), lit(CHECK_TEXT.get(c.id, ""), tones.muted),
                       tri(c.ok, tones, "ok", "fail") if c.applicable else lit("n/a", tones.muted),
                       lit(c.message)), RowMeta(text=f"{c.id} {c.message}"))
            for c in mk.checks
        ])
        self.query_one("#mk-workers", KeyedTable).sync([
            Row(w.name, (lit(w.name), lit(w.config or "– none"), tri(w.active, tones, "True", "False"),
                         lit(w.reason), lit(w.message)),
                RowMeta(kind="MultiKueueCluster", name=w.name, text=f"{w.reason} {w.message}"))
            for w in mk.workers
        ])
        self.query_one("#mk-objects", KeyedTable).sync(self._objects(tones))
        self._detail()

    # the detail pane: the highlighted row of the focused table, its message whole --------------------
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail()

    def on_descendant_focus(self) -> None:
        self._detail()

    def _detail(self) -> None:
        if self.frame is None:
            return
        pane = self.query_one("#mk-detail", Static)
        tones = self.tones
        mk = self.frame.view.multikueue
        focused = self.focused if isinstance(self.focused, KeyedTable) else None
        if focused is not None and focused.id == "mk-workers":
            w = next((x for x in mk.workers if x.name == focused.selected_key()), None)
            if w is not None:
                head = span("worker ", tones.muted)
                head.append(lit(w.name, "bold"))
                head.append("  ")
                head.append(tri(w.active, tones, "Active", "not Active"))
                head.end = "\n"
                rows = [("config", lit(w.config or "– none")), ("reason", lit(w.reason or "–")),
                        ("message", lit(w.message or "–"))]
                pane.update(Group(head, kv_grid(rows, tones.muted)))
                return
        checks = self.query_one("#mk-checks", KeyedTable)
        key = checks.selected_key()
        c = next((x for x in mk.checks if x.id == key), None) or next((x for x in mk.checks if not x.ok), None)
        if c is None:
            pane.update(Text("no checks evaluated: MultiKueue is not configured", style=tones.muted))
            return
        head = span(c.id, "bold")
        head.append("  ")
        head.append(lit(CHECK_TEXT.get(c.id, ""), tones.muted))
        head.append("  ")
        head.append(tri(c.ok, tones, "ok", "fail") if c.applicable else lit("n/a", tones.muted))
        head.end = "\n"
        pane.update(Group(head, kv_grid([("message", lit(c.message or "–"))], tones.muted)))

    def _objects(self, tones) -> list[Row]:
        rows = []
        s = self.session
        for ac in s.store.list(AdmissionCheck):
            if ac.spec.controller_name != MULTIKUEUE_CONTROLLER:
                continue
            active = ac.condition("Active")
            params = ac.spec.parameters
            state = tri(None if active is None else active.is_true, tones, "Active", "not Active")
            if params is not None and params.name:
                state.append(lit(f" · {params.kind} {params.name}", tones.muted))
            rows.append(Row(f"ac|{ac.name}", (lit("AdmissionCheck"), lit(ac.name), state),
                            RowMeta(kind="AdmissionCheck", name=ac.name)))
        for cfg in s.store.list(MultiKueueConfig):
            rows.append(Row(f"cfg|{cfg.name}", (lit("MultiKueueConfig"), lit(cfg.name),
                                                lit(f"workers: {', '.join(cfg.spec.clusters) or 'none'}")),
                            RowMeta(kind="MultiKueueConfig", name=cfg.name)))
        return rows
