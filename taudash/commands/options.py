"""The options every command shares: the global options (declared once, accepted anywhere on the command
line), what each kind of command may use, and the settings they give (read-only mode, the rule config)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

if TYPE_CHECKING:  # the config (and the engine's model it imports) loads when a command runs, not to parse
    from taudash.engine.rules.base import RuleConfig

    from ..config import ReadOnly

# The global options, declared once. Every (sub)parser accepts all of them, so an option means the
# same before or after a command; each parser stores them under its own dest (`_g<n>_<name>`) and
# `merge_global_options` combines the placements, refusing conflicts and options the command
# cannot use. Scalars are collected as lists so `--context a ... --context b` is seen, not overwritten.
GLOBAL_OPTIONS: dict[str, tuple[str, dict]] = {
    "read_only": ("--read-only", {"action": "append_const", "const": True,
                                  "help": "never send a write request (also TAUDASH_READ_ONLY=1 or readOnly "
                                          "in the config file; read-only always wins)"}),
    "context": ("--context", {"action": "append", "metavar": "NAME", "help": "kubeconfig context of a live cluster"}),
    "kubeconfig": ("--kubeconfig", {"action": "append", "metavar": "FILE",
                                    "help": "kubeconfig path (default: $KUBECONFIG, then ~/.kube/config)"}),
    "snapshot": ("--snapshot", {"action": "append", "metavar": "FILE",
                                "help": "read a cluster snapshot file (always read-only)"}),
    "demo": ("--demo", {"action": "append_const", "const": True,
                        "help": "use the embedded demo cluster (without a command: the dashboard on the simulated "
                                "demo cluster, as `taudash demo`)"}),
    "system_namespace": ("--system-namespace", {"action": "append", "metavar": "NS",
                                                "help": "where TauGrid objects live (default tau-system)"}),
    "pvc": ("--pvc", {"action": "append", "metavar": "CLAIM",
                      "help": "storage claim to check in each workspace namespace (repeatable)"}),
    "fleet_from": ("--fleet-from", {"action": "append", "metavar": "AGENT",
                                    "help": "read a cluster from its agent's status (taudash serve --metrics): "
                                            "http(s)://HOST:PORT, a name of fleet.agents in the config file, or "
                                            "all of them (`all`); repeatable (docs/fleet.md)"}),
}
SCALARS = ("context", "kubeconfig", "snapshot", "system_namespace")
DEFAULT_SYSTEM_NAMESPACE = "tau-system"

# What each kind of command can use (anything else given is refused with exit 2).
SOURCE = frozenset({"read_only", "context", "kubeconfig", "snapshot", "demo", "system_namespace", "pvc"})
LIVE = frozenset({"read_only", "context", "kubeconfig", "system_namespace"})
LOCAL = frozenset({"read_only"})  # no cluster at all; read-only is trivially honoured
FLEET_SOURCE = SOURCE | {"fleet_from"}  # status, check and the dashboard also read a fleet from agents
DASHBOARD = FLEET_SOURCE  # `taudash --demo` is `taudash demo`

_parsers = 0


def add_global_options(p: argparse.ArgumentParser, uses: frozenset[str], shown: bool = True,
                       helps: dict[str, str] | None = None) -> None:
    """Declare every global option on `p` and record which of them its command uses (`helps`: what
    an option does for this command, where that reads differently)."""
    global _parsers
    _parsers += 1
    g = p.add_argument_group("global options (anywhere on the command line)") if shown else p
    for name, (flag, kw) in GLOBAL_OPTIONS.items():
        text = (helps or {}).get(name, kw["help"]) if shown and name in uses else argparse.SUPPRESS
        g.add_argument(flag, dest=f"_g{_parsers}_{name}", default=argparse.SUPPRESS, **{**kw, "help": text})
    p.set_defaults(_uses=uses, _command=p.prog.removeprefix("taudash").strip() or "the dashboard",
                   _repeatable=frozenset())


def add_source_args(p: argparse.ArgumentParser, uses: frozenset[str] = SOURCE, shown: bool = True,
                    helps: dict[str, str] | None = None) -> None:
    """Command modules call this on every parser they create (default: a command reading a source);
    `shown=False` for a parser that only groups sub-commands (its leaves decide what is used)."""
    add_global_options(p, uses, shown, helps)


PROMETHEUS_HELP = ("read GPU utilisation (DCGM metrics) from this Prometheus, http://host:port: allocated GPUs idle "
                   "for longer than capacity.idleMinutes, per workload and team (default: the config file's "
                   "utilisation.prometheus; none: off)")


def add_prometheus_arg(p: argparse.ArgumentParser, *, command: bool = True) -> None:
    """`--prometheus URL` for a program that derives the view; absent, the config file decides (SUPPRESS: a
    sub-command's default never hides the value given before it). Only these programs read utilisation: a
    what-if fork or `why` never queries Prometheus, whatever the config file says. `command=False`: the
    top-level parser (the dashboard, no command), whose defaults every sub-command would inherit."""
    p.add_argument("--prometheus", metavar="URL", default=argparse.SUPPRESS, help=PROMETHEUS_HELP)
    if command:
        p.set_defaults(reads_utilisation=True)


def merge_global_options(args: argparse.Namespace) -> argparse.Namespace:
    """Fold every placement of the global options into one value each (args.context, args.read_only, …)."""
    given: dict[str, list] = {name: [] for name in GLOBAL_OPTIONS}
    places: dict[str, int] = dict.fromkeys(GLOBAL_OPTIONS, 0)  # how many placements gave the option
    for key in [k for k in vars(args) if k.startswith("_g")]:
        name = key.split("_", 2)[2]
        values = getattr(args, key)
        given[name] += values
        places[name] += bool(values)
        delattr(args, key)
    uses: frozenset[str] = getattr(args, "_uses", frozenset())
    command = getattr(args, "_command", "this command")
    for name, values in given.items():
        if values and name not in uses:
            raise UsageError(f"{GLOBAL_OPTIONS[name][0]} does not apply to {command}")
    repeatable: frozenset[str] = getattr(args, "_repeatable", frozenset())
    for name in SCALARS:
        distinct = list(dict.fromkeys(given[name]))
        if len(distinct) > 1 and name not in repeatable:
            raise UsageError(f"conflicting values for {GLOBAL_OPTIONS[name][0]}: {', '.join(distinct)}")
        if len(distinct) > 1 and places[name] > 1:  # `--context a status --context b`: a conflict, not a fleet
            flag, words = GLOBAL_OPTIONS[name][0], "" if command == "the dashboard" else f"{command} "
            raise UsageError(f"conflicting values for {flag}: {', '.join(distinct)} (several clusters: give every "
                             f"{flag} in one place, `taudash {words}{flag} {distinct[0]} {flag} {distinct[1]}`)")
    # `--context` is repeatable for status, check and the dashboard (a fleet: one entry per cluster), all in
    # one place; elsewhere two different values were refused above. `args.context` keeps the single-cluster meaning.
    args.contexts = list(dict.fromkeys(given["context"]))
    args.context = args.contexts[0] if len(args.contexts) == 1 else None
    args.kubeconfig = next(iter(given["kubeconfig"]), None)
    args.snapshot = next(iter(given["snapshot"]), None)
    args.system_namespace = next(iter(given["system_namespace"]), DEFAULT_SYSTEM_NAMESPACE)
    args.pvc = list(dict.fromkeys(given["pvc"]))
    args.fleet_from = list(dict.fromkeys(given["fleet_from"]))
    args.demo = bool(given["demo"])
    args.read_only = bool(given["read_only"])
    return args


def read_only_of(args: argparse.Namespace, context: str | None = None) -> ReadOnly:
    """Every source asking for read-only mode for this command (flag, env, config file)."""
    from ..config import resolve_read_only

    return resolve_read_only(bool(getattr(args, "read_only", False)), context)


def rule_config(args: Any) -> RuleConfig:
    """The rules' settings for this command line (the commands import it from here; taudash/config builds it)."""
    from .. import config

    return config.rule_config(args)


