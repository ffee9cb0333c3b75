"""Read-only mode, resolved in one place from every source that can ask for it.

Sources: the `--read-only` flag (anywhere on the command line), `TAUDASH_READ_ONLY=1|true|yes`, and
the config file (`$TAUDASH_CONFIG`, else `$XDG_CONFIG_HOME/taudash/config.yaml`, else
`~/.config/taudash/config.yaml`):

    readOnly: true            # every context
    contexts:
      prod:
        readOnly: true        # only this kubeconfig context

Sources only ever add up: there is no setting that turns read-only off again once one asked for it.
`ReadOnly` keeps the names of the sources that asked so every refusal can say who did.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import UsageError

ENV_READ_ONLY = "TAUDASH_READ_ONLY"
ENV_CONFIG = "TAUDASH_CONFIG"
FLAG_SOURCE = "--read-only flag"

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


@dataclass(frozen=True)
class ReadOnly:
    """Who asked for read-only mode; empty means writable. Combine with `|` (a union: sticky)."""

    sources: tuple[str, ...] = ()  # full names: "config file /etc/x.yaml (context prod)"
    short: tuple[str, ...] = ()  # the same, short enough for the header badge: "config: context prod"

    @classmethod
    def asked(cls, source: str, short: str | None = None) -> ReadOnly:
        return cls((source,), (short or source,))

    def __bool__(self) -> bool:
        return bool(self.sources)

    def __or__(self, other: ReadOnly) -> ReadOnly:
        new = [i for i, s in enumerate(other.sources) if s not in self.sources]
        return ReadOnly(self.sources + tuple(other.sources[i] for i in new),
                        self.short + tuple(other.short[i] for i in new))

    @property
    def badge(self) -> str:
        return ", ".join(self.short)

    @property
    def asked_by(self) -> str:
        return ", ".join(self.sources)

    @property
    def why(self) -> str:
        """The reason every refused write carries (Actions.read_only)."""
        return f"read-only mode (asked by {self.asked_by})" if self else ""


@dataclass(frozen=True)
class Config:
    path: Path | None  # None: no config file
    read_only: bool = False
    read_only_contexts: frozenset[str] = frozenset()


def config_path(environ: Mapping[str, str] | None = None) -> tuple[Path, bool]:
    """(path, named explicitly): an explicitly named file must exist; the default one may not."""
    env = os.environ if environ is None else environ
    if env.get(ENV_CONFIG):
        return Path(env[ENV_CONFIG]).expanduser(), True
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return base / "taudash" / "config.yaml", False


def load_config(environ: Mapping[str, str] | None = None) -> Config:
    path, explicit = config_path(environ)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:  # a named file that is missing must not silently mean "writable"
            raise UsageError(f"config file {path} ({ENV_CONFIG}): no such file") from None
        return Config(None)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"config file {path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"config file {path}: invalid YAML: {str(exc).splitlines()[0][:120]}") from None
    if doc is None:
        return Config(path)
    if not isinstance(doc, dict):
        raise UsageError(f"config file {path}: expected a mapping, found a {type(doc).__name__}")
    read_only = _flag(doc, "readOnly", path, "readOnly")
    contexts = doc.get("contexts", {})
    if contexts is None:
        contexts = {}
    if not isinstance(contexts, dict):
        raise UsageError(f"config file {path}: contexts must be a mapping of context name to settings")
    names = set()
    for name, settings in contexts.items():
        if not isinstance(settings, dict):
            raise UsageError(f"config file {path}: contexts.{name} must be a mapping")
        if _flag(settings, "readOnly", path, f"contexts.{name}.readOnly"):
            names.add(str(name))
    return Config(path, read_only, frozenset(names))


def _flag(doc: dict, key: str, path: Path, where: str) -> bool:
    value = doc.get(key, False)
    if not isinstance(value, bool):
        raise UsageError(f"config file {path}: {where} must be true or false, not {value!r}"[:200])
    return value


def env_read_only(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    value = env.get(ENV_READ_ONLY, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    # An unreadable value asked for *something*: refuse rather than guess it meant "writable".
    raise UsageError(f"{ENV_READ_ONLY}={env[ENV_READ_ONLY]!r}: expected 1, true or yes (or 0, false, no)"[:200])


def check(environ: Mapping[str, str] | None = None) -> None:
    """Validate the environment and the config file up front (exit 2 on a malformed one)."""
    env_read_only(environ)
    load_config(environ)


def resolve_read_only(flag: bool | ReadOnly = False, context: str | None = None,
                      environ: Mapping[str, str] | None = None) -> ReadOnly:
    """Every source that asks for read-only mode for `context` (None: the context is not known yet,
    so only the sources that apply to every context count)."""
    asked = flag if isinstance(flag, ReadOnly) else (ReadOnly.asked(FLAG_SOURCE, "--read-only") if flag else ReadOnly())
    if env_read_only(environ):
        asked |= ReadOnly.asked(ENV_READ_ONLY)
    cfg = load_config(environ)
    if cfg.read_only:
        asked |= ReadOnly.asked(f"config file {cfg.path}", "config file")
    if context is not None and context in cfg.read_only_contexts:
        asked |= ReadOnly.asked(f"config file {cfg.path} (context {context})", f"config file: context {context}")
    return asked
