"""The `taudash` command line: the parser and the dispatch. Each command is a module of taudash/commands/
(registered in commands/__init__.py); the options they share are commands/options.py."""

from __future__ import annotations

import argparse
import sys
from typing import cast

from taudash.engine.text import clean

from . import __version__
from .commands import LazyCommands, load_all, register_all
from .commands.options import DASHBOARD, add_global_options, add_prometheus_arg, merge_global_options
from .errors import EXIT_BAD_INPUT, EXIT_OK, Unreachable, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, no usage dump
        print(f"taudash: {message} (see --help)", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser(*, every_command: bool = False) -> argparse.ArgumentParser:
    """The parser; a command's own parser is built when that command is parsed, or now with `every_command`."""
    p = _Parser(
        prog="taudash",
        description="Operator console for TauGrid GPU clusters. Without a command, opens the dashboard.",
    )
    p.add_argument("--version", action="version", version=f"taudash {__version__}")
    add_global_options(p, DASHBOARD)
    add_prometheus_arg(p, command=False)  # the dashboard (no command); commands that derive take it too
    p.set_defaults(_repeatable=frozenset({"context"}))  # the dashboard over several clusters: a fleet
    sub = cast(LazyCommands, p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser,
                                              action=LazyCommands))
    register_all(sub)
    if every_command:
        load_all(sub)
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line as every command sees it: parsed, with the global options folded into one value each."""
    return merge_global_options(build_parser().parse_args(argv))


def main(argv: list[str] | None = None) -> int:
    from .runtime import tune_gc_for_long_lived_model

    # The process's memory policy (docs/decisions.md): every command lists or holds a fleet-scale model;
    # the engine itself never touches the collector. Set before parsing, which imports the command's
    # modules: their classes and schemas are long-lived too (young collections during that import were
    # ~5% of a snapshot `status`).
    tune_gc_for_long_lived_model()
    parser = build_parser()
    args = parser.parse_args(argv)
    return _guard(lambda: _dispatch(args))


def _dispatch(args) -> int:
    from . import config

    merge_global_options(args)
    settings = config.check()  # a malformed TAUDASH_ variable or config file is bad input for every command
    if "pvc" in getattr(args, "_uses", ()):  # the config file's storage.claims add to --pvc
        args.pvc = list(dict.fromkeys([*args.pvc, *settings.storage_claims]))
    args.capacity_config = settings.capacity  # GPU health classes and tolerated taints (rule_config passes them)
    args.utilisation_settings = settings.utilisation  # Prometheus for GPU utilisation (rule_config builds its feed)
    if not getattr(args, "command", None):
        from .commands.dashboard import run_default

        return run_default(args)
    return args.func(args)


def _guard(fn) -> int:
    try:
        code = fn()
    except (UsageError, Unreachable) as exc:
        print(f"taudash: {clean(str(exc))}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    return code if isinstance(code, int) else EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
