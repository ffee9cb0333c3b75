"""`taudash profiles select|export|verify`: output contract and exit codes (docs/rules.md#output-contract)."""

from __future__ import annotations

import json

import pytest
import yaml
from factories import tau_cluster, workload_profile

from taudash.cli import main
from taudash.engine.rules.profilehash import profile_set_hash

GEN = 3
def profile(name, teams, ready=True):
    return workload_profile(name, teams=teams, lanes=["training"], namespaces=["ml"], target=None, cluster_queue="cq",
                            list_cluster_queues=False, priorities={"disableDefaultPriorities": True}, ready=ready,
                            gen=GEN)


def cluster_file(tmp_path, profiles, observed=GEN, name="cluster.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(tau_cluster(profiles, gen=GEN, observed=observed), sort_keys=False))
    return path


READY = [profile("research", ["research"]), profile("vision", ["vision"])]


def select(path, *extra):
    return main(
        ["profiles", "select", "--snapshot", str(path), "--namespace", "ml", "--lane", "training", "-o", "json", *extra]
    )


def test_select_prints_the_contract_and_exits_0(tmp_path, capsys):
    path = cluster_file(tmp_path, READY)
    assert select(path, "--team", "research") == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {
        "profile": "research",
        "error": None,
        "message": out["message"],
        "annotations": {
            "tau.azure.com/tau-cluster-generation": "3",
            "tau.azure.com/workload-profile-set-hash": profile_set_hash(READY),
            "tau.azure.com/workload-profile": "research",
        },
    }


@pytest.mark.parametrize(
    "profiles,extra,error",
    [
        (READY, ["--team", "ops"], "NoMatch"),
        (READY + [profile("research-2", ["research"])], ["--team", "research"], "Ambiguous"),
        (
            READY + [profile("broken", ["research"], ready=False)],
            ["--team", "research", "--profile", "broken"],
            "NotEligible",
        ),
        (READY, ["--team", "vision", "--profile", "research"], "NotEligible"),
    ],
    ids=["no-match", "ambiguous", "not-ready", "not-authorized"],
)
def test_refused_selection_exits_1_with_the_error(tmp_path, capsys, profiles, extra, error):
    assert select(cluster_file(tmp_path, profiles), *extra) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["error"] == error and out["profile"] is None and out["annotations"] == {}


def test_unusable_set_exits_1(tmp_path, capsys):
    assert select(cluster_file(tmp_path, READY, observed=GEN - 1), "--team", "research") == 1
    out = json.loads(capsys.readouterr().out)
    assert out["error"] == "Unusable" and "stale" in out["message"]


def test_select_table_output(tmp_path, capsys):
    main(
        [
            "profiles",
            "select",
            "--snapshot",
            str(cluster_file(tmp_path, READY)),
            "--namespace",
            "ml",
            "--team",
            "vision",
            "--lane",
            "training",
        ]
    )
    out = capsys.readouterr().out
    assert "profile:  vision" in out and "tau.azure.com/workload-profile: vision" in out


def test_select_requires_namespace_team_lane(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["profiles", "select", "--snapshot", str(cluster_file(tmp_path, READY)), "--team", "x"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_select_missing_snapshot_is_exit_2(tmp_path, capsys):
    assert select(tmp_path / "nope.yaml", "--team", "x") == 2
    err = capsys.readouterr().err
    assert "no such file" in err and err.count("\n") == 1


def test_export_then_verify(tmp_path, capsys):
    out = tmp_path / "profiles.snapshot.yaml"
    assert main(["profiles", "export", "--snapshot", str(cluster_file(tmp_path, READY)), "--output", str(out)]) == 0
    assert "never a server dry-run or an apply" in capsys.readouterr().out
    assert main(["profiles", "verify", str(out)]) == 0
    assert "valid TauWorkloadProfileSnapshot: TauCluster generation 3" in capsys.readouterr().out
    assert main(["profiles", "verify", str(out), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == {
        "valid": True,
        "tauClusterGeneration": 3,
        "profileSetHash": profile_set_hash(READY),
        "profiles": ["research", "vision"],
    }


def test_export_to_stdout(tmp_path, capsys):
    assert main(["profiles", "export", "--snapshot", str(cluster_file(tmp_path, READY)), "--output", "-"]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert doc["kind"] == "TauWorkloadProfileSnapshot" and doc["tauClusterGeneration"] == GEN


def test_export_refuses_an_unready_revision_exit_2(tmp_path, capsys):
    out = tmp_path / "s.yaml"
    src = cluster_file(tmp_path, READY + [profile("broken", ["ops"], ready=False)])
    assert main(["profiles", "export", "--snapshot", str(src), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "refusing to export" in err and "'broken' is not Ready" in err and err.count("\n") == 1
    assert not out.exists()


def test_export_refuses_a_source_with_unreadable_objects(tmp_path, capsys):
    src = cluster_file(tmp_path, READY)
    src.write_text(src.read_text() + "---\napiVersion: v1\nkind: Node\n")
    assert main(["profiles", "export", "--snapshot", str(src), "--output", str(tmp_path / "s.yaml")]) == 2
    assert "refusing to export: 1 object(s)" in capsys.readouterr().err


def test_verify_bad_file_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: tau.azure.com/v1alpha1\nkind: TauWorkloadProfileSnapshot\ntauClusterGeneration: 0\n")
    assert main(["profiles", "verify", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("taudash: ") and "tauClusterGeneration must be a positive integer" in err
    assert err.count("\n") == 1


def test_profiles_without_subcommand_is_usage_error():
    with pytest.raises(SystemExit) as exc:
        main(["profiles"])
    assert exc.value.code == 2
