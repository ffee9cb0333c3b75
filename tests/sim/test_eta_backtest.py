"""The ETA back-test harness on a short seeded simulator run (the full table: tests/sim/eta_backtest.py)."""

from __future__ import annotations

from eta_backtest import run


def test_backtest_scores_intervals_and_wider_intervals_cover_more():
    # Seed 2: 29 Workloads estimated (seed 1 has only 11 since the demo grew its GB200 pool, too few to tell).
    narrow = run(2, 40.0, hours=3, dispersion=1.0)
    wide = run(2, 40.0, hours=3)  # the calibrated dispersion
    assert narrow.estimated == wide.estimated > 10  # the same Workloads, seen pending with evidence
    assert narrow.covered + narrow.early + narrow.late == narrow.estimated
    assert len(wide.abs_errors) == wide.estimated and wide.median_abs_error is not None
    assert wide.coverage > narrow.coverage
