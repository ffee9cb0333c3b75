"""core/v1 Events in the simulator (taudash/sim/events.py): recorded by its Kueue, aggregated, expired, served
with involvedObject field selectors; and the engine's on-demand reads against it (engine/sources/ondemand.py):
an object's Events listed then watched, Forbidden said, the whole object fetched with a GET."""

from __future__ import annotations

import asyncio

import pytest
from factories import sim_world
from tools.simhttp import request
from tools.waiting import eventually

from taudash.engine.rules.base import ObjRef
from taudash.engine.sources.client import connect
from taudash.engine.sources.ondemand import FORBIDDEN, LOADING, NOT_FOUND, SYNCED, KubeOnDemand
from taudash.sim.clock import SimClock
from taudash.sim.events import EventRecorder
from taudash.sim.objects import ObjectDB
from taudash.sim.server import SimServer


def _reasons(db, uid: str) -> list[str]:
    return sorted(e["reason"] for e in db.list("Event", field_selector=f"involvedObject.uid={uid}"))


def test_the_simulated_kueue_records_admission_events_on_the_workload_and_its_job():
    w = sim_world()
    w.run_for(120, dt=10)
    admitted = [e for e in w.db.list("Event", field_selector="involvedObject.kind=Workload,reason=Admitted")]
    assert admitted, "the demo admits a Workload within two minutes"
    io = admitted[0]["involvedObject"]
    wl = w.db.get("Workload", io["name"], io["namespace"])
    assert wl is not None and wl["metadata"]["uid"] == io["uid"]
    assert {"QuotaReserved", "Admitted"} <= set(_reasons(w.db, io["uid"]))
    assert admitted[0]["message"].startswith(f"Admitted by ClusterQueue {wl['status']['admission']['clusterQueue']}")
    owner = wl["metadata"]["ownerReferences"][0]
    job = w.db.get(owner["kind"], owner["name"], io["namespace"])
    assert {"CreatedWorkload", "Started"} <= set(_reasons(w.db, job["metadata"]["uid"]))
    # the Events are not writes of the cluster's own objects: the write log does not list them
    assert not [e for e in w.event_log() if e[2] == "Event"]


def test_repeats_aggregate_and_old_events_expire():
    db = ObjectDB()
    clock = SimClock(start=1_800_000_000)
    rec = EventRecorder(db, clock, ttl=600, limit=3)
    obj = {"kind": "Workload", "apiVersion": "kueue.x-k8s.io/v1beta2",
           "metadata": {"name": "a", "namespace": "ns", "uid": "u-a"}}
    rec.record(obj, "Warning", "Pending", "no quota", "kueue-admission")
    clock.advance(30)
    rec.record(obj, "Warning", "Pending", "no quota", "kueue-admission")
    (one,) = db.list("Event")
    assert one["count"] == 2 and one["lastTimestamp"] > one["firstTimestamp"]
    assert one["involvedObject"] == {"kind": "Workload", "apiVersion": "kueue.x-k8s.io/v1beta2", "namespace": "ns",
                                     "name": "a", "uid": "u-a", "resourceVersion": ""}
    rec.record(obj, "Warning", "Pending", "another reason", "kueue-admission")  # another message: another Event
    assert len(db.list("Event")) == 2
    clock.advance(700)  # past the ttl
    rec.record(obj, "Normal", "Admitted", "Admitted by ClusterQueue cq", "kueue-admission")
    assert [e["reason"] for e in db.list("Event")] == ["Admitted"]
    for i in range(4):  # the limit: the oldest go first
        rec.record(obj, "Normal", "Admitted", f"again {i}", "kueue-admission")
    assert sorted(e["message"] for e in db.list("Event")) == ["again 1", "again 2", "again 3"]
    rec.record({"kind": "Workload", "metadata": {"name": "no-uid"}}, "Normal", "X", "y", "z")  # no identity: nothing
    rec.record(None, "Normal", "X", "y", "z")
    assert len(db.list("Event")) == 3


async def test_events_are_served_with_involved_object_field_selectors():
    async with SimServer() as sim:
        wls = sim.db.list("Workload")[:2]
        rec = EventRecorder(sim.db, SimClock(start=sim.db.clock()))
        for wl in wls:
            rec.record(wl, "Normal", "QuotaReserved", "Quota reserved in ClusterQueue cq", "kueue-admission")
        ns, uid = wls[0]["metadata"]["namespace"], wls[0]["metadata"]["uid"]
        status, body = await request(sim, "GET",
                                     f"/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.uid={uid}",
                                     None)
        assert status == 200 and [e["involvedObject"]["uid"] for e in body["items"]] == [uid]
        status, body = await request(sim, "GET", "/api/v1/events?fieldSelector=reason=QuotaReserved", None)
        assert status == 200 and len(body["items"]) == 2
        status, body = await request(sim, "GET", "/api/v1/events?fieldSelector=involvedObject.color=red", None)
        assert status == 400 and "field label not supported" in body["message"]
        status, body = await request(sim, "GET", "/api/v1/nodes?fieldSelector=involvedObject.uid=x", None)
        assert status == 400  # other kinds keep their own field labels


async def test_on_demand_events_list_then_watch_and_forbidden_is_said():
    async with SimServer() as sim:
        target = await connect(kubeconfig=str(sim.kubeconfig))
        try:
            od = KubeOnDemand(target, retry=0.05)
            wl, other = sim.db.list("Workload")[:2]
            m = wl["metadata"]
            ref = ObjRef(kind="Workload", namespace=m["namespace"], name=m["name"])
            rec = EventRecorder(sim.db, SimClock(start=sim.db.clock()))
            rec.record(wl, "Normal", "QuotaReserved", "Quota reserved in ClusterQueue cq", "kueue-admission")
            states = []
            task = asyncio.create_task(od.watch_events(ref, m["uid"], states.append))
            assert await eventually(lambda: states and states[-1].access == SYNCED)
            assert states[0].access == LOADING and [e.reason for e in states[-1].events] == ["QuotaReserved"]
            await sim.api.wait_for_watches(1, "events")
            rec.record(other, "Normal", "Admitted", "another object", "kueue-admission")  # not this object's
            rec.record(wl, "Normal", "Admitted", "Admitted by ClusterQueue cq", "kueue-admission")
            assert await eventually(lambda: len(states[-1].events) == 2)
            assert {e.reason for e in states[-1].events} == {"QuotaReserved", "Admitted"}
            rec.record(wl, "Normal", "Admitted", "Admitted by ClusterQueue cq", "kueue-admission")  # a repeat: count 2
            assert await eventually(lambda: any(e.count == 2 for e in states[-1].events))
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await eventually(lambda: sim.api.open_watches("events") == 0)
            # Forbidden: said, and the watch ends (never an empty list that reads as "no events")
            sim.faults.forbid("events")
            forbidden = []
            await asyncio.wait_for(od.watch_events(ref, m["uid"], forbidden.append), 20)
            assert forbidden[-1].access == FORBIDDEN and forbidden[-1].events == () and not forbidden[-1].known
            assert sim.api.writes == {}  # every on-demand read is a read
        finally:
            await target.close()


async def test_on_demand_full_object_get():
    async with SimServer() as sim:
        target = await connect(kubeconfig=str(sim.kubeconfig))
        try:
            od = KubeOnDemand(target)
            wl = sim.db.list("Workload")[0]
            m = wl["metadata"]
            ref = ObjRef(kind="Workload", namespace=m["namespace"], name=m["name"])
            full = await od.full_object(ref)
            assert full.access == SYNCED and full.document is not None
            assert full.document["spec"] == wl["spec"] and "managedFields" not in full.document["metadata"]
            assert full.fetched_at is not None
            gone = await od.full_object(ObjRef(kind="Workload", namespace=m["namespace"], name="no-such-workload"))
            assert gone.access == NOT_FOUND and gone.document is None
            sim.faults.forbid("Workload")
            denied = await od.full_object(ref)
            assert denied.access == FORBIDDEN and denied.document is None and "403" in denied.message
            secret = await od.full_object(ObjRef(kind="Secret", namespace="x", name="y"))
            assert secret.access == "Error" and secret.document is None  # never read
            assert sim.api.writes == {}
        finally:
            await target.close()
