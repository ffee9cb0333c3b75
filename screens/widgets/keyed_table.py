"""A DataTable whose rows are keyed by object and updated in place every tick.

Why not clear-and-refill: that loses the operator's selection and scroll position once a second.
`sync()` diffs against the rows on screen inside `batch_update()`: stale keys removed, new keys added,
only changed cells updated, order restored only when it changed (stable: the caller sorts).

Column widths come from the rows on the page (never from every row: a table holds one page) and the
table's width (columns.py): messages take the spare width, the identifying column (`Col.ident`) is never
cut — a name wider than its column wraps onto a taller row. While a page is shown widths only grow, so
the layout does not jitter as data changes; a resize, another page, filter or sort lays it out afresh.
When the table has room to spare below its rows (a tall terminal), long messages wrap onto as many
lines as let every row fit.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.css.scalar import Unit
from textual.events import Resize
from textual.geometry import Region, Spacing
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, RowDoesNotExist, RowKey

from ..kit.filtering import Filter, LabelsOf, RowMeta
from ..kit.text import lit
from .columns import content_widths, fold, layout, natural_widths

EMPTY_KEY = "\x00empty"  # the placeholder row shown when there is nothing to list
MORE_KEY = "\x00more"  # the last row of a page when more rows follow
# Rows handed to the DataTable at once: past this a table pages (] next, [ previous). Each row added
# is measured by the DataTable, so a page is what a first paint costs: ~4 screens of rows.
PAGE_ROWS = 100
# A message wraps onto at most this many lines, room or not: past it, a row is taller than it is worth
# (the pane under the table has the whole text) and the page shows too few rows when the room shrinks.
MESSAGE_MOST = 4
# The sort each table was left with, per app and (screen, table): kept for the session, in memory only.
_SORTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NUMBER = re.compile(r"((?:(?<![\w.])-)?\d+(?:\.\d+)?)")  # "-8" negative, "ws-10" not


def sort_key(text: str) -> tuple:
    """A natural order: numbers by value ("9" before "10", "-8" before "4"), words case-blind, empty
    cells ("", "–") last in an ascending sort."""
    t = text.strip()
    if not t or t in ("–", "-"):
        return ((2, ""),)
    out: list[tuple[int, float | str]] = []
    for i, part in enumerate(_NUMBER.split(t)):
        if i % 2:
            out.append((0, float(part)))
        elif part.strip():
            out.append((1, part.strip().casefold()))
    return tuple(out)


@dataclass(frozen=True)
class Col:
    key: str
    label: str
    width: int = 10  # the narrowest it gets before the table scrolls sideways (narrower when its content is)
    flex: bool = False  # a message: takes the width the other columns leave, gives width back first
    right: bool = False
    max_width: int | None = None  # the column stops growing here (wide terminals)
    ident: bool = False  # names the row: never cut, wrapped onto more lines when the table is narrow
    # Hides when the table is too narrow for it and the names (columns.py: the higher, the sooner; 0 never):
    # the least important columns leave first, so a name is not folded while they still show.
    hide: int = 0


@dataclass(frozen=True)
class Row:
    key: str
    # The cells, or a function making them: a table of thousands of rows only draws one page, so
    # screens may leave the Text of the other rows unbuilt.
    cells: tuple[Text | str, ...] | Callable[[], tuple[Text | str, ...]]
    meta: RowMeta | Callable[[], RowMeta] | None = None  # lazily too: only the filter and the selection read it

    def row_meta(self) -> RowMeta | None:
        m = self.meta
        return m() if callable(m) else m


def _cell(value: Text | str, right: bool = False) -> Text:
    t = value.copy() if isinstance(value, Text) else lit(value)
    # Each line cropped with an ellipsis: names are folded and messages wrapped into lines beforehand.
    t.no_wrap = True
    t.overflow = "ellipsis"
    if right:
        t.justify = "right"
    return t


def _width_of(value: Text | str) -> int:
    return value.cell_len if isinstance(value, Text) else len(value)


def _src(r: Row) -> tuple:
    return r.cells() if callable(r.cells) else r.cells


# DataTable caches rendered cells, rows and lines keyed by its update count, so every refresh of a live
# table adds entries that are never read again, up to 10,000 cells and 1,000 rows and lines per table:
# ~10 MiB a table, filled over an hour or more of a dashboard's ticks (the soak: docs/reliability.md,
# "Soak"). A page is at most PAGE_ROWS rows; twice what one page shows is enough.
def _bound_render_caches(table: DataTable, columns: int) -> None:
    for name, size in (("_cell_render_cache", 2 * PAGE_ROWS * max(columns, 1)), ("_row_render_cache", 2 * PAGE_ROWS),
                       ("_line_cache", 2 * PAGE_ROWS)):
        cache = getattr(table, name, None)  # private to Textual: a version without it keeps its own sizes
        if cache is not None and hasattr(cache, "maxsize"):
            cache.maxsize = min(cache.maxsize, size)


class KeyedTable(DataTable):
    # Thousands of rows (pending Workloads of a fleet) would make every tick and every paint pay for
    # all of them; the table holds one page, and `/` filters over every row.
    BINDINGS = [
        Binding("right_square_bracket", "page(1)", "next page", show=False),
        Binding("left_square_bracket", "page(-1)", "previous page", show=False),
    ]
    DEFAULT_CSS = """
    KeyedTable {
        height: auto;
        background: $surface;
        scrollbar-size-vertical: 1;
    }
    KeyedTable > .datatable--header {
        text-style: bold;
        background: $panel;
        color: $text-primary;
    }
    KeyedTable:focus > .datatable--cursor {
        background: $block-cursor-background;
    }
    """

    @dataclass
    class Counted(Message):
        """How many rows show after the filter (sent when it changes): section titles read it."""

        table: KeyedTable
        shown: int
        total: int
        raw: str

    def __init__(self, columns: list[Col], *, empty: str = "nothing to show", id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False, cell_padding=1)
        _bound_render_caches(self, len(columns))
        self.spec = columns
        self.empty_text = empty
        self._rows: list[Row] = []
        self._by_key: dict[str, Row] | None = {}
        self._filter = Filter()
        self._labels_of: LabelsOf | None = None
        self._built_width: int | None = None
        self.shown = 0  # rows visible after the filter
        self._counted: tuple[int, int, str] | None = None
        self.page = 0  # which PAGE_ROWS-sized page of the filtered rows is on screen
        self._on_screen: dict[str, Row] = {}  # the Row each key was last drawn from
        self.sort_column: str | None = None  # None: the order the screen gives (its own ranking)
        self.sort_reverse = False
        self._sort_cache: dict[int, tuple[Row, tuple]] = {}  # id(row) → (row, its sort key)
        self._measures: dict[int, tuple[Row, tuple[int, ...]]] = {}  # id(row) → (row, its cells' widths)
        self._natural: list[int] | None = None  # the page's content widths, grown while it is shown
        self._content: list[int] | None = None  # the same without the labels
        self._epoch: tuple | None = None  # (width, page, filter, sort) the natural widths belong to
        self._layout: tuple[tuple[int, ...], int] | None = None  # the widths built, and a message's most lines
        self._shown_cols: tuple[int, ...] = tuple(range(len(columns)))  # the columns built (the others hidden)
        self._lines_page: tuple[str, ...] = ()  # the rows the message lines were decided for
        # The keys of the rows the last sync drew (built their cells, then added or updated what differed);
        # a row given as the very Row drawn before is skipped: what a tick cost, in rows (tests assert on it).
        self.drawn: tuple[str, ...] = ()
        self.rows_drawn = 0  # every row drawn since mounting
        self._filtered: tuple[list[Row], str, frozenset[str]] | None = None  # filtered_keys, kept per rows

    # public ------------------------------------------------------------------------------
    @property
    def filter(self) -> Filter:
        return self._filter

    @property
    def total(self) -> int:
        return len(self._rows)

    def set_filter(self, flt: Filter, labels_of: LabelsOf | None = None) -> None:
        self._filter = flt
        self._labels_of = labels_of
        self._apply()

    def sync(self, rows: list[Row]) -> None:
        """Make the table show `rows` (in this order), touching only what changed."""
        if rows is self._rows and self._built_width == self.size.width and self.row_count:
            self.drawn = ()
            return  # the very list shown now: nothing to diff (screens reuse it while nothing changed)
        self._rows = rows
        self._apply()

    def selected_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except CellDoesNotExist:
            return None
        return None if key in (EMPTY_KEY, MORE_KEY) else key

    def selected_meta(self) -> RowMeta | None:
        key = self.selected_key()
        return self.meta(key) if key is not None else None

    def row(self, key: str) -> Row | None:
        """The row object given for `key` (screens may pass their own objects shaped like Row)."""
        if self._by_key is None:
            self._by_key = {r.key: r for r in self._rows}
        return self._by_key.get(key)

    def meta(self, key: str) -> RowMeta | None:
        row = self.row(key)
        return row.row_meta() if row is not None else None

    def filtered_keys(self) -> frozenset[str] | None:
        """The keys of every row the filter lets through, on every page (None: no filter active); a picture
        beside the table (the Capacity screen's block map) follows the filter with it."""
        if not self._filter.active:
            return None
        kept = self._filtered
        if kept is None or kept[0] is not self._rows or kept[1] != self._filter.raw:
            keys = frozenset(r.key for r in self._matching())
            kept = self._filtered = (self._rows, self._filter.raw, keys)
        return kept[2]

    def visible_keys(self) -> list[str]:
        """Keys of the rows on screen, in order (the empty and "more" placeholders excluded)."""
        return [k for k in self._keys_on_screen() if k not in (EMPTY_KEY, MORE_KEY)]

    # sorting -----------------------------------------------------------------------------
    def set_sort(self, column: str | None, reverse: bool = False) -> None:
        """Sort the rows by `column` (stable: equal cells keep the screen's order); None: the screen's order."""
        if column is not None and column not in {c.key for c in self.spec}:
            raise ValueError(f"no column {column!r}")
        if (column, reverse and column is not None) == (self.sort_column, self.sort_reverse):
            return
        self.sort_column, self.sort_reverse = column, bool(reverse and column is not None)
        self._sort_cache = {}
        self._remember()
        self._built_width = None  # the header shows ▲/▼ on the sorted column
        self._apply()

    def cycle_sort(self) -> None:
        """The next column, ascending; after the last one, the screen's own order again."""
        keys = [c.key for c in self.spec]
        if self.sort_column is None:
            self.set_sort(keys[0])
        else:
            i = keys.index(self.sort_column) + 1
            self.set_sort(keys[i] if i < len(keys) else None)

    def reverse_sort(self) -> None:
        self.set_sort(self.sort_column or self.spec[0].key, not self.sort_reverse)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a column header sorts by it; a second click reverses."""
        if event.data_table is not self:
            return
        event.stop()
        col = event.column_key.value
        if col == self.sort_column:
            self.set_sort(col, not self.sort_reverse)
        else:
            self.set_sort(col)

    def _memory_key(self) -> tuple | None:
        try:
            screen = self.screen
        except Exception:  # noqa: BLE001 - not mounted yet
            return None
        return (type(screen).__name__, self.id or tuple(c.key for c in self.spec))

    def _remember(self) -> None:
        key = self._memory_key()
        if key is not None and self.is_attached:
            _SORTS.setdefault(self.app, {})[key] = (self.sort_column, self.sort_reverse)

    def _recall(self) -> None:
        key = self._memory_key()
        if key is None:
            return
        col, rev = _SORTS.get(self.app, {}).get(key, (None, False))
        if col is not None and col in {c.key for c in self.spec}:
            self.sort_column, self.sort_reverse = col, rev

    def _sorted(self, rows: list[Row]) -> list[Row]:
        col = self.sort_column
        if col is None:
            return rows
        at = [c.key for c in self.spec].index(col)
        cache, new = self._sort_cache, {}
        for r in rows:
            hit = cache.get(id(r))
            if hit is None or hit[0] is not r:
                cells = r.cells() if callable(r.cells) else r.cells
                v = cells[at] if at < len(cells) else ""
                hit = (r, sort_key(v.plain if isinstance(v, Text) else str(v)))
            new[id(r)] = hit
        self._sort_cache = new
        if self.sort_reverse:  # empty cells stay last; equal cells keep the screen's order
            full = [r for r in rows if new[id(r)][1] != ((2, ""),)]
            empty = [r for r in rows if new[id(r)][1] == ((2, ""),)]
            return sorted(full, key=lambda r: new[id(r)][1], reverse=True) + empty
        return sorted(rows, key=lambda r: new[id(r)][1])

    def action_page(self, step: int) -> None:
        pages = max(1, -(-self.shown // PAGE_ROWS))
        page = min(max(0, self.page + step), pages - 1)
        if page != self.page:
            self.page = page
            self._apply()
            self.move_cursor(row=0, animate=False)

    def _keys_on_screen(self) -> list[str]:
        return [r.key.value for r in self.ordered_rows if r.key.value is not None]

    # internals ---------------------------------------------------------------------------
    def _avail(self) -> int:
        width = self.size.width or (self.app.size.width if self.is_attached else 100)
        return width - 1  # room for a vertical scrollbar when the table scrolls

    def _measure(self, rows: list[Row], built: dict[int, tuple]) -> list[tuple[int, ...]]:
        """The cell widths of the page's rows, kept per Row object (a row reused tick to tick is measured
        once); the cells built on the way are left in `built` for drawing."""
        cache, new, out = self._measures, {}, []
        for r in rows:
            if r.key in (EMPTY_KEY, MORE_KEY):
                continue
            hit = cache.get(id(r))
            if hit is None or hit[0] is not r:
                src = built[id(r)] = _src(r)
                hit = (r, tuple(_width_of(v) for v in src))
            new[id(r)] = hit
            out.append(hit[1])
        self._measures = new
        return out

    def _plan(self, rows: list[Row], built: dict[int, tuple]) -> tuple[tuple[int, ...], int]:
        """Column widths for this page, and how many lines a message may wrap onto (room below the rows)."""
        measured = self._measure(rows, built)
        keys = [c.key for c in self.spec]
        sorted_at = keys.index(self.sort_column) if self.sort_column in keys else None
        natural = natural_widths(self.spec, measured, sorted_at)
        content = content_widths(self.spec, measured)
        epoch = (self.size.width, self.page, self._filter.raw, self.sort_column, self.sort_reverse)
        if epoch == self._epoch and self._natural is not None and self._content is not None:
            natural = [max(a, b) for a, b in zip(natural, self._natural, strict=True)]  # only grow while shown
            content = [max(a, b) for a, b in zip(content, self._content, strict=True)]
        self._natural, self._content, self._epoch = natural, content, epoch
        widths = tuple(layout(self.spec, natural, self._avail(), content))
        page = tuple(r.key for r in rows)
        if self._layout is not None and self._layout[0] == widths and self._lines_page == page:
            return widths, self._layout[1]  # messages keep their line count until the layout or the rows change
        self._lines_page = page
        return widths, self._message_lines(rows, built, widths)

    def _room(self, n_rows: int) -> int:
        """How many lines the page's rows may take."""
        height = self.styles.height
        if height is not None and height.unit == Unit.FRACTION:  # a table that fills the screen's body
            return self.size.height - self.header_height
        return n_rows + max(0, self.app.size.height - 30) // 3  # a table among others: a little, on tall terminals

    def _message_lines(self, rows: list[Row], built: dict[int, tuple], widths: tuple[int, ...]) -> int:
        """How many lines a message may take: the most that lets every row on the page fit the room
        below (1: messages stay on one line and end in "…")."""
        if not any(c.flex and not c.ident for c in self.spec) or len(rows) > 40:
            return 1
        room = self._room(len(rows))
        if room <= len(rows):
            return 1
        needs: list[tuple[int, int]] = []  # per row: (lines of its names, lines of its messages wrapped whole)
        for r in rows:
            if r.key in (EMPTY_KEY, MORE_KEY):
                needs.append((1, 1))
                continue
            src = built.get(id(r))
            if src is None:
                src = built[id(r)] = _src(r)
            cells = self._cells(src, widths, 1)
            names = self._height(cells)
            longest = 1
            for c, width, v in zip(self.spec, widths, src, strict=False):
                if c.flex and not c.ident and _width_of(v) > width:
                    longest = max(longest, len(_cell(v).wrap(self.app.console, width, overflow="fold", no_wrap=False)))
            needs.append((names, longest))
        best = 1
        for k in range(2, min(MESSAGE_MOST, max(m for _, m in needs)) + 1):
            if sum(max(n, min(m, k)) for n, m in needs) > room:
                break
            best = k
        return best

    def _cells(self, src: tuple, widths: tuple[int, ...], message_lines: int) -> list[Text]:
        """The cells drawn for a row: names folded to their column, messages wrapped onto up to
        `message_lines` lines (the last one ends in "…" when the message is longer)."""
        out = []
        for c, width, v in zip(self.spec, widths, src, strict=False):
            t = _cell(v, c.right)
            if c.ident:
                t = fold(t, width)
            elif c.flex and message_lines > 1 and t.cell_len > width:
                t = self._wrap(t, width, message_lines)
            out.append(t)
        out += [Text("")] * (len(self.spec) - len(out))
        return out

    def _wrap(self, t: Text, width: int, most: int) -> Text:
        lines = list(t.wrap(self.app.console, width, overflow="fold", no_wrap=False))
        for line in lines:
            line.rstrip()
        if len(lines) > most:
            last = Text(" ").join([line.copy() for line in lines[most - 1 :]])
            last.truncate(width, overflow="ellipsis")
            lines = [*lines[: most - 1], last]
        for line in lines:
            line.end = ""
        out = Text("\n").join(lines)
        out.no_wrap, out.overflow, out.end = True, "ellipsis", ""
        return out

    @staticmethod
    def _height(cells: list[Text]) -> int:
        return max(t.plain.count("\n") for t in cells) + 1

    def _build_columns(self, widths: tuple[int, ...]) -> None:
        self.clear(columns=True)
        self._shown_cols = tuple(i for i, w in enumerate(widths) if w > 0)
        for c, width in zip(self.spec, widths, strict=True):
            if not width:
                continue  # hidden at this width (columns.py)
            label = c.label
            if c.key == self.sort_column:
                label += " ▼" if self.sort_reverse else " ▲"
            head = Text(label, justify="right" if c.right else "left", no_wrap=True, overflow="ellipsis")
            self.add_column(head, key=c.key, width=width)
        self._built_width = self.size.width

    def _visible(self) -> list[Row]:
        return self._sorted(self._matching())

    def _matching(self) -> list[Row]:
        if not self._filter.active:
            return self._rows
        out = []
        for r in self._rows:
            m = r.row_meta()
            if m is None or self._filter.matches(m, self._labels_of):
                out.append(r)
        return out

    def _placeholder(self) -> Row:
        if self._filter.invalid:
            text = "filter: " + "; ".join(self._filter.invalid)
        else:
            text = f"no rows match “{self._filter.raw}”" if self._rows else self.empty_text
        at = next((i for i, c in enumerate(self.spec) if c.flex), 0)
        cells = [Text("")] * len(self.spec)
        cells[at] = Text(text, style="dim italic")
        return Row(EMPTY_KEY, tuple(cells), None)

    def _more(self, start: int, total: int) -> Row:
        end = min(start + PAGE_ROWS, total)
        text = f"rows {start + 1}–{end} of {total}: ] next page, [ previous, / to filter"
        at = next((i for i, c in enumerate(self.spec) if c.flex), 0)
        cells = [Text("")] * len(self.spec)
        cells[at] = Text(text, style="dim italic")
        return Row(MORE_KEY, tuple(cells), None)

    def _apply(self) -> None:
        self.drawn = ()
        if not self.is_attached:
            return
        rows = self._visible()
        self.shown = len(rows)
        if len(rows) > PAGE_ROWS:
            pages = -(-len(rows) // PAGE_ROWS)
            self.page = min(self.page, pages - 1)
            start = self.page * PAGE_ROWS
            rows = [*rows[start : start + PAGE_ROWS], self._more(start, len(rows))]
        else:
            self.page = 0
        self._by_key = None  # built when first looked up: 50k rows change every tick, lookups are rare
        counted = (self.shown, len(self._rows), self._filter.raw if self._filter.active else "")
        if counted != self._counted:
            self._counted = counted
            self.post_message(self.Counted(self, *counted))
        if not rows:
            rows = [self._placeholder()]
        if not self.size.width:
            return  # not laid out yet: the first Resize builds columns and rows once, at the real width
        self.show_cursor = self.has_focus and rows[0].key != EMPTY_KEY
        prev = self.selected_key()
        with self.app.batch_update():
            built: dict[int, tuple] = {}
            widths, message_lines = self._plan(rows, built)
            if not self.columns or self._built_width != self.size.width or self._layout != (widths, message_lines):
                self._build_columns(widths)
                self._layout = (widths, message_lines)
            wanted = {r.key for r in rows}
            current = self._keys_on_screen()
            stale = [k for k in current if k not in wanted]
            if len(stale) > 8 and len(stale) * 2 > len(current):
                self.clear()  # cheaper than many O(n) remove_row calls
                current = []
            else:
                for k in stale:
                    self.remove_row(k)
                current = [k for k in current if k in wanted]
            have = set(current)
            shown = self._shown_cols
            keys = [self.spec[i].key for i in shown]
            right = [self.spec[i].right for i in shown]
            drawn = self._on_screen
            touched: list[str] = []
            for r in rows:
                if r.key in have and drawn.get(r.key) is r:
                    continue  # the very Row drawn last time (screens reuse rows of unchanged objects)
                src = built.get(id(r))
                if src is None:
                    src = _src(r)
                if r.key in (EMPTY_KEY, MORE_KEY):
                    texts = [src[i] if i < len(src) else "" for i in shown]
                    said = next((i for i, v in enumerate(src) if _width_of(v)), 0)  # its one text cell
                    if said not in shown and texts:  # its column is hidden: the first one shown says it
                        texts[0] = src[said]
                    cells = [_cell(v, right[n]) for n, v in enumerate(texts)]
                    height = 1
                else:
                    full = self._cells(src, widths, message_lines)
                    cells = [full[i] for i in shown]
                    height = self._height(cells)
                if r.key in have and self.rows[RowKey(r.key)].height != height:
                    self.remove_row(r.key)  # a name that now wraps onto another line count: add it again
                    have.discard(r.key)
                if r.key in have:
                    for k, new in zip(keys, cells, strict=True):
                        try:
                            if self.get_cell(r.key, k) != new:
                                self.update_cell(r.key, k, new)
                        except CellDoesNotExist:
                            pass
                else:
                    self.add_row(*cells, key=r.key, height=height)
                if r.key not in (EMPTY_KEY, MORE_KEY):
                    touched.append(r.key)
            self.drawn = tuple(touched)
            self.rows_drawn += len(touched)
            self._on_screen = {r.key: r for r in rows}
            order = [r.key for r in rows]
            if self._keys_on_screen() != order:
                rank = {k: i for i, k in enumerate(order)}
                first = keys[0]
                # DataTable sorts by cell values; map each row's (unique) first-cell object to its rank.
                by_cell = {id(self.get_cell(k, first)): rank[k] for k in order}
                self.sort(first, key=lambda cell: by_cell.get(id(cell), 0))
            if prev is not None:
                try:
                    self.move_cursor(row=self.get_row_index(prev), animate=False, scroll=False)
                except RowDoesNotExist:
                    pass
        now = self.selected_key()
        if now != prev and now is not None:
            # The highlighted row vanished (filter, deletion): panes that explain it must follow.
            self.post_message(DataTable.RowHighlighted(self, self.cursor_row, self.coordinate_to_cell_key(
                self.cursor_coordinate).row_key))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Inside a scrolling screen body the table may be partly out of view: scroll the body so the
        cursor row shows (the table itself only scrolls once it is taller than the body)."""
        if event.data_table is not self or not self.has_focus:
            return
        scroller = next((a for a in self.ancestors if isinstance(a, ScrollableContainer)), None)
        if scroller is None or scroller.max_scroll_y == 0:
            return
        row_y = self.content_region.y + self.header_height + event.cursor_row - int(self.scroll_y)
        virtual_y = row_y - scroller.content_region.y + int(scroller.scroll_y)
        scroller.scroll_to_region(Region(0, virtual_y, 1, 1), spacing=Spacing(self.header_height + 1, 0, 1, 0),
                                  animate=False, immediate=True)

    # Only the focused table shows its cursor: a highlighted row in every table reads as "selected".
    def on_focus(self) -> None:
        self.show_cursor = bool(self.visible_keys())

    def on_blur(self) -> None:
        self.show_cursor = False

    def on_mount(self) -> None:
        self._recall()
        self.show_cursor = self.has_focus and bool(self.visible_keys())

    def on_resize(self, event: Resize) -> None:
        if self._built_width != self.size.width:
            if self.columns:
                self.clear(columns=True)
            self._apply()
