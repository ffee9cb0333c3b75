"""A misspelt config key or TAUDASH_ variable can never disable read-only mode (or anything else): against a
simulator, `workflow start hold … --yes` with any documented key misspelt is exit 2 with one line naming
the key, before a single request is sent (writes counted at the simulator) and with no journal. The
correctly spelt file is accepted, and each of its keys takes effect."""

from __future__ import annotations

import json

import pytest
import yaml
from tools.config_docs import misspelt_docs, readme_example
from tools.paths import DEMO

from taudash.cli import main

CONTEXT = "taudash-sim"  # the context name the simulator writes into its kubeconfig
HOLD = ["workflow", "start", "hold", "--cq", "tau-ws-train", "--yes", "--wait-timeout", "1"]

pytestmark = pytest.mark.usefixtures("cli_env")


def writable(text: str) -> str:
    """The README's file made writable for the simulator's context: with the key spelt right, nothing would
    ask for read-only mode; misspelt, the old reader silently ignored `readonly: true` and wrote."""
    doc = yaml.safe_load(text)

    def flip(node):
        if isinstance(node, dict):
            return {(CONTEXT if k == "prod" else k): (False if k == "readOnly" else flip(v)) for k, v in node.items()}
        return node

    return yaml.safe_dump(flip(doc), sort_keys=False)


def config_file(cli_env, text: str):
    path = cli_env / "xdg" / "taudash" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def writes(sim) -> int:
    return sum(sim.api.writes.values())


def journals(cli_env) -> list:
    d = cli_env / "state" / "workflows"
    return sorted(d.iterdir()) if d.exists() else []


MISSPELT = [(where.replace(".prod.", f".{CONTEXT}."), writable(text), meant) for where, text, meant in misspelt_docs()]


@pytest.mark.parametrize(("where", "text", "meant"), MISSPELT, ids=[m[0] for m in MISSPELT])
def test_a_misspelt_key_refuses_the_write_with_zero_requests(demo_sim, cli_env, capsys, where, text, meant):
    path = config_file(cli_env, text)
    before = writes(demo_sim)
    code = main([*HOLD, "--kubeconfig", str(demo_sim.kubeconfig)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"taudash: config file {path}: unknown key {where} (did you mean {meant}?)")
    assert writes(demo_sim) == before  # counted on receipt: not a single write request
    assert journals(cli_env) == []


def test_misspelt_read_only_keys_ask_for_read_only_when_spelt_right(demo_sim, cli_env, capsys):
    """The two keys of the issue, spelt right: the same command is refused as read-only (the control)."""
    for text in ("readOnly: true\n", f"contexts:\n  {CONTEXT}: {{readOnly: true}}\n"):
        path = config_file(cli_env, text)
        before = writes(demo_sim)
        assert main([*HOLD, "--kubeconfig", str(demo_sim.kubeconfig)]) == 2
        assert f"asked by config file {path}" in capsys.readouterr().err
        assert writes(demo_sim) == before


@pytest.mark.parametrize("name", ["TAUDASH_READONLY", "taudash_read_only", "TAUDASH_READ_ONY"])
def test_a_misspelt_read_only_variable_refuses_the_write_with_zero_requests(demo_sim, cli_env, capsys, monkeypatch,
                                                                           name):
    monkeypatch.setenv(name, "1")
    before = writes(demo_sim)
    code = main([*HOLD, "--kubeconfig", str(demo_sim.kubeconfig)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.strip() == (f"taudash: environment variable {name} is not one taudash reads (did you mean "
                           "TAUDASH_READ_ONLY?); unset it or fix its name")
    assert writes(demo_sim) == before and journals(cli_env) == []


def test_the_documented_file_is_accepted_by_every_kind_of_command(demo_sim, cli_env, capsys):
    config_file(cli_env, writable(readme_example()))
    assert main(["status", "--kubeconfig", str(demo_sim.kubeconfig), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "ClusterStatus"
    assert main(["workflow", "list"]) == 0
    assert main(["status", "--snapshot", str(DEMO), "-o", "json"]) == 0


def storage_findings(capsys, argv: list[str]) -> list[tuple[str, str]]:
    assert main(["status", "--snapshot", str(DEMO), "-o", "json", *argv]) == 0
    doc = json.loads(capsys.readouterr().out)
    return sorted((f["rule"], f["object"]["name"]) for f in doc["findings"] if f["rule"].startswith("STORAGE-"))


def test_storage_claims_add_to_pvc(cli_env, capsys):
    """`storage.claims` (docs/drain.md) checks the claims as `--pvc` does, and adds to it."""
    without = storage_findings(capsys, [])
    by_flag = storage_findings(capsys, ["--pvc", "scratch-x"])
    assert by_flag != without  # the claim is missing in every workspace namespace: a finding each
    config_file(cli_env, "storage:\n  claims: [scratch-x]\n")
    assert storage_findings(capsys, []) == by_flag
    both = storage_findings(capsys, ["--pvc", "scratch-y"])
    assert set(by_flag) < set(both)
