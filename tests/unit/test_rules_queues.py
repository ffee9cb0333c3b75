from datetime import UTC, datetime

from factories import cluster_queue, cohort, local_queue, q, view_of, workload

from taudash.engine.model import Workload
from taudash.engine.rules.queues import why_waiting
from taudash.engine.sources.snapshot import store_from_objects
from taudash.engine.store import AccessState

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
GPU = "nvidia.com/gpu"
F = "taugrid-gpu-h100-80gb"


def test_implicit_and_explicit_cohorts_with_member_totals():
    v = view_of(
        cohort("team", flavors={F: {GPU: "8"}}),
        cluster_queue("a", cohort="team", flavors={F: {GPU: "2"}}, reservation={F: {GPU: "5"}}, usage={F: {GPU: "3"}}),
        cluster_queue("b", cohort="team", flavors={F: {GPU: "4"}}, reservation={F: {GPU: "1"}}),
        cluster_queue("c", cohort="loose", flavors={F: {GPU: "1"}}),
        cluster_queue("solo", flavors={F: {GPU: "1"}}, reservation={F: {GPU: "3"}}),
    )
    by = {c.name: c for c in v.cohorts}
    assert set(by) == {"team", "loose"}
    assert not by["team"].implicit and by["loose"].implicit
    assert by["team"].members == ["a", "b"]
    (res,) = by["team"].flavors[0].resources
    assert ((res.nominal, res.member_nominal, res.reserved, res.used, res.borrowed)
            == (q("8"), q("6"), q("6"), q("3"), q("3")))
    queues = {x.name: x for x in v.cluster_queues}
    a = queues["a"].flavors[0].resources[0]
    assert a.borrowed == q("3")  # reserved 5 - nominal 2
    assert queues["b"].flavors[0].resources[0].borrowed == q("0")
    # without a cohort nothing can be borrowed, whatever the reservation says
    assert queues["solo"].flavors[0].resources[0].borrowed == q("0")
    assert queues["solo"].cohort is None


def test_cohort_hierarchy_and_limits():
    v = view_of(
        cohort("root"),
        cohort("child", parent="root"),
        cluster_queue("a", cohort="child", flavors={F: {GPU: "0"}},
                      limits={(F, GPU): {"borrowingLimit": "4", "lendingLimit": "0"}}),
    )
    by = {c.name: c for c in v.cohorts}
    assert by["child"].parent == "root" and by["root"].children == ["child"]
    r = v.cluster_queues[0].flavors[0].resources[0]
    assert (r.borrowing_limit, r.lending_limit) == (q("4"), q("0"))


def test_v1beta1_field_names_are_accepted():
    v = view_of(cluster_queue("old", cohort="legacy", version="kueue.x-k8s.io/v1beta1"))
    assert v.cluster_queues[0].cohort == "legacy"


def test_stopped_queue_drained_only_when_workloads_agree():
    objs = [cluster_queue("cq", stop="HoldAndDrain",
                          active=("False", "Stopped", "Can't admit new workloads: is stopped"))]
    v = view_of(*objs)
    (cq,) = v.cluster_queues
    assert cq.drained is True and cq.stop_policy == "HoldAndDrain" and cq.active is False
    f = [f for f in v.findings if f.object.name == "cq"]
    assert [x.rule for x in f] == ["CQ-STOPPED"] and f[0].severity.value == "info"
    # status says zero but an admitted Workload is still in the store: not drained
    v = view_of(*objs, workload("w1", "ns", admitted_to="cq", state="admitted"))
    assert v.cluster_queues[0].drained is False
    assert v.cluster_queues[0].observed.admitted == 1
    # a pending Workload routed through a LocalQueue to the queue also counts
    v = view_of(*objs, local_queue("jobqueue", "ns", "cq"), workload("w2", "ns"))
    assert v.cluster_queues[0].drained is False and v.cluster_queues[0].observed.pending == 1
    # deactivated pending work (spec.active=false) is not pending any more
    v = view_of(*objs, local_queue("jobqueue", "ns", "cq"), workload("w4", "ns", active=False))
    assert v.cluster_queues[0].drained is True
    # finished work does not hold a drain
    v = view_of(*objs, workload("w3", "ns", admitted_to="cq", state="finished"))
    assert v.cluster_queues[0].drained is True


def test_stopped_queue_with_counts_is_not_drained():
    v = view_of(cluster_queue("cq", stop="Hold", admitted=2, reserving=2))
    assert v.cluster_queues[0].drained is False


def test_running_queue_is_never_drained():
    v = view_of(cluster_queue("cq"))
    assert v.cluster_queues[0].drained is False
    assert not [f for f in v.findings if f.object.kind == "ClusterQueue"]


def test_drained_is_unknown_when_workloads_are_unreadable():
    v = view_of(cluster_queue("cq", stop="HoldAndDrain"), access={"Workload": AccessState.FORBIDDEN})
    cq = v.cluster_queues[0]
    assert cq.drained is None and cq.observed is None
    assert any(f.rule == "DATA-UNREADABLE" and "workloads.kueue.x-k8s.io" in f.object.name for f in v.findings)


def test_inactive_queue_warns_with_reason():
    v = view_of(cluster_queue("cq",
                              active=("False", "FlavorNotFound",
                                      "Can't admit new workloads: references missing ResourceFlavor(s): [x]")))
    (f,) = [f for f in v.findings if f.object.kind == "ClusterQueue"]
    assert (f.rule, f.severity.value) == ("CQ-INACTIVE", "warning")
    assert "FlavorNotFound" in f.message and "[x]" in f.message


def test_active_unknown_is_not_reported_as_true():
    v = view_of(cluster_queue("cq", active=None))
    assert v.cluster_queues[0].active is None


def wl(**kw):
    return Workload.model_validate(workload("w", "ns", **kw))


def test_why_waiting_prefers_quota_reserved_then_admitted_then_checks():
    msg = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu"
    assert why_waiting(wl(reason="WaitingForQuota", message=msg)) == ("QuotaReserved", "WaitingForQuota", msg)
    checks = [{"name": "multikueue", "state": "Pending", "message": "waiting for a worker"},
              {"name": "prov", "state": "Ready"}]
    cond_, reason, message = why_waiting(wl(state="reserved", admitted_to="cq", checks=checks))
    assert cond_ == "Admitted" and reason == "UnsatisfiedAdmissionChecks"
    assert "multikueue: Pending (waiting for a worker)" in message and "prov" not in message
    assert why_waiting(wl(state="admitted", admitted_to="cq")) is None
    assert why_waiting(wl(state="finished", admitted_to="cq")) is None
    assert why_waiting(wl(active=False))[1] == "Deactivated"


def test_waiting_list_names_owner_and_route():
    v = view_of(local_queue("jobqueue", "ns", "cq"), cluster_queue("cq"),
                workload("job-a-1", "ns", reason="WaitingForQuota", owner=("Job", "a", "uid-a")))
    (w,) = v.waiting
    assert (w.cluster_queue, w.owner_kind, w.owner_name, w.reason) == ("cq", "Job", "a", "WaitingForQuota")


def test_inactive_counts_deactivated_unfinished_workloads_routed_to_the_queue():
    objs = [cluster_queue("cq", pending=1), cluster_queue("other"), local_queue("jobqueue", "ns", "cq"),
            local_queue("jobqueue", "elsewhere", "other")]
    v = view_of(*objs,
                workload("off-1", "ns", active=False),
                workload("off-2", "ns", active=False, reason="Deactivated"),
                workload("on", "ns"),  # active pending: pending, not inactive
                workload("done", "ns", admitted_to="cq", state="finished", active=False),  # finished: neither
                workload("evicting", "ns", admitted_to="cq", state="admitted", active=False),  # still holds quota
                workload("off-other", "elsewhere", active=False))
    by = {q.name: q for q in v.cluster_queues}
    assert by["cq"].inactive == 2 and by["other"].inactive == 1
    assert (by["cq"].observed.pending, by["cq"].observed.reserving, by["cq"].observed.admitted) == (1, 1, 1)
    assert by["cq"].pending == 1  # the status count is Kueue's, untouched
    contract = v.to_contract()["clusterQueues"]
    assert {q["name"]: q["inactive"] for q in contract} == {"cq": 2, "other": 1}
    assert "inactive" not in contract[0]["observed"]  # one place in the contract


def test_no_deactivated_work_counts_zero():
    v = view_of(cluster_queue("cq"), local_queue("jobqueue", "ns", "cq"), workload("on", "ns"))
    assert v.cluster_queues[0].inactive == 0


def test_inactive_is_unknown_when_workloads_are_unreadable():
    objs = [cluster_queue("cq"), local_queue("jobqueue", "ns", "cq"), workload("off", "ns", active=False)]
    for kind in ("Workload", "LocalQueue"):
        v = view_of(*objs, access={kind: AccessState.FORBIDDEN})
        assert v.cluster_queues[0].inactive is None
        assert v.to_contract()["clusterQueues"][0]["inactive"] is None


def test_incremental_deriver_moves_a_workload_between_pending_and_inactive():
    from taudash.engine.incremental import IncrementalDeriver
    from taudash.engine.model import lookup
    from taudash.engine.rules.base import RuleConfig

    store = store_from_objects([cluster_queue("cq"), local_queue("jobqueue", "ns", "cq"), workload("w", "ns")])
    inc = IncrementalDeriver(store, RuleConfig())

    def counts():
        (q,) = inc.view(NOW).cluster_queues
        return q.observed.pending, q.inactive

    assert counts() == (1, 0)
    raw = workload("w", "ns", active=False)
    store.upsert(lookup(raw["apiVersion"], raw["kind"]).model.model_validate(raw), raw=raw)
    assert counts() == (0, 1) and inc.full_builds == 1
    store.delete("Workload", "w", "ns")
    assert counts() == (0, 0)
