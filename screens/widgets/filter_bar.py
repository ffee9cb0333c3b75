"""The `/` filter input: one line above the footer, live as you type.

Enter keeps the filter and returns to the table; Esc clears it. Typing here never triggers the
screen keys (digits, q) because the Input consumes printable keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import events
from textual.message import Message
from textual.widgets import Input

PLACEHOLDER = "filter: text  kind:Job,RayJob  ns:eval*  label:k=v  sev:warn  rule:POOL   (enter keep · esc clear)"


class FilterBar(Input):
    DEFAULT_CSS = """
    FilterBar {
        height: 1;
        border: none;
        padding: 0 1;
        display: none;
        background: $boost;
    }
    FilterBar:focus { border: none; }
    FilterBar.-open { display: block; }
    """

    @dataclass
    class Applied(Message):
        """The filter text changed (live) or was confirmed."""

        raw: str
        done: bool

    def __init__(self) -> None:
        super().__init__(placeholder=PLACEHOLDER, id="filter-bar", compact=True)
        self.can_focus = False  # only while open: a hidden input must never swallow the screen's keys

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(self, current: str) -> None:
        self.value = current
        self.add_class("-open")
        self.can_focus = True
        self.focus()
        self.cursor_position = len(current)

    def close(self) -> None:
        self.remove_class("-open")
        self.can_focus = False

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Applied(event.value, done=False))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.close()
        self.post_message(self.Applied(event.value, done=True))

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            self.value = ""
            self.close()
            self.post_message(self.Applied("", done=True))
