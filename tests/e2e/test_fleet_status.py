"""`taudash status|check` over several clusters (docs/fleet.md): the FleetStatus contract on a simulated
manager and two workers, isolated failures, exit codes."""

from __future__ import annotations

import asyncio
import json

import pytest

from taudash.cli import main, parse_args
from taudash.errors import UsageError
from taudash.sim.fleet import SimFleet

MANAGER, W1, W2 = "taudash-manager", "taudash-worker-1", "taudash-worker-2"
ALL = ["--context", MANAGER, "--context", W1, "--context", W2]


async def run(fleet: SimFleet, capsys, *argv: str) -> tuple[int, str, str]:
    """The CLI in a thread (it runs its own event loop) against the fleet's kubeconfig."""
    capsys.readouterr()
    code = await asyncio.to_thread(main, [*argv, "--kubeconfig", str(fleet.kubeconfig)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
async def fleet():
    async with SimFleet(2, interval=None, bookmark_interval=0.05) as f:
        f.dispatch()  # the demo's pending MultiKueue Workload goes to westus-2 (worker-1)
        yield f


async def test_fleet_status_contract_on_a_manager_and_two_workers(fleet, capsys):
    code, out, _ = await run(fleet, capsys, "status", *ALL, "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert (doc["apiVersion"], doc["kind"]) == ("taudash/v1", "FleetStatus")
    assert [c["context"] for c in doc["clusters"]] == [MANAGER, W1, W2]
    for c in doc["clusters"]:
        assert c["reachable"] is True and c["error"] is None
        assert c["status"]["kind"] == "ClusterStatus"
        assert c["status"]["source"]["context"] == c["context"]
        assert (c["status"]["source"]["path"] == fleet.url_of(fleet.worker(c["context"])) if c["context"] != MANAGER
                else True)
    roles = {c["context"]: c["multikueue"]["role"] for c in doc["clusters"]}
    assert roles == {MANAGER: "manager", W1: "worker", W2: "worker"}
    # The manager's MultiKueue view sees both workers active (the fleet controller keeps them so).
    workers = {w["name"]: w["active"] for w in doc["clusters"][0]["status"]["multikueue"]["workers"]}
    assert workers == {"westus-2": True, "eastus-2": True}


async def test_a_dispatched_workload_is_shown_with_its_worker_in_the_managers_status(fleet, capsys):
    code, out, _ = await run(fleet, capsys, "status", *ALL, "-o", "json")
    assert code == 0
    manager = json.loads(out)["clusters"][0]
    dispatched = {(d["namespace"], d["name"]): d["clusterName"] for d in manager["multikueue"]["dispatched"]}
    assert dispatched[("train", "job-remote-pretrain-b-50b9e")] == "westus-2"  # dispatched by the fleet
    assert dispatched[("train", "job-remote-pretrain-a-7c9e3")] == "eastus-2"
    # …and the workers hold exactly those mirrors.
    assert [w["metadata"]["name"] for w in fleet.workers[0].db.list("workloads")] == ["job-remote-pretrain-b-50b9e"]
    assert [w["metadata"]["name"] for w in fleet.workers[1].db.list("workloads")] == ["job-remote-pretrain-a-7c9e3"]


async def test_a_stopped_worker_is_unreachable_and_the_others_intact(fleet, capsys):
    await fleet.down(W2)
    code, out, err = await run(fleet, capsys, "status", *ALL, "-o", "json")
    assert code == 3  # the document has every cluster that answered; the code says one did not
    by = {c["context"]: c for c in json.loads(out)["clusters"]}
    assert by[W2]["reachable"] is False and by[W2]["status"] is None
    assert "connect" in by[W2]["error"]
    assert f"{W2}: unreachable" in err
    for ctx in (MANAGER, W1):
        assert by[ctx]["reachable"] is True and by[ctx]["status"]["kind"] == "ClusterStatus"
        assert by[ctx]["status"]["findings"] is not None


async def test_exit_3_when_every_cluster_is_unreachable(fleet, capsys):
    await fleet.down(W1)
    await fleet.down(W2)
    code, out, _ = await run(fleet, capsys, "status", "--context", W1, "--context", W2, "-o", "json")
    assert code == 3
    assert [c["reachable"] for c in json.loads(out)["clusters"]] == [False, False]
    code, out, _ = await run(fleet, capsys, "status", "--context", W1, "--context", W2)  # the table too
    assert code == 3 and f"== {W1} ==" in out and "unreachable" in out


async def test_check_exits_1_when_any_cluster_has_a_critical(fleet, capsys):
    code, out, _ = await run(fleet, capsys, "check", *ALL)
    assert code == 1  # the demo manager has criticals; the workers none
    assert f"{MANAGER}: critical" in out
    assert f"{W1}: 0 critical" in out and f"{W2}: 0 critical" in out
    code, out, _ = await run(fleet, capsys, "check", "--context", W1, "--context", W2)
    assert code == 0, out  # no critical anywhere
    await fleet.down(W2)
    code, out, _ = await run(fleet, capsys, "check", "--context", W1, "--context", W2)
    assert code == 3 and f"{W2}: unreachable" in out  # a cluster not read cannot be vouched for
    code, out, _ = await run(fleet, capsys, "check", *ALL)
    assert code == 1  # a critical wins over an unreachable cluster


async def test_all_contexts_reads_every_context_of_the_kubeconfig(fleet, capsys):
    code, out, _ = await run(fleet, capsys, "status", "--all-contexts", "-o", "yaml")
    assert code == 0
    import yaml

    doc = yaml.safe_load(out)
    assert doc["kind"] == "FleetStatus" and [c["context"] for c in doc["clusters"]] == [MANAGER, W1, W2]


async def test_a_single_context_keeps_the_cluster_status_output(fleet, capsys):
    code, out, _ = await run(fleet, capsys, "status", "--context", MANAGER, "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["kind"] == "ClusterStatus" and "clusters" not in doc
    code, out, _ = await run(fleet, capsys, "status", "--context", MANAGER, "--context", MANAGER, "-o", "json")
    assert json.loads(out)["kind"] == "ClusterStatus"  # the same context twice is one cluster


def test_repeated_context_is_for_status_and_check_only(capsys):
    assert parse_args(["status", "--context", "a", "--context", "b"]).contexts == ["a", "b"]
    assert parse_args(["check", "--context", "a", "--context", "b"]).contexts == ["a", "b"]
    with pytest.raises(UsageError, match="conflicting values for --context: a, b"):
        parse_args(["--context", "a", "check", "--context", "b"])  # two placements: a conflict, not a fleet
    with pytest.raises(UsageError, match="conflicting values for --context"):
        parse_args(["why", "ns/w", "--context", "a", "--context", "b"])
    assert parse_args(["--context", "a", "--context", "b"]).contexts == ["a", "b"]  # the fleet dashboard
    assert main(["why", "ns/w", "--context", "a", "--context", "b"]) == 2
    assert "conflicting values for --context" in capsys.readouterr().err
    assert main(["status", "--context", "a", "--context", "b", "--demo"]) == 2
    assert main(["status", "--all-contexts", "--context", "a"]) == 2


async def test_an_unknown_context_is_bad_input_for_the_whole_fleet(fleet, capsys):
    code, out, err = await run(fleet, capsys, "status", "--context", MANAGER, "--context", "nope", "-o", "json")
    assert code == 2 and out == ""
    assert "context 'nope' is not in" in err


RUNNING = ("train", "job-remote-pretrain-a-7c9e3")  # the demo's Workload running on eastus-2 (worker-2)
DISPATCHED = ("train", "job-remote-pretrain-b-50b9e")  # dispatched by the fleet to westus-2 (worker-1)


async def test_the_fleet_status_joins_the_manager_and_its_workers(fleet, capsys, cli_env, monkeypatch):
    monkeypatch.setenv("TAUDASH_CONFIG", str(fleet.config))  # the simulated fleet's MultiKueueCluster → context map
    code, out, _ = await run(fleet, capsys, "status", *ALL, "-o", "json")
    assert code == 0
    doc = json.loads(out)
    mk = doc["clusters"][0]["multikueue"]
    by = {(d["namespace"], d["name"]): d for d in mk["dispatched"]}
    assert (by[DISPATCHED]["clusterName"], by[DISPATCHED]["remoteState"]) == ("westus-2", "admitted")
    assert (by[RUNNING]["clusterName"], by[RUNNING]["remoteState"]) == ("eastus-2", "admitted")
    assert {w["name"]: (w["context"], w["reach"], w["active"], w["mirrors"]) for w in mk["workers"]} == {
        "westus-2": (W1, "live", True, 1), "eastus-2": (W2, "live", True, 1)}
    assert doc["findings"] == [] and mk["orphans"] == []
    worker = doc["clusters"][1]["multikueue"]
    assert worker["role"] == "worker" and worker["managers"] == [{"context": MANAGER, "multiKueueCluster": "westus-2"}]
    # the table says it in one line per manager
    code, out, _ = await run(fleet, capsys, "status", *ALL)
    assert f"{MANAGER}: MultiKueue: 2 dispatched (remote: 2 admitted), 0 orphaned" in out


async def test_without_a_mapping_the_workers_are_unknown_not_gone(fleet, capsys, cli_env):
    code, out, _ = await run(fleet, capsys, "status", *ALL, "-o", "json")
    doc = json.loads(out)
    mk = doc["clusters"][0]["multikueue"]
    assert {d["remoteState"] for d in mk["dispatched"]} == {"unknown"}
    assert {w["reach"] for w in mk["workers"]} == {"no context maps to it"}
    assert sorted(f["rule"] for f in doc["findings"]) == ["MK-WORKER-UNREACHABLE"] * 2


async def test_a_mirror_gone_fails_check_and_a_dead_worker_is_unknown_then_disconnected(fleet, capsys, cli_env,
                                                                                       monkeypatch):
    monkeypatch.setenv("TAUDASH_CONFIG", str(fleet.config))
    fleet.workers[1].db.delete("workloads", RUNNING[1], RUNNING[0])  # the copy on eastus-2 disappears
    code, out, _ = await run(fleet, capsys, "check", "--context", MANAGER, "--context", W1, "--context", W2)
    assert code == 1
    assert f"{MANAGER}: critical MK-REMOTE-GONE" in " ".join(out.split()) and RUNNING[1] in out
    code, out, _ = await run(fleet, capsys, "check", "--context", W1, "--context", W2)
    assert "MK-REMOTE-GONE" not in out  # no manager read: nothing joined
    # worker-2 stops answering: its copies are unknown (never "gone"), and it is Active on the manager
    await fleet.down(W2)
    code, out, _ = await run(fleet, capsys, "status", *ALL, "-o", "json")
    doc = json.loads(out)
    by = {(d["namespace"], d["name"]): d["remoteState"] for d in doc["clusters"][0]["multikueue"]["dispatched"]}
    assert by[RUNNING] == "unknown" and by[DISPATCHED] == "admitted"
    assert [(f["rule"], f["object"]["name"]) for f in doc["findings"]] == [("MK-WORKER-UNREACHABLE", "eastus-2")]
    # the manager's MultiKueue controller notices too: the disconnected worker is a finding of the manager itself
    fleet.dispatch()
    code, out, _ = await run(fleet, capsys, "status", *ALL, "-o", "json")
    doc = json.loads(out)
    manager_findings = [(f["rule"], f["object"]["name"]) for f in doc["clusters"][0]["status"]["findings"]]
    assert ("MK-WORKER-DISCONNECTED", "eastus-2") in manager_findings
    assert doc["findings"] == []  # not Active on the manager: not "unreachable from here" as well


def test_the_config_file_maps_multikueue_clusters_to_contexts(tmp_path, cli_env, monkeypatch):
    from taudash.fleet import multikueue_mapping

    cfg = tmp_path / "config.yaml"
    monkeypatch.setenv("TAUDASH_CONFIG", str(cfg))
    cfg.write_text("readOnly: true\nfleet:\n  multiKueueClusters:\n    westus-2: prod-w2\n")
    assert multikueue_mapping() == {"westus-2": "prod-w2"}
    cfg.write_text("readOnly: true\n")
    assert multikueue_mapping() == {}  # no fleet section: by name only
    cfg.write_text("fleet:\n  multiKueueClusters: [westus-2]\n")
    with pytest.raises(UsageError, match="fleet.multiKueueClusters must map"):
        multikueue_mapping()
    cfg.write_text("fleet:\n  multiKueueClusters:\n    westus-2: 3\n")
    with pytest.raises(UsageError, match="fleet.multiKueueClusters.westus-2 must be a kube context name, not 3"):
        multikueue_mapping()
    monkeypatch.delenv("TAUDASH_CONFIG")
    assert multikueue_mapping() == {}  # no config file at all
