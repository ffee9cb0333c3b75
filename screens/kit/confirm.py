"""Confirmation for writes and for ending a run: names the exact targets; never a single key.

The focus starts on the safe answer, stated on its button ("Cancel", "Keep the run"), so Enter alone
changes nothing; confirming needs the operator to move to the confirm button first. With `typed`
(ending a workflow for good) the confirm button stays disabled until that text — the run's id — is
typed into the input, which has the focus; Enter there confirms only with the right text.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Static

from ..widgets.gated import TypedConfirm
from .text import lit


class ConfirmScreen(TypedConfirm[bool]):
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 90; max-width: 96%; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    ConfirmScreen Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    ConfirmScreen Button { margin-left: 2; }
    ConfirmScreen Input { margin-top: 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, title: str, targets: list[str], reversible: bool, *, typed: str | None = None,
                 confirm_label: str = "Confirm", cancel_label: str = "Cancel") -> None:
        super().__init__()
        self.title_text = title
        self.targets = targets
        self.reversible = reversible
        self.typed = typed
        self.confirm_label = confirm_label
        self.cancel_label = cancel_label

    def compose(self) -> ComposeResult:
        with Vertical():
            head = Text(end="")
            head.append(lit(self.title_text, "bold"))
            head.append("  (reversible)" if self.reversible else "  ⚠ NOT reversible", style="dim")
            yield Static(head)
            body = Text(end="")
            for t in self.targets:  # a target indented by the caller belongs to the one above it: no bullet
                body.append("\n  " if t[:1].isspace() else "\n  • ")
                body.append(lit(t))
            yield Static(body, id="confirm-targets")
            if self.typed is not None:
                yield Input(placeholder=f"type {self.typed} to enable {self.confirm_label}", id="confirm-typed",
                            select_on_focus=False)
            with Horizontal():
                yield Button(self.cancel_label, id="cancel", variant="primary")
                yield Button(self.confirm_label, id="confirm", variant="warning" if self.typed is None else "error",
                             disabled=self.typed is not None)

    def on_mount(self) -> None:
        if self.typed is not None:
            self.query_one("#confirm-typed", Input).focus()
        else:
            self.query_one("#cancel", Button).focus()

    def typed_ok(self) -> bool:
        return self.typed is None or self.query_one("#confirm-typed", Input).value.strip() == self.typed

    def confirmed(self) -> bool:
        return True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm" and self.typed_ok())

    def action_cancel(self) -> None:
        self.dismiss(False)
