"""The wallboard in a real headless browser: Debian's chromium (never a downloaded build; .ci/run installs
it) driven by Playwright, against `taudash serve --web` on an in-process simulator.

What the page shows is read from the terminal itself: xterm.js draws on a canvas, so the test reads the
terminal's buffer (`buffer.active.getLine(y).translateToString()`) through a hook installed before
textual-serve's front-end starts. Screenshots of every screen are saved as artifacts (and copied to
/tmp/wallboard-shots/ outside CI); the assertions use text only."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from tools import paths
from tools.waiting import eventually
from tools.wallboard import CQ, api_patch, wallboard, watch_requests, writes

from taudash.engine.actions import Actions
from taudash.serve.web import WEB_REASON
from taudash.sim.server import SimServer

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DEMO = paths.DEMO
SHOTS = Path("/tmp/wallboard-shots")

# textual-serve's front-end keeps its xterm.js Terminal in a closure. Its constructor assigns
# `this.fitAddon` right after `this.terminal`: a setter on Object.prototype for that one name sees the
# instance, keeps its terminal for the test, and turns itself back into a plain property.
HOOK = """
Object.defineProperty(Object.prototype, 'fitAddon', {
  configurable: true,
  set(value) {
    Object.defineProperty(this, 'fitAddon', {value, writable: true, configurable: true, enumerable: true});
    if (this.terminal && !window.__wallboardTerminal) { window.__wallboardTerminal = this.terminal; }
  },
  get() { return undefined; },
});
"""
SCREEN_TEXT = """() => {
  const t = window.__wallboardTerminal;
  if (!t) return '';
  const b = t.buffer.active, rows = [];
  for (let y = 0; y < t.rows; y++) {
    const l = b.getLine(b.viewportY + y); rows.push(l ? l.translateToString(true) : '');
  }
  return rows.join('\\n');
}"""


@pytest.fixture
def chromium():
    assert CHROMIUM.exists(), "chromium is not installed: apt-get install chromium (.ci/run does)"


async def text(page) -> str:
    return await page.evaluate(SCREEN_TEXT)


async def until_text(page, *needles: str, within: float = 60.0) -> str:
    seen = ""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        seen = await text(page)
        if all(n in seen for n in needles):
            return seen
        await page.wait_for_timeout(100)
    raise AssertionError(f"the page never showed {needles!r}; it shows:\n{seen}")


async def shot(page, out: Path, name: str) -> None:
    path = out / f"{name}.png"
    await page.screenshot(path=str(path))
    if os.environ.get("CI") != "true":
        SHOTS.mkdir(exist_ok=True)
        shutil.copy(path, SHOTS / path.name)


async def test_the_wallboard_in_a_real_browser(chromium, tmp_path, monkeypatch):
    from playwright.async_api import async_playwright

    live_calls: list[tuple] = []
    real_live = Actions.live.__func__  # type: ignore[attr-defined]

    def spy(cls, *args, **kwargs):  # nothing in the serve process may build a writing Actions
        live_calls.append(args)
        return real_live(cls, *args, **kwargs)

    monkeypatch.setattr(Actions, "live", classmethod(spy))
    out = tmp_path / "shots"
    out.mkdir()
    async with SimServer(DEMO) as sim, wallboard(sim) as serve, async_playwright() as pw:
        server = serve.web
        watches = watch_requests(sim)
        browser = await pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True, args=ARGS,
            viewport={"width": 1600, "height": 900})
        try:
            page = browser.pages[0] if browser.pages else await browser.new_page()
            await page.add_init_script(HOOK)
            failed: list[str] = []  # every request the page made that the wallboard did not answer (a 404 icon…)
            page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
            await page.goto(server.url())

            # the overview: pool figures, and the header says READ-ONLY with the reason
            seen = await until_text(page, "GPU POOL", "taugrid-gpu-h100-80gb", "60 / 64", "READ-ONLY", WEB_REASON)
            assert "1 Overview" in seen
            assert failed == []  # the page's own load (the test's refused requests come later)
            await shot(page, out, "1-overview")

            # every screen by its number key
            await page.focus("textarea.xterm-helper-textarea")
            # (what only that screen shows: the canvas may still show the last one for a moment)
            expect = {"2": "INVENTORY", "3": "COHORTS AND CLUSTER QUEUES", "4": "phase (expected)",
                      "5": "WAITING AND BLOCKING", "6": "MultiKueue APIs installed", "7": "computed",
                      "8": "severity filter", "9": "WORKFLOWS"}
            names = {"2": "pool", "3": "queues", "4": "workspaces", "5": "sources", "6": "multikueue",
                     "7": "profiles", "8": "findings", "9": "workflows"}
            for key, needle in expect.items():
                await page.keyboard.press(key)
                assert await eventually(lambda key=key: server.apps and
                                        next(iter(server.apps)).current_mode == names[key], within=30)
                await until_text(page, needle, "READ-ONLY", WEB_REASON)
                await shot(page, out, f"{key}-{names[key]}")

            # a change in the cluster appears on the Queues screen
            await page.keyboard.press("3")
            seen = await until_text(page, "tau-ws-train")
            row = next(line for line in seen.splitlines() if "tau-ws-train" in line)
            assert "HoldAndDrain" not in row
            assert await api_patch(sim, CQ, "tau-ws-train", {"spec": {"stopPolicy": "HoldAndDrain"}}) == 200
            patched = writes(sim)
            seen = await until_text(page, "HoldAndDrain")
            row = next(line for line in seen.splitlines() if "tau-ws-train" in line)
            assert "HoldAndDrain" in row
            await shot(page, out, "3-queues-after-hold")

            # every write key on every screen (and inside a workspace), then workflow requests posted by the page
            for nav, needle in expect.items():
                await page.keyboard.press(nav)
                await until_text(page, needle)
                for key in ("w", "n", "r", "a", "l"):
                    await page.keyboard.press(key)
                if nav == "4":  # the workspace detail: "w" supervises a drain
                    await page.keyboard.press("Enter")
                    await page.keyboard.press("w")
                for _ in range(2):  # Escape, then a pause: an ESC followed at once by a key is Alt+key
                    await page.keyboard.press("Escape")
                    await page.wait_for_timeout(300)
            await page.keyboard.press("3")
            await until_text(page, "COHORTS AND CLUSTER QUEUES")
            await page.keyboard.press("w")
            seen = await until_text(page, "starting a workflow is disabled", WEB_REASON)
            await shot(page, out, "write-key-refused")
            answers = await page.evaluate("""async () => {
                const out = [];
                for (const [path, body] of [['/', '{"kind":"hold"}'], ['/ws', '{}'], ['/workflows', '{"kind":"hold"}'],
                                            ['/api/workflow', '{"kind":"hold","cluster_queues":["tau-ws-train"]}']]) {
                    const r = await fetch(path, {method: 'POST', body, headers: {'Content-Type': 'application/json'}});
                    out.push(r.status);
                }
                return out;
            }""")
            assert answers == [405, 405, 404, 404]
            # a request over the tab's own websocket in a shape the server does not know is ignored
            await page.evaluate("""() => new Promise((resolve) => {
                const ws = new WebSocket(location.origin.replace('http', 'ws') + '/ws?width=80&height=24');
                ws.onopen = () => { ws.send(JSON.stringify(['workflow',
                                                            {kind: 'hold', cluster_queues: ['tau-ws-train']}]));
                                    ws.send(JSON.stringify(['stdin', '3w']));
                                    setTimeout(() => { ws.close(); resolve(); }, 1500); };
                ws.onerror = () => resolve();
            })""")
            await page.wait_for_timeout(500)
            assert writes(sim) == patched, sim.api.writes
            assert live_calls == []
            assert not server.session.actions.writable and server.session.actions.api_client is None
            # one engine: the browser tabs added no watch at the simulator
            assert watch_requests(sim) == watches
        finally:
            await browser.close()
    assert sorted(p.name for p in out.iterdir())[:2] == ["1-overview.png", "2-pool.png"]
