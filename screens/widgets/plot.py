"""A small braille line/bar plot for time series (the History screen).

Each character cell holds 2×4 braille dots, so a plot `w` cells wide draws 2·w points per line. A
bucket without a sample draws nothing (a visible gap), never a zero; a plot whose series hold no
sample at all says so in words instead of drawing an empty frame. Colours come from the app theme
(`Tones`), and every series is named in the legend with its mark, so colour never carries meaning
alone. Rendering is pure text (`plot_lines`), which keeps SVG snapshots exact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from ..kit.text import Tones, app_tones, lit

BRAILLE = 0x2800
# dot bits by (column 0/1, row 0..3 from the top)
DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
AXIS = 7  # the y-axis labels and the axis line


@dataclass(frozen=True)
class Trace:
    label: str
    values: Sequence[float | None]
    tone: str = "bar_fill"  # a Tones field
    bars: bool = False  # filled from zero (counts) instead of a line


def nice_ceiling(value: float) -> float:
    """The axis top: 1, 2, 2.5 or 5 times a power of ten at or above `value` (at least 1)."""
    if value <= 1:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for m in (1, 2, 2.5, 5, 10):
        if m * power >= value:
            return m * power
    return 10 * power  # pragma: no cover - the loop always returns


def _fmt(v: float) -> str:
    if v >= 10_000:
        return f"{v / 1000:.0f}k"
    return f"{v:.0f}" if v == int(v) else f"{v:.1f}"


def time_label(ts: float, span: float) -> str:
    d = datetime.fromtimestamp(ts, UTC)
    return d.strftime("%H:%M") if span <= 86400 else d.strftime("%m-%d %H:%M")


def plot_lines(traces: Sequence[Trace], width: int, height: int, tones: Tones, *, start: float, end: float,
               unit: str = "", empty: str = "no samples recorded in this range") -> list[Text]:
    """`height` plot rows plus one x-axis row, `width` characters wide (the y axis included)."""
    cols = max(1, width - AXIS)
    known = [v for t in traces for v in t.values if v is not None]
    rows: list[Text] = []
    if not known:
        for i in range(height):
            line = lit(" " * (AXIS - 1) + "│", tones.muted)
            if i == height // 2:
                line.append(lit(f" {empty}", tones.unknown))
            rows.append(line)
        rows.append(_x_axis(cols, start, end, tones))
        return rows
    top = nice_ceiling(max(known))
    dots_y = height * 4
    n_x = cols * 2
    # cells[row][col] = (bits, trace index of the first trace that drew there)
    bits = [[0] * cols for _ in range(height)]
    owner = [[-1] * cols for _ in range(height)]
    for ti, trace in enumerate(traces):
        vals = list(trace.values)
        if not vals:
            continue
        prev: int | None = None
        ys: Iterable[int]
        for x in range(n_x):
            v = vals[min(len(vals) - 1, x * len(vals) // n_x)]
            if v is None:
                prev = None
                continue
            y = min(dots_y - 1, max(0, round(v / top * (dots_y - 1))))
            if trace.bars:
                ys = range(0, y + 1) if v > 0 else ()
            elif prev is None:
                ys = (y,)
            else:  # join to the previous point: a line, not scattered dots
                ys = range(min(prev, y), max(prev, y) + 1)
            prev = y
            for yy in ys:
                r = height - 1 - yy // 4
                c = x // 2
                bits[r][c] |= DOTS[x % 2][3 - yy % 4]
                if owner[r][c] < 0:
                    owner[r][c] = ti
    for r in range(height):
        label = _fmt(top) + unit if r == 0 else ("0" if r == height - 1 else "")
        line = lit(label.rjust(AXIS - 2)[: AXIS - 2] + " │", tones.muted)
        run_style: Style | None = None
        run = ""
        for c in range(cols):
            ch = chr(BRAILLE + bits[r][c]) if bits[r][c] else " "
            style = tones.of(traces[owner[r][c]].tone) if owner[r][c] >= 0 else None
            if style != run_style and run:
                line.append(run, style=run_style)
                run = ""
            run_style = style
            run += ch
        if run:
            line.append(run, style=run_style)
        rows.append(line)
    rows.append(_x_axis(cols, start, end, tones))
    return rows


def _x_axis(cols: int, start: float, end: float, tones: Tones) -> Text:
    left, right = time_label(start, end - start), time_label(end, end - start) + " UTC"
    mid = time_label((start + end) / 2, end - start)
    inner = cols - len(left) - len(right)
    if inner >= len(mid) + 2:
        pad = inner - len(mid)
        body = left + " " * (pad // 2) + mid + " " * (pad - pad // 2) + right
    else:
        body = (left + " " * max(1, inner) + right)[:cols]
    return lit(" " * (AXIS - 2) + " └" + body, tones.muted)


def legend(traces: Sequence[Trace], tones: Tones) -> Text:
    t = Text(end="")
    for i, trace in enumerate(traces):
        if i:
            t.append("  ")
        t.append("▇ " if trace.bars else "━ ", style=tones.of(trace.tone))
        t.append(lit(trace.label))
    return t


class Plot(Widget):
    """A titled plot: a title line with the legend, `rows` plot rows and a time axis."""

    DEFAULT_CSS = """
    Plot {
        height: auto;
        margin: 0 1 1 1;
        text-wrap: nowrap;
        text-overflow: clip;
    }
    """

    def __init__(self, rows: int = 6, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.rows = rows
        self.title: Text = Text()
        self.traces: list[Trace] = []
        self.start = 0.0
        self.end = 1.0
        self.unit = ""
        self.styles.height = rows + 2

    def set_data(self, title: Text | str, traces: list[Trace], start: float, end: float, unit: str = "") -> None:
        self.title = title if isinstance(title, Text) else lit(title)
        self.traces, self.start, self.end, self.unit = traces, start, end, unit
        self.refresh()

    def render(self) -> Text:
        tones = app_tones(self.app)
        head = self.title.copy()
        if self.traces:
            head.append("   ")
            head.append(legend(self.traces, tones))
        head.truncate(self.size.width, overflow="ellipsis")
        lines = [head, *plot_lines(self.traces, self.size.width, self.rows, tones, start=self.start, end=self.end,
                                   unit=self.unit)]
        return Text("\n", end="", no_wrap=True, overflow="crop").join(lines)
