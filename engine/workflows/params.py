"""Parameters of a new workflow, built from what an operator chose (CLI flags or the dashboard's form).

Each kind's parameter builder lives beside its steps and is described in its `WorkflowKind`
(engine/workflows/kind.py, listed in registry.py); `make` is the one entry both front ends use, so
`taudash workflow start hold --cq X` and the dashboard's "new workflow" form journal exactly the same
parameters. Every problem is a `ParamError` with a one-line reason; nothing here writes to the cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Context
from .catalog import catalog_params, rollback_params
from .drain import drain_params
from .hold import HOLD_MODES, hold_params, release_params
from .kind import ParamError, open_journal, profile_queues, unknown_queues
from .registry import find, get, kinds


def make(kind: str, ctx: Context, values: dict[str, Any], directory: Path | None = None) -> dict[str, Any]:
    """What an operator chose for a kind (values by parameter dest) → the journaled parameters."""
    try:
        wk = get(kind)
    except KeyError as exc:
        raise ParamError(str(exc.args[0])) from None
    return wk.make(ctx, values, directory, kinds())


def describe(kind: str, params: dict[str, Any]) -> str:
    """What a workflow is about, in one line (lists and the wizard's title)."""
    wk = find(kind)
    return wk.describe(params) if wk is not None else ""


__all__ = ["HOLD_MODES", "ParamError", "catalog_params", "describe", "drain_params", "hold_params", "make",
           "open_journal", "profile_queues", "release_params", "rollback_params", "unknown_queues"]
