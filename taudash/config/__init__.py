"""The config file and the environment, checked strictly; read-only mode, resolved in one place from
every source that can ask for it.

Sources: the `--read-only` flag (anywhere on the command line), `TAUDASH_READ_ONLY=1|true|yes`, and
the config file (`$TAUDASH_CONFIG`, else `$XDG_CONFIG_HOME/taudash/config.yaml`, else
`~/.config/taudash/config.yaml`):

    readOnly: true            # every context
    contexts:
      prod:
        readOnly: true        # only this kubeconfig context

Sources only ever add up: there is no setting that turns read-only off again once one asked for it.
`ReadOnly` keeps the names of the sources that asked so every refusal can say who did.

The file's other keys (`fleet.multiKueueClusters`, `fleet.freshnessBound`, `storage.claims`, `capacity.*`) are in
its schema (schema.py) too: an unknown or misspelt key, or a value of the wrong type, is exit 2 — a
typo never silently means "not asked". Likewise an environment variable that looks like a misspelt
TAUDASH_ name (`check_env_names`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from taudash.engine.rules.base import RuleConfig
from taudash.engine.rules.gpu_health import CapacityConfig
from taudash.engine.rules.gpu_usage import UtilisationConfig

from ..errors import UsageError

ENV_READ_ONLY = "TAUDASH_READ_ONLY"
ENV_CONFIG = "TAUDASH_CONFIG"
# Every environment variable taudash reads (tests/unit/test_config_schema.py checks the sources name no other):
# a name close to one of these is refused as a misspelling (check_env_names).
ENV_NAMES = frozenset({
    ENV_READ_ONLY, ENV_CONFIG,
    "TAUDASH_STATE_DIR",  # journals, audit log, history (engine/paths.py)
    "TAUDASH_WEB_TOKEN",  # the wallboard's and the agent's access token (taudash/serve/access.py)
    "TAUDASH_AGENT_TOKEN",  # the token a fleet from agents presents to them (taudash/agents.py)
    "TAUDASH_KUEUE_CRDS",  # the simulator's Kueue CRDs (taudash/sim/schema)
    "TAUDASH_SERVICEACCOUNT_DIR",  # in a Pod: the ServiceAccount's folder (engine/sources/client.py; tests)
    "TAUDASH_SIM_STRICT",  # the simulator's controllers raise on a refused write (tests)
    "TAUDASH_BENCH_FOLLOW", "TAUDASH_BENCH_PRECOMPOSE", "TAUDASH_BENCH_SWITCH",  # bench measuring knobs
})
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
class AgentSetting:
    """One entry of fleet.agents: an agent's name, URL and the kube context that opens its cluster live."""

    name: str
    url: str
    context: str | None = None


@dataclass(frozen=True)
class Config:
    """The config file's settings (schema: taudash/config/schema.py; every key in the README)."""

    path: Path | None  # None: no config file
    read_only: bool = False
    read_only_contexts: frozenset[str] = frozenset()
    multikueue_clusters: Mapping[str, str] = field(default_factory=dict)  # MultiKueueCluster → kube context
    freshness_bound: float | None = None  # fleet.freshnessBound, seconds
    agents: tuple[AgentSetting, ...] = ()  # fleet.agents: the agents `--fleet-from` names (taudash/agents.py)
    storage_claims: tuple[str, ...] = ()
    capacity: CapacityConfig = field(default_factory=CapacityConfig)  # the `capacity:` section over the defaults
    utilisation: PrometheusSettings = field(default_factory=lambda: PrometheusSettings())  # the `utilisation:` section


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
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UsageError(f"config file {path}: invalid YAML: {what[:120]}{where}") from None
    if doc is None:
        return Config(path)
    if not isinstance(doc, dict):
        raise UsageError(f"config file {path}: expected a mapping, found a {type(doc).__name__}")
    from .schema import parse  # pydantic models are built only when a file has content (start-up time)

    cfg = parse(doc, path, text)
    fleet, storage = cfg.fleet, cfg.storage
    return Config(
        path,
        cfg.readOnly,
        frozenset(name for name, ctx in (cfg.contexts or {}).items() if ctx.readOnly),
        dict(fleet.multiKueueClusters or {}) if fleet else {},
        float(fleet.freshnessBound) if fleet and fleet.freshnessBound is not None else None,
        _agents(fleet.agents if fleet else None, path),
        tuple(dict.fromkeys(storage.claims or ())) if storage else (),
        _capacity(cfg.capacity),
        _utilisation(cfg.utilisation, path),
    )


def _agents(entries, path: Path) -> tuple[AgentSetting, ...]:
    """fleet.agents, checked: each URL http(s)://host[:port][/path], each name once."""
    out: list[AgentSetting] = []
    for i, e in enumerate(entries or ()):
        parts = urlsplit(e.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"config file {path}: fleet.agents.{i}.url must be the agent's URL "
                             f"(http(s)://host:port), not {e.url!r}")
        if any(a.name == e.name for a in out):
            raise UsageError(f"config file {path}: fleet.agents.{i}.name: {e.name!r} names two agents")
        out.append(AgentSetting(e.name, e.url, e.context))
    return tuple(out)


def _utilisation(section, path: Path) -> PrometheusSettings:
    if section is None:
        return PrometheusSettings()
    numbers = {"idle_below_percent": section.idleBelowPercent, "interval_seconds": section.intervalSeconds,
               "timeout_seconds": section.timeoutSeconds}
    out: dict[str, Any] = {k: float(v) for k, v in numbers.items() if v is not None}
    if section.prometheus is not None:
        out["url"] = check_prometheus_url(section.prometheus, f"config file {path}: utilisation.prometheus")
    return replace(PrometheusSettings(), **out)


def _capacity(section) -> CapacityConfig:
    """The capacity rules' health classes and tolerated taints: each key given replaces its default."""
    if section is None:
        return CapacityConfig()
    given = {"drain_conditions": section.drainConditions, "taint_conditions": section.taintConditions,
             "unknown_conditions": section.unknownConditions, "tolerated_taints": section.toleratedTaints}
    out: dict[str, Any] = {k: tuple(dict.fromkeys(v)) for k, v in given.items() if v is not None}
    if section.idleMinutes is not None:
        out["idle_minutes"] = section.idleMinutes
    return replace(CapacityConfig(), **out)


def env_read_only(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    value = env.get(ENV_READ_ONLY, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    # An unreadable value asked for *something*: refuse rather than guess it meant "writable".
    raise UsageError(f"{ENV_READ_ONLY}={env[ENV_READ_ONLY]!r}: expected 1, true or yes (or 0, false, no)"[:200])


def check_env_names(environ: Mapping[str, str] | None = None) -> None:
    """Refuse an environment variable that looks like a misspelling of one taudash reads (docs/decisions.md):
    equal to a known name ignoring case, `_` and `-`; or ≥ 90 % similar to one; or starting with TAUDASH_
    and ≥ 85 % similar. Other TAUDASH_ names are left alone (another version's, a script's own)."""
    from difflib import SequenceMatcher

    env = os.environ if environ is None else environ
    # One matcher per known name (it indexes its second sequence once); the cheap upper bounds first:
    # almost every other name fails them (this runs at every start).
    matchers = [(k, SequenceMatcher(None, "", k)) for k in sorted(ENV_NAMES)]
    squashed = {k.replace("_", ""): k for k in ENV_NAMES}
    for name in sorted(env):
        if name in ENV_NAMES:
            continue
        upper = name.upper()
        meant = squashed.get(upper.replace("_", "").replace("-", ""))
        floor = 0.85 if upper.startswith("TAUDASH_") else 0.9
        if meant is None:
            close = []
            for known, m in matchers:
                m.set_seq1(upper)
                if m.real_quick_ratio() >= floor and m.quick_ratio() >= floor and m.ratio() >= floor:
                    close.append((m.ratio(), known))
            meant = max(close)[1] if close else None
        if meant:
            raise UsageError(f"environment variable {name} is not one taudash reads (did you mean {meant}?); "
                             "unset it or fix its name")


def check(environ: Mapping[str, str] | None = None) -> Config:
    """Validate the environment and the config file up front (exit 2 on a malformed one); the file's settings."""
    check_env_names(environ)
    env_read_only(environ)
    return load_config(environ)


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


def rule_config(args: Any) -> RuleConfig:
    """The rules' settings from a program's arguments: every command and `serve` build them here, so the config
    file's `capacity:` and `utilisation:` sections (set on the arguments by the CLI) reach them all."""
    capacity = getattr(args, "capacity_config", None)
    return RuleConfig(system_namespace=args.system_namespace, storage_claims=tuple(args.pvc),
                      utilisation=utilisation_config(args, capacity or CapacityConfig()),
                      **({"capacity": capacity} if capacity is not None else {}))


@dataclass(frozen=True)
class PrometheusSettings:
    """The `utilisation:` section: where Prometheus is (empty: utilisation off) and how it is read."""

    url: str = ""
    idle_below_percent: float = 5.0
    interval_seconds: float = 60.0
    timeout_seconds: float = 10.0


def check_prometheus_url(url: str, where: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"{where} {url!r}: a Prometheus URL, http://host:port or https://host:port")
    return url


_FEEDS: dict[tuple[Any, ...], Any] = {}


def utilisation_config(args: Any, capacity: CapacityConfig) -> UtilisationConfig:
    """The utilisation rule's settings: `--prometheus URL` over the config file's `utilisation.prometheus`; with a
    URL, the feed that reads it (one per URL and settings in a process; it starts querying when a derivation first
    asks, so a command that never derives the view never queries)."""
    settings = getattr(args, "utilisation_settings", None) or PrometheusSettings()
    if not getattr(args, "reads_utilisation", False) and getattr(args, "command", None) is not None:
        settings = PrometheusSettings()  # a program that takes no --prometheus (what-if, why) never queries it
    flag = getattr(args, "prometheus", None)
    url = check_prometheus_url(flag, "--prometheus") if flag else settings.url
    base = UtilisationConfig(idle_below_percent=settings.idle_below_percent,
                             interval_seconds=settings.interval_seconds, timeout_seconds=settings.timeout_seconds)
    if not url:
        return base
    from ..engine.sources.prometheus import PrometheusFeed

    key = (url, settings.idle_below_percent, settings.interval_seconds, settings.timeout_seconds,
           capacity.idle_minutes)
    feed = _FEEDS.get(key)
    if feed is None:
        feed = _FEEDS[key] = PrometheusFeed(url, threshold=settings.idle_below_percent,
                                            idle_seconds=capacity.idle_minutes * 60.0,
                                            interval=settings.interval_seconds,
                                            timeout=settings.timeout_seconds)
    return replace(base, feed=feed)
