"""The `taudash` command line: dashboard, status, check, export, profiles, workflow, bench, sim."""

from __future__ import annotations

import argparse
import json
import sys

import yaml

from taudash.engine.rules.base import RuleConfig
from taudash.engine.text import clean

from . import __version__
from .errors import EXIT_BAD_INPUT, EXIT_CRITICAL, EXIT_OK, Unreachable, UsageError
from .loading import load_from_args, report_issues, view_of


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, no usage dump
        print(f"taudash: {message} (see --help)", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


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
}
SCALARS = ("context", "kubeconfig", "snapshot", "system_namespace")
DEFAULT_SYSTEM_NAMESPACE = "tau-system"

# What each kind of command can use (anything else given is refused with exit 2).
SOURCE = frozenset({"read_only", "context", "kubeconfig", "snapshot", "demo", "system_namespace", "pvc"})
LIVE = frozenset({"read_only", "context", "kubeconfig", "system_namespace"})
LOCAL = frozenset({"read_only"})  # no cluster at all; read-only is trivially honoured
DASHBOARD = SOURCE  # `taudash --demo` is `taudash demo`

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
    """Sub-command modules call this on every parser they create (default: a command reading a source);
    `shown=False` for a parser that only groups sub-commands (its leaves decide what is used)."""
    add_global_options(p, uses, shown, helps)


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
    args.demo = bool(given["demo"])
    args.read_only = bool(given["read_only"])
    return args


def read_only_of(args, context: str | None = None):
    """Every source asking for read-only mode for this command (flag, env, config file)."""
    from .config import resolve_read_only

    return resolve_read_only(bool(getattr(args, "read_only", False)), context)


def rule_config(args) -> RuleConfig:
    return RuleConfig(system_namespace=args.system_namespace, storage_claims=tuple(args.pvc))


def _fleet_contexts(args) -> list[str] | None:
    """The contexts of a fleet command (several --context, or --all-contexts), None for one cluster."""
    contexts = list(getattr(args, "contexts", None) or ())
    if getattr(args, "all_contexts", False):
        if contexts:
            raise UsageError("--all-contexts and --context: choose one")
        from .fleet import all_contexts

        contexts = all_contexts(args.kubeconfig)
    elif len(contexts) < 2:
        return None
    if args.snapshot or args.demo:
        raise UsageError("several clusters are live contexts: --snapshot and --demo read one cluster")
    return contexts


def _load_fleet(args, contexts: list[str]):
    from .fleet import load_fleet

    results = load_fleet(contexts, args.kubeconfig, rule_config(args), getattr(args, "sync_timeout", 30.0))
    for r in results:
        if r.error is not None:
            print(f"taudash: {r.context}: unreachable: {_one_line(r.error)}", file=sys.stderr)
    return results


def cmd_fleet_status(args, contexts: list[str]) -> int:
    from .errors import EXIT_UNREACHABLE
    from .fleet import fleet_contract, joins_of, multikueue_mapping

    results = _load_fleet(args, contexts)
    joins = joins_of(results, multikueue_mapping())
    if args.output in ("json", "yaml"):
        doc = fleet_contract(results, joins)
        if args.output == "json":
            json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
            sys.stdout.write("\n")
        else:
            yaml.safe_dump(doc, sys.stdout, sort_keys=False, allow_unicode=True)
    else:
        from .report import print_table

        for r in results:
            print(f"== {clean(r.context)} ==")
            if r.view is not None:
                print_table(r.view)
            else:
                print(f"unreachable: {_one_line(r.error or '')}")
        _print_join(joins, verbose=True)
    # The document covers every cluster that answered; the exit code says that not every one did (a
    # status cannot vouch for a cluster it did not read, as a partly unreadable snapshot is exit 2).
    return EXIT_UNREACHABLE if not all(r.reachable for r in results) else EXIT_OK


def _print_join(joins, verbose: bool) -> int:
    """The MultiKueue join across the fleet (docs/fleet.md); returns its critical findings."""
    from .fleet import fleet_findings

    for ctx, j in joins.items():
        counts = ", ".join(f"{n} {k}" for k, n in sorted(j.remote_counts().items())) or "none"
        print(f"{clean(ctx)}: MultiKueue: {len(j.dispatched)} dispatched (remote: {counts}), {len(j.orphans)} orphaned")
    crit = 0
    for ctx, f in fleet_findings(joins):
        crit += f.severity.value == "critical"
        if f.severity.value == "critical" or verbose:
            obj = f"{f.object.kind} {f.object.namespace + '/' if f.object.namespace else ''}{f.object.name}"
            print(f"{clean(ctx)}: {f.severity.value:<8} {f.rule:<24} {clean(obj)}: {_one_line(f.message)}")
    return crit


def cmd_fleet_check(args, contexts: list[str]) -> int:
    from .errors import EXIT_UNREACHABLE
    from .fleet import joins_of, multikueue_mapping

    results = _load_fleet(args, contexts)
    joins = joins_of(results, multikueue_mapping())
    total = {"critical": 0, "warning": 0, "info": 0}
    for r in results:
        if r.view is None:
            print(f"{clean(r.context)}: unreachable")
            continue
        c = r.view.counts()
        for k in total:
            total[k] += c[k]
        for f in r.view.findings:
            if f.severity.value == "critical" or args.verbose:
                obj = f"{f.object.kind} {f.object.namespace + '/' if f.object.namespace else ''}{f.object.name}"
                print(f"{clean(r.context)}: {f.severity.value:<8} {f.rule:<24} {clean(obj)}: {_one_line(f.message)}")
        print(f"{clean(r.context)}: {c['critical']} critical, {c['warning']} warning, {c['info']} info")
    join_crit = _print_join(joins, args.verbose)
    down = sum(not r.reachable for r in results)
    print(f"fleet: {len(results)} clusters, {down} unreachable; "
          f"{total['critical']} critical, {total['warning']} warning, {total['info']} info; "
          f"MultiKueue across the fleet: {join_crit} critical")
    if join_crit or any(r.view is not None and r.view.has_critical() for r in results):
        return EXIT_CRITICAL
    # No critical seen, but a cluster that could not be read cannot be vouched for: fail closed.
    return EXIT_UNREACHABLE if down else EXIT_OK


def cmd_status(args) -> int:
    contexts = _fleet_contexts(args)
    if contexts is not None:
        return cmd_fleet_status(args, contexts)
    loaded = load_from_args(args)
    view = view_of(loaded, rule_config(args))
    if args.output == "json":
        json.dump(view.to_contract(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif args.output == "yaml":
        yaml.safe_dump(view.to_contract(), sys.stdout, sort_keys=False, allow_unicode=True)
    else:
        from .report import print_table

        print_table(view)
    report_issues(loaded.issues)
    return EXIT_BAD_INPUT if loaded.issues else EXIT_OK


def cmd_check(args) -> int:
    contexts = _fleet_contexts(args)
    if contexts is not None:
        return cmd_fleet_check(args, contexts)
    loaded = load_from_args(args)
    view = view_of(loaded, rule_config(args))
    report_issues(loaded.issues)
    c = view.counts()
    for f in view.findings:
        if f.severity.value == "critical" or args.verbose:
            obj = f"{f.object.kind} {f.object.namespace + '/' if f.object.namespace else ''}{f.object.name}"
            print(f"{f.severity.value:<8} {f.rule:<24} {clean(obj)}: {_one_line(f.message)}")
    print(f"{c['critical']} critical, {c['warning']} warning, {c['info']} info")
    if loaded.issues:
        return EXIT_BAD_INPUT
    return EXIT_CRITICAL if view.has_critical() else EXIT_OK


def _one_line(s: str) -> str:
    return clean(s)


def _fleet_args(p: argparse.ArgumentParser) -> None:
    """status and check read several clusters: --context repeatable, or --all-contexts (docs/fleet.md)."""
    p.add_argument("--all-contexts", action="store_true",
                   help="every context of the kubeconfig, one FleetStatus entry each (also: --context repeated)")
    p.set_defaults(_repeatable=frozenset({"context"}))


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="taudash",
        description="Operator console for TauGrid GPU clusters. Without a command, opens the dashboard.",
    )
    p.add_argument("--version", action="version", version=f"taudash {__version__}")
    add_global_options(p, DASHBOARD)
    p.set_defaults(_repeatable=frozenset({"context"}))  # the dashboard over several clusters: a fleet
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    s = sub.add_parser("status", help="print the derived cluster status (the output contract)")
    add_source_args(s)
    s.add_argument("-o", "--output", choices=("json", "yaml", "table"), default="table")
    _fleet_args(s)
    s.set_defaults(func=cmd_status)

    c = sub.add_parser("check", help="exit 1 when any critical finding exists (for alerts and scripts)")
    add_source_args(c)
    c.add_argument("-v", "--verbose", action="store_true", help="list warnings and info findings too")
    _fleet_args(c)
    c.set_defaults(func=cmd_check)

    from .commands import register_all

    register_all(sub, add_source_args)
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line as every command sees it: parsed, with the global options folded into one value each."""
    return merge_global_options(build_parser().parse_args(argv))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return _guard(lambda: _dispatch(args))


def _dispatch(args) -> int:
    from . import config
    from .runtime import tune_gc_for_long_lived_model

    merge_global_options(args)
    # The process's memory policy (docs/decisions.md): every command lists or holds a
    # fleet-scale model; the engine itself never touches the collector.
    tune_gc_for_long_lived_model()
    settings = config.check()  # a malformed TAUDASH_ variable or config file is bad input for every command
    if "pvc" in getattr(args, "_uses", ()):  # the config file's storage.claims add to --pvc
        args.pvc = list(dict.fromkeys([*args.pvc, *settings.storage_claims]))
    if not getattr(args, "command", None):
        from .commands.dashboard import run_default

        return run_default(args)
    return args.func(args)


def _guard(fn) -> int:
    try:
        code = fn()
    except (UsageError, Unreachable) as exc:
        print(f"taudash: {_one_line(str(exc))}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    return code if isinstance(code, int) else EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
