"""The what-if back-test harness on short seeded runs (the full table: tests/sim/whatif_backtest.py)."""

from __future__ import annotations

from whatif_backtest import run


def test_without_arrivals_the_immediate_predictions_are_exact():
    # Nothing arrives between the fork and the real submission: starts-now and flavor follow from the same
    # objects and the same admission code, so every one must match.
    r = run(2, 0.0, hours=0.25, every=300.0, tail_hours=0.5, horizon=1800.0)
    assert len(r.cases) == 3
    hit, n = r.starts_now_right
    assert n == 3 and hit == n
    hit, n = r.flavor_right
    assert n >= 1 and hit == n


def test_scores_add_up_with_arrivals():
    r = run(1, 20.0, hours=0.25, every=300.0, tail_hours=0.5, horizon=1800.0)
    hit, n = r.starts_now_right
    assert n == sum(c.predicted["admissible"] for c in r.cases) and 0 <= hit <= n
    covered, estimated = r.eta_covered
    assert 0 <= covered <= estimated <= n
    assert all(e >= 0 for e in r.fork_errors)
