"""The tests that read Kueue's CRDs and examples (tests/tools/kueue_data.py) skip when the folder is absent, fail
when it is absent in CI, and fail everywhere when it is there but incomplete."""

from __future__ import annotations

import pytest
from tools import kueue_data

from taudash.sim.schema import ENV_VAR


@pytest.fixture
def absent(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "no-kueue-here"))
    monkeypatch.delenv(kueue_data.CI_VAR, raising=False)
    return tmp_path / "no-kueue-here"


@pytest.mark.parametrize("need", [kueue_data.root, kueue_data.examples, lambda: kueue_data.crds("v0.15.8"),
                                  lambda: kueue_data.schemas("main-ff69552")])
def test_an_absent_folder_skips_outside_ci_with_one_reason(absent, need):
    with pytest.raises(pytest.skip.Exception) as skipped:
        need()
    assert str(skipped.value) == kueue_data.absent_reason(absent)
    assert str(absent) in str(skipped.value) and ENV_VAR in str(skipped.value)


def test_an_absent_folder_fails_in_ci(absent, monkeypatch):
    monkeypatch.setenv(kueue_data.CI_VAR, "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true: required in CI"):
        kueue_data.examples()


def test_ci_means_the_value_true_only(absent, monkeypatch):
    monkeypatch.setenv(kueue_data.CI_VAR, "1")  # not what CI systems set for this variable: still outside CI
    with pytest.raises(pytest.skip.Exception):
        kueue_data.root()


def test_an_incomplete_folder_fails_everywhere(tmp_path, monkeypatch):
    (tmp_path / "kueue" / "crds" / "v0.15.8").mkdir(parents=True)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "kueue"))
    monkeypatch.delenv(kueue_data.CI_VAR, raising=False)
    with pytest.raises(pytest.fail.Exception, match="incomplete"):
        kueue_data.crds("v0.15.8")  # the folder is there, without a CRD in it
    with pytest.raises(pytest.fail.Exception, match="incomplete"):
        kueue_data.examples()


def test_the_real_folder_is_found_where_the_simulator_looks():
    """With the data beside the checkout (or named by the variable), every part the tests read is there."""
    root = kueue_data.root()
    assert kueue_data.crds("v0.15.8") == root == kueue_data.crds("main-ff69552")
    assert kueue_data.examples() == root / "examples"
    assert kueue_data.schemas("main-ff69552").storage_version("kueue.x-k8s.io", "Workload") == "v1beta2"
