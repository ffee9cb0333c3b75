"""The pool fixtures in snapshots/ load cleanly and give the documented verdicts (docs/capacity.md)."""

import json

import pytest
from factories import NOW
from tools.paths import SNAPSHOTS

from taudash.cli import main
from taudash.engine.rules.base import RuleContext, Severity
from taudash.engine.rules.pool import derive_pool
from taudash.engine.sources.snapshot import load_snapshot

H100, A100, H200 = "taugrid-gpu-h100-80gb", "taugrid-gpu-a100-40gb", "taugrid-gpu-h200-141gb"


def load(name):
    result = load_snapshot(SNAPSHOTS / name)
    assert result.issues == [] and not result.unknown_kinds
    view, findings = derive_pool(RuleContext(store=result.store, now=NOW))
    return view, findings, view.to_contract()


def test_pool_zeroed_fixture():
    view, findings, out = load("pool-zeroed.yaml")
    assert (out["mode"], out["team"], out["cohort"]) == ("Automatic", "research", "tau-team-research")
    assert (out["valid"], out["established"], out["zeroed"]) == (False, True, True)
    assert [(c["code"], c["kind"], c["name"]) for c in out["conflicts"]] == [
        ("OverlappingFlavor", "ResourceFlavor", "default-cpu"),
        ("ExternalReservation", "ClusterQueue", "jobqueue"),
        ("LegacyDiscovery", "ClusterQueue", "jobqueue"),
        ("OverlappingBudget", "ClusterQueue", "jobqueue"),
    ]
    fl = {f["name"]: f for f in out["flavors"]}
    assert set(fl) == {A100, H100}
    assert (fl[H100]["inventory"]
            == {"cpu": "286260m", "memory": "5538Gi", "nvidia.com/gpu": "24", "pods": "750", "rdma/ib": "24"})
    for f in fl.values():
        assert set(f["budget"].values()) == {"0"} and len(f["budget"]) == 5  # zero on every covered resource
        assert f["observedBudget"] == f["budget"]  # the controller applied the zeroing
    assert fl[H100]["reserved"]["nvidia.com/gpu"] == "16" and fl[H100]["headroom"]["nvidia.com/gpu"] == "-16"
    rules = sorted(f.rule for f in findings)
    assert rules == ["POOL-CONFLICT"] * 4 + ["POOL-ZEROED"]
    assert all(f.severity is Severity.CRITICAL for f in findings)


def test_pool_shrunk_fixture():
    view, findings, out = load("pool-shrunk.yaml")
    assert (out["valid"], out["established"], out["zeroed"], out["conflicts"]) == (True, True, False, [])
    fl = {f["name"]: f for f in out["flavors"]}
    assert [f["name"] for f in out["flavors"]] == [A100, H100, H200]
    assert [(e["node"], e["reason"]) for e in fl[H100]["excluded"]] == [
        ("aks-h100-23456789-vmss000002", "NotReady"),
        ("aks-h100-23456789-vmss000003", "Unschedulable"),
    ]
    assert fl[A100]["excluded"] == [{"node": "flex-a100-lab-01", "reason": "SelectorMismatch"}]
    assert fl[H100]["nodes"] == 2 and fl[H100]["budget"]["nvidia.com/gpu"] == "16"
    assert fl[H100]["headroom"]["nvidia.com/gpu"] == "-8" and fl[H100]["headroom"]["cpu"] == "46840m"
    assert fl[A100]["budget"]["rdma/ib"] == "0"  # a100 nodes have no RDMA: explicit zero
    assert fl[H200]["disappeared"] is True and set(fl[H200]["budget"].values()) == {"0"}
    assert fl[H200]["headroom"]["nvidia.com/gpu"] == "-8"
    over = sorted((f.object.name, f.severity) for f in findings if f.rule == "POOL-OVERCOMMITTED")
    assert over == [(H100, Severity.WARNING), (H200, Severity.WARNING)]
    assert sorted({f.rule for f in findings}) == ["POOL-OVERCOMMITTED"]


@pytest.mark.parametrize("name", ["pool-zeroed.yaml", "pool-shrunk.yaml"])
def test_fixtures_through_the_cli_contract(name, capsys):
    assert main(["status", "--snapshot", str(SNAPSHOTS / name), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    pool = out["pool"]
    assert {"mode", "team", "cohort", "valid", "established", "zeroed", "conflicts", "flavors", "queues"} <= set(pool)
    assert [q["clusterQueue"] for q in pool["queues"]] == ["tau-ws-eval", "tau-ws-train"]
    pool_rules = {f["rule"] for f in out["findings"] if f["rule"].startswith("POOL-")}
    assert pool_rules == ({"POOL-CONFLICT", "POOL-ZEROED"} if name == "pool-zeroed.yaml" else {"POOL-OVERCOMMITTED"})


def test_check_fails_on_the_zeroed_pool(capsys):
    assert main(["check", "--snapshot", str(SNAPSHOTS / "pool-zeroed.yaml")]) == 1
