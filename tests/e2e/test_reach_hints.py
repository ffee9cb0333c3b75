"""How to reach the simulated cluster from a second terminal: `sim serve` prints `export KUBECONFIG=`;
`taudash demo` writes its kubeconfig to a stable private path under the state dir, says so in the
dashboard's first notice, and removes it when the demo (and its cluster) ends."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import stat
import sys

from tools.paths import FIXTURES, REPO

from taudash.cli import main
from taudash.commands.sim import second_terminal


def test_second_terminal_line_quotes_the_path(tmp_path):
    assert second_terminal(tmp_path / "kc") == f"export KUBECONFIG={tmp_path / 'kc'}"
    odd = tmp_path / "a dir" / "kc"
    assert shlex.split(second_terminal(odd)) == ["export", f"KUBECONFIG={odd}"]


async def test_sim_serve_prints_the_export_line(tmp_path):
    kubeconfig = tmp_path / "out" / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taudash.cli", "sim", "serve", "--snapshot", str(FIXTURES / "sim-cluster.yaml"),
        "--kubeconfig-out", str(kubeconfig), "--no-controllers",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
    try:
        lines: list[str] = []
        while not any(line.startswith("Ctrl-C") for line in lines):
            line = await asyncio.wait_for(proc.stdout.readline(), 20)
            assert line, (await proc.stderr.read()).decode()
            lines.append(line.decode().strip())
        export = [ln for ln in lines if "export KUBECONFIG=" in ln]
        assert len(export) == 1 and f"export KUBECONFIG={kubeconfig}" in export[0] and "second terminal" in export[0]
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 10) == 0


def test_demo_writes_a_stable_private_kubeconfig_and_says_how_to_use_it(tmp_path, monkeypatch, capsys):
    import taudash.app

    state = tmp_path / "state"
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(state))
    seen: list = []

    async def run_async(self, *a, **kw):  # while the dashboard would run: the file is there, private
        path = state / "demo" / "kubeconfig"
        seen.append((self.notices, path.exists() and stat.S_IMODE(path.stat().st_mode),
                     stat.S_IMODE((state / "demo").stat().st_mode), path.read_text() if path.exists() else ""))

    monkeypatch.setattr(taudash.app.TaudashApp, "run_async", run_async)
    assert main(["demo", "--read-only"]) == 0
    assert main(["demo", "--read-only"]) == 0  # a second run: the same path
    path = state / "demo" / "kubeconfig"
    (notices, mode, dir_mode, text), (notices2, _, _, text2) = seen
    assert notices == notices2 and len(notices) == 1 and f"export KUBECONFIG={path}" in notices[0]
    assert mode == 0o600 and dir_mode == 0o700
    assert "https://127.0.0.1:" in text and "token" in text and text != text2  # a new cluster, a new token
    assert f"export KUBECONFIG={path}" in capsys.readouterr().err
    assert not path.exists()  # the cluster ended with the demo: no kubeconfig pointing at nothing


def test_demo_leaves_a_kubeconfig_another_demo_wrote(tmp_path, monkeypatch):
    import taudash.app

    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))
    path = tmp_path / "state" / "demo" / "kubeconfig"

    async def run_async(self, *a, **kw):  # another demo starts meanwhile and rewrites the file
        path.write_text("apiVersion: v1\nkind: Config\n# another demo's token\n")

    monkeypatch.setattr(taudash.app.TaudashApp, "run_async", run_async)
    assert main(["demo", "--read-only"]) == 0
    assert path.read_text().endswith("# another demo's token\n")
    os.unlink(path)


async def test_the_dashboard_shows_its_start_notices():
    from datetime import UTC, datetime

    from factories import dashboard_app

    from taudash.app import TaudashApp

    plain = dashboard_app(now=datetime(2026, 11, 30, 9, 5, tzinfo=UTC))
    app = TaudashApp(plain.session, clock=plain.clock, tick=3600.0, notices=("export KUBECONFIG=/x/kc",))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert [n.message for n in app._notifications if "KUBECONFIG" in n.message] == ["export KUBECONFIG=/x/kc"]
    async with plain.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert not [n for n in plain._notifications if "KUBECONFIG" in n.message]


async def test_sim_serve_fleet_prints_the_quoted_export_line(tmp_path):
    kubeconfig = tmp_path / "a dir" / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taudash.cli", "sim", "serve", "--fleet", "1", "--kubeconfig-out", str(kubeconfig),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
    try:
        lines: list[str] = []
        while not any(line.startswith("Ctrl-C") for line in lines):
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line, (await proc.stderr.read()).decode()
            lines.append(line.decode().strip())
        export = [ln for ln in lines if ln.startswith("export KUBECONFIG=")]
        assert len(export) == 1 and "second terminal" in export[0]
        assert shlex.split(export[0].split("   ")[0]) == ["export", f"KUBECONFIG={kubeconfig}"]  # a space survives
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.wait(), 20)  # (the fleet exits 130 on Ctrl-C, one cluster 0: not checked here)


def test_demo_fleet_says_how_to_reach_its_clusters(tmp_path, monkeypatch, capsys):
    import taudash.fleet_app

    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))
    seen: list = []

    async def run_async(self, *a, **kw):  # while the fleet dashboard would run: its kubeconfig is there
        seen.append(True)

    monkeypatch.setattr(taudash.fleet_app.FleetApp, "run_async", run_async)
    assert main(["demo", "--fleet", "1"]) == 0
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if "export KUBECONFIG=" in ln)
    assert seen and "second terminal" in line and "taudash-manager" in line
