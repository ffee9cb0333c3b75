"""Objects with missing or mistyped fields arriving from the API never crash a screen: the simulator
serves the demo cluster with some objects mutated (a field removed, or a value of the wrong type,
null, huge, non-finite or odd unicode), the dashboard syncs them through the live source, and every
screen, every object's detail and every workspace's detail renders, with frames still derived."""

from __future__ import annotations

import random

import pytest
from tools.livedash import close, dashboard, live_session
from tools.mutate import demo_objects, random_mutation
from tools.waiting import next_renders

from taudash.app import SCREENS
from taudash.engine.model import BY_KIND, lookup
from taudash.engine.rules.base import ObjRef
from taudash.screens.kit.messages import OpenObject
from taudash.sim.server import SimServer

DEMO = demo_objects()


def mutated_cluster(seed: int, count: int) -> tuple[list[dict], list[dict]]:
    rng = random.Random(seed)
    objects = list(DEMO)
    changed = []
    for i in rng.sample(range(len(objects)), count):
        objects[i] = random_mutation(objects[i], rng)
        changed.append(objects[i])
    return objects, changed


def seed_what_the_api_accepts(sim: SimServer, objects: list[dict]) -> list[dict]:
    """An API server refuses some objects (no name, unknown kind): those never reach taudash."""
    accepted = []
    for obj in objects:
        try:
            sim.db.seed([obj])
        except Exception:
            continue
        accepted.append(obj)
    return accepted


def ref_of(obj: dict) -> ObjRef | None:
    info = lookup(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    if info is None or not isinstance(meta.get("name"), str):
        return None
    ns = meta.get("namespace") if info.namespaced and isinstance(meta.get("namespace"), str) else None
    return ObjRef(kind=info.kind, namespace=ns, name=meta["name"])


async def render_everything(app, pilot, refs: list[ObjRef]) -> None:
    errors = []
    app.notify = lambda message, *a, **k: errors.append(str(message)) if "could not" in str(message) else None
    for name in SCREENS:
        app.action_go(name)
        await pilot.pause()
        assert app.current_mode == name
    await next_renders(app, 1)  # a tick renders the visible screen again
    for ref in refs:
        app.post_message(OpenObject(ref))
        await pilot.pause()
        await pilot.press("escape")
    frame = app.session.last_frame
    for ws in frame.view.workspaces:
        app.post_message(OpenObject(ObjRef(kind="TauWorkspace", namespace="tau-system", name=ws.name)))
        await pilot.pause()
        await pilot.press("escape")
    assert errors == []  # "could not derive the view" would hide a crash behind a notification


@pytest.mark.parametrize("seed", [1])
async def test_every_screen_renders_with_malformed_objects_from_the_api(seed):
    objects, changed = mutated_cluster(seed, 40)
    async with SimServer(snapshot=None) as sim:
        accepted = seed_what_the_api_accepts(sim, objects)
        session, source = await live_session(sim)
        stored = [r for r in map(ref_of, changed) if r is not None and r.kind in BY_KIND
                  and session.store.get(r.kind, r.name, r.namespace) is not None]
        assert len(accepted) > len(objects) // 2 and stored  # most made it, mutated ones among them
        app = dashboard(session, tick=0.3)
        async with app.run_test(size=(140, 40)) as pilot:
            await render_everything(app, pilot, stored[:8])  # each detail costs a render: the first 8
            assert session.last_frame.revision == session.store.revision
        await close(source)
