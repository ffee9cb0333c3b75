"""Faults per cluster from the command line (docs/fleet.md): `sim serve --fleet N --fault …` and `demo --fleet
--fault …` parse and check them (exit 2 naming the bad part), apply them, and take changes at run time
through the control file they print."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from datetime import UTC, datetime

import pytest
from tools.paths import REPO
from tools.waiting import eventually

from taudash.cli import build_parser, main
from taudash.fleet_app import FleetApp


@pytest.mark.parametrize(("argv", "said"), [
    (["sim", "serve", "--fleet", "2", "--fault", "worker-1"], "'worker-1': expected CLUSTER=FAULT"),
    (["sim", "serve", "--fleet", "2", "--fault", "worker-1=explode"], "unknown fault 'explode'"),
    (["sim", "serve", "--fleet", "2", "--fault", "worker-3=down"], "no cluster 'worker-3'"),
    (["sim", "serve", "--fleet", "2", "--fault", "worker-1=slow"], "slow needs an argument"),
    (["sim", "serve", "--fleet", "2", "--fault", "worker-1=slow:fast"], "'fast' is not a duration"),
    (["sim", "serve", "--fleet", "2", "--fault", "worker-1=slow:0s"], "a duration from 1ms to 1h"),
    (["sim", "serve", "--fleet", "2", "--fault", "manager=forbidden:Gizmo"], "unknown resource 'Gizmo'"),
    (["sim", "serve", "--fleet", "2", "--fault", "worker-1=down:now"], "down takes no argument"),
    (["sim", "serve", "--fault", "worker-1=down"], "add --fleet N"),
    (["demo", "--fleet", "1", "--fault", "worker-2=hang"], "no cluster 'worker-2'"),
    (["demo", "--fault", "worker-1=down"], "add --fleet N"),
])
def test_bad_faults_are_exit_2_naming_the_bad_part(capsys, cli_env, argv, said):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and err.startswith("taudash: --fault ")


def test_help_shows_the_syntax_with_an_example(capsys):
    for argv in (["sim", "serve", "--help"], ["demo", "--help"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(argv)
        out = " ".join(capsys.readouterr().out.split())
        assert "--fault CLUSTER=FAULT" in out and "--fault worker-1=down --fault worker-2=slow:5s" in out


def test_demo_fleet_faults_from_the_cli_then_changed_at_run_time(monkeypatch, cli_env, capsys):
    """`demo --fleet 2 --fault worker-1=hang --fault manager=forbidden:Workload`: worker-1 never answers
    (unreachable), the manager's Workloads are forbidden (its row stale on that kind only), worker-2 live.
    Then the control file the demo names hangs worker-2 instead: worker-2 turns stale within the bound of
    the config file ("no answer for N s"), worker-1 comes back live."""
    (cli_env / "taudash.yaml").write_text("fleet:\n  freshnessBound: 3\n")
    monkeypatch.setenv("TAUDASH_CONFIG", str(cli_env / "taudash.yaml"))
    seen: dict[str, object] = {}

    async def run_async(self):
        mgr, w1, w2 = self.fleet.members
        seen["bound"] = w1.freshness_bound

        def fresh(m):
            return m.frame(datetime.now(UTC)).freshness if m.state == "live" else None

        assert await eventually(lambda: mgr.state == "live" and w2.state == "live")
        assert await eventually(lambda: [p.kind for p in fresh(mgr).problems] == ["Workload"])
        assert not fresh(mgr).unreachable  # a 403 on one kind is not an outage: the probe is answered
        assert await eventually(lambda: w1.state == "unreachable", within=60)
        f2 = fresh(w2)
        assert f2 is not None and not f2.unreachable and not f2.problems
        err = capsys.readouterr().err
        control = next(line.split(" > ", 1)[1].split()[0] for line in err.splitlines() if " > " in line)
        with open(control, "w") as fh:
            fh.write("worker-2=hang\nworker-1=up\n")
        assert await eventually(lambda: any("faults rejected (line 2: 'worker-1=up': unknown fault 'up'" in m
                                            for m in told))
        assert w1.state == "unreachable"  # a rejected change changes nothing
        with open(control, "w") as fh:
            fh.write("worker-2=hang\n")
        assert await eventually(lambda: "faults applied: worker-2=hang" in told)
        assert await eventually(lambda: (f := fresh(w2)) is not None and f.unreachable, within=60)
        seen["w2"] = fresh(w2).unreachable_why
        assert await eventually(lambda: w1.state == "live", within=60)
        assert not fresh(w1).unreachable
        assert await eventually(lambda: not fresh(mgr).problems)  # the 403 is lifted with the change

    told: list[str] = []
    monkeypatch.setattr(FleetApp, "run_async", run_async)
    monkeypatch.setattr(FleetApp, "notify", lambda self, message, **kw: told.append(message))
    assert main(["demo", "--fleet", "2", "--fault", "worker-1=hang", "--fault", "manager=forbidden:Workload"]) == 0
    assert seen["bound"] == 3.0
    assert str(seen["w2"]).startswith("no answer for ")


def test_a_bad_freshness_bound_is_exit_2(monkeypatch, cli_env, capsys):
    (cli_env / "taudash.yaml").write_text("fleet:\n  freshnessBound: soon\n")
    monkeypatch.setenv("TAUDASH_CONFIG", str(cli_env / "taudash.yaml"))
    assert main(["--context", "a", "--context", "b", "--kubeconfig", str(cli_env / "kc")]) == 2
    assert "fleet.freshnessBound must be a number of seconds" in capsys.readouterr().err


async def _status(kubeconfig: str, config: str) -> dict:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taudash.cli", "status", "--all-contexts", "-o", "json", "--kubeconfig", kubeconfig,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "TAUDASH_CONFIG": config, "HOME": "/nonexistent"})
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    reachable = {c["context"]: c["reachable"] for c in json.loads(out)["clusters"]}
    assert proc.returncode == (0 if all(reachable.values()) else 3), err.decode()  # 3: a cluster did not answer
    return reachable


async def test_sim_serve_fleet_faults_and_the_control_file(tmp_path):
    kubeconfig = tmp_path / "kc"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taudash.cli", "sim", "serve", "--fleet", "2", "--kubeconfig-out", str(kubeconfig),
        "--fault", "worker-1=down", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
    try:
        lines: list[str] = []
        while not any(line.startswith("Ctrl-C") for line in lines):
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line, (await proc.stderr.read()).decode()
            lines.append(line.decode().rstrip())
        text = "\n".join(lines)
        assert "faults:     worker-1=down; change them while it runs:" in text
        control = tmp_path / "kc.faults"
        assert f"echo worker-1=down > {control}" in text
        assert control.read_text().splitlines()[-1] == "worker-1=down"
        config = next(line.split("=", 1)[1].split()[0] for line in lines if line.startswith("export TAUDASH_CONFIG"))
        assert await _status(str(kubeconfig), config) == {"taudash-manager": True, "taudash-worker-1": False,
                                                          "taudash-worker-2": True}
        # a bad line rejects the whole change; the faults in force stay
        control.write_text("worker-2=down\nworker-1=sideways\n")
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line.startswith("taudash sim: faults rejected (line 2: 'worker-1=sideways': unknown fault")
        assert "still in force: worker-1=down" in line
        # an empty file: every cluster healthy again
        control.write_text("")
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line.strip() == "taudash sim: faults applied: every cluster healthy"
        assert await _status(str(kubeconfig), config) == dict.fromkeys(
            ("taudash-manager", "taudash-worker-1", "taudash-worker-2"), True)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 20)
    assert code == 0


def test_the_freshness_bound_defaults_to_15_s_and_is_checked(cli_env):
    from taudash.errors import UsageError
    from taudash.fleet import freshness_bound

    cfg = cli_env / "taudash.yaml"
    assert freshness_bound({"XDG_CONFIG_HOME": str(cli_env / "none")}) == 15.0  # no config file
    env = {"TAUDASH_CONFIG": str(cfg)}
    cfg.write_text("fleet:\n  multiKueueClusters: {}\n")
    assert freshness_bound(env) == 15.0  # a fleet section without it
    cfg.write_text("fleet:\n  freshnessBound: 30\n")
    assert freshness_bound(env) == 30.0
    for bad in ("1", "true", "[15]", "4000"):
        cfg.write_text(f"fleet:\n  freshnessBound: {bad}\n")
        with pytest.raises(UsageError, match="freshnessBound must be a number of seconds from 2 to 3600"):
            freshness_bound(env)
