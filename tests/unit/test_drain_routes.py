"""Drain mode, live route discovery, route states, UID continuity and fail-closed inputs (docs/rules.md#drain-mode)."""

import pytest
from factories import (
    DRAIN_MODES,
    DRAIN_NOW,
    NEW,
    OLD,
    blocker_names,
    cluster_queue,
    deployment,
    drain,
    drain_ctx,
    drain_workload,
    drain_workspace,
    drain_world,
    job,
    local_queue,
    managed_template,
    namespace,
    rayservice,
    rules,
    ws_labels,
)

from taudash.engine.incremental import derive
from taudash.engine.rules.base import RuleConfig
from taudash.engine.store import AccessState

# --- mode ----------------------------------------------------------------------------------------------


def test_not_draining_when_target_equals_resolved_namespace():
    view, findings = drain(drain_world(None, job("prep"), rayservice("llm")))
    assert (view.state, view.mode, view.routes, view.blockers) == ("NotDraining", None, [], [])
    assert findings == []


def test_explicit_target_equal_to_resolved_is_not_a_retarget():
    view, _ = drain(drain_world(None, ws=drain_workspace(None, target=OLD)))
    assert view.state == "NotDraining"


def test_unresolved_workspace_is_not_retargeting():
    view, _ = drain(drain_world(None, ws=drain_workspace(None, target=NEW, resolved=None)))
    assert view.state == "NotDraining"


def test_retarget_names_old_and_new_namespace():
    view, _ = drain(drain_world("Retarget"))
    assert (view.mode, view.old_namespace, view.new_namespace, view.state) == ("Retarget", OLD, NEW, "Clear")


def test_deletion_wins_over_retarget():
    ws = drain_workspace("Deletion", target=NEW)
    view, _ = drain(drain_world(None, ws=ws))
    assert (view.mode, view.old_namespace, view.new_namespace) == ("Deletion", OLD, None)


def test_deleting_a_workspace_that_never_resolved_has_nothing_to_drain():
    view, findings = drain(drain_world(None, job("prep"), ws=drain_workspace("Deletion", resolved=None)))
    assert (view.state, view.old_namespace, view.routes) == ("Clear", None, [])
    assert findings == []


# --- routes are discovered live --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_every_local_queue_in_the_old_namespace_is_a_route(mode):
    objs = drain_world(
        mode,
        cluster_queue("platform-shared", status=False, selector={}),
        local_queue("shared", OLD, "platform-shared"),
        local_queue("other-ns", "elsewhere", "platform-shared"),
    )
    view, _ = drain(objs)
    assert [(r.local_queue, r.cluster_queue) for r in view.routes] == [
        ("shared", "platform-shared"),
        ("jobqueue", "tau-ws-eval"),
    ]


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_admitted_cluster_queue_of_an_unfinished_workload_is_a_route(mode):
    # The LocalQueue is already gone; the Workload still holds a reservation in the team queue.
    objs = [o for o in drain_world(mode) if o["kind"] != "LocalQueue"]
    objs.append(drain_workload("w", admitted_to="tau-ws-eval"))
    view, _ = drain(objs)
    assert [(r.local_queue, r.cluster_queue, r.state) for r in view.routes] == [("jobqueue", "tau-ws-eval", "Required")]
    assert blocker_names(view) == [("Workload", "w")]


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_routes_do_not_depend_on_status_queue(mode):
    ws = drain_workspace(mode, queue_uid=None)
    ws["status"]["queue"] = {}  # a legacy workspace with empty queue status
    view, _ = drain(drain_world(mode, drain_workload("w"), ws=ws))
    assert view.routes[0].state == "Required" and view.routes[0].uid_continuity is None
    assert blocker_names(view) == [("Workload", "w")]


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_finished_workloads_add_no_route(mode):
    objs = [o for o in drain_world(mode) if o["kind"] != "LocalQueue"]
    objs.append(drain_workload("done", admitted_to="tau-ws-eval", finished=True))
    view, _ = drain(objs)
    assert (view.state, view.routes) == ("Clear", [])


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_objects_outside_the_old_namespace_are_ignored(mode):
    objs = drain_world(
        mode,
        local_queue("jobqueue", NEW, "tau-ws-eval"),
        drain_workload("w-new", NEW, admitted_to="tau-ws-eval"),
        job("prep", NEW),
        rayservice("llm", NEW),
    )
    view, _ = drain(objs)
    assert view.state == "Clear"


# --- route states -------------------------------------------------------------------------------------------


def _route_with(mode: str, selector, *extra, ns_labels=None):
    objs = drain_world(mode, cluster_queue("ext", status=False, selector=selector), local_queue("ext", OLD, "ext"),
                       *extra, ns_labels=ns_labels)
    view, findings = drain(objs)
    return next(r for r in view.routes if r.cluster_queue == "ext"), view, findings


@pytest.mark.parametrize("mode", DRAIN_MODES)
@pytest.mark.parametrize(
    "selector,state",
    [
        ({"matchLabels": {"tau.azure.com/workspace": "eval"}}, "Required"),
        ({"matchLabels": {"kueue.x-k8s.io/default-local-queue": "jobqueue"}}, "Required"),
        ({"matchExpressions": [{"key": "tau.azure.com/team", "operator": "In", "values": ["research"]}]}, "Required"),
        ({"matchExpressions": [{"key": "app.kubernetes.io/managed-by", "operator": "Exists"}]}, "Required"),
        ({}, "SelectorIndependent"),
        ({"matchLabels": {"kubernetes.io/metadata.name": OLD}}, "SelectorIndependent"),
        ({"matchExpressions": [{"key": "tau.azure.com/workspace", "operator": "DoesNotExist"}]}, "NotRouted"),
        ({"matchExpressions": [{"key": "tau.azure.com/workspace", "operator": "NotIn", "values": ["eval"]}]},
         "NotRouted"),
        ({"matchLabels": {"tau.azure.com/workspace": "other"}}, "NotRouted"),
        (None, "NotRouted"),  # a null selector matches no namespace
    ],
)
def test_route_state_from_the_live_selector(mode, selector, state):
    route, _, _ = _route_with(mode, selector)
    assert route.state == state


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_mixed_selector_needs_both_kept_and_cleaned_labels(mode):
    sel = {"matchLabels": {"kubernetes.io/metadata.name": OLD, "tau.azure.com/workspace": "eval"}}
    route, _, _ = _route_with(mode, sel)
    assert route.state == "Required"


@pytest.mark.parametrize("mode", DRAIN_MODES)
@pytest.mark.parametrize(
    "selector", [{}, None, {"matchLabels": {"tau.azure.com/workspace": "other"}}],
    ids=["independent", "null", "unmatched"]
)
def test_work_on_non_required_routes_does_not_wait(mode, selector):
    extra = [
        drain_workload("w", queue="ext", admitted_to="ext"),
        job("prep", queue="ext"),
        rayservice("llm", queue="ext"),
        deployment("web", template_labels=managed_template("ext")),
    ]
    objs = [o
            for o in drain_world(mode, cluster_queue("ext", status=False, selector=selector),
                                 local_queue("ext", OLD, "ext"), *extra)]
    view, findings = drain(objs)
    assert view.state == "Clear" and view.blockers == [] and findings == []


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_missing_cluster_queue_is_a_route_without_wait(mode):
    objs = drain_world(mode, local_queue("legacy", OLD, "old-batch"), drain_workload("w", queue="legacy"),
                       job("prep", queue="legacy"))
    view, findings = drain(objs)
    route = next(r for r in view.routes if r.cluster_queue == "old-batch")
    assert (route.local_queue, route.state) == ("legacy", "Missing")
    assert view.state == "Clear" and findings == []


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_source_naming_an_absent_local_queue_does_not_block(mode):
    view, _ = drain(drain_world(mode, job("prep", queue="nosuchqueue")))
    assert view.state == "Clear"


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_cleaned_labels_already_gone_means_not_routed(mode):
    # Retarget cleanup already stripped the labels: the team queue no longer selects the namespace.
    view, _ = drain(drain_world(mode, drain_workload("w"), ns_labels={}))
    assert view.routes[0].state == "NotRouted" and view.state == "Clear"


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_workload_blocks_through_its_admitted_queue(mode):
    # Its LocalQueue now points at an external queue; the reservation is still in the required team queue.
    objs = drain_world(mode, cluster_queue("ext", status=False, selector={}), local_queue("ext", OLD, "ext"),
                       drain_workload("w", queue="ext", admitted_to="tau-ws-eval"))
    view, _ = drain(objs)
    assert {(r.local_queue, r.cluster_queue) for r in view.routes} >= {("ext", "ext"), ("ext", "tau-ws-eval")}
    assert view.blockers[0].route == "tau-ws-eval"


# --- UID continuity ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_uid_continuity_unchanged(mode):
    view, findings = drain(drain_world(mode))
    assert view.routes[0].uid_continuity == "Unchanged" and findings == []


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_replaced_cluster_queue_is_reported_and_left_alone(mode):
    view, findings = drain(drain_world(mode, ws=drain_workspace(mode, queue_uid="uid-before-replacement")))
    assert view.routes[0].uid_continuity == "Changed"
    (f,) = findings
    assert ((f.rule, f.severity.value, f.object.kind, f.object.name)
            == ("DRAIN-QUEUE-REPLACED", "warning", "TauWorkspace", "eval"))
    assert "uid-before-replacement" in f.message
    assert "delete" not in f.hint.lower() and "patch" not in f.hint.lower()


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_uid_continuity_only_for_the_recorded_queue(mode):
    view, _ = drain(drain_world(mode, cluster_queue("ext", status=False, selector={}), local_queue("ext", OLD, "ext")))
    assert {r.cluster_queue: r.uid_continuity for r in view.routes} == {"ext": None, "tau-ws-eval": "Unchanged"}


# --- fail closed ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", DRAIN_MODES)
@pytest.mark.parametrize("kind", ["LocalQueue", "ClusterQueue", "Namespace", "Workload"])
@pytest.mark.parametrize("state", [AccessState.FORBIDDEN, AccessState.ERROR])
def test_unreadable_routing_inputs_fail_closed(mode, kind, state):
    view, findings = drain(drain_world(mode), {kind: state})
    assert view.state == "Unknown"
    assert len(view.unknown) == 1 and view.unknown[0].reason == state.value
    assert rules(findings) == ["DRAIN-UNKNOWN"]
    f = findings[0]
    assert f.severity.value == "critical" and (f.object.kind, f.object.name) == ("TauWorkspace", "eval")


@pytest.mark.parametrize("mode", DRAIN_MODES)
@pytest.mark.parametrize("kind", ["ClusterQueue", "Namespace"])
def test_unreadable_queue_or_namespace_makes_the_route_unknown(mode, kind):
    view, _ = drain(drain_world(mode, job("prep")), {kind: AccessState.FORBIDDEN})
    assert [r.state for r in view.routes] == ["Unknown"]
    assert view.blockers == []  # nothing is claimed about routes that cannot be evaluated


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_unsupported_selector_operator_fails_closed(mode):
    sel = {"matchExpressions": [{"key": "tau.azure.com/workspace", "operator": "Gt", "values": ["1"]}]}
    route, view, findings = _route_with(mode, sel)
    assert route.state == "Unknown" and view.state == "Unknown"
    assert rules(findings) == ["DRAIN-UNKNOWN"] and "Gt" in findings[0].message


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_sources_are_not_needed_when_no_route_is_required(mode):
    # Decision: with no Required route nothing can block, so an unreadable source API changes nothing.
    objs = [o for o in drain_world(mode, ns_labels={}) if o["kind"] != "LocalQueue"]
    view, _ = drain(objs, {"Job": AccessState.FORBIDDEN, "Deployment": AccessState.ERROR})
    assert view.state == "Clear"


def test_not_draining_ignores_unreadable_inputs():
    view, findings = drain(drain_world(None), {"Workload": AccessState.FORBIDDEN, "LocalQueue": AccessState.ERROR})
    assert view.state == "NotDraining" and findings == []


# --- guidance -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_guidance_never_touches_queues(mode):
    objs = drain_world(
        mode,
        drain_workload("w", admitted_to="tau-ws-eval"),
        drain_workload("pod-web-0", owner=("Pod", "web-0", "uid-pod-0"), admitted_to="tau-ws-eval"),
        job("prep"),
        rayservice("llm"),
        deployment("web", template_labels=managed_template()),
        ws=drain_workspace(mode, queue_uid="uid-other"),
    )
    view, findings = drain(objs)
    texts = [b.action for b in view.blockers] + [f.hint for f in findings]
    for t in texts:
        low = t.lower()
        assert "clusterqueue" not in low and "localqueue" not in low and "stoppolicy" not in low, t
    verb = "deletion" if mode == "Deletion" else "retarget"
    assert all(f"before completing the {verb} of workspace eval" in b.action for b in view.blockers)


# --- through the whole view --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_workspace_view_carries_the_drain(mode):
    ctx = drain_ctx(drain_world(mode, rayservice("llm"), namespace("unrelated", ws_labels("x"))))
    view = derive(ctx.store, DRAIN_NOW, RuleConfig())
    (ws,) = view.workspaces
    assert ws.drain.state == "Blocked" and ws.drain.mode == mode
    out = view.to_contract()["workspaces"][0]["drain"]
    assert {"state", "mode", "oldNamespace", "newNamespace", "routes", "blockers", "unknown"} <= set(out)
    assert {"localQueue", "clusterQueue", "state", "uidContinuity"} <= set(out["routes"][0])
    assert {"kind", "namespace", "name", "reason", "route"} <= set(out["blockers"][0])
    assert any(f.rule == "DRAIN-BLOCKED" for f in view.findings)


# --- incremental: only what a drain reads of a Workload re-derives the draining workspace -------------


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_a_drain_follows_its_workloads_as_a_full_derivation_would_and_ignores_their_messages(mode):
    import copy

    from factories import cond, upsert_raw, validated_store

    from taudash.engine.incremental import IncrementalDeriver

    objs = drain_world(mode, drain_workload("w1"), drain_workload("w2", admitted_to="tau-ws-eval"))
    store = validated_store(copy.deepcopy(objs))
    deriver = IncrementalDeriver(store)
    first = deriver.view(DRAIN_NOW).workspaces
    assert first[0].drain.state == "Blocked" and {b.name for b in first[0].drain.blockers} == {"w1", "w2"}
    # A pending Workload's message is not read by a drain: the workspace view is the same object.
    w1 = copy.deepcopy(drain_workload("w1"))
    w1["status"]["conditions"] = [cond("QuotaReserved", "False", "Pending", "4 more needed")]
    upsert_raw(store, w1)
    assert deriver.view(DRAIN_NOW).workspaces[0] is first[0]
    # What it reads (finished, a new Workload, a deletion) updates it as a full derivation would.
    w2 = copy.deepcopy(drain_workload("w2", admitted_to="tau-ws-eval", finished=True))
    for change in (lambda: upsert_raw(store, w2), lambda: upsert_raw(store, drain_workload("w3")),
                   lambda: store.delete("Workload", "w1", OLD)):
        change()
        assert deriver.view(DRAIN_NOW).workspaces == derive(store, DRAIN_NOW).workspaces
    assert {b.name for b in deriver.view(DRAIN_NOW).workspaces[0].drain.blockers} == {"w3"}


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_a_re_derived_drain_keeps_the_blockers_of_its_unchanged_workloads(mode):
    import copy

    from factories import upsert_raw, validated_store

    from taudash.engine.incremental import IncrementalDeriver

    store = validated_store(copy.deepcopy(drain_world(mode, drain_workload("w1"), drain_workload("w2"))))
    deriver = IncrementalDeriver(store)
    before = {b.name: b for b in deriver.view(DRAIN_NOW).workspaces[0].drain.blockers}
    upsert_raw(store, drain_workload("w2", admitted_to="tau-ws-eval"), drain_workload("w3"))  # w1 is untouched
    after = deriver.view(DRAIN_NOW).workspaces
    blockers = {b.name: b for b in after[0].drain.blockers}
    assert blockers["w1"] is before["w1"] and blockers["w2"] is not before["w2"] and set(blockers) == {"w1", "w2", "w3"}
    assert after == derive(store, DRAIN_NOW).workspaces


@pytest.mark.parametrize("mode", DRAIN_MODES)
def test_the_workspaces_are_shared_until_one_moves_and_an_ended_drain_stops_following_its_namespace(mode):
    import copy

    from factories import drain_workspace, upsert_raw, validated_store

    from taudash.engine.incremental import IncrementalDeriver

    store = validated_store(copy.deepcopy(drain_world(mode, drain_workload("w1"))))
    deriver = IncrementalDeriver(store)
    first = deriver.view(DRAIN_NOW)
    upsert_raw(store, drain_workload("elsewhere", NEW))  # outside the drained namespace
    second = deriver.view(DRAIN_NOW)
    assert second.workspaces is first.workspaces and second.findings == first.findings
    upsert_raw(store, drain_workspace(None))  # the drain ends
    ended = deriver.view(DRAIN_NOW).workspaces
    assert ended[0].drain.state == "NotDraining" and ended == derive(store, DRAIN_NOW).workspaces
    upsert_raw(store, drain_workload("w2"))  # the old namespace no longer moves it
    assert deriver.view(DRAIN_NOW).workspaces is ended
