"""The wallboard: `taudash serve --web ADDR` shows the dashboard to browsers, read-only by construction.

One engine for every viewer. The serve process holds the one live source and Session; each browser
tab gets its own `WallboardApp` (the dashboard's TaudashApp) *in this process*, on this event loop,
with an in-process Textual driver (`TabDriver`) that speaks textual-serve's browser protocol over the
tab's websocket: terminal output as binary frames, `["stdin", …]`/`["resize", …]` JSON from the page,
rendered by textual-serve's own xterm.js front-end (its static files, served from the installed
package). A tab app never derives: it renders the frame the serve loop derived last
(`session.last_frame`), so ten tabs cost ten renders, not ten derives, and the cluster sees one set
of watches however many tabs are open. Decision and measurements: docs/decisions.md, docs/benchmarks.md
("Wallboard").

Read-only by construction: the shared session's write path is `Actions.read_only(WEB_REASON)` (no
HTTP client; `attach` refuses any other session), this module builds no write path, and the tab app
has no write handlers at all — an operation or workflow request is answered with a notice; file
delivery (screenshots to the browser) is refused too, so a viewer cannot even make the server write a file.

Access: loopback by default; any other address needs a token (`--web-token` / TAUDASH_WEB_TOKEN),
checked with `hmac.compare_digest` on every request — `Authorization: Bearer TOKEN`, or `?token=TOKEN`
once on the page's first load, which sets an HttpOnly SameSite=Strict cookie (a MAC of the token, not
the token) and redirects to a URL without it. The token is never logged: there is no access log, and
no log line carries a URL or a header. Websockets from another origin are refused (a page on another
site cannot read the wallboard through the viewer's browser).
"""

from __future__ import annotations

import asyncio
import html
import json
import sys
from codecs import getincrementaldecoder
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web
from rich.color import ColorSystem
from textual import constants, events
from textual._xterm_parser import XTermParser
from textual.driver import Driver
from textual.geometry import Size

from taudash.engine.session import Session
from taudash.screens.kit.messages import (
    AbortWorkflow,
    NewWorkflow,
    RequestOperation,
    ResumeWorkflow,
    StartWorkflow,
)

from ..app import SCREENS, TaudashApp
from .access import COOKIE, MIN_TOKEN, TOKEN_ENV, authorized, cookie_value, same
from .access import token_from as token_from  # the wallboard's options read it from here
from .exporter import ListenAddress

WEB_REASON = "web wallboard: read-only by construction"
MAX_VIEWERS = 64  # tabs at once; one more is answered 503
MAX_BUFFERED = 8 * 1024 * 1024  # output bytes queued for one tab before it is disconnected as too slow
DEFAULT_TICK = 1.0  # seconds between a tab's looks at the newest frame


def static_dir() -> Path:
    """textual-serve's browser front-end (xterm.js and its glue), from the installed package."""
    import textual_serve

    return Path(textual_serve.__file__).resolve().parent / "static"


class OptionsError(ValueError):
    pass


@dataclass(frozen=True)
class WebOptions:
    address: ListenAddress
    token: str | None = field(default=None, repr=False)  # never in a repr: tracebacks may print locals
    kiosk: tuple[str, ...] = ()  # screens to rotate through (names of app.SCREENS); () = no rotation
    kiosk_interval: float = 30.0
    tick: float = DEFAULT_TICK

    def __post_init__(self) -> None:
        if not self.address.loopback and not self.token:
            raise OptionsError(f"--web {self.address.host}:{self.address.port} is beyond this machine: "
                               f"an access token is required (--web-token or ${TOKEN_ENV})")
        if self.token is not None and len(self.token) < MIN_TOKEN:
            raise OptionsError(f"the wallboard token must be at least {MIN_TOKEN} characters")
        unknown = [s for s in self.kiosk if s not in SCREENS]
        if unknown:
            raise OptionsError(f"--kiosk: no screen {', '.join(map(repr, unknown))}; screens: {', '.join(SCREENS)}")
        if not self.kiosk_interval > 0:
            raise OptionsError("--kiosk-interval must be a positive number of seconds")


def parse_kiosk(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    return tuple(s.strip() for s in text.split(",") if s.strip())


# --- one tab: driver and app ------------------------------------------------------------------------------


class Tab:
    """One browser tab: the queue of output for its websocket, and input waiting for its driver."""

    def __init__(self) -> None:
        self.out: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.buffered = 0
        self.driver: TabDriver | None = None
        self.early: list[tuple[str, Any]] = []  # input that came before the driver existed
        self.too_slow = False

    def send(self, data: bytes) -> None:
        if self.too_slow:
            return
        self.buffered += len(data)
        if self.buffered > MAX_BUFFERED:
            self.too_slow = True
            self.out.put_nowait(None)
            return
        self.out.put_nowait(data)

    def input(self, kind: str, payload: Any) -> None:
        if self.driver is None:
            self.early.append((kind, payload))
        else:
            self.driver.receive(kind, payload)


class TabDriver(Driver):
    """A Textual driver for an app running in this process whose terminal is a browser tab: output
    goes to the tab's queue (the event loop's thread only), input arrives as parsed websocket messages."""

    def __init__(self, app: WallboardApp, *, debug: bool = False, mouse: bool = True,
                 size: tuple[int, int] | None = None) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self.tab = app.tab
        self._parser = XTermParser(debug=debug)
        self._decode = getincrementaldecoder("utf-8")().decode
        self._stopped = False
        self._stopped_input = False
        self._flush: asyncio.TimerHandle | None = None
        self.tab.driver = self
        for kind, payload in self.tab.early:
            self.receive(kind, payload)
        self.tab.early.clear()

    @property
    def is_web(self) -> bool:
        return True

    def write(self, data: str) -> None:
        if self._stopped:
            return
        payload = data.encode("utf-8")
        try:
            on_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            self.tab.send(payload)
        else:  # a write from another thread: hand it to the loop
            self._loop.call_soon_threadsafe(self.tab.send, payload)

    def flush(self) -> None:
        pass

    def start_application_mode(self) -> None:
        for seq in ("\x1b[?1049h",  # alternate screen
                    "\x1b[?1000h", "\x1b[?1003h", "\x1b[?1015h", "\x1b[?1006h",  # mouse reporting
                    "\x1b[?25l",  # hide the cursor
                    "\x1b[?2004h"):  # bracketed paste
            self.write(seq)
        size = Size(80, 24) if self._size is None else Size(*self._size)
        self._app.post_message(events.Resize(size, size))

    def disable_input(self) -> None:
        self._stopped_input = True

    def stop_application_mode(self) -> None:
        self.write("\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?2004l\x1b[?1049l")
        self._stopped = True
        self.tab.out.put_nowait(None)  # the tab's session is over: close its websocket

    def receive(self, kind: str, payload: Any) -> None:
        """One message from the page (on the loop): keys and mouse as terminal input, or a resize."""
        if self._stopped or self._stopped_input:
            return
        if kind == "stdin" and isinstance(payload, str):
            for event in self._parser.feed(payload):
                self.process_message(event)
            # A lone ESC (the Escape key) is held until ESCAPE_DELAY passes with nothing after it.
            if self._flush is not None:
                self._flush.cancel()
            self._flush = self._loop.call_later(constants.ESCAPE_DELAY + 0.02, self._timeouts)
        elif kind == "resize" and isinstance(payload, dict):
            width, height = payload.get("width"), payload.get("height")
            if isinstance(width, int) and isinstance(height, int) and 0 < width <= 1000 and 0 < height <= 500:
                self._size = (width, height)
                self._app.post_message(events.Resize(Size(width, height), Size(width, height)))
        elif kind == "focus":
            self._app.post_message(events.AppFocus())
        elif kind == "blur":
            self._app.post_message(events.AppBlur())

    def _timeouts(self) -> None:
        self._flush = None
        if not self._stopped:
            for event in self._parser.tick():
                self.process_message(event)

    def deliver_binary(self, binary, *, delivery_key, save_path, open_method="download", encoding=None,
                       mime_type=None, name=None) -> None:
        """Refused: a wallboard tab neither downloads files nor makes the server write one."""
        binary.close()
        self._delivery_failed(delivery_key, exception=PermissionError("the wallboard delivers no files"), name=name)


class WallboardApp(TaudashApp):
    """The dashboard for one tab: renders the serve loop's newest frame, never derives, never writes."""

    TITLE = "taudash wallboard"
    CSS_PATH = str(Path(sys.modules[TaudashApp.__module__].__file__ or "").parent / TaudashApp.CSS_PATH)

    def __init__(self, session: Session, tab: Tab, options: WebOptions, streams: tuple[Any, Any]) -> None:
        super().__init__(session, tick=options.tick)
        self.tab = tab
        self.options = options
        self.driver_class = TabDriver
        self._rendered: object | None = None
        self._kiosk_at = 0
        self.refusals = 0  # write requests answered with a notice (tests read it)
        # Colours as in a modern terminal, whatever the server's TERM says.
        self.console._color_system = ColorSystem.TRUECOLOR
        # Textual redirects sys.stdout/stderr to the app while it runs; with several apps in one process
        # those redirections nest and unwind in any order. Point them at the process's own streams so the
        # service's log lines keep reaching its stderr, whichever tabs come and go.
        self._capture_stdout, self._capture_stderr = streams

    def on_mount(self) -> None:
        # Textual runs TaudashApp.on_mount after this one (handlers run down the MRO): start the
        # rotation once the screens it adds exist.
        if self.options.kiosk:
            self.call_later(self._start_kiosk)

    def _start_kiosk(self) -> None:
        self.action_go(self.options.kiosk[0])
        self.set_interval(self.options.kiosk_interval, self._rotate, name="kiosk")

    def _rotate(self) -> None:
        if not self.is_running or getattr(self, "_exit", False) or not self._screen_stack:
            return  # the timer can fire while the app exits: there is no screen stack to switch on
        screens = self.options.kiosk
        self._kiosk_at = (self._kiosk_at + 1) % len(screens)
        self.action_go(screens[self._kiosk_at])

    def _tick(self) -> None:
        """The serve loop derives; a tab only renders a frame it has not rendered yet."""
        frame = self.session.last_frame
        try:
            if frame is not None and frame is not self._rendered:
                self._rendered = frame
                self.render_frame(frame)
        finally:
            self._schedule()

    # no write path: every door to one answers with a notice -------------------------------------------
    # (Textual would run the dashboard's handler after each of these: `prevent_default` stops it.)
    def _refuse(self, message, what: str) -> None:
        message.prevent_default()
        message.stop()
        self.refusals += 1
        self.notify(f"read-only: {what} was not run ({WEB_REASON})", severity="warning", markup=False)

    def on_request_operation(self, message: RequestOperation) -> None:
        self._refuse(message, message.title)

    def on_new_workflow(self, message: NewWorkflow) -> None:
        self._refuse(message, "a new workflow")

    def on_start_workflow(self, message: StartWorkflow) -> None:
        self._refuse(message, "starting a workflow")

    def on_resume_workflow(self, message: ResumeWorkflow) -> None:
        self._refuse(message, "resuming a workflow")

    def on_abort_workflow(self, message: AbortWorkflow) -> None:
        self._refuse(message, "aborting a workflow")

    def get_system_commands(self, screen):
        for command in super().get_system_commands(screen):
            if command.title not in ("Screenshot", "Quit"):
                yield command

    def action_screenshot(self, *args, **kwargs) -> None:
        self.notify("the wallboard saves no screenshots on the server", markup=False)


# --- the HTTP side ------------------------------------------------------------------------------------------

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/css/xterm.css">
<style>
@font-face {{ font-family: "Roboto Mono"; src: url("/static/fonts/RobotoMono-VariableFont_wght.ttf"); }}
html, body {{ margin: 0; height: 100%; background: #0c181f; overflow: hidden; }}
#terminal {{ position: absolute; inset: 0; }}
.closed-dialog {{ display: none; position: absolute; inset: 0; z-index: 10; align-items: center;
  justify-content: center; color: #eee; font: 16px "Roboto Mono", monospace; background: #0c181fcc; }}
body.-closed .closed-dialog {{ display: flex; }}
</style>
<script src="/static/js/textual.js"></script>
</head>
<body>
<div class="closed-dialog"><div>Wallboard session ended. <a href="/" style="color:#8cf">Reconnect</a></div></div>
<div id="terminal" class="textual-terminal" data-session-websocket-url="{ws}" data-font-size="{font_size}"></div>
</body>
</html>
"""


Say = Callable[[str], None]


class WallboardServer:
    """aiohttp on ADDR: the page, textual-serve's static front-end, and a websocket per tab."""

    def __init__(self, session: Session | None, options: WebOptions, say: Say,
                 streams: tuple[Any, Any] | None = None) -> None:
        self.session: Session | None = None  # None until the source has synced (`attach`): the page says so
        if session is not None:
            self.attach(session)
        self.options = options
        self.say = say
        self.streams = streams or (sys.stdout, sys.stderr)
        self.tabs: set[Tab] = set()
        self.apps: set[WallboardApp] = set()
        self.port: int | None = None
        self.refused = 0  # requests answered 401/403 (tests read it)
        self._runner: web.AppRunner | None = None
        self._tasks: set[asyncio.Task] = set()

    # lifecycle ------------------------------------------------------------------------------------------
    async def start(self) -> int:
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/", self._index)
        app.router.add_get("/ws", self._websocket)
        app.router.add_static("/static", static_dir(), show_index=False, follow_symlinks=False)
        # No access log: a first load's URL carries the token.
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.options.address.host, self.options.address.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self.port

    async def stop(self) -> None:
        for app in list(self.apps):
            app.exit()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=5)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def attach(self, session: Session) -> None:
        """Show `session` to the browsers: a read-only one only, whose write path holds no client (serve builds
        it so, saying WEB_REASON); anything else is refused before a tab can see it."""
        if not session.read_only or session.actions.writable:
            raise ValueError("the wallboard shows a read-only session only (its write path must hold no client)")
        self.session = session

    def url(self) -> str:
        host = self.options.address.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/"

    # access -------------------------------------------------------------------------------------------
    def _authorized(self, request: web.Request) -> bool:
        return authorized(self.options.token, request.headers.get("Authorization", ""), request.cookies.get(COOKIE))

    @web.middleware
    async def _guard(self, request: web.Request, handler) -> web.StreamResponse:
        token = self.options.token
        if token is not None and not self._authorized(request):
            given = request.query.get("token")
            if request.method == "GET" and request.path == "/" and given is not None and same(given, token):
                # The first load with the token: keep it as a cookie, and leave no token in the address bar.
                size = _int(request.query.get("fontsize"), 0, 64)
                resp = web.Response(status=303, headers={"Location": f"/?fontsize={size}" if size else "/"})
                resp.set_cookie(COOKIE, cookie_value(token), httponly=True, samesite="Strict", path="/")
                resp.headers["Cache-Control"] = "no-store"
                resp.headers["Referrer-Policy"] = "no-referrer"
                return resp
            self.refused += 1
            self.say(f"web: refused a request without a valid token from {request.remote or '?'}")
            return web.Response(status=401, text="401: the wallboard needs its access token "
                                "(open it once with ?token=… or send Authorization: Bearer …)\n",
                                headers={"WWW-Authenticate": 'Bearer realm="taudash wallboard"'})
        resp = await handler(request)
        if isinstance(resp, web.Response | web.FileResponse):
            resp.headers.setdefault("Referrer-Policy", "no-referrer")
            resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        return resp

    def _same_origin(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser page (curl, a test client): the token, if any, was checked
        scheme, _, rest = origin.partition("://")
        return scheme in ("http", "https") and rest.rstrip("/").lower() == request.host.lower()

    # pages --------------------------------------------------------------------------------------------
    async def _index(self, request: web.Request) -> web.Response:
        if self.session is None:
            return _syncing()
        try:
            font_size = max(6, min(64, int(request.query.get("fontsize", "16"))))
        except ValueError:
            font_size = 16
        # behind a TLS-terminating proxy the page came over https: its websocket must too
        secure = request.secure or request.headers.get("X-Forwarded-Proto", "").lower() == "https"
        scheme = "wss" if secure else "ws"
        ws = f"{scheme}://{request.host}/ws"
        source = self.session.source
        title = f"taudash wallboard — {source.context or source.path or source.type}"
        body = PAGE.format(title=html.escape(title), ws=html.escape(ws, quote=True), font_size=font_size)
        return web.Response(text=body, content_type="text/html",
                            headers={"Cache-Control": "no-store", "Content-Security-Policy":
                                     "default-src 'self'; connect-src 'self' ws: wss:; "
                                     "style-src 'self' 'unsafe-inline'; img-src 'self' data:"})

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        if not self._same_origin(request):
            self.refused += 1
            self.say(f"web: refused a websocket from another origin ({request.remote or '?'})")
            return web.Response(status=403, text="403: cross-origin websocket refused\n")
        if self.session is None:
            return _syncing()
        if len(self.tabs) >= MAX_VIEWERS:
            return web.Response(status=503, text=f"503: {MAX_VIEWERS} viewers already\n")
        ws = web.WebSocketResponse(heartbeat=15, max_msg_size=1 << 20)
        await ws.prepare(request)
        width = _int(request.query.get("width"), 80, 1000)
        height = _int(request.query.get("height"), 24, 500)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._serve_tab(ws, width, height, request.remote or "?")
        finally:
            if task is not None:
                self._tasks.discard(task)
        return ws

    async def _serve_tab(self, ws: web.WebSocketResponse, width: int, height: int, remote: str) -> None:
        assert self.session is not None
        tab = Tab()
        app = WallboardApp(self.session, tab, self.options, self.streams)
        self.tabs.add(tab)
        self.apps.add(app)
        self.say(f"web: viewer connected from {remote} ({len(self.tabs)} open)")
        running = asyncio.create_task(app.run_async(size=(width, height)), name="wallboard tab")
        # however the app ends (q, an error before its driver existed), the tab's socket closes with it
        running.add_done_callback(lambda _: tab.out.put_nowait(None))
        sender = asyncio.create_task(self._send(ws, tab), name="wallboard output")
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                try:
                    envelope = json.loads(msg.data)
                except ValueError:
                    continue
                if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
                    continue
                kind, payload = envelope[0], envelope[1] if len(envelope) > 1 else None
                if kind == "ping":
                    await ws.send_json(["pong", payload])
                elif kind in ("stdin", "resize", "focus", "blur"):
                    tab.input(kind, payload)
                if running.done() or sender.done():
                    break
        finally:
            app.exit()
            try:
                await asyncio.wait_for(asyncio.shield(running), 5)
            except (TimeoutError, Exception):  # an app that failed has said so on its own
                running.cancel()
            tab.out.put_nowait(None)
            try:
                await asyncio.wait_for(sender, 2)
            except (TimeoutError, Exception):
                sender.cancel()
            if not ws.closed:
                await ws.close()
            self.tabs.discard(tab)
            self.apps.discard(app)
            why = " (too slow to keep up)" if tab.too_slow else ""
            self.say(f"web: viewer disconnected{why} ({len(self.tabs)} open)")

    async def _send(self, ws: web.WebSocketResponse, tab: Tab) -> None:
        while True:
            data = await tab.out.get()
            chunks = [] if data is None else [data]
            while data is not None and not tab.out.empty():
                data = tab.out.get_nowait()
                if data is not None:
                    chunks.append(data)
            if chunks:
                blob = b"".join(chunks)
                tab.buffered -= len(blob)
                try:
                    await ws.send_bytes(blob)
                except (ConnectionError, RuntimeError):
                    return
            if data is None:
                if not ws.closed:
                    await ws.close()
                return


def _syncing() -> web.Response:
    return web.Response(status=503, text="503: the wallboard is still syncing with the cluster; reload in a moment\n",
                        headers={"Retry-After": "5", "Cache-Control": "no-store"})


def _int(text: str | None, default: int, most: int) -> int:
    try:
        value = int(text) if text is not None else default
    except ValueError:
        return default
    return value if 0 < value <= most else default
