"""The dashboard's "what if I submit this?" modal (docs/whatif.md): W (or the palette) opens it, a pasted manifest
or a path is predicted on a simulated fork of the session's store in a worker, the prediction is shown; nothing
is written, so it works on a read-only snapshot session."""

from __future__ import annotations

from datetime import UTC, datetime

import factories
import yaml
from factories import dashboard_app
from textual.widgets import Input, Static, TextArea
from tools.waiting import eventually, palette_results

from taudash.screens.kit.whatif import WhatIfScreen

NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
SIZE = (120, 36)


def train_job(gpus: int) -> dict:
    job = factories.job("try-me", "train", queue="jobqueue", gpus=gpus,
                        selector={"tau.azure.com/gpu-class": "h100-80gb"})
    job["spec"]["template"]["spec"]["tolerations"] = [
        {"effect": "NoSchedule", "key": "sku", "operator": "Equal", "value": "gpu"}]
    return job


async def predicted(pilot, screen: WhatIfScreen) -> None:
    await pilot.press("ctrl+r")
    # the worker predicts in its own thread: wait on the answer with a deadline, not a timing
    await eventually(lambda: screen.prediction is not None or screen.error is not None, within=120)
    await pilot.pause()


def test_whatif_modal_snapshot(snap_compare):
    async def paste_and_predict(pilot):
        await pilot.press("W")
        await pilot.pause()
        screen = pilot.app.screen
        screen.query_one("#wi-yaml", TextArea).text = yaml.safe_dump(train_job(64), sort_keys=True)
        await predicted(pilot, screen)
        assert screen.prediction is not None, screen.error

    assert snap_compare(dashboard_app(now=NOW), run_before=paste_and_predict, terminal_size=SIZE)


async def test_whatif_keys_on_a_read_only_snapshot(tmp_path):
    app = dashboard_app(now=NOW)  # a snapshot: read-only, its write path holds no client
    assert app.session.read_only
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("W")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, WhatIfScreen)
        body = screen.query_one("#wi-body", Static)

        await pilot.press("ctrl+r")  # nothing given: said, nothing asked of the app
        await pilot.pause()
        assert screen.error == "nothing to predict: paste a manifest or give a path"

        screen.query_one("#wi-yaml", TextArea).text = "kind: Pod\n"
        await predicted(pilot, screen)
        assert "kind 'Pod'" in (screen.error or "") and screen.prediction is None
        assert "kind 'Pod'" in str(body.render())

        path = tmp_path / "job.yaml"
        path.write_text(yaml.safe_dump(train_job(2)))
        screen.query_one("#wi-path", Input).value = str(path)  # a path wins over the pasted text
        await predicted(pilot, screen)
        doc = screen.prediction
        assert doc is not None and screen.error is None
        assert doc["prediction"]["startsNow"] is True and doc["writesToCluster"] == 0
        assert doc["metadata"]["forkedAt"] == "2026-11-30T09:00:00+00:00"  # a snapshot is judged when captured
        assert "✓ starts now" in str(body.render())

        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, WhatIfScreen)
        await pilot.press("W")
        await pilot.pause()
        assert isinstance(app.screen, WhatIfScreen) and app.screen.prediction is None  # a fresh modal


async def test_the_palette_opens_the_modal():
    app = dashboard_app(now=NOW)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        for ch in "what if":
            await pilot.press("space" if ch == " " else ch)
        await palette_results(pilot, "what if", expect="what if I submit")
        await pilot.press("enter")
        await eventually(lambda: isinstance(app.screen, WhatIfScreen), within=30)
        assert isinstance(app.screen, WhatIfScreen)


async def test_a_prediction_on_a_live_session_is_kept_beside_its_history(tmp_path):
    """As `taudash whatif` keeps its predictions: the History screen and `history whatif` then hold it against what
    happens. A local file, written whatever the session's mode; a snapshot session keeps none (no cluster)."""
    from taudash.engine.history import whatif as kept
    from taudash.engine.history.reader import HistoryReader

    reader = HistoryReader(tmp_path / "never-created.sqlite3", "live-key", tmp_path)
    app = dashboard_app(now=NOW, writable=True, history_reader=reader)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("W")
        await pilot.pause()
        screen = app.screen
        screen.query_one("#wi-yaml", TextArea).text = yaml.safe_dump(train_job(2))
        await predicted(pilot, screen)
        assert screen.prediction is not None, screen.error
        pid = screen.prediction["metadata"]["id"]
        assert [d["metadata"]["id"] for d in kept.load_all("live-key", tmp_path)] == [pid]
        assert f"kept as {pid}" in str(screen.query_one("#wi-body", Static).render())

    snap = dashboard_app(now=NOW, history_reader=HistoryReader(tmp_path / "x.sqlite3", "snap-key", tmp_path))
    async with snap.run_test(size=SIZE) as pilot:
        await pilot.press("W")
        await pilot.pause()
        screen = snap.screen
        screen.query_one("#wi-yaml", TextArea).text = yaml.safe_dump(train_job(2))
        await predicted(pilot, screen)
        assert screen.prediction is not None
        assert kept.load_all("snap-key", tmp_path) == []
        assert "kept as" not in str(screen.query_one("#wi-body", Static).render())
