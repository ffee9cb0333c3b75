"""Text renderers for quantities: usage bars and sparklines (table cells, not widgets).

Unknown stays visibly unknown: a bar without a budget or a sparkline bucket without a sample is
drawn as dots/blank, never as an empty (zero) bar.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from ..kit.text import Tones

LEVELS = "▁▂▃▄▅▆▇█"


def bar(value: float | None, total: float | None, width: int, tones: Tones) -> Text:
    """`value` of `total` as a bar; over-full bars turn to the error colour and end with ⚠."""
    if value is None or total is None:
        return Text("·" * width, style=tones.unknown, end="")
    if total <= 0:
        if value <= 0:
            return Text("░" * width, style=tones.bar_empty, end="")
        return Text("█" * (width - 1) + "⚠", style=tones.bar_over, end="")
    frac = value / total
    if frac > 1:
        return Text("█" * (width - 1) + "⚠", style=tones.bar_over, end="")
    filled = min(width, max(0, round(frac * width)))
    if value > 0 and filled == 0:
        filled = 1  # something reserved is never drawn as nothing
    t = Text("█" * filled, style=tones.bar_fill, end="")
    t.append("░" * (width - filled), style=tones.bar_empty)
    return t


def sparkline(values: Sequence[float | None], tones: Tones, ceiling: float | None = None) -> Text:
    """One character per bucket; blank where no sample exists yet."""
    known = [v for v in values if v is not None]
    top = max([ceiling or 0.0, *known, 1.0])
    t = Text(end="")
    for v in values:
        if v is None:
            t.append(" ")
        else:
            idx = min(len(LEVELS) - 1, max(0, round(v / top * (len(LEVELS) - 1))))
            t.append(LEVELS[idx], style=tones.bar_over if ceiling and v > ceiling else tones.bar_fill)
    return t
