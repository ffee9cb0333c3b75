"""The snapshot YAML reader (engine/sources/snapshot_yaml.py, decision 165) builds what PyYAML's safe loader
builds, and raises what it raises: on the shipped snapshots, on YAML's corners, and on random documents."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tools.paths import SNAPSHOTS

from taudash.engine.sources import snapshot_yaml
from taudash.engine.sources.snapshot_yaml import yaml_documents


def pyyaml(text: str) -> list[tuple[int | None, object]]:
    loader = yaml.CSafeLoader(text)
    docs = []
    try:
        while loader.check_node():
            node = loader.get_node()
            docs.append((node.start_mark.line + 1, loader.construct_document(node)))
    finally:
        loader.dispose()
    return docs


def outcome(read, text: str) -> object:
    try:
        return repr(read(text))  # repr: NaN and self-referencing lists compare as text
    except Exception as exc:  # noqa: BLE001 — the error itself is the outcome
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize("path", sorted(SNAPSHOTS.glob("*.yaml")), ids=lambda p: p.name)
def test_the_shipped_snapshots_read_as_pyyaml_reads_them(path):
    text = path.read_text()
    assert snapshot_yaml._plain_documents(text) == pyyaml(text)  # by the fast path itself, no fallback


CORNERS = [
    "a: 1\nb: [1, 2.5, -3]\nc: {d: null}\n",
    "a: yes\nb: No\nc: ~\nd: 0o17\ne: 0x1F\nf: 1_000\ng: .inf\nh: 1:20\ni: 1e3\nj: 12345678901234567890\n",
    "a: '1'\nb: \"true\"\nc: !!str 1\nd: !!int '3'\ne: ! 1\n",
    "a: 2024-01-01\nb: 2024-01-01T00:00:00Z\n",
    "1: a\nnull: b\ntrue: c\n1: d\n",  # scalar keys of other types; a repeated key: the last wins
    "a: &x {k: v}\nb: *x\nc: &s text\nd: *s\n",  # aliases: the anchor's very object
    "- &a [*a]\n",  # a list holding itself
    "a: &k x\n*k : 2\n",  # an alias as a key
    "<<: {a: 1}\nb: 2\n",  # a merge key
    "=: 1\n",
    "a: !!set {x}\nb: !!binary aGk=\nc: !!omap [{x: 1}]\n",
    "!!map {a: 1}\n---\n!!seq [1]\n",
    "---\n---\na: 1\n...\n%YAML 1.1\n---\nb\n",  # documents with their first lines
    "",
    "# only a comment\n",
    "[" * 150 + "]" * 150 + "\n",  # deeper than the fast path goes
    # errors: each PyYAML's own
    "a: !foo 1\n", "? [1]\n: 2\n", "{a: 1}: 2\n", "a: *nope\n", "a: &x 1\nb: &x 2\n", "a: [\n", "x: 1\n- y\n",
    "a: " + "9" * 5000 + "\n",
]


@pytest.mark.parametrize("text", CORNERS)
def test_corners_read_or_fail_as_pyyaml_does(text):
    assert outcome(yaml_documents, text) == outcome(pyyaml, text)


_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12),
                     st.sampled_from(["yes", "off", "~", "null", "1:20", "0x1F", "2024-01-01", "<<", "=", "-", ""]))
_trees = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(st.lists(_trees, min_size=1, max_size=3), st.booleans())
def test_random_documents_read_as_pyyaml_reads_them(docs, flow):
    text = yaml.safe_dump_all(docs, default_flow_style=flow, allow_unicode=True)
    # Plain data as PyYAML writes it: the fast path itself reads all of it, no fallback.
    assert outcome(snapshot_yaml._plain_documents, text) == outcome(pyyaml, text)
