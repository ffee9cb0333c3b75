"""Every workflow kind, in the order front ends list them. Adding a workflow is one module (its steps,
builder and `WorkflowKind` description, engine/workflows/<name>.py) plus one line here: the CLI's
`workflow start <name>` sub-command and its flags, the dashboard's new-workflow form and palette,
`workflow list` and the journal readers all read this list (ARCHITECTURE.md, "Add a workflow").

Front ends read the list through `kinds()`/`get()` at the time they need it (never a copy taken at
import), and the list is checked as a whole when this module is imported: a malformed description or
a name registered twice fails loudly here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .catalog import CATALOG, ROLLBACK
from .drain import DRAIN
from .hold import HOLD, RELEASE
from .kind import RegistrationError, WorkflowKind

WORKFLOWS: list[WorkflowKind] = [
    HOLD,
    RELEASE,
    CATALOG,
    ROLLBACK,
    DRAIN,
]


def check(workflows: Sequence[object]) -> tuple[WorkflowKind, ...]:
    """The list as it must be: descriptions only, each name once."""
    seen: set[str] = set()
    for w in workflows:
        if not isinstance(w, WorkflowKind):
            raise RegistrationError(f"the workflow registry lists {w!r}, not a WorkflowKind")
        if w.name in seen:
            raise RegistrationError(f"workflow kind {w.name!r} is registered twice")
        seen.add(w.name)
    return tuple(workflows)  # type: ignore[arg-type]  # every item checked above


def kinds() -> tuple[WorkflowKind, ...]:
    return check(WORKFLOWS)


def names() -> tuple[str, ...]:
    return tuple(w.name for w in kinds())


def get(name: str) -> WorkflowKind:
    """The description of a kind; KeyError names the kinds there are."""
    for w in kinds():
        if w.name == name:
            return w
    raise KeyError(f"unknown workflow {name!r} (known: {', '.join(names())})")


def find(name: str) -> WorkflowKind | None:
    try:
        return get(name)
    except KeyError:
        return None


def targets(name: str, params: dict[str, Any]) -> set[str]:
    """The objects a run of kind `name` with these journaled parameters writes, as the kind declares them
    ("<Kind> <name>"): what the run claims while it runs and what the overlap check compares."""
    return set(get(name).targets(params))


def deactivating() -> tuple[str, ...]:
    """Kinds whose runs deactivate Workloads (a release --reactivate-from accepts them)."""
    return tuple(w.name for w in kinds() if w.deactivates)


check(WORKFLOWS)
