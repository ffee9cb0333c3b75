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


def add_source_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("source (pick one; default: the current kube context)")
    g.add_argument("--snapshot", metavar="FILE", help="read a cluster snapshot file (always read-only)")
    g.add_argument("--context", metavar="NAME", help="kubeconfig context of a live cluster")
    g.add_argument("--demo", action="store_true", help="use the embedded demo cluster")
    g.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig path (default: $KUBECONFIG, then ~/.kube/config)")
    p.add_argument("--system-namespace", default="tau-system", help="where TauGrid objects live (default tau-system)")
    p.add_argument("--pvc", action="append", default=[], metavar="CLAIM", help="storage claim to check in each workspace namespace (repeatable)")


def rule_config(args) -> RuleConfig:
    return RuleConfig(system_namespace=args.system_namespace, storage_claims=tuple(args.pvc))


def cmd_status(args) -> int:
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


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="taudash",
        description="Operator console for TauGrid GPU clusters. Without a command, opens the dashboard.",
    )
    p.add_argument("--version", action="version", version=f"taudash {__version__}")
    # Options of the dashboard itself (no command); distinct dests so sub-commands keep their own.
    dash = p.add_argument_group("dashboard (no command)")
    dash.add_argument("--snapshot", dest="dash_snapshot", metavar="FILE", help="open the dashboard on a snapshot file (read-only)")
    dash.add_argument("--context", dest="dash_context", metavar="NAME", help="open the dashboard on a live context")
    dash.add_argument("--kubeconfig", dest="dash_kubeconfig", metavar="FILE",
                      help="kubeconfig path (default: $KUBECONFIG, then ~/.kube/config)")
    dash.add_argument("--read-only", dest="dash_read_only", action="store_true", help="never send a write request (snapshots always are)")
    dash.add_argument("--system-namespace", dest="dash_system_namespace", default="tau-system", metavar="NS",
                      help="where TauGrid objects live (default tau-system)")
    dash.add_argument("--pvc", dest="dash_pvc", action="append", default=[], metavar="CLAIM",
                      help="storage claim to check in each workspace namespace (repeatable)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    s = sub.add_parser("status", help="print the derived cluster status (the output contract)")
    add_source_args(s)
    s.add_argument("-o", "--output", choices=("json", "yaml", "table"), default="table")
    s.set_defaults(func=cmd_status)

    c = sub.add_parser("check", help="exit 1 when any critical finding exists (for alerts and scripts)")
    add_source_args(c)
    c.add_argument("-v", "--verbose", action="store_true", help="list warnings and info findings too")
    c.set_defaults(func=cmd_check)

    from .commands import register_all

    register_all(sub, add_source_args)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        from .commands.dashboard import run_default

        return _guard(lambda: run_default(args))
    return _guard(lambda: args.func(args))


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
