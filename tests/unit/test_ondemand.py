"""engine/sources/ondemand.py without a cluster: reading core/v1 Events, their order, the selector and paths
the on-demand reads use (the reads themselves run against the simulator in tests/sim/test_sim_events.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from taudash.engine.rules.base import ObjRef
from taudash.engine.sources import ondemand
from taudash.engine.sources.ondemand import EventsState, KubeOnDemand, event_selector, newest_first, parse_event

WL = ObjRef(kind="Workload", namespace="eval", name="job-a")
NODE = ObjRef(kind="Node", namespace=None, name="aks-a100-0")


def test_parse_event_reads_core_v1_fields_and_falls_back_for_missing_ones():
    e = parse_event({"metadata": {"name": "job-a.1", "creationTimestamp": "2026-11-30T09:00:00Z"},
                     "type": "Normal", "reason": "Admitted", "message": "Admitted by ClusterQueue cq", "count": 3,
                     "firstTimestamp": "2026-11-30T08:00:00Z", "lastTimestamp": "2026-11-30T09:04:00Z",
                     "source": {"component": "kueue-admission"}})
    assert (e.type, e.reason, e.count, e.source, e.name) == ("Normal", "Admitted", 3, "kueue-admission", "job-a.1")
    assert e.last == datetime(2026, 11, 30, 9, 4, tzinfo=UTC) and e.first == datetime(2026, 11, 30, 8, tzinfo=UTC)
    # events.k8s.io-style writers leave lastTimestamp empty: eventTime / series, then creation
    e2 = parse_event({"metadata": {"name": "x", "creationTimestamp": "2026-11-30T09:00:00Z"},
                      "eventTime": "2026-11-30T09:01:00.123456Z", "series": {"count": 7}, "reportingComponent": "k"})
    assert e2.count == 7 and e2.last == datetime(2026, 11, 30, 9, 1, 0, 123456, tzinfo=UTC) and e2.source == "k"
    e3 = parse_event({"metadata": {"name": "y"}, "lastTimestamp": "not a time"})
    assert e3.last is None and e3.count == 1 and e3.type == ""


def test_newest_first_and_the_limit(monkeypatch):
    def ev(name, minute):
        return parse_event({"metadata": {"name": name}, "lastTimestamp": f"2026-11-30T09:{minute:02d}:00Z"})

    events = {e.name: e for e in (ev("old", 1), ev("new", 9), ev("mid", 5), parse_event({"metadata": {"name": "?"}}))}
    shown, dropped = newest_first(events)
    assert [e.name for e in shown] == ["new", "mid", "old", "?"] and dropped == 0  # undated ones last
    monkeypatch.setattr(ondemand, "EVENTS_LIMIT", 2)
    shown, dropped = newest_first(events)
    assert [e.name for e in shown] == ["new", "mid"] and dropped == 2


def test_selector_and_paths_follow_the_object_s_scope():
    assert event_selector(WL, "u-1") == ("involvedObject.kind=Workload,involvedObject.name=job-a,"
                                         "involvedObject.namespace=eval,involvedObject.uid=u-1")
    assert event_selector(NODE, None) == "involvedObject.kind=Node,involvedObject.name=aks-a100-0"
    od = KubeOnDemand(target=None, version_of={"Workload": "v1beta1"}.get)  # type: ignore[arg-type]
    assert od.events_path(WL) == "/api/v1/namespaces/eval/events"
    assert od.events_path(NODE) == "/api/v1/events"  # a cluster-scoped object's Events: any namespace
    assert od.object_path(WL) == "/apis/kueue.x-k8s.io/v1beta1/namespaces/eval/workloads/job-a"
    assert od.object_path(NODE) == "/api/v1/nodes/aks-a100-0"


def test_only_a_synced_state_is_a_known_list():
    assert EventsState(WL, "Synced").known
    for access in ("Loading", "Forbidden", "Error", "NotFound"):
        assert not EventsState(WL, access).known, access
