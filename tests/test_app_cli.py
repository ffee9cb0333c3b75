"""`taudash demo`, `taudash --snapshot F` open the dashboard read-only; `taudash` without a source
explains in one line that the live dashboard is not wired yet (exit 2); status/check keep working."""

from __future__ import annotations

from pathlib import Path

import pytest

import taudash.app
from taudash.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "ui-demo.yaml"


@pytest.fixture
def opened(monkeypatch):
    """Replace the terminal UI with a recorder of the app it would have run."""
    apps: list = []
    monkeypatch.setattr(taudash.app.TaudashApp, "run", lambda self, *a, **kw: apps.append(self))
    return apps


def test_snapshot_opens_a_read_only_dashboard(opened):
    assert main(["--snapshot", str(FIXTURE), "--system-namespace", "tau-system"]) == 0
    (app,) = opened
    s = app.session
    assert s.read_only and s.mode == "SNAPSHOT" and s.source.context == "aks-eastus-prod"
    assert s.config.system_namespace == "tau-system"


def test_demo_opens_the_demo_snapshot_in_demo_mode(opened):
    assert main(["demo"]) == 0
    (app,) = opened
    assert app.session.read_only and app.session.mode == "DEMO"
    assert app.session.store.count("TauWorkspace") > 0


def test_no_source_says_the_live_dashboard_is_not_wired(opened, capsys):
    assert main([]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "live" in err and "--snapshot" in err and "demo" in err
    assert main(["--context", "prod"]) == 2
    assert "--context prod" in capsys.readouterr().err
    assert not opened


def test_bad_snapshot_is_one_line_exit_2(opened, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    assert main(["--snapshot", str(bad)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1 and not opened


def test_status_and_check_still_work(capsys):
    assert main(["status", "--snapshot", str(FIXTURE), "-o", "json"]) == 0
    assert '"kind": "ClusterStatus"' in capsys.readouterr().out
    assert main(["check", "--snapshot", str(FIXTURE)]) == 1  # the fixture has critical findings
