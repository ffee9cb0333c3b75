"""Moving a snapshot's timestamps (taudash/sim/rebase.py): every whole RFC3339 timestamp moved by the same amount,
in the form it had; anything else left as it was."""

from __future__ import annotations

import pytest

from taudash.sim.rebase import shift_stamp, shift_times

HOUR = 3600.0


@pytest.mark.parametrize("before, after", [
    ("2026-11-30T09:00:00Z", "2026-11-30T10:00:00Z"),
    ("2026-11-30T23:30:00Z", "2026-12-01T00:30:00Z"),  # over a day and a month
    ("2026-11-30T09:00:00.123456Z", "2026-11-30T10:00:00.123456Z"),  # metav1.MicroTime keeps its six digits
    ("2026-11-30T09:00:00.5Z", "2026-11-30T10:00:00.5Z"),
    ("2026-11-30T09:00:00+02:00", "2026-11-30T10:00:00+02:00"),  # an offset stays the offset it was
])
def test_a_timestamp_moves_and_keeps_its_form(before, after):
    assert shift_stamp(before, HOUR) == after
    assert shift_stamp(after, -HOUR) == before


@pytest.mark.parametrize("text", [
    "2026-11-30",  # a date alone is no instant
    "2026-11-30T09:00:00",  # no zone: not RFC3339
    "2026-13-45T09:00:00Z",  # not a date at all
    "since 2026-11-30T09:00:00Z",  # a timestamp inside a sentence is the sentence's
    "tau-ws-train", "", "12",
])
def test_anything_else_is_left_as_it_was(text):
    assert shift_stamp(text, HOUR) == text


def test_every_timestamp_of_an_object_moves_and_the_rest_is_a_copy():
    obj = {"metadata": {"name": "w", "creationTimestamp": "2026-11-30T09:00:00Z",
                        "annotations": {"note": "2026-11-30T08:00:00Z", "size": "8"}},
           "status": {"conditions": [{"type": "QuotaReserved", "lastTransitionTime": "2026-11-30T09:05:00Z",
                                      "message": "reserved at 2026-11-30T09:05:00Z"}], "count": 3}}
    out = shift_times(obj, 2 * HOUR)
    assert out["metadata"]["creationTimestamp"] == "2026-11-30T11:00:00Z"
    assert out["metadata"]["annotations"] == {"note": "2026-11-30T10:00:00Z", "size": "8"}
    cond = out["status"]["conditions"][0]
    assert cond["lastTransitionTime"] == "2026-11-30T11:05:00Z"
    assert cond["message"] == "reserved at 2026-11-30T09:05:00Z" and out["status"]["count"] == 3
    assert obj["metadata"]["creationTimestamp"] == "2026-11-30T09:00:00Z"  # the input is untouched
