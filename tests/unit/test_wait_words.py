"""The wait report in an operator's words (engine/units.py, engine/wait_words.py) and what a name that is
not a Workload's means (rules/why.py workloads_for): hand-built amounts and stores."""

from __future__ import annotations

import pytest
from factories import pod, rule_context, workload

from taudash.engine.rules.why import workloads_for
from taudash.engine.text import place
from taudash.engine.units import amount, amounts
from taudash.engine.wait_words import mode_words, plain, position_words


@pytest.mark.parametrize(("resource", "value", "words"), [
    ("cpu", "105520m", "105.5 cores"),
    ("cpu", "1", "1 core"),
    ("cpu", "-64930m", "-64.9 cores"),
    ("memory", "-1235497264Ki", "-1,178.3 GiB"),
    ("memory", "1600Gi", "1,600 GiB"),
    ("memory", "512Mi", "0.50 GiB"),
    ("ephemeral-storage", "1Gi", "1 GiB"),
    ("nvidia.com/gpu", "8", "8 GPUs"),
    ("nvidia.com/gpu", "1", "1 GPU"),
    ("amd.com/gpu", "0", "0 GPUs"),
    ("pods", "1992", "1,992 Pods"),
    ("tau.azure.com/torchrun-host-slot", "3", "3"),  # an extended resource: a plain count
])
def test_amounts_read_in_the_unit_the_resource_is_thought_of_in(resource, value, words):
    assert amount(resource, value) == words


def test_an_unknown_or_unreadable_amount_is_said_so_never_zero():
    assert amount("cpu", None) == "unknown"
    assert amount("memory", "twelve") == "unknown"
    assert amounts("nvidia.com/gpu", ["4", None, "x"], unknown="?") == ["4 GPUs", "?", "?"]


def test_positions_count_from_one_and_unknown_is_never_a_number():
    assert [place(0), place(4)] == ["#1", "#5"]
    assert place(None) == "?" and place(True) == "?"
    q = {"positionInClusterQueue": 0, "positionInLocalQueue": 2, "positionSource": "visibility", "positionNote": ""}
    assert position_words(q, "pending") == "#1 in ClusterQueue, #3 in LocalQueue (from Kueue's visibility API)"
    unknown = {**q, "positionInClusterQueue": None, "positionSource": "unknown", "positionNote": "forbidden"}
    assert position_words(unknown, "pending") == "unknown (forbidden)"
    assert position_words({**unknown, "positionNote": ""}, "admitted") == "-"


def test_a_short_flavor_is_said_together_with_whether_preemption_can_help():
    assert mode_words("Fit", False) == "fits now"
    assert "no preemption" in mode_words("Preempt", False)
    assert "preemption could make room" in mode_words("Preempt", True)
    assert "preemption unknown" in mode_words("Preempt", None)  # fail closed: never "could"
    assert mode_words("ExceedsMaxQuota", True) == "more than this queue can ever have"


def test_report_text_is_printed_inert():
    from taudash.engine.wait_words import report_lines

    d = {"workload": {"namespace": "ns", "name": "evil\x1b[2J", "owner": None, "priority": 0, "status": "pending",
                      "active": True},
         "queue": {"localQueue": None, "clusterQueue": None, "cohort": None, "queueingStrategy": None,
                   "positionInClusterQueue": None, "positionInLocalQueue": None, "positionSource": "unknown",
                   "positionNote": None},
         "reasons": [], "flavors": [], "ahead": [],
         "preemption": {"possible": None, "message": "unknown", "candidates": []}}
    text = plain(report_lines(d))
    assert "\x1b" not in text and "evil\\x1b[2J" in text


JOB = ("Job", "train-7b", "u1")


def test_a_jobs_name_means_the_workload_it_owns():
    ctx = rule_context([workload("job-train-7b-abc12", "ns", owner=JOB), workload("other", "ns")])
    assert workloads_for(ctx, "ns", "train-7b") == [("Job/train-7b", "job-train-7b-abc12")]


def test_a_pods_name_means_its_owners_workload():
    ctx = rule_context([workload("job-train-7b-abc12", "ns", owner=JOB),
                        pod("train-7b-0-xyz", "ns", node="n1", owner=JOB)])
    assert workloads_for(ctx, "ns", "train-7b-0-xyz") == [("Job/train-7b", "job-train-7b-abc12")]


def test_a_name_that_owns_nothing_or_lives_elsewhere_means_no_workload():
    ctx = rule_context([workload("job-train-7b-abc12", "other-ns", owner=JOB), workload("unowned", "ns")])
    assert workloads_for(ctx, "ns", "train-7b") == []
    assert workloads_for(ctx, "ns", "unowned") == []  # a Workload's own name is not an owner's


def test_several_workloads_of_one_name_are_all_listed():
    ctx = rule_context([workload("job-a-1", "ns", owner=("Job", "a", "u1")),
                        workload("rayjob-a-2", "ns", owner=("RayJob", "a", "u2"))])
    assert workloads_for(ctx, "ns", "a") == [("Job/a", "job-a-1"), ("RayJob/a", "rayjob-a-2")]
