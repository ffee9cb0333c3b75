"""9 Object detail (Enter on any row): the object's findings, conditions, related objects as links
(owner ↔ Workload ↔ queue ↔ node), its Events (watched on demand while the screen shows) and its YAML —
as the source delivered it, or whole (a GET on `y`) for the kinds kept slim."""

from __future__ import annotations

from datetime import UTC, datetime

import yaml
from rich.console import Group
from rich.syntax import Syntax
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static
from textual.worker import Worker

from taudash.engine.model import BY_KIND
from taudash.engine.pod_list import PodScope
from taudash.engine.rules.base import ObjRef
from taudash.engine.session import Frame, Session
from taudash.engine.sources.ondemand import FORBIDDEN, LOADING, NOT_FOUND, SYNCED, EventsState, FullObject

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.focus_hops import FocusHops
from .kit.format import condition_cell, finding_meta, kv_grid, objname, severity_cell
from .kit.kueue_facts import kueue_facts
from .kit.messages import OpenLogs, OpenPods
from .kit.text import clean, lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

FINDING_COLS = [Col("sev", "severity", 10), Col("rule", "rule", 24), Col("message", "message", flex=True)]
COND_COLS = [Col("type", "type", 22), Col("status", "status", 9), Col("reason", "reason", 24),
             Col("message", "message", flex=True)]
REL_COLS = [Col("relation", "relation", 22), Col("kind", "kind", 18), Col("name", "name", flex=True, ident=True)]
EVENT_COLS = [Col("type", "type", 9), Col("reason", "reason", 24), Col("age", "age", 7, right=True),
              Col("count", "count", 6, right=True), Col("message", "message", flex=True)]
POD_SCOPES = ("Workload", "Node", "Namespace", "ClusterQueue", "LocalQueue")  # kinds `p` lists the Pods of
PARTIAL = "partial: the fields taudash reads — press y for the full object"


def age(then: datetime | None, now: datetime) -> str:
    """kubectl-style age: 45s, 12m, 3h, 2d."""
    if then is None:
        return "?"
    s = max(0, int((now - then).total_seconds()))
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h" if s < 172800 else f"{s // 86400}d"


class YamlView(Vertical, can_focus=True):
    """The YAML under its heading: focusable, so PageDown/End and the arrows scroll it (the screen body) while it
    has focus; focusing it brings its heading to the top of the view."""

    BINDINGS = [
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("space", "page(1)", "page down", show=False),
        Binding("home", "home", "top of the YAML", show=False),
        Binding("end", "end", "end of the YAML", show=False),
    ]
    DEFAULT_CSS = """
    YamlView { height: auto; }
    YamlView > #od-yaml-title { height: auto; }
    YamlView:focus > .yaml { background: $boost; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="od-yaml-title", classes="section-heading")
        yield Static(id="od-yaml", classes="yaml")

    @property
    def body(self) -> VerticalScroll:
        return self.screen.query_one("#body", VerticalScroll)

    def on_focus(self) -> None:
        self.action_home()  # scrolling follows focus: the YAML comes into view from its heading

    def action_page(self, step: int) -> None:
        (self.body.scroll_page_down if step > 0 else self.body.scroll_page_up)(animate=False)

    def action_home(self) -> None:
        self.body.scroll_to(y=self.virtual_region.y, animate=False, immediate=True)

    def action_end(self) -> None:
        self.body.scroll_end(animate=False, immediate=True)

    def at_edge(self, step: int) -> bool:
        """Up with the YAML's heading at the top of the view leaves for the table above (FocusHops)."""
        if step > 0:
            return False  # down scrolls until the end; the YAML is the last pane
        return self.body.scroll_y <= self.virtual_region.y

    def scroll_step(self, step: int) -> None:
        self.body.scroll_relative(y=step, animate=False, immediate=True)


class ObjectDetailScreen(FocusHops, DashScreen):
    TITLE_TEXT = "Object detail"
    AUTO_FOCUS = "#od-related"  # enter follows a link from here
    HOPS = ("od-findings", "od-conditions", "od-related", "od-events", "od-yaml-view")
    BINDINGS = [
        Binding("y", "yaml", "YAML (whole)", show=False),
        Binding("c", "copy_name", "copy the name", show=False),
        Binding("C", "copy_yaml", "copy the YAML", show=False),
        Binding("p", "pods", "Pods", show=False),
        Binding("l", "logs", "logs", show=False),
        *FocusHops.HOP_BINDINGS,
    ]
    HELP = """\
Object detail: one object as taudash sees it.

FINDINGS   every verdict about this object, with the next step.
CONDITIONS status.conditions: type, status, reason, message as published.
RELATED    linked objects: owner and owned objects, Workload ↔ LocalQueue ↔ ClusterQueue ↔ Cohort,
           flavors and their nodes, workspace ↔ namespace. enter follows a link.
EVENTS     the object's core/v1 Events, newest first (type, reason, age, count, message), watched while
           this screen shows; "forbidden (RBAC)" when they may not be read — never an empty list.
YAML       the object as the source delivered it (read-only; Secrets are never read). Workloads, Jobs,
           Nodes and CSINodes are kept slim: marked partial until y fetches the whole object (a GET).
y          the YAML: focus it, and fetch the whole object when only the fields taudash reads are shown
c / C      copy the object's name / its YAML to the clipboard (OSC 52: works over ssh in most terminals)
p          the object's Pods (a Workload, Node, Namespace, ClusterQueue or LocalQueue)
l          a Pod's log (follow, previous container, wrap, timestamps, search, save)
tab        next pane (tables, YAML); down past a table's last row moves to the next one, up goes back
pgdn/end   scroll whatever has focus: the YAML when it has focus, else the table
esc        back"""

    def __init__(self, session: Session, ref: ObjRef, nav: str | None = None) -> None:
        super().__init__(session, nav)
        self.ref = ref
        self._yaml_source: object = None
        self._yaml_text = ""  # the YAML on screen (what C copies)
        self._yaml_whole = False
        self.full: FullObject | None = None  # the whole object, once y fetched it
        self.fetching = False
        self.events: EventsState | None = None  # None: not asked (yet), or no cluster to ask
        self._events_worker: Worker | None = None

    def footer_keys(self) -> tuple[tuple[str, str], ...]:
        if self.ref.kind == "Pod":
            return (("l", "logs"),)
        return (("p", "Pods"),) if self.ref.kind in POD_SCOPES else ()

    def action_pods(self) -> None:
        if self.ref.kind not in POD_SCOPES:
            self.notify(f"p lists the Pods of a {', '.join(POD_SCOPES)}; this is a {self.ref.kind}", markup=False)
            return
        self.post_message(OpenPods(PodScope(self.ref.kind, self.ref.name, self.ref.namespace)))

    def action_logs(self) -> None:
        if self.ref.kind != "Pod":
            self.notify("l reads a Pod's log: open a Pod (p lists this object's Pods)", markup=False)
            return
        pod = self.session.get("Pod", self.ref.name, self.ref.namespace)
        containers = tuple(c.name for c in pod.spec.containers) if pod is not None else ()
        self.post_message(OpenLogs(self.ref, containers))

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static(id="od-title", classes="tile")
            yield Section("FINDINGS",
                          KeyedTable(FINDING_COLS, empty="✓ no findings about this object", id="od-findings"))
            yield Section("CONDITIONS", KeyedTable(COND_COLS, empty="no status.conditions", id="od-conditions"))
            yield Section("RELATED", KeyedTable(REL_COLS, empty="no related objects in the store", id="od-related"))
            yield Section("EVENTS", KeyedTable(EVENT_COLS, empty="events: not asked yet", id="od-events"),
                          id="od-events-section")
            yield Static(id="od-event-detail", classes="detail")
            yield YamlView(id="od-yaml-view")

    # events: watched while the screen shows --------------------------------------------------
    def on_mount(self) -> None:
        super().on_mount()
        self._watch_events()

    def on_screen_suspend(self) -> None:
        # Another screen on top (a related object, help): stop watching until this one shows again.
        if self._events_worker is not None:
            self._events_worker.cancel()
            self._events_worker = None

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        if self._events_worker is None and self.is_mounted:
            self._watch_events()

    def _watch_events(self) -> None:
        od = self.session.on_demand
        obj = self.session.get(self.ref.kind, self.ref.name, self.ref.namespace)
        if od is None or self.ref.kind not in BY_KIND:
            self._show_events()
            return
        uid = obj.metadata.uid if obj is not None else None
        self._events_worker = self._run_events(od, uid)

    @work(exclusive=True, group="od-events", exit_on_error=False, description="watch the object's Events")
    async def _run_events(self, od, uid: str | None) -> None:
        await od.watch_events(self.ref, uid, self._events_arrived)

    def _events_arrived(self, st: EventsState) -> None:
        self.events = st
        if self.is_mounted:
            self._show_events()

    def _show_events(self) -> None:
        tones = self.tones
        table = self.query_one("#od-events", KeyedTable)
        section = self.query_one("#od-events-section", Section)
        st = self.events
        now = self.frame.now if self.frame is not None else datetime.now().astimezone()
        rows: list[Row] = []
        if self.session.on_demand is None:
            why = f"{self.session.mode.lower()} source: no cluster to ask"
            table.empty_text = f"events: not available ({why})"
            section.set_note("not available")
        elif st is None or st.access == LOADING:
            table.empty_text = "events: loading…"
            section.set_note("loading…")
        elif st.access == FORBIDDEN:
            table.empty_text = "events: forbidden (RBAC) — this identity may not list Events here"
            section.set_note("forbidden (RBAC)")
        elif st.access == NOT_FOUND and not st.events:
            table.empty_text = f"events: not served by this cluster ({st.message})"
            section.set_note("unknown")
        else:
            if st.access == SYNCED:
                table.empty_text = "no events for this object (Events expire after ~1 h)"
                section.set_note("watching" + (f" · {st.dropped} older not shown" if st.dropped else ""))
            else:
                table.empty_text = f"events: unknown — {st.message}"
                section.set_note(f"{st.access.lower()}: {st.message} (last known shown)")
            for e in st.events:
                style = tones.warn if e.type == "Warning" else ""
                rows.append(Row(e.name, (lit(e.type, style), lit(e.reason, style), age(e.last, now), str(e.count),
                                         lit(e.message)), RowMeta(text=f"{e.type} {e.reason} {e.message}")))
        table.sync(rows)
        self._event_detail()

    # the highlighted Event, whole (its message is cut in the table) ----------------------------------------
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "od-events":
            self._event_detail()

    def on_descendant_focus(self) -> None:
        self._event_detail()

    def on_descendant_blur(self) -> None:
        self._event_detail()

    def _event_detail(self) -> None:
        pane = self.query_one("#od-event-detail", Static)
        table = self.query_one("#od-events", KeyedTable)
        key = table.selected_key() if self.focused is table else None
        e = next((x for x in self.events.events if x.name == key), None) if self.events is not None and key else None
        pane.display = e is not None
        if e is None:
            return
        tones = self.tones
        head = span(f"{e.type} ", tones.warn if e.type == "Warning" else tones.muted)
        head.append(lit(e.reason, "bold"))
        head.append(lit(f"  ×{e.count} · from {e.source or '?'}", tones.muted))
        when = " → ".join(dict.fromkeys(t.strftime("%Y-%m-%d %H:%M:%S UTC") for t in (e.first, e.last)
                                        if t is not None))
        head.end = "\n"
        pane.update(Group(head, kv_grid([("message", lit(e.message)), ("seen", lit(when or "?"))], tones.muted)))

    # YAML: whole on demand ---------------------------------------------------------------------
    def action_yaml(self) -> None:
        self.query_one("#od-yaml-view", YamlView).focus()
        if self._yaml_whole or self.fetching or self.ref.kind not in BY_KIND:
            return
        od = self.session.on_demand
        if od is None:
            self.notify(f"the whole object cannot be fetched: {self.session.mode.lower()} source, no cluster to ask",
                        severity="warning", markup=False)
            return
        self.fetching = True
        self._yaml_source = None
        self._render_yaml()
        self._fetch_full(od)

    @work(exclusive=True, group="od-full", exit_on_error=False, description="GET the whole object")
    async def _fetch_full(self, od) -> None:
        try:
            full = await od.full_object(self.ref)
        finally:
            self.fetching = False
        self.full = full
        self._yaml_source = None
        if self.is_mounted:
            self._render_yaml()
            if full.access != SYNCED:
                self.notify(f"the whole object was not read: {full.access} — {full.message}", severity="warning",
                            markup=False)

    def _render_yaml(self) -> None:
        tones = self.tones
        ref = self.ref
        src, raw, whole = self.session.yaml_source(ref.kind, ref.name, ref.namespace)
        full = self.full
        key = (id(src), id(full), self.fetching, tones)
        last = self._yaml_source
        if isinstance(last, tuple) and last[0] is src and last[1] == key:
            return  # re-render only when the object changed: keeps the scroll position
        self._yaml_source = (src, key)  # (the object is kept so its id is not reused meanwhile)
        heading = span("YAML", tones.heading)
        doc = raw
        if full is not None and full.access == SYNCED and full.document is not None:
            doc, whole = full.document, True
            stamp = datetime.fromtimestamp(full.fetched_at or 0, UTC).strftime("%H:%M:%S UTC")
            heading.append(f"  read-only, the whole object (GET at {stamp}; y fetches it again)",
                           style=tones.muted)
            self._yaml_whole = False  # y fetches a fresh copy
        elif raw is None:
            heading.append("  not available (the object is not in the cluster view)", style=tones.muted)
            doc = None
        elif whole:
            heading.append("  read-only, as observed", style=tones.muted)
        else:
            heading.append("  " + PARTIAL, style=tones.warn)
            if self.fetching:
                heading.append("  · fetching…", style=tones.muted)
            elif full is not None:
                heading.append(lit(f"  · the whole object: {full.access.lower()} ({full.message})", tones.bad))
        if not (full is not None and full.access == SYNCED):
            self._yaml_whole = whole
        view = self.query_one("#od-yaml", Static)
        if doc is None:
            self._yaml_text = ""
            view.update("")
        else:
            text = clean(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=200), multiline=True)
            self._yaml_text = text
            dark = self.app.current_theme.dark if self.app.current_theme is not None else True
            view.update(Syntax(text, "yaml", theme="ansi_dark" if dark else "ansi_light", background_color="default",
                               word_wrap=True))
        self.query_one("#od-yaml-title", Static).update(heading)

    # copy (OSC 52) -----------------------------------------------------------------------------
    def action_copy_name(self) -> None:
        self.app.copy_to_clipboard(self.ref.name)
        self.notify(f"copied the name “{self.ref.name}” to the clipboard"
                    + (f" (namespace {self.ref.namespace})" if self.ref.namespace else ""), markup=False, timeout=3)

    def action_copy_yaml(self) -> None:
        if not self._yaml_text:
            self.notify("nothing to copy: no YAML for this object", severity="warning", markup=False)
            return
        self.app.copy_to_clipboard(self._yaml_text)
        lines = self._yaml_text.count("\n")
        what = "whole" if (self.full is not None and self.full.access == SYNCED) or self._yaml_whole else "partial"
        self.notify(f"copied the YAML of {self.ref.kind} {objname(self.ref.namespace, self.ref.name)} "
                    f"({lines} lines, {what}) to the clipboard", markup=False, timeout=3)

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
                if (f.object.kind, f.object.namespace or None, f.object.name)
                == (ref.kind, ref.namespace or None, ref.name)]
        rows = []
        for i, f in enumerate(mine):
            msg = lit(f.message)
            if f.hint:
                msg.append("  → ", style=tones.muted)
                msg.append(lit(f.hint, tones.accent))
            rows.append(Row(f"{i}|{f.rule}", (severity_cell(f.severity.value, tones), lit(f.rule), msg),
                            finding_meta(f)))
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
        self._render_yaml()
        self._show_events()
