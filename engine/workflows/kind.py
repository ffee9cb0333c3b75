"""What a workflow kind is, declared once beside its steps (engine/workflows/<name>.py) and listed in
engine/workflows/registry.py: its name, label, help, parameters, how parameters are checked and built,
its step summary and its builder; the objects its runs write (`targets`: what they claim and what the
overlap check compares), the dashboard form it is given (`form`), and what the runner does for it beyond
its steps (`undoes`, `rolls_back`). The CLI's sub-parser, the dashboard's form, the palette, `workflow
list`, the runner, the claims and the journal readers all read this description; nothing else names a
workflow kind.

A description that misses a field or gets one wrong fails when it is made (at import), not when an
operator first reaches for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model import ClusterQueue, TauCluster
from .base import Context, Workflow
from .journal import UNDO_PARAMS, Journal, JournalError

PARAM_TYPES = ("text", "list", "flag", "choice")
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_FLAG = re.compile(r"^--[a-z][a-z0-9-]*$")


class ParamError(ValueError):
    """The chosen parameters cannot make a workflow (one line, shown as is). `problems`, when
    given, lists every problem found (a front end may show them one per line)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        self.headline = message
        self.problems = list(problems or [])
        super().__init__(message + (": " + "; ".join(self.problems) if self.problems else ""))


class RegistrationError(TypeError):
    """A workflow description (or the registry) is malformed: raised at import, naming the field."""


@dataclass(frozen=True)
class Param:
    """One parameter as an operator gives it: a CLI flag and, in the dashboard, a form field.

    `type`: text (one value), list (repeatable flag; a comma-separated field in a generated form),
    flag (on/off), choice (one of `choices`). `dest` is the key the parameter builder reads (default:
    the flag's words joined by "_"). `pick` names a richer field the generated form may offer
    ("queues": the ClusterQueues of the shown cluster). `run_of`: the value is another run's id, of a kind
    it accepts (checked against the registry when the parameters are made)."""

    flag: str
    help: str | None = None
    type: str = "text"
    dest: str = ""
    metavar: str | None = None
    required: bool = False
    choices: tuple[str, ...] = ()
    default: Any = None
    label: str = ""
    pick: str = ""
    run_of: RunOf | None = None

    def __post_init__(self) -> None:
        where = f"workflow parameter {self.flag!r}"
        if not isinstance(self.flag, str) or not _FLAG.match(self.flag):
            raise RegistrationError(f"{where}: the flag must look like --words")
        if self.type not in PARAM_TYPES:
            raise RegistrationError(f"{where}: type must be one of {', '.join(PARAM_TYPES)}, not {self.type!r}")
        if self.type == "choice" and (not self.choices or self.default not in self.choices):
            raise RegistrationError(f"{where}: a choice needs its choices and a default among them")
        if self.type != "choice" and self.choices:
            raise RegistrationError(f"{where}: only a choice has choices")
        if self.required and self.type in ("flag", "choice"):
            raise RegistrationError(f"{where}: a {self.type} always has a value: it cannot be required")
        if self.pick not in ("", "queues"):
            raise RegistrationError(f"{where}: unknown pick {self.pick!r}")
        if self.run_of is not None and (self.type != "text" or not isinstance(self.run_of, RunOf)):
            raise RegistrationError(f"{where}: run_of is a RunOf, on a text parameter")
        if not isinstance(self.help, str) or not self.help.strip():
            raise RegistrationError(f"{where}: help is empty (it is the flag's line in `--help`)")
        if not self.dest:
            object.__setattr__(self, "dest", self.flag[2:].replace("-", "_"))
        if not self.dest.isidentifier():
            raise RegistrationError(f"{where}: dest {self.dest!r} is not an identifier")

    @property
    def empty(self) -> Any:
        """The value when the operator gave none."""
        if self.type == "list":
            return []
        if self.type == "flag":
            return False
        return self.default

    @property
    def field_label(self) -> str:
        return self.label or self.help or self.flag

    def check(self, value: Any) -> Any:
        """The value, or ParamError when it has the wrong shape (a front end's bug or a typo in a script)."""
        if value is None:
            if self.required:
                raise ParamError(f"{self.flag}: required")
            return self.empty
        if self.type == "list":
            if isinstance(value, str) or not isinstance(value, Iterable) or not all(isinstance(v, str) for v in value):
                raise ParamError(f"{self.flag}: a list of names, not {value!r}")
            return list(value)
        if self.type == "flag":
            if not isinstance(value, bool):
                raise ParamError(f"{self.flag}: on or off, not {value!r}")
            return value
        if not isinstance(value, str):
            raise ParamError(f"{self.flag}: text, not {value!r}")
        if self.type == "choice" and value not in self.choices:
            raise ParamError(f"{self.flag} must be one of {', '.join(self.choices)}, not {value!r}")
        return value


@dataclass(frozen=True)
class RunOf:
    """A parameter that names another run: the kinds of run it `accepts`; `says` ends the refusal
    ("workflow ID is a drain: only a hold, catalog deactivates Workloads")."""

    accepts: Callable[[WorkflowKind], bool]
    says: str


# values (by Param.dest) → the journaled parameters; ParamError on bad input. `directory` is the journal
# directory (None: the default), for kinds that read another run's journal.
MakeParams = Callable[[Context, dict[str, Any], Path | None], dict[str, Any]]


def _no_description(params: dict[str, Any]) -> str:
    return ""


# journaled parameters → the objects a run writes, as "<Kind> <name>" (e.g. "ClusterQueue tau-ws-a")
Targets = Callable[[dict[str, Any]], Iterable[str]]


def NO_TARGETS(params: dict[str, Any]) -> frozenset[str]:  # noqa: N802 - a constant a kind declares
    """A kind whose runs write nothing another run could write too: it claims nothing, overlaps nothing."""
    return frozenset()


def _undeclared(params: dict[str, Any]) -> frozenset[str]:  # the default: refused when the kind is made
    raise RegistrationError("targets not declared")


GENERATED = "generated"  # the dashboard draws the kind's form from its Params


@dataclass(frozen=True)
class WorkflowKind:
    """One workflow kind. `help` is the CLI sub-command's help line; `steps` the one-line step summary the
    form shows; `make_params` checks what the operator chose and returns what is journaled; `build` turns
    journaled parameters into the step machine; `describe` says in one line what a run is about;
    `deactivates`: its runs deactivate Workloads (a release can reactivate them).

    `targets` (required: `NO_TARGETS` for a kind that writes nothing): journaled parameters → the objects
    its runs write; a run claims them while it runs and a new run writing one of them is refused while
    this one is unfinished. `form`: `GENERATED` (the dashboard's form is drawn from the Params) or the name
    of a form the screens draw by hand. `undoes`: the journaled parameter naming the run its runs undo (one
    of journal.UNDO_PARAMS; "" for none); `rolls_back`: a completed run ends that run for good (RolledBack)."""

    name: str
    label: str
    help: str
    steps: str
    params: tuple[Param, ...]
    make_params: MakeParams
    build: Callable[[dict[str, Any]], Workflow]
    targets: Targets = field(default=_undeclared)
    describe: Callable[[dict[str, Any]], str] = field(default=_no_description)
    deactivates: bool = False
    form: str = GENERATED
    undoes: str = ""
    rolls_back: bool = False

    def __post_init__(self) -> None:
        where = f"workflow kind {self.name!r}"
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise RegistrationError(f"{where}: the name must be lower-case words joined by '-'")
        for attr in ("label", "help", "steps"):
            if not isinstance(getattr(self, attr), str) or not getattr(self, attr).strip():
                raise RegistrationError(f"{where}: {attr} is empty")
        if not isinstance(self.params, tuple) or not all(isinstance(p, Param) for p in self.params):
            raise RegistrationError(f"{where}: params must be a tuple of Param")
        for attr in ("make_params", "build", "describe", "targets"):
            if not callable(getattr(self, attr)):
                raise RegistrationError(f"{where}: {attr} is not callable")
        if self.targets is _undeclared:
            raise RegistrationError(f"{where}: targets not declared: the objects its runs write (what they claim "
                                    "and what the overlap check compares), or targets=NO_TARGETS if they write none")
        for what in ("flag", "dest"):
            seen = [getattr(p, what) for p in self.params]
            dup = sorted({x for x in seen if seen.count(x) > 1})
            if dup:
                raise RegistrationError(f"{where}: {what} declared twice: {', '.join(dup)}")
        if not isinstance(self.form, str) or not _NAME.match(self.form):
            raise RegistrationError(f"{where}: form must be GENERATED or the name of a form the screens draw")
        if self.undoes not in ("", *UNDO_PARAMS):
            raise RegistrationError(f"{where}: undoes must be one of {', '.join(UNDO_PARAMS)} (or empty)")
        if self.rolls_back and not self.undoes:
            raise RegistrationError(f"{where}: rolls_back needs undoes (the run it rolls back)")

    def make(self, ctx: Context, values: dict[str, Any], directory: Path | None = None,
             kinds: Sequence[WorkflowKind] | None = None) -> dict[str, Any]:
        """What an operator chose (by dest; missing ones take their empty value) → journaled parameters.
        `kinds`: the registered kinds (workflows.params.make passes them), against which a parameter
        naming another run (`Param.run_of`) is checked."""
        known = {p.dest for p in self.params}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ParamError(f"{self.name}: unknown parameter(s) {', '.join(unknown)}")
        checked = {p.dest: p.check(values.get(p.dest)) for p in self.params}
        for p in self.params:
            if p.run_of is not None and checked[p.dest]:
                if kinds is None:
                    raise TypeError(f"{self.name}: {p.flag} names another run: make() needs the registered kinds "
                                    "(workflows.params.make passes them)")
                src = open_journal(checked[p.dest], directory)
                accepted = [k.name for k in kinds if p.run_of.accepts(k)]
                if src.kind not in accepted:
                    raise ParamError(f"workflow {src.id} is a {src.kind}: only a {', '.join(accepted)} "
                                     f"{p.run_of.says}")
        out = self.make_params(ctx, checked, directory)
        stray = [k for k in UNDO_PARAMS if k in out and k != self.undoes]
        if stray:  # the journal readers would take it for the run this one undoes
            raise RegistrationError(f"workflow kind {self.name!r} journals {stray[0]!r}, the parameter that names "
                                    f"the run a run undoes: declare undoes={stray[0]!r}, or journal it under "
                                    "another name")
        return out


# --- helpers the parameter builders share ------------------------------------------------------


def open_journal(workflow_id: str, directory: Path | None = None) -> Journal:
    try:
        return Journal.open(workflow_id, directory)
    except JournalError as exc:
        raise ParamError(str(exc)) from None


def profile_queues(ctx: Context, profile: str) -> list[str]:
    """The ClusterQueues a resolved workload profile routes to."""
    tc = ctx.store.get(TauCluster, "cluster")
    profiles = tc.status.workload_profiles.profiles if tc and tc.status.workload_profiles else []
    prof = next((p for p in profiles if p.name == profile), None)
    if prof is None:
        raise ParamError(f"profile {profile!r} is not in TauCluster cluster's resolved profiles")
    return list(prof.cluster_queues)


def unknown_queues(ctx: Context, cqs: Iterable[str]) -> None:
    """Refuse queues that do not exist (or cannot be read) before anything is journaled."""
    names = sorted(set(cqs))
    if names and not ctx.store.readable("ClusterQueue"):
        raise ParamError(f"clusterqueues are {ctx.store.access('ClusterQueue').state.value}: "
                         f"cannot check {', '.join(names)}")
    missing = [n for n in names if ctx.store.get(ClusterQueue, n) is None]
    if missing:
        raise ParamError(f"ClusterQueue(s) not found: {', '.join(missing)}")
