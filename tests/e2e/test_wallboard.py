"""`taudash serve --web`: options, access (token off loopback, never logged), the read-only tab app, the
kiosk rotation, and ten viewers on one set of watches. The real-browser run is
tests/e2e/test_wallboard_browser.py."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

import aiohttp
import pytest
from tools import paths
from tools.waiting import FrameCount, eventually
from tools.wallboard import Viewer, api_patch, wallboard, watch_requests, writes

from taudash.cli import main
from taudash.engine.actions import Actions
from taudash.engine.session import Session
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.view import SourceInfo
from taudash.screens.kit.messages import AbortWorkflow, NewWorkflow, RequestOperation, ResumeWorkflow, StartWorkflow
from taudash.serve.exporter import ListenAddress
from taudash.serve.web import (
    COOKIE,
    WEB_REASON,
    OptionsError,
    WallboardApp,
    WallboardServer,
    WebOptions,
    cookie_value,
    parse_kiosk,
    token_from,
)
from taudash.sim.server import SimServer

ROOT = paths.REPO
DEMO = ROOT / "snapshots" / "demo.yaml"
TOKEN = "wallboard-test-token-0123456789abcdef"
LOOP = ListenAddress("127.0.0.1", 0)


# --- options ------------------------------------------------------------------------------------------------


def test_loopback_needs_no_token_and_anything_else_does():
    assert WebOptions(LOOP).token is None
    with pytest.raises(OptionsError, match="token is required"):
        WebOptions(ListenAddress("0.0.0.0", 8080))
    with pytest.raises(OptionsError, match="token is required"):
        WebOptions(ListenAddress("wallboard.example", 8080))
    assert WebOptions(ListenAddress("0.0.0.0", 8080), token=TOKEN).token == TOKEN
    assert TOKEN not in repr(WebOptions(ListenAddress("0.0.0.0", 8080), token=TOKEN))  # tracebacks print locals
    with pytest.raises(OptionsError, match="at least 16"):
        WebOptions(ListenAddress("0.0.0.0", 8080), token="short")


def test_kiosk_screens_are_checked():
    assert parse_kiosk("overview, queues,pool") == ("overview", "queues", "pool")
    assert parse_kiosk(None) == () and parse_kiosk("") == ()
    assert WebOptions(LOOP, kiosk=("overview", "queues")).kiosk == ("overview", "queues")
    with pytest.raises(OptionsError, match="no screen 'nope'"):
        WebOptions(LOOP, kiosk=("overview", "nope"))
    with pytest.raises(OptionsError, match="positive"):
        WebOptions(LOOP, kiosk=("overview",), kiosk_interval=0)


def test_the_token_comes_from_the_flag_or_the_environment():
    assert token_from("a" * 20, {"TAUDASH_WEB_TOKEN": "b" * 20}) == "a" * 20
    assert token_from(None, {"TAUDASH_WEB_TOKEN": "b" * 20}) == "b" * 20
    assert token_from(None, {"TAUDASH_WEB_TOKEN": ""}) is None
    assert token_from(None, {}) is None


@pytest.mark.parametrize("argv, message", [
    (["--web", "0.0.0.0:8080"], "token is required"),
    (["--web", "8080", "--kiosk", "overview,nope"], "no screen 'nope'"),
    (["--web-token", TOKEN], "add --web"),
    (["--kiosk", "overview"], "add --web"),
    (["--web", "host:name:1"], "--web"),
])
def test_unusable_web_options_exit_2_before_connecting(argv, message, capsys, monkeypatch):
    monkeypatch.delenv("TAUDASH_WEB_TOKEN", raising=False)
    assert main(["serve", "--snapshot", str(DEMO), *argv]) == 2
    assert message in capsys.readouterr().err


# --- the tab app ---------------------------------------------------------------------------------------------


def snapshot_session() -> Session:
    loaded = load_snapshot(DEMO)
    return Session(loaded.store, SourceInfo(type="snapshot", path=str(DEMO)), read_only=True)


class Recording:
    """A write path that records instead of writing: what a tab would reach if it had a door."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.writable = True
        self.why_read_only = ""
        self.context = "test"

    def __getattr__(self, name):
        def record(*args, **kwargs):
            self.calls.append(name)
        return record


def test_the_wallboard_shows_only_a_read_only_session_whose_write_path_holds_no_client():
    loaded = load_snapshot(DEMO)
    writable = Session(loaded.store, SourceInfo(type="kube", path=str(DEMO)), actions=Recording())
    unlabelled = Session(loaded.store, SourceInfo(type="kube", path=str(DEMO)), actions=Actions.read_only("x"))
    for session in (writable, unlabelled):  # a write path with a client; a session that does not say read-only
        with pytest.raises(ValueError, match="read-only session only"):
            WallboardServer(None, WebOptions(LOOP), lambda _line: None).attach(session)
        with pytest.raises(ValueError, match="read-only session only"):
            WallboardServer(session, WebOptions(LOOP), lambda _line: None)
    shown = snapshot_session()
    server = WallboardServer(None, WebOptions(LOOP), lambda _line: None)
    server.attach(shown)
    assert server.session is shown and not shown.actions.writable


async def test_a_tab_app_has_no_write_path_even_on_a_writable_session(tmp_path, monkeypatch):
    """Every door to a write in the dashboard is closed in the tab app: the requests are answered with a
    notice and never reach the session's Actions, even when the session could write."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    loaded = load_snapshot(DEMO)
    # pretend a live, writable session: the tab app must not rely on the session to refuse
    session = Session(loaded.store, SourceInfo(type="kube", path=str(DEMO)), actions=Recording())
    assert not session.read_only
    from taudash.serve.web import Tab

    session.frame(datetime.now(UTC))
    app = WallboardApp(session, Tab(), WebOptions(LOOP), (sys.stdout, sys.stderr))
    async with app.run_test(size=(160, 48)) as pilot:
        for message in (RequestOperation("Hold ClusterQueue tau-ws-train", ["tau-ws-train"], True),
                        NewWorkflow("hold"), StartWorkflow("hold", {"cluster_queues": ["tau-ws-train"]}),
                        ResumeWorkflow("wf-1"), AbortWorkflow("wf-1")):
            app.post_message(message)
        await pilot.pause()
        assert await eventually(lambda: app.refusals == 5)
        assert session.actions.calls == []  # type: ignore[attr-defined]
        assert not app.workflows.live()
        assert "ConfirmScreen" not in [type(s).__name__ for s in app.screen_stack]
        notes = [n.message for n in app._notifications]
        assert all(WEB_REASON in n for n in notes) and len(notes) == 5
        assert not any(tmp_path.rglob("*.jsonl"))  # no journal was created


async def test_a_tab_renders_the_serve_loops_frame_and_never_derives():
    session = snapshot_session()
    derived = []
    real = session.frame

    def counting(now):
        derived.append(now)
        return real(now)

    first = real(datetime.now(UTC))
    from taudash.serve.web import Tab

    app = WallboardApp(session, Tab(), WebOptions(LOOP, tick=0.05), (sys.stdout, sys.stderr))
    async with app.run_test(size=(160, 48)) as pilot:
        session.frame = counting  # type: ignore[method-assign]  # from here on, any derive is counted
        assert await eventually(lambda: app._rendered is not None)  # the serve loop's frame is on screen
        frames = FrameCount(app)  # count renders from here on
        rendered = 0
        await asyncio.sleep(0.3)  # several ticks with no new frame: nothing to render
        assert frames.n == rendered and derived == []
        second = real(datetime.now(UTC))  # the serve loop derives the next frame
        assert second is not first
        assert await eventually(lambda: frames.n == rendered + 1)
        await pilot.pause()
        assert derived == []


async def test_the_kiosk_rotates_through_its_screens():
    session = snapshot_session()
    session.frame(datetime.now(UTC))
    from taudash.serve.web import Tab

    app = WallboardApp(session, Tab(), WebOptions(LOOP, kiosk=("queues", "pool"), kiosk_interval=0.2),
                       (sys.stdout, sys.stderr))
    seen: list[str] = []
    async with app.run_test(size=(160, 48)):
        assert await eventually(lambda: app.current_mode == "queues")
        for _ in range(200):
            if not seen or seen[-1] != app.current_mode:
                seen.append(app.current_mode)
            if len(seen) >= 4:
                break
            await asyncio.sleep(0.02)
    assert seen[:4] == ["queues", "pool", "queues", "pool"]


# --- access ---------------------------------------------------------------------------------------------------


async def _server(token: str | None) -> tuple[WallboardServer, list[str]]:
    lines: list[str] = []
    session = snapshot_session()
    session.frame(datetime.now(UTC))
    server = WallboardServer(None, WebOptions(LOOP, token=token), lines.append)
    await server.start()
    server.attach(session)
    return server, lines


async def test_without_the_token_every_path_is_401_and_the_token_opens_it():
    server, lines = await _server(TOKEN)
    url = server.url()
    try:
        async with aiohttp.ClientSession() as http:
            for path in ("", "ws", "static/js/textual.js", "nothing", f"?token={TOKEN[:-1]}x", "?token="):
                async with http.get(url + path, allow_redirects=False) as r:
                    assert r.status == 401, path
            async with http.get(url, headers={"Authorization": "Bearer " + TOKEN[:-1]}) as r:
                assert r.status == 401
            async with http.get(url, cookies={COOKIE: cookie_value(TOKEN[:-1] + "x")}) as r:
                assert r.status == 401
            with pytest.raises(aiohttp.WSServerHandshakeError) as err:
                await http.ws_connect(url + "ws")
            assert err.value.status == 401
            # a header opens every path
            async with http.get(url, headers={"Authorization": "Bearer " + TOKEN}) as r:
                assert r.status == 200 and "textual.js" in await r.text()
            async with http.get(url + "static/js/textual.js", headers={"Authorization": "Bearer " + TOKEN}) as r:
                assert r.status == 200
        # the first load with ?token= sets an HttpOnly cookie (not the token) and drops the token from the URL
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:  # an IP host
            async with http.get(url + f"?token={TOKEN}&fontsize=20", allow_redirects=False) as r:
                assert r.status == 303 and r.headers["Location"] == "/?fontsize=20"
                cookie = r.headers["Set-Cookie"]
                assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and TOKEN not in cookie
            async with http.get(url) as r:
                assert r.status == 200
            ws = await http.ws_connect(url + "ws?width=120&height=40")
            got = bytearray()
            async for msg in ws:
                got += msg.data if msg.type == aiohttp.WSMsgType.BINARY else b""
                if b"READ-ONLY" in got:
                    break
            await ws.close()
        assert server.refused >= 9
    finally:
        await server.stop()
    assert lines and not any(TOKEN in line or TOKEN[:-1] in line for line in lines)


async def test_a_websocket_from_another_origin_is_refused():
    server, _ = await _server(None)
    try:
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.WSServerHandshakeError) as err:
                await http.ws_connect(server.url() + "ws", headers={"Origin": "http://evil.example"})
            assert err.value.status == 403
            ws = await http.ws_connect(server.url() + "ws", headers={"Origin": server.url().rstrip("/")})
            await ws.close()
            async with http.post(server.url(), data="x") as r:
                assert r.status == 405
    finally:
        await server.stop()


def test_off_loopback_the_token_is_required_and_never_logged(tmp_path):
    """The real command on 0.0.0.0: 401 without the token, 200 with it, and the token appears in no
    line the process printed (no access log; first loads with ?token= included)."""
    env = {**os.environ, "TAUDASH_WEB_TOKEN": TOKEN}
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        p = subprocess.Popen([sys.executable, "-m", "taudash.cli", "serve", "--snapshot", str(DEMO),
                              "--web", "0.0.0.0:0", "--interval", "0.5"], stdout=out, stderr=subprocess.STDOUT,
                             env=env)
    try:
        port = None
        for _ in range(600):
            m = re.search(r"wallboard on http://0\.0\.0\.0:(\d+)/", log.read_text())
            if m and "serving" in log.read_text():
                port = int(m.group(1))
                break
            assert p.poll() is None, log.read_text()
            time.sleep(0.05)
        assert port, log.read_text()

        async def probe() -> list[int]:
            url = f"http://127.0.0.1:{port}/"
            codes = []
            async with aiohttp.ClientSession() as http:
                for path, headers in (("", {}), ("ws", {}), (f"?token={TOKEN}x", {}),
                                      ("", {"Authorization": "Bearer nope"}),
                                      ("", {"Authorization": f"Bearer {TOKEN}"}),
                                      (f"?token={TOKEN}", {})):
                    async with http.get(url + path, headers=headers, allow_redirects=False) as r:
                        codes.append(r.status)
            return codes

        assert asyncio.run(probe()) == [401, 401, 401, 401, 200, 303]
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0
    text = log.read_text()
    assert "warning: the wallboard listens on 0.0.0.0" in text and "refused a request without a valid token" in text
    assert TOKEN not in text and TOKEN[:12] not in text


# --- one engine for every viewer ---------------------------------------------------------------------------------


async def test_ten_viewers_share_one_set_of_watches_and_see_changes(capsys):
    """Ten tabs: one set of watches, every tab sees a change, nothing written; the metrics endpoint and the
    per-tick hooks (the recorder's seat) keep running beside them in the same process."""
    ticks: list[int] = []
    async with SimServer(DEMO) as sim, wallboard(sim, metrics="127.0.0.1:0",
                                                 hooks=[lambda view, store,
                                                        now: ticks.append(store.revision)]) as serve:
        server = serve.web
        metrics_url = f"http://127.0.0.1:{serve.metrics._httpd.server_address[1]}/metrics"
        assert server.session.actions.why_read_only == WEB_REASON and not server.session.actions.writable
        assert server.session.actions.api_client is None
        await asyncio.sleep(0.5)  # the source's watches are open after sync
        before = watch_requests(sim)
        open_before = sim.api.open_watches()
        assert before > 0 and open_before > 0
        viewers = [await Viewer(server.url()).open() for _ in range(10)]
        try:
            assert await eventually(lambda: all(v.saw("READ-ONLY") for v in viewers), within=60)
            assert len(server.apps) == 10
            # a change in the cluster reaches every tab
            assert await api_patch(sim, "clusterqueues.kueue.x-k8s.io", "tau-ws-train",
                                   {"spec": {"stopPolicy": "HoldAndDrain"}}) == 200
            for v in viewers:
                await v.keys("3")  # the Queues screen
            assert await eventually(lambda: all(v.saw("HoldAndDrain") for v in viewers), within=60)
            assert watch_requests(sim) == before and sim.api.open_watches() == open_before
            assert writes(sim) == 1  # the test's own patch; none from ten tabs
            # the exporter and the tick hooks run beside the tabs, and see the same change
            ticked = len(ticks)
            assert await eventually(lambda: len(ticks) >= ticked + 2)
            held = re.compile(r'taudash_cluster_queue_stop_policy\{cluster_queue="tau-ws-train",'
                              r'policy="HoldAndDrain"\} 1')
            body = ""
            async with aiohttp.ClientSession() as http:
                for _ in range(200):
                    async with http.get(metrics_url) as r:
                        assert r.status == 200
                        body = await r.text()
                    if held.search(body):
                        break
                    await asyncio.sleep(0.1)
            assert held.search(body), body[:3000]
        finally:
            for v in viewers:
                await v.close()
        assert await eventually(lambda: not server.apps, within=20)
    assert Actions.read_only(WEB_REASON).writable is False
    # the service's own log still reaches its stderr after ten apps redirected and restored it
    err = capsys.readouterr().err
    assert "viewer disconnected (0 open)" in err and "taudash serve: stopped" in err


async def test_stopping_serve_with_tabs_open_ends_their_sessions():
    async with SimServer(DEMO) as sim:
        async with wallboard(sim) as serve:  # the helper asserts serve exits 0 when stopped
            server = serve.web
            viewers = [await Viewer(server.url()).open() for _ in range(2)]
            assert await eventually(lambda: all(v.saw("READ-ONLY") for v in viewers), within=60)
            assert len(server.apps) == 2
        # stopped with both tabs open: their apps ended and their sockets were closed by the server
        assert not server.apps and not server.tabs
        assert await eventually(lambda: all(v.ws is not None and v.ws.closed for v in viewers), within=10)
        for v in viewers:
            await v.close()


async def test_q_ends_only_that_tabs_session():
    server, _ = await _server(None)
    try:
        one, two = Viewer(server.url()), Viewer(server.url())
        await one.open()
        await two.open()
        assert await eventually(lambda: one.saw("READ-ONLY") and two.saw("READ-ONLY"), within=60)
        await one.keys("q")
        assert await eventually(lambda: one.ws.closed and len(server.apps) == 1, within=20)
        await two.keys("3")
        assert await eventually(lambda: two.saw("COHORTS AND CLUSTER QUEUES"), within=30)
        await one.close()
        await two.close()
    finally:
        await server.stop()


async def test_kiosk_flags_rotate_every_tab_without_a_key():
    async with SimServer(DEMO) as sim, wallboard(sim, kiosk="queues,pool", kiosk_interval=0.5) as serve:
        viewer = await Viewer(serve.web.url()).open()
        try:
            assert await eventually(lambda: viewer.saw("COHORTS AND CLUSTER QUEUES"), within=60)
            mark = len(viewer.received)
            assert await eventually(lambda: b"INVENTORY" in viewer.received[mark:], within=30)
            mark = len(viewer.received)
            assert await eventually(lambda: b"COHORTS AND CLUSTER QUEUES" in viewer.received[mark:], within=30)
        finally:
            await viewer.close()
