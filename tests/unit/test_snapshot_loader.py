import json

import pytest
import yaml
from factories import cluster_queue, workspace

from taudash.engine.sources.snapshot import SnapshotError, load_snapshot
from taudash.engine.store import AccessState

NODE = "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\nstatus:\n  allocatable:\n    cpu: '{cpu}'\n"


def write(tmp_path, text, name="snap.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_multi_document_yaml(tmp_path):
    p = write(tmp_path, NODE.format(name="a", cpu="4") + "---\n" + NODE.format(name="b", cpu="8"))
    r = load_snapshot(p)
    assert r.objects == 2 and not r.issues
    assert [n.name for n in r.store.list("Node")] == ["a", "b"]
    assert r.store.access("Node").state is AccessState.SYNCED


def test_kind_list_and_json(tmp_path):
    doc = {"apiVersion": "v1", "kind": "List", "items": [workspace("w"), cluster_queue("cq")]}
    r = load_snapshot(write(tmp_path, json.dumps(doc), "snap.json"))
    assert r.objects == 2 and not r.issues
    assert r.store.get("TauWorkspace", "w", "tau-system") is not None


def test_envelope_carries_access_states_and_metadata(tmp_path):
    doc = {
        "apiVersion": "taudash/v1",
        "kind": "ClusterSnapshot",
        "metadata": {"context": "prod", "capturedAt": "2026-11-30T09:00:00Z"},
        "access": [{"resource": "deployments.apps", "state": "Forbidden"},
                   {"resource": "rayjobs.ray.io", "state": "Absent"}],
        "objects": [cluster_queue("cq")],
    }
    r = load_snapshot(write(tmp_path, json.dumps(doc)))
    assert (r.context, r.captured_at) == ("prod", "2026-11-30T09:00:00Z")
    assert r.store.access("Deployment").state is AccessState.FORBIDDEN
    assert r.store.access("RayJob").state is AccessState.ABSENT
    assert r.store.access("ClusterQueue").state is AccessState.SYNCED


def test_unknown_kinds_are_counted_and_secrets_never_loaded(tmp_path):
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\n---\n"
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\ndata: {token: c2VjcmV0}\n---\n"
        + NODE.format(name="a", cpu="1")
    )
    r = load_snapshot(write(tmp_path, text))
    assert r.objects == 1 and not r.issues
    assert r.unknown_kinds == {"ConfigMap.v1": 1}


def test_truncated_yaml_names_file_line_and_column(tmp_path):
    p = write(tmp_path, NODE.format(name="a", cpu="1") + "---\napiVersion: v1\nkind: Node\nmetadata: {name: [x\n")
    with pytest.raises(SnapshotError) as exc:
        load_snapshot(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}:") and "invalid YAML" in msg
    line = int(msg.split(":")[1])
    assert line >= 11  # the broken document, not the first one
    assert "\n" not in msg


def test_truncated_json(tmp_path):
    with pytest.raises(SnapshotError, match=r"snap.json:1:\d+: invalid JSON"):
        load_snapshot(write(tmp_path, '{"apiVersion": "v1", "kind": ', "snap.json"))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(SnapshotError, match="no such file"):
        load_snapshot(tmp_path / "nope.yaml")
    with pytest.raises(SnapshotError, match="is a directory"):
        load_snapshot(tmp_path)


def test_empty_file(tmp_path):
    with pytest.raises(SnapshotError, match="empty snapshot"):
        load_snapshot(write(tmp_path, "---\n"))


def test_bad_objects_are_reported_and_the_rest_loads(tmp_path):
    text = "\n---\n".join(
        [
            NODE.format(name="good1", cpu="2"),
            NODE.format(name="bad-qty", cpu="12Q"),
            "- just\n- a list",
            "hello: world",
            "apiVersion: v1\nkind: Node\nmetadata: {}",
            "apiVersion: v1\nkind: Node",
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w}",
            NODE.format(name="good2", cpu="3"),
        ]
    )
    r = load_snapshot(write(tmp_path, text))
    assert [n.name for n in r.store.list("Node")] == ["good1", "good2"]
    msgs = [str(i) for i in r.issues]
    assert len(msgs) == 6
    assert any("bad-qty" in m and "invalid quantity '12Q'" in m and "status.allocatable.cpu" in m for m in msgs)
    assert any("document is a list" in m for m in msgs)
    assert any("not a Kubernetes object" in m for m in msgs)
    assert any("has no metadata.name" in m for m in msgs)
    assert any("has no metadata" in m and "name" not in m.split("has no metadata")[1] for m in msgs)
    assert any("namespaced but has no metadata.namespace" in m for m in msgs)
    # every issue names the file and its line
    assert all(m.startswith(f"{tmp_path / 'snap.yaml'}:") for m in msgs)
    assert [i.line for i in r.issues] == sorted(i.line for i in r.issues)


# --- the parsed-document cache: the same big file again is JSON-decoded, never shared ------------------------


def _big_list(extra: str = "") -> str:
    items = "\n".join(f"- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: ns-{i}\n    labels: {{team: t{i}}}"
                      for i in range(900))
    return f"apiVersion: v1\nkind: List\n{extra}items:\n{items}\n"


def test_a_big_file_read_again_gives_the_same_objects_and_a_copy_of_its_own(tmp_path, monkeypatch):
    from taudash.engine.sources import snapshot as snap

    path = tmp_path / "big.yaml"
    path.write_text(_big_list())
    assert path.stat().st_size > snap._PARSED_MIN_CHARS
    parsed = []
    real = snap._parse_docs
    monkeypatch.setattr(snap, "_parse_docs", lambda text, where: parsed.append(where) or real(text, where))
    first = snap._read_docs(path.read_text(), str(path))
    first[0][1]["items"][0]["metadata"]["name"] = "changed by its caller"
    second = snap._read_docs(path.read_text(), str(path))
    assert parsed == [str(path)]  # parsed once
    assert second[0][1]["items"][0]["metadata"]["name"] == "ns-0"  # the caller's edit did not reach the cache
    assert load_snapshot(path).store.get("Namespace", "ns-899") is not None
    path.write_text(_big_list().replace("ns-899", "ns-last"))  # another text: parsed again
    assert load_snapshot(path).store.get("Namespace", "ns-last") is not None and len(parsed) == 2


def test_values_json_cannot_hold_are_never_cached(tmp_path, monkeypatch):
    from taudash.engine.sources import snapshot as snap

    parsed = []
    real = snap._parse_docs
    monkeypatch.setattr(snap, "_parse_docs", lambda text, where: parsed.append(where) or real(text, where))
    for extra in ("metadata: {annotations: {1: integer key}}\n", "metadata: {when: 2026-11-30}\n"):
        text = _big_list(extra)
        a, b = snap._read_docs(text, "x"), snap._read_docs(text, "x")
        assert a == b and a[0][1]["metadata"] == yaml.safe_load(extra)["metadata"]  # YAML's own values, both times
    assert len(parsed) == 4  # each read parsed again
