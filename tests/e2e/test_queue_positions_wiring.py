"""`taudash demo` wires the ClusterQueue detail to Kueue's visibility API: the session's queue_positions
asks the simulator's endpoint through the live source while the dashboard runs."""

from __future__ import annotations

import taudash.app
from taudash.cli import main
from taudash.engine.rules.queue_order import FROM_API


def test_demo_session_fetches_positions_from_the_visibility_api(monkeypatch, tmp_path):
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path))
    seen = []

    async def run_async(self, *a, **kw):  # instead of the terminal UI: one fetch while the source is live
        seen.append(await self.session.queue_positions(cq="tau-ws-train"))

    monkeypatch.setattr(taudash.app.TaudashApp, "run_async", run_async)
    assert main(["demo", "--read-only"]) == 0
    (pos,) = seen
    assert pos.source == FROM_API and pos.access == "Synced" and pos.items
    assert [i["positionInClusterQueue"] for i in pos.items] == list(range(len(pos.items)))
