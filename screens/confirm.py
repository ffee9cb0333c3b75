"""Confirmation for writes (guided operations, issue 9): names the exact targets; never a single key.

Enter on the focused "Cancel" button is the default; confirming needs the operator to move to
"Confirm" first, so no read key next to it can write by accident.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from .text import lit


class ConfirmScreen(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 90; max-width: 96%; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    ConfirmScreen Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    ConfirmScreen Button { margin-left: 2; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, title: str, targets: list[str], reversible: bool) -> None:
        super().__init__()
        self.title_text = title
        self.targets = targets
        self.reversible = reversible

    def compose(self) -> ComposeResult:
        with Vertical():
            head = Text(end="")
            head.append(lit(self.title_text, "bold"))
            head.append("  (reversible)" if self.reversible else "  ⚠ NOT reversible", style="dim")
            yield Static(head)
            body = Text(end="")
            for t in self.targets:
                body.append("\n  • ")
                body.append(lit(t))
            yield Static(body, id="confirm-targets")
            with Horizontal():
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button("Confirm", id="confirm", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm")

    def action_cancel(self) -> None:
        self.dismiss(False)
