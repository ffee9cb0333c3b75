"""`?` help: what the current screen answers and its keys, then the keys that work everywhere (the number keys
listed from the screens the app hands it: help imports no screen)."""

from __future__ import annotations

import re

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from taudash.engine.workflows import registry

from ..widgets.header_bar import HEADER_LEGEND
from .entries import Registry

GLOBAL_KEYS_TEMPLATE = """\
{numbers}
enter    drill down: workspace detail, object detail (conditions, related objects, YAML)
esc      back (and: close the filter, clear a filter)
/        filter the table: words, kind:Job,RayJob  ns:eval*  label:k=v  label:k  sev:warn  rule:POOL
?        this help
ctrl+p   palette: go to any screen or object by name (also the screens without a number key)
:        jump, k9s style: :cq  :wl NS/NAME  :ws NAME  :KIND [NS/]NAME  :q
o / O    sort the table by the next column / reverse it (or click a column header)
q        quit (ctrl+c too; both ask first while a workflow runs)
mouse    click rows, footer entries and overview tiles; scroll with the wheel

Reading the screen: ✓ ok · ⚠ warning · ✖ failing · ◐ in progress · ? unknown (never shown as 0).
No single key ever writes. Guided operations (9: {workflows})
start from a form, and every step asks for confirmation naming its exact targets; a destructive step
asks for the context name. A read-only session cannot start, resume or confirm one."""


def global_keys(screens: Registry) -> str:
    """The keys that work everywhere, the number keys listed from the app's screens."""
    keyed = screens.keyed()
    numbers = f"{keyed[0].key}–{keyed[-1].key}" if len(keyed) > 1 else "".join(e.key or "" for e in keyed)
    titles = " · ".join(e.title for e in keyed)
    workflows = ", ".join(w.label.lower() for w in registry.kinds())  # every registered workflow kind
    keys = GLOBAL_KEYS_TEMPLATE.format(numbers=f"{numbers:<8} {titles} (the current screen's number returns to its "
                                               "top level)",
                                       workflows=workflows)
    return f"{keys}\n\n{HEADER_LEGEND}"


_ENTRY = re.compile(r"^(\s{0,4})(\S+(?: \S+)*)\s{2,}(\S.*)$")


def help_renderable(text: str) -> RenderableType:
    """Help text as label/description grids, so descriptions wrap under themselves at any width.

    "LABEL  text" starts an entry, a more deeply indented line continues it; other lines are prose,
    joined into paragraphs (the source is hard-wrapped for reading, the screen re-wraps it).
    """
    parts: list[RenderableType] = []
    rows: list[list[str]] = []
    prose: list[str] = []

    def flush() -> None:
        if rows:
            grid = Table.grid(padding=(0, 2))
            grid.add_column(no_wrap=True, style="bold")
            grid.add_column()
            for label, value in rows:
                grid.add_row(Text(label), Text(value))
            parts.append(grid)
            rows.clear()
        if prose:
            parts.append(Text(" ".join(prose)))
            prose.clear()

    for line in text.splitlines():
        m = _ENTRY.match(line)
        if not line.strip():
            flush()
            parts.append(Text(""))
        elif m and (not line[0].isspace() or not rows or len(m.group(1)) < 6):
            if prose:
                flush()
            rows.append([m.group(1) + m.group(2), m.group(3)])
        elif line[0].isspace() and rows:
            rows[-1][1] += " " + line.strip()
        else:
            if rows:
                flush()
            prose.append(line.strip())
    flush()
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 100;
        max-width: 96%;
        height: auto;
        max-height: 90%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    HelpScreen .help-title { text-style: bold; color: $text-primary; margin-bottom: 1; }
    HelpScreen .help-global { margin-top: 1; color: $text-muted; }
    """

    BINDINGS = [
        Binding("escape", "dismiss_help", "close"),
        Binding("question_mark", "dismiss_help", "close"),
        Binding("q", "dismiss_help", "close"),
    ]

    def __init__(self, title: str, text: str, screens: Registry) -> None:
        super().__init__()
        self.help_title = title
        self.help_text = text
        self.screens = screens

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "help"
            box.border_subtitle = "esc / ? close"
            yield Static(Text(self.help_title), classes="help-title")
            yield Static(help_renderable(self.help_text or "no screen help"), id="help-screen-text")
            yield Static(help_renderable(global_keys(self.screens)), classes="help-global", id="help-global-text")

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
