"""Column widths from content and the terminal width, and names folded onto more lines (pure: no Textual
here, so it is tested directly).

Each column wants its natural width: the widest cell of the rows on the page, or its label. When the
table is wider than that, the spare width goes to the flex columns (messages). When it is narrower,
width is taken back in this order, widest first within each stage:

1. flex columns (messages, reasons) down to their floor: they end in "…" and the pane below shows them whole;
2. the other plain columns down to their floor (`Col.width`, or their content when that is narrower);
3. columns that may hide (`Col.hide`: the higher, the sooner; 0 never), least important first, one by one
   until the rest fits — so a name is not folded while a column of less importance is still shown
   (k9s drops its wide columns at narrow widths); the width freed beyond that goes back to the others;
4. the identifying column (`Col.ident`: a queue, profile, workspace or object name) down to its floor —
   it is never cut: the table wraps it onto more lines instead (see keyed_table.py);
5. plain columns further, down to their label's first letters; past that the table scrolls sideways.

A hidden column has width 0 in the layout; the table leaves it out (its cells stay in the row for the filter,
the sort and the pane that explains the row).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rich.cells import cell_len
from rich.text import Text

PAD = 2  # a DataTable cell's padding: one space each side
IDENT_FLOOR = 16  # an identifying column narrower than this wraps too often to read
FLEX_FLOOR = 12
LAST_FLOOR = 3
LABEL_FLOOR = 5  # a label cut to this many cells still says which column it is ("ready…")


class ColSpec(Protocol):
    @property
    def label(self) -> str: ...
    @property
    def width(self) -> int: ...
    @property
    def flex(self) -> bool: ...
    @property
    def ident(self) -> bool: ...
    @property
    def max_width(self) -> int | None: ...
    @property
    def hide(self) -> int: ...


def content_widths(spec: Sequence[ColSpec], widths_per_row: Sequence[Sequence[int]]) -> list[int]:
    """The widest cell of each column among `widths_per_row` (each row's cell widths, in column order)."""
    out = [0] * len(spec)
    for row in widths_per_row:
        for i, w in enumerate(row[: len(out)]):
            if w > out[i]:
                out[i] = w
    return out


def natural_widths(spec: Sequence[ColSpec], widths_per_row: Sequence[Sequence[int]],
                   sorted_key: int | None = None) -> list[int]:
    """The natural width of each column: its widest cell, or its label (with room for the sort mark on
    the sorted one) when that is wider."""
    content = content_widths(spec, widths_per_row)
    return [max(w, len(c.label) + (2 if i == sorted_key else 0))
            for i, (c, w) in enumerate(zip(spec, content, strict=True))]


def _floor(c: ColSpec, want: int, content: int | None) -> int:
    if c.ident:
        return min(want, max(c.width, IDENT_FLOOR))
    if c.flex:
        return min(want, max(c.width, FLEX_FLOOR))
    if content is not None:  # a long label over short cells ("ready (first failing)" over "✓ Ready") gives way
        return min(want, c.width, max(content, LABEL_FLOOR))
    return min(want, c.width)


def _take(widths: list[int], idxs: list[int], floors: list[int], excess: int) -> int:
    """Take up to `excess` cells from the columns `idxs`, widest first, none below its floor; the rest."""
    while excess > 0:
        best, room = -1, 0
        for i in idxs:
            slack = widths[i] - floors[i]
            if slack > 0 and (best < 0 or widths[i] > widths[best]):
                best, room = i, slack
        if best < 0:
            return excess
        # Down to the next widest column (or the floor) in one step: a loop per cell is slow on wide tables.
        others = [widths[i] for i in idxs if i != best and widths[i] < widths[best]]
        step = min(excess, room, max(1, widths[best] - max(others, default=floors[best])))
        widths[best] -= step
        excess -= step
    return 0


def _hides(c: ColSpec) -> int:
    return 0 if c.ident or c.flex else getattr(c, "hide", 0)


def layout(spec: Sequence[ColSpec], natural: Sequence[int], avail: int,
           content: Sequence[int] | None = None) -> list[int]:
    """Content widths (padding excluded) for the columns of `spec` in a table `avail` cells wide, 0 for a column
    hidden; `content`: each column's widest cell without its label (a label may be cut, a cell may not)."""
    order = sorted((i for i, c in enumerate(spec) if _hides(c)), key=lambda i: (-_hides(spec[i]), -i))
    hidden: list[int] = []
    while True:
        keep = [i for i in range(len(spec)) if i not in hidden]
        widths, fits = _layout([spec[i] for i in keep], [natural[i] for i in keep], avail,
                               None if content is None else [content[i] for i in keep])
        if fits or not order:
            out = [0] * len(spec)
            for i, w in zip(keep, widths, strict=True):
                out[i] = w
            return out
        hidden.append(order.pop(0))


def _layout(spec: Sequence[ColSpec], natural: Sequence[int], avail: int,
            content: Sequence[int] | None) -> tuple[list[int], bool]:
    """The widths, and whether they fit once the flex and plain columns gave way (False: a name folds or
    the table scrolls)."""
    want = []
    for c, n in zip(spec, natural, strict=True):
        cap = c.max_width if c.max_width and not c.ident else None
        want.append(max(1, min(n, cap) if cap else n))
    widths = list(want)
    budget = avail - PAD * len(spec)
    excess = sum(widths) - budget
    if excess <= 0:
        flex = [i for i, c in enumerate(spec) if c.flex]
        if flex:  # spare width to the messages (the last one: the widest text, usually)
            widths[flex[-1]] += -excess
        return widths, True
    floors = [_floor(c, w, content[i] if content is not None else None)
              for i, (c, w) in enumerate(zip(spec, want, strict=True))]
    stages = (
        [i for i, c in enumerate(spec) if c.flex and not c.ident],
        [i for i, c in enumerate(spec) if not c.flex and not c.ident],
        [i for i, c in enumerate(spec) if c.ident],
    )
    for n, idxs in enumerate(stages):
        excess = _take(widths, idxs, floors, excess)
        if not excess:
            return widths, n < 2
    last = [min(w, max(LAST_FLOOR, min(len(c.label), 6))) for c, w in zip(spec, widths, strict=True)]
    _take(widths, [i for i, c in enumerate(spec) if not c.ident], last, excess)
    return widths, False


BREAK_AFTER = " -./_:,"  # a name wraps after one of these when it can, else at the column's edge
LEAD = " ├└│▾▸─"  # a tree's indentation and branches: continuation lines start under the name, not under them


def fold(text: Text, width: int) -> Text:
    """`text` cut into lines of at most `width` cells, joined by newlines, every character kept (a name is
    never shortened): a line ends after a separator past its first third when there is one, and the
    lines after the first start under the name (past a tree's indentation)."""
    if width < 1 or text.cell_len <= width:
        return text
    plain = text.plain
    lead = len(plain) - len(plain.lstrip(LEAD))
    indent = lead if lead <= width // 2 else 0
    cuts: list[int] = []
    start, used, last_break, room = 0, 0, -1, width
    for i, ch in enumerate(plain):
        w = cell_len(ch)
        if used + w > room and i > start:
            cut = last_break + 1 if last_break >= 0 and last_break + 1 - start > room // 3 else i
            if cell_len(plain[cut:i]) >= width - indent:
                cut = i  # the rest after the separator would not fit the next line either
            space = plain.rfind(" ", start, i)  # a word after the line's last space that fits a line of its own
            if space > start and plain[start:space].strip(LEAD):  # (a name after its kind) stays whole
                word_end = plain.find(" ", space + 1)
                if 0 < cell_len(plain[space + 1: len(plain) if word_end < 0 else word_end]) <= width - indent:
                    cut = space + 1
            cuts.append(cut)
            start, used, last_break, room = cut, cell_len(plain[cut:i]), -1, width - indent
            for j in range(cut, i):
                if plain[j] in BREAK_AFTER:
                    last_break = j
        used += w
        if ch in BREAK_AFTER:
            last_break = i
    lines = list(text.divide(cuts))
    pad = Text(" " * indent)
    out = Text("\n").join([lines[0], *(pad + line for line in lines[1:])] if indent else lines)
    out.end = text.end
    return out
