"""The dashboard on a live source (the simulator over HTTPS): updates within two ticks, and a
read-only session whose every key binding sends zero write requests."""

from __future__ import annotations

from datetime import UTC, datetime

from engine.actions import Actions
from engine.session import Session
from engine.sim.server import SimServer
from engine.sources.kube import KubeSource, connect
from engine.store import Store
from engine.view import SourceInfo
from screens.widgets.keyed_table import KeyedTable
from taudash.app import TaudashApp

CQ = "clusterqueues.kueue.x-k8s.io"
TICK = 0.3


async def live_app(sim: SimServer, read_only: bool) -> tuple[TaudashApp, KubeSource]:
    """The dashboard wired like `taudash demo`: the live source writes under the session lock."""
    target = await connect(kubeconfig=str(sim.kubeconfig))
    store = Store()
    session = Session(store, SourceInfo(type="sim", context=target.context, path=target.server), read_only=read_only,
                      demo=True)
    source = KubeSource(store, target, lock=session.lock)
    await source.start()
    assert await source.wait_synced(15)
    if not read_only:
        session.actions = Actions.live(target.api_client, "tester", target.context, None)
    return TaudashApp(session, clock=lambda: datetime.now(UTC), tick=TICK), source


def row_text(app, selector: str, key: str) -> str:
    t = app.screen.query_one(selector, KeyedTable)
    return " ".join(c.plain for c in t.get_row(key))


async def test_a_cluster_change_appears_within_two_ticks():
    async with SimServer() as sim:
        app, source = await live_app(sim, read_only=True)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("3")
            await pilot.pause(TICK * 2)
            assert "HoldAndDrain" not in row_text(app, "#queues", "cq:tau-ws-train")
            sim.db.patch_merge(CQ, "tau-ws-train", {"spec": {"stopPolicy": "HoldAndDrain"}})
            await pilot.pause(TICK * 2 + 0.2)  # two ticks (+ the watch's own delivery)
            assert "HoldAndDrain" in row_text(app, "#queues", "cq:tau-ws-train")
            # and a node going NotReady shows on the pool screen
            await pilot.press("2")
            node = next(n for n in sim.db.list("nodes") if n["metadata"]["name"].startswith("aks-a100"))
            name = node["metadata"]["name"]
            conds = [dict(c, status="False", reason="KubeletNotReady") if c["type"] == "Ready" else c
                     for c in node["status"]["conditions"]]
            sim.db.update_status({**node, "status": {**node["status"], "conditions": conds}})
            await pilot.pause(TICK * 2 + 0.2)
            text = " ".join(str(w.render()) for w in app.screen.query("Static"))
            tables = " ".join(" ".join(c.plain for c in t.get_row(k)) for t in app.screen.query(KeyedTable)
                              for k in t.visible_keys())
            assert name in tables + text and "NotReady" in tables + text
        await source.stop()
        await source.target.close()


async def test_read_only_every_binding_sends_no_write():
    async with SimServer() as sim:
        app, source = await live_app(sim, read_only=True)
        async with app.run_test(size=(120, 36)) as pilot:
            screens = ["1", "2", "3", "4", "5", "6", "7", "8"]
            for key in screens:
                await pilot.press(key)
                await pilot.pause()
                bindings = {b.key for b in app.screen.BINDINGS if hasattr(b, "key")} | {
                    k for k in ("enter", "escape", "down", "up", "slash", "question_mark", "tab", "d", "x", "h", "r",
                                "ctrl+d", "delete", "space")}
                for b in sorted(bindings):
                    if b in ("q", "ctrl+c", "ctrl+q"):
                        continue
                    await pilot.press(b)
                    await pilot.pause()
                    # get back to a known place whatever the key opened (help, detail, palette, filter)
                    for _ in range(3):
                        if len(app.screen_stack) > 1 or app.screen.focused is not None and "filter" in str(app.screen.focused.id or ""):
                            await pilot.press("escape")
                            await pilot.pause()
                    await pilot.press(key)
            await pilot.press("ctrl+p")
            await pilot.press(*"hold")
            await pilot.press("enter")
            await pilot.pause()
            await pilot.press("escape", "escape")
        assert sim.api.writes == {}, sim.api.writes
        assert not [r for r in sim.api.requests if r.verb == "review"]
        await source.stop()
        await source.target.close()
