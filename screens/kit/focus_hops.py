"""Down past a table's last row (Up past its first) moves to the next (previous) table of the screen, as Tab
and Shift+Tab do: a screen of stacked tables reads as one list. Mixed into a DashScreen with `HOPS`, the ids
of its tables (and any other focusable pane, e.g. the YAML view) in order."""

from __future__ import annotations

from typing import ClassVar

from textual.actions import SkipAction
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import DataTable


class FocusHops:
    HOPS: ClassVar[tuple[str, ...]] = ()
    # Priority: a focused table would otherwise take the arrow and stop at its edge.
    HOP_BINDINGS: ClassVar[list[Binding]] = [
        Binding("down", "hop(1)", "next row / next table", show=False, priority=True),
        Binding("up", "hop(-1)", "previous row / previous table", show=False, priority=True),
    ]

    def hop_targets(self) -> list[Widget]:
        screen: Widget = self  # type: ignore[assignment]
        out = []
        for wid in self.HOPS:
            found = screen.query(f"#{wid}")
            if found and found.first().display and found.first().focusable:
                out.append(found.first())
        return out

    def action_hop(self, step: int) -> None:
        focused = self.focused  # type: ignore[attr-defined]
        targets = self.hop_targets()
        if focused not in targets:
            raise SkipAction()  # not one of ours (an input, a dialog): the key goes on as usual
        if isinstance(focused, DataTable):
            last = max(0, focused.row_count - 1)
            if (step > 0 and focused.cursor_row < last) or (step < 0 and focused.cursor_row > 0):
                (focused.action_cursor_down if step > 0 else focused.action_cursor_up)()
                return
        else:
            edge = getattr(focused, "at_edge", None)
            if edge is not None and not edge(step):
                focused.scroll_step(step)
                return
        i = targets.index(focused) + step
        if not 0 <= i < len(targets):
            return  # the first or last pane: stay
        nxt = targets[i]
        nxt.focus()
        if isinstance(nxt, DataTable) and nxt.row_count:
            nxt.move_cursor(row=0 if step > 0 else nxt.row_count - 1, animate=False)
