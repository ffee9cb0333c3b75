import json
import os
import subprocess
import sys

import pytest
from factories import cluster_queue, cond, local_queue, object_list, workload, workspace
from tools.paths import FIXTURES

from taudash.cli import main

NODE_BAD = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: 12Q}}\n"


def write_objs(tmp_path, objs, name="snap.json"):
    p = tmp_path / name
    p.write_text(json.dumps(object_list(objs)))
    return p


def test_status_json_prints_the_contract(tmp_path, capsys):
    p = write_objs(tmp_path, [workspace("train"), cluster_queue("tau-ws-train", cohort="tau-team-research")])
    assert main(["status", "--snapshot", str(p), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["apiVersion"], out["kind"]) == ("taudash/v1", "ClusterStatus")
    for key in ("source", "access", "pool", "cohorts", "clusterQueues", "workspaces", "profiles", "multikueue",
                "findings"):
        assert key in out
    assert out["source"]["type"] == "snapshot" and out["source"]["path"] == str(p)
    assert out["workspaces"][0]["expectedPhase"] == "Ready"
    assert out["clusterQueues"][0]["cohort"] == "tau-team-research"
    assert {"resource": "clusterqueues.kueue.x-k8s.io", "state": "Synced"}.items() <= next(
        a for a in out["access"] if a["resource"] == "clusterqueues.kueue.x-k8s.io"
    ).items()
    assert {"mode", "team", "cohort", "valid", "established", "zeroed", "conflicts", "flavors",
            "queues"} <= set(out["pool"])


def test_status_yaml_and_table(tmp_path, capsys):
    p = write_objs(tmp_path,
                   [workspace("vision",
                              conditions=[cond("RBACReady"),
                                          cond("QueueReady", "False", "QueueNotReady", "[bold]boom[/bold]")])])
    assert main(["status", "--snapshot", str(p), "-o", "yaml"]) == 0
    assert "kind: ClusterStatus" in capsys.readouterr().out
    assert main(["status", "--snapshot", str(p), "-o", "table"]) == 0
    out = capsys.readouterr().out
    assert "WORKSPACES" in out and "vision" in out and "WS-DEGRADED" in out
    assert "[bold]boom[/bold]" in out  # cluster strings are printed literally, never as markup


def test_check_exit_codes(tmp_path, capsys):
    healthy = write_objs(tmp_path, [workspace("train")], "ok.json")
    assert main(["check", "--snapshot", str(healthy)]) == 0
    degraded = write_objs(tmp_path, [workspace("v", conditions=[cond("RBACReady", "False")])], "bad.json")
    assert main(["check", "--snapshot", str(degraded)]) == 1
    out = capsys.readouterr().out
    assert "WS-DEGRADED" in out and "1 critical" in out


@pytest.mark.parametrize("args", [["status"], ["check"]])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, args):
    p = tmp_path / "t.yaml"
    p.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: [x\n")
    assert main([*args, "--snapshot", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(p) in err[0] and "invalid YAML" in err[0]
    assert main([*args, "--snapshot", str(tmp_path / "missing.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such file" in err[0]


def test_a_bad_object_is_reported_and_the_rest_is_still_shown(tmp_path, capsys):
    p = tmp_path / "mixed.yaml"
    p.write_text(NODE_BAD + "---\n" + json.dumps(workspace("train")))
    assert main(["status", "--snapshot", str(p), "-o", "json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["workspaces"][0]["name"] == "train"
    (line,) = captured.err.strip().splitlines()
    assert str(p) in line and "12Q" in line


def test_conflicting_sources_are_a_usage_error(tmp_path, capsys):
    assert main(["status", "--snapshot", "x", "--demo"]) == 2
    assert "choose one source" in capsys.readouterr().err


def test_console_script_never_prints_a_traceback(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: 12Q}}\n")
    r = subprocess.run([sys.executable, "-m", "taudash.cli", "status", "--snapshot", str(p), "-o", "json"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "12Q" in r.stderr
    r = subprocess.run([sys.executable, "-m", "taudash.cli", "status", "--bogus"], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["status", "-o", "table"], ["check", "-v"], ["status", "-o", "json"]])
def test_hostile_cluster_strings_are_inert_in_cli_output(args):
    """Names and messages with Rich markup, ANSI/OSC escapes and bidi overrides print literally."""
    hostile = str(FIXTURES / "ui-hostile.yaml")
    r = subprocess.run([sys.executable, "-m", "taudash.cli", *args, "--snapshot", hostile],
                       capture_output=True, text=True, env={**os.environ, "COLUMNS": "200", "TERM": "xterm-256color"})
    assert r.returncode in (0, 1), r.stderr
    if args[-1] == "json":
        assert "\\u001b[2J" in r.stdout  # JSON escapes it; the contract keeps the exact string
        return
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout and "\u202e" not in r.stdout
    assert "[bold]evil[/bold]" in r.stdout  # markup shown as written, not applied
    assert "\\x1b[2J" in r.stdout  # the escape sequence made visible


def test_queue_rows_show_deactivated_workloads(tmp_path, capsys):
    p = write_objs(tmp_path, [cluster_queue("tau-ws-train"), local_queue("jobqueue", "train", "tau-ws-train"),
                              workload("off", "train", active=False), workload("on", "train")])
    assert main(["status", "--snapshot", str(p), "-o", "json"]) == 0
    (cq,) = json.loads(capsys.readouterr().out)["clusterQueues"]
    assert cq["inactive"] == 1 and cq["observed"]["pending"] == 1
    assert main(["status", "--snapshot", str(p), "-o", "table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("clusterqueue"))
    row = next(line for line in lines if line.startswith("tau-ws-train"))
    assert header.split()[-1] == "inact" and row.split()[-1] == "1"


def test_a_piped_table_is_never_wrapped_or_cut(monkeypatch, capsys):
    """grep and awk read whole lines: off a terminal every name and message stays on its one line; COLUMNS
    (or a terminal) still sets a width."""
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["status", "--demo", "-o", "table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    blocker = "wait for Workload eval/job-mmlu-sweep-17-def97 to finish, or cancel its owner Job eval/mmlu-sweep-17, " \
              "before completing the retarget of workspace eval"
    assert any(blocker in line for line in lines)
    assert max(len(line) for line in lines) > 120
    monkeypatch.setenv("COLUMNS", "80")  # asked for a width: it is kept
    assert main(["status", "--demo", "-o", "table"]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 80
