"""snapshots/drain-blocked.yaml: a retarget held by one blocker of each kind (docs/drain.md)."""

import json
from datetime import UTC, datetime

import pytest
from tools.paths import SNAPSHOTS

from taudash.cli import main
from taudash.engine.incremental import derive
from taudash.engine.rules.base import RuleConfig
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.store import AccessState

SNAPSHOT = SNAPSHOTS / "drain-blocked.yaml"
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
BLOCKERS = [
    ("Deployment", "web", "ManagedDeployment"),
    ("Job", "prep-b", "AwaitingWorkload"),
    ("RayJob", "sweep-c", "AwaitingWorkload"),
    ("RayService", "llm", "LongRunningService"),
    ("Workload", "job-train-a-5f2c1", "WorkloadUnfinished"),
]


@pytest.fixture
def store():
    result = load_snapshot(SNAPSHOT)
    assert result.issues == [] and not result.unknown_kinds
    return result.store


def eval_ws(store, claims=()):
    view = derive(store, NOW, RuleConfig(storage_claims=claims))
    (ws,) = [w for w in view.workspaces if w.name == "eval"]
    return ws, view


def test_the_retarget_is_blocked_by_one_of_each_kind(store):
    ws, view = eval_ws(store)
    d = ws.drain
    assert (d.state, d.mode, d.old_namespace, d.new_namespace) == ("Blocked", "Retarget", "eval", "eval-v2")
    assert {(r.local_queue, r.cluster_queue, r.state) for r in d.routes} == {
        ("jobqueue", "tau-ws-eval", "Required"),
        ("shared", "platform-shared", "SelectorIndependent"),
        ("legacy", "batch-legacy", "Missing"),
    }
    assert next(r for r in d.routes if r.cluster_queue == "tau-ws-eval").uid_continuity == "Unchanged"
    assert [(b.kind, b.name, b.reason) for b in d.blockers] == BLOCKERS
    assert {b.route for b in d.blockers} == {"tau-ws-eval"}
    assert "retry pending" in next(b for b in d.blockers if b.kind == "RayJob").message
    assert "scaled to zero" in next(b for b in d.blockers if b.kind == "Deployment").message
    drain_findings = [f for f in view.findings if f.rule.startswith("DRAIN-")]
    assert [(f.rule, f.severity.value, f.object.name) for f in drain_findings] == [("DRAIN-BLOCKED", "warning", "eval")]
    assert "delete RayService eval/llm before completing the retarget of workspace eval" in drain_findings[0].hint


def test_identity_is_retained_and_access_is_as_expected(store):
    ws, view = eval_ws(store)
    assert (ws.identity.state, ws.identity.retained, ws.identity.obsolete) == ("Retained", ["eval/eval-runner"], [])
    assert ws.identity.access_state == "Ok" and ws.identity.expected_bindings == ["eval", "eval-v2"]
    assert not [f for f in view.findings if f.rule.startswith(("IDENTITY-", "ACCESS-"))]


def test_storage_with_the_claim_option(store):
    ws, _ = eval_ws(store, claims=("blob-training",))
    assert ws.storage.state == "Ready" and [c.namespace for c in ws.storage.claims] == ["eval", "eval-v2"]


def test_removing_the_blockers_clears_the_drain(store):
    store.delete("Deployment", "web", "eval")
    store.delete("RayService", "llm", "eval")
    store.delete("Job", "prep-b", "eval")
    store.delete("RayJob", "sweep-c", "eval")
    ws, _ = eval_ws(store)
    assert [b.name for b in ws.drain.blockers] == ["job-train-a-5f2c1"]
    # Deleting only the Workload of a running Job does not help: the Job now awaits a new one.
    store.delete("Workload", "job-train-a-5f2c1", "eval")
    ws, _ = eval_ws(store)
    assert [(b.kind, b.name) for b in ws.drain.blockers] == [("Job", "train-a")]
    store.delete("Job", "train-a", "eval")  # finished and removed by its TTL
    ws, view = eval_ws(store)
    assert ws.drain.state == "Clear" and ws.drain.blockers == []
    assert ws.identity.accounts[0].status == "CleanupPending"  # the unchanged account is now ordinary cleanup
    assert not [f for f in view.findings if f.rule.startswith("DRAIN-")]


def test_an_unreadable_source_api_turns_it_unknown(store):
    store.set_access("Deployment", AccessState.FORBIDDEN, "deployments.apps is forbidden")
    ws, view = eval_ws(store)
    assert ws.drain.state == "Unknown"
    assert [u.resource for u in ws.drain.unknown] == ["deployments.apps"]
    assert {f.rule for f in view.findings if f.rule.startswith("DRAIN-")} == {"DRAIN-BLOCKED", "DRAIN-UNKNOWN"}


def test_cli_json_and_table(capsys):
    assert main(["status", "--snapshot", str(SNAPSHOT), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (ws,) = out["workspaces"]
    assert ws["drain"]["state"] == "Blocked"
    assert [(b["kind"], b["name"]) for b in ws["drain"]["blockers"]] == [(k, n) for k, n, _ in BLOCKERS]
    assert main(["status", "--snapshot", str(SNAPSHOT), "-o", "table"]) == 0
    table = capsys.readouterr().out
    assert "Blocked (Retarget)" in table and "DRAIN-BLOCKED" in table
