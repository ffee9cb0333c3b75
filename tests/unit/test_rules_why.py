"""engine/rules/why.py and queue_order.py: why a Workload waits, and Kueue's pending order."""

from datetime import UTC, datetime

from factories import cluster_queue, cohort, cond, local_queue, node, pod, resource_flavor, workload

from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.queue_order import cluster_queue_orders
from taudash.engine.rules.why import DEACTIVATED_BY, why_waiting_report
from taudash.engine.sources.snapshot import store_from_objects
from taudash.engine.store import AccessState

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
GPU = "nvidia.com/gpu"
F = "h100"
NS = "team"


def wl(name, *, gpu="1", priority=0, created="2026-11-30T08:00:00Z", queue="lq", ns=NS, held_in=None,
       state=None, **kw):
    """A Workload asking for `gpu` GPUs; with held_in, one holding them in that ClusterQueue."""
    d = workload(name, ns, queue=queue, admitted_to=held_in, state=state or ("admitted" if held_in else "pending"),
                 owner=("Job", name, f"uid-job-{name}"), **kw)
    d["metadata"]["creationTimestamp"] = created
    d["spec"]["priority"] = priority
    d["spec"]["podSets"] = [{"name": "main", "count": 1, "template": {"spec": {
        "containers": [{"name": "c", "resources": {"requests": {GPU: gpu}}}]}}}]
    if held_in:
        d["status"]["admission"]["podSetAssignments"] = [
            {"name": "main", "count": 1, "flavors": {GPU: F}, "resourceUsage": {GPU: gpu}}]
        for c in d["status"]["conditions"]:
            c["lastTransitionTime"] = created
    return d


def cq(name, gpu, *, cohort_name=None, preemption=None, strategy=None, limits=None, **kw):
    d = cluster_queue(name, cohort=cohort_name, flavors={F: {GPU: gpu}},
                      limits={(F, GPU): limits} if limits else None, **kw)
    if preemption:
        d["spec"]["preemption"] = preemption
    if strategy:
        d["spec"]["queueingStrategy"] = strategy
    return d


def report(target, *objs, access=None, ns=NS):
    store = store_from_objects(list(objs))
    for kind, state in (access or {}).items():
        store.set_access(kind, state)
    return why_waiting_report(RuleContext(store=store, now=NOW), ns, target)


def codes(r):
    return [x.code for x in r.reasons]


def flavor(r, resource=GPU):
    return next(f for f in r.flavors if f.resource == resource)


# --- quota shortfall ------------------------------------------------------------------------


def test_shortfall_with_a_borrowing_limit():
    objs = [cq("a", "2", cohort_name="c", limits={"borrowingLimit": "1"}), cq("b", "8", cohort_name="c"),
            local_queue("lq", NS, "a")]
    r = report("big", *objs, wl("held", gpu="1", held_in="a"), wl("big", gpu="3"))
    assert codes(r)[0] == "InsufficientQuota"
    f = flavor(r)
    # the cohort has 9 free, but a may only go 1 past its nominal 2
    assert (str(f.available), str(f.potential_available), str(f.shortfall)) == ("2", "3", "1")
    assert str(f.borrowing_limit) == "1" and str(f.cohort_lendable) == "2"
    assert r.preemption.possible is False
    # negative: with nothing held, the same request fits within the limit
    ok = report("small", *objs, wl("small", gpu="3"))
    assert "InsufficientQuota" not in codes(ok) and "FitsNow" in codes(ok)


def test_exceeds_max_quota_is_blocking_and_preemption_cannot_help():
    r = report("huge", cq("a", "2"), local_queue("lq", NS, "a"), wl("huge", gpu="5"))
    assert codes(r)[0] == "ExceedsMaxQuota" and r.reasons[0].severity == "blocking"
    assert r.preemption.possible is False


def test_lending_limit_of_another_member_is_shown_and_limits_available():
    objs = [cq("a", "0", cohort_name="c"), cq("b", "8", cohort_name="c", limits={"lendingLimit": "2"}),
            local_queue("lq", NS, "a")]
    r = report("w", *objs, wl("held", gpu="1", held_in="a"), wl("w", gpu="2"))
    f = flavor(r)
    assert str(f.available) == "1" and "InsufficientQuota" in codes(r)
    (other,) = f.lending_limit_of_others
    assert (other.cluster_queue, str(other.withheld)) == ("b", "6")
    # negative: no lending limit on b → it all can be borrowed
    r2 = report("w", cq("a", "0", cohort_name="c"), cq("b", "8", cohort_name="c"), local_queue("lq", NS, "a"),
                wl("w", gpu="3"))
    assert flavor(r2).lending_limit_of_others == [] and "FitsNow" in codes(r2)


def test_reserved_by_names_the_holders_largest_first_across_the_cohort():
    objs = [cq("a", "2", cohort_name="c"), cq("b", "4", cohort_name="c"), local_queue("lq", NS, "a"),
            local_queue("lqb", "other", "b"),
            wl("h1", gpu="2", held_in="a"), wl("h2", gpu="3", held_in="b", ns="other", queue="lqb"),
            wl("w", gpu="2")]
    f = flavor(report("w", *objs))
    assert [(h.name, str(h.amount), h.cluster_queue) for h in f.reserved_by] == [("h2", "3", "b"), ("h1", "2", "a")]
    assert f.reserved_by[0].owner.name == "h2"
    assert str(f.available) == "1"


def test_hierarchical_cohort_rollup_gives_the_parents_quota():
    objs = [cq("a", "0", cohort_name="mid"), cohort("mid", parent="root"), cohort("root", flavors={F: {GPU: "6"}}),
            local_queue("lq", NS, "a")]
    r = report("w", *objs, wl("w", gpu="5"))
    assert "FitsNow" in codes(r) and str(flavor(r).available) == "6"
    # negative: the parent's quota is not there without the parent link
    r2 = report("w", cq("a", "0", cohort_name="mid"), cohort("mid"), cohort("root", flavors={F: {GPU: "6"}}),
                local_queue("lq", NS, "a"), wl("w", gpu="5"))
    assert "ExceedsMaxQuota" in codes(r2)


# --- queues, activity, checks ------------------------------------------------------------------


def test_stopped_cluster_queue_and_local_queue():
    r = report("w", cq("a", "8", stop="Hold"), local_queue("lq", NS, "a"), wl("w"))
    assert codes(r)[0] == "ClusterQueueStopped" and r.reasons[0].details["stopPolicy"] == "Hold"
    assert "FitsNow" not in codes(r)  # quota alone does not make it admissible
    lq = local_queue("lq", NS, "a")
    lq["spec"]["stopPolicy"] = "HoldAndDrain"
    r2 = report("w", cq("a", "8"), lq, wl("w"))
    assert codes(r2)[0] == "LocalQueueStopped"
    running = report("w", cq("a", "8"), local_queue("lq", NS, "a"), wl("w"))
    assert not {"ClusterQueueStopped", "LocalQueueStopped"} & set(codes(running))


def test_missing_queues_and_inactive_cluster_queue():
    assert codes(report("w", cq("a", "8"), wl("w")))[0] == "LocalQueueMissing"
    assert codes(report("w", local_queue("lq", NS, "gone"), wl("w")))[0] == "ClusterQueueMissing"
    inactive = cq("a", "8",
                  active=("False", "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s)"))
    r = report("w", inactive, local_queue("lq", NS, "a"), wl("w"))
    assert codes(r)[0] == "ClusterQueueInactive" and r.reasons[0].details["reason"] == "FlavorNotFound"


def test_admission_check_pending_and_rejected():
    checks = [{"name": "prov", "state": "Pending", "message": "waiting for capacity"}]
    r = report("w", cq("a", "8"), local_queue("lq", NS, "a"), wl("w", held_in="a", state="reserved", checks=checks))
    assert codes(r)[0] == "AdmissionCheckPending" and "waiting for capacity" in r.reasons[0].message
    rejected = report("w", cq("a", "8"), local_queue("lq", NS, "a"),
                      wl("w", held_in="a", state="reserved", checks=[{"name": "prov", "state": "Rejected"}]))
    assert codes(rejected)[0] == "AdmissionCheckRejected"
    ready = report("w", cq("a", "8"), local_queue("lq", NS, "a"),
                   wl("w", held_in="a", state="admitted", checks=[{"name": "prov", "state": "Ready"}]))
    assert codes(ready) == ["Admitted"]


def test_inactive_with_and_without_the_workflow_annotation():
    plain = report("w", cq("a", "8"), local_queue("lq", NS, "a"), wl("w", active=False))
    assert codes(plain)[0] == "Inactive" and plain.reasons[0].details["deactivatedBy"] is None
    marked = wl("w", active=False)
    marked["metadata"]["annotations"] = {DEACTIVATED_BY: "drain-node-7"}
    r = report("w", cq("a", "8"), local_queue("lq", NS, "a"), marked)
    assert r.reasons[0].details["deactivatedBy"] == "drain-node-7" and "drain-node-7" in r.reasons[0].message
    assert "Inactive" not in codes(report("w", cq("a", "8"), local_queue("lq", NS, "a"), wl("w")))


def test_finished_workload_says_so():
    r = report("w", cq("a", "8"), local_queue("lq", NS, "a"), wl("w", held_in="a", state="finished"))
    assert codes(r) == ["Finished"] and r.queue.position_in_cluster_queue is None


# --- preemption --------------------------------------------------------------------------------


def test_preemption_possible_with_a_lower_priority_victim():
    objs = [cq("a", "4", preemption={"withinClusterQueue": "LowerPriority"}), local_queue("lq", NS, "a"),
            wl("low", gpu="2", priority=10, held_in="a"), wl("same", gpu="2", priority=100, held_in="a")]
    r = report("w", *objs, wl("w", gpu="2", priority=100))
    assert r.preemption.possible is True
    assert [c.name for c in r.preemption.candidates] == ["low"]


def test_preemption_not_possible_with_only_equal_priority_or_policy_never():
    objs = [local_queue("lq", NS, "a"), wl("same1", gpu="2", priority=100, held_in="a"),
            wl("same2", gpu="2", priority=100, held_in="a")]
    r = report("w", cq("a", "4", preemption={"withinClusterQueue": "LowerPriority"}), *objs,
               wl("w", gpu="2", priority=100))
    assert r.preemption.possible is False and r.preemption.candidates == []
    never = report("w", cq("a", "4"), local_queue("lq", NS, "a"), wl("low", gpu="2", priority=1, held_in="a"),
                   wl("x", gpu="2", priority=100, held_in="a"), wl("w", gpu="2", priority=100))
    assert never.preemption.possible is False and never.preemption.policy["withinClusterQueue"] == "Never"


def test_reclaim_within_cohort_targets_borrowing_queues_only():
    pre = {"reclaimWithinCohort": "Any"}
    objs = [cq("a", "4", cohort_name="c", preemption=pre), cq("b", "2", cohort_name="c"),
            local_queue("lq", NS, "a"), local_queue("lqb", "o", "b"),
            wl("borrower", gpu="4", priority=500, held_in="b", ns="o", queue="lqb")]
    r = report("w", *objs, wl("w", gpu="4", priority=0))
    assert r.preemption.possible is True and [c.name for c in r.preemption.candidates] == ["borrower"]
    # negative: b within its nominal is not borrowing, nothing to reclaim
    r2 = report("w", cq("a", "4", cohort_name="c", preemption=pre), cq("b", "6", cohort_name="c"),
                local_queue("lq", NS, "a"), local_queue("lqb", "o", "b"),
                wl("user", gpu="6", priority=0, held_in="b", ns="o", queue="lqb"), wl("w", gpu="6"))
    assert r2.preemption.possible is False


def test_no_preemption_to_borrow_unless_borrow_within_cohort_allows_it():
    def objs(preemption):
        return [cq("a", "2", cohort_name="c", preemption=preemption), cq("b", "2", cohort_name="c"),
                local_queue("lq", NS, "a"), wl("low", gpu="2", priority=1, held_in="a"), wl("w", gpu="3", priority=9)]

    # Preempting `low` would free room, but the request (3) exceeds a's nominal (2): Kueue waits instead.
    r = report("w", *objs({"withinClusterQueue": "LowerPriority"}))
    assert r.preemption.possible is False and "borrowing" in r.preemption.message
    allowed = report("w",
                     *objs({"withinClusterQueue": "LowerPriority", "borrowWithinCohort": {"policy": "LowerPriority"}}))
    assert allowed.preemption.possible is True and [c.name for c in allowed.preemption.candidates] == ["low"]


# --- order and head-of-line blocking ---------------------------------------------------------------


def test_order_priority_then_time_and_local_queue_positions_keep_global_order():
    objs = [cq("a", "0"), local_queue("lq", NS, "a"), local_queue("lq2", NS, "a"),
            wl("old-low", priority=1, created="2026-11-30T01:00:00Z"),
            wl("new-high", priority=9, created="2026-11-30T05:00:00Z", queue="lq2"),
            wl("old-high", priority=9, created="2026-11-30T02:00:00Z"),
            wl("held", held_in="a"), wl("off", active=False)]
    store = store_from_objects(objs)
    order = cluster_queue_orders(RuleContext(store=store, now=NOW))["a"]
    assert [(e.workload.name, e.position_in_cluster_queue, e.position_in_local_queue) for e in order.entries] == [
        ("old-high", 0, 0), ("new-high", 1, 0), ("old-low", 2, 1)]
    r = report("old-low", *objs)
    assert (r.queue.position_in_cluster_queue, r.queue.position_in_local_queue) == (2, 1)
    assert [a.name for a in r.ahead] == ["old-high", "new-high"]


def test_eviction_by_pods_ready_timeout_requeues_by_eviction_time():
    evicted = wl("evicted", created="2026-11-30T01:00:00Z")
    evicted["status"]["conditions"].append({**cond("Evicted", "True", "PodsReadyTimeout"),
                                            "lastTransitionTime": "2026-11-30T07:00:00Z"})
    preempted = wl("preempted", created="2026-11-30T01:30:00Z")
    preempted["status"]["conditions"].append({**cond("Evicted", "True", "Preempted"),
                                              "lastTransitionTime": "2026-11-30T07:00:00Z"})
    objs = [cq("a", "0"), local_queue("lq", NS, "a"), evicted, preempted, wl("mid", created="2026-11-30T03:00:00Z")]
    order = cluster_queue_orders(RuleContext(store=store_from_objects(objs), now=NOW))["a"]
    assert [e.workload.name for e in order.entries] == ["preempted", "mid", "evicted"]


def test_strict_fifo_head_of_line_blocking_vs_best_effort():
    def objs(strategy):
        return [cq("a", "2", strategy=strategy), local_queue("lq", NS, "a"),
                wl("head", gpu="4", priority=9), wl("small", gpu="1", priority=1)]

    strict = report("small", *objs("StrictFIFO"))
    assert codes(strict)[0] == "HeadOfLineBlocked"
    assert strict.reasons[0].details["fitsItself"] is True and "FitsNow" not in codes(strict)
    best = report("small", *objs("BestEffortFIFO"))
    assert "HeadOfLineBlocked" not in codes(best) and "FitsNow" in codes(best)


def test_backoff_until_requeue_at():
    w = wl("w", gpu="1")
    w["status"]["requeueState"] = {"count": 2, "requeueAt": "2026-11-30T09:05:00Z"}
    r = report("w", cq("a", "8"), local_queue("lq", NS, "a"), w)
    assert "Backoff" in codes(r)
    w["status"]["requeueState"]["requeueAt"] = "2026-11-30T08:55:00Z"
    assert "Backoff" not in codes(report("w", cq("a", "8"), local_queue("lq", NS, "a"), w))


# --- fail closed --------------------------------------------------------------------------------


def test_unreadable_workloads_or_cluster_queues_are_unknown_never_fits():
    objs = [cq("a", "8"), local_queue("lq", NS, "a"), wl("w", gpu="1")]
    for kind in ("Workload", "ClusterQueue"):
        r = report("w", *objs, access={kind: AccessState.FORBIDDEN})
        assert codes(r)[0] == "Unknown", kind
        assert "FitsNow" not in codes(r)
        assert all(f.available is None for f in r.flavors)
        assert r.preemption.possible is None
        assert r.queue.position_in_cluster_queue is None
    assert cluster_queue_orders(RuleContext(store=store_from_objects(objs), now=NOW)) is not None
    store = store_from_objects(objs)
    store.set_access("Workload", AccessState.FORBIDDEN)
    assert cluster_queue_orders(RuleContext(store=store, now=NOW)) is None
    # positive control: readable, it fits
    assert "FitsNow" in codes(report("w", *objs))


def test_unreadable_cohorts_are_unknown_but_an_absent_cohort_api_is_not():
    objs = [cq("a", "0", cohort_name="c"), cq("b", "4", cohort_name="c"), local_queue("lq", NS, "a"), wl("w", gpu="1")]
    assert codes(report("w", *objs, access={"Cohort": AccessState.FORBIDDEN}))[0] == "Unknown"
    assert "FitsNow" in codes(report("w", *objs, access={"Cohort": AccessState.ABSENT}))


def test_kueue_condition_is_reported_after_agreeing_reasons_and_first_when_it_disagrees():
    # Kueue says WaitingForQuota but the quota is free now: disagreement, right after the top reason
    r = report("w", cq("a", "1"), local_queue("lq", NS, "a"), wl("w", gpu="1", reason="WaitingForQuota",
                                                                   message="insufficient unused quota"))
    kc = next(x for x in r.reasons if x.code == "KueueCondition")
    assert kc.details["agreesWithEstimate"] is False and r.reasons.index(kc) == 1
    # agreement: the same reason when quota is short is reported last
    r2 = report("w", cq("a", "1"), local_queue("lq", NS, "a"), wl("h", gpu="1", held_in="a"),
                wl("w", gpu="1", reason="WaitingForQuota"))
    kc2 = next(x for x in r2.reasons if x.code == "KueueCondition")
    assert kc2.details["agreesWithEstimate"] is True and r2.reasons[-1] is kc2
    assert r2.reasons[0].code == "InsufficientQuota"


def test_no_matching_flavor_by_taint_and_node_selector():
    rf = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": F},
          "spec": {"nodeLabels": {"gpu": "h100"},
                   "nodeTaints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]}}
    base = [cq("a", "8"), local_queue("lq", NS, "a"), rf]
    r = report("w", *base, wl("w"))
    assert codes(r)[0] == "NoMatchingFlavor" and "sku=gpu" in r.reasons[0].details["flavors"][F]
    assert r.preemption.possible is False
    tolerant = wl("w")
    tolerant["spec"]["podSets"][0]["template"]["spec"]["tolerations"] = [{"key": "sku", "operator": "Exists"}]
    assert "FitsNow" in codes(report("w", *base, tolerant))
    tolerant["spec"]["podSets"][0]["template"]["spec"]["nodeSelector"] = {"gpu": "a100"}
    assert codes(report("w", *base, tolerant))[0] == "NoMatchingFlavor"
    # a taint the flavor itself tolerates does not count
    rf2 = {**rf, "spec": {**rf["spec"], "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu"}]}}
    assert "FitsNow" in codes(report("w", cq("a", "8"), local_queue("lq", NS, "a"), rf2, wl("w")))


def test_admission_gated_workload_is_not_queued():
    gated = wl("g", priority=99)
    gated["metadata"]["annotations"] = {"kueue.x-k8s.io/admission-gated-by": "example.com/gate"}
    objs = [cq("a", "8"), local_queue("lq", NS, "a"), gated, wl("w", priority=1)]
    r = report("g", *objs)
    assert codes(r)[0] == "AdmissionGated" and r.queue.position_in_cluster_queue is None
    assert report("w", *objs).queue.position_in_cluster_queue == 0  # the gated one is not ahead
    gated["metadata"]["annotations"] = {}
    assert report("w", *objs).queue.position_in_cluster_queue == 1


def test_namespace_not_selected_by_the_cluster_queue():
    def ns(labels):
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": labels}}

    picky = cq("a", "8")
    picky["spec"]["namespaceSelector"] = {"matchLabels": {"team": "vision"}}
    objs = [picky, local_queue("lq", NS, "a"), wl("w")]
    r = report("w", *objs, ns({"team": "nlp"}))
    assert codes(r)[0] == "NamespaceNotSelected" and "FitsNow" not in codes(r)
    assert "NamespaceNotSelected" not in codes(report("w", *objs, ns({"team": "vision"})))
    assert "Unknown" in codes(report("w", *objs, ns({"team": "vision"}), access={"Namespace": AccessState.FORBIDDEN}))


def _rf(name, labels):
    return resource_flavor(name, labels)


def _two_pod_sets(name, head_pool, workers_pool, workers_gpu="2", head_gpu="0"):
    w = wl(name)
    w["spec"]["podSets"] = [
        {"name": "head", "count": 1, "template": {"spec": {"nodeSelector": {"pool": head_pool}, "containers": [
            {"name": "c", "resources": {"requests": {"cpu": "4", GPU: head_gpu}}}]}}},
        {"name": "workers", "count": 2, "template": {"spec": {"nodeSelector": {"pool": workers_pool}, "containers": [
            {"name": "c", "resources": {"requests": {"cpu": "8", GPU: workers_gpu}}}]}}},
    ]
    return w


def test_pod_sets_are_assigned_flavor_by_flavor_like_kueue():
    q = cluster_queue("a", flavors={"cpu-pool": {"cpu": "16", GPU: "0"}, F: {"cpu": "64", GPU: "8"}})
    objs = [q, local_queue("lq", NS, "a"), _rf("cpu-pool", {"pool": "cpu"}), _rf(F, {"pool": "gpu"})]
    r = report("ray", *objs, _two_pod_sets("ray", "cpu", "gpu"))
    assert "FitsNow" in codes(r) and "NoMatchingFlavor" not in codes(r)
    rows = {(f.flavor, f.resource): (str(f.requested), f.mode) for f in r.flavors}
    assert (rows[("cpu-pool", "cpu")] == ("4", "Fit") and rows[(F, GPU)] == ("4", "Fit") and rows[(F, "cpu")]
            == ("16", "Fit"))
    bad = report("ray", *objs, _two_pod_sets("ray", "cpu", "tpu"))
    assert codes(bad)[0] == "NoMatchingFlavor" and "workers" in bad.reasons[0].message


def test_pod_sets_add_up_on_one_flavor():
    q = cluster_queue("a", flavors={F: {"cpu": "64", GPU: "5"}})
    objs = [q, local_queue("lq", NS, "a"), _rf(F, {"pool": "gpu"})]
    r = report("ray", *objs, _two_pod_sets("ray", "gpu", "gpu", workers_gpu="2", head_gpu="1"))
    assert "FitsNow" in codes(r)
    r2 = report("ray", *objs, _two_pod_sets("ray", "gpu", "gpu", workers_gpu="2", head_gpu="2"))
    assert codes(r2)[0] == "ExceedsMaxQuota" and str(flavor(r2).requested) == "6"


OPTIMISTIC = {"FitsNow", "InsufficientQuota", "ExceedsMaxQuota", "HeadOfLineBlocked", "QueuedBehind"}


def _scenarios():
    lq = local_queue("lq", NS, "a")
    yield "borrowing", [cq("a", "2", cohort_name="c", limits={"borrowingLimit": "1"}), cq("b", "8", cohort_name="c"),
                        lq,
                        wl("held", gpu="1", held_in="a"), wl("w", gpu="3")]
    yield "hierarchy", [cq("a", "0", cohort_name="mid"), cohort("mid", parent="root"),
                        cohort("root", flavors={F: {GPU: "6"}}),
                        lq, wl("w", gpu="5")]
    yield "preemption", [cq("a", "4", preemption={"withinClusterQueue": "LowerPriority"}), lq,
                         wl("low", gpu="4", priority=1, held_in="a"), wl("w", gpu="2", priority=9)]
    yield "strict", [cq("a", "2", strategy="StrictFIFO"), lq, wl("head", gpu="4", priority=9), wl("w", gpu="1")]


def test_every_scenario_fails_closed_when_workloads_or_cluster_queues_are_unreadable():
    for label, objs in _scenarios():
        ok = report("w", *objs)
        assert ok.reasons[0].code != "Unknown" and OPTIMISTIC & set(codes(ok)), label  # the control concludes something
        for kind in ("Workload", "ClusterQueue"):
            r = report("w", *objs, access={kind: AccessState.ERROR})
            assert r.reasons[0].code == "Unknown", (label, kind)
            assert not OPTIMISTIC & set(codes(r)), (label, kind)
            assert r.preemption.possible is None and all(f.available is None for f in r.flavors), (label, kind)


def test_pending_workloads_summary_has_the_visibility_api_shape():
    from taudash.engine.rules.queue_order import pending_workloads_summary

    objs = [cq("a", "0"), local_queue("lq", NS, "a"), local_queue("lq2", NS, "a"),
            wl("x", priority=1), wl("y", priority=5, queue="lq2"), wl("z", priority=0)]
    order = cluster_queue_orders(RuleContext(store=store_from_objects(objs), now=NOW))["a"]
    cqs = pending_workloads_summary(order)
    assert cqs["kind"] == "PendingWorkloadsSummary"
    assert [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"], i["localQueueName"])
            for i in cqs["items"]] == [("y", 0, 0, "lq2"), ("x", 1, 0, "lq"), ("z", 2, 1, "lq")]
    lq = pending_workloads_summary(order, namespace=NS, local_queue="lq", limit=1, offset=1)
    assert [i["metadata"]["name"] for i in lq["items"]] == ["z"]
    assert pending_workloads_summary(order, namespace="elsewhere", local_queue="lq")["items"] == []


def test_positions_from_the_visibility_api_replace_the_estimate_and_unknown_is_null():
    from taudash.engine.rules.queue_order import ESTIMATED, FROM_API, UNKNOWN, QueuePositions, estimated_positions

    objs = [cq("a", "0"), local_queue("lq", NS, "a"), local_queue("lq2", NS, "a"),
            wl("old-low", priority=1, created="2026-11-30T01:00:00Z"),
            wl("new-high", priority=9, created="2026-11-30T05:00:00Z", queue="lq2"),
            wl("old-high", priority=9, created="2026-11-30T02:00:00Z")]
    store = store_from_objects(objs)
    ctx = RuleContext(store=store, now=NOW)

    def item(name, lq, pcq, plq):
        return {"metadata": {"namespace": NS, "name": name}, "priority": 0, "localQueueName": lq,
                "positionInClusterQueue": pcq, "positionInLocalQueue": plq}

    # Kueue says old-low is the head (the estimate puts it last): Kueue's word wins, "ahead" follows it;
    # an item the store does not hold yet keeps its position but is not listed ahead
    api = QueuePositions("a", None, FROM_API, "Synced", (
        item("ghost", "lq", 0, 0), item("old-low", "lq", 1, 1), item("old-high", "lq", 2, 2),
        item("new-high", "lq2", 3, 0)))
    r = why_waiting_report(ctx, NS, "old-high", positions=api)
    assert ((r.queue.position_in_cluster_queue, r.queue.position_in_local_queue, r.queue.position_source)
            == (2, 2, FROM_API))
    assert [a.name for a in r.ahead] == ["old-low"]
    queued = next(x for x in r.reasons if x.code == "QueuedBehind")
    assert queued.details["count"] == 2
    # forbidden: no position, no "ahead", no QueuedBehind — never "position 0, nobody ahead"
    forbidden = QueuePositions("a", None, UNKNOWN, "Forbidden", None, "visibility API forbidden (HTTP 403)")
    r = why_waiting_report(ctx, NS, "old-low", positions=forbidden)
    assert r.queue.position_in_cluster_queue is None and r.queue.position_source == UNKNOWN and r.ahead is None
    assert "forbidden" in r.queue.position_note and not any(x.code == "QueuedBehind" for x in r.reasons)
    assert r.to_contract()["ahead"] is None
    # not served: the estimate, with the reason
    absent = estimated_positions(ctx, cq="a", why="visibility API not served")
    assert absent.source == ESTIMATED
    r = why_waiting_report(ctx, NS, "old-low", positions=absent)
    assert (r.queue.position_in_cluster_queue, r.queue.position_source, r.queue.position_note) == (
        2, ESTIMATED, "visibility API not served")
    # another queue's positions are not taken for this one's
    other = QueuePositions("b", None, FROM_API, "Synced", (item("old-low", "lq", 0, 0),))
    assert why_waiting_report(ctx, NS, "old-low", positions=other).queue.position_in_cluster_queue == 2


def test_the_local_queue_estimate_keeps_cluster_queue_positions():
    from taudash.engine.rules.queue_order import estimated_positions

    objs = [cq("a", "0"), local_queue("lq", NS, "a"), local_queue("lq2", NS, "a"), local_queue("lq3", "other", "b"),
            wl("old-low", priority=1, created="2026-11-30T01:00:00Z"),
            wl("new-high", priority=9, created="2026-11-30T05:00:00Z", queue="lq2"),
            wl("old-high", priority=9, created="2026-11-30T02:00:00Z"),
            wl("elsewhere", queue="lq3", ns="other")]
    ctx = RuleContext(store=store_from_objects(objs), now=NOW)
    pos = estimated_positions(ctx, lq=(NS, "lq"), limit=100000)
    assert pos.cluster_queue == "a"
    assert [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"]) for i in pos.items] == [
        ("old-high", 0, 0), ("old-low", 2, 1)]
    assert estimated_positions(ctx, lq=(NS, "missing")).items is None


# --- topology: quota exists, no domain has the room ----------------------------------------------

ACC = "tau.azure.com/accelerator-domain"
TAS = "taugrid-gpu-h100"


def _gang(name="gang", reason=None):
    d = wl(name, gpu="8")
    ps = d["spec"]["podSets"][0]
    ps["count"] = 2
    ps["topologyRequest"] = {"required": ACC}
    if reason:
        d["status"]["conditions"] = [cond("QuotaReserved", "False", reason, "couldn't assign flavors to pod set main")]
    return d


def _racks(*pods):
    objs = [cluster_queue("a", flavors={TAS: {GPU: "64"}}), local_queue("lq", NS, "a"), resource_flavor(TAS)]
    for r in "xy":
        objs += [node(f"{r}{i}", "h100", alloc={GPU: "8"}, labels={ACC: f"rack-{r}"}) for i in (1, 2)]
    return objs + [pod(f"p-{n}", node=n, gpus=1) for n in pods]


def test_quota_exists_but_no_domain_can_place_the_shape():
    # A 1-GPU Pod in each rack: each rack keeps room for one 8-GPU worker, the gang needs two in one rack.
    r = report("gang", *_racks("x1", "y2"), _gang())
    assert codes(r)[0] == "TopologyPlacementFailed" and "FitsNow" not in codes(r)
    top = r.reasons[0]
    assert top.message.startswith("quota exists but no domain can place this shape (2×8 GPUs same-accelerator-domain)")
    assert "has 15 free GPUs, room for 1 of the 2 workers" in top.message and top.details["bestFree"] == 15
    # negative: one rack empty, the gang fits there
    ok = report("gang", *_racks("x1", "x2"), _gang())
    assert "TopologyPlacementFailed" not in codes(ok) and "FitsNow" in codes(ok)


def test_topology_failure_fail_closed_and_kueues_word():
    # Pods unreadable: no guess of our own; Kueue's reason still gives the sentence, saying the room is unknown.
    r = report("gang", *_racks("x1", "y2"), _gang(reason="TopologyPlacementFailed"), access={"Pod": AccessState.FORBIDDEN})
    top = next(x for x in r.reasons if x.code == "TopologyPlacementFailed")
    assert top.message.endswith("free capacity per domain is unknown") and top.details["fromKueue"] is True
    kc = next(x for x in r.reasons if x.code == "KueueCondition")
    assert kc.details["agreesWithEstimate"] is True
    quiet = report("gang", *_racks("x1", "y2"), _gang(), access={"Pod": AccessState.FORBIDDEN})
    assert "TopologyPlacementFailed" not in codes(quiet)
