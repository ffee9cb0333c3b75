"""A Pod's log (`l` on a Pod): read on demand through the API (`GET …/pods/NAME/log`), never stored. Follow
streams new lines and keeps the newest in view; the previous container, wrap, timestamps, a search that keeps
the matching lines (`/`, as k9s does) and saving to a file. A read: allowed in read-only mode.

Lines are always asked with timestamps and shown with or without them, so `t` needs no new read. A refusal is
said in the server's words: "not allowed to read logs (HTTP 403 …)", "container … is waiting to start".
"""

from __future__ import annotations

import re
import time
from dataclasses import replace

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, RichLog, Static
from textual.worker import Worker

from taudash.engine.paths import state_dir, write_atomic
from taudash.engine.rules.base import ObjRef
from taudash.engine.session import Session
from taudash.engine.sources.ondemand import FORBIDDEN, NOT_FOUND, SYNCED, LogEnd, LogOptions

from .kit.base import DashScreen
from .kit.text import clean, lit, span

KEEP = 5000  # lines kept on screen (the oldest go first while following)
STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) ")


def split_stamp(line: str) -> tuple[str, str]:
    """("2026-12-02T15:11:22.000000000Z", "the text") of a line read with timestamps; ("", line) without one."""
    m = STAMP.match(line)
    return (m.group(1), line[m.end():]) if m else ("", line)


def refusal(end: LogEnd) -> str:
    """What the operator reads when the server did not hand the log over."""
    if end.access == FORBIDDEN:
        return f"not allowed to read logs ({end.message or f'HTTP {end.status}'})"
    if end.access == NOT_FOUND:
        return f"no such Pod any more ({end.message or 'HTTP 404'})"
    if end.status == 400:
        return end.message  # the API server's own sentence: "container … is waiting to start: ContainerCreating"
    return f"the log could not be read: {end.message}"


class LogScreen(DashScreen):
    TITLE_TEXT = "Pod log"
    AUTO_FOCUS = "#log-view"
    HELP = """\
Pod log: the container's output, read from the API server when this screen opens (never stored).

f          follow: stream new lines and keep the newest in view (on at first); f again stops
p          the previous container (the one before the last restart) / the current one again
c          the next container (a Pod with several)
w          wrap long lines
t          show each line's timestamp (the kubelet's)
/          search: keep only the lines holding the text (esc clears it)
s          save what was read to a file (its path is shown)
esc        back (the read stops)"""
    BINDINGS = [
        Binding("f", "follow", "follow", show=False),
        Binding("p", "previous", "previous container", show=False),
        Binding("c", "container", "next container", show=False),
        Binding("w", "wrap", "wrap", show=False),
        Binding("t", "timestamps", "timestamps", show=False),
        Binding("s", "save", "save", show=False),
    ]
    FOOTER_KEYS = (("f", "follow"), ("p", "previous"), ("w", "wrap"), ("t", "time"), ("s", "save"))
    DEFAULT_CSS = """
    LogScreen #log-body { height: 1fr; }
    LogScreen #log-view { height: 1fr; border: none; padding: 0 1; scrollbar-size-vertical: 1; }
    LogScreen #log-search-bar { height: 1; display: none; }
    LogScreen #log-search-bar.open { display: block; }
    LogScreen #log-search-label { width: 9; color: $accent; }
    LogScreen #log-search { width: 1fr; height: 1; border: none; padding: 0; }
    """

    def __init__(self, session: Session, ref: ObjRef, containers: tuple[str, ...] = (), started: bool = True,
                 nav: str | None = None) -> None:
        super().__init__(session, nav)
        self.ref = ref
        self.containers = containers
        self.options = LogOptions(container=containers[0] if len(containers) > 1 else "", follow=True,
                                  timestamps=True)
        self.show_stamps = False
        self.wrap = False
        self.search = ""
        self.lines: list[str] = []  # as read (with the server's timestamps)
        self.end: LogEnd | None = None  # how the last read ended; None while it runs
        self.saved = ""  # the file the last `s` wrote
        self._reader: Worker | None = None

    def compose_body(self) -> ComposeResult:
        with Vertical(id="log-body"):
            yield Static(id="log-status", classes="tile")
            yield RichLog(id="log-view", wrap=False, markup=False, highlight=False, auto_scroll=True,
                          max_lines=KEEP)
            with Horizontal(id="log-search-bar"):
                yield Static("search /", id="log-search-label")
                yield Input(id="log-search", placeholder="text to keep (enter) · esc clears", compact=True)

    def on_mount(self) -> None:
        super().on_mount()
        self._read()

    def on_unmount(self) -> None:
        self._stop()

    # reading ------------------------------------------------------------------------------
    def _read(self) -> None:
        self._stop()
        self.lines, self.end, self.saved = [], None, ""
        self.query_one("#log-view", RichLog).clear()
        od = self.session.on_demand
        if od is None:
            self.end = LogEnd("Unavailable", f"{self.session.mode.lower()} source: no cluster to ask")
            self._status()
            return
        self._status()
        self._reader = self._stream(od, self.options)

    def _stop(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None

    @work(exclusive=True, group="pod-log", exit_on_error=False, description="read the Pod's log")
    async def _stream(self, od, options: LogOptions) -> None:
        end = await od.stream_log(self.ref, options, self._arrived)
        if options == self.options:
            self.end = end
            self._reader = None
            if self.is_mounted:
                self._status()

    def _arrived(self, lines: list[str]) -> None:
        self.lines.extend(lines)
        if len(self.lines) > KEEP:
            del self.lines[: len(self.lines) - KEEP]
        if not self.is_mounted:
            return
        view = self.query_one("#log-view", RichLog)
        for line in lines:
            shown = self._shown(line)
            if shown is not None:
                view.write(shown, scroll_end=self.options.follow)
        self._status()

    def _shown(self, line: str) -> Text | None:
        stamp, text = split_stamp(line)
        if self.search and self.search.lower() not in text.lower():
            return None
        t = Text(end="")
        if self.show_stamps and stamp:
            t.append(stamp + " ", style=self.tones.muted)
        body = lit(text)
        if self.search:
            body.highlight_words([self.search], style=self.tones.accent, case_sensitive=False)
        t.append(body)
        return t

    def _redraw(self) -> None:
        view = self.query_one("#log-view", RichLog)
        view.clear()
        view.wrap = self.wrap
        for line in self.lines:
            shown = self._shown(line)
            if shown is not None:
                view.write(shown, scroll_end=False)
        if self.options.follow:
            view.scroll_end(animate=False)
        self._status()

    def _status(self) -> None:
        tones = self.tones
        o = self.options
        t = span("Pod ", tones.muted)
        t.append(lit(f"{self.ref.namespace}/{self.ref.name}", "bold"))
        if o.container or len(self.containers) == 1:
            t.append("  container ", style=tones.muted)
            t.append(lit(o.container or self.containers[0]))
        if o.previous:
            t.append("  (previous)", style=tones.accent)
        t.append(f"  {len(self.lines)} line{'s' if len(self.lines) != 1 else ''}", style=tones.muted)
        if self.search:
            t.append("  search ", style=tones.muted)
            t.append(lit(self.search, tones.accent))
        flags = [("follow", o.follow), ("wrap", self.wrap), ("timestamps", self.show_stamps)]
        t.append("   " + " · ".join(f"{name} {'on' if on else 'off'}" for name, on in flags), style=tones.muted)
        t.append("\n")
        end = self.end
        if end is None:
            t.append("● streaming (f stops)" if o.follow else "reading…", style=tones.ok if o.follow else tones.muted)
        elif end.access == SYNCED:
            t.append("the container's log ended" if o.follow else "read once (f follows)", style=tones.muted)
        else:
            t.append("⚠ ", style=tones.warn)
            t.append(lit(refusal(end), tones.warn))
        if self.saved:
            t.append("   saved to ", style=tones.muted)
            t.append(lit(self.saved, tones.accent))
        self.query_one("#log-status", Static).update(t)

    # keys ---------------------------------------------------------------------------------
    def action_follow(self) -> None:
        if self.options.follow and self._reader is not None:
            self._stop()
            self.options = replace(self.options, follow=False)
            self.end = LogEnd(SYNCED)
            self._status()
            return
        self.options = replace(self.options, follow=True)
        self._read()

    def action_previous(self) -> None:
        self.options = replace(self.options, previous=not self.options.previous)
        self._read()

    def action_container(self) -> None:
        if len(self.containers) < 2:
            self.notify("this Pod has one container", timeout=2)
            return
        i = self.containers.index(self.options.container) if self.options.container in self.containers else -1
        self.options = replace(self.options, container=self.containers[(i + 1) % len(self.containers)])
        self._read()

    def action_wrap(self) -> None:
        self.wrap = not self.wrap
        self._redraw()

    def action_timestamps(self) -> None:
        self.show_stamps = not self.show_stamps
        self._redraw()

    def action_filter(self) -> None:  # `/`: search, not a table filter
        bar = self.query_one("#log-search-bar")
        bar.add_class("open")
        field = self.query_one("#log-search", Input)
        field.value = self.search
        field.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "log-search":
            return
        event.stop()
        self.search = clean(event.value).strip()
        self.query_one("#log-search-bar").remove_class("open")
        self.query_one("#log-view", RichLog).focus()
        self._redraw()

    def action_back(self) -> None:
        bar = self.query_one("#log-search-bar")
        if bar.has_class("open"):
            bar.remove_class("open")
            self.query_one("#log-view", RichLog).focus()
            return
        if self.search:
            self.search = ""
            self._redraw()
            return
        self._stop()
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    def action_save(self) -> None:
        container = self.options.container or (self.containers[0] if self.containers else "log")
        name = f"{self.ref.namespace}_{self.ref.name}_{container}{'_previous' if self.options.previous else ''}"
        path = state_dir() / "logs" / f"{re.sub(r'[^A-Za-z0-9._-]', '-', name)}_{time.strftime('%Y%m%dT%H%M%S')}.log"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, "".join(line + "\n" for line in self.lines))
        except OSError as exc:
            self.notify(f"the log was not saved: {exc}", severity="error", markup=False)
            return
        self.saved = str(path)
        self.notify(f"saved {len(self.lines)} lines to {path}", markup=False, timeout=6)
        self._status()
