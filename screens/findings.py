"""8 Findings: everything the rules found, most severe first; filter by severity (s) or any term (/)."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from taudash.engine.session import Frame

from .kit.base import DashScreen
from .kit.filtering import parse_filter
from .kit.format import kv_grid, ref_text, severity_cell
from .kit.presenters import FINDING_COLS, finding_key, finding_rows
from .kit.text import lit
from .widgets.keyed_table import KeyedTable
from .widgets.section import Section

SEVERITY_CYCLE = ("", "critical", "warning", "info")


class FindingsScreen(DashScreen):
    HELP = """\
Findings: every verdict the rules reached, most severe first (critical, warning, info), each naming
the object it is about. The pane below shows the highlighted finding's message and next step.

s       cycle the severity filter: all → critical → warning → info
/       filter: sev:warn  rule:POOL  kind:ClusterQueue  ns:eval  or any text
o / O   sort by the next column / reverse it (a header click too); past the last column: by severity
enter   open the finding's object (conditions, related objects, YAML)"""

    BINDINGS = [Binding("s", "cycle_severity", "severity", show=False)]

    # A short table takes the height of its rows and the pane explaining the highlighted row the rest (a
    # tall terminal shows it whole); a long one stops at 60 percent of the screen and scrolls.
    DEFAULT_CSS = """
    FindingsScreen .fit { height: auto; margin: 0; }
    FindingsScreen .fit > KeyedTable { height: auto; max-height: 60vh; }
    FindingsScreen .detail-fill { height: 1fr; scrollbar-size-vertical: 1; }
    """

    def compose_body(self) -> ComposeResult:
        with Vertical(id="body"):
            yield Static(id="fd-counts", classes="tile")
            yield Section("FINDINGS", KeyedTable(FINDING_COLS, empty="✓ no findings", id="all-findings"), classes="fit")
            with VerticalScroll(classes="detail-fill"):
                yield Static(id="fd-detail", classes="detail")

    def render_frame(self, frame: Frame) -> None:
        tones = self.tones
        c = frame.view.counts()
        t = Text(end="")
        t.append(severity_cell("critical", tones))
        t.append(f" {c['critical']}   ")
        t.append(severity_cell("warning", tones))
        t.append(f" {c['warning']}   ")
        t.append(severity_cell("info", tones))
        t.append(f" {c['info']}")
        t.append("      s: severity filter · /: rule:, kind:, ns:, text", style=tones.muted)
        self.query_one("#fd-counts", Static).update(t)
        table = self.query_one("#all-findings", KeyedTable)
        table.sync(finding_rows(frame.view, tones, self.row_cache("findings")))
        self._detail(table.selected_key())

    def action_cycle_severity(self) -> None:
        table = self.query_one("#all-findings", KeyedTable)
        terms = table.filter.raw.split()
        current = next((x.split(":", 1)[1] for x in terms if x.startswith("sev:")), "")
        nxt = (SEVERITY_CYCLE[(SEVERITY_CYCLE.index(current) + 1) % len(SEVERITY_CYCLE)] if current in SEVERITY_CYCLE
               else "")
        terms = [x for x in terms if not x.startswith("sev:")] + ([f"sev:{nxt}"] if nxt else [])
        table.set_filter(parse_filter(" ".join(terms)), self.labels_of)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail(event.row_key.value)

    def _by_key(self) -> dict:
        if self.frame is None:
            return {}
        view = self.frame.view
        cached = self.__dict__.get("_findings_by_key")
        if cached is None or cached[0] is not view:  # once per view, not a scan per highlight
            cached = self._findings_by_key = (view, {finding_key(f): f for f in reversed(view.findings)})
        return cached[1]

    def _detail(self, key: str | None) -> None:
        pane = self.query_one("#fd-detail", Static)
        f = self._by_key().get((key or "").rstrip("+")) if self.frame else None
        if f is None:
            pane.update("")
            return
        tones = self.tones
        t = Text()
        t.append(severity_cell(f.severity.value, tones))
        t.append("  ")
        t.append(lit(f.rule, "bold"))
        t.append("  ")
        t.append(ref_text(f.object))
        rows = [("finding", lit(f.message))]
        if f.hint:
            rows.append(("next step", lit(f.hint, tones.accent)))
        pane.update(Group(t, kv_grid(rows, tones.muted)))
