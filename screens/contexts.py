"""`:ctx` — the kubeconfig's contexts, each probed in the background; Enter switches the dashboard to one.

The list comes from the kubeconfig alone (engine/sources/contexts.py); every visit probes each context once,
concurrently, on a connection of its own (GET /version), so one hung server never delays the others' rows.
Enter asks the app to switch (`SwitchContext`): the app opens a new session on that cluster — read-only
carried over, no workflow journal carried — and this screen is left behind with the old one.
"""

from __future__ import annotations

import asyncio
import os

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from taudash.engine.session import Frame, Session
from taudash.engine.sources.client import ConfigError
from taudash.engine.sources.contexts import CHECKING, REACHABLE, ContextEntry, Reach, contexts, probe

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.messages import SwitchContext
from .kit.text import lit, span
from .widgets.filter_bar import FilterBar
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

# The server says which cluster a context reaches: it keeps its width longest (the kubeconfig's cluster
# name, user and namespace give theirs first).
COLS = [Col("cur", "cur", 3), Col("name", "context", 16, ident=True), Col("reach", "reach", 17),
        Col("server", "server", 32, max_width=48), Col("user", "user", 8), Col("ns", "namespace", 9),
        Col("cluster", "cluster", 8)]


def seconds(s: float) -> str:
    return f"{s * 1000:.0f}ms" if s < 1 else f"{s:.1f}s"


class ContextsScreen(DashScreen):
    TITLE_TEXT = "Contexts"
    HELP = """\
Contexts: every context of the kubeconfig, and whether its API server answers (each probed once per
visit, on a connection of its own: GET /version within 5 s).

cur         ▶ the cluster this dashboard shows · * the kubeconfig's current-context
reach       ✓ reachable (how long the answer took) · ✖ unreachable (why: below the table) · ◐ checking…
enter       switch the dashboard to that context: a new session on its cluster; read-only mode stays on
            if anything asked for it here; workflow journals stay with the cluster they ran on
r           probe every context again
esc         back to the screen you came from
:ctx NAME   switch directly, from any screen"""

    BINDINGS = [("r", "probe", "probe again")]
    DEFAULT_CSS = """
    ContextsScreen #ctx-errors { padding: 0 1; }
    """

    def __init__(self, session: Session, kubeconfig: str | None, nav: str | None = None) -> None:
        super().__init__(session, nav)
        self.kubeconfig = kubeconfig
        self.entries: list[ContextEntry] = []
        self.reach: dict[str, Reach] = {}
        self.error = ""  # the kubeconfig could not be read

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static(id="ctx-title", classes="tile")
            yield Section("CONTEXTS", KeyedTable(COLS, empty="no contexts in the kubeconfig", id="contexts"))
            yield Static(id="ctx-errors")

    def on_mount(self) -> None:
        super().on_mount()
        self.action_probe()

    @property
    def shown_context(self) -> str:
        return self.session.source.context or ""

    def frame_signature(self, frame: Frame) -> tuple | None:
        return None  # the rows change as probes answer, not with the view

    def action_probe(self) -> None:
        try:
            self.entries = contexts(self.kubeconfig)
            self.error = ""
        except ConfigError as exc:
            self.entries, self.error = [], str(exc)
        self.reach = {e.name: Reach.checking() for e in self.entries}
        self.draw()
        if self.entries:
            self.run_worker(self._probe_all(), group="ctx-probe", exclusive=True, exit_on_error=False)

    async def _probe_all(self) -> None:
        async def one(name: str) -> None:
            self.reach[name] = await probe(name, self.kubeconfig)
            self.draw()

        await asyncio.gather(*(one(e.name) for e in self.entries))

    def render_frame(self, frame: Frame) -> None:
        self.draw()

    def draw(self) -> None:
        if not self.is_mounted:
            return
        tones = self.tones
        rows = []
        for e in self.entries:
            r = self.reach.get(e.name, Reach.checking())
            if r.state == REACHABLE:
                reach = tones.mark("ok", "reachable" + (f" {seconds(r.seconds)}" if r.seconds is not None else ""))
            elif r.state == CHECKING:
                reach = tones.mark("partial", "checking…")
            else:
                reach = tones.mark("bad", "unreachable")
            mark = ("▶" if e.name == self.shown_context else " ") + ("*" if e.current else "")
            cells = (lit(mark, "bold"), lit(e.name, "bold" if e.name == self.shown_context else ""), reach,
                     lit(e.server or "–"), lit(e.user or "–"), lit(e.namespace or "–"), lit(e.cluster or "–"))
            rows.append(Row(e.name, cells, RowMeta(name=e.name, text=f"{e.name} {e.server} {e.user} {r.state}")))
        self.query_one("#contexts", KeyedTable).sync(rows)
        title = span("KUBECONFIG ", tones.heading)
        title.append(lit(self.kubeconfig or ("$KUBECONFIG" if os.environ.get("KUBECONFIG") else "~/.kube/config")))
        title.append(lit(f" · the dashboard shows {self.shown_context or '?'}", tones.muted))
        switching = getattr(self.app, "switching", None)  # the app's switch under way (duck-typed: no app import)
        if switching:
            title.append(lit(f" · connecting to {switching} …", tones.partial))
        self.query_one("#ctx-title", Static).update(title)
        problems = [(n, r.error) for n, r in self.reach.items() if r.state not in (REACHABLE, CHECKING)]
        text = span("", "")
        if self.error:
            text.append(lit(self.error, tones.bad))
        for i, (name, why) in enumerate(problems):
            text.append(lit(("\n" if i else "") + f"✖ {name}: ", tones.bad))
            text.append(lit(why))
        self.query_one("#ctx-errors", Static).update(text)

    def action_back(self) -> None:
        """Esc: closes the filter first, then goes back to the screen `:ctx` was typed on (this list is a
        mode of its own, so there is nothing to pop)."""
        table = self.filter_table
        if self.query_one(FilterBar).is_open or (table is not None and table.filter.active):
            super().action_back()
            return
        self.post_message(SwitchContext(None))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        table = event.data_table
        if not isinstance(table, KeyedTable) or event.row_key.value is None:
            return
        event.stop()
        meta = table.meta(event.row_key.value)
        if meta is not None and meta.name:
            self.post_message(SwitchContext(meta.name))
