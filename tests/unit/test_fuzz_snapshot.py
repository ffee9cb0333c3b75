"""Property-based fuzzing of the snapshot loader (bad input: one line, exit 2; README.md "Exit codes"): random
bytes, random YAML and JSON documents, hand-made nasties, and real objects from snapshots/demo.yaml with a
value anywhere replaced by a wrong type, null, huge number or odd unicode. The only outcomes allowed are loaded
objects plus one-line issues naming the file, or one SnapshotError line naming the file; and what
loads can be derived and printed (the output contract is valid JSON)."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tools.mutate import MUTATION, demo_objects, mutate

from taudash.engine.incremental import derive
from taudash.engine.sources.snapshot import LoadResult, SnapshotError, load_documents, load_snapshot

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEMO = demo_objects()


def load_text(data: bytes | str, suffix: str = ".yaml") -> tuple[str, LoadResult | SnapshotError]:
    fd, path = tempfile.mkstemp(suffix=suffix, prefix="fuzz-")
    try:
        os.write(fd, data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
        os.close(fd)
        try:
            return path, load_snapshot(path)
        except SnapshotError as exc:
            return path, exc
    finally:
        Path(path).unlink(missing_ok=True)


def check_outcome(path: str, outcome: LoadResult | SnapshotError) -> None:
    """One line naming the file for every problem; what loaded derives and prints."""
    if isinstance(outcome, SnapshotError):
        text = str(outcome)
        assert text.startswith(f"{path}:") and "\n" not in text, text
        return
    for issue in outcome.issues:
        text = str(issue)
        assert text.startswith(f"{path}:") and "\n" not in text and "\r" not in text, text
    check_derives(outcome)


def check_derives(result: LoadResult) -> None:
    view = derive(result.store, NOW)
    json.dumps(view.to_contract(), allow_nan=False)


# --- whole files ---------------------------------------------------------------------------------

@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(data):
    check_outcome(*load_text(data))


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)
OBJECTISH = st.fixed_dictionaries(
    {"apiVersion": st.sampled_from(["v1", "kueue.x-k8s.io/v1beta2", "tau.azure.com/v1alpha1", "apps/v1", "x/y", ""]),
     "kind": st.sampled_from(["Node", "Namespace", "ClusterQueue", "Workload", "TauWorkspace", "Deployment", "List",
                              "ClusterSnapshot", "Secret", "Nope"])},
    optional={"metadata": JSONISH | st.fixed_dictionaries({"name": st.text(max_size=8)}, optional={
        "namespace": JSONISH, "labels": JSONISH, "ownerReferences": JSONISH}),
              "spec": JSONISH, "status": JSONISH, "items": JSONISH, "objects": JSONISH, "access": JSONISH},
)


@FUZZ
@given(st.lists(JSONISH | OBJECTISH, min_size=1, max_size=4), st.sampled_from(["yaml", "json"]))
def test_random_documents(docs, fmt):
    if fmt == "json":
        text = json.dumps(docs if len(docs) > 1 else docs[0])
    else:
        text = yaml.safe_dump_all(docs, allow_unicode=True)
    check_outcome(*load_text(text, f".{fmt}"))


NASTY = {
    "deep JSON": "[" * 100_000,
    "deep JSON object": '{"a":' * 50_000,
    "deep YAML flow": "- " + "[" * 50_000,
    "deep YAML block": "".join("  " * i + "- \n" for i in range(3000)),
    "recursive alias": "&a [*a]\n",
    "recursive metadata": "apiVersion: v1\nkind: Namespace\nmetadata: &m\n  name: x\n  labels: *m\n",
    "recursive items": "kind: List\napiVersion: v1\nitems: &i\n- *i\n",
    "python tag": "!!python/object/apply:os.system ['echo hi']\n",
    "unhashable key": "? [a, b]\n: 1\n",
    "huge YAML int": "apiVersion: v1\nkind: Node\nmetadata: {name: n, generation: " + "9" * 5000 + "}\n",
    "huge quantity exponent": "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: "
                              "1e99999999}}\n",
    "huge quantity digits": "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: '"
    + "9" * 4000 + "'}}\n",
    "YAML inf quantity": "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: .inf}}\n",
    "YAML nan quantity": "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: .nan}}\n",
    "JSON inf quantity": ('{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},'
                          '"status":{"allocatable":{"cpu":1e999}}}'),
    "JSON NaN quantity": ('{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},'
                          '"status":{"allocatable":{"cpu":NaN}}}'),
    "envelope with scalar parts": "apiVersion: taudash/v1\nkind: ClusterSnapshot\nmetadata: abc\naccess: "
                                  "abc\nobjects: abc\n",
    "envelope access entries": "apiVersion: taudash/v1\nkind: ClusterSnapshot\naccess: [abc, 1, null, {resource: "
                               "1}]\nobjects: []\n",
    "List with scalar items": "kind: List\napiVersion: v1\nitems: abc\n",
    "List with mapping items": "kind: List\napiVersion: v1\nitems: {a: 1}\n",
    "kind is a list": "apiVersion: v1\nkind: [a]\nmetadata: {name: x}\n",
    "date as name": "apiVersion: v1\nkind: Namespace\nmetadata: {name: 2026-01-01}\n",
    "binary as name": "apiVersion: v1\nkind: Namespace\nmetadata: {name: !!binary aGVsbG8=}\n",
    "integer label keys": "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {1: 2}}\n",
    "NUL in name": 'apiVersion: v1\nkind: Namespace\nmetadata: {name: "a\\0b"}\n',
    "newline in a reported name": 'apiVersion: v1\nkind: Node\nmetadata: {name: "a\\nb\\x1b[2J"}\nspec: 7\n',
    "BOM": "\ufeffapiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n",
    "lone surrogate": '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"\\ud800"}}',
    "not UTF-8": b"apiVersion: v1\nkind: Namespace\nmetadata: {name: \xff\xfe}\n",
}


@pytest.mark.parametrize("name", sorted(NASTY))
def test_nasty_files(name):
    suffix = ".json" if "JSON" in name else ".yaml"
    check_outcome(*load_text(NASTY[name], suffix))


def test_nasty_quantities_are_issues_not_objects():
    """Non-finite, absurdly large and malformed quantities are reported, never stored."""
    for name in ("huge quantity exponent", "huge quantity digits", "YAML inf quantity", "YAML nan quantity",
                 "JSON inf quantity", "JSON NaN quantity"):
        path, out = load_text(NASTY[name], ".json" if "JSON" in name else ".yaml")
        assert isinstance(out, LoadResult), (name, out)
        assert out.objects == 0 and len(out.issues) == 1, (name, [str(i) for i in out.issues])
        assert "status.allocatable.cpu" in str(out.issues[0]), str(out.issues[0])


# --- real objects, mutated ---------------------------------------------------------------------------

@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(DEMO) - 1), MUTATION), min_size=1, max_size=4))
def test_mutated_demo_objects(mutations):
    objects = list(DEMO)  # shared, never modified: mutate() copies
    for index, (path, op, value) in mutations:
        objects[index] = mutate(objects[index], path, op, value)
    result = load_documents([(i + 1, o) for i, o in enumerate(objects)], "demo-mutated.yaml")
    for issue in result.issues:
        text = str(issue)
        assert text.startswith("demo-mutated.yaml:") and "\n" not in text, text
    # one bad object never hides the rest
    assert result.objects + len(result.issues) + sum(result.unknown_kinds.values()) >= len(objects) - len(mutations)
    check_derives(result)
