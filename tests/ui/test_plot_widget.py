"""The braille plot (screens/widgets/plot.py): unknown is a gap or words, never a zero line."""

from __future__ import annotations

from taudash.screens.kit.text import _tones
from taudash.screens.widgets.plot import AXIS, BRAILLE, Trace, legend, nice_ceiling, plot_lines

TONES = _tones(())


def cells(lines):
    return [line.plain[AXIS:] for line in lines[:-1]]


def test_a_bucket_without_a_sample_draws_nothing_and_a_zero_draws_the_bottom_row():
    # 8 buckets on 4 columns (2 per cell): the middle two cells are unknown
    lines = plot_lines([Trace("r", [0, 0, None, None, None, None, 0, 0])], AXIS + 4, 3, TONES, start=0, end=3600)
    rows = cells(lines)
    assert len(lines) == 4 and all(len(r) == 4 for r in rows)
    assert rows[2][1] == rows[2][2] == " " and rows[0] == rows[1] == "    "
    assert rows[2][0] != " " and rows[2][3] != " "  # zero is drawn: the lowest dots
    assert ord(rows[2][0]) - BRAILLE == 0x40 | 0x80  # both columns, bottom dot row


def test_all_unknown_says_so_in_words_and_keeps_the_time_axis():
    lines = plot_lines([Trace("r", [None] * 10), Trace("b", [])], 60, 4, TONES, start=0, end=3600)
    text = "\n".join(line.plain for line in lines)
    assert "no samples recorded in this range" in text and "⣀" not in text
    assert lines[-1].plain.strip().startswith("└00:00") and lines[-1].plain.endswith("01:00 UTC")


def test_the_axis_top_is_a_round_number_at_or_above_the_peak():
    assert [nice_ceiling(v) for v in (0, 0.4, 1, 3, 13, 24, 64, 101, 2400)] == [1, 1, 1, 5, 20, 25, 100, 200, 2500]
    top = plot_lines([Trace("r", [13, 64])], 30, 3, TONES, start=0, end=60)[0].plain
    assert top.startswith("  100 │")


def test_bars_fill_from_zero_and_lines_join_their_points():
    bars = cells(plot_lines([Trace("n", [0, 5], bars=True)], AXIS + 1, 1, TONES, start=0, end=60))
    assert ord(bars[0][0]) - BRAILLE == 0x08 | 0x10 | 0x20 | 0x80  # right column full, left (zero) empty
    line = cells(plot_lines([Trace("n", [0, 5])], AXIS + 1, 1, TONES, start=0, end=60))
    assert ord(line[0][0]) - BRAILLE == 0x40 | 0x08 | 0x10 | 0x20 | 0x80  # the step is joined


def test_the_legend_names_every_series_with_its_mark():
    t = legend([Trace("reserved", [1]), Trace("evictions", [1], "warn", bars=True)], TONES).plain
    assert t == "━ reserved  ▇ evictions"
