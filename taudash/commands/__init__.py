"""Sub-commands beyond status/check, one module each; each exposes `register(sub, add_source_args)`."""

from __future__ import annotations

import importlib

MODULES = ("dashboard", "profiles", "sim", "export", "workflow", "bench", "history", "serve", "why", "rehearse")


def register_all(sub, add_source_args) -> None:
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}").register(sub, add_source_args)
