"""profileSetHash must match the Go controller byte for byte (TauGrid's ProfileSetHash)."""

from __future__ import annotations

import hashlib

import pytest

from taudash.engine.model.tau import ResolvedWorkloadProfile
from taudash.engine.rules.profilehash import (
    ProfileHashError,
    canonical_json,
    go_json,
    normalize_label,
    normalize_name,
    normalize_profile,
    profile_set_hash,
    validate_profile,
)

# Deliberately un-normalised input: names, lists and case all need the controller's normalisation.
RAW = [
    {
        "name": "  Team_A Train.1x. ",
        "description": "  GPUs <fast> & cheap \u2014 \u00fcn\u00efc\u00f6d\u00e9\u2028next line\u2029\t ",
        "applicability": {"teams": ["Research", "alpha_team"], "namespaces": ["NS.B", "ns-a"]},
        "gpusPerWorker": 0,
        "workerCount": 2,
        "mode": "Fixed",
        "placement": "Same_Host",
        "defaultLocalQueue": "JobQueue",
        "priorities": {"disableDefaultPriorities": True},
        "localQueues": [
            {"namespace": "ns.b", "name": "jobqueue", "clusterQueue": "CQ-B"},
            {"namespace": "ns-a", "name": "jobqueue", "clusterQueue": "cq-a"},
        ],
        "clusterQueues": ["cq-b", "CQ-A", "cq-a", ""],
        "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 3}],
    },
    {
        "name": "a<b>&c",
        "applicability": {},
        "gpusPerWorker": 8,
        "workerCount": 1,
        "mode": "elastic",
        "placement": "unconstrained",
        "defaultLocalQueue": "q",
        "executionTarget": "MULTIKUEUE",
        "priorities": {"workloadPriorityClassName": "High", "podPriorityClassName": "high "},
        "clusterQueues": ["mk"],
        "resourceFlavors": ["f1"],
        "topologies": ["t"],
        "workloadPriorityClasses": ["high"],
        "podPriorityClasses": ["HIGH"],
    },
]

# Written by hand from the controller's hash rules: sorted by name; declared fields inline in Go declaration order;
# applicability and priorities always present; empty description/lists omitted; zero ints kept;
# <, >, & and U+2028 escaped; other non-ASCII raw UTF-8; the trailing U+2029/tab trimmed (Go
# TrimSpace counts U+2029 as space); conditions absent.
EXPECTED = (
    '[{"name":"a\\u003cb\\u003e\\u0026c","applicability":{},"gpusPerWorker":8,"workerCount":1,'
    '"mode":"elastic","placement":"unconstrained","defaultLocalQueue":"q","executionTarget":"multiKueue",'
    '"priorities":{"workloadPriorityClassName":"high","podPriorityClassName":"high"},'
    '"clusterQueues":["mk"],"resourceFlavors":["f1"],"topologies":["t"],'
    '"workloadPriorityClasses":["high"],"podPriorityClasses":["high"]},'
    '{"name":"team-a-train.1x","description":"GPUs \\u003cfast\\u003e \\u0026 cheap \u2014 \u00fcn\u00efc\u00f6d\u00e9'
    '\\u2028next line","applicability":{"teams":["alpha-team","research"],"namespaces":["ns-a","ns.b"]},'
    '"gpusPerWorker":0,"workerCount":2,"mode":"fixed","placement":"same-host","defaultLocalQueue":"jobqueue",'
    '"executionTarget":"singleCluster","priorities":{"disableDefaultPriorities":true},'
    '"localQueues":[{"namespace":"ns-a","name":"jobqueue","clusterQueue":"cq-a"},'
    '{"namespace":"ns.b","name":"jobqueue","clusterQueue":"cq-b"}],"clusterQueues":["cq-a","cq-b"]}]'
)
# The same input hashed by a Go program (encoding/json, json.Marshal) during development.
GO_DIGEST = "d778512e86b76e66a6c488d1362b8611a33d0eeeccfa4454b34e2f7947af0bfd"


def test_canonical_bytes_match_hand_written_go_encoding():
    assert canonical_json(RAW) == EXPECTED.encode("utf-8")


def test_hash_is_sha256_lowercase_hex_of_those_bytes():
    h = profile_set_hash([ResolvedWorkloadProfile.model_validate(p) for p in RAW])
    assert h == hashlib.sha256(EXPECTED.encode("utf-8")).hexdigest()
    assert h == GO_DIGEST
    assert len(h) == 64 and h == h.lower()


def test_non_ascii_is_raw_utf8_not_escaped():
    raw = canonical_json(RAW)
    assert "ünïcödé".encode() in raw
    assert b"\\u00fc" not in raw
    assert "\u2028".encode() not in raw  # always escaped


def test_empty_set_hashes_the_empty_array():
    assert canonical_json([]) == b"[]"
    assert profile_set_hash([]) == hashlib.sha256(b"[]").hexdigest()


def test_order_and_conditions_do_not_matter():
    a, b = RAW
    b_with_conds = dict(b, conditions=[{"type": "Ready", "status": "False", "message": "<nope>"}])
    assert profile_set_hash([b_with_conds, a]) == GO_DIGEST


def test_every_declared_or_resolved_field_changes_the_hash():
    base = profile_set_hash(RAW)
    for key, value in [
        ("description", "other"),
        ("gpusPerWorker", 1),
        ("workerCount", 3),
        ("mode", "elastic"),
        ("placement", "same-site"),
        ("defaultLocalQueue", "other"),
        ("executionTarget", "multiKueue"),
        ("resourceFlavors", ["x"]),
        ("topologies", ["x"]),
        ("workloadPriorityClasses", ["x"]),
        ("podPriorityClasses", ["x"]),
        ("localQueues", [{"namespace": "n", "name": "q", "clusterQueue": "c"}]),
        ("applicability", {"lanes": ["training"]}),
    ]:
        changed = [dict(RAW[0], **{key: value}), RAW[1]]
        assert profile_set_hash(changed) != base, key


def test_control_characters_and_quotes_use_go_escapes():
    # Go ≥1.22 writes \b and \f short; other C0 controls as lowercase \u00XX; DEL stays raw.
    assert go_json('q"\\/\b\f\n\r\t\x01\x1f\x7f') == '"q\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f"'
    assert go_json("<a&b>\u2028\u2029") == '"\\u003ca\\u0026b\\u003e\\u2028\\u2029"'
    assert go_json({"b": [1, True, False, None], "a": ""}) == '{"b":[1,true,false,null],"a":""}'


def test_normalisation_follows_go_string_rules():
    assert normalize_name("  .My_Queue Name.  ") == "my-queue-name"
    assert normalize_label(".Lane_X.") == ".lane-x."  # labels keep their dots
    # Go lowercases rune by rune (simple mapping): İ → i, final Σ → σ.
    assert normalize_label("İΣ") == "iσ"
    # U+001C is whitespace to Python but not to Go; NBSP is whitespace to both.
    assert normalize_label("\x1cA\u00a0") == "\x1ca"


def test_resolved_sets_are_deduplicated_but_applicability_lists_are_not():
    p = normalize_profile(
        {
            "name": "p",
            "applicability": {"teams": ["B", "a", "b"]},
            "clusterQueues": ["B", "a", "b", " "],
        }
    )
    assert p.applicability.teams == ["a", "b", "b"]  # validation rejects the duplicate
    assert p.cluster_queues == ["a", "b"]
    assert validate_profile(p) is not None


def test_duplicate_profile_name_after_normalisation_is_an_error():
    with pytest.raises(ProfileHashError, match="duplicate workload profile"):
        profile_set_hash([RAW[1], dict(RAW[1], name="A<B>&C")])


def test_duplicate_local_queue_pair_is_an_error():
    lq = [{"namespace": "ns", "name": "q", "clusterQueue": "a"}, {"namespace": "NS", "name": "Q", "clusterQueue": "b"}]
    with pytest.raises(ProfileHashError, match="duplicate resolved LocalQueue ns/q"):
        profile_set_hash([dict(RAW[1], localQueues=lq)])


def test_validate_profile_accepts_a_controller_valid_profile():
    p = normalize_profile(
        {
            "name": "research.training.1x",
            "applicability": {"teams": ["research"], "lanes": ["training"], "namespaces": ["research-workloads"]},
            "gpusPerWorker": 1,
            "workerCount": 1,
            "mode": "fixed",
            "placement": "unconstrained",
            "defaultLocalQueue": "jobqueue",
            "priorities": {"workloadPriorityClassName": "taugrid-default", "podPriorityClassName": "taugrid-default"},
        }
    )
    assert validate_profile(p) is None
    assert "DNS-1123" in validate_profile(normalize_profile(RAW[1]))
