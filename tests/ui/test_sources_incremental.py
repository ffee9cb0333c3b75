"""The Sources screen patches its rows from the session's waiting-row changes; the result must equal
the full walk after every batch of random changes (adds, deletions, status moves, owner clashes)."""

from __future__ import annotations

import copy
import io
import random
from datetime import UTC, datetime

from msgspec.structs import replace
from rich.console import Console
from tools.paths import SNAPSHOTS

from taudash.app import TaudashApp
from taudash.bench.generate import Size, generate
from taudash.engine.model import Workload, lookup
from taudash.engine.session import Session
from taudash.engine.store import Store
from taudash.engine.view import SourceInfo
from taudash.screens.sources import SourcesScreen

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _store() -> Store:
    store = Store()
    for raw in generate(Size("T", 20, 400, 200, 5, 2, 2, 4), seed=11):
        store.upsert(lookup(raw["apiVersion"], raw["kind"]).model.model_validate(raw), raw=None)
    return store


def _pending(wl: Workload) -> Workload:
    cond = [c for c in wl.status.conditions if c.type not in ("Admitted", "QuotaReserved", "Finished")]
    return replace(wl, status=replace(wl.status, conditions=cond, admission=None))


def _mutate(store: Store, rng: random.Random, n: int, same_owner: bool = False) -> None:
    wls = store.list("Workload")
    for wl in rng.sample(wls, min(n, len(wls))):
        roll = rng.random()
        if roll < 0.3:
            store.delete("Workload", wl.name, wl.namespace)
        elif roll < 0.6:
            store.upsert(_pending(wl))  # starts waiting (or keeps waiting with a new row)
        elif roll < 0.8:
            tag = rng.randrange(10**6)
            refs = wl.metadata.owner_references if same_owner else [
                replace(r, name=f"{r.name}-x{tag}", uid=f"{r.uid}-x{tag}") for r in wl.metadata.owner_references]
            new = replace(_pending(wl), metadata=replace(wl.metadata, name=f"{wl.name}-x{tag}", owner_references=refs))
            store.upsert(new)  # a new waiting Workload; with the same owner the full walk dedups
        else:
            store.upsert(replace(wl, metadata=replace(wl.metadata, resource_version=str(rng.random()))))


def test_waiting_changes_name_every_row_that_moved():
    store = _store()
    session = Session(store, SourceInfo(type="sim", context="t"))
    rng = random.Random(3)
    old = session.view(NOW).waiting
    for _ in range(15):
        _mutate(store, rng, rng.randrange(1, 30))
        new = session.view(NOW).waiting
        changed = session.waiting_changes(old, new)
        assert changed is not None
        before = {(w.namespace, w.name): w for w in old}
        after = {(w.namespace, w.name): w for w in new}
        moved = {k for k in before.keys() | after.keys() if before.get(k) is not after.get(k)}
        assert moved <= changed <= before.keys() | after.keys()
        old = new
    assert session.waiting_changes(copy.copy(list(old)), old) is None  # not a list the session made


async def test_patched_rows_equal_the_full_walk():
    store = _store()
    session = Session(store, SourceInfo(type="sim", context="t"))
    app = TaudashApp(session, clock=lambda: NOW, tick=3600.0, precompose=False)
    rng = random.Random(7)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SourcesScreen)
        patched = 0
        for i in range(25):
            _mutate(store, rng, rng.randrange(1, 25), same_owner=i == 20)
            frame = session.frame(NOW)
            app.render_frame(frame)
            await pilot.pause()
            shown = screen._last_rows
            full = screen._collect(frame.view.waiting, {}, {}, screen.tones)
            assert [(it.key, it.wl) for it in shown] == [(it.key, it.wl) for it in full]
            patched += getattr(screen, "_plain", None) is not None
        assert patched > 15  # most batches took the one-row-per-Workload path
        table = screen.query_one("#sources")
        assert table.total == len(screen._last_rows)


async def test_drain_blockers_are_laid_over_the_rows():

    from taudash.engine.sources.snapshot import load_snapshot

    path = SNAPSHOTS / "drain-blocked.yaml"
    r = load_snapshot(path)
    session = Session(r.store, SourceInfo(type="snapshot", context=r.context, path=str(path)))
    app = TaudashApp(session, clock=lambda: NOW, tick=3600.0, precompose=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await pilot.pause()
        screen = app.screen
        frame = session.frame(NOW)
        blockers = {(b.kind, b.namespace, b.name) for w in frame.view.workspaces for b in w.drain.blockers}
        assert blockers, "the fixture has a blocked drain"
        shown = {it.key: sorted(it.blocks) for it in screen._last_rows}
        bl: dict = {}
        first: dict = {}
        for w in frame.view.workspaces:
            for b in w.drain.blockers:
                bl.setdefault((b.kind, b.namespace, b.name), []).append((w.name, b.action or b.message))
                first.setdefault((b.kind, b.namespace, b.name), b)
        full = {it.key: sorted(it.blocks) for it in screen._collect(frame.view.waiting, bl, first, screen.tones)}
        assert shown == full  # same rows, same blocks (order: the view's, blocker-only rows where they sort)
        assert any(it.wl is None for it in screen._last_rows)  # a source that only blocks the drain
        table = screen.query_one("#sources")
        key = next(it.key for it in screen._last_rows if it.blocks)
        table.move_cursor(row=table.get_row_index(key))
        await pilot.pause()
        console = Console(width=200, record=True, file=io.StringIO())
        console.print(screen.query_one("#src-detail").content)
        assert "blocks drain of" in console.export_text()  # the detail of a blocked row says what it blocks
