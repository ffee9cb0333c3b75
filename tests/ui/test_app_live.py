"""The dashboard on a live source (the simulator over HTTPS): updates within two ticks, and a
read-only session whose every key binding sends zero write requests."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from tools.waiting import eventually, next_renders, palette_results

from taudash.app import TaudashApp
from taudash.engine.actions import Actions
from taudash.engine.session import Session
from taudash.engine.sources.client import connect
from taudash.engine.sources.kube import KubeSource
from taudash.engine.sources.ondemand import KubeOnDemand
from taudash.engine.store import Store
from taudash.engine.view import SourceInfo
from taudash.screens.widgets.keyed_table import KeyedTable
from taudash.sim.server import SimServer

CQ = "clusterqueues.kueue.x-k8s.io"
TICK = 0.3


async def live_app(sim: SimServer, read_only: bool, reads_on_demand: bool = False) -> tuple[TaudashApp, KubeSource]:
    """The dashboard wired like `taudash demo`: the live source writes under the session lock (`reads_on_demand`:
    with the reads the demo makes on demand too: Kueue's queue positions, an object's whole YAML and Events)."""
    target = await connect(kubeconfig=str(sim.kubeconfig))
    store = Store()
    actions = None if read_only else Actions.live(target.api_client, "tester", target.context, None)
    lock = threading.RLock()
    source = KubeSource(store, target, lock=lock)
    session = Session(store, SourceInfo(type="sim", context=target.context, path=target.server), read_only=read_only,
                      demo=True, lock=lock, actions=actions,
                      queue_positions=source.pending_workloads if reads_on_demand else None,
                      on_demand=KubeOnDemand.for_source(source) if reads_on_demand else None)
    await source.start()
    assert await source.wait_synced(15)
    return TaudashApp(session, clock=lambda: datetime.now(UTC), tick=TICK), source


def row_text(app, selector: str, key: str) -> str:
    t = app.screen.query_one(selector, KeyedTable)
    return " ".join(c.plain for c in t.get_row(key))


async def test_a_cluster_change_appears_within_two_ticks():
    async with SimServer() as sim:
        app, source = await live_app(sim, read_only=True)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("3")
            assert await eventually(lambda: app.current_mode == "queues")
            await next_renders(app)
            assert "HoldAndDrain" not in row_text(app, "#queues", "cq:tau-ws-train")
            store = app.session.store
            sim.db.patch_merge(CQ, "tau-ws-train", {"spec": {"stopPolicy": "HoldAndDrain"}})
            # Once the watch has delivered it, two ticks put it on screen without a key (waited for as
            # renders, not as seconds: on a busy machine a tick can come late).
            assert await eventually(lambda: store.get("ClusterQueue",
                                                      "tau-ws-train").spec.stop_policy == "HoldAndDrain")
            await next_renders(app)
            assert "HoldAndDrain" in row_text(app, "#queues", "cq:tau-ws-train")
            # and a node going NotReady shows on the pool screen
            await pilot.press("2")
            node = next(n for n in sim.db.list("nodes") if n["metadata"]["name"].startswith("aks-a100"))
            name = node["metadata"]["name"]
            conds = [dict(c, status="False", reason="KubeletNotReady") if c["type"] == "Ready" else c
                     for c in node["status"]["conditions"]]
            sim.db.update_status({**node, "status": {**node["status"], "conditions": conds}})
            assert await eventually(lambda: store.get("Node", name).condition("Ready").status == "False")
            await next_renders(app)
            text = " ".join(str(w.render()) for w in app.screen.query("Static"))
            tables = " ".join(" ".join(c.plain for c in t.get_row(k)) for t in app.screen.query(KeyedTable)
                              for k in t.visible_keys())
            assert name in tables + text and "NotReady" in tables + text
        await source.stop()
        await source.target.close()


EXTRA_KEYS = ("enter", "escape", "down", "up", "slash", "question_mark", "tab", "d", "x", "h", "r", "n", "a", "w", "y",
              "ctrl+d", "delete", "space")


def every_key(app) -> set[str]:
    """Every key bound on the screen (its own and inherited bindings) plus keys that write elsewhere."""
    keys = {key for key, _ in app.screen._bindings} | set(EXTRA_KEYS)
    return keys - {"q", "ctrl+c", "ctrl+q"}


async def press_all(pilot, app, back: list[str]) -> None:
    """Press every key of the current screen, returning to it (via `back`) after each."""
    for b in sorted(every_key(app)):
        await pilot.press(b)
        await pilot.pause()
        # get back to a known place whatever the key opened (help, detail, palette, filter, a form)
        for _ in range(3):
            focused = app.screen.focused
            if len(app.screen_stack) > 1 or focused is not None and "filter" in str(focused.id or ""):
                await pilot.press("escape")
                await pilot.pause()
        await pilot.press(*back)
        await pilot.pause()


async def test_read_only_every_binding_sends_no_write(tmp_path, monkeypatch):
    import textual._wait

    from taudash.engine.workflows import Journal
    from taudash.screens.kit.messages import AbortWorkflow, NewWorkflow, OpenWorkflow, ResumeWorkflow, StartWorkflow
    from taudash.screens.workflow.forms import NewWorkflowScreen
    from taudash.screens.workflow.wizard import StepConfirmScreen, WizardScreen

    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))
    # Pilot waits for idle after each of the ~1,700 keys and pauses here by sleeping 20 ms at a time until a sleep
    # passes with under 1 ms of CPU (textual/_wait.py): most of this test was those sleeps. The same check on a 5 ms
    # grain (this test takes no screenshot; what it asserts is the writes, counted by the simulator).
    monkeypatch.setattr(textual._wait, "SLEEP_GRANULARITY", 1 / 200)
    monkeypatch.setattr(textual._wait, "SLEEP_IDLE", 1 / 200 / 20)
    # journals a read-only session must never act on: an InProgress hold and a Failed drain
    Journal.create("a0a0a0", "hold", {"cqs": ["tau-ws-train"], "mode": "HoldAndDrain"}, "taudash-sim")
    failed = Journal.create("b1b1b1", "drain", {"workspace": "eval"}, "taudash-sim")
    failed.append("failed", "blockers", {"error": "precondition failed"})
    async with SimServer() as sim:
        app, source = await live_app(sim, read_only=True)
        async with app.run_test(size=(120, 36)) as pilot:
            for key in ["1", "2", "3", "4", "5", "6", "7", "8", "9"]:
                await pilot.press(key)
                await pilot.pause()
                await press_all(pilot, app, [key])
            # the wizard of each journaled workflow (9 → enter), and the workspace detail of a drain (4 → enter)
            for row in (0, 1):
                await pilot.press("9")
                await pilot.pause()
                table = app.screen.query_one("#workflows", KeyedTable)
                table.focus()
                table.move_cursor(row=row)
                await pilot.press("enter")
                await pilot.pause()
                assert isinstance(app.screen, WizardScreen)
                wid = app.screen.workflow_id
                for b in sorted(every_key(app)):
                    await pilot.press(b)
                    await pilot.pause()
                    while not isinstance(app.screen, WizardScreen) and len(app.screen_stack) > 1:
                        await pilot.press("escape")
                        await pilot.pause()
                    if not isinstance(app.screen, WizardScreen):
                        await pilot.press("9")
                        app.post_message(OpenWorkflow(wid))
                        await pilot.pause()
            await pilot.press("4")
            await pilot.pause()
            table = app.screen.query_one(KeyedTable)
            table.focus()
            table.move_cursor(row=table.get_row_index("eval"))
            await pilot.press("enter")
            await pilot.pause()
            await press_all(pilot, app, [])
            # the palette: no "Start workflow" command is offered; whatever matches is opened and closed
            for query in ("hold", "start workflow", "workflow"):
                await pilot.press("ctrl+p")
                await pilot.press(*query)
                await palette_results(pilot, query)
                await pilot.press("enter")
                await pilot.pause()
                await pilot.press("escape", "escape", "escape")
                await pilot.pause()
            # and requests posted directly, as a bug or a plugin might: refused, nothing opens
            for msg in (NewWorkflow("hold", cqs=["tau-ws-train"]), StartWorkflow("hold", {"cqs": ["tau-ws-train"]}),
                        ResumeWorkflow("a0a0a0"), ResumeWorkflow("b1b1b1"), AbortWorkflow("a0a0a0")):
                app.post_message(msg)
                await pilot.pause()
                assert not isinstance(app.screen, (NewWorkflowScreen, StepConfirmScreen))
            assert not app.workflows.live()
        assert sim.api.writes == {}, sim.api.writes
        assert not [r for r in sim.api.requests if r.verb == "review"]
        assert {j.stem: Journal.open(str(j)).state for j in (tmp_path / "state" / "workflows").glob("*.jsonl")} == {
            "a0a0a0": "InProgress", "b1b1b1": "Failed"}  # not even the journals changed
        await source.stop()
        await source.target.close()
