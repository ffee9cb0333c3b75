"""Step 0 of the catalog change, on the demo cluster's store: every problem a catalog has is found
before anything is journaled (each naming its profile and field), the +/− diff, and which queues a
change affects and why."""

from __future__ import annotations

import copy

import pytest
import yaml
from tools.paths import DEMO

from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.workflows.base import Context
from taudash.engine.workflows.catalog import affected_queues, catalog_diff, catalog_problems, declared_catalog
from taudash.engine.workflows.params import ParamError, catalog_params, drain_params, hold_params, release_params

EVAL = "azure.research.eval.gpu"
BURST = "azure.research.remote.burst"


@pytest.fixture(scope="module")
def ctx():
    return Context(store=load_snapshot(DEMO).store, actions=None)  # type: ignore[arg-type]


@pytest.fixture
def current(ctx):
    return copy.deepcopy(declared_catalog(ctx))


def profile(catalog, name):
    return next(p for p in catalog if p["name"] == name)


def write(tmp_path, data) -> str:
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_the_live_catalog_itself_is_valid(ctx, current):
    assert len(current) == 7
    assert catalog_problems(ctx, current) == []


def test_a_name_alone_is_refused_field_by_field(ctx):
    problems = catalog_problems(ctx, [{"name": "x"}])
    assert all(p.startswith("profile 'x': ") for p in problems)
    fields = {p.split(": ")[1].split(" ")[0] for p in problems}
    assert fields == {"gpusPerWorker", "workerCount", "mode", "placement", "defaultLocalQueue", "priorities"}


def test_wrong_types_and_unknown_fields(ctx, current):
    bad = copy.deepcopy(profile(current, EVAL))
    bad.update(gpusPerWorker="1", workerCount=True, defaultLocalQueu="jobqueue")
    bad["applicability"] = {"namespaces": "eval", "teams": [1]}
    problems = catalog_problems(ctx, ["not a profile", bad])
    assert "profile #1: expected a mapping of profile fields, got str" in problems
    label = f"profile {EVAL!r}"
    assert f"{label}: gpusPerWorker must be an integer, got str" in problems
    assert f"{label}: workerCount must be an integer, got bool" in problems
    assert f"{label}: unknown field 'defaultLocalQueu'" in problems
    assert f"{label}: applicability.namespaces must be a list, got str" in problems
    assert f"{label}: applicability.teams must be a list of strings" in problems


def test_controller_validation_reports_every_field(ctx, current):
    bad = copy.deepcopy(profile(current, EVAL))
    bad.update(mode="sometimes", placement="anywhere", workerCount=0, executionTarget="multiKueueBeta")
    bad["priorities"] = {"workloadPriorityClassName": "taugrid-default"}
    problems = catalog_problems(ctx, [bad])
    for field in ("mode", "placement", "workerCount", "executionTarget", "priorities.podPriorityClassName"):
        assert any(p.startswith(f"profile {EVAL!r}: {field} ") for p in problems), (field, problems)


def test_duplicate_names_after_normalisation(ctx, current):
    twin = copy.deepcopy(profile(current, EVAL))
    twin["name"] = EVAL.upper()
    problems = catalog_problems(ctx, [*current, twin])
    assert problems == [f"profile {EVAL.upper()!r}: name {EVAL!r} is declared twice (also profile {EVAL!r})"]


def test_references_must_exist_in_the_live_store(ctx, current):
    no_ns = copy.deepcopy(profile(current, EVAL))
    no_ns["applicability"] = {"teams": ["research"]}  # no namespaces and no sharedLocalQueues
    gone_ns = copy.deepcopy(profile(current, EVAL))
    gone_ns.update(name="a")
    gone_ns["applicability"]["namespaces"] = ["nowhere"]
    no_lq = copy.deepcopy(profile(current, EVAL))
    no_lq.update(name="b", defaultLocalQueue="nosuch")
    no_team = copy.deepcopy(profile(current, EVAL))
    no_team.update(name="c")
    no_team["applicability"]["teams"] = ["nobody"]
    no_class = copy.deepcopy(profile(current, EVAL))
    no_class.update(name="d", priorities={"workloadPriorityClassName": "urgent", "podPriorityClassName": "urgent"})
    wrong_target = copy.deepcopy(profile(current, EVAL))
    wrong_target.update(name="e", executionTarget="multiKueue")  # tau-ws-eval has no MultiKueue check
    problems = catalog_problems(ctx, [no_ns, gone_ns, no_lq, no_team, no_class, wrong_target])
    assert any(p.startswith(f"profile {EVAL!r}: applicability.namespaces is empty") for p in problems)
    assert "profile 'a': applicability.namespaces: namespace 'nowhere' not found" in problems
    assert "profile 'b': defaultLocalQueue: LocalQueue eval/nosuch not found" in problems
    assert "profile 'b': defaultLocalQueue: LocalQueue eval-v2/nosuch not found" in problems
    assert any(p.startswith("profile 'c': applicability.teams: team 'nobody' not found") for p in problems)
    assert "profile 'd': priorities.workloadPriorityClassName: WorkloadPriorityClass 'urgent' not found" in problems
    assert "profile 'd': priorities.podPriorityClassName: PriorityClass 'urgent' not found" in problems
    assert any(p.startswith("profile 'e': executionTarget multiKueue, but ClusterQueue 'tau-ws-eval'")
               for p in problems)
    # a singleCluster profile on the MultiKueue queue is refused too
    mk = copy.deepcopy(profile(current, BURST))
    mk.update(executionTarget="singleCluster")
    assert any("uses MultiKueue AdmissionCheck" in p for p in catalog_problems(ctx, [mk]))


def test_an_unreadable_kind_fails_closed(ctx, current, monkeypatch):
    real = ctx.store.readable
    monkeypatch.setattr(ctx.store, "readable", lambda kind: kind != "LocalQueue" and real(kind))
    problems = catalog_problems(ctx, current)
    assert len(problems) == 1 and problems[0].startswith("LocalQueue data is ")
    # namespaces and teams the controller never reads are not a reason to refuse every catalog
    monkeypatch.setattr(ctx.store, "readable", lambda kind: kind not in ("Namespace", "TauTeam") and real(kind))
    assert catalog_problems(ctx, current) == []
    gone = copy.deepcopy(profile(current, EVAL))
    gone["applicability"]["namespaces"] = ["nowhere"]
    assert (catalog_problems(ctx, [gone])
            == [f"profile {EVAL!r}: defaultLocalQueue: LocalQueue nowhere/jobqueue not found"])


def test_diff_names_profiles_and_fields(current):
    new = [p for p in copy.deepcopy(current) if p["name"] != BURST]
    profile(new, EVAL)["placement"] = "same-host"
    profile(new, EVAL)["applicability"]["namespaces"] = ["eval"]
    added = copy.deepcopy(profile(current, EVAL))
    added["name"] = "azure.research.eval.big"
    new.append(added)
    assert catalog_diff(current, new) == [
        "+ azure.research.eval.big",
        f"~ {EVAL}: applicability.namespaces -eval-v2",  # a list says what it gained and lost, not both lists
        f"~ {EVAL}: placement unconstrained → same-host",
        f"- {BURST}",
    ]
    profile(new, EVAL)["applicability"]["namespaces"] = ["eval", "eval-v3", "eval-v4"]
    assert f"~ {EVAL}: applicability.namespaces +eval-v3 +eval-v4 -eval-v2" in catalog_diff(current, new)
    # spelling the controller normalises away is no change
    same = copy.deepcopy(current)
    profile(same, EVAL)["mode"] = "Elastic"
    assert catalog_diff(current, same) == []


def test_only_queues_of_changed_profiles_are_affected_and_say_why(ctx, current):
    new = copy.deepcopy(current)
    profile(new, EVAL)["placement"] = "same-host"
    assert affected_queues(ctx, new, ["platform-cq"]) == {
        "platform-cq": ["chosen explicitly (--cq or the form)"],
        "tau-ws-eval": [f"profile {EVAL} routes to it and {EVAL} changes (placement)"],
    }
    removed = [p for p in current if p["name"] != BURST]
    assert affected_queues(ctx, removed) == {
        "research-multikueue": [f"profile {BURST} routes to it and {BURST} is removed"]}
    moved = copy.deepcopy(current)
    profile(moved, EVAL)["applicability"]["namespaces"] = ["vision"]
    why = affected_queues(ctx, moved)
    assert why["tau-ws-eval"] == [f"profile {EVAL} routes to it and {EVAL} changes (applicability.namespaces)"]
    assert why["tau-ws-vision"] == [f"profile {EVAL} will route to it and {EVAL} changes (applicability.namespaces)"]
    assert set(why) == {"tau-ws-eval", "tau-ws-vision"}


def test_catalog_params_carries_the_diff_and_the_reasons(ctx, current, tmp_path):
    new = copy.deepcopy(current)
    profile(new, EVAL)["description"] = "Evaluation, re-described."
    params = catalog_params(ctx, write(tmp_path, {"workloadProfiles": new}))
    assert params["cqs"] == ["tau-ws-eval"]
    assert params["why"] == {"tau-ws-eval": [f"profile {EVAL} routes to it and {EVAL} changes (description)"]}
    assert params["diff"] == [f'~ {EVAL}: description "Evaluation on one GPU (old and new eval namespaces)." → '
                              '"Evaluation, re-described."']


def test_catalog_params_refuses_with_every_problem(ctx, current, tmp_path):
    with pytest.raises(ParamError) as err:
        catalog_params(ctx, write(tmp_path, {"workloadProfiles": [{"name": "x"}]}))
    assert len(err.value.problems) == 6 and "6 problem(s)" in err.value.headline
    with pytest.raises(ParamError, match="--cq nope: ClusterQueue not found"):
        catalog_params(ctx, write(tmp_path, current), ["nope"])
    with pytest.raises(ParamError, match="nothing to change"):
        catalog_params(ctx, write(tmp_path, current))
    with pytest.raises(ParamError, match="non-empty list"):
        catalog_params(ctx, write(tmp_path, {"workloadProfiles": "x"}))


def test_every_workflow_checks_its_targets_before_the_journal(ctx):
    with pytest.raises(ParamError, match="ClusterQueue\\(s\\) not found: nope"):
        hold_params(ctx, ["tau-ws-train", "nope"])
    assert hold_params(ctx, ["tau-ws-train"])["cqs"] == ["tau-ws-train"]
    with pytest.raises(ParamError, match="not found: nope"):
        release_params(["nope"], ctx=ctx)
    with pytest.raises(ParamError, match="not draining"):
        drain_params(ctx, "train")
    with pytest.raises(ParamError, match="not found"):
        drain_params(ctx, "nosuch")
    assert drain_params(ctx, "eval") == {"workspace": "eval"}
