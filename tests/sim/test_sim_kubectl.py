"""The real kubectl against the simulated API server, with nothing but the written kubeconfig."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat

import pytest
import pytest_asyncio
import yaml
from tools.paths import FIXTURES

from taudash.sim.server import SimServer

FIXTURE = FIXTURES / "sim-cluster.yaml"
KUBECTL = shutil.which("kubectl") or "kubectl"  # installed on every taudash machine; never skipped


@pytest_asyncio.fixture
async def sim(tmp_path):
    async with SimServer(FIXTURE, kubeconfig=tmp_path / "kube" / "config") as s:
        yield s


async def kubectl(sim: SimServer, *args: str, ok: bool = True,
                  env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run kubectl without blocking the loop the server runs on. Discovery cache and HOME stay in tmp."""
    home = sim.kubeconfig.parent
    env = {**os.environ, "HOME": str(home), "KUBECONFIG": str(sim.kubeconfig), **(env or {})}
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "--kubeconfig", str(sim.kubeconfig), "--cache-dir", str(home / "cache"), "--request-timeout=10s",
        *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    code, stdout, stderr = proc.returncode, out.decode(), err.decode()
    if ok:
        assert code == 0, f"kubectl {' '.join(args)} failed ({code}): {stderr}"
    return code, stdout, stderr


def test_kubeconfig_is_private_and_names_the_context(tmp_path):
    async def run():
        async with SimServer(FIXTURE, kubeconfig=tmp_path / "kc") as s:
            mode = stat.S_IMODE(s.kubeconfig.stat().st_mode)
            cfg = yaml.safe_load(s.kubeconfig.read_text())
            return mode, cfg, s.url, s.token

    mode, cfg, url, token = asyncio.run(run())
    assert mode == 0o600
    assert cfg["current-context"] == "taudash-sim"
    assert cfg["clusters"][0]["cluster"]["server"] == url and url.startswith("https://127.0.0.1:")
    assert cfg["users"][0]["user"]["token"] == token


async def test_get_nodes(sim):
    _, out, _ = await kubectl(sim, "get", "nodes")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "AGE"]
    rows = {line.split()[0]: line.split()[1] for line in lines[1:]}
    assert rows == {"cpu-0": "NotReady", "gpu-h200-0": "Ready", "gpu-h200-1": "Ready,SchedulingDisabled"}


async def test_get_clusterqueues_and_short_name(sim):
    _, out, _ = await kubectl(sim, "get", "clusterqueues")
    assert out.splitlines()[0].split()[:2] == ["NAME", "COHORT"]
    assert ({line.split()[0] for line in out.splitlines()[1:]}
            == {"legacy-batch", "tau-ws-evaluation", "tau-ws-training"})
    _, short, _ = await kubectl(sim, "get", "cq", "-o", "name")
    assert "clusterqueue.kueue.x-k8s.io/tau-ws-training" in short.splitlines()


async def test_get_workloads_all_namespaces(sim):
    _, out, _ = await kubectl(sim, "get", "workloads", "-A")
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["NAMESPACE", "NAME"]
    pairs = {tuple(line.split()[:2]) for line in lines[1:]}
    assert pairs == {("evaluation", "rayservice-llm-serve-4a5b6"), ("training", "job-train-a-3f2c1"),
                     ("training", "job-train-b-9d8e7")}


async def test_get_workspaces_by_plural_group_and_short_name(sim):
    _, full, _ = await kubectl(sim, "get", "workspaces.tau.azure.com", "-n", "tau-system")
    _, short, _ = await kubectl(sim, "get", "tw", "-n", "tau-system")

    def without_age(text):  # AGE may tick between the two calls
        return [line.split()[:-1] for line in text.splitlines()]

    assert without_age(full) == without_age(short)
    assert {line.split()[0] for line in full.splitlines()[1:]} == {"evaluation", "training"}


async def test_get_json_output(sim):
    _, out, _ = await kubectl(sim, "get", "tw", "-n", "tau-system", "-o", "json")
    doc = json.loads(out)
    assert doc["kind"] == "List"
    assert [i["kind"] for i in doc["items"]] == ["TauWorkspace", "TauWorkspace"]
    assert {i["metadata"]["name"] for i in doc["items"]} == {"evaluation", "training"}
    _, one, _ = await kubectl(sim, "get", "clusterqueue", "tau-ws-training", "-o", "json")
    assert json.loads(one)["spec"]["cohortName"] == "tau-team-vision"


async def test_patch_clusterqueue_merge(sim):
    before = sim.db.get("cq", "tau-ws-training")
    _, out, _ = await kubectl(sim, "patch", "clusterqueue", "tau-ws-training", "--type=merge",
                              "-p", '{"spec":{"stopPolicy":"HoldAndDrain"}}')
    assert "patched" in out
    after = sim.db.get("cq", "tau-ws-training")
    assert after["spec"]["stopPolicy"] == "HoldAndDrain"
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    patch = [r for r in sim.api.requests if r.method == "PATCH"]
    assert len(patch) == 1 and "fieldManager=kubectl-patch" in patch[0].query
    assert sim.api.writes == {"patch": 1}


async def test_patch_with_an_invalid_value_is_422(sim):
    code, _, err = await kubectl(sim, "patch", "cq", "tau-ws-training", "--type=merge",
                                 "-p", '{"spec":{"stopPolicy":"Drain"}}', ok=False)
    assert code != 0 and "Unsupported value" in err
    assert sim.db.get("cq", "tau-ws-training")["spec"]["stopPolicy"] == "None"


async def test_delete_rayservice(sim):
    _, out, _ = await kubectl(sim, "delete", "rayservice", "llm-serve", "-n", "evaluation")
    assert 'rayservice.ray.io "llm-serve" deleted' in out
    assert sim.db.get("rayservices", "llm-serve", "evaluation") is None
    code, _, err = await kubectl(sim, "get", "rayservice", "llm-serve", "-n", "evaluation", ok=False)
    assert code == 1 and "NotFound" in err


async def test_delete_rayservice_honours_finalizers(sim):
    await kubectl(sim, "delete", "rayservice", "llm-canary", "-n", "evaluation", "--wait=false")
    held = sim.db.get("rayservices", "llm-canary", "evaluation")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    # The operator (here: kubectl) removes the finalizer; the object goes.
    await kubectl(sim, "patch", "rayservice", "llm-canary", "-n", "evaluation", "--type=json",
                  "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    assert sim.db.get("rayservices", "llm-canary", "evaluation") is None


async def test_dry_run_server_stores_nothing(sim):
    rv = sim.db.resource_version
    await kubectl(sim, "delete", "rayservice", "llm-serve", "-n", "evaluation", "--dry-run=server")
    assert sim.db.get("rayservices", "llm-serve", "evaluation") is not None
    assert sim.db.resource_version == rv


async def test_kubectl_with_a_wrong_token_is_refused(sim):
    code, _, err = await kubectl(sim, "get", "nodes", "--token=wrong", ok=False)
    assert code != 0 and ("Unauthorized" in err or "provide credentials" in err)


async def test_get_watch_prints_rows_in_the_same_columns(sim):
    env = {**os.environ, "HOME": str(sim.kubeconfig.parent)}
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "--kubeconfig", str(sim.kubeconfig), "get", "cq", "tau-ws-training", "-w",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    try:
        header = (await asyncio.wait_for(proc.stdout.readline(), 10)).decode().split()
        assert header[:3] == ["NAME", "COHORT", "STOP"]
        assert "None" in (await asyncio.wait_for(proc.stdout.readline(), 10)).decode()
        await sim.api.wait_for_watches(1, "clusterqueues")
        sim.db.patch_merge("cq", "tau-ws-training", {"spec": {"stopPolicy": "Hold"}})
        row = (await asyncio.wait_for(proc.stdout.readline(), 10)).decode().split()
        assert row[:3] == ["tau-ws-training", "tau-team-vision", "Hold"]  # no second header
    finally:
        proc.terminate()
        await proc.wait()


async def test_default_seed_is_the_demo_scenario(tmp_path):
    async with SimServer(kubeconfig=tmp_path / "config") as demo:
        assert demo.snapshot is not None and demo.load_result is not None and not demo.load_result.issues
        _, out, _ = await kubectl(demo, "get", "clusterqueues", "-o", "name")
        assert len(out.split()) == demo.db.counts()["ClusterQueue"] > 0
        _, out, _ = await kubectl(demo, "get", "workloads", "-A", "--no-headers")
        assert len(out.splitlines()) == demo.db.counts()["Workload"]


async def test_apply_creates_then_configures(sim, tmp_path):
    manifest = tmp_path / "cq.yaml"
    doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "applied"},
           "spec": {"stopPolicy": "Hold"}}
    manifest.write_text(yaml.safe_dump(doc))
    _, out, _ = await kubectl(sim, "apply", "-f", str(manifest))
    assert "created" in out
    doc["spec"]["stopPolicy"] = "HoldAndDrain"
    manifest.write_text(yaml.safe_dump(doc))
    _, out, _ = await kubectl(sim, "apply", "-f", str(manifest))
    assert "configured" in out
    got = sim.db.get("cq", "applied")
    assert got["spec"]["stopPolicy"] == "HoldAndDrain" and got["metadata"]["generation"] == 2


# --- each Kueue release's short names ----------------------------------------------------------

@pytest.mark.parametrize("version", ["0.14", "0.15", "0.19"])
async def test_kubectl_get_with_each_releases_short_names(tmp_path, version):
    from taudash.sim.kueue_versions import kueue_version

    kv = kueue_version(version)
    every = {s for v in ("0.15", "0.19") for shorts in kueue_version(v).short_names.values() for s in shorts}
    async with SimServer(FIXTURE, kueue_version=version, kubeconfig=tmp_path / "kube" / "config") as s:
        for kind, shorts in kv.short_names.items():
            plural = s.db.resource(kind).plural
            for short in shorts:
                _, out, _ = await kubectl(s, "get", short, "-A", "-o", "jsonpath={.items[*].kind}")
                _, full, _ = await kubectl(s, "get", f"{plural}.kueue.x-k8s.io", "-A", "-o",
                                           "jsonpath={.items[*].kind}")
                assert out == full and set(out.split()) <= {kind}, (version, short)
        # a short name of another release is no resource type here
        for short in sorted(every - {x for shorts in kv.short_names.values() for x in shorts}):
            code, _, err = await kubectl(s, "get", short, "-A", ok=False)
            assert code != 0 and f'the server doesn\'t have a resource type "{short}"' in err, (version, short, err)
        # served at the preferred version; the other served version spells the fields its own way
        _, out, _ = await kubectl(s, "get", "cq", "-o", "jsonpath={.items[*].apiVersion}")
        assert set(out.split()) == {f"kueue.x-k8s.io/{kv.preferred}"}
        _, out, _ = await kubectl(s, "get", "clusterqueues.v1beta1.kueue.x-k8s.io", "-o", "json")
        items = json.loads(out)["items"]
        assert items and all("cohortName" not in i["spec"] for i in items)
        assert any("cohort" in i["spec"] for i in items)
