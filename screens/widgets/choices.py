"""Form controls whose state reads without colour: every colour comes with a symbol.

Textual draws a radio button, a check box and a selection list's boxes with the same glyph on and
off and only changes its colour: in a screenshot, on a light theme or to a colour-blind operator the
chosen option is invisible. These draw ◉/○ and ☑/☐ instead. `ChoiceSet` keeps its highlight on the
chosen option: the arrows choose (as radio groups do elsewhere), and a set that opens with a later
option chosen highlights that option, not the first.
"""

from __future__ import annotations

from typing import TypeVar

from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import Checkbox, RadioButton, RadioSet, SelectionList
from textual.widgets.option_list import OptionDoesNotExist

T = TypeVar("T")

RADIO_ON, RADIO_OFF = "◉", "○"
CHECK_ON, CHECK_OFF = "☑", "☐"


class MarkedRadioButton(RadioButton):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._show_mark()

    def _show_mark(self) -> None:
        # ToggleButton draws its BUTTON_INNER glyph: an instance value per state shadows the class's one
        self.BUTTON_INNER = RADIO_ON if self.value else RADIO_OFF

    def watch_value(self) -> None:
        self._show_mark()
        super().watch_value()


class MarkedCheckbox(Checkbox):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._show_mark()

    def _show_mark(self) -> None:
        self.BUTTON_INNER = CHECK_ON if self.value else CHECK_OFF

    def watch_value(self) -> None:
        self._show_mark()
        super().watch_value()


class ChoiceSet(RadioSet):
    """A RadioSet whose highlight is always the chosen option: moving it chooses."""

    _following = False  # off while RadioSet mounts (it highlights its first option then)

    def on_mount(self) -> None:
        self.call_later(self._highlight_chosen)  # after RadioSet's own mount handler

    def _highlight_chosen(self) -> None:
        if self.pressed_index >= 0:
            self._selected = self.pressed_index  # Textual's highlight index (no public setter)
        self._following = True

    def _choose_highlighted(self) -> None:
        index = self._selected
        if not self._following or index is None:
            return
        button = self._nodes[index]
        if isinstance(button, RadioButton) and not button.value:
            button.value = True  # RadioSet turns the previous one off and posts Changed

    def action_next_button(self) -> None:
        super().action_next_button()
        self._choose_highlighted()

    def action_previous_button(self) -> None:
        super().action_previous_button()
        self._choose_highlighted()


class MarkedSelectionList(SelectionList[T]):
    """A SelectionList whose box shows ☑ or ☐ (Textual draws the same glyph for both)."""

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        segments = list(strip)
        # SelectionList draws [left side, inner glyph, right side, space, prompt…] for each option line,
        # the glyph being the toggle buttons' (Checkbox's class value: MarkedCheckbox only shadows it)
        if len(segments) < 4 or segments[1].text != Checkbox.BUTTON_INNER:
            return strip
        try:
            option = self.get_option_at_index(self.scroll_offset.y + y)
        except OptionDoesNotExist:
            return strip
        mark = CHECK_ON if option.value in self._selected else CHECK_OFF  # the list's own set of chosen values
        segments[1] = Segment(mark, segments[1].style, segments[1].control)
        return Strip(segments, strip.cell_length)
