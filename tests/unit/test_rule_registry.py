"""The rule registry: declared reads are enforced, and a rule is recomputed exactly when what it reads moved."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from factories import cluster_queue, workload, workspace
from tools.paths import REPO

from taudash.engine.incremental import IncrementalDeriver, UndeclaredRead, derive
from taudash.engine.model import lookup
from taudash.engine.registry import RULES
from taudash.engine.rules.base import Rule, RuleContext, ViewField
from taudash.engine.rules.cluster import TeamSummary, derive_teams
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.store import AccessState, Store
from taudash.engine.view import ClusterView

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
DEMO = REPO / "snapshots" / "demo.yaml"


def _store(*objs: dict) -> Store:
    store = Store()
    for o in objs:
        k = lookup(o["apiVersion"], o["kind"])
        store.upsert(k.model.model_validate(o), raw=o)
    for k in store.kinds():
        store.set_access(k, AccessState.SYNCED)
    return store


def _with(rule: Rule) -> tuple[Rule, ...]:
    """The registry with `rule` in place of the registered rule of the same name."""
    return tuple(rule if r.name == rule.name else r for r in RULES)


def _teams_and_nodes(ctx: RuleContext):
    # reads Node as well, e.g. to show a team's GPU count; "forgets" to declare it
    _ = ctx.store.list("Node")
    return derive_teams(ctx), []


def test_a_rule_reading_a_kind_it_does_not_declare_fails():
    bad = Rule("teams", frozenset({"TauTeam"}), (ViewField("teams", list[TeamSummary], []),), derive=_teams_and_nodes)
    store = _store(workspace("train"))
    with pytest.raises(UndeclaredRead, match="'teams' read Node"):
        IncrementalDeriver(store, rules=_with(bad)).view(NOW)
    # declared, the same rule derives
    good = dataclasses.replace(bad, reads=frozenset({"TauTeam", "Node"}))
    assert IncrementalDeriver(store, rules=_with(good)).view(NOW).teams == []


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_every_registered_rule_reads_only_what_it_declares_on_the_demo(rule):
    """Each rule with one declared kind taken away fails on the demo snapshot for at least one of its
    kinds (the guard is live for every rule), and the registry as declared derives it whole."""
    from taudash.engine.rules.base import RuleConfig
    from taudash.engine.rules.gpu_usage import UtilisationConfig, UtilisationReading

    class Feed:  # a Prometheus reading of no GPU: utilisation on, so that its rule reads the store
        url = "http://prometheus:9090"
        rounds = 1

        def latest(self) -> UtilisationReading:
            return UtilisationReading(at=NOW, known=True, series=1)

    store = load_snapshot(DEMO).store
    config = RuleConfig(storage_claims=("blob-training",), utilisation=UtilisationConfig(feed=Feed()))
    IncrementalDeriver(store, config, rules=RULES).view(NOW)  # as declared: no UndeclaredRead
    refused = []
    for kind in sorted(rule.reads):
        fewer = dataclasses.replace(rule, reads=rule.reads - {kind},
                                    fingerprints={k: v for k, v in rule.fingerprints.items() if k != kind})
        try:
            IncrementalDeriver(store, config, rules=_with(fewer)).view(NOW)
        except UndeclaredRead:
            refused.append(kind)
    assert refused or not rule.reads
    assert set(refused) <= rule.reads


def test_a_rule_is_recomputed_when_a_kind_it_reads_changes_and_only_then():
    store = _store(workspace("train"), cluster_queue("tau-ws-train"), workload("w1", "train"))
    inc = IncrementalDeriver(store)
    inc.view(NOW)
    before = dict(inc.recomputed)
    # a Workload changes: the workloads and queue parts move; teams, pool, profiles, workspaces do not
    store.upsert(lookup("kueue.x-k8s.io/v1beta2", "Workload").model.model_validate(
        workload("w2", "train")))
    v = inc.view(NOW)
    delta = {k: inc.recomputed[k] - before.get(k, 0) for k in inc.recomputed}
    assert delta["workloads"] == 1
    assert delta["teams"] == 0 and delta["pool"] == 0 and delta["profiles"] == 0 and delta["cluster"] == 0
    assert {w.name for w in v.waiting} >= {"w2"}
    assert v.to_contract() == derive(store, NOW).to_contract()
    # a TauTeam changes: teams and pool are recomputed (both read it), the Workload part is not
    before = dict(inc.recomputed)
    store.upsert(lookup("tau.azure.com/v1alpha1", "TauTeam").model.model_validate({
        "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
        "metadata": {"name": "research", "namespace": "tau-system"}, "spec": {}}))
    v = inc.view(NOW)
    delta = {k: inc.recomputed[k] - before.get(k, 0) for k in inc.recomputed}
    assert delta["teams"] == 1 and delta["pool"] == 1 and delta["workloads"] == 0
    assert [t.name for t in v.teams] == ["research"]


def test_a_queue_status_count_write_does_not_recompute_the_pool():
    """The pool's ClusterQueue fingerprint: Kueue's count rewrites are not a change for it."""
    cq = cluster_queue("tau-ws-train")
    store = _store(workspace("train"), cq)
    inc = IncrementalDeriver(store)
    inc.view(NOW)
    pool = inc.recomputed["pool"]
    cq2 = {**cq, "status": {**cq.get("status", {}), "pendingWorkloads": 7}}
    store.upsert(lookup(cq2["apiVersion"], "ClusterQueue").model.model_validate(cq2))
    inc.view(NOW)
    assert inc.recomputed["pool"] == pool and inc.recomputed["queues"] >= 2
    cq3 = {**cq2, "spec": {**cq2["spec"], "cohortName": "elsewhere"}}  # what the pool does read
    store.upsert(lookup(cq3["apiVersion"], "ClusterQueue").model.model_validate(cq3))
    inc.view(NOW)
    assert inc.recomputed["pool"] == pool + 1


def test_cluster_view_fields_are_the_registry_fields_in_contract_order():
    fields = list(ClusterView.model_fields)
    assert fields[:3] == ["api_version", "kind", "source"] and fields[-1] == "findings"
    assert fields[3:-1] == [f.name for r in RULES for f in r.fields]


@pytest.mark.parametrize("broken,why", [
    (Rule("x", frozenset({"Nope"}), (ViewField("teams", list, []),), derive=lambda ctx: ([], [])), "unknown kinds"),
    (Rule("teams", frozenset(), (ViewField("teams", list, []),), derive=lambda ctx, y: ([], []), needs=("missing",)),
     "not registered"),
    (Rule("teams", frozenset(), (ViewField("pool", list, []),), derive=lambda ctx: ([], [])), "is taken"),
])
def test_a_broken_registry_is_refused(broken, why):
    rules = _with(broken) if broken.name == "teams" else (*RULES, broken)
    with pytest.raises(ValueError, match=why):
        IncrementalDeriver(Store(), rules=rules)


def test_a_cycle_of_needs_is_refused():
    a = Rule("teams", frozenset(), (ViewField("teams", list, []),), derive=lambda ctx, b: ([], []), needs=("cluster",))
    b = Rule("cluster", frozenset(), (ViewField("cluster", object, None),), derive=lambda ctx, a: (None, []),
             needs=("teams",))
    rules = tuple(a if r.name == "teams" else b if r.name == "cluster" else r for r in RULES)
    with pytest.raises(ValueError, match="cycle"):
        IncrementalDeriver(Store(), rules=rules)


def test_a_rule_declares_exactly_one_way_to_compute():
    with pytest.raises(ValueError, match="exactly one"):
        Rule("x", frozenset(), (ViewField("x", int, 0),))
    with pytest.raises(ValueError, match="fingerprints"):
        Rule("x", frozenset(), (ViewField("x", int, 0),), derive=lambda ctx: (0, []), fingerprints={"Node": id})


def test_a_workflow_context_polls_views_incrementally():
    """Headless workflows poll Context.view(): one full build, then updates by what changed."""
    from taudash.engine.actions import Actions
    from taudash.engine.workflows.base import Context

    store = _store(workspace("train"), cluster_queue("tau-ws-train"), workload("w1", "train"))
    ctx = Context(store=store, actions=Actions.read_only("test"), clock=NOW.timestamp)
    first = ctx.view()
    deriver = ctx._deriver
    assert deriver is not None and deriver.full_builds == 1
    store.upsert(lookup("kueue.x-k8s.io/v1beta2", "Workload").model.model_validate(workload("w2", "train")))
    second = ctx.view()
    assert ctx._deriver is deriver and deriver.full_builds == 1 and deriver.updates == 1
    assert {w.name for w in second.waiting} - {w.name for w in first.waiting} == {"w2"}
    assert second.to_contract() == derive(store, NOW).to_contract()


def test_a_workflow_context_with_a_session_takes_the_session_view():
    from taudash.engine.actions import Actions
    from taudash.engine.session import Session
    from taudash.engine.view import SourceInfo
    from taudash.engine.workflows.base import Context

    store = _store(workspace("train"))
    session = Session(store, SourceInfo(type="kube"))
    ctx = Context(store=store, actions=Actions.read_only("test"), clock=NOW.timestamp, session=session)
    assert ctx.view() is session.view(NOW)  # the session's cached view, shared with the dashboard
    assert ctx._deriver is None


def test_a_new_rule_area_needs_no_view_edit():
    """A rule area the registry does not know (a newcomer's, before its registry line) derives its field
    in a view of its own, after the registered fields and before the findings; the registry's view class
    keeps its fields."""
    toy = Rule("toy", frozenset({"Workload"}), (ViewField("toy", int, 0),),
               derive=lambda ctx: (len(ctx.store.list("Workload")), []))
    view = IncrementalDeriver(_store(workload("wl", "team-a")), rules=(*RULES, toy)).view(NOW)
    assert view.toy == 1  # type: ignore[attr-defined]
    assert list(type(view).model_fields)[-2:] == ["toy", "findings"]
    assert "toy" not in ClusterView.model_fields


def test_the_queues_findings_follow_their_queues_and_are_kept_while_none_moves():
    store = _store(workspace("train"), cluster_queue("tau-ws-train"), workload("w1", "train"))
    inc = IncrementalDeriver(store)
    inc.view(NOW)
    queues = inc._parts["queues"]  # type: ignore[attr-defined]
    kept = queues.findings()
    store.upsert(lookup("tau.azure.com/v1alpha1", "TauTeam").model.model_validate({  # the queues do not read it
        "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
        "metadata": {"name": "research", "namespace": "tau-system"}, "spec": {}}))
    inc.view(NOW)
    assert queues.findings() is kept
    stopped = cluster_queue("tau-ws-train", stop="Hold")
    store.upsert(lookup(stopped["apiVersion"], "ClusterQueue").model.model_validate(stopped))
    v = inc.view(NOW)
    assert [f.rule for f in queues.findings()] == ["CQ-STOPPED"]
    assert v.to_contract() == derive(store, NOW).to_contract()
