"""Every malformed kubeconfig is bad input, for every command and the dashboard: exit 2, exactly one line on
stderr naming the file and what is wrong (an exec plugin by its command, a failing one by the first line
of its stderr), nothing on stdout, never a traceback, not a request sent. An unreachable server stays 3;
a well-formed file with the same credentials in another shape still connects (the checks refuse only
what is broken)."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tools.bad_kubeconfigs import SHAPES, write
from tools.paths import REPO

from taudash.cli import main

COMMANDS = {
    "status": ["status", "-o", "json"],
    "check": ["check"],
    "workflow start hold": ["workflow", "start", "hold", "--cq", "tau-ws-train", "--yes", "--wait-timeout", "1"],
    "the dashboard": [],
}

pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture(scope="module")
def good(demo_sim) -> dict:
    return yaml.safe_load(Path(demo_sim.kubeconfig).read_text())


def writes(sim) -> int:
    return sum(sim.api.writes.values())


def assert_one_line_exit_2(code: int, out: str, err: str, path: Path, says: str) -> None:
    assert (code, out) == (2, ""), (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"taudash: kubeconfig {path}") and says in lines[0], lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_malformed_kubeconfig_is_one_line_exit_2(demo_sim, good, tmp_path, capsys, no_terminal_ui, command, shape):
    path, says = write(shape, good, tmp_path / "kc")
    before = writes(demo_sim)
    code = main([*COMMANDS[command], "--kubeconfig", str(path)])
    out, err = capsys.readouterr()
    assert_one_line_exit_2(code, out, err, path, says)
    assert no_terminal_ui == []  # the dashboard never opened
    assert writes(demo_sim) == before


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_unreachable_server_stays_exit_3(good, tmp_path, capsys, no_terminal_ui, command):
    doc = dict(good, clusters=[{**good["clusters"][0], "cluster": {**good["clusters"][0]["cluster"],
                                                                   "server": f"https://127.0.0.1:{closed_port()}"}}])
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    code = main([*COMMANDS[command], "--kubeconfig", str(path)])
    out, err = capsys.readouterr()
    assert (code, out) == (3, "")
    (line,) = err.strip().splitlines()
    assert "cannot connect" in line and no_terminal_ui == []


def cli(env_home: Path, *argv: str) -> subprocess.CompletedProcess:
    """The installed entry point in a child process: its own interpreter, no terminal, a clean environment."""
    env = {"PATH": os.environ["PATH"], "HOME": str(env_home), "XDG_CONFIG_HOME": str(env_home / "xdg"),
           "TAUDASH_STATE_DIR": str(env_home / "state"), "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "taudash.cli", *argv], capture_output=True, text=True, cwd=REPO,
                          env=env, stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.parametrize("shape", ["a scalar", "CA data bad base64", "exec plugin missing", "exec plugin fails"])
@pytest.mark.parametrize("command", ["status", "the dashboard"])
def test_in_a_real_process_too(good, tmp_path, command, shape):
    path, says = write(shape, good, tmp_path / "kc")
    done = cli(tmp_path, *COMMANDS[command], "--kubeconfig", str(path))
    assert_one_line_exit_2(done.returncode, done.stdout, done.stderr, path, says)


def test_the_fleet_forms_refuse_a_malformed_context_before_reading_any(demo_sim, good, tmp_path, capsys,
                                                                       no_terminal_ui):
    doc = yaml.safe_load(yaml.safe_dump(good))
    doc["contexts"].append({"name": "broken", "context": {"cluster": "nowhere", "user": doc["users"][0]["name"]}})
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    ctx = good["contexts"][0]["name"]
    for argv in (["status", "--context", ctx, "--context", "broken"], ["check", "--all-contexts"],
                 ["--context", ctx, "--context", "broken"]):
        code = main([*argv, "--kubeconfig", str(path)])
        out, err = capsys.readouterr()
        assert_one_line_exit_2(code, out, err, path, "context 'broken' names cluster 'nowhere'")
    assert no_terminal_ui == []
    path.write_text("- not a kubeconfig\n")
    code = main(["status", "--all-contexts", "--kubeconfig", str(path)])
    assert_one_line_exit_2(code, *capsys.readouterr(), path, "expected a kubeconfig")


# --- the same credentials in other well-formed shapes still connect --------------------------------

def status_ok(capsys, path: Path) -> dict:
    code = main(["status", "--kubeconfig", str(path), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_a_working_exec_plugin_and_a_ca_file_next_to_the_kubeconfig_connect(good, tmp_path, capsys):
    token = good["users"][0]["user"]["token"]
    plugin = tmp_path / "token-plugin"
    plugin.write_text("#!/bin/sh\ncat <<EOF\n" + json.dumps({
        "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": token}})
        + "\nEOF\n")
    plugin.chmod(0o700)
    doc = yaml.safe_load(yaml.safe_dump(good))
    doc["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}}
    cluster = doc["clusters"][0]["cluster"]
    (tmp_path / "ca.pem").write_bytes(base64.b64decode(cluster.pop("certificate-authority-data")))
    cluster["certificate-authority"] = "ca.pem"  # relative to the kubeconfig's own folder
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    assert status_ok(capsys, path)["kind"] == "ClusterStatus"


def test_several_files_merge_as_kubectl_does(good, tmp_path, capsys):
    """KUBECONFIG=a:b: names are taken from the first file that has them, and so is current-context."""
    first = yaml.safe_load(yaml.safe_dump(good))
    name = first["contexts"][0]["name"]
    second = {"apiVersion": "v1", "kind": "Config", "current-context": "elsewhere",
              "contexts": [{"name": "elsewhere", "context": {"cluster": "nowhere"}},
                           {"name": name, "context": {"cluster": "nowhere"}}]}
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text(yaml.safe_dump(first))
    b.write_text(yaml.safe_dump(second))
    doc = status_ok(capsys, Path(f"{a}{os.pathsep}{b}"))
    assert doc["source"]["context"] == name  # the first file's current-context and its definition of it
    code = main(["status", "--kubeconfig", f"{a}{os.pathsep}{b}", "--context", "elsewhere"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and "context 'elsewhere' names cluster 'nowhere'" in err
