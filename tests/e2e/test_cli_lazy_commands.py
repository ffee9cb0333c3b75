"""A command's module loads only when that command is parsed (taudash/commands/__init__.py): `--version` and
`--help` import none, a command imports its own; `--help` still lists every command with its help line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from taudash.cli import build_parser
from taudash.commands import COMMANDS, LazyCommands


def _commands(parser):
    return next(a for a in parser._actions if isinstance(a, LazyCommands))


def _loaded_after(argv: list[str]) -> list[str]:
    """The taudash.commands modules a fresh process imported to parse argv (parsing may exit: --help, --version)."""
    code = ("import json, sys\nfrom taudash.cli import build_parser\ntry:\n    build_parser().parse_args(sys.argv[1:])\n"
            "except SystemExit:\n    pass\nprint(json.dumps(sorted(m for m in sys.modules "
            "if m.startswith('taudash.commands.') and m != 'taudash.commands.options')))")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_version_and_help_import_no_command_module():
    assert _loaded_after(["--version"]) == []
    assert _loaded_after(["--help"]) == []


def test_a_command_imports_its_own_module_only():
    assert _loaded_after(["check", "--demo"]) == ["taudash.commands.status"]
    assert _loaded_after(["sim", "serve", "--help"]) == ["taudash.commands.sim"]


def test_help_lists_every_command_with_its_line(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the lines
    for name, _, line in COMMANDS:
        assert f"{name} {' '.join(line.split())}" in text, name


def test_every_module_registers_the_commands_it_is_listed_for():
    lazy = _commands(build_parser(every_command=True))
    assert [c.dest for c in lazy._choices_actions] == [name for name, _, _ in COMMANDS]  # each listed once
    for name, _, _ in COMMANDS:  # the real parser: it knows its command's function (or its sub-commands)
        parser = lazy.choices[name]
        assert parser.get_default("func") or any(a.dest != "help" and a.nargs == "A..." for a in parser._actions), name
    assert build_parser().parse_args(["status", "--demo", "-o", "json"]).output == "json"


def test_a_module_that_gives_its_own_help_line_or_misses_its_command_fails(monkeypatch):
    import taudash.commands as commands

    class Module:
        @staticmethod
        def register(sub):
            sub.add_parser("status", help="a second line that would drift from COMMANDS")

    monkeypatch.setattr(commands, "import_module", lambda name: Module)
    with pytest.raises(ValueError, match="COMMANDS"):
        build_parser().parse_args(["status"])

    class Silent:
        @staticmethod
        def register(sub):
            pass

    monkeypatch.setattr(commands, "import_module", lambda name: Silent)
    with pytest.raises(RuntimeError, match="did not register the command 'why'"):
        build_parser().parse_args(["why"])
