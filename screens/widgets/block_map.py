"""The block map: one GPU flavor drawn as its topology domains, a block per lowest domain (an accelerator
domain, under its site › network-domain heading) holding one line per host with a cell per GPU, so a flavor
whose free GPUs are scattered one or two per host is seen at a glance.

A cell is used (■), free (□), unhealthy (✖), health or Pods unknown (?) or off (▫: cordoned, NotReady,
deleting, tainted). Unknown stays unknown: with Pods unreadable no cell is drawn free.

A map draws what a screen can show, not a fleet: at most MAP_HOSTS hosts per flavor, then a line saying how
many domains it left out; the screen hands it the nodes its filter lets through. It redraws only when its
flavor's view object changed, and reuses the panels of blocks whose hosts' views are the same objects.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial

from rich.console import Group, RenderableType
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from taudash.engine.rules.capacity import CapacityDomain, CapacityFlavor, CapacityNode

from ..kit.text import Tones, app_tones, lit, span

USED, FREE, BAD, UNKNOWN, OFF = "■", "□", "✖", "?", "▫"
LEGEND = ((USED, "used"), (FREE, "free"), (BAD, "unhealthy"), (UNKNOWN, "unknown"),
          (OFF, "cordoned / not ready / tainted"))
NO_DOMAIN = "(no domain)"  # hosts missing a domain label, or not counted (NotReady, deleting)


def host_cells(node: CapacityNode, tones: Tones) -> Text:
    """One cell per allocatable GPU of `node`: its used ones first, the rest by the node's state."""
    t = Text(end="")
    off = not node.schedulable or any(r in ("NotReady", "Deleting") or r.startswith("Taint") for r in node.reasons)
    if node.requested is None:  # Pods unreadable: neither used nor free is known, the node's state still is
        glyph, style = (BAD, tones.bad) if node.health == "unhealthy" else (OFF, tones.warn) if off else (
            UNKNOWN, tones.unknown)
        t.append(glyph * node.allocatable, style=style)
        return t
    used = min(node.requested, node.allocatable)
    rest = node.allocatable - used
    t.append(USED * used, style=tones.bad if node.health == "unhealthy" else tones.info)
    if node.health == "unhealthy":
        t.append(BAD * rest, style=tones.bad)
    elif node.health == "unknown":
        t.append(UNKNOWN * rest, style=tones.unknown)
    elif off:
        t.append(OFF * rest, style=tones.warn)
    else:
        t.append(FREE * rest, style=tones.warn if node.health == "degraded" else tones.ok)
    return t


def free_text(free: int | None, total: int, tones: Tones) -> Text:
    if free is None:
        return span(f"?/{total} free", tones.unknown)
    return span(f"{free}/{total} free", tones.ok if free else tones.muted)


def legend(tones: Tones) -> Text:
    t = Text(end="")
    styles = (tones.info, tones.ok, tones.bad, tones.unknown, tones.warn)
    for i, ((glyph, word), style) in enumerate(zip(LEGEND, styles, strict=True)):
        if i:
            t.append("  ")
        t.append(glyph, style=style)
        t.append(f" {word}", style=tones.muted)
    return t


# The most hosts a flavor's map draws (whole blocks, in the view's order; a first block larger than this is
# cut): past it the map says how many domains and hosts it left out, and the NODES filter narrows it (the map
# follows the filter). Three NVL72 domains of 18 hosts, or eight racks of eight (decision 146).
MAP_HOSTS = 64


class _Block:
    """One domain drawn as a panel, line by line: the top border names it, one line per host, the bottom
    border says its free GPUs (a rounded box, as Rich draws a Panel)."""

    __slots__ = ("border", "lines", "name", "sub", "width")

    def __init__(self, name: str, sub: Text, border: Style, lines: list[Text], inner: int) -> None:
        self.name, self.sub, self.border, self.lines, self.width = name, sub, border, lines, inner + 4

    @property
    def height(self) -> int:
        return len(self.lines) + 2

    def line(self, i: int) -> Text | None:
        inner, b = self.width - 4, self.border
        if i == 0:
            t = span("╭─", b)
            t.append(f" {self.name} ", style=b + Style(bold=True))
            t.append("─" * (inner - len(self.name) - 2) + "─╮", style=b)
            return t
        if i == self.height - 1:
            sub = self.sub.copy()
            sub.pad(1)
            sub.stylize_before(b)
            t = span("╰─" + "─" * (inner - sub.cell_len), b)
            t.append_text(sub)
            t.append("─╯", style=b)
            return t
        if 0 < i < self.height - 1:
            body = self.lines[i - 1]
            t = span("│", b)
            t.append(" ")
            t.append_text(body)
            t.append(" " * (inner - body.cell_len + 1))
            t.append("│", style=b)
            return t
        return None


# What a map draws, top to bottom: a line of text, or a row of blocks side by side (wrapped to the width).
_Item = Text | list[_Block]


def columns(blocks: list[_Block], width: int) -> list[tuple[list[_Block], list[int]]]:
    """The blocks in rows as Rich's Columns lays them out: the most columns whose widest block each (plus one
    space between) fit `width`, filled row by row; each row with its column widths."""
    count = len(blocks)
    while count > 1:
        widths = [max(b.width for b in blocks[c::count]) for c in range(count)]
        if sum(widths) + count - 1 <= width:
            break
        count -= 1
    widths = [max(b.width for b in blocks[c::count]) for c in range(count)]
    return [(blocks[i : i + count], widths) for i in range(0, len(blocks), count)]


def _row_line(blocks: list[_Block], widths: list[int], i: int) -> Text:
    t = Text(end="")
    for j, (b, w) in enumerate(zip(blocks, widths, strict=False)):
        if j:
            t.append(" ")
        part = b.line(i)
        if part is not None:
            t.append_text(part)
        t.append(" " * (w - (part.cell_len if part is not None else 0)))
    t.rstrip()
    return t


def lay_out(items: list[_Item], width: int) -> list[Callable[[], Text]]:
    """One maker per line of the map at `width`: a line's Text is built only when the line is drawn."""
    lines: list[Callable[[], Text]] = []
    for item in items:
        if isinstance(item, Text):
            lines.append(partial(Text.copy, item))
            continue
        for row, widths in columns(item, width):
            lines.extend(partial(_row_line, row, widths, i) for i in range(max(b.height for b in row)))
    return lines


class BlockMap(Widget):
    """Draws one CapacityFlavor (`show`); the screen stacks one per flavor. Its lines are drawn as they come
    into view (the Line API): a tick's draw costs the lines on screen, not the map's height."""

    DEFAULT_CSS = """
    BlockMap {
        height: auto;
        padding: 0 1;
        margin: 0 0 1 0;
        background: $surface;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self._shown: tuple | None = None  # (flavor, known, tones, only) drawn now
        self._items: list[_Item] = []
        self._blocks: _Blocks = {}
        self._laid: tuple[int, list[Callable[[], Text]]] = (-1, [])  # (width, the line makers)
        self._strips: dict[int, Strip] = {}
        self.draws = 0  # how many times the map was drawn (a tick that changed nothing draws none)
        self.lines_drawn = 0  # lines turned into strips (the ones that came into view)

    def show(self, flavor: CapacityFlavor, known: bool, only: frozenset[str] | None = None) -> bool:
        """Draw `flavor` (`only`: the node names the NODES filter lets through, None for all) unless it is
        the very flavor drawn now (the capacity part keeps an unchanged flavor's object); True if it drew."""
        tones = app_tones(self.app)
        last = self._shown
        if last is not None and last[0] is flavor and last[1:] == (known, tones, only):
            return False
        self._shown = (flavor, known, tones, only)
        self.draws += 1
        blocks: _Blocks = {}
        self._items = flavor_items(flavor, known, tones, only, (self._blocks, blocks))
        self._blocks = blocks
        self._laid = (-1, [])
        self._strips = {}
        self.refresh(layout=True)
        return True

    def _lines(self, width: int) -> list[Callable[[], Text]]:
        if self._laid[0] != width:
            self._laid = (width, lay_out(self._items, width))
            self._strips = {}
        return self._laid[1]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines(width))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        lines = self._lines(width)
        strip = self._strips.get(y)
        if strip is None:
            style = self.rich_style
            if y >= len(lines):
                return Strip.blank(width, style)
            text = lines[y]()
            text.stylize_before(style)
            strip = self._strips[y] = Strip(text.render(self.app.console), text.cell_len).crop_extend(0, width, style)
            self.lines_drawn += 1
        return strip

    @property
    def content(self) -> RenderableType:
        """The whole map as text (what `render_line` draws, every line)."""
        return Group(*(_line(make()) for make in self._lines(self.size.width or 160)))


# A block, kept while its domain's figures and its hosts' views (by identity) are those drawn.
_Blocks = dict[tuple[str, str, str], tuple[tuple, _Block]]


def flavor_items(flavor: CapacityFlavor, known: bool, tones: Tones, only: frozenset[str] | None = None,
                 blocks: tuple[_Blocks, _Blocks] | None = None, most: int = MAP_HOSTS) -> list[_Item]:
    """The flavor's picture: its title, then its blocks up to `most` hosts (only the hosts named in `only`
    when given, in their blocks) and a line for what was left out. `blocks`: (last draw's blocks, this draw's), to
    reuse those of unchanged domains."""
    nodes = {n.name: n for n in flavor.nodes}
    g = flavor.gpus
    title = span(flavor.name, tones.heading)
    title.append("  ")
    title.append(free_text(g.free if known else None, g.allocatable, tones))
    for count, word, style in ((g.unhealthy, "unhealthy", tones.bad), (g.unknown_health, "health unknown",
                               tones.unknown), (g.cordoned, "cordoned", tones.warn), (g.not_ready, "NotReady",
                               tones.warn), (g.degraded, "degraded", tones.warn)):
        if count:
            title.append(f"  {count} {word}", style=style)
    if not flavor.nodes:
        return [title, span("  no nodes of this class", tones.muted)]
    prefix = shared_prefix([n.name for n in flavor.nodes])
    if prefix:
        title.append("  hosts ", style=tones.muted)
        title.append(lit(prefix + "…", tones.muted))
    items: list[_Item] = [title]
    last, kept = blocks if blocks is not None else ({}, {})
    budget = _Budget(most)

    def block(key: tuple[str, str, str], free: int | None, total: int, hosts: list[CapacityNode],
              unavailable: int) -> _Block | None:
        fragmented = free is not None and free > 0 and all((h.free or 0) < 2 for h in hosts)
        if only is not None:
            hosts = [h for h in hosts if h.name in only]
            if not hosts:
                return None
        shown = budget.take(key[0], hosts, free)
        if not shown:
            return None
        sig = (free, total, unavailable, prefix, tones, shown, fragmented, *hosts)  # hosts: identity first
        hit = last.get(key)
        if hit is None or hit[0] != sig:
            hit = (sig, _block(key[1], free, total, hosts, tones, unavailable, prefix, shown, fragmented))
        kept[key] = hit
        return hit[1]

    placed: set[str] = set()
    for heading, leaves in _grouped(flavor.domains, _leaves(flavor.domains)):
        row = []
        for d in leaves:
            placed.update(d.nodes)
            b = block((d.level, d.name, d.parent), d.free, d.allocatable, [nodes[n] for n in d.nodes if n in nodes],
                      d.unavailable)
            if b is not None:
                row.append(b)
        if row:
            items += [heading_text(heading, leaves, tones), row]
    rest = [n for n in flavor.nodes if n.name not in placed]
    if rest:
        free = None if any(n.free is None for n in rest) else sum(n.free or 0 for n in rest)
        label = "hosts" if not flavor.domains else NO_DOMAIN
        b = block(("", label, ""), free, sum(n.allocatable for n in rest), rest, 0)
        if b is not None:
            items.append([b])
    if budget.left or budget.cut:
        items.append(budget.more_text(tones))
    elif only is not None and not budget.drawn:
        items.append(span("  no host of this flavor matches the filter", tones.muted))
    return items


def render_flavor(flavor: CapacityFlavor, known: bool, tones: Tones, only: frozenset[str] | None = None,
                  width: int = 160) -> RenderableType:
    """The flavor's picture as one renderable at `width` (the CLI and tests; the screen draws it by line)."""
    return Group(*(_line(make()) for make in lay_out(flavor_items(flavor, known, tones, only), width)))


class _Budget:
    """The hosts a map still draws, and what it left out."""

    def __init__(self, most: int) -> None:
        self.most, self.drawn = most, 0
        self.left = self.left_hosts = self.cut = 0
        self.left_free: int | None = 0
        self.levels: dict[str, None] = {}

    def take(self, level: str, hosts: list[CapacityNode], free: int | None) -> int:
        """How many of a block's hosts to draw: all while they fit, the first `most` of a first block larger
        than that, none once a block was drawn and the next does not fit (counted as left out)."""
        if self.drawn and self.drawn + len(hosts) > self.most:
            self.left += 1
            self.left_hosts += len(hosts)
            self.left_free = None if free is None or self.left_free is None else self.left_free + free
            self.levels[level or "host group"] = None
            return 0
        n = min(len(hosts), self.most)
        self.drawn += n
        self.cut += len(hosts) - n
        return n

    def more_text(self, tones: Tones) -> Text:
        t = span("  ", tones.muted)
        if self.left:
            what = " or ".join(f"{lv}s" if self.left > 1 else lv for lv in self.levels)
            t.append(f"+{self.left} more {what} ({self.left_hosts} hosts, "
                     f"{'?' if self.left_free is None else self.left_free} GPUs free) not drawn", style=tones.muted)
        else:
            t.append(f"{self.cut} more hosts not drawn", style=tones.muted)
        t.append(" — ", style=tones.muted)
        t.append("/", style=tones.accent)
        t.append(" filters the nodes below, and the map with them", style=tones.muted)
        return t


def heading_text(path: tuple[CapacityDomain, ...], blocks: list[CapacityDomain], tones: Tones) -> Text:
    t = Text(end="")
    for i, d in enumerate(path):
        if i:
            t.append(" › ", style=tones.muted)
        t.append(f"{d.level} ", style=tones.muted)
        t.append(lit(d.name))
    if path:
        last = path[-1]
        t.append("  ")
        t.append(free_text(last.free, last.allocatable, tones))
    elif blocks:
        t.append(f"{blocks[0].level}s", style=tones.muted)
    return t


def shared_prefix(names: list[str]) -> str:
    """The hosts' common name prefix up to its last '-' ("aks-h100-27604139-"), dropped inside blocks."""
    if len(names) < 2:
        return ""
    common = os.path.commonprefix(names)
    return common[: common.rfind("-") + 1]


def _block(name: str, free: int | None, total: int, hosts: list[CapacityNode], tones: Tones,
           unavailable: int, prefix: str = "", most: int | None = None, fragmented: bool = False) -> _Block:
    """A domain's block: one line per host (the first `most` of them, then how many more); `fragmented`
    (free GPUs, fewer than two on every host) borders it yellow."""
    drawn = hosts if most is None else hosts[:most]
    shown = [h.name[len(prefix):] if prefix and h.name.startswith(prefix) else h.name for h in drawn]
    width = max((len(n) for n in shown), default=4)
    lines = []
    for h, label in zip(drawn, shown, strict=True):
        line = lit(label.ljust(width), tones.muted)
        line.append(" ")
        line.append(host_cells(h, tones))
        lines.append(line)
    if len(drawn) < len(hosts):
        lines.append(span(f"+{len(hosts) - len(drawn)} more hosts", tones.muted))
    sub = free_text(free, total, tones)
    if unavailable:
        sub.append(f" · {unavailable} off", style=tones.warn)
    inner = max([width + 1 + max((h.allocatable for h in drawn), default=0), len(name) + 2, sub.cell_len + 2,
                 *(line.cell_len for line in lines)])
    return _Block(name, sub, tones.warn if fragmented else tones.muted, lines, inner)


def _line(t: Text) -> Text:
    t.end = "\n"  # cells elsewhere end nothing; in a Group each line ends its own
    return t


def _leaves(domains: list[CapacityDomain]) -> list[CapacityDomain]:
    """The domains no lower domain sits in: the blocks."""
    levels = list(dict.fromkeys(d.level for d in domains))
    has_child = {(levels[levels.index(d.level) - 1], d.parent) for d in domains if levels.index(d.level) > 0}
    return [d for d in domains if (d.level, d.name) not in has_child]


def _grouped(domains: list[CapacityDomain], leaves: list[CapacityDomain]
             ) -> list[tuple[tuple[CapacityDomain, ...], list[CapacityDomain]]]:
    """Leaves grouped by the chain of domains above them (site › network-domain), in the view's order."""
    levels = list(dict.fromkeys(d.level for d in domains))
    by_name = {(d.level, d.name): d for d in domains}
    groups: dict[tuple[str, ...], tuple[tuple[CapacityDomain, ...], list[CapacityDomain]]] = {}
    for leaf in leaves:
        chain: list[CapacityDomain] = []
        parent, idx = leaf.parent, levels.index(leaf.level) - 1
        while parent and idx >= 0:
            up = by_name.get((levels[idx], parent))
            if up is None:
                break
            chain.insert(0, up)
            parent, idx = up.parent, idx - 1
        key = tuple(f"{d.level}={d.name}" for d in chain)
        groups.setdefault(key, (tuple(chain), []))[1].append(leaf)
    return list(groups.values())


__all__ = ["LEGEND", "MAP_HOSTS", "BlockMap", "columns", "flavor_items", "free_text", "host_cells", "lay_out", "legend",
           "render_flavor", "shared_prefix"]
