"""`taudash bench --soak` for 36 s with a fault every 4 s (taudash/bench/soak.py): every kind of fault is injected at
least once, and what the soak checks at the end holds — the store equals the server, the findings equal a fresh
list's, the recorder's passes read back, no history error with serve standing by. Timings and memory are the
bench's to judge (the one-hour run: docs/reliability.md), not asserted here."""

from __future__ import annotations

import json

from taudash.bench.soak import FAULTS, soak


async def test_a_short_soak_injects_every_fault_and_ends_consistent(tmp_path):
    # 36 s for the seven kinds every 4 s: one slot to spare, for a busy machine where an injection runs late
    result = await soak("S", 0.6, 4.0, tmp_path / "out", progress=lambda _: None)
    figs = result["figures"]
    assert {f["name"] for f in result["faults"]} == set(FAULTS)
    assert figs["faults"]["value"] == len(result["faults"]) >= len(FAULTS)
    for key in ("objects_differing", "recorder_rows_lost", "history_errors", "findings_wrong"):
        assert figs[key]["value"] == 0 and figs[key]["pass"] is True, (key, figs[key])
    assert "sample passes committed" in figs["recorder_rows_lost"]["note"]
    assert not figs["recorder_rows_lost"]["note"].startswith("0 ")  # the recorder did commit passes
    assert result["serveExit"] == 0 and result["viewer"]["connects"] >= 1 and result["viewer"]["bytes"] > 0
    assert all(set(f) >= {"label", "value", "unit", "target", "pass", "note"} for f in figs.values())
    written = json.loads((tmp_path / "out" / "soak.json").read_text())
    assert written["figures"] == figs and len(written["plots"]) == 3
    assert all((tmp_path / "out" / p).exists() for p in written["plots"])
    serve_log = (tmp_path / "out" / "serve.log").read_text()
    assert "is recorded by taudash (the soak's dashboard)" in serve_log  # serve stood by: one writer
