"""The config file's schema agrees with the docs both ways, reads every key it documents, and refuses
any other key (naming its path, the nearest known key and its line) or a value of the wrong type; an
environment variable that looks like a misspelt TAUDASH_ name is refused too."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml
from tools.config_docs import README, misspelt_docs, readme_example
from tools.paths import REPO

from taudash.config import ENV_NAMES, check_env_names, load_config
from taudash.config.schema import key_paths, nearest
from taudash.errors import UsageError

CONFIG_KEYS = {"readOnly", "contexts", "fleet", "storage", "capacity", "utilisation"}


def leaves(doc: dict, at: tuple[str, ...] = ()) -> set[str]:
    """The dotted key paths of a config document, names (contexts, MultiKueueClusters) as `*`/maps as leaves."""
    out: set[str] = set()
    for key, value in doc.items():
        path = (*at, str(key))
        if path == ("contexts",):
            for settings in value.values():
                out |= {f"contexts.*.{k}" for k in settings}
        elif isinstance(value, dict) and path != ("fleet", "multiKueueClusters"):
            out |= leaves(value, path)
        else:
            out.add(".".join(path))
    return out


def load(tmp_path, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return load_config({"TAUDASH_CONFIG": str(path)}), path


def test_the_readme_example_names_every_key_of_the_schema_and_no_other():
    assert leaves(yaml.safe_load(readme_example())) == set(key_paths())


def test_every_key_of_the_readme_example_is_read(tmp_path):
    cfg, path = load(tmp_path, readme_example())
    assert cfg.path == path and cfg.read_only and cfg.read_only_contexts == {"prod"}
    assert cfg.multikueue_clusters == {"westus-2": "prod-westus-2"}
    assert cfg.freshness_bound == 15.0
    assert cfg.storage_claims == ("datasets", "checkpoints")
    cap = cfg.capacity
    assert cap.drain_conditions == ("XIDError79", "GPUECCDoubleVolatile") and cap.taint_conditions == (
        "GPUThermalViolation",)
    assert cap.unknown_conditions == ("DcgmExporterUnavailable",) and cap.tolerated_taints == ("nvidia.com/gpu",
                                                                                                "sku=gpu")
    assert cap.idle_minutes == 30


def test_capacity_keys_left_out_keep_their_defaults_and_bad_values_are_refused(tmp_path):
    from taudash.engine.rules.gpu_health import CapacityConfig

    cfg, _ = load(tmp_path, "capacity:\n  toleratedTaints: [maintenance]\n")
    assert cfg.capacity == CapacityConfig(tolerated_taints=("maintenance",))
    assert load(tmp_path, "readOnly: false\n")[0].capacity == CapacityConfig()
    for bad in ("capacity:\n  drainCondition: [X]\n", "capacity:\n  idleMinutes: 0\n",
                "capacity:\n  taintConditions: XIDError79\n"):
        with pytest.raises(UsageError, match="capacity"):
            load(tmp_path, bad)


def config_snippets() -> list[tuple[str, str]]:
    """Every yaml block of the README and docs/*.md that is a config file (its keys are config keys)."""
    out = []
    for file in [README, *sorted((REPO / "docs").glob("*.md"))]:
        for block in re.findall(r"```ya?ml\n(.*?)```", file.read_text(encoding="utf-8"), re.S):
            try:
                doc = yaml.safe_load(block)
            except yaml.YAMLError:
                continue
            if isinstance(doc, dict) and doc and set(doc) <= CONFIG_KEYS:
                out.append((file.name, block))
    return out


def test_docs_show_config_snippets():
    names = {name for name, _ in config_snippets()}
    assert {"README.md", "fleet.md"} <= names  # the finder finds them: the next test is not vacuous


@pytest.mark.parametrize(("doc", "block"), config_snippets())
def test_every_config_snippet_in_the_docs_is_accepted(tmp_path, doc, block):
    load(tmp_path, block)


def test_every_dotted_config_key_the_docs_name_is_in_the_schema():
    named = set()
    for file in [README, *sorted((REPO / "docs").glob("*.md"))]:
        named |= set(re.findall(r"`((?:fleet|storage)\.[A-Za-z]+)`", file.read_text(encoding="utf-8")))
    assert named, "no dotted key found: the pattern no longer matches the docs"
    assert named <= set(key_paths()), named - set(key_paths())


MISSPELT = misspelt_docs()


def test_there_is_a_misspelling_of_every_key_and_section():
    assert len(MISSPELT) == len(key_paths()) + 5  # + the sections fleet, storage, capacity, utilisation, contexts


@pytest.mark.parametrize(("where", "text", "meant"), MISSPELT, ids=[m[0] for m in MISSPELT])
def test_a_misspelt_key_is_refused_naming_its_path_the_nearest_key_and_the_line(tmp_path, where, text, meant):
    with pytest.raises(UsageError) as caught:
        load(tmp_path, text)
    message = str(caught.value)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.strip().startswith(where.split(".")[-1] + ":"))
    assert message == (f"config file {tmp_path / 'config.yaml'}: unknown key {where} (did you mean {meant}?) "
                       f"(line {line})")


@pytest.mark.parametrize(("text", "said"), [
    ("readOnly: 'yes'\n", "readOnly must be true or false, not 'yes' (line 1)"),
    ("readOnly: null\n", "readOnly must be true or false, not None"),
    ("contexts:\n  prod: {readOnly: 1}\n", "contexts.prod.readOnly must be true or false, not 1 (line 2)"),
    ("contexts:\n  123: {readOnly: enabled}\n", "contexts.123.readOnly must be true or false, not 'enabled'"),
    ("fleet: [a]\n", "fleet must be a mapping, not a list"),
    ("fleet:\n  freshnessBound: 1\n", "fleet.freshnessBound must be a number of seconds from 2 to 3600, not 1"),
    ("fleet:\n  freshnessBound: .inf\n", "fleet.freshnessBound must be a number of seconds from 2 to 3600, not inf"),
    ("fleet:\n  freshnessBound: true\n", "fleet.freshnessBound must be a number of seconds from 2 to 3600, not True"),
    ("fleet:\n  multiKueueClusters:\n    1: prod\n", "fleet.multiKueueClusters must map MultiKueueCluster names"),
    ("storage:\n  claims: data\n", "storage.claims must be a list of PersistentVolumeClaim names, not 'data'"),
    ("storage:\n  claims: [data, 3]\n", "storage.claims must be a list of PersistentVolumeClaim names, not a list"),
    ("colour: blue\n", "unknown key colour (known here: readOnly, contexts, fleet, storage, capacity, utilisation) (line 1)"),
    ("read_only: true\n", "unknown key read_only (did you mean readOnly?)"),
])
def test_a_wrong_type_or_an_unknown_key_without_a_near_one_is_refused(tmp_path, text, said):
    with pytest.raises(UsageError, match=re.escape(said)):
        load(tmp_path, text)


def test_the_right_types_are_read(tmp_path):
    cfg, _ = load(tmp_path, "contexts:\n  123: {readOnly: true}\n  other: {}\nfleet:\n  freshnessBound: 2.5\n"
                            "storage:\n  claims: [a, b, a]\n")
    assert cfg.read_only_contexts == {"123"} and not cfg.read_only
    assert cfg.freshness_bound == 2.5 and cfg.storage_claims == ("a", "b")
    cfg, _ = load(tmp_path, "contexts:\nfleet:\nstorage:\n")  # empty sections are nothing asked
    assert cfg.read_only_contexts == frozenset() and cfg.freshness_bound is None and cfg.storage_claims == ()


def test_nearest_prefers_a_case_insensitive_match_then_difflib():
    assert nearest("READONLY", ["contexts", "readOnly"]) == "readOnly"
    assert nearest("read-only", ["readOnly"]) == "readOnly"
    assert nearest("contxts", ["readOnly", "contexts", "fleet"]) == "contexts"
    assert nearest("colour", ["readOnly", "contexts"]) is None


# --- the environment ------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "meant"), [
    ("TAUDASH_READONLY", "TAUDASH_READ_ONLY"),
    ("taudash_read_only", "TAUDASH_READ_ONLY"),
    ("TAUDSH_READ_ONLY", "TAUDASH_READ_ONLY"),
    ("TAUDASH_READ_ONY", "TAUDASH_READ_ONLY"),
    ("TAUDASH_CONFG", "TAUDASH_CONFIG"),
    ("TAUDASH_STATEDIR", "TAUDASH_STATE_DIR"),
    ("TAUDASH_STATE", "TAUDASH_STATE_DIR"),
    ("TAUDASH_WEBTOKEN", "TAUDASH_WEB_TOKEN"),
])
def test_a_misspelt_environment_variable_is_refused_with_the_right_name(name, meant):
    with pytest.raises(UsageError, match=f"^environment variable {name} is not one taudash reads "
                                         f"\\(did you mean {meant}\\?\\)"):
        check_env_names({name: "1", "PATH": "/usr/bin"})


@pytest.mark.parametrize("name", ["TAUDASH_DEBUG", "TAUDASH_LOG", "TAUDASH_RO", "READ_ONLY", "KUBECONFIG",
                                  "XDG_STATE_HOME", "XDG_CONFIG_HOME", *sorted(ENV_NAMES)])
def test_known_and_unrelated_variables_are_left_alone(name):
    check_env_names({name: "1"})


def test_every_taudash_variable_the_sources_read_is_known():
    """ENV_NAMES is the list the misspelling check compares with: a variable read anywhere must be on it."""
    named = set()
    for folder in ("taudash", "engine", "screens"):
        for file in (REPO / folder).rglob("*.py"):
            named |= set(re.findall(r"\bTAUDASH_[A-Z_]+[A-Z]\b", file.read_text(encoding="utf-8")))
    assert named and named <= ENV_NAMES, named - ENV_NAMES


def test_the_schema_is_not_built_without_a_config_file(tmp_path):
    """Start-up: the pydantic models of the file are imported only when a file has content."""
    probe = ("import sys; from taudash.config import load_config; "
             "cfg = load_config({'XDG_CONFIG_HOME': sys.argv[1]}); "
             "print(cfg.path, 'taudash.config.schema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["None", "False"]
    (tmp_path / "taudash").mkdir()
    (tmp_path / "taudash" / "config.yaml").write_text("readOnly: false\n")
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "True"


# --- utilisation: Prometheus for GPU utilisation ------------------------------------------------------------------


def test_the_utilisation_section_sets_the_prometheus_reading(tmp_path):
    from taudash.config import PrometheusSettings

    cfg, _ = load(tmp_path, "utilisation:\n  prometheus: http://prom:9090\n  idleBelowPercent: 10\n"
                         "  intervalSeconds: 30\n  timeoutSeconds: 3\n")
    assert cfg.utilisation == PrometheusSettings(url="http://prom:9090", idle_below_percent=10.0,
                                                 interval_seconds=30.0, timeout_seconds=3.0)
    assert load(tmp_path, "readOnly: false\n")[0].utilisation == PrometheusSettings()  # absent: off


@pytest.mark.parametrize(("text", "said"), [
    ("utilisation:\n  prometheus: prom:9090\n", "utilisation.prometheus 'prom:9090': a Prometheus URL"),
    ("utilisation:\n  idleBelowPercent: 150\n", "utilisation.idleBelowPercent must be a percentage from 0 to 100"),
    ("utilisation:\n  intervalSeconds: 1\n", "utilisation.intervalSeconds must be a number of seconds from 5"),
])
def test_a_bad_utilisation_setting_is_refused(tmp_path, text, said):
    with pytest.raises(UsageError) as caught:
        load(tmp_path, text)
    assert said in str(caught.value) and "config file" in str(caught.value)


def test_the_prometheus_flag_wins_over_the_config_file_and_builds_one_feed_per_url():
    from types import SimpleNamespace

    from taudash.config import PrometheusSettings, rule_config

    def args(flag: str | None, url: str = "") -> SimpleNamespace:
        return SimpleNamespace(system_namespace="tau-system", pvc=[], prometheus=flag,
                               utilisation_settings=PrometheusSettings(url=url, interval_seconds=3600.0))

    assert rule_config(args(None)).utilisation.feed is None  # neither: off
    from_file = rule_config(args(None, "http://127.0.0.1:1")).utilisation.feed
    assert from_file is not None and from_file.url == "http://127.0.0.1:1"
    flagged = rule_config(args("http://127.0.0.1:2", "http://127.0.0.1:1")).utilisation.feed
    assert flagged is not None and flagged.url == "http://127.0.0.1:2"
    assert rule_config(args("http://127.0.0.1:2")).utilisation.feed is flagged  # one feed per URL and settings
    with pytest.raises(UsageError, match="--prometheus 'ftp://x': a Prometheus URL"):
        rule_config(args("ftp://x"))
    elsewhere = SimpleNamespace(**vars(args(None, "http://127.0.0.1:1")), command="whatif")
    assert rule_config(elsewhere).utilisation.feed is None  # a program without --prometheus never queries it
