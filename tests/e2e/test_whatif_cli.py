"""`taudash whatif FILE` from the command line: on --demo, on a --snapshot, on a live (simulated) cluster where
the prediction is then held against a real `kubectl apply` of the same Job; read-only; bad manifests."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import shutil

import factories
import pytest
import yaml
from factories import cluster_queue, local_queue, namespace, resource_flavor

from taudash.cli import main
from taudash.sim.controllers.scenario import Knobs, Scenario
from taudash.sim.server import SimServer
from taudash.sim.world import World

QUIET = Scenario(knobs=Knobs(arrivals_per_hour=0, node_flaps_per_hour=0, cordons_per_hour=0))
KUBECTL = shutil.which("kubectl") or "kubectl"
GPU = "nvidia.com/gpu"
H100 = "taugrid-gpu-h100-80gb"


def train_job(name: str = "try-me", gpus: int = 2) -> dict:
    """A Job the demo's research/train queue can run: the h100 class, the pool's taint tolerated."""
    job = factories.job(name, "train", queue="jobqueue", gpus=gpus, selector={"tau.azure.com/gpu-class": "h100-80gb"})
    pod = job["spec"]["template"]["spec"]
    pod["tolerations"] = [{"effect": "NoSchedule", "key": "sku", "operator": "Equal", "value": "gpu"}]
    pod["containers"][0]["image"] = "busybox"
    return job


def write(tmp_path, obj, name="job.yaml"):
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else yaml.safe_dump(obj))
    return str(path)


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["whatif", *argv, "-o", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


# --- --demo and --snapshot ----------------------------------------------------------------------------------


def test_demo_prediction_json(cli_env, capsys):
    code, doc = run_json(capsys, write(cli_env, train_job()), "--demo")
    assert code == 0
    assert (doc["apiVersion"], doc["kind"], doc["writesToCluster"]) == ("taudash/v1", "WhatIfPrediction", 0)
    assert doc["spec"]["object"] == {"kind": "Job", "namespace": "train", "name": "try-me"}
    assert doc["metadata"]["source"] == "demo" and doc["metadata"]["forkedAt"] == "2026-11-30T09:00:00+00:00"
    p = doc["prediction"]
    assert p["admissible"] and p["startsNow"] and (p["localQueue"], p["clusterQueue"]) == ("jobqueue", "tau-ws-train")
    assert p["flavors"][0]["flavors"][GPU] == H100


def test_demo_table_for_a_job_that_waits(cli_env, capsys):
    assert main(["whatif", write(cli_env, train_job(gpus=64)), "--demo"]) == 0
    out = capsys.readouterr().out
    assert "starts now:  no" in out
    assert "position:    6 in LocalQueue jobqueue, 6 of 6 in ClusterQueue tau-ws-train" in out
    assert "writes to the cluster: 0" in out


def test_snapshot_inadmissible_exits_1_with_the_reason(cli_env, capsys):
    objs = [namespace("team-a"), resource_flavor("gpu"),
            cluster_queue("small", flavors={"gpu": {GPU: "4"}}, every_resource=True),
            local_queue("q", "team-a", "small")]
    snap = write(cli_env, factories.snapshot_document(objs, context="hand"), "snap.yaml")
    code, doc = run_json(capsys, write(cli_env, factories.job("big", "team-a", queue="q", gpus=8)), "--snapshot", snap)
    assert code == 1
    assert doc["metadata"]["source"] == "snapshot" and doc["metadata"]["context"] == "hand"
    assert doc["prediction"]["reason"]["code"] == "ExceedsMaxQuota"
    code, doc = run_json(capsys, write(cli_env, factories.job("ok", "team-a", queue="q", gpus=4)), "--snapshot", snap)
    assert code == 0 and doc["prediction"]["startsNow"]


@pytest.mark.parametrize("read_only", ["flag", "env"])
def test_read_only_mode_allows_whatif(cli_env, capsys, monkeypatch, read_only):
    argv = [write(cli_env, train_job()), "--demo"]
    if read_only == "flag":
        argv.append("--read-only")
    else:
        monkeypatch.setenv("TAUDASH_READ_ONLY", "1")
    code, doc = run_json(capsys, *argv)
    assert code == 0 and doc["prediction"]["startsNow"]


@pytest.mark.parametrize(("text", "words"), [
    ("a: [\n", "not valid YAML (line 2)"),
    ("", "empty"),
    ("kind: Job\napiVersion: batch/v1\nmetadata: {name: a}\nspec: {}\n---\nkind: Job\n", "2 documents"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n", "kind 'Pod'"),
    ("apiVersion: batch/v1\nkind: Job\nmetadata: {namespace: x}\nspec: {}\n", "metadata.name is required"),
    ("apiVersion: apps/v1\nkind: Job\nmetadata: {name: a}\nspec: {}\n", "apiVersion 'apps/v1' is not a Job's"),
    ("- 1\n- 2\n", "expected a Kubernetes object"),
], ids=["yaml", "empty", "two-docs", "pod", "no-name", "api-version", "list"])
def test_bad_manifests_one_line_exit_2(cli_env, capsys, text, words):
    assert main(["whatif", write(cli_env, text), "--demo"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and lines[0].startswith("taudash: ")


def test_missing_file_and_bad_horizon_exit_2(cli_env, capsys):
    assert main(["whatif", str(cli_env / "absent.yaml"), "--demo"]) == 2
    assert main(["whatif", write(cli_env, train_job()), "--demo", "--horizon", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "cannot read" in err[0] and "--horizon" in err[1]


# --- a live cluster, then the same Job really applied ----------------------------------------------------------


async def kubectl(sim: SimServer, *args: str) -> str:
    home = sim.kubeconfig.parent
    env = {**os.environ, "HOME": str(home), "KUBECONFIG": str(sim.kubeconfig)}
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "--kubeconfig", str(sim.kubeconfig), "--cache-dir", str(home / "cache"), "--request-timeout=20s",
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


def admission_of(sim: SimServer, job: str) -> dict | None:
    """The simulated Kueue's admission of the Workload it made for Job train/`job` (None while pending)."""
    for wl in sim.db.list("Workload", "train"):
        if (wl["metadata"].get("ownerReferences") or [{}])[0].get("name") == job:
            conds = {c["type"]: c["status"] for c in (wl.get("status") or {}).get("conditions") or []}
            return (wl.get("status") or {}).get("admission") if conds.get("QuotaReserved") == "True" else None
    raise AssertionError(f"no Workload for Job train/{job}")


@pytest.mark.parametrize(("gpus", "starts"), [(2, True), (64, False)], ids=["starts-now", "waits"])
async def test_live_prediction_matches_kubectl_apply_and_writes_nothing(cli_env, capsys, tmp_path, gpus, starts):
    async with SimServer(seed=3, kubeconfig=tmp_path / "kube" / "config") as sim:
        world = World.for_server(sim, QUIET)
        world.step(0)
        manifest = write(cli_env, train_job(gpus=gpus))
        argv = ["whatif", manifest, "--context", sim.context, "--kubeconfig", str(sim.kubeconfig), "-o", "json"]
        code = await asyncio.to_thread(main, argv)
        doc = json.loads(capsys.readouterr().out)
        assert code == 0 and doc["metadata"]["source"] == "live" and doc["metadata"]["cluster"]["uid"]
        assert sim.api.writes == {}, "whatif wrote to the cluster"
        p = doc["prediction"]
        assert p["startsNow"] is starts

        await kubectl(sim, "apply", "--validate=false", "-f", manifest)  # the simulator serves no OpenAPI
        assert sim.api.writes  # the apply did write (the counter counts)
        for _ in range(4):  # Kueue makes the Workload, then schedules it: no time passes, as in the fork
            world.step(0)
        admission = admission_of(sim, "try-me")
        assert (admission is not None) is starts
        if starts:
            assert admission["clusterQueue"] == p["clusterQueue"]
            assert [a["flavors"] for a in admission["podSetAssignments"]] == [f["flavors"] for f in p["flavors"]]
        else:  # waiting where the fork said: Kueue's own visibility API gives the same 1-based position
            raw = await kubectl(sim, "get", "--raw", "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/"
                                f"{p['clusterQueue']}/pendingworkloads")
            items = json.loads(raw)["items"]
            mine = next(i for i in items if i["metadata"]["ownerReferences"][0]["name"] == "try-me")
            assert mine["positionInClusterQueue"] + 1 == p["position"]["clusterQueue"] == len(items)
            assert mine["positionInLocalQueue"] + 1 == p["position"]["localQueue"]


# --- kept, then held against what happened -------------------------------------------------------------------


def test_each_prediction_is_kept_and_history_whatif_holds_it_against_what_happened(cli_env, capsys):
    import time

    from taudash.engine.history import db as hdb

    code, doc = run_json(capsys, write(cli_env, train_job()), "--demo")
    assert code == 0
    kept = cli_env / "state" / "whatif" / hdb.DEMO_CLUSTER_KEY / f"{doc['metadata']['id']}.json"
    assert json.loads(kept.read_text())["prediction"] == doc["prediction"]

    main(["history", "whatif", "--demo", "-o", "json"])  # not submitted yet: nothing recorded, no guess
    out = json.loads(capsys.readouterr().out)
    assert [(i["id"], i["actual"], i["match"]) for i in out["items"]] == [(doc["metadata"]["id"], None, None)]

    # the dashboard's recorder saw the real Job's Workload admitted, on another flavor, after 10 minutes
    conn = hdb.connect(hdb.db_path(hdb.DEMO_CLUSTER_KEY))
    t = time.time() + 5
    conn.execute("INSERT INTO waits (uid, namespace, name, queue, cluster_queue, team, flavor, created, reserved, "
                 "admitted) VALUES ('u1', 'train', 'job-try-me-1a2b3', 'jobqueue', 'tau-ws-train', 'research', "
                 "'taugrid-gpu-a100-80gb', ?, ?, ?)", (t, t + 600, t + 600))
    conn.commit()
    conn.close()
    main(["history", "whatif", "--demo", "-o", "json"])
    item = json.loads(capsys.readouterr().out)["items"][0]
    assert item["actual"]["workload"] == "job-try-me-1a2b3" and item["actual"]["waitSeconds"] == 600.0
    assert item["match"] == {"flavor": False, "startsNow": False, "waitInInterval": None, "preempts": True}
    assert main(["history", "whatif", "--demo"]) == 0
    table = capsys.readouterr().out
    assert f"{H100} → taugrid-gpu-a100-80gb ✗" in table and "yes → no ✗" in table and "now → 10.0m" in table


# --- what if the quota changed ---------------------------------------------------------------------------------


def test_quota_whatif_on_a_snapshot(cli_env, capsys):
    def queue(nominal: str) -> dict:
        return cluster_queue("small", flavors={"gpu": {GPU: nominal}}, every_resource=True, status=False)

    objs = [namespace("team-a"), resource_flavor("gpu"), queue("4"), local_queue("q", "team-a", "small"),
            factories.workload("waiting", "team-a", queue="q")]
    objs[-1]["spec"]["podSets"] = [{"name": "main", "count": 1, "template": {"spec": {"containers": [
        {"name": "c", "resources": {"requests": {GPU: "8"}}}]}}}]
    snap = write(cli_env, factories.snapshot_document(objs, context="hand"), "snap.yaml")
    change = write(cli_env, queue("8"), "quota.yaml")
    assert main(["whatif", "--quota", change, "--snapshot", snap, "-o", "json", "--horizon", "600"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "QuotaWhatIf" and doc["writesToCluster"] == 0
    row = doc["result"]["queues"][0]
    assert (row["clusterQueue"], row["admittedBefore"], row["admittedAfter"]) == ("small", 0, 1)
    assert row["gained"] == ["team-a/waiting"]
    assert main(["whatif", "--quota", change, "--snapshot", snap, "--horizon", "600"]) == 0
    assert "0 → 1" in capsys.readouterr().out
    # both a manifest and --quota, or neither: refused
    assert main(["whatif", "--snapshot", snap]) == 2
    assert main(["whatif", write(cli_env, train_job()), "--quota", change, "--snapshot", snap]) == 2
    assert main(["whatif", "--quota", write(cli_env, train_job(), "job2.yaml"), "--snapshot", snap]) == 2
    assert "a quota change is a ClusterQueue" in capsys.readouterr().err


def test_quota_whatif_names_an_edit_taugrid_puts_back(cli_env, capsys):


    cq = copy.deepcopy(next(o for o in factories.demo_raw_objects()
                            if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "tau-ws-train"))
    for fl in cq["spec"]["resourceGroups"][0]["flavors"]:
        for r in fl["resources"]:
            if r["name"] == GPU and fl["name"] == H100:
                r["nominalQuota"] = "16"
    change = write(cli_env, {"apiVersion": cq["apiVersion"], "kind": "ClusterQueue",
                             "metadata": {"name": "tau-ws-train"}, "spec": cq["spec"]}, "quota.yaml")
    assert main(["whatif", "--quota", change, "--demo", "--horizon", "600", "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    # the demo's automatic pool keeps workspace queues at zero nominal: the edit is undone, nothing changes
    assert result["reverted"] == ["ClusterQueue tau-ws-train"]
    assert all(not r["gained"] and not r["lost"] for r in result["queues"])


# --- what if the catalog changed -------------------------------------------------------------------------------


def demo_catalog() -> tuple[dict, list[dict]]:
    tc = next(o for o in factories.demo_raw_objects() if o["kind"] == "TauCluster")
    return tc, copy.deepcopy(tc["spec"]["workloadProfiles"])


def stamped_jobs(profile: str) -> int:
    """The demo's unfinished Jobs stamped with a profile, counted from the snapshot itself."""
    def done(o: dict) -> bool:
        return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                   for c in (o.get("status") or {}).get("conditions") or ())
    return sum(1 for o in factories.demo_raw_objects() if o["kind"] == "Job" and not done(o)
               and (o["metadata"].get("annotations") or {}).get("tau.azure.com/workload-profile") == profile)


def test_catalog_whatif_of_the_same_catalog_changes_nothing(cli_env, capsys):
    tc, profiles = demo_catalog()
    path = write(cli_env, {"apiVersion": tc["apiVersion"], "kind": "TauCluster", "metadata": {"name": "cluster"},
                           "spec": {"workloadProfiles": profiles}}, "catalog.yaml")
    code, doc = run_json(capsys, "--catalog", path, "--demo", "--horizon", "600")
    assert code == 0 and (doc["kind"], doc["writesToCluster"]) == ("CatalogWhatIf", 0)
    r = doc["result"]
    assert [p["change"] for p in r["profiles"]] == ["same"] * len(profiles)
    assert all(p["before"]["ready"] and p["after"]["ready"] for p in r["profiles"])
    assert r["catalog"]["before"]["setReady"] is True and r["catalog"]["after"]["setReady"] is True
    assert r["catalog"]["before"]["profileSetHash"] == r["catalog"]["after"]["profileSetHash"] != ""
    assert all(not q["gained"] and not q["lost"] for q in r["queues"])


def test_catalog_whatif_names_the_profile_that_would_not_be_ready_and_the_jobs_of_a_removed_one(cli_env, capsys):
    _tc, profiles = demo_catalog()
    kept, removed = profiles[0], profiles[1]
    changed = copy.deepcopy(profiles[2])
    changed["description"] = "edited"
    added = {**copy.deepcopy(kept), "name": "azure.research.training.broken", "defaultLocalQueue": "no-such-queue"}
    # the chart's values file, as an operator edits it
    path = write(cli_env, {"tauCluster": {"workloadProfiles": [kept, changed, added]}}, "values.yaml")
    code, doc = run_json(capsys, "--catalog", path, "--demo", "--horizon", "600")
    assert code == 1  # a profile it declares would not become Ready: not safe to apply
    rows = {p["name"]: p for p in doc["result"]["profiles"]}
    assert rows[kept["name"]]["change"] == "same" and rows[changed["name"]]["change"] == "changed"
    assert rows[changed["name"]]["fields"] == ["description"]
    assert rows[changed["name"]]["after"]["ready"] is True
    assert rows[added["name"]]["change"] == "added" and rows[added["name"]]["before"] is None
    assert rows[added["name"]]["after"]["ready"] is False
    assert rows[added["name"]]["after"]["reason"] == "LocalQueuesNotResolved"
    assert "no-such-queue" in rows[added["name"]]["after"]["message"]
    gone = rows[removed["name"]]
    assert gone["change"] == "removed" and gone["after"] is None
    n = gone["submitted"]["pending"] + gone["submitted"]["admitted"]
    assert n == stamped_jobs(removed["name"]) > 0
    assert doc["result"]["catalog"]["after"] == {**doc["result"]["catalog"]["after"], "profiles": 3, "ready": 2,
                                                 "setReady": False}
    # the table says the same in words
    assert main(["whatif", "--catalog", path, "--demo", "--horizon", "600"]) == 1
    out = capsys.readouterr().out
    assert "LocalQueuesNotResolved" in out and f"carry {removed['name']} (removed)" in out
    assert f"carry {changed['name']} (changed: description)" in out
    assert "the set Ready → not Ready" in out


@pytest.mark.parametrize("text, words", [
    ("kind: ClusterQueue\nmetadata: {name: x}\nspec: {}\n", "expected a non-empty list of workload profiles"),
    ("- {description: nameless}\n", "profile 1 has no name"),
    ("- {name: a}\n- {name: a}\n", "declared twice"),
    ("workloadProfiles: [\n", "invalid YAML"),
])
def test_bad_catalog_files_one_line_exit_2(cli_env, capsys, text, words):
    assert main(["whatif", "--catalog", write(cli_env, text, "bad.yaml"), "--demo"]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_catalog_is_one_question_at_a_time(cli_env, capsys):
    _tc, profiles = demo_catalog()
    path = write(cli_env, profiles, "catalog.yaml")
    assert main(["whatif", "--catalog", path, "--quota", path, "--demo"]) == 2
    assert main(["whatif", write(cli_env, train_job()), "--catalog", path, "--demo"]) == 2
    assert "one manifest FILE, or --quota FILE, or --catalog FILE" in capsys.readouterr().err
