"""`taudash --snapshot F` opens the dashboard read-only; `taudash demo` opens it on the simulator
through the live source (writable unless --read-only); `taudash` / `--context` open a live cluster
and explain a missing kubeconfig or context in one line (exit 2); status/check keep working."""

from __future__ import annotations

from tools.paths import FIXTURES

from taudash.cli import main

FIXTURE = FIXTURES / "ui-demo.yaml"


def test_snapshot_opens_a_read_only_dashboard(no_terminal_ui):
    assert main(["--snapshot", str(FIXTURE), "--system-namespace", "tau-system"]) == 0
    (app,) = no_terminal_ui
    s = app.session
    assert s.read_only and s.mode == "SNAPSHOT" and s.source.context == "aks-eastus-prod"
    assert s.config.system_namespace == "tau-system"


def test_demo_opens_the_simulator_through_the_live_source(no_terminal_ui, tmp_path, monkeypatch):
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path))
    assert main(["demo"]) == 0
    (app,) = no_terminal_ui
    s = app.session
    assert s.mode == "DEMO" and s.source.type == "sim" and s.source.path.startswith("https://127.0.0.1:")
    assert not s.read_only and s.actions.writable  # a simulator is safe to rehearse on
    assert s.store.count("TauWorkspace") == 3 and s.store.readable("ClusterQueue")
    # its runs are journaled where the CLI's are: a CLI run on the demo cluster and the demo's see each other
    assert app.workflows.directory() == tmp_path / "workflows"


def test_demo_read_only_has_no_write_path(no_terminal_ui):
    assert main(["demo", "--read-only"]) == 0
    (app,) = no_terminal_ui
    assert app.session.read_only and not app.session.actions.writable


def test_live_dashboard_without_kubeconfig_or_context_is_one_line_exit_2(no_terminal_ui, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert main([]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no such file" in err and "taudash demo" in err
    from taudash.sim.kubeconfig import write_kubeconfig

    kc = write_kubeconfig(tmp_path / "kc", "https://127.0.0.1:9", "t", "staging")
    assert main(["--kubeconfig", str(kc), "--context", "prod"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'prod'" in err and "staging" in err
    assert not no_terminal_ui


def test_bad_snapshot_is_one_line_exit_2(no_terminal_ui, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    assert main(["--snapshot", str(bad)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1 and not no_terminal_ui


def test_status_and_check_still_work(capsys):
    assert main(["status", "--snapshot", str(FIXTURE), "-o", "json"]) == 0
    assert '"kind": "ClusterStatus"' in capsys.readouterr().out
    assert main(["check", "--snapshot", str(FIXTURE)]) == 1  # the fixture has critical findings
