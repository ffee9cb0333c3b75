"""The soak's end checks on small hand-built data (taudash/bench/soak_check.py): the store against the server by
resourceVersion, the recorder's passes read back from its file, and its plots (taudash/bench/soak_plot.py)."""

from __future__ import annotations

import sqlite3

from factories import store_of, workload

from taudash.bench.soak_check import CountedRecorder, differing, digest, lost_passes, passes_read_back
from taudash.bench.soak_plot import Marker, write_plots
from taudash.engine.history import db as hdb
from taudash.engine.history.recorder import Observation

K = hdb.KEYFRAME_SECONDS
T0 = 1_796_000_000 // K * K
A = ("queue", "a", "", "", "pending")
B = ("queue", "b", "", "", "pending")


def test_objects_differ_when_missing_extra_or_at_another_resource_version():
    a, b = workload("a", "ns"), workload("b", "ns")
    store = store_of(a, b)
    rv = {o.name: o.metadata.resource_version or "" for o in store.list("Workload")}
    same = {"Workload": [["ns", "a", rv["a"]], ["ns", "b", rv["b"]]]}
    assert differing(same, store) == {}
    server = {"Workload": [["ns", "a", rv["a"] + "9"], ["ns", "c", "1"]]}  # a newer, b gone, c new
    assert differing(server, store) == {"Workload": ["ns/a", "ns/b", "ns/c"]}
    assert differing({"ClusterQueue": []}, store) == {}  # a kind the server has none of, nor the store


def test_every_committed_pass_reads_back_and_a_tampered_file_is_caught(tmp_path):
    path = tmp_path / "h.sqlite3"
    rec = CountedRecorder(path)
    passes = [(T0, {A: 1.0, B: 2.0}), (T0 + 10, {A: 1.0, B: 2.0}), (T0 + 20, {A: 3.0}), (T0 + K, {A: 3.0, B: None})]
    for ts, samples in passes:
        rec.write(Observation(now=ts, samples=samples))
    rec.write(Observation(now=T0 + K + 5))  # no sample due: not a pass
    assert [ts for ts, _ in rec.passes] == [ts for ts, _ in passes]
    assert passes_read_back(path) == {ts: digest(s) for ts, s in passes}
    assert lost_passes(rec.passes, path) == (0, 4)
    rec.close()

    conn = sqlite3.connect(path)  # a value overwritten, a pass dropped: both are lost passes
    conn.execute("UPDATE samples SET value = 5 WHERE ts = ?", (T0 + 20,))
    conn.execute("DELETE FROM sample_passes WHERE ts = ?", (T0 + 10,))
    conn.commit()
    conn.close()
    assert lost_passes(rec.passes, path) == (2, 4)


def test_a_null_reads_as_no_value():
    assert digest({A: 1.0, B: None}) == digest({A: 1.0}) != digest({A: 1.0, B: 0.0})


def samples(n: int) -> list[dict]:
    return [{"t": 5.0 * i, "wall": T0 + 5.0 * i, "rss_mib": 100 + i, "serve_rss_mib": 90.0, "fds": 40, "serve_fds": 30,
             "tick_gap_ms": 1000 + (i % 3) * 10, "render_ms": 3.0, **({"loop_lag_ms": 2.0} if i % 2 else {})}
            for i in range(n)]


def test_the_plots_without_matplotlib_are_the_history_screens_braille_plot_as_svg(tmp_path):
    paths = write_plots(samples(40), [Marker(30.0, "hang")], tmp_path, png=False)
    assert sorted(p.name for p in paths) == ["soak-descriptors.svg", "soak-latency.svg", "soak-rss.svg"]
    rss = (tmp_path / "soak-rss.svg").read_text()
    text = rss.replace("&#160;", " ")
    assert rss.startswith("<svg") and "Resident memory" in text and "taudash serve" in text
    assert any(chr(c) in rss for c in range(0x2801, 0x2900))  # braille dots drawn
    assert "simulator" not in text  # a series without a sample is left out of the legend


def test_the_png_plots(tmp_path):
    # matplotlib is optional for users (taudash[plots]) and part of the test extras
    paths = write_plots(samples(40), [Marker(30.0, "hang")], tmp_path, png=True)  # its font files closed after
    assert all(p.read_bytes().startswith(b"\x89PNG") and p.stat().st_size < 200_000 for p in paths)
