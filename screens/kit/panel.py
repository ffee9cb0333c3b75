"""A read-only panel over the screen: a centred, bordered box that esc or q closes (the wait report, a node's
Pods). Confirmations are ConfirmScreen (confirm.py): they answer, a panel only shows."""

from __future__ import annotations

from textual.binding import Binding
from textual.screen import ModalScreen


class Panel(ModalScreen[None]):
    DEFAULT_CSS = """
    Panel { align: center middle; }
    Panel > Vertical {
        width: 110; max-width: 96%; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS = [Binding("escape", "close", "close"), Binding("q", "close", "close", show=False)]

    def action_close(self) -> None:
        self.dismiss(None)
