"""Ages in kubectl's words (engine/text.py kube_duration): the simulator's Event ages, the Pods and events screens."""

from __future__ import annotations

import pytest

from taudash.engine.text import kube_duration


@pytest.mark.parametrize(("seconds", "words"), [
    (0, "0s"), (45, "45s"), (119, "119s"), (120, "2m"), (200, "3m20s"), (599, "9m59s"), (600, "10m"),
    (95 * 60, "95m"), (3 * 3600, "3h"), (5 * 3600 + 120, "5h2m"), (8 * 3600, "8h"), (30 * 3600, "30h"),
    (48 * 3600, "2d"), (3 * 86400 + 4 * 3600, "3d4h"), (8 * 86400, "8d"), (120 * 86400, "120d"),
    (2 * 365 * 86400 + 30 * 86400, "2y30d"), (9 * 365 * 86400 + 86400, "9y"),
])
def test_each_band_as_kubectl_prints_it(seconds, words):
    assert kube_duration(seconds) == words


def test_fractions_are_cut_and_a_clock_ahead_is_zero_not_negative():
    assert kube_duration(59.9) == "59s"
    assert kube_duration(-5) == "0s"
