""":events — the core/v1 Events of a namespace (`:events NAMESPACE`; default: the kubeconfig context's, as
kubectl picks it) or of the whole cluster (`:events all`): type, reason, the object, message and age
as kubectl prints it, newest first; `/` filters. Listed then watched through the API while the screen shows
(engine/sources/ondemand.py); "forbidden (RBAC)" when they may not be read, never an empty list.
"""

from __future__ import annotations

from datetime import datetime

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from textual.worker import Worker

from taudash.engine.session import Frame, Session
from taudash.engine.sources.ondemand import FORBIDDEN, LOADING, NOT_FOUND, SYNCED, EventsState, ObjectEvent

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.format import kube_age
from .kit.text import Tones, lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

COLS = [
    Col("type", "type", 7),
    Col("reason", "reason", 18),
    Col("object", "object", 28, ident=True),
    Col("age", "age", 6, right=True),
    Col("count", "count", 5, right=True),
    Col("message", "message", flex=True),
]
ALL = "all"


class EventsScreen(DashScreen):
    TITLE_TEXT = "Events"
    HELP = """\
Events: the core/v1 Events of a namespace or of the cluster, newest first, watched while this screen shows.

:events            the namespace of the kubeconfig context ("default" when it names none, as kubectl)
:events NAMESPACE  that namespace's Events
:events all        every namespace's (the object column then names the namespace too)

type       Normal or Warning · reason: the controller's word for what happened
object     Kind/name the Event is about · age: since it last happened (as kubectl prints it)
count      how many times it happened (an Event repeated is counted, not repeated)
/          filter: type, reason, object or message text
o / O      sort by the next column / reverse it
Events expire after about an hour: an empty list is "no recent Events", not "nothing ever happened"."""
    DEFAULT_CSS = """
    EventsScreen #body { height: 1fr; }
    EventsScreen #body > Section { height: 1fr; }
    EventsScreen #body > Section > KeyedTable { height: 1fr; }
    """

    def __init__(self, session: Session, nav: str | None = None, namespace: str | None = None) -> None:
        super().__init__(session, nav)
        # the context's namespace, as kubectl picks it
        self.default_namespace: str = getattr(session.on_demand, "namespace", "") or "default"
        self.namespace: str = namespace or self.default_namespace  # ALL: every namespace
        self.state: EventsState | None = None
        self._worker: Worker | None = None

    def frame_signature(self, frame: Frame) -> tuple | None:
        return None  # drawn from the watch as much as from the view (ages move)

    def compose_body(self) -> ComposeResult:
        with Vertical(id="body"):
            yield Static(id="ev-note", classes="tile")
            yield Section("EVENTS", KeyedTable(COLS, empty="events: not asked yet", id="events"))

    def jump_to(self, arg: str) -> str:
        """`:events` (the context's namespace), `:events NAMESPACE` or `:events all`: the error to show, "" when
        done."""
        self.namespace = ALL if arg in (ALL, "-A", "*") else arg or self.default_namespace
        if self.is_mounted and self.state is not None and self.state.ref.name == (
                "" if self.namespace == ALL else self.namespace):
            return ""  # already watching it
        self.state = None
        if self.is_mounted:  # else showing it starts the watch
            self._watch()
            self._draw()
        return ""

    # the watch: while the screen shows (not while composed in the background) ------------
    def on_screen_suspend(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        if self._worker is None and self.is_mounted:
            self._watch()

    def _watch(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None
        od = self.session.on_demand
        if od is not None:
            self._worker = self._run(od, None if self.namespace == ALL else self.namespace)

    @work(exclusive=True, group="ns-events", exit_on_error=False, description="watch a namespace's Events")
    async def _run(self, od, namespace: str | None) -> None:
        await od.watch_namespace_events(namespace, self._arrived)

    def _arrived(self, st: EventsState) -> None:
        self.state = st
        if self.is_mounted:
            self._draw()

    def render_frame(self, frame: Frame) -> None:
        self._draw()

    def _draw(self) -> None:
        tones = self.tones
        table = self.query_one("#events", KeyedTable)
        where = "every namespace" if self.namespace == ALL else f"namespace {self.namespace}"
        note = span("Events of ", tones.muted)
        note.append(lit(where, "bold"))
        st = self.state
        rows: list[Row] = []
        if self.session.on_demand is None:
            why = f"{self.session.mode.lower()} source: no cluster to ask"
            table.empty_text = f"events: not available ({why})"
            note.append(f"  not available ({why})", style=tones.muted)
        elif st is None or st.access == LOADING:
            table.empty_text = "events: loading…"
            note.append("  loading…", style=tones.muted)
        elif st.access == FORBIDDEN:
            table.empty_text = "events: forbidden (RBAC) — this identity may not list Events here"
            note.append("  ⚠ forbidden (RBAC): ", style=tones.warn)
            note.append(lit(st.message, tones.warn))
        elif st.access == NOT_FOUND and not st.events:
            table.empty_text = f"events: not served by this cluster ({st.message})"
            note.append("  unknown", style=tones.muted)
        else:
            if st.access == SYNCED:
                table.empty_text = f"no recent Events in {where} (Events expire after ~1 h)"
                note.append(f"  watching · {len(st.events)} Events" +
                            (f" · {st.dropped} older not shown" if st.dropped else ""), style=tones.muted)
            else:
                table.empty_text = f"events: unknown — {st.message}"
                note.append(lit(f"  {st.access.lower()}: {st.message} (last known shown)", tones.warn))
            now = self.frame.now if self.frame is not None else datetime.now().astimezone()
            rows = [event_row(e, now, tones, self.namespace == ALL) for e in st.events]
        note.append("   :events NAMESPACE · :events all · / filter", style=tones.muted)
        self.query_one("#ev-note", Static).update(note)
        table.sync(rows)


def event_row(e: ObjectEvent, now: datetime, tones: Tones, with_namespace: bool) -> Row:
    style = tones.warn if e.type == "Warning" else ""
    obj = span(f"{e.namespace}/", tones.muted) if with_namespace and e.namespace else span("", "")
    obj.append(lit(e.involved or "?"))
    return Row(f"{e.namespace}/{e.name}", (
        lit(e.type, style), lit(e.reason, style), obj, kube_age(e.last, now), str(e.count), lit(e.message),
    ), RowMeta(namespace=e.namespace or None, text=f"{e.type} {e.reason} {e.involved} {e.message}"))
