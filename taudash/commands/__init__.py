"""The sub-commands, one module each; each exposes `register(sub)`. COMMANDS lists every command in the order
`taudash --help` shows them, with its module and its help line. The options they share live in options.py.

A command's module is imported only when that command is parsed: `taudash --version`, `--help` and every other
command do not pay for the modules (and their imports: aiohttp, the simulator, the workflows) they do not run."""

from __future__ import annotations

import argparse
from importlib import import_module

# (command, module under taudash/commands, the line `taudash --help` shows for it)
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("status", "status", "print the derived cluster status (the output contract)"),
    ("check", "status", "exit 1 when any critical finding exists (for alerts and scripts)"),
    ("demo", "dashboard", "open the dashboard on the embedded simulated cluster"),
    ("profiles", "profiles", "workload profiles: select, export a ready snapshot, verify a snapshot"),
    ("sim", "sim", "the simulated TauGrid cluster (Kubernetes API on loopback)"),
    ("export", "export", "write a ClusterSnapshot file (objects as served + access states; never Secrets; mode 0600)"),
    ("workflow", "workflow", "guided operations: hold/release queues, catalog change, rollback, drain"),
    ("bench", "bench", "measure sync, derivation, UI and memory on a synthetic fleet-scale cluster"),
    ("history", "history", "what the dashboard recorded: preemptions, admission waits, the file"),
    ("serve", "serve", "run headless: derive the view on a timer, export Prometheus metrics"),
    ("why", "why", "why is a Workload waiting: ranked reasons, quota per flavor, the Workloads ahead, preemption"),
    ("capacity", "capacity", "what can start now: free GPUs per flavor, node and topology domain, GPU health, "
                             "gang slots"),
    ("whatif", "whatif", "what if I submit this Job/RayJob/Deployment/Workload: flavor, admission, position, wait, "
                         "preemptions"),
    ("rehearse", "rehearse", "rehearsal reports: what a workflow would do, predicted on a simulated fork"),
    ("deploy", "deploy", "run taudash in the cluster: print its manifests (docs/deploy.md)"),
)


class LazyCommands(argparse._SubParsersAction):
    """The `COMMAND` sub-parsers: each starts as an empty parser carrying only its help line; the first time a
    command is parsed its module's `register` replaces the empty parsers of every command that module declares."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._modules: dict[str, str] = {}  # command -> its module, while its parser is still the empty one

    def add_lazy(self, name: str, module: str, help: str) -> None:
        super().add_parser(name, help=help)
        self._modules[name] = module

    def add_parser(self, name, **kwargs):
        if name in self._modules:  # the module's own parser for a listed command: its help line stays COMMANDS'
            if "help" in kwargs:
                raise ValueError(f"command {name!r}: its help line belongs in taudash/commands/__init__.py COMMANDS")
            del self._modules[name], self._name_parser_map[name]
        return super().add_parser(name, **kwargs)

    def load(self, name: str) -> None:
        module = self._modules.get(name)
        if module is not None:
            import_module(f"{__name__}.{module}").register(self)
            if self._modules.get(name) == module:
                raise RuntimeError(f"taudash/commands/{module}.py did not register the command {name!r}")

    def __call__(self, parser, namespace, values, option_string=None):
        self.load(values[0])
        super().__call__(parser, namespace, values, option_string)


def register_all(sub: LazyCommands) -> None:
    for name, module, help in COMMANDS:
        sub.add_lazy(name, module, help)


def load_all(sub: LazyCommands) -> None:
    """Every command's real parser (what walks them all: the docs, the tests of every option)."""
    for name, _, _ in COMMANDS:
        sub.load(name)
