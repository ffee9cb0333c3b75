"""ctrl+p palette: go to any screen the app shows (its `screen_registry`), or to any object in the store by name.

The fuzzy matcher's own highlighter parses its input as markup, so hits are highlighted here on a
literal Text: an object named "[bold]x" shows exactly that.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider

from taudash.engine.rules.base import ObjRef

from .entries import ScreenEntry, registry_of
from .format import objname
from .messages import Navigate, OpenObject, OpenWhatIf
from .text import lit

MAX_OBJECT_HITS = 40
WHATIF = "what if I submit this… (W)"


def _highlight(text: str, offsets: Sequence[int]) -> Text:
    t = lit(text)
    for o in offsets:
        if o < len(t.plain) and not t.plain[o].isspace():
            t.stylize("bold underline", o, o + 1)
    return t


def in_order(query: str) -> re.Pattern[str]:
    """Labels holding the query's characters in order (spaces aside), case-insensitively: the only ones the
    fuzzy scorer can match. Its scoring walks every way the characters can align, slow over thousands of
    objects (the Pods of a cluster); the regex rules the rest out in C first."""
    chars = [re.escape(c) for c in query if not c.isspace()]
    return re.compile(".*?".join(chars), re.IGNORECASE | re.DOTALL)


class NavigationProvider(Provider):
    """Screens by number and name; objects as "Kind namespace/name"."""

    async def startup(self) -> None:
        session = getattr(self.screen, "session", None) or getattr(self.app, "session", None)
        self._objects: list[ObjRef] = session.objects() if session is not None else []
        screens = registry_of(self.app)
        self._screens: list[ScreenEntry] = list(screens) if screens is not None else []

    def _go(self, name: str) -> None:
        self.app.post_message(Navigate(name))

    def _open(self, ref: ObjRef) -> None:
        self.app.post_message(OpenObject(ref))

    def _whatif(self) -> None:
        self.app.post_message(OpenWhatIf())

    async def discover(self) -> Hits:
        for entry in self._screens:
            yield DiscoveryHit(entry.label, partial(self._go, entry.name), help="go to screen")
        yield DiscoveryHit(WHATIF, self._whatif, help="predict a manifest on a simulated fork")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for entry in self._screens:
            label = entry.label
            score = matcher.match(f"go {label}")
            if score > 0:
                yield Hit(score, matcher.highlight(label), partial(self._go, entry.name), text=label,
                          help="go to screen")
        score = matcher.match(WHATIF)
        if score > 0:
            yield Hit(score, matcher.highlight(WHATIF), self._whatif, text=WHATIF,
                      help="predict a manifest on a simulated fork")
        hits = []
        possible = in_order(query).search
        for ref in self._objects:
            label = f"{ref.kind} {objname(ref.namespace, ref.name)}"
            if not possible(label):
                continue
            score, offsets = matcher.fuzzy_search.match(query, label)
            if score > 0:
                q = query.strip().lower()
                if ref.name.lower() == q:  # the object named exactly so comes first
                    score *= 4
                elif ref.name.lower().startswith(q):
                    score *= 2
                hits.append((score, label, ref, offsets))
        hits.sort(key=lambda h: (-h[0], h[1]))
        for score, label, ref, offsets in hits[:MAX_OBJECT_HITS]:
            # Scores from fuzzy_search are unbounded; the palette wants 0..1 and screens first.
            yield Hit(min(0.99, score / (score + 10)), _highlight(label, offsets), partial(self._open, ref),
                      text=label, help="open object")
