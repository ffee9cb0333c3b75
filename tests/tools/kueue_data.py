"""Kueue's own files, read by the tests as data: the CRDs of two Kueue releases and Kueue's examples.

They are another project's files and live beside the checkout (`../shared/kueue`, holding `crds/<folder>/` and
`examples/`), or wherever `$TAUDASH_KUEUE_CRDS` points — the same lookup as the simulator's schema validation
(`taudash.sim.schema.crd_root`). A clone with neither is whole but cannot run these tests: each one skips with
the same reason, so the summary shows one line with a count. In CI (`CI=true`) the folder is part of the job's
checkout, so its absence fails them instead: CI never goes green by skipping them. A folder that is there but
lacks what a test reads is broken, not absent, and fails everywhere (docs/decisions.md, decision 109).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

from taudash.sim.schema import ENV_VAR, SchemaSet, crd_root

CI_VAR = "CI"


def in_ci() -> bool:
    return os.environ.get(CI_VAR) == "true"


def absent_reason(root: Path) -> str:
    return (f"Kueue's CRDs and examples are not here ({root} does not exist): clone the repository with "
            f"shared/kueue beside it, or set {ENV_VAR} to a folder holding crds/<folder>/ (a Kueue release's "
            f"config/components/crd/bases) and examples/")


def _absent(root: Path) -> NoReturn:
    if in_ci():
        pytest.fail(f"{absent_reason(root)}; {CI_VAR}=true: required in CI", pytrace=False)
    pytest.skip(absent_reason(root))


def root() -> Path:
    """The `kueue` folder, when it exists; else the test skips (fails in CI)."""
    folder = crd_root()
    if not folder.is_dir():
        _absent(folder)
    return folder


def _part(*parts: str) -> Path:
    path = root().joinpath(*parts)
    if not path.is_dir() or not any(path.glob("*.yaml")):
        pytest.fail(f"{path} holds no YAML file: the Kueue test-data folder {crd_root()} is incomplete "
                    f"(it needs crds/<folder>/ and examples/)", pytrace=False)
    return path


def crds(folder: str) -> Path:
    """The `kueue` folder, checked to hold the CRDs of `folder` (`v0.15.8`, `main-ff69552`)."""
    _part("crds", folder)
    return root()


def examples() -> Path:
    """Kueue's examples (`examples/*.yaml`)."""
    return _part("examples")


def schemas(folder: str) -> SchemaSet:
    """The compiled CRDs of one release folder (one SchemaSet per process and folder)."""
    loaded = SchemaSet.shared(crds(folder), folder)
    assert loaded is not None, f"the CRDs in {crd_root() / 'crds' / folder} did not load"
    return loaded
