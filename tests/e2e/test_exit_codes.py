"""The exit codes of every command, as the README's table says: 0 ok (`status` also with critical
findings), 1 only for critical findings (`check`, one cluster or a fleet; `profiles select` refused), 2 bad
input, 3 unreachable. A 2 or a 3 is nothing on stdout and one line on stderr; the partial results (a
fleet with a cluster down) keep their document and name each missing cluster on stderr.

Workflows: only their 0, 2 and 3 paths are here; the code of a workflow that fails or pauses is
defined with the workflows (docs/workflows.md)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml
from factories import job, kubeconfig_doc
from tools.paths import DEMO, SIM_CLUSTER

from taudash.cli import main

OK, CRITICAL, BAD, UNREACHABLE = 0, 1, 2, 3
PARTIAL = "partial"  # a fleet document with a cluster missing: stdout has it, stderr names the missing one

WORKLOAD = "train/job-ctx-ablation-32k-bc6fa"  # a waiting Workload of the demo
HOLD = ["workflow", "start", "hold", "--cq", "tau-ws-train", "--yes", "--wait-timeout", "1"]

# (command, case, argv, exit code, kind). Placeholders: KC the simulator's kubeconfig, DOWN one whose
# server refuses connections, BAD a malformed one, FLEET contexts up-a, up-b (the simulator), down-a,
# down-b (refused); SNAP the demo snapshot (it has critical findings), CLEAN one without, MISSING no file.
ROWS = [
    ("the dashboard", "live", ["--kubeconfig", "KC"], OK, "ok"),
    ("the dashboard", "snapshot", ["--snapshot", "SNAP"], OK, "ok"),
    ("the dashboard", "--demo", ["--demo"], OK, "ok"),
    ("the dashboard", "bad kubeconfig", ["--kubeconfig", "BAD"], BAD, "bad"),
    ("the dashboard", "missing snapshot", ["--snapshot", "MISSING"], BAD, "bad"),
    ("the dashboard", "two sources", ["--demo", "--snapshot", "SNAP"], BAD, "bad"),
    ("the dashboard", "unreachable", ["--kubeconfig", "DOWN"], UNREACHABLE, "unreachable"),
    ("the dashboard", "fleet, unknown context", ["--context", "up-a", "--context", "nope", "--kubeconfig", "FLEET"],
     BAD, "bad"),
    ("status", "live", ["status", "--kubeconfig", "KC", "-o", "json"], OK, "ok"),
    ("status", "critical findings are still 0", ["status", "--snapshot", "SNAP", "-o", "json"], OK, "ok"),
    ("status", "demo", ["status", "--demo"], OK, "ok"),
    ("status", "bad kubeconfig", ["status", "--kubeconfig", "BAD"], BAD, "bad"),
    ("status", "missing snapshot", ["status", "--snapshot", "MISSING"], BAD, "bad"),
    ("status", "--context before and after", ["--context", "up-a", "status", "--context", "up-b",
                                              "--kubeconfig", "FLEET"], BAD, "bad"),
    ("status", "unknown option", ["status", "--frobnicate"], BAD, "bad"),
    ("status", "unreachable", ["status", "--kubeconfig", "DOWN"], UNREACHABLE, "unreachable"),
    ("status", "fleet", ["status", "--context", "up-a", "--context", "up-b", "--kubeconfig", "FLEET", "-o", "json"],
     OK, "ok"),
    ("status", "fleet, one down", ["status", "--context", "up-a", "--context", "down-a", "--kubeconfig", "FLEET",
                                   "-o", "json"], UNREACHABLE, PARTIAL),
    ("status", "fleet, all down", ["status", "--context", "down-a", "--context", "down-b", "--kubeconfig", "FLEET"],
     UNREACHABLE, PARTIAL),
    ("status", "fleet, unknown context", ["status", "--context", "up-a", "--context", "nope", "--kubeconfig", "FLEET"],
     BAD, "bad"),
    ("check", "clean", ["check", "--snapshot", "CLEAN"], OK, "ok"),
    ("check", "critical snapshot", ["check", "--snapshot", "SNAP"], CRITICAL, "critical"),
    ("check", "critical live", ["check", "--kubeconfig", "KC"], CRITICAL, "critical"),
    ("check", "bad kubeconfig", ["check", "--kubeconfig", "BAD"], BAD, "bad"),
    ("check", "unreachable", ["check", "--kubeconfig", "DOWN"], UNREACHABLE, "unreachable"),
    ("check", "fleet, critical", ["check", "--context", "up-a", "--context", "up-b", "--kubeconfig", "FLEET"],
     CRITICAL, "critical"),
    ("check", "fleet, critical and one down", ["check", "--context", "up-a", "--context", "down-a",
                                               "--kubeconfig", "FLEET"], CRITICAL, PARTIAL),
    ("check", "fleet, all down", ["check", "--context", "down-a", "--context", "down-b", "--kubeconfig", "FLEET"],
     UNREACHABLE, PARTIAL),
    ("demo", "status once", ["demo", "--status", "-o", "json"], OK, "ok"),
    ("demo", "bad --fleet", ["demo", "--fleet", "0"], BAD, "bad"),
    ("export", "live", ["export", "--kubeconfig", "KC", "-o", "-"], OK, "ok"),
    ("export", "bad kubeconfig", ["export", "--kubeconfig", "BAD", "-o", "-"], BAD, "bad"),
    ("export", "unreachable", ["export", "--kubeconfig", "DOWN", "-o", "-"], UNREACHABLE, "unreachable"),
    ("profiles select", "selected", ["profiles", "select", "--demo", "--namespace", "train", "--team", "research",
                                     "--lane", "training"], OK, "ok"),
    ("profiles select", "refused", ["profiles", "select", "--demo", "--namespace", "train", "--team", "nobody",
                                    "--lane", "training"], CRITICAL, "critical"),
    ("profiles select", "bad kubeconfig", ["profiles", "select", "--kubeconfig", "BAD", "--namespace", "train",
                                           "--team", "research", "--lane", "training"], BAD, "bad"),
    ("profiles select", "unreachable", ["profiles", "select", "--kubeconfig", "DOWN", "--namespace", "train",
                                        "--team", "research", "--lane", "training"], UNREACHABLE, "unreachable"),
    ("profiles export", "snapshot", ["profiles", "export", "--snapshot", "SNAP", "--output", "-"], OK, "ok"),
    ("profiles export", "unreachable", ["profiles", "export", "--kubeconfig", "DOWN", "--output", "-"],
     UNREACHABLE, "unreachable"),
    ("profiles verify", "missing file", ["profiles", "verify", "MISSING"], BAD, "bad"),
    ("whatif", "live", ["whatif", "JOB", "--kubeconfig", "KC"], OK, "ok"),
    ("whatif", "never admissible", ["whatif", "HUGE", "--demo"], CRITICAL, "ok"),
    ("whatif", "bad manifest", ["whatif", "BAD", "--demo"], BAD, "bad"),
    ("whatif", "missing manifest", ["whatif", "MISSING", "--demo"], BAD, "bad"),
    ("whatif", "unreachable", ["whatif", "JOB", "--kubeconfig", "DOWN"], UNREACHABLE, "unreachable"),
    ("why", "demo", ["why", WORKLOAD, "--demo"], OK, "ok"),
    ("why", "no such workload", ["why", "train/nope", "--demo"], BAD, "bad"),
    ("why", "bad kubeconfig", ["why", WORKLOAD, "--kubeconfig", "BAD"], BAD, "bad"),
    ("why", "unreachable", ["why", WORKLOAD, "--kubeconfig", "DOWN"], UNREACHABLE, "unreachable"),
    ("capacity", "demo", ["capacity", "--demo", "-o", "json"], OK, "ok"),
    ("capacity", "bad shape", ["capacity", "--demo", "--gpus-per-worker", "4", "--placement", "same-rack"], BAD, "bad"),
    ("capacity", "bad kubeconfig", ["capacity", "--kubeconfig", "BAD"], BAD, "bad"),
    ("capacity", "unreachable", ["capacity", "--kubeconfig", "DOWN"], UNREACHABLE, "unreachable"),
    ("deploy", "manifests", ["deploy", "manifests"], OK, "ok"),
    ("deploy", "bad namespace", ["deploy", "manifests", "--namespace", "Not_A_Name"], BAD, "bad"),
    ("workflow", "list", ["workflow", "list"], OK, "ok"),
    ("workflow", "status of no such run", ["workflow", "status", "nope"], BAD, "bad"),
    ("workflow", "resume of no such run", ["workflow", "resume", "nope", "--yes"], BAD, "bad"),
    ("workflow", "start, bad kubeconfig", [*HOLD, "--kubeconfig", "BAD"], BAD, "bad"),
    ("workflow", "start, two contexts", [*HOLD, "--context", "up-a", "--context", "up-b", "--kubeconfig", "FLEET"],
     BAD, "bad"),
    ("workflow", "start, unreachable", [*HOLD, "--kubeconfig", "DOWN"], UNREACHABLE, "unreachable"),
    ("rehearse", "list", ["rehearse", "list"], OK, "ok"),
    ("rehearse", "no such report", ["rehearse", "report", "nope"], BAD, "bad"),
    ("history", "bad --since", ["history", "preemptions", "--since", "bogus", "--demo"], BAD, "bad"),
    ("history", "never recorded", ["history", "preemptions", "--demo"], BAD, "bad"),
    ("serve", "bad kubeconfig", ["serve", "--kubeconfig", "BAD", "--metrics", ":0"], BAD, "bad"),
    ("serve", "bad --metrics", ["serve", "--snapshot", "SNAP", "--metrics", "nonsense:port"], BAD, "bad"),
    ("serve", "unreachable", ["serve", "--kubeconfig", "DOWN"], UNREACHABLE, "unreachable"),
    ("sim serve", "bad --kueue-version", ["sim", "serve", "--kueue-version", "9.9"], BAD, "bad"),
    ("bench", "bad --size", ["bench", "--size", "Q"], BAD, "bad"),
    ("bench", "an option it cannot use", ["bench", "--context", "up-a"], BAD, "bad"),
    ("taudash", "unknown command", ["frobnicate"], BAD, "bad"),
    ("taudash", "--version", ["--version"], OK, "ok"),
]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def places(demo_sim, tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("exit-codes")
    good = yaml.safe_load(Path(demo_sim.kubeconfig).read_text())
    cluster, user = good["clusters"][0], good["users"][0]
    down = {**cluster["cluster"], "server": f"https://127.0.0.1:{closed_port()}"}
    fleet = kubeconfig_doc({"up": cluster["cluster"], "down": down}, user,
                           {n: n.split("-")[0] for n in ("up-a", "up-b", "down-a", "down-b")}, "up-a")
    files = {"FLEET": fleet, "DOWN": {**good, "clusters": [{"name": cluster["name"], "cluster": down}]}}
    out = {"KC": str(demo_sim.kubeconfig), "SNAP": str(DEMO), "CLEAN": str(SIM_CLUSTER),
           "MISSING": str(d / "none.yaml")}
    for name, doc in files.items():
        (d / name).write_text(yaml.safe_dump(doc))
        out[name] = str(d / name)
    for name, gpus in (("JOB", 1), ("HUGE", 100000)):  # a Job of the demo's train queue; one no queue holds
        manifest = job("whatif", "train", queue="jobqueue", gpus=gpus,
                       selector={"tau.azure.com/gpu-class": "h100-80gb"})
        manifest["spec"]["template"]["spec"]["tolerations"] = [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]
        (d / name).write_text(yaml.safe_dump(manifest))
        out[name] = str(d / name)
    (d / "BAD").write_text("just a string\n")
    out["BAD"] = str(d / "BAD")
    return out


def run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own exits (--version; usage errors are one line, exit 2)
        return int(exc.code or 0)


@pytest.mark.usefixtures("cli_env")
@pytest.mark.parametrize(("command", "case", "argv", "code", "kind"), ROWS, ids=[f"{r[0]}|{r[1]}" for r in ROWS])
def test_exit_code(places, demo_sim, capsys, no_terminal_ui, command, case, argv, code, kind):
    writes = sum(demo_sim.api.writes.values())
    assert run([places.get(a, a) for a in argv]) == code
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    if kind in ("bad", "unreachable"):
        assert out == "" and len(lines) == 1, (out[:300], lines)
        assert lines[0].startswith("taudash: ") and "Traceback" not in err
        if kind == "unreachable":
            assert "cannot connect" in lines[0]
    if kind == PARTIAL:
        assert out  # the document of what was read
        down = [a for a in argv if a.startswith("down-")]
        assert sorted(line.split(":")[1].strip() for line in lines) == sorted(down)
        assert all(line.startswith("taudash: down-") and ": unreachable: " in line for line in lines)
    if command == "the dashboard":
        assert len(no_terminal_ui) == (1 if code == OK else 0)
    if "demo" not in argv[:1] and "--demo" not in argv[:1]:
        assert sum(demo_sim.api.writes.values()) == writes  # nothing in this table writes


def test_every_command_has_a_row():
    from taudash.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    covered = {r[0].split()[0] for r in ROWS}
    assert set(sub.choices) <= covered | {"sim"} and "sim serve" in {r[0] for r in ROWS}


def test_help_lists_every_global_option(capsys):
    """`taudash --help` shows every global option, `--demo` included (it opens the demo dashboard)."""
    from taudash.commands.options import GLOBAL_OPTIONS

    assert run(["--help"]) == OK
    text = capsys.readouterr().out.split("global options (anywhere on the command line):", 1)[1]
    for flag, _ in GLOBAL_OPTIONS.values():
        assert f"  {flag}" in text, flag
