"""The live source against the simulator over real HTTP (TLS + token), with injected faults."""

import asyncio
import json
import time
from datetime import UTC, datetime

import pytest

from taudash.cli import main
from taudash.engine.incremental import derive
from taudash.engine.sources.client import Unreachable, connect
from taudash.engine.sources.kube import KubeSource
from taudash.engine.store import AccessState, Store
from taudash.sim.server import SimServer

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
CQ = "clusterqueues.kueue.x-k8s.io"


async def eventually(pred, within=5.0, step=0.02):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pred():
            return True
        await asyncio.sleep(step)
    return pred()


class Live:
    def __init__(self, sim: SimServer):
        self.sim = sim
        self.store = Store()

    async def __aenter__(self):
        self.target = await connect(kubeconfig=str(self.sim.kubeconfig))
        self.source = KubeSource(self.store, self.target, backoff_base=0.05, backoff_cap=0.2, absent_recheck=0.5)
        await self.source.start()
        assert await self.source.wait_synced(15)
        return self

    async def __aexit__(self, *exc):
        await self.source.stop()
        await self.target.close()


def db_state(sim: SimServer) -> dict[str, set]:
    """(namespace, name, resourceVersion) per kind, as the server holds it."""
    from taudash.engine.model import KINDS

    out = {}
    for k in KINDS:
        try:
            objs = sim.db.list(k.resource)
        except Exception:  # not served (Ray off)
            continue
        out[k.kind] = {(o["metadata"].get("namespace", ""), o["metadata"]["name"], o["metadata"]["resourceVersion"])
                       for o in objs}
    return out


def store_state(store: Store, kinds) -> dict[str, set]:
    return {
        k: {(o.namespace or "", o.name, o.metadata.resource_version) for o in store.list(k)}
        for k in kinds
    }


async def test_initial_sync_of_every_kind():
    async with SimServer() as sim, Live(sim) as live:
        states = {k: a.state for k, a in live.store.access_states().items()}
        assert set(states.values()) == {AccessState.SYNCED}
        expected = db_state(sim)
        assert store_state(live.store, expected) == expected
        assert live.store.count("Node") > 0 and live.store.count("Workload") > 0
        # Kueue is read at its preferred version
        assert live.source.status["ClusterQueue"].version == "v1beta2"


async def test_live_updates_arrive():
    async with SimServer() as sim, Live(sim) as live:
        sim.db.patch_merge(CQ, "tau-ws-train", {"spec": {"stopPolicy": "HoldAndDrain"}})
        assert await eventually(lambda: live.store.get("ClusterQueue",
                                                       "tau-ws-train").spec.stop_policy == "HoldAndDrain")
        sim.db.delete("rayservices.ray.io", "llm", "eval")
        assert await eventually(lambda: live.store.get("RayService", "llm", "eval") is None)
        lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
              "metadata": {"name": "extra", "namespace": "train"}, "spec": {"clusterQueue": "tau-ws-train"}}
        sim.db.create(lq)
        assert await eventually(lambda: live.store.get("LocalQueue", "extra", "train") is not None)
        assert live.store.last_event_at is not None


async def test_410_storm_relists_without_losing_an_update():
    async with SimServer() as sim, Live(sim) as live:
        relists = sum(st.relists for st in live.source.status.values())
        sim.faults.gone_storm(count=5)
        # changes made while every watch is being refused with 410
        sim.db.patch_merge(CQ, "tau-ws-eval", {"spec": {"stopPolicy": "Hold"}})
        sim.db.delete("jobs.batch", "prep-4", "eval")
        assert await eventually(lambda: live.store.get("ClusterQueue", "tau-ws-eval").spec.stop_policy == "Hold")
        assert await eventually(lambda: live.store.get("Job", "prep-4", "eval") is None)
        assert await eventually(lambda: sum(st.relists for st in live.source.status.values()) >= relists + 5)
        expected = db_state(sim)
        assert await eventually(lambda: store_state(live.store, expected) == db_state(sim))


async def test_dropped_watches_resume_from_the_last_version():
    async with SimServer() as sim, Live(sim) as live:
        before = live.source.status["ClusterQueue"].watch_restarts
        relists = live.source.status["ClusterQueue"].relists
        for abort in (False, True):
            await sim.api.wait_for_watches(1, CQ)
            sim.faults.drop_watches(abort=abort)
            sim.db.patch_merge(CQ, "tau-ws-train", {"metadata": {"labels": {"dropped": str(abort)}}})
            assert await eventually(lambda a=abort: live.store.get("ClusterQueue",
                                                                   "tau-ws-train").labels.get("dropped") == str(a))
        st = live.source.status["ClusterQueue"]
        assert st.watch_restarts + st.relists >= before + relists + 2  # it reconnected after each drop
        assert live.store.access("ClusterQueue").state is AccessState.SYNCED  # a cut stream is not an error
        expected = db_state(sim)
        assert await eventually(lambda: store_state(live.store, expected) == db_state(sim))


async def test_forbidden_kind_fails_closed():
    sim = SimServer()
    sim.faults.forbid("deployments.apps")
    async with sim, Live(sim) as live:
        acc = live.store.access("Deployment")
        assert acc.state is AccessState.FORBIDDEN and acc.since is not None
        view = derive(live.store, NOW)
        eval_ws = next(w for w in view.workspaces if w.name == "eval")
        assert eval_ws.drain.state == "Unknown"  # never Clear on unreadable sources
        assert any(u.resource == "deployments.apps" for u in eval_ws.drain.unknown)
        assert any(f.rule == "DATA-UNREADABLE" and f.object.name == "deployments.apps" for f in view.findings)


async def test_kind_turning_forbidden_mid_session_then_recovering():
    async with SimServer() as sim, Live(sim) as live:
        await sim.api.wait_for_watches(1, "jobs.batch")
        sim.faults.forbid("jobs.batch")
        sim.faults.drop_watches()
        assert await eventually(lambda: live.store.access("Job").state is AccessState.FORBIDDEN)
        assert live.store.count("Job") > 0  # stale data is kept, but marked unreadable
        sim.faults.allow("jobs.batch")
        assert await eventually(lambda: live.store.access("Job").state is AccessState.SYNCED, within=8)


async def test_absent_ray_api_is_optional():
    async with SimServer(ray=False) as sim, Live(sim) as live:
        assert live.store.access("RayJob").state is AccessState.ABSENT
        assert live.store.access("RayService").state is AccessState.ABSENT
        view = derive(live.store, NOW)
        eval_ws = next(w for w in view.workspaces if w.name == "eval")
        assert eval_ws.drain.state == "Blocked"  # still judged: Ray is optional
        assert not any(b.kind in ("RayJob", "RayService") for b in eval_ws.drain.blockers)
        assert not any(f.rule == "DATA-UNREADABLE" for f in view.findings)


async def test_500s_mark_the_kind_stale_and_it_recovers():
    async with SimServer() as sim, Live(sim) as live:
        await sim.api.wait_for_watches(1, "nodes")
        sim.faults.fail(500, resource="nodes", count=3)
        sim.faults.drop_watches()
        assert await eventually(lambda: live.store.access("Node").state is AccessState.ERROR, within=3)
        assert live.store.access("Node").since is not None
        assert await eventually(lambda: live.store.access("Node").state is AccessState.SYNCED, within=5)


async def test_unreachable_server_fails_fast(tmp_path):
    from taudash.sim.kubeconfig import write_kubeconfig

    cfg = write_kubeconfig(tmp_path / "kc", "https://127.0.0.1:9", "t", "gone")
    target = await connect(kubeconfig=str(cfg))
    source = KubeSource(Store(), target, request_timeout=3)
    t0 = time.monotonic()
    with pytest.raises(Unreachable) as exc:
        await source.probe()
    assert time.monotonic() - t0 < 5
    assert "gone" in str(exc.value) and "127.0.0.1:9" in str(exc.value)
    await target.close()


def test_cli_unreachable_exit_3(tmp_path, capsys):
    from taudash.sim.kubeconfig import write_kubeconfig

    cfg = write_kubeconfig(tmp_path / "kc", "https://127.0.0.1:9", "t", "gone")
    assert main(["status", "--kubeconfig", str(cfg), "--context", "gone"]) == 3
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "gone" in line and "127.0.0.1:9" in line and "cannot connect" in line


async def test_status_live_equals_status_of_its_export(tmp_path, capsys):
    async with SimServer() as sim:
        kc = str(sim.kubeconfig)
        out = tmp_path / "copy.yaml"
        assert await asyncio.to_thread(main, ["export", "--kubeconfig", kc, "-o", str(out)]) == 0
        assert oct(out.stat().st_mode & 0o777) == "0o600"
        capsys.readouterr()
        assert await asyncio.to_thread(main, ["status", "--kubeconfig", kc, "-o", "json"]) == 0
        live = json.loads(capsys.readouterr().out)
    assert main(["status", "--snapshot", str(out), "-o", "json"]) == 0
    snap = json.loads(capsys.readouterr().out)
    assert live["source"]["type"] == "kube" and snap["source"]["type"] == "snapshot"
    for key in ("access", "pool", "cohorts", "clusterQueues", "workspaces", "profiles", "multikueue", "findings"):
        assert live[key] == snap[key], key
    text = out.read_text()
    assert "kind: Secret" not in text and sim.token not in text


async def test_writes_wait_for_a_reader_without_blocking_the_loop():
    import threading

    lock = threading.RLock()
    async with SimServer() as sim:
        target = await connect(kubeconfig=str(sim.kubeconfig))
        store = Store()
        source = KubeSource(store, target, lock=lock)
        await source.start()
        assert await source.wait_synced(15)
        assert await eventually(lambda: source.pending_writes == 0)
        await sim.api.wait_for_watches(1, CQ)
        held, release = threading.Event(), threading.Event()

        def reader():  # the dashboard's derive worker, holding the store
            with lock:
                held.set()
                release.wait(5)

        t = threading.Thread(target=reader)
        t.start()
        held.wait(5)
        sim.db.patch_merge(CQ, "tau-ws-train", {"spec": {"stopPolicy": "Hold"}})
        sim.db.patch_merge(CQ, "tau-ws-train", {"spec": {"stopPolicy": "HoldAndDrain"}})
        assert await eventually(lambda: source.pending_writes >= 2)  # the loop kept running
        assert store.get("ClusterQueue", "tau-ws-train").spec.stop_policy == "None"
        release.set()
        t.join()
        # applied in order, in one batch, once the reader let go
        assert await eventually(lambda: store.get("ClusterQueue", "tau-ws-train").spec.stop_policy == "HoldAndDrain")
        assert source.pending_writes == 0
        await source.stop()
        await target.close()
