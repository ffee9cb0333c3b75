"""The palette's prefilter (screens/kit/palette.py `in_order`): it may only rule out labels the fuzzy scorer could
never match — those without the query's characters in order."""

from __future__ import annotations

import pytest
from textual.fuzzy import FuzzySearch

from taudash.screens.kit.palette import in_order

LABELS = ["Workload train/job-llama-pretrain-34b-31d4a", "Pod eval/prep-4-x7k2p", "ClusterQueue tau-ws-train",
          "what if I submit this… (W)", "Node aks-h100-27604139-vmss000003", "Job eval/[bold]x"]


@pytest.mark.parametrize("query", ["llama", "wl llama", "tws", "what if", "WHAT IF", "h100 03", "[bold", "p4", "zzz",
                                   "trainllama", "x.*", "a+b"])
def test_it_keeps_every_label_the_fuzzy_scorer_matches(query):
    fuzzy = FuzzySearch()
    for label in LABELS:
        if fuzzy.match(query, label)[0] > 0:
            assert in_order(query).search(label), (query, label)


def test_it_rules_out_labels_without_the_characters_in_order():
    assert in_order("llama").search(LABELS[0]) and not in_order("amall").search(LABELS[0])
    assert not in_order("zzz").search(LABELS[1])
    assert in_order("x.*").search("Job eval/x.*y") and not in_order("x.*").search("Job eval/xy")  # literal, no regex
