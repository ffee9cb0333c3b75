"""DashScreen: what every dashboard screen shares — header, footer, filter, drill-down and back.

A screen never pulls data on its own schedule: the app hands it a `Frame` once per tick while it is
the visible screen, and on resume it renders the newest frame it missed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable

from taudash.engine.rules.base import ObjRef
from taudash.engine.session import Frame, Session

from ..widgets.filter_bar import FilterBar
from ..widgets.footer_bar import FooterBar
from ..widgets.header_bar import HeaderBar
from ..widgets.keyed_table import KeyedTable
from .filtering import RowMeta, parse_filter
from .messages import OpenObject
from .rowcache import RowCache
from .text import Tones, app_tones


class DashScreen(Screen):
    AUTO_FOCUS: ClassVar[str | None] = "KeyedTable"  # arrows and enter work at once; never the (hidden) filter input
    HELP: ClassVar[str] = ""  # what this screen answers and its own keys; shown by `?`
    # the `?` help's title for a screen the registry does not list (a detail, the wizard)
    TITLE_TEXT: ClassVar[str] = ""
    # the screen's own keys the footer names before the global ones, e.g. (("p", "Pods"),)
    FOOTER_KEYS: ClassVar[tuple[tuple[str, str], ...]] = ()
    # Composed in the background at start-up (app.py), a screen draws the newest frame then, so its first visit
    # is instant; a screen whose drawing is costly for the session (a walk of every Pod under its lock) waits.
    DRAW_WHEN_COMPOSED_HIDDEN: ClassVar[bool] = True

    DEFAULT_CSS = """
    DashScreen > .bottom-bars {
        dock: bottom;
        height: auto;
    }
    """

    BINDINGS = [
        Binding("slash", "filter", "filter", show=False),
        Binding("escape", "back", "back", show=False),
        Binding("o", "sort_next", "sort by the next column", show=False),
        Binding("O", "sort_reverse", "reverse the sort", show=False),
    ]

    def __init__(self, session: Session, nav: str | None = None) -> None:
        super().__init__()
        self.session = session
        self.nav = nav  # the registry entry (screens/registry.py) this screen belongs to: the footer marks it
        self.frame: Frame | None = None
        self._shown_signature: tuple | None = None  # what the screen shows now (see `show`)
        self._resumed_once = False
        self._row_caches: dict[str, RowCache] = {}
        # A screen starts "behind" the app's CSS, which makes Textual re-parse and re-apply the whole
        # stylesheet twice when the screen is first shown. Its widgets get their styles as they mount
        # (new CSS sources are parsed then), so it starts current instead.
        # (Textual internals: if the attribute goes away, the first visit is just slower.)
        try:
            app = self.app
        except RuntimeError:  # no running app (a screen built in a test): nothing to be current with
            return
        if hasattr(app, "_css_update_count") and hasattr(self, "_css_update_count"):
            self._css_update_count = app._css_update_count

    # composition -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield HeaderBar()
        with Vertical(classes="bottom-bars"):  # one docked stack: the filter line sits above the footer
            yield FilterBar()
            yield FooterBar(active=self.nav, keys=self.footer_keys())
        yield from self.compose_body()

    def footer_keys(self) -> tuple[tuple[str, str], ...]:
        """The screen's own keys the footer names (FOOTER_KEYS; a screen whose keys depend on what it shows
        answers here)."""
        return self.FOOTER_KEYS

    def compose_body(self) -> ComposeResult:  # pragma: no cover - every screen overrides
        yield from ()

    @property
    def tones(self) -> Tones:
        return app_tones(self.app)

    # data --------------------------------------------------------------------------------
    def show(self, frame: Frame) -> None:
        """Render one frame (called by the app on the visible screen only)."""
        self.frame = frame
        self.query_one(HeaderBar).show(frame)
        sig = self.frame_signature(frame)
        last = self._shown_signature
        if sig is not None and last is not None and sig[0] is last[0] and sig[1:] == last[1:]:
            return  # the same view, theme, size and staleness: what is on screen is already this frame
        self._shown_signature = sig
        self.render_frame(frame)

    def invalidate(self) -> None:
        """Render the next frame even if its signature is what is shown: data the screen reads outside the view
        (e.g. history read on a thread) has just arrived."""
        self._shown_signature = None

    def row_cache(self, name: str) -> RowCache:
        """The screen's row cache `name` (rows kept by the view object they show; see rowcache.py)."""
        cache = self._row_caches.get(name)
        if cache is None:
            cache = self._row_caches[name] = RowCache()
        return cache

    def frame_signature(self, frame: Frame) -> tuple | None:
        """What `render_frame` draws from, the view first (compared by identity: the session derives a
        new view only when the store changed). None always renders. Screens that draw time (history
        sparklines) add it."""
        problems = frame.freshness.problems
        return (frame.view, self.tones, self.size, problems, frame.now if problems else None)

    def render_frame(self, frame: Frame) -> None:  # pragma: no cover - every screen overrides
        pass

    def on_mount(self) -> None:
        if self.session.last_frame is None:
            return
        if not self.DRAW_WHEN_COMPOSED_HIDDEN and not self._is_on_screen():
            return  # its first visit renders the newest frame (on_screen_resume)
        try:
            self.show(self.session.last_frame)
        except NoMatches:
            # A screen composed in the background (app.py) whose widgets are not all there: the app began to
            # exit and is removing them. Its first visit renders the newest frame (on_screen_resume), so
            # nothing is lost; a screen on show missing its widgets is a real error.
            if self._is_on_screen():
                raise
            self.frame = None
            self._shown_signature = None

    def on_resize(self, event: events.Resize) -> None:
        # What a screen draws depends on its size (columns dropped, lines hidden): a resized terminal gets the
        # frame drawn for its new size now, not at the next tick (the signature holds the size).
        if self.frame is not None and self._is_on_screen():
            self.show(self.frame)

    def _is_on_screen(self) -> bool:
        try:
            return self.app.screen is self
        except Exception:  # noqa: BLE001 - no screen stack any more (the app is shutting down)
            return False

    def post_message(self, message: Message) -> bool:
        # Coming back to a screen (a number key) need not restyle every widget: nothing the CSS reads
        # changed while it was hidden (a theme change reaches it through Textual's CSS update count).
        # Restyling clears every table's rendered cells: at fleet scale that was most of a switch.
        # Textual skips it the same way when popping a screen off an opaque one.
        if isinstance(message, events.ScreenResume) and getattr(self, "_resumed_once", False):
            message.refresh_styles = False
        return super().post_message(message)

    def composed_off_screen(self) -> None:
        """The app composed and laid this screen out before its first visit (app.py, background
        composition): its widgets got their styles as they mounted, so its first resume need not restyle
        them either (a theme change since reaches it through Textual's CSS update count)."""
        self._resumed_once = True
        self._laid_out_hidden = True

    def on_screen_resume(self) -> None:
        if self.__dict__.pop("_laid_out_hidden", False):
            # Laid out once while hidden: a scrollbar that the first layout's content asked for appears
            # only in a later pass, which a hidden screen never gets. One more pass now (cheap: the
            # widgets exist; a table rebuilds only if its width changed).
            self.refresh(layout=True)
        self._resumed_once = True
        last = self.session.last_frame
        if last is not None and last is not self.frame:
            self.show(last)

    # filter ------------------------------------------------------------------------------
    @property
    def filter_table(self) -> KeyedTable | None:
        """The table `/` filters: the focused KeyedTable, else the screen's first one."""
        focused = self.focused
        if isinstance(focused, KeyedTable):
            return focused
        tables = list(self.query(KeyedTable))
        return tables[0] if tables else None

    def labels_of(self, meta: RowMeta) -> Mapping[str, str]:
        return self.session.labels(meta.kind, meta.name, meta.namespace) if meta.kind else {}

    def action_filter(self) -> None:
        table = self.filter_table
        if table is None:
            self.notify("this screen has no table to filter", severity="warning")
            return
        self._filter_target = table
        self.query_one(FilterBar).open(table.filter.raw)

    def on_filter_bar_applied(self, event: FilterBar.Applied) -> None:
        table = getattr(self, "_filter_target", None) or self.filter_table
        if table is None:
            return
        table.set_filter(parse_filter(event.raw), self.labels_of)
        if event.done:
            table.focus()

    def action_sort_next(self) -> None:
        table = self.filter_table
        if table is None:
            self.notify("this screen has no table to sort", severity="warning")
            return
        table.cycle_sort()
        self._sort_notice(table)

    def action_sort_reverse(self) -> None:
        table = self.filter_table
        if table is None:
            self.notify("this screen has no table to sort", severity="warning")
            return
        table.reverse_sort()
        self._sort_notice(table)

    def _sort_notice(self, table: KeyedTable) -> None:
        col = next((c.label for c in table.spec if c.key == table.sort_column), None)
        self.notify(f"sorted by {col or 'its column'} {'▼' if table.sort_reverse else '▲'}" if col
                    else "the screen's own order", timeout=2)

    def action_back(self) -> None:
        bar = self.query_one(FilterBar)
        if bar.is_open:
            bar.close()
            return
        table = self.filter_table
        if table is not None and table.filter.active:
            table.set_filter(parse_filter(""), self.labels_of)
            return
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    # drill-down --------------------------------------------------------------------------
    def open_meta(self, meta: RowMeta | None) -> None:
        if meta is None or not meta.kind or not meta.name:
            return
        self.post_message(OpenObject(ObjRef(kind=meta.kind, namespace=meta.namespace, name=meta.name)))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        table = event.data_table
        if isinstance(table, KeyedTable) and event.row_key.value is not None:
            event.stop()
            self.open_meta(table.meta(event.row_key.value))
