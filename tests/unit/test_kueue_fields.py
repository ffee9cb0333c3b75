"""The Kueue fields operators read reach the models: pydantic and the fast struct, from
JSON bytes (a list page, a watch event) and from dicts, with Kueue's v1beta2 spellings."""

from __future__ import annotations

import json

from taudash.engine.model import kueue
from taudash.engine.model.fast import FastCodec, Workload

WL = {
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
    "metadata": {"name": "w", "namespace": "ns"},
    "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 2,
                                            "topologyRequest": {"required": "rack", "podSetSliceSize": 2},
                                            "template": {"spec": {"containers": []}}}]},
    "status": {
        "clusterName": "worker-2",
        "requeueState": {"count": 3, "requeueAt": "2026-12-01T10:00:00Z"},
        "schedulingStats": {"evictions": [{"reason": "Preempted", "underlyingCause": "InClusterQueue", "count": 4}]},
        "admissionChecks": [{"name": "mk", "state": "Ready", "message": "",
                             "lastTransitionTime": "2026-12-01T09:00:00Z"}],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "count": 2, "flavors": {"cpu": "f"},
             "topologyAssignment": {"levels": ["rack"], "slices": [{"domainCount": 1}]},
             "delayedTopologyRequest": "Ready"}]},
    },
}


def _check(w) -> None:
    st = w.status
    assert st.cluster_name == "worker-2"
    assert (st.requeue_state.count, st.requeue_state.requeue_at) == (3, "2026-12-01T10:00:00Z")
    (e,) = st.scheduling_stats.evictions
    assert (e.reason, e.underlying_cause, e.count) == ("Preempted", "InClusterQueue", 4)
    assert st.admission_checks[0].last_transition_time == "2026-12-01T09:00:00Z"
    psa = st.admission.pod_set_assignments[0]
    assert psa.topology_assignment == {"levels": ["rack"], "slices": [{"domainCount": 1}]}
    assert psa.delayed_topology_request == "Ready"
    assert w.spec.pod_sets[0].topology_request == {"required": "rack", "podSetSliceSize": 2}


def test_workload_fields_in_both_models_and_from_bytes():
    _check(kueue.Workload.model_validate(WL))
    _check(Workload.model_validate(WL))
    codec = FastCodec(Workload)
    page = codec.page(json.dumps({"items": [WL], "metadata": {"resourceVersion": "7"}}).encode())
    assert page is not None  # the fast path took it (no fallback)
    _check(page[0][0])
    typ, obj = codec.event(json.dumps({"type": "MODIFIED", "object": WL}).encode())
    assert typ == "MODIFIED"
    _check(obj)


def test_absent_fields_stay_absent():
    bare = {**WL, "status": {}}
    for w in (kueue.Workload.model_validate(bare), Workload.model_validate(bare)):
        assert w.status.cluster_name is None and w.status.scheduling_stats is None and w.status.requeue_state is None


def test_queue_policies_and_fair_sharing():
    cq = kueue.ClusterQueue.model_validate({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
        "spec": {"preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority",
                                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 5}},
                 "flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "preference": "PreemptionOverBorrowing"},
                 "fairSharing": {"weight": "500m"}, "admissionScope": {"admissionMode": "NoAdmissionFairSharing"}},
        "status": {"fairSharing": {"weightedShare": 42}},
    })
    s = cq.spec
    assert (s.preemption.reclaim_within_cohort, s.preemption.borrow_within_cohort.max_priority_threshold) == ("Any", 5)
    assert (s.flavor_fungibility.when_can_borrow, s.flavor_fungibility.when_can_preempt) == ("TryNextFlavor", None)
    assert s.flavor_fungibility.preference == "PreemptionOverBorrowing"
    assert s.fair_sharing.weight.human() == "500m" and s.admission_scope.admission_mode == "NoAdmissionFairSharing"
    assert cq.status.fair_sharing.weighted_share == 42
    lq = kueue.LocalQueue.model_validate({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                                          "metadata": {"name": "l", "namespace": "n"},
                                          "spec": {"clusterQueue": "cq", "fairSharing": {"weight": "2"}},
                                          "status": {"fairSharing": {"weightedShare": 7}}})
    assert lq.spec.fair_sharing.weight.human() == "2" and lq.status.fair_sharing.weighted_share == 7
    co = kueue.Cohort.model_validate({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                                      "metadata": {"name": "c"},
                                      "spec": {"fairSharing": {"weight": "0"}},
                                      "status": {"fairSharing": {"weightedShare": 0}}})
    assert co.spec.fair_sharing.weight.is_zero() and co.status.fair_sharing.weighted_share == 0
    # absent: Kueue's defaults, not invented values
    plain = kueue.ClusterQueue.model_validate({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                                               "metadata": {"name": "p"}})
    assert plain.spec.flavor_fungibility is None and plain.spec.fair_sharing is None
    assert plain.spec.admission_scope is None and plain.status.fair_sharing is None
