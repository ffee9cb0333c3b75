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

from rich.columns import Columns
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text
from textual.widgets import Static

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
# cut): past it the map says how many domains it left out, and the NODES filter narrows it (the map follows
# the filter). A draw then costs about what a screenful costs, not the fleet's 5,000 hosts (decision 146).
MAP_HOSTS = 96
# A block's panel, kept while its domain's figures and its hosts' views (by identity) are those drawn.
_Panels = dict[tuple[str, str, str], tuple[tuple, Panel]]


class BlockMap(Static):
    """Draws one CapacityFlavor (`show`); the screen stacks one per flavor."""

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
        self._panels: _Panels = {}
        self.draws = 0  # how many times the map was drawn (a tick that changed nothing draws none)

    def show(self, flavor: CapacityFlavor, known: bool, only: frozenset[str] | None = None) -> bool:
        """Draw `flavor` (`only`: the node names the NODES filter lets through, None for all) unless it is
        the very flavor drawn now (the capacity part keeps an unchanged flavor's object); True if it drew."""
        tones = app_tones(self.app)
        last = self._shown
        if last is not None and last[0] is flavor and last[1:] == (known, tones, only):
            return False
        self._shown = (flavor, known, tones, only)
        self.draws += 1
        panels: _Panels = {}
        self.update(render_flavor(flavor, known, tones, only, (self._panels, panels)))
        self._panels = panels
        return True


def render_flavor(flavor: CapacityFlavor, known: bool, tones: Tones, only: frozenset[str] | None = None,
                  panels: tuple[_Panels, _Panels] | None = None, most: int = MAP_HOSTS) -> RenderableType:
    """The flavor's picture: its title, then its blocks up to `most` hosts (only those holding a node of
    `only` when given) and a line for the rest. `panels`: (last draw's panels, this draw's) to reuse those
    of unchanged blocks."""
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
        return Group(_line(title), _line(span("  no nodes of this class", tones.muted)))
    prefix = shared_prefix([n.name for n in flavor.nodes])
    if prefix:
        title.append("  hosts ", style=tones.muted)
        title.append(lit(prefix + "…", tones.muted))
    parts: list[RenderableType] = [_line(title)]
    last, kept = panels if panels is not None else ({}, {})
    budget = _Budget(most)

    def block(key: tuple[str, str, str], free: int | None, total: int, hosts: list[CapacityNode],
              unavailable: int) -> Panel | None:
        if only is not None and only.isdisjoint(h.name for h in hosts):
            return None
        shown = budget.take(key[0], hosts, free)
        if not shown:
            return None
        sig = (free, total, unavailable, prefix, tones, shown, *hosts)  # hosts compared by identity first
        hit = last.get(key)
        if hit is None or hit[0] != sig:
            hit = (sig, _panel(key[1], free, total, hosts, tones, unavailable, prefix, shown))
        kept[key] = hit
        return hit[1]

    placed: set[str] = set()
    for heading, blocks in _grouped(flavor.domains, _leaves(flavor.domains)):
        row = []
        for d in blocks:
            placed.update(d.nodes)
            p = block((d.level, d.name, d.parent), d.free, d.allocatable, [nodes[n] for n in d.nodes if n in nodes],
                      d.unavailable)
            if p is not None:
                row.append(p)
        if row:
            parts.append(_line(heading_text(heading, blocks, tones)))
            parts.append(_row_of(row))
    rest = [n for n in flavor.nodes if n.name not in placed]
    if rest:
        free = None if any(n.free is None for n in rest) else sum(n.free or 0 for n in rest)
        label = "hosts" if not flavor.domains else NO_DOMAIN
        p = block(("", label, ""), free, sum(n.allocatable for n in rest), rest, 0)
        if p is not None:
            parts.append(_row_of([p]))
    if budget.left:
        parts.append(_line(budget.more_text(tones)))
    elif only is not None and not budget.drawn:
        parts.append(_line(span("  no host of this flavor matches the filter", tones.muted)))
    return Group(*parts)


class _Budget:
    """The hosts a map still draws, and what it left out."""

    def __init__(self, most: int) -> None:
        self.most, self.drawn = most, 0
        self.left = self.left_hosts = 0
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
        return n

    def more_text(self, tones: Tones) -> Text:
        what = " or ".join(f"{lv}s" for lv in self.levels) if self.left > 1 else " or ".join(self.levels)
        t = span(f"  +{self.left} more {what} ({self.left_hosts} hosts, ", tones.muted)
        t.append("?" if self.left_free is None else str(self.left_free), style=tones.muted)
        t.append(" GPUs free) not drawn — ", style=tones.muted)
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


def _panel(name: str, free: int | None, total: int, hosts: list[CapacityNode], tones: Tones,
           unavailable: int, prefix: str = "", most: int | None = None) -> Panel:
    """A block: one line per host (the first `most` of them, then how many more)."""
    drawn = hosts if most is None else hosts[:most]
    shown = [h.name[len(prefix):] if prefix and h.name.startswith(prefix) else h.name for h in drawn]
    width = max((len(n) for n in shown), default=4)
    lines = []
    for h, label in zip(drawn, shown, strict=True):
        line = lit(label.ljust(width), tones.muted)
        line.append(" ")
        line.append(host_cells(h, tones))
        lines.append(_line(line))
    if len(drawn) < len(hosts):
        lines.append(_line(span(f"+{len(hosts) - len(drawn)} more hosts", tones.muted)))
    sub = free_text(free, total, tones)
    if unavailable:
        sub.append(f" · {unavailable} off", style=tones.warn)
    fragmented = free is not None and free > 0 and all((h.free or 0) < 2 for h in hosts)
    inner = max([width + 1 + max((h.allocatable for h in drawn), default=0), len(name) + 2, sub.cell_len + 2])
    return Panel(Group(*lines), title=lit(name, "bold"), title_align="left", subtitle=sub, subtitle_align="right",
                 border_style=tones.warn if fragmented else tones.muted, width=inner + 4, padding=(0, 1))


def _line(t: Text) -> Text:
    t.end = "\n"  # cells elsewhere end nothing; in a Group each line ends its own
    return t


def _row_of(panels: list[Panel]) -> RenderableType:
    return Columns(panels, padding=(0, 1))


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


__all__ = ["LEGEND", "MAP_HOSTS", "BlockMap", "free_text", "host_cells", "legend", "render_flavor", "shared_prefix"]
