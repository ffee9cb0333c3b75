"""The top bar: where the data comes from, how fresh it is, and that nothing can be written.

Mode and freshness are always visible; the READ-ONLY badge uses the warning
colour so it reads in any theme and in a screenshot.
"""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Static

from taudash.engine.session import Frame

from ..kit.text import Tones, app_tones, lit

# What the header's words and symbols mean: the `?` help's "Reading the header" and the bar's tooltip.
HEADER_LEGEND = """\
Reading the header: the context (or snapshot file) · LIVE, SNAPSHOT or DEMO · freshness ·
TauCluster gen N · READ-ONLY (and why) or read/write.
● 25 s      a live cluster: time since the last watch event (green under 5 s, yellow under a
            minute, red older); "● stale since 13:58:02" when the API stopped answering
captured    a snapshot: when it was taken (its age; the timestamp too on a wide terminal)
gen N       the TauCluster's generation; "(observed M ⚠)": its controller has not acted on the
            latest spec yet
⚠ unknown   a second line naming what cannot be read; verdicts that need it say Unknown, never 0"""


def _age(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{int(seconds)} s"
    if seconds < 7200:
        return f"{int(seconds // 60)} min"
    return f"{int(seconds // 3600)} h"


def _captured(observed_at: str | None, now: datetime, wide: bool) -> str:
    """How old the snapshot is; the timestamp itself only where there is room for it."""
    if not observed_at:
        return "capture time not recorded"
    try:
        ts = datetime.fromisoformat(observed_at.replace("Z", "+00:00"))
    except ValueError:
        return f"captured {observed_at}"
    if ts.tzinfo is None:
        return f"captured {observed_at}"
    age = f"captured {_age(max(0.0, (now - ts).total_seconds()))} ago"
    return f"{age} ({ts.strftime('%Y-%m-%d %H:%M:%SZ')})" if wide else age


def stale_since(since: float | None, now: datetime) -> str:
    """'stale since 13:58:02 (12 s)' in the clock's own time zone."""
    if since is None:
        return "stale"
    at = datetime.fromtimestamp(since, tz=now.tzinfo or datetime.now().astimezone().tzinfo)
    zone = "Z" if at.utcoffset() is not None and not at.utcoffset() else ""
    return f"stale since {at.strftime('%H:%M:%S')}{zone} ({_age(max(0.0, now.timestamp() - since))})"


class HeaderBar(Widget):
    DEFAULT_CSS = """
    HeaderBar {
        dock: top;
        height: auto;
        background: $panel;
    }
    HeaderBar > Horizontal { height: 1; }
    HeaderBar #hb-left { width: 1fr; height: 1; }
    HeaderBar #hb-right { width: auto; height: 1; }
    HeaderBar #hb-problems { height: 1; display: none; }
    HeaderBar.-problems #hb-problems { display: block; }
    """
    _shown: tuple = (None, None, None)  # the left, right and problems content last shown
    _pending: Frame | None = None  # a frame that arrived before the children were composed
    _frame: Frame | None = None  # the last frame shown (drawn again at a new width)

    def on_mount(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            self.show(pending)

    def compose(self) -> ComposeResult:
        with Horizontal():
            left = Static(Text(" taudash  loading…", style="bold"), id="hb-left")
            left.tooltip = HEADER_LEGEND
            yield left
            yield Static("", id="hb-right")
        yield Static("", id="hb-problems")

    def on_resize(self) -> None:
        # What the left side says depends on the header's width (the capture time from 140 columns): the
        # last frame again at the width the layout gave, whenever that came after the frame.
        if self._frame is not None:
            self.show(self._frame)

    def show(self, frame: Frame) -> None:
        self._frame = frame
        if not self.query("#hb-problems"):
            # Not composed yet (a screen composed in the background, or one closing while the app exits):
            # the frame is shown once the children exist.
            self._pending = frame
            return
        tones = app_tones(self.app)
        problems = self._problems(frame, tones)
        shown = (self._left(frame, tones, self.size.width >= 140), self._right(frame, tones), problems or "")
        last = self._shown
        # Every tick passes here; an update re-lays the screen out, so only what changed is updated.
        for wid, new, old in zip(("#hb-left", "#hb-right", "#hb-problems"), shown, last, strict=True):
            if new != old:
                self.query_one(wid, Static).update(new)
        self._shown = shown
        self.set_class(problems is not None, "-problems")

    @staticmethod
    def _left(frame: Frame, tones: Tones, wide: bool = False) -> Text:
        view, fresh = frame.view, frame.freshness
        src = view.source
        t = Text(end="", no_wrap=True, overflow="ellipsis")
        t.append(" taudash ", style="bold")
        t.append(" ")
        t.append(lit(src.context or src.path or "no context", "bold"))
        t.append(" · ")
        t.append(f" {fresh.mode} ", style=tones.badge_mode)
        t.append(" ")
        if src.type == "agents":  # a fleet read from agents: no cluster of its own until one is opened
            t.append("summaries: Enter opens one live", style=tones.muted)
            return t
        if src.type in ("kube", "sim"):  # a live source: fresh while every watch is open and heard from
            if fresh.unreachable:
                t.append(f"● {stale_since(fresh.unreachable_since, frame.now)}", style=tones.bad)
            elif fresh.age is None:
                t.append("● waiting for the first event", style=tones.warn)
            elif fresh.stale_watches:
                t.append(f"● stale {_age(fresh.age)}", style=tones.bad)
            elif fresh.watched:  # a quiet cluster is fresh: bookmarks say its watches live
                t.append(f"● {_age(fresh.age)}", style=tones.ok)
            else:  # no watch health to read (a source that only reports events)
                tone = tones.ok if fresh.age < 5 else tones.warn if fresh.age < 60 else tones.bad
                t.append(f"● {_age(fresh.age)}", style=tone)
        else:
            t.append(_captured(fresh.observed_at, frame.now, wide), style=tones.muted)
        c = view.cluster
        t.append(" · ")
        if c is None and not view.profiles.applicable:  # TauGrid not installed: a plain Kueue cluster
            t.append("plain Kueue (no TauGrid)", style=tones.muted)
        elif c is None:
            t.append("no TauCluster", style=tones.warn)
        else:
            t.append(f"TauCluster gen {c.generation}")
            if c.observed_generation != c.generation:
                t.append(f" (observed {c.observed_generation} ⚠)", style=tones.warn)
        return t

    @staticmethod
    def _right(frame: Frame, tones: Tones) -> Text:
        t = Text(end="")
        if frame.freshness.read_only:
            t.append("▌READ-ONLY▐", style=tones.badge_warn)
            if frame.freshness.read_only_why:
                t.append(" ")
                t.append(lit(frame.freshness.read_only_why, tones.warn))
        else:
            t.append(" read/write ", style=tones.muted)
        t.append(" ")
        return t

    @staticmethod
    def _problems(frame: Frame, tones: Tones) -> Text | None:
        fresh = frame.freshness
        if frame.view.source.type == "agents":  # nothing read here: each agent's row says its own state
            return None
        if fresh.unreachable:  # one cluster-level line, not one entry per kind
            t = Text(end="", no_wrap=True, overflow="ellipsis")
            t.append(" ✖ API unreachable", style=tones.bad)
            if fresh.unreachable_since is not None:
                t.append(f" — {stale_since(fresh.unreachable_since, frame.now)}", style=tones.bad)
            t.append("  figures are last known or ?; verdicts that need fresh data are Unknown", style=tones.muted)
            if fresh.unreachable_why:
                t.append("  ")
                t.append(lit(fresh.unreachable_why, tones.muted))
            return t
        probs = frame.freshness.problems
        if not frame.view.profiles.applicable:  # plain Kueue: TauGrid APIs not served is expected, not unknown
            probs = tuple(p for p in probs
                          if not (p.state == "Absent" and p.kind in ("TauCluster", "TauTeam", "TauWorkspace")))
        if not probs and fresh.stale_watches:
            t = Text(end="", no_wrap=True, overflow="ellipsis")
            t.append(f" ⚠ watch stale: {', '.join(fresh.stale_watches)}", style=tones.bad)
            t.append(f"  broken, or silent for more than {fresh.watch_bound or 0:.0f} s: the data may be behind",
                     style=tones.muted)
            return t
        if not probs:
            return None
        now = frame.now.timestamp()
        t = Text(end="", no_wrap=True, overflow="ellipsis")
        t.append(" ⚠ unknown: ", style=tones.warn)
        for i, p in enumerate(probs):
            if i:
                t.append(" · ", style=tones.warn)
            t.append(lit(p.describe(now), tones.warn))
        t.append("  (verdicts that need them are Unknown)", style=tones.muted)
        return t
