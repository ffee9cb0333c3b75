"""The dashboard on a live source against the simulator, and the comparison of what it holds with
what the server holds: shared by the reliability tests and the load harness."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from taudash.app import TaudashApp
from taudash.engine.model import KINDS
from taudash.engine.session import Session
from taudash.engine.sources.client import connect
from taudash.engine.sources.kube import KubeSource
from taudash.engine.store import Store
from taudash.engine.view import SourceInfo
from taudash.sim.server import SimServer


async def eventually(pred, within: float = 10.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pred():
            return True
        await asyncio.sleep(step)
    return bool(pred())


async def live_session(sim: SimServer, history_reader=None, **source_opts) -> tuple[Session, KubeSource]:
    """A read-only session fed by a KubeSource writing under the session lock (like `taudash demo`), with the
    cluster's recorded history when given (`history_reader`)."""
    target = await connect(kubeconfig=str(sim.kubeconfig))
    store = Store()
    session = Session(store, SourceInfo(type="sim", context=target.context, path=target.server), read_only=True,
                      demo=True, history_reader=history_reader)
    opts = {"backoff_base": 0.05, "backoff_cap": 0.5, "absent_recheck": 0.5, **source_opts}
    source = KubeSource(store, target, lock=session.lock, **opts)
    await source.start()
    assert await source.wait_synced(20)
    return session, source


def dashboard(session: Session, tick: float = 0.3) -> TaudashApp:
    return TaudashApp(session, clock=lambda: datetime.now(UTC), tick=tick)


async def close(source: KubeSource) -> None:
    await source.stop()
    await source.target.close()


def server_state(sim: SimServer) -> dict[str, set[tuple[str, str, str]]]:
    """(namespace, name, resourceVersion) per kind, as the server holds it (a fresh list)."""
    out = {}
    for k in KINDS:
        try:
            objs = sim.db.list(k.resource)
        except Exception:  # a resource the simulator does not serve
            continue
        out[k.kind] = {(o["metadata"].get("namespace") or "", o["metadata"]["name"],
                        o["metadata"]["resourceVersion"]) for o in objs}
    return out


def store_state(store: Store, kinds=None) -> dict[str, set[tuple[str, str, str]]]:
    kinds = kinds if kinds is not None else [k.kind for k in KINDS]
    return {k: {(o.namespace or "", o.name, o.metadata.resource_version) for o in store.list(k)} for k in kinds}


def store_entries(store: Store) -> dict[str, int]:
    """Objects per kind as stored (a duplicate would show as more entries than distinct keys)."""
    return {k.kind: store.count(k.kind) for k in KINDS}


def difference(sim: SimServer, store: Store) -> dict[str, tuple[set, set]]:
    """Per kind: (missing from the store, extra in the store). Empty when they agree exactly."""
    want = server_state(sim)
    have = store_state(store, list(want))
    return {k: (want[k] - have[k], have[k] - want[k]) for k in want if want[k] != have[k]}


def converged(sim: SimServer, store: Store) -> bool:
    return not difference(sim, store)
