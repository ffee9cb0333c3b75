"""A titled block around one table: "WORKSPACES 3", or "WORKSPACES 1 of 3 · filter “eval”" while filtered."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ..kit.text import app_tones, lit, span
from .keyed_table import KeyedTable


class Section(Vertical):
    DEFAULT_CSS = """
    Section {
        height: auto;
        margin: 0 0 1 0;
    }
    Section > .section-title {
        height: 1;
        padding: 0 1;
    }
    Section > KeyedTable { margin: 0 1; }
    """

    def __init__(self, title: str, table: KeyedTable, note: str = "", *, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.heading = title
        self.note = note
        self.table = table
        self._count: tuple[int, int, str] = (0, 0, "")

    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), classes="section-title")
        yield self.table

    def _title_text(self) -> Text:
        tones = app_tones(self.app) if self.is_attached else None
        t = span(self.heading, tones.heading if tones else "bold")
        shown, total, raw = self._count
        if raw:
            t.append(f"  {shown} of {total} · filter “")
            t.append(lit(raw))
            t.append("”  (esc clears)")
        elif total:
            t.append(f"  {total}")
        if self.note:
            t.append(f"   {self.note}", style="dim")
        return t

    def on_mount(self) -> None:
        # The title's colours are baked into its Text: redraw it when the theme changes.
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._retitle())

    def _retitle(self) -> None:
        if self.is_attached:
            self.query_one(".section-title", Static).update(self._title_text())

    def set_note(self, note: str) -> None:
        if note != self.note:
            self.note = note
            self.query_one(".section-title", Static).update(self._title_text())

    def on_keyed_table_counted(self, event: KeyedTable.Counted) -> None:
        if event.table is not self.table:
            return
        event.stop()
        self._count = (event.shown, event.total, event.raw)
        self.query_one(".section-title", Static).update(self._title_text())
