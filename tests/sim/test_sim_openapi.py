"""OpenAPI v2 and v3 from the simulator: kubectl apply, create, explain and edit work unmodified (no --validate=false)."""

from __future__ import annotations

import json

import aiohttp
import pytest_asyncio
import yaml
from test_sim_kubectl import FIXTURE, kubectl
from tools import kueue_data

from taudash.sim.openapi import definition_name, gv_path
from taudash.sim.server import SimServer

JOB = {"apiVersion": "batch/v1", "kind": "Job",
       "metadata": {"name": "applied-job", "namespace": "training",
                    "labels": {"kueue.x-k8s.io/queue-name": "training"}},
       "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never",
                                                        "containers": [{"name": "main", "image": "busybox"}]}}}}
CQ = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "applied"},
      "spec": {"stopPolicy": "Hold"}}


@pytest_asyncio.fixture
async def sim(tmp_path):
    async with SimServer(FIXTURE, kubeconfig=tmp_path / "kube" / "config") as s:
        yield s


def _write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return str(path)


async def _raw(sim, path, accept):
    headers = {"Authorization": f"Bearer {sim.token}", "Accept": accept}
    async with aiohttp.ClientSession() as s, s.get(sim.url + path, headers=headers,
                                                   ssl=sim.cert.client_context()) as r:
        return r.status, await r.read()


async def test_apply_a_job_and_a_clusterqueue_with_validation_on(sim, tmp_path):
    job, cq = _write(tmp_path, "job.yaml", JOB), _write(tmp_path, "cq.yaml", CQ)
    _, out, err = await kubectl(sim, "apply", "-f", job, "-f", cq)
    assert "job.batch/applied-job created" in out and "clusterqueue.kueue.x-k8s.io/applied created" in out, err
    JOB["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:2"
    CQ["spec"]["stopPolicy"] = "HoldAndDrain"
    job, cq = _write(tmp_path, "job.yaml", JOB), _write(tmp_path, "cq.yaml", CQ)
    _, out, _ = await kubectl(sim, "apply", "-f", job, "-f", cq)
    assert "job.batch/applied-job configured" in out and "clusterqueue.kueue.x-k8s.io/applied configured" in out
    assert sim.db.get("cq", "applied")["spec"]["stopPolicy"] == "HoldAndDrain"
    got = sim.db.get("jobs", "applied-job", "training")
    assert got["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:2"
    # validation stayed on: kubectl left it to the server (fieldValidation=Strict); v2, asked as protobuf, got 406
    writes = [r for r in sim.api.requests if r.verb in ("create", "patch")]
    assert writes and all("fieldValidation=Strict" in r.query for r in writes)
    assert {r.status for r in sim.api.requests if r.path == "/openapi/v2"} <= {406}


async def test_apply_with_an_unknown_field_is_refused_by_strict_validation(sim, tmp_path):
    kueue_data.root()  # the ClusterQueue's schema is Kueue's CRD: without it the field is not unknown
    bad = _write(tmp_path, "bad.yaml", {**CQ, "spec": {"stopPolicy": "Hold", "bogusField": 1}})
    code, _, err = await kubectl(sim, "apply", "-f", bad, ok=False)
    assert code != 0 and 'unknown field "spec.bogusField"' in err
    assert sim.db.get("cq", "applied") is None


async def test_create_then_create_again_is_already_exists(sim, tmp_path):
    cq = _write(tmp_path, "cq.yaml", {**CQ, "metadata": {"name": "created"}})
    _, out, _ = await kubectl(sim, "create", "-f", cq)
    assert "clusterqueue.kueue.x-k8s.io/created created" in out
    code, _, err = await kubectl(sim, "create", "-f", cq, ok=False)
    assert code != 0 and "AlreadyExists" in err


async def test_explain_workload_spec_from_the_crd(sim):
    kueue_data.root()  # what explain prints is the CRD's own schema
    _, out, _ = await kubectl(sim, "explain", "workload.spec")
    assert "KIND:       Workload" in out and "FIELD: spec <Object>" in out
    assert "podSets\t<[]Object>" in out and "queueName\t<string>" in out
    _, out, _ = await kubectl(sim, "explain", "workload.spec.podSets.count")
    assert "FIELD: count <integer>" in out
    _, out, _ = await kubectl(sim, "explain", "jobs.spec.template.spec.containers")  # a built-in's minimal schema
    assert "GROUP:      batch" in out and "image\t<string>" in out
    code, _, err = await kubectl(sim, "explain", "workload.spec.noSuchField", ok=False)
    assert code != 0 and "noSuchField" in err


async def test_edit_with_an_editor_script(sim, tmp_path):
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "s/cohortName: tau-team-vision/cohortName: edited-cohort/" "$1"\n')
    editor.chmod(0o755)
    _, out, err = await kubectl(sim, "edit", "clusterqueue", "tau-ws-training", env={"EDITOR": str(editor)})
    assert "edited" in out, err
    assert sim.db.get("cq", "tau-ws-training")["spec"]["cohortName"] == "edited-cohort"
    # an edit the schema refuses comes back to the editor; the script cannot fix it, so kubectl gives up
    editor.write_text('#!/bin/sh\nsed -i "s/stopPolicy: None/stopPolicy: Drain/" "$1"\n')
    sim.db.patch_merge(sim.db.resource("cq"), "tau-ws-training", {"spec": {"stopPolicy": "None"}})
    code, _, err = await kubectl(sim, "edit", "clusterqueue", "tau-ws-training", env={"EDITOR": str(editor)},
                                 ok=False)
    assert code != 0 and 'clusterqueues.kueue.x-k8s.io "tau-ws-training" is invalid' in err
    assert sim.db.get("cq", "tau-ws-training")["spec"]["stopPolicy"] == "None"


async def test_every_served_kind_has_a_schema_and_a_patch_operation(sim):
    status, body = await _raw(sim, "/openapi/v3", "application/json")
    assert status == 200
    root = json.loads(body)["paths"]
    for r, version in sim.api._served_versions():
        gv = gv_path(r.group, version)
        status, body = await _raw(sim, root[gv]["serverRelativeURL"], "application/json")
        assert status == 200, gv
        doc = json.loads(body)
        schema = doc["components"]["schemas"][definition_name(r, version)]
        assert schema["x-kubernetes-group-version-kind"] == [{"group": r.group, "kind": r.kind, "version": version}]
        patches = [p["patch"] for p in doc["paths"].values() if "patch" in p
                   and p["patch"]["x-kubernetes-group-version-kind"]["kind"] == r.kind]
        assert len(patches) == 1 and "fieldValidation" in {p["name"] for p in patches[0]["parameters"]}


async def test_v2_is_json_and_protobuf_only_is_not_acceptable(sim):
    status, body = await _raw(sim, "/openapi/v2", "application/json")
    doc = json.loads(body)
    assert status == 200 and doc["swagger"] == "2.0"
    wl = doc["definitions"]["io.x-k8s.kueue.v1beta2.Workload"]
    assert "nullable" not in json.dumps(wl["properties"]["spec"])  # no v3-only keywords in Swagger 2.0
    status, _ = await _raw(sim, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
    assert status == 406
    status, _ = await _raw(sim, "/openapi/v3/apis/no.such.group/v1", "application/json")
    assert status == 404


async def test_documents_are_built_once_and_follow_what_is_served(sim):
    api = sim.api
    assert api.openapi.document("v3") is api.openapi.document("v3")  # cached bytes, not rebuilt per request
    assert "apis/ray.io/v1" in json.loads(api.openapi.document("v3"))["paths"]
    api.set_group_enabled("ray.io", False)
    assert "apis/ray.io/v1" not in json.loads(api.openapi.document("v3"))["paths"]
    assert api.openapi.document("v3/apis/ray.io/v1") is None
