"""Literal text from the cluster, and the dashboard's symbols and semantic colours.

Every string that comes from the cluster (names, reasons, messages, labels) goes through `lit()`:
it builds a `rich.text.Text` (never parsed as markup) after making control characters visible,
so a message like "[bold]x[/]" or "\\x1b[2J" is shown as written and never styles or clears the screen.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.color import Color, ColorParseError

from taudash.engine.text import clean

MARK = {"ok": "✓", "warn": "⚠", "bad": "✖", "partial": "◐", "unknown": "?", "info": "ℹ"}
SEVERITY_TONE = {"critical": "bad", "warning": "warn", "info": "info"}
SEVERITY_MARK = {"critical": MARK["bad"], "warning": MARK["warn"], "info": MARK["info"]}
PHASE_TONE = {"Ready": "ok", "Pending": "partial", "Degraded": "bad"}


def lit(value: object, style: Style | str = "", multiline: bool = False) -> Text:
    """A Text holding `value` literally (no markup, no escape sequences); `style` covers only it."""
    t = Text(end="")
    t.append(clean(value, multiline), style=style or None)
    return t


def span(label: str, style: Style | str, end: str = "") -> Text:
    """A Text starting with `label` in `style`; what is appended later keeps its own style.

    (`Text(label, style=…)` would style everything appended to it as well.)
    """
    t = Text(end=end)
    t.append(label, style=style)
    return t


def join(*parts: Text | str, sep: str = "") -> Text:
    """Concatenate; plain `str` parts are our own fixed labels, also appended literally."""
    out = Text(end="")
    for i, p in enumerate(parts):
        if i and sep:
            out.append(sep)
        out.append(p if isinstance(p, Text) else Text(p))
    return out


@dataclass(frozen=True)
class Tones:
    """Semantic styles resolved from the active Textual theme (cells are Rich Text, not CSS)."""

    ok: Style
    warn: Style
    bad: Style
    info: Style
    partial: Style
    unknown: Style
    accent: Style
    heading: Style
    muted: Style
    badge_warn: Style
    badge_mode: Style
    bar_fill: Style
    bar_over: Style
    bar_empty: Style

    def of(self, tone: str) -> Style:
        return getattr(self, tone, self.unknown)

    def mark(self, tone: str, word: str = "") -> Text:
        """Symbol plus word in the tone's colour: colour never carries meaning alone."""
        t = Text(end="")
        t.append(MARK.get(tone, "?"), style=self.of(tone))
        if word:
            t.append(" ")
            t.append(lit(word, self.of(tone)))
        return t


def _color(variables: dict[str, str], name: str, fallback: str) -> str:
    try:
        return Color.parse(variables.get(name, fallback)).hex
    except ColorParseError:
        return Color.parse(fallback).hex


@lru_cache(maxsize=16)
def _tones(key: tuple[tuple[str, str], ...]) -> Tones:
    v = dict(key)
    background = _color(v, "background", "#121212")
    # A light theme: text in the theme's text-* shades (its own darker variants, legible on a light
    # background); a dark one keeps the base colours. Either way every colour comes from the theme.
    light = Color.parse(background).brightness > 0.5
    text = "text-" if light else ""
    ok = _color(v, text + "success", "#4EBF71")
    warn = _color(v, text + "warning", "#FFA62B")
    bad = _color(v, text + "error", "#BA3C5B")
    primary = _color(v, "primary", "#0178D4")
    accent = _color(v, text + "accent", "#FFA62B")
    secondary = _color(v, "secondary", "#004578")
    badge_bg = _color(v, "warning", "#FFA62B")
    badge_fg = Color.parse(badge_bg).get_contrast_text(1.0).hex if light else background
    return Tones(
        ok=Style(color=ok),
        warn=Style(color=warn),
        bad=Style(color=bad, bold=True),
        info=Style(color=primary),
        partial=Style(color=warn),
        unknown=Style(dim=True, italic=True),
        accent=Style(color=accent),
        heading=Style(bold=True, color=primary),
        muted=Style(dim=True),
        badge_warn=Style(color=badge_fg, bgcolor=badge_bg, bold=True),
        badge_mode=Style(color="#ffffff", bgcolor=secondary, bold=True),
        bar_fill=Style(color=primary),
        bar_over=Style(color=bad),
        bar_empty=Style(dim=True),
    )


def tones_for(variables: dict[str, str]) -> Tones:
    keys = ("success", "warning", "error", "primary", "accent", "secondary", "background",
            "text-success", "text-warning", "text-error", "text-accent")
    return _tones(tuple((k, variables.get(k, "")) for k in keys))


def app_tones(app: Any) -> Tones:
    """The app's tones, resolved once per theme: every widget asks each tick, and resolving the
    theme's CSS variables costs milliseconds."""
    key = (app.theme, app.ansi_color)
    cached = getattr(app, "_tones_cache", None)
    if cached is None or cached[0] != key:
        cached = app._tones_cache = (key, tones_for(app.get_css_variables()))
    return cached[1]
