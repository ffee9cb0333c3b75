"""One argument model: every global option means the same before, between or after the command
words, or the command refuses it with one line and exit 2 — never silently dropped. Conflicting
placements are refused; bad input prints nothing on stdout; `-o -` means stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from tools import yamlc
from tools.paths import DEMO

from taudash.cli import build_parser, main
from taudash.commands.options import merge_global_options
from taudash.data import demo_snapshot
from taudash.engine.workflows import Journal
from taudash.errors import UsageError

# command → (words, the rest of a valid command line)
COMMANDS: dict[str, tuple[list[str], list[str]]] = {
    "the dashboard": ([], []),
    "status": (["status"], ["-o", "json"]),
    "check": (["check"], []),
    "export": (["export"], ["-o", "-"]),
    "profiles select": (["profiles", "select"], ["--namespace", "n", "--team", "t", "--lane", "l"]),
    "profiles export": (["profiles", "export"], ["--output", "-"]),
    "profiles verify": (["profiles", "verify"], ["snap.yaml"]),
    "workflow start hold": (["workflow", "start", "hold"], ["--cq", "q", "--yes"]),
    "workflow start release": (["workflow", "start", "release"], ["--cq", "q", "--yes"]),
    "workflow start catalog": (["workflow", "start", "catalog"], ["--catalog", "c.yaml", "--yes"]),
    "workflow start rollback": (["workflow", "start", "rollback"], ["--from", "abc", "--yes"]),
    "workflow start drain": (["workflow", "start", "drain"], ["--workspace", "w", "--yes"]),
    "workflow list": (["workflow", "list"], []),
    "workflow status": (["workflow", "status"], ["abc"]),
    "workflow resume": (["workflow", "resume"], ["abc", "--yes"]),
    "workflow abort": (["workflow", "abort"], ["abc"]),
    "demo": (["demo"], []),
    "sim serve": (["sim", "serve"], []),
    "bench": (["bench"], []),
}

# The contract: which global options each command uses (written out here, not read from the CLI).
SOURCE = {"read_only", "context", "kubeconfig", "snapshot", "demo", "system_namespace", "pvc"}
LIVE = {"read_only", "context", "kubeconfig", "system_namespace"}
USES: dict[str, set[str]] = {
    "the dashboard": SOURCE,  # `taudash --demo` is `taudash demo`
    "status": SOURCE,
    "check": SOURCE,
    "export": {"read_only", "context", "kubeconfig", "snapshot", "demo"},
    "profiles select": SOURCE,
    "profiles export": SOURCE,
    "profiles verify": {"read_only"},
    "workflow start hold": LIVE,
    "workflow start release": LIVE,
    "workflow start catalog": LIVE,
    "workflow start rollback": LIVE,
    "workflow start drain": LIVE,
    "workflow list": {"read_only"},
    "workflow status": LIVE,  # given a cluster, status and abort read it (never write) to check the leftovers
    "workflow resume": LIVE,
    "workflow abort": LIVE,
    "demo": {"read_only", "system_namespace", "pvc", "demo"},
    "sim serve": {"snapshot"},
    "bench": {"read_only"},
}

# option → (name in args, command-line words, the value the command must see)
FLAGS = {
    "--read-only": ("read_only", ["--read-only"], True),
    "--context": ("context", ["--context", "ctx-x"], "ctx-x"),
    "--kubeconfig": ("kubeconfig", ["--kubeconfig", "/kc-x"], "/kc-x"),
    "--snapshot": ("snapshot", ["--snapshot", "/snap-x"], "/snap-x"),
    "--demo": ("demo", ["--demo"], True),
    "--system-namespace": ("system_namespace", ["--system-namespace", "ns-x"], "ns-x"),
    "--pvc": ("pvc", ["--pvc", "claim-x"], ["claim-x"]),
}


pytestmark = pytest.mark.usefixtures("cli_env")


def placements(words: list[str], rest: list[str], opt: list[str]) -> dict[str, list[str]]:
    out = {"before": [*opt, *words, *rest], "after": [*words, *rest, *opt]}
    for i in range(1, len(words)):  # between the words of a nested command: `workflow --context x start hold`
        out[f"after {words[i - 1]}"] = [*words[:i], *opt, *words[i:], *rest]
    return out


MATRIX = [
    pytest.param(cmd, flag, where, argv, id=f"{cmd}|{flag}|{where}")
    for cmd, (words, rest) in COMMANDS.items()
    for flag, (_, opt, _) in FLAGS.items()
    for where, argv in placements(words, rest, opt).items()
]


def parse(argv: list[str]):
    return merge_global_options(build_parser().parse_args(argv))


@pytest.mark.parametrize(("cmd", "flag", "where", "argv"), MATRIX)
def test_every_global_option_anywhere_is_used_or_refused(cmd, flag, where, argv):
    name, _, value = FLAGS[flag]
    if name in USES[cmd]:
        args = parse(argv)
        assert getattr(args, name) == value, argv
        assert args._command == cmd
    else:
        with pytest.raises(UsageError, match=f"^{flag} does not apply to {cmd}$"):
            parse(argv)


def test_defaults_without_any_global_option():
    args = parse(["status"])
    assert (args.context, args.kubeconfig, args.snapshot, args.demo, args.read_only) == (None, None, None, False, False)
    assert args.system_namespace == "tau-system" and args.pvc == []


def test_conflicting_placements_are_refused_and_agreeing_ones_combine():
    with pytest.raises(UsageError, match="conflicting values for --context: a, b"):
        parse(["--context", "a", "why", "ns/w", "--context", "b"])  # status/check: a fleet (test_fleet_status.py)
    with pytest.raises(UsageError, match="conflicting values for --system-namespace: x, y"):
        parse(["workflow", "--system-namespace", "x", "start", "hold", "--system-namespace", "y"])
    with pytest.raises(UsageError, match="conflicting values for --kubeconfig"):
        parse(["status", "--kubeconfig", "a", "--kubeconfig", "b"])  # twice in one place is a conflict too
    args = parse(["--context", "a", "status", "--context", "a", "--pvc", "p1", "--read-only"])
    assert args.context == "a" and args.read_only
    args = parse(["--pvc", "p1", "check", "--pvc", "p2", "--pvc", "p1"])
    assert args.pvc == ["p1", "p2"]


def test_a_refused_option_is_one_line_exit_2_and_nothing_runs(capsys):
    assert main(["--read-only", "sim", "serve", "--port", "-1"]) == 2  # refused before --port is looked at
    out, err = capsys.readouterr()
    assert out == "" and err.strip() == "taudash: --read-only does not apply to sim serve"
    assert main(["bench", "--context", "prod"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip() == "taudash: --context does not apply to bench"
    assert main(["--demo", "--snapshot", "x.yaml"]) == 2  # the dashboard takes one source
    assert capsys.readouterr().err.strip() == "taudash: choose one source: --snapshot FILE, --context NAME or --demo"


# --- effects against a simulated cluster ------------------------------------------------------

def one_line_exit_2(capsys, code: int) -> str:
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out)
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("cmd", ["status", "check", "export", "profiles select", "profiles export",
                                 "workflow start hold", "workflow resume", "the dashboard"])
@pytest.mark.parametrize("where", ["before", "after"])
def test_context_before_or_after_is_used_not_the_current_one(demo_sim, capsys, no_terminal_ui, cmd, where):
    words, rest = COMMANDS[cmd]
    before: list[Path] = []
    if cmd == "workflow resume":  # an unfinished run to resume: the journal is checked before connecting
        Journal.create("abc", "hold", {"cqs": ["tau-ws-train"], "mode": "Hold"}, "taudash-sim")
        before = sorted(Path.cwd().glob("state/workflows/*"))
    argv = placements(words, [*rest, "--kubeconfig", str(demo_sim.kubeconfig)], ["--context", "nosuch"])[where]
    line = one_line_exit_2(capsys, main(argv))
    assert "'nosuch' is not in" in line and "taudash-sim" in line
    assert not no_terminal_ui and not demo_sim.api.writes
    assert sorted(Path.cwd().glob("state/workflows/*")) == before


@pytest.mark.parametrize("where", ["before", "after"])
def test_system_namespace_and_kubeconfig_anywhere_reach_status(demo_sim, capsys, where):
    kc = ["--kubeconfig", str(demo_sim.kubeconfig)]
    assert main(placements(["status"], ["-o", "json"], kc)[where]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["source"]["context"] == "taudash-sim" and len(doc["workspaces"]) == 3
    argv = placements(["status"], ["-o", "json", *kc], ["--system-namespace", "elsewhere"])[where]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["workspaces"] == []  # TauWorkspaces are looked for there


@pytest.mark.parametrize("where", ["before", "after"])
def test_pvc_and_snapshot_anywhere_reach_check(capsys, where):
    argv = placements(["check"], ["-v"], ["--pvc", "zz-claim", "--snapshot", str(DEMO)])[where]
    assert main(argv) in (0, 1)
    assert "zz-claim" in capsys.readouterr().out
    assert main(["check", "-v", "--snapshot", str(DEMO)]) in (0, 1)
    assert "zz-claim" not in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--demo", "status", "-o", "json"], ["status", "-o", "json", "--demo"]])
def test_demo_anywhere_reaches_status(capsys, argv):
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["source"]["path"] == str(demo_snapshot())  # the packaged demo


@pytest.mark.parametrize("argv", [["--system-namespace", "ns-x", "--kubeconfig", "K"],
                                  ["--kubeconfig", "K", "--system-namespace", "ns-x"]])
def test_dashboard_uses_its_options(demo_sim, no_terminal_ui, argv):
    argv = [str(demo_sim.kubeconfig) if a == "K" else a for a in argv]
    assert main(argv) == 0
    (app,) = no_terminal_ui
    s = app.session
    assert s.config.system_namespace == "ns-x" and s.source.context == "taudash-sim" and s.mode == "LIVE"
    assert s.actions.writable and not s.read_only  # nothing asked for read-only here


@pytest.mark.parametrize("argv", [["--system-namespace", "ns-x", "--pvc", "c1", "demo"],
                                  ["demo", "--system-namespace", "ns-x", "--pvc", "c1"]])
def test_demo_uses_its_options(no_terminal_ui, argv):
    assert main(argv) == 0
    (app,) = no_terminal_ui
    assert app.session.config.system_namespace == "ns-x" and app.session.config.storage_claims == ("c1",)


def test_sim_serve_seeds_from_a_global_snapshot(capsys, tmp_path):
    line = one_line_exit_2(capsys, main(["--snapshot", str(tmp_path / "missing.yaml"), "sim", "serve"]))
    assert "missing.yaml: no such file" in line


def test_kubeconfig_with_a_snapshot_is_refused_not_ignored(capsys):
    line = one_line_exit_2(capsys, main(["--kubeconfig", "/k", "status", "--snapshot", str(DEMO)]))
    assert "--kubeconfig applies to a live cluster" in line


# --- bad input: exit 2, one line, nothing on stdout --------------------------------------------

@pytest.mark.parametrize("argv", [["status"], ["check"], ["export", "-o", "out.yaml"], [],
                                  ["profiles", "select", "--namespace", "n", "--team", "t", "--lane", "l"],
                                  ["profiles", "export", "--output", "-"]])
def test_a_snapshot_with_nothing_loadable_prints_nothing(capsys, tmp_path, no_terminal_ui, argv):
    bad = tmp_path / "string.yaml"
    bad.write_text("--- just a string\n")
    line = one_line_exit_2(capsys, main([*argv, "--snapshot", str(bad)]))
    assert "document is a str" in line and "nothing in" in line
    assert not no_terminal_ui and not (tmp_path / "out.yaml").exists()


def test_one_bad_object_still_shows_the_rest(capsys, tmp_path):
    mixed = tmp_path / "mixed.yaml"
    good = yamlc.load(DEMO.read_text())["objects"][0]
    mixed.write_text(yaml.safe_dump(good) + "--- just a string\n")
    assert main(["status", "--snapshot", str(mixed), "-o", "json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["kind"] == "ClusterStatus" and "document is a str" in err


def test_export_to_stdout_writes_no_file_named_dash(capsys, tmp_path):
    assert main(["--snapshot", str(DEMO), "export", "-o", "-"]) == 0
    out, err = capsys.readouterr()
    doc = yamlc.load(out)
    assert doc["kind"] == "ClusterSnapshot" and len(doc["objects"]) == len(yamlc.load(DEMO.read_text())["objects"])
    assert err.strip() == f"wrote {len(doc['objects'])} objects to stdout"
    assert not (tmp_path / "-").exists()
    assert main(["export", "--snapshot", str(DEMO), "-o", "copy.yaml"]) == 0  # a file is still a file
    assert yamlc.load((tmp_path / "copy.yaml").read_text())["objects"] == doc["objects"]


def test_profiles_export_to_stdout_writes_no_file_named_dash(capsys, tmp_path):
    assert main(["--snapshot", str(DEMO), "profiles", "export", "--output", "-"]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["kind"] == "TauWorkloadProfileSnapshot" and err == ""
    assert not (tmp_path / "-").exists()


def test_sim_kubeconfig_out_dash_is_refused(capsys):
    line = one_line_exit_2(capsys, main(["sim", "serve", "--kubeconfig-out", "-"]))
    assert "--kubeconfig-out -" in line


def test_the_programs_that_derive_read_utilisation_and_no_other():
    from taudash.cli import parse_args

    for argv in (["capacity"], ["status"], ["check"], ["serve"], ["demo"]):
        assert parse_args(argv).reads_utilisation, argv
    assert parse_args(["--prometheus", "http://p:9090", "status"]).prometheus == "http://p:9090"  # not hidden
    assert not getattr(parse_args(["why", "train/job"]), "reads_utilisation", False)
    assert parse_args([]).command is None  # the dashboard: no command, it reads utilisation too


def test_a_bad_prometheus_url_is_exit_2_naming_the_flag(capsys, cli_env):
    from taudash.cli import main

    assert main(["capacity", "--demo", "--prometheus", "prometheus:9090"]) == 2
    assert "--prometheus 'prometheus:9090': a Prometheus URL" in capsys.readouterr().err
