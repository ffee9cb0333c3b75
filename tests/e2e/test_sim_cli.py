"""`taudash sim serve`: runs until Ctrl-C, prints the kubeconfig path and a kubectl example."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import sys

from tools.paths import FIXTURES, REPO

from taudash.cli import build_parser, main

FIXTURE = FIXTURES / "sim-cluster.yaml"


def test_help_says_speed_and_seed_are_for_the_controllers(capsys):
    try:
        build_parser().parse_args(["sim", "serve", "--help"])
    except SystemExit:
        pass
    out = capsys.readouterr().out
    for flag in ("--snapshot", "--port", "--speed", "--seed", "--kubeconfig-out"):
        assert flag in out
    assert "controllers" in out


def test_bad_input_is_exit_2(capsys, tmp_path):
    assert main(["sim", "serve", "--snapshot", str(tmp_path / "missing.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["sim", "serve", "--speed", "0"]) == 2


async def test_serve_until_interrupted(tmp_path):
    kubeconfig = tmp_path / "out" / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taudash.cli", "sim", "serve", "--snapshot", str(FIXTURE),
        "--kubeconfig-out", str(kubeconfig), "--seed", "3", "--speed", "10",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
    try:
        lines = []
        while not any(line.startswith("try:") for line in lines):
            line = await asyncio.wait_for(proc.stdout.readline(), 20)
            assert line, (await proc.stderr.read()).decode()
            lines.append(line.decode().strip())
        assert lines[0].startswith("taudash sim: serving 24 objects") and "https://127.0.0.1:" in lines[0]
        assert lines[1] == f"kubeconfig: {kubeconfig}"
        assert f"kubectl --kubeconfig {kubeconfig} get clusterqueues" in lines[2]
        assert stat.S_IMODE(kubeconfig.stat().st_mode) == 0o600
        env = {**os.environ, "HOME": str(tmp_path)}
        kubectl = await asyncio.create_subprocess_exec(
            "kubectl", "--kubeconfig", str(kubeconfig), "get", "tc", "-o", "name",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
        out, err = await asyncio.wait_for(kubectl.communicate(), 20)
        assert kubectl.returncode == 0, err.decode()
        assert out.decode().strip() == "taucluster.tau.azure.com/cluster"
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)  # Ctrl-C
        code = await asyncio.wait_for(proc.wait(), 10)
    assert code == 0


def test_kueue_version_accepts_only_known_versions(capsys):
    from taudash.commands.sim import DEFAULT_KUEUE_VERSION, KUEUE_VERSIONS
    from taudash.sim.kueue_versions import DEFAULT_VERSION, VERSIONS

    assert (KUEUE_VERSIONS, DEFAULT_KUEUE_VERSION) == (tuple(VERSIONS), DEFAULT_VERSION)
    assert build_parser().parse_args(["sim", "serve"]).kueue_version == "0.19"
    try:
        build_parser().parse_args(["sim", "serve", "--kueue-version", "0.16"])
        raise AssertionError("parsed an unknown version")
    except SystemExit as exc:
        assert exc.code == 2
    assert "--kueue-version" in capsys.readouterr().err


async def test_serve_a_v1beta1_only_kueue(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taudash.cli", "sim", "serve", "--snapshot", str(FIXTURE), "--no-controllers",
        "--kueue-version", "0.14", "--kubeconfig-out", str(kubeconfig),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
    try:
        while True:
            line = await asyncio.wait_for(proc.stdout.readline(), 20)
            assert line, (await proc.stderr.read()).decode()
            if line.startswith(b"kueue:"):
                assert b"0.14 (v0.14.8): serves v1beta1, stores v1beta1" in line, line
                break
        env = {**os.environ, "HOME": str(tmp_path)}

        async def kubectl(*args):
            p = await asyncio.create_subprocess_exec("kubectl", "--kubeconfig", str(kubeconfig), *args,
                                                     stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                     env=env)
            out, err = await asyncio.wait_for(p.communicate(), 20)
            assert p.returncode == 0, err.decode()
            return out.decode().split()

        assert [v for v in await kubectl("api-versions")
                if v.startswith("kueue.x-k8s.io/")] == ["kueue.x-k8s.io/v1beta1"]
        assert set(await kubectl("get", "clusterqueues", "-o", "jsonpath={.items[*].apiVersion}")) == {
            "kueue.x-k8s.io/v1beta1"}
        # converted: v1beta1's spelling of the cohort, never v1beta2's
        assert await kubectl("get", "cq", "-o", "jsonpath={.items[*].spec.cohortName}") == []
        assert "tau-team-vision" in await kubectl("get", "cq", "-o", "jsonpath={.items[*].spec.cohort}")
        assert await kubectl("get", "wl", "-A", "-o", "name")  # 0.14's short name
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 10)
    assert code == 0


def test_user_names_are_checked_before_serving(capsys):
    assert main(["sim", "serve", "--user", "Alice!"]) == 2
    assert "--user 'Alice!': lower-case letters, digits and '-'" in capsys.readouterr().err
    assert main(["sim", "serve", "--fleet", "1", "--user", "alice"]) == 2
    assert "one simulated cluster only" in capsys.readouterr().err


async def test_serve_with_users_gives_each_operator_a_context_and_an_identity(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taudash.cli", "sim", "serve", "--snapshot", str(FIXTURE), "--no-controllers",
        "--user", "alice", "--user", "bob", "--kubeconfig-out", str(kubeconfig),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
    try:
        users = []
        while True:
            line = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode()
            assert line, (await proc.stderr.read()).decode()
            if line.startswith("user:"):
                users.append(line.split())
            if line.startswith("Ctrl-C"):
                break
        assert users == [["user:", "alice", "--context", "taudash-sim-alice"],
                         ["user:", "bob", "--context", "taudash-sim-bob"]]
        env = {**os.environ, "HOME": str(tmp_path)}
        for context, want in (("taudash-sim-alice", "alice"), ("taudash-sim-bob", "bob"), ("taudash-sim", "sim-admin")):
            kubectl = await asyncio.create_subprocess_exec(
                "kubectl", "--kubeconfig", str(kubeconfig), "--context", context, "auth", "whoami",
                "-o", "jsonpath={.status.userInfo.username}", stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=env)
            out, err = await asyncio.wait_for(kubectl.communicate(), 20)
            assert kubectl.returncode == 0, err.decode()
            assert out.decode().strip() == want
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 10) == 0


def test_bad_dcgm_exporter_options_are_exit_2(capsys):
    assert main(["sim", "serve", "--idle-share", "0.5"]) == 2
    assert "--idle-share: add --dcgm-exporter" in capsys.readouterr().err
    assert main(["sim", "serve", "--dcgm-exporter", "--idle-share", "1.5"]) == 2
    assert "--idle-share 1.5: a share from 0 to 1" in capsys.readouterr().err
    assert main(["sim", "serve", "--dcgm-exporter", "70000"]) == 2
    assert main(["sim", "serve", "--fleet", "1", "--dcgm-exporter"]) == 2


async def test_serve_with_the_dcgm_exporter_serves_its_metrics(tmp_path):
    import aiohttp

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taudash.cli", "sim", "serve", "--no-controllers", "--dcgm-exporter",
        "--idle-share", "1", "--kubeconfig-out", str(tmp_path / "kubeconfig"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
    try:
        while True:
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line, (await proc.stderr.read()).decode()
            if line.startswith(b"dcgm:"):
                break
        text = line.decode()
        url = text.split()[1]
        allocated = int(text.split(" allocated")[0].rsplit(" ", 1)[1])
        assert f"{allocated} of them idle: idle share 1" in text  # every allocated GPU idle
        async with aiohttp.ClientSession() as http, http.get(url) as r:
            body = await r.text()
        util = [ln for ln in body.splitlines() if ln.startswith("DCGM_FI_DEV_GPU_UTIL{")]
        assert sum('pod="' in ln for ln in util) == allocated and all(ln.endswith(" 0") for ln in util)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 20)
    assert code == 0


def test_the_simulator_runs_on_the_real_clock_unless_asked_for_the_snapshots(capsys):
    parser = build_parser()
    assert parser.parse_args(["sim", "serve"]).clock == "now"
    assert parser.parse_args(["demo"]).clock == "now"
    assert parser.parse_args(["sim", "serve", "--clock", "snapshot"]).clock == "snapshot"
    try:
        parser.parse_args(["sim", "serve", "--clock", "yesterday"])
        raise AssertionError("parsed an unknown clock")
    except SystemExit as exc:
        assert exc.code == 2
    assert "--clock" in capsys.readouterr().err


async def test_serve_shows_ages_as_kubectl_does(tmp_path):
    """The demo captured days ago: served on the real clock, its newest Workload is minutes old, as kubectl says."""
    import json
    import time

    from taudash.sim.clock import parse_rfc3339

    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "taudash.cli", "sim", "serve", "--no-controllers", "--kubeconfig-out", str(kubeconfig),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
    try:
        while True:  # the kubeconfig is written before the "try:" line
            line = await asyncio.wait_for(proc.stdout.readline(), 20)
            assert line, (await proc.stderr.read()).decode()
            if line.startswith(b"try:"):
                break
        env = {**os.environ, "HOME": str(tmp_path)}
        kubectl = await asyncio.create_subprocess_exec(
            "kubectl", "--kubeconfig", str(kubeconfig), "get", "workloads", "-A", "-o", "json",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
        out, err = await asyncio.wait_for(kubectl.communicate(), 20)
        assert kubectl.returncode == 0, err.decode()
        created = [parse_rfc3339(w["metadata"]["creationTimestamp"]) for w in json.loads(out)["items"]]
        newest = max(created)
        assert time.time() - 3 * 3600 < newest <= time.time() + 1, newest
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(proc.wait(), 10)
    assert code == 0
