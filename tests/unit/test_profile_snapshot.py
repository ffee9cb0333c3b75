"""TauWorkloadProfileSnapshot export and verify (docs/rules.md#profiles-snapshot)."""

from __future__ import annotations

import copy
import os
import stat
from datetime import UTC, datetime

import factories
import pytest
import yaml
from factories import PROFILE_CONDITIONS, profile_conditions, store_of, workload_profile

from taudash.engine import paths
from taudash.engine.profile_snapshot import ProfileSnapshotError, build_snapshot, export_snapshot, verify
from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.profilehash import profile_set_hash

GEN = 5
AT = "2025-01-01T00:00:00Z"


def cond(ctype, status="True", gen=GEN):
    return factories.cond(ctype, status, gen=gen, at=AT)


def profile(name, ready=True, description=""):
    extra = {"description": description} if description else {}
    return workload_profile(
        name, teams=["research"], lanes=["training"], namespaces=["research-ws"], cluster_queue="jobqueue",
        resourceFlavors=["taugrid-gpu-h100"], topologies=["taugrid-gpu-topology"],
        workloadPriorityClasses=["taugrid-default"], podPriorityClasses=["taugrid-default"],
        # deliberately unsorted: the snapshot sorts conditions by type
        conditions=profile_conditions(ready, gen=GEN, at=AT, order=reversed(PROFILE_CONDITIONS)), **extra)


PROFILES = [profile("research.training.1x", description="<b>Ünï</b> & co\u2028"), profile("a.first")]


def store(profiles=PROFILES, observed=GEN, published=None):
    return store_of(factories.tau_cluster(profiles, gen=GEN, observed=observed, hash_value=published,
                                          conditions=[cond("WorkloadProfilesReady")]))


def ctx(**kw):
    return RuleContext(store=store(**kw), now=datetime(2025, 1, 1, tzinfo=UTC))


# --- export -----------------------------------------------------------------------------


def test_export_writes_a_verifiable_world_readable_file(tmp_path):
    out = tmp_path / "profiles.snapshot.yaml"
    doc = export_snapshot(ctx(), out)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644
    assert os.listdir(tmp_path) == ["profiles.snapshot.yaml"]  # no temp file left behind
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert list(data) == ["apiVersion", "kind", "tauClusterGeneration", "profileSetHash", "profiles"]
    assert data["apiVersion"] == "tau.azure.com/v1alpha1" and data["kind"] == "TauWorkloadProfileSnapshot"
    assert data["tauClusterGeneration"] == GEN
    assert [p["name"] for p in data["profiles"]] == ["a.first", "research.training.1x"]
    assert [c["type"] for c in data["profiles"][0]["conditions"]] == sorted(PROFILE_CONDITIONS)
    assert data["profiles"][1]["description"] == "<b>Ünï</b> & co"  # trimmed (U+2028 is Go space)
    assert doc == data
    v = verify(out)
    assert (v.generation, v.profile_set_hash) == (GEN, profile_set_hash(PROFILES))


def test_export_replaces_an_existing_file(tmp_path):
    out = tmp_path / "s.yaml"
    out.write_text("old")
    export_snapshot(ctx(), out)
    assert verify(out).generation == GEN


def test_export_refuses_an_unready_profile_and_leaves_the_target_alone(tmp_path):
    out = tmp_path / "s.yaml"
    out.write_text("previous review artifact")
    with pytest.raises(ProfileSnapshotError, match="profile 'b.unready' is not Ready at generation 5"):
        export_snapshot(ctx(profiles=PROFILES + [profile("b.unready", ready=False)]), out)
    assert out.read_text() == "previous review artifact"
    assert os.listdir(tmp_path) == ["s.yaml"]


@pytest.mark.parametrize(
    "kw,message",
    [({"observed": GEN - 1}, "stale"), ({"published": "f" * 64}, "profileSetHash mismatch")],
    ids=["stale", "hash-mismatch"],
)
def test_export_refuses_an_unusable_set(kw, message):
    with pytest.raises(ProfileSnapshotError, match=f"refusing to export: .*{message}"):
        build_snapshot(ctx(**kw))


def test_failed_write_removes_the_temp_file(tmp_path, monkeypatch):
    out = tmp_path / "s.yaml"

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(paths.os, "replace", boom)  # the one atomic writer lives in engine.paths
    with pytest.raises(ProfileSnapshotError, match="cannot write: No space left on device"):
        export_snapshot(ctx(), out)
    assert os.listdir(tmp_path) == []


# --- verify -----------------------------------------------------------------------------


def good_doc():
    return build_snapshot(ctx())


def write(tmp_path, doc, name="s.yaml"):
    p = tmp_path / name
    p.write_text(
        doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    return p


def test_verify_accepts_go_yaml_v3_lowercase_condition_keys(tmp_path):
    doc = good_doc()
    for p in doc["profiles"]:
        p["conditions"] = [{k.lower(): v for k, v in c.items()} for c in p["conditions"]]
    text = yaml.safe_dump(doc, sort_keys=False)
    assert "observedgeneration: 5" in text
    assert verify(write(tmp_path, text)).generation == GEN


def test_verify_accepts_unquoted_timestamps_and_json(tmp_path):
    text = yaml.safe_dump(good_doc(), sort_keys=False).replace("'2025-01-01T00:00:00Z'", "2025-01-01T00:00:00Z")
    assert verify(write(tmp_path, text)).generation == GEN
    import json

    assert verify(write(tmp_path, json.dumps(good_doc()), "s.json")).generation == GEN


def mutate(fn):
    doc = copy.deepcopy(good_doc())
    fn(doc)
    return doc


def _ready(doc, **changes):
    for c in doc["profiles"][0]["conditions"]:
        if c["type"] == "Ready":
            c.update(changes)


@pytest.mark.parametrize(
    "doc,message",
    [
        (
            mutate(lambda d: d.update(apiVersion="tau.azure.com/v1beta1")),
            "unsupported workload profile snapshot apiVersion 'tau.azure.com/v1beta1'",
        ),
        (mutate(lambda d: d.update(kind="TauCluster")), "unsupported workload profile snapshot kind 'TauCluster'"),
        (mutate(lambda d: d.update(tauClusterGeneration=0)), "tauClusterGeneration must be a positive integer, got 0"),
        (mutate(lambda d: d.pop("tauClusterGeneration")), "tauClusterGeneration must be a positive integer, got None"),
        (
            mutate(lambda d: _ready(d, status="False")),
            "profile 'a.first' Ready condition is not True at TauCluster generation 5",
        ),
        (mutate(lambda d: _ready(d, observedGeneration=4)), "observedGeneration 4"),
        (mutate(lambda d: d["profiles"][0].update(conditions=[])), "profile 'a.first' has no Ready condition"),
        (mutate(lambda d: d.update(profileSetHash="0" * 64)), "profileSetHash mismatch: file has '000"),
        (mutate(lambda d: d["profiles"][0].update(clusterQueues=["other"])), "profileSetHash mismatch"),
        (
            mutate(lambda d: d["profiles"][0].update(placement="multi-node-nccl")),
            "profile 'a.first' is invalid: placement",
        ),
        (
            mutate(lambda d: d["profiles"].append(copy.deepcopy(d["profiles"][0]))),
            "duplicate workload profile 'a.first'",
        ),
        (mutate(lambda d: d.update(profiles={"a": 1})), "profiles must be a list"),
        (mutate(lambda d: d["profiles"][0].update(workerCount="many")), "profiles[0]: workerCount"),
        (["a list"], "not a TauWorkloadProfileSnapshot"),
    ],
    ids=[
        "apiVersion",
        "kind",
        "generation-0",
        "generation-missing",
        "unready",
        "ready-old-generation",
        "no-ready",
        "hash",
        "drifted-profile",
        "invalid-profile",
        "duplicate",
        "profiles-not-list",
        "bad-field",
        "not-mapping",
    ],
)
def test_verify_rejects_with_one_line(tmp_path, doc, message):
    path = write(tmp_path, doc)
    with pytest.raises(ProfileSnapshotError) as exc:
        verify(path)
    text = str(exc.value)
    assert message in text
    assert text.startswith(str(path)) and "\n" not in text


@pytest.mark.parametrize(
    "content,message",
    [
        ("apiVersion: [unclosed\n", "invalid YAML"),
        ("a: 1\n---\nb: 2\n", "expected one TauWorkloadProfileSnapshot document, found 2"),
        ("", "found 0"),
        ("{not json", "invalid JSON"),
    ],
)
def test_verify_rejects_unparseable_files(tmp_path, content, message):
    with pytest.raises(ProfileSnapshotError, match=message):
        verify(write(tmp_path, content))


def test_verify_missing_file(tmp_path):
    with pytest.raises(ProfileSnapshotError, match="no such file"):
        verify(tmp_path / "nope.yaml")
