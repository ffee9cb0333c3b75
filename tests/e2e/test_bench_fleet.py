"""`taudash bench --fleet N`: the per-cluster table (sync, objects held, first view, RSS share) on a tiny fleet."""

from __future__ import annotations

import json

from taudash.cli import main


def test_fleet_bench_reports_every_cluster(capsys):
    assert main(["bench", "--fleet", "2", "--size", "S", "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["clusters"]
    assert [r["context"] for r in rows] == ["bench-1", "bench-2"]
    for r in rows:
        assert r["objects"] == out["objects"]  # each member holds the whole generated cluster
        assert r["syncSeconds"] > 0 and r["firstViewSeconds"] > 0
        assert r["syncSeconds"] == out["syncSecondsPerCluster"][r["context"]]
    growth = out["figures"]["fleet_rss_per_cluster_mib"]["value"] * 2
    assert abs(sum(r["rssShareMiB"] for r in rows) - growth) < 1.0  # the shares add up to the growth


def test_fleet_bench_table_names_the_estimate(capsys):
    assert main(["bench", "--fleet", "1", "--size", "S"]) == 0
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.startswith("cluster "))
    assert head.split() == ["cluster", "sync", "objects", "first", "view", "RSS", "share"]
    assert any(line.startswith("bench-1 ") for line in out.splitlines())
    assert "apportioned by objects held (estimate)" in out


def test_fleet_bench_via_agents_says_where_the_agents_run_and_passes_each_figure(capsys):
    assert main(["bench", "--fleet", "2", "--size", "S", "--via", "agents", "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "agents simulated in one process of their own" in out["via"] and out["fleet"] == 2
    figs = out["figures"]
    for key in ("agents_first_view_s", "agents_peak_rss_mib", "agents_others_not_live"):
        assert figs[key]["value"] is not None and figs[key]["target"] is not None, key
    assert figs["agents_others_not_live"]["pass"] is True  # one agent down left the other live
    assert figs["agents_down_stale_s"]["value"] > 0
    assert out["documentBytes"] > 0 and out["objects"] > 0


def test_via_agents_is_for_a_fleet_of_size_s_or_m(capsys):
    assert main(["bench", "--via", "agents"]) == 2
    assert "--via applies to --fleet N" in capsys.readouterr().err
    assert main(["bench", "--fleet", "2", "--size", "L", "--via", "agents"]) == 2
    assert "--size S or M" in capsys.readouterr().err
