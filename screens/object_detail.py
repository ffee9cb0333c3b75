"""9 Object detail (Enter on any row): the object's findings, conditions, related objects as links
(owner ↔ Workload ↔ queue ↔ node), and its YAML exactly as the source delivered it."""

from __future__ import annotations

import yaml
from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from taudash.engine.model import BY_KIND
from taudash.engine.rules.base import ObjRef
from taudash.engine.session import Frame, Session

from .base import DashScreen
from .filtering import RowMeta
from .format import condition_cell, finding_meta, objname, severity_cell
from .kueue_facts import kueue_facts
from .text import clean, lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

FINDING_COLS = [Col("sev", "severity", 10), Col("rule", "rule", 24), Col("message", "message", flex=True)]
COND_COLS = [Col("type", "type", 22), Col("status", "status", 9), Col("reason", "reason", 24), Col("message", "message", flex=True)]
REL_COLS = [Col("relation", "relation", 22), Col("kind", "kind", 18), Col("name", "name", flex=True, ident=True)]


class ObjectDetailScreen(DashScreen):
    TITLE_TEXT = "Object detail"
    AUTO_FOCUS = "#od-related"  # enter follows a link from here
    BINDINGS = [Binding("y", "yaml", "YAML", show=False)]
    HELP = """\
Object detail: one object as taudash sees it.

FINDINGS   every verdict about this object, with the next step.
CONDITIONS status.conditions: type, status, reason, message as published.
RELATED    linked objects: owner and owned objects, Workload ↔ LocalQueue ↔ ClusterQueue ↔ Cohort,
           flavors and their nodes, workspace ↔ namespace. enter follows a link.
YAML       the object exactly as the source delivered it (read-only; Secrets are never read).
y          jump to the YAML (the mouse wheel scrolls it)
esc        back"""

    def __init__(self, session: Session, ref: ObjRef, nav: str | None = None) -> None:
        super().__init__(session, nav)
        self.ref = ref
        self._yaml_source: object = None

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static(id="od-title", classes="tile")
            yield Section("FINDINGS", KeyedTable(FINDING_COLS, empty="✓ no findings about this object", id="od-findings"))
            yield Section("CONDITIONS", KeyedTable(COND_COLS, empty="no status.conditions", id="od-conditions"))
            yield Section("RELATED", KeyedTable(REL_COLS, empty="no related objects in the store", id="od-related"))
            yield Static(id="od-yaml-title", classes="section-heading")
            yield Static(id="od-yaml", classes="yaml")

    def action_yaml(self) -> None:
        self.query_one("#od-yaml-title", Static).scroll_visible(top=True, animate=False)

    def render_frame(self, frame: Frame) -> None:
        tones = self.tones
        ref = self.ref
        obj = self.session.get(ref.kind, ref.name, ref.namespace)
        title = span(f"{ref.kind} ", tones.heading)
        title.append(lit(objname(ref.namespace, ref.name), "bold"))
        if ref.kind not in BY_KIND:
            title.append("  — a resource type, not an object taudash stores", style=tones.muted)
        elif obj is None:
            title.append("  ✖ not in the store (deleted, or never read)", style=tones.warn)
        else:
            md = obj.metadata
            info = BY_KIND[ref.kind]
            title.append(lit(f"  {info.resource}", tones.muted))
            if md.generation:
                title.append(f" · generation {md.generation}", style=tones.muted)
            if md.deletion_timestamp:
                title.append(" · deleting since ", style=tones.warn)
                title.append(lit(md.deletion_timestamp, tones.warn))
                if md.finalizers:
                    title.append(lit(f" (finalizers: {', '.join(md.finalizers)})", tones.warn))
            if md.labels:
                title.append("\nlabels ", style=tones.muted)
                title.append(lit(", ".join(f"{k}={v}" for k, v in sorted(md.labels.items()))))
            for label, value in kueue_facts(obj):
                title.append(f"\n{label} ", style=tones.muted)
                title.append(lit(value))
        self.query_one("#od-title", Static).update(title)

        mine = [f for f in frame.view.findings
                if (f.object.kind, f.object.namespace or None, f.object.name) == (ref.kind, ref.namespace or None, ref.name)]
        rows = []
        for i, f in enumerate(mine):
            msg = lit(f.message)
            if f.hint:
                msg.append("  → ", style=tones.muted)
                msg.append(lit(f.hint, tones.accent))
            rows.append(Row(f"{i}|{f.rule}", (severity_cell(f.severity.value, tones), lit(f.rule), msg), finding_meta(f)))
        self.query_one("#od-findings", KeyedTable).sync(rows)
        conds = obj.conditions if obj is not None else []
        self.query_one("#od-conditions", KeyedTable).sync([
            Row(f"{i}|{c.type}", (lit(c.type), condition_cell(c.status, tones, c.type), lit(c.reason), lit(c.message)),
                RowMeta(text=f"{c.type} {c.reason} {c.message}"))
            for i, c in enumerate(conds)
        ])
        related = self.session.related(ref)
        self.query_one("#od-related", KeyedTable).sync([
            Row(f"{r.relation}|{r.ref.kind}|{r.ref.namespace}|{r.ref.name}",
                (lit(r.relation, tones.muted), lit(r.ref.kind), lit(objname(r.ref.namespace, r.ref.name))),
                RowMeta(kind=r.ref.kind, namespace=r.ref.namespace, name=r.ref.name, text=r.relation))
            for r in related
        ])
        src, raw, whole = self.session.yaml_source(ref.kind, ref.name, ref.namespace)
        if src is not self._yaml_source:  # re-render only when the object changed: keeps the scroll position
            self._yaml_source = src
            heading = span("YAML", tones.heading)
            if raw is None:
                heading.append("  not available (the object is not in the cluster view)", style=tones.muted)
                self.query_one("#od-yaml", Static).update("")
            else:
                heading.append("  read-only, as observed" if whole else
                               "  read-only: the fields taudash reads (no full copy is kept of this kind)",
                               style=tones.muted)
                text = clean(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=200), multiline=True)
                self.query_one("#od-yaml", Static).update(
                    Syntax(text, "yaml", theme="ansi_dark", background_color="default", word_wrap=True))
            self.query_one("#od-yaml-title", Static).update(heading)
