"""Mutations of real Kubernetes objects for the fuzz tests: a value anywhere in the object replaced by
one of the wrong type (or removed), with hypothesis strategies and a seeded plain-random variant."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "snapshots" / "demo.yaml"

# Values that break assumptions: wrong types, nulls, huge and non-finite numbers, quantity-like
# strings that are not quantities, unicode, control characters and markup.
NASTY_STRINGS = ["", " ", "12Q", "1e99999999", "-1", "-5Gi", "NaN", "Infinity", "+Inf", "0x10", "1.5Gi", "1e-30",
                 "9" * 400, "\x1b[2J\x1b]0;owned\x07", "[bold]x[/]", "☃", "\u202egnp.exe", "a\nb", "True", "null",
                 "2026-13-45T99:99:99Z", "kueue.x-k8s.io/queue-name", "tau-ws-train", "None", "\x00"]
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(NASTY_STRINGS),
    st.lists(st.one_of(st.integers(), st.text(max_size=3), st.none()), max_size=3),
    st.dictionaries(st.text(max_size=4), st.one_of(st.text(max_size=4), st.integers(), st.none()), max_size=3),
)
MUTATION = st.tuples(st.lists(st.integers(0, 63), max_size=8), st.sampled_from(("set", "set", "delete")), JUNK)


def demo_objects() -> list[dict[str, Any]]:
    doc = yaml.load(DEMO.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return doc["objects"]


def mutate(obj: dict[str, Any], path: list[int], op: str, value: Any) -> dict[str, Any]:
    """A deep copy of `obj` with one place changed: walk containers choosing children by `path`
    (modulo their size), then set or delete the chosen child of the last container reached."""
    out = copy.deepcopy(obj)
    node: Any = out
    steps = list(path) or [0]
    while True:
        i = steps.pop(0)
        if isinstance(node, dict):
            if not node:
                node["x"] = value
                return out
            key = sorted(node, key=str)[i % len(node)]
        elif isinstance(node, list):
            if not node:
                node.append(value)
                return out
            key = i % len(node)
        else:  # pragma: no cover - the walk never descends into a scalar
            return out
        child = node[key]
        if steps and isinstance(child, (dict, list)) and child:
            node = child
            continue
        if op == "delete":
            del node[key]
        else:
            node[key] = copy.deepcopy(value)
        return out


def random_junk(rng: random.Random) -> Any:
    """A plain-random counterpart of JUNK (for tests that want a fixed, seeded set of objects)."""
    pick = rng.randrange(9)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice((True, False))
    if pick == 2:
        return rng.choice((0, -1, 2**63, -(2**70), 10**30))
    if pick == 3:
        return rng.choice((0.5, -1e308, float("inf"), float("nan")))
    if pick == 4:
        return rng.choice(NASTY_STRINGS)
    if pick == 5:
        return [rng.choice(NASTY_STRINGS), 1, None]
    if pick == 6:
        return {rng.choice(NASTY_STRINGS): rng.choice(NASTY_STRINGS)}
    if pick == 7:
        return "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(1, 8)))
    return {}


def random_mutation(obj: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    path = [rng.randrange(64) for _ in range(rng.randrange(1, 9))]
    return mutate(obj, path, rng.choice(("set", "set", "delete")), random_junk(rng))
