"""The preemption log from hand-built Workloads carrying Kueue's Evicted/Preempted conditions, and the
`taudash history` CLI contract (docs/history.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from factories import cluster_queue, cond, local_queue, workload, workspace

from taudash.cli import main
from taudash.engine.history import Recorder, cluster_key
from taudash.engine.history import db as hdb
from taudash.engine.history import query as q
from taudash.engine.incremental import derive
from taudash.engine.sources.snapshot import load_documents

NOW = datetime.now(UTC).replace(microsecond=0)


def stamp(ago: timedelta) -> str:
    return (NOW - ago).isoformat().replace("+00:00", "Z")


def kueue_message(uid: str, why: str) -> str:
    # pkg/scheduler/preemption: "Preempted to accommodate a workload (UID: %s, JobUID: %s) due to %s"
    return f"Preempted to accommodate a workload (UID: {uid}, JobUID: job-{uid}) due to {why}"


def evicted(name: str, ns: str, ago: timedelta, reason: str = "Preempted", preempted: str | None = "InClusterQueue",
            message: str = "", queue: str = "jobqueue") -> dict:
    wl = workload(name, ns, queue=queue, state="pending", reason="WaitingForQuota")
    at = stamp(ago)
    conds = [dict(cond("Evicted", "True", reason, message), lastTransitionTime=at),
             cond("QuotaReserved", "False", "Pending", "requeued"),
             cond("Requeued", "True", reason, "The workload was requeued after eviction")]
    if preempted:
        conds.append(dict(cond("Preempted", "True", preempted, message), lastTransitionTime=at))
    wl["status"]["conditions"] = conds
    return wl


def admitted(name: str, ns: str, cq: str, ago: timedelta) -> dict:
    wl = workload(name, ns, admitted_to=cq, state="admitted")
    wl["metadata"]["creationTimestamp"] = stamp(ago + timedelta(minutes=12))
    for c in wl["status"]["conditions"]:
        c["lastTransitionTime"] = stamp(ago + timedelta(minutes=2) if c["type"] == "QuotaReserved" else ago)
    wl["status"]["admission"]["podSetAssignments"][0]["flavors"] = {"nvidia.com/gpu": "h100", "cpu": "default"}
    return wl


def cluster(extra: list[dict]) -> list[dict]:
    return [
        workspace("train", team="research", localQueueName="jobqueue"),
        workspace("vision", team="perception", localQueueName="jobqueue"),
        cluster_queue("tau-ws-train", cohort="tau-team-research"),
        cluster_queue("tau-ws-vision", cohort="tau-team-research"),
        local_queue("jobqueue", "train", "tau-ws-train"),
        local_queue("jobqueue", "vision", "tau-ws-vision"),
        *extra,
    ]


def record(tmp_path, objects: list[dict], path=None) -> Recorder:
    store = load_documents([(None, o) for o in cluster(objects)]).store
    rec = Recorder(path or tmp_path / "h.sqlite3")
    rec.record(derive(store, NOW), store, NOW)
    return rec


def scenario() -> list[dict]:
    boss = admitted("llama-34b", "train", "tau-ws-train", timedelta(hours=1))
    reclaimer = admitted("detector", "vision", "tau-ws-vision", timedelta(days=2))
    return [
        boss,
        reclaimer,
        # same queue, higher priority: InClusterQueue, preemptor named by UID in the Evicted message
        evicted("ablation-32k", "train", timedelta(hours=1),
                message=kueue_message("uid-wl-llama-34b", "prioritization in the ClusterQueue")),
        # another queue of the cohort reclaiming its nominal quota
        evicted("sweep", "train", timedelta(days=2), preempted="InCohortReclamation",
                message=kueue_message("uid-wl-detector", "reclamation within the cohort")),
        # the preemptor is gone by now: its UID is all that is known
        evicted("old", "train", timedelta(days=10),
                message=kueue_message("uid-gone", "prioritization in the ClusterQueue")),
        # not preemptions: a PodsReady timeout and a stopped queue; an eviction that is over (False)
        evicted("slow", "train", timedelta(hours=3), reason="PodsReadyTimeout", preempted=None,
                message="Exceeded the PodsReady timeout train/slow"),
        evicted("held", "vision", timedelta(hours=5), reason="ClusterQueueStopped", preempted=None,
                message="The ClusterQueue is stopped"),
        {**evicted("done", "train", timedelta(hours=2), message=kueue_message("uid-wl-llama-34b", "x")),
         "status": {"conditions": [cond("Evicted", "False", "QuotaReserved", "Previously: preempted")]}},
    ]


def test_the_preemption_log_names_the_victim_the_preemptor_where_why_and_when(tmp_path):
    rec = record(tmp_path, scenario())
    log = q.preemption_log(rec.conn, (NOW - timedelta(days=30)).timestamp())
    assert [r.name for r in log] == ["ablation-32k", "sweep", "old"]  # newest first, preemptions only
    first = log[0]
    assert (first.namespace, first.cluster_queue, first.cohort, first.team) == (
        "train", "tau-ws-train", "tau-team-research", "research")
    assert (first.reason, first.preemption_reason) == ("Preempted", "InClusterQueue")
    assert (first.preemptor_uid, first.preemptor_namespace, first.preemptor_name, first.preemptor_cluster_queue) == (
        "uid-wl-llama-34b", "train", "llama-34b", "tau-ws-train")
    assert first.at == (NOW - timedelta(hours=1)).timestamp()
    cross = log[1]
    assert cross.preemption_reason == "InCohortReclamation"
    assert (cross.preemptor_name, cross.preemptor_cluster_queue) == ("detector", "tau-ws-vision")
    assert (log[2].preemptor_uid, log[2].preemptor_name) == ("uid-gone", None)

    recent = q.preemption_log(rec.conn, (NOW - timedelta(hours=24)).timestamp())
    assert [r.name for r in recent] == ["ablation-32k"]
    everything = q.preemption_log(rec.conn, 0, all_evictions=True)
    assert {r.name: r.reason for r in everything} == {
        "ablation-32k": "Preempted", "sweep": "Preempted", "old": "Preempted",
        "slow": "PodsReadyTimeout", "held": "ClusterQueueStopped"}
    assert [r.name for r in q.preemption_log(rec.conn, 0, cluster_queue="tau-ws-vision")] == ["sweep"]  # as preemptor

    # the same conditions seen again (every tick) are recorded once
    rec.close()
    rec = record(tmp_path, scenario())
    assert len(q.preemption_log(rec.conn, 0, all_evictions=True)) == 5
    # waits of the two admitted Workloads: 12 minutes each, on the GPU's flavor
    rows = rec.conn.execute("SELECT name, admitted - created, admitted - reserved, flavor, team FROM waits "
                            "ORDER BY name").fetchall()
    assert rows == [("detector", 720.0, -120.0 + 240.0, "h100", "perception"),
                    ("llama-34b", 720.0, 120.0, "h100", "research")]
    rec.close()


def test_a_later_eviction_of_the_same_workload_is_a_new_entry(tmp_path):
    first = evicted("ablation-32k", "train", timedelta(hours=3), message=kueue_message("uid-x", "y"))
    rec = record(tmp_path, [first])
    rec.close()
    again = evicted("ablation-32k", "train", timedelta(hours=1), message=kueue_message("uid-y", "y"))
    rec = record(tmp_path, [again])
    assert [r.preemptor_uid for r in q.preemption_log(rec.conn, 0)] == ["uid-y", "uid-x"]
    rec.close()


def test_preemptor_uid_parsing_follows_kueues_message():
    assert hdb.preemptor_uid(kueue_message("abc-123", "z")) == "abc-123"
    assert hdb.preemptor_uid("Preempted to accommodate a workload (UID: u1) due to x") == "u1"
    assert hdb.preemptor_uid("Preempted to accommodate a workload (UID: UNKNOWN, JobUID: UNKNOWN) due to x") is None
    assert hdb.preemptor_uid("Preempted to accommodate a higher priority Workload") is None  # old Kueue
    assert hdb.preemptor_uid("Exceeded the PodsReady timeout (UID: nope)") is None


# --- the CLI ---------------------------------------------------------------------------------------------


def run_json(capsys, *argv) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_history_preemptions_json_contract(tmp_path, capsys):
    rec = record(tmp_path, scenario())
    rec.close()
    doc = run_json(capsys, "history", "preemptions", "--db", str(tmp_path / "h.sqlite3"), "--since", "24h",
                   "-o", "json")
    assert doc["apiVersion"] == "taudash/v1" and doc["kind"] == "PreemptionLog" and doc["allEvictions"] is False
    assert doc["cluster"] == "h"
    assert set(doc) == {"apiVersion", "kind", "cluster", "since", "until", "allEvictions", "items"}
    (item,) = doc["items"]
    assert item == {
        "time": stamp(timedelta(hours=1)),
        "workload": {"uid": "uid-wl-ablation-32k", "namespace": "train", "name": "ablation-32k"},
        "clusterQueue": "tau-ws-train",
        "cohort": "tau-team-research",
        "team": "research",
        "reason": "Preempted",
        "preemptionReason": "InClusterQueue",
        "preemptor": {"uid": "uid-wl-llama-34b", "namespace": "train", "name": "llama-34b",
                      "clusterQueue": "tau-ws-train"},
        "message": kueue_message("uid-wl-llama-34b", "prioritization in the ClusterQueue"),
    }
    week = run_json(capsys, "history", "preemptions", "--db", str(tmp_path / "h.sqlite3"), "--since", "7d", "-o",
                    "json")
    assert [i["workload"]["name"] for i in week["items"]] == ["ablation-32k", "sweep"]
    every = run_json(capsys, "history", "preemptions", "--db", str(tmp_path / "h.sqlite3"), "--since", "30m",
                     "--all-evictions", "-o", "json")
    assert every["items"] == []
    every = run_json(capsys, "history", "preemptions", "--db", str(tmp_path / "h.sqlite3"), "--since", "6h",
                     "--all-evictions", "-o", "json")
    assert [(i["workload"]["name"], i["preemptor"] is None) for i in every["items"]] == [
        ("ablation-32k", False), ("slow", True), ("held", True)]


def test_history_table_output_is_inert_and_readable(tmp_path, capsys):
    hostile = evicted("evil\x1b[2J", "train", timedelta(minutes=5), message=kueue_message("uid-wl-llama-34b", "z"))
    rec = record(tmp_path, [*scenario(), hostile])
    rec.close()
    assert main(["history", "preemptions", "--db", str(tmp_path / "h.sqlite3"), "--since", "7d"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["TIME", "WORKLOAD", "CLUSTERQUEUE", "COHORT", "WHY", "PREEMPTOR"]
    assert "\x1b" not in out and "evil" in out
    assert any("train/ablation-32k" in ln and "Preempted/InClusterQueue" in ln and "train/llama-34b" in ln
               for ln in lines)
    assert main(["history", "preemptions", "--db", str(tmp_path / "h.sqlite3"), "--since", "1m"]) == 0
    assert "no preemptions recorded since" in capsys.readouterr().out


def test_history_waits_and_summary(tmp_path, capsys):
    rec = record(tmp_path, scenario())
    rec.close()
    db = str(tmp_path / "h.sqlite3")
    doc = run_json(capsys, "history", "waits", "--db", db, "--since", "7d", "--by", "team", "-o", "json")
    assert doc["kind"] == "AdmissionWaits" and doc["by"] == "team"
    assert doc["items"] == [{"group": "perception", "count": 1, "p50Seconds": 720.0, "p95Seconds": 720.0},
                            {"group": "research", "count": 1, "p50Seconds": 720.0, "p95Seconds": 720.0}]
    s = run_json(capsys, "history", "summary", "--db", db, "-o", "json")
    assert s["kind"] == "HistorySummary" and s["schemaVersion"] == hdb.LATEST
    assert s["evictions"] == 5 and s["preemptions"] == 3 and s["waits"] == 2 and s["series"] > 0
    assert s["fileBytes"] > 0 and s["from"] and s["to"]
    assert main(["history", "summary", "--db", db]) == 0
    assert "5 evictions (3 preemptions)" in capsys.readouterr().out


def test_history_finds_the_file_by_demo_key_and_context(tmp_path, capsys, monkeypatch):
    from taudash.sim.kubeconfig import write_kubeconfig

    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))
    record(tmp_path, scenario(), path=hdb.db_path(hdb.DEMO_CLUSTER_KEY)).close()
    assert len(run_json(capsys, "history", "preemptions", "--demo", "--since", "7d", "-o", "json")["items"]) == 2

    kc = write_kubeconfig(tmp_path / "kc", "https://10.0.0.1:6443", "t", "prod")
    key = cluster_key("prod", "https://10.0.0.1:6443")
    record(tmp_path, scenario(), path=hdb.db_path(key)).close()
    doc = run_json(capsys, "history", "preemptions", "--kubeconfig", str(kc), "--context", "prod", "--since", "24h",
                   "-o", "json")
    assert doc["cluster"] == key and len(doc["items"]) == 1
    assert run_json(capsys, "history", "summary", "--cluster-key", key, "-o", "json")["cluster"] == key


@pytest.mark.parametrize(("argv", "message"), [
    (["--since", "yesterday"], "expected an age like 30m"),
    (["--since", "5y"], "expected an age like 30m"),
    (["--demo", "--cluster-key", "x"], "choose one of"),
    (["--cluster-key", "../etc"], "invalid cluster key"),
    (["--cluster-key", "never-recorded"], "no history recorded"),
])
def test_history_bad_input_is_one_line_exit_2(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))
    assert main(["history", "preemptions", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_a_batch_that_failed_to_commit_is_collected_again(tmp_path):
    import sqlite3

    store = load_documents([(None, o) for o in cluster([])]).store
    rec = Recorder(tmp_path / "h.sqlite3")
    rec.record(derive(store, NOW), store, NOW)
    load_documents([(None, evicted("ablation-32k", "train", timedelta(minutes=1),
                                   message=kueue_message("uid-x", "y")))], store=store)
    blocker = sqlite3.connect(tmp_path / "h.sqlite3")
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the file
    rec.conn.execute("PRAGMA busy_timeout = 0")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        rec.record(derive(store, NOW), store, NOW + timedelta(seconds=10))
    blocker.rollback()
    blocker.close()
    assert q.preemption_log(rec.conn, 0) == []
    rec.record(derive(store, NOW), store, NOW + timedelta(seconds=20))  # nothing changed in the store since
    assert [r.name for r in q.preemption_log(rec.conn, 0)] == ["ablation-32k"]
    rec.close()
