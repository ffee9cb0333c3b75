"""A modal confirmation whose confirm button waits for a text to be typed (a context name, a run's id)."""

from __future__ import annotations

from typing import TypeVar

from textual.screen import ModalScreen
from textual.widgets import Button, Input

R = TypeVar("R")


class TypedConfirm(ModalScreen[R]):
    """A confirmation whose #confirm button waits for a text typed into its input (`typed_ok`): typing
    enables the button, and Enter in the input confirms only once the text is right."""

    def typed_ok(self) -> bool:
        return True

    def confirmed(self) -> R:
        raise NotImplementedError

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#confirm", Button).disabled = not self.typed_ok()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.typed_ok():
            self.dismiss(self.confirmed())
