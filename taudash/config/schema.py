"""The config file's typed schema: every key taudash reads, nothing else (imported only when a file has content).

An unknown key, or a value of the wrong type, is refused with one line naming the key's path, the
nearest known key and the line in the file: a misspelt `readonly:` must never be read as "not asked".
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError

from ..errors import UsageError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ContextSettings(_Section):
    readOnly: StrictBool = False


class AgentSettings(_Section):
    name: StrictStr
    url: StrictStr
    context: StrictStr | None = None


class FleetSettings(_Section):
    agents: list[AgentSettings] | None = None
    multiKueueClusters: dict[StrictStr, StrictStr] | None = None
    freshnessBound: Annotated[StrictInt | StrictFloat, Field(ge=2, le=3600, allow_inf_nan=False)] | None = None


class StorageSettings(_Section):
    claims: list[StrictStr] | None = None


class CapacitySettings(_Section):
    drainConditions: list[StrictStr] | None = None
    taintConditions: list[StrictStr] | None = None
    unknownConditions: list[StrictStr] | None = None
    toleratedTaints: list[StrictStr] | None = None
    idleMinutes: Annotated[StrictInt, Field(ge=1, le=10080)] | None = None


class UtilisationSettings(_Section):
    prometheus: StrictStr | None = None
    idleBelowPercent: Annotated[StrictInt | StrictFloat, Field(ge=0, le=100, allow_inf_nan=False)] | None = None
    intervalSeconds: Annotated[StrictInt | StrictFloat, Field(ge=5, le=3600, allow_inf_nan=False)] | None = None
    timeoutSeconds: Annotated[StrictInt | StrictFloat, Field(ge=1, le=120, allow_inf_nan=False)] | None = None


class ConfigFile(_Section):
    readOnly: StrictBool = False
    contexts: dict[str, ContextSettings] | None = None
    fleet: FleetSettings | None = None
    storage: StorageSettings | None = None
    capacity: CapacitySettings | None = None
    utilisation: UtilisationSettings | None = None


# What a value at each path must be (`*`: any context name or map key), in the file's words.
_MUST = {
    ("readOnly",): "must be true or false",
    ("contexts",): "must be a mapping of context name to settings",
    ("contexts", "*"): "must be a mapping",
    ("contexts", "*", "readOnly"): "must be true or false",
    ("fleet",): "must be a mapping",
    ("fleet", "agents"): "must be a list of agents, each {name, url[, context]}",
    ("fleet", "agents", "*"): "must be a mapping with name and url",
    ("fleet", "agents", "*", "name"): "must be the agent's name (a string)",
    ("fleet", "agents", "*", "url"): "must be the agent's URL (http(s)://host:port)",
    ("fleet", "agents", "*", "context"): "must be the kube context that opens its cluster live",
    ("fleet", "multiKueueClusters"): "must map MultiKueueCluster names to contexts",
    ("fleet", "multiKueueClusters", "*"): "must be a kube context name",
    ("fleet", "freshnessBound"): "must be a number of seconds from 2 to 3600",
    ("storage",): "must be a mapping",
    ("storage", "claims"): "must be a list of PersistentVolumeClaim names",
    ("capacity",): "must be a mapping",
    ("capacity", "drainConditions"): "must be a list of Node condition types",
    ("capacity", "taintConditions"): "must be a list of Node condition types",
    ("capacity", "unknownConditions"): "must be a list of Node condition types",
    ("capacity", "toleratedTaints"): "must be a list of taint keys (key or key=value)",
    ("capacity", "idleMinutes"): "must be a whole number of minutes from 1 to 10080",
    ("utilisation",): "must be a mapping",
    ("utilisation", "prometheus"): "must be a Prometheus URL (http://host:port)",
    ("utilisation", "idleBelowPercent"): "must be a percentage from 0 to 100",
    ("utilisation", "intervalSeconds"): "must be a number of seconds from 5 to 3600",
    ("utilisation", "timeoutSeconds"): "must be a number of seconds from 1 to 120",
}


def _sections(model: type[BaseModel], at: tuple[str, ...] = ()) -> dict[tuple[str, ...], type[BaseModel]]:
    """Every section of the schema by its path (`*` for the names of a mapping of sections)."""
    out: dict[tuple[str, ...], type[BaseModel]] = {at: model}
    for name, info in model.model_fields.items():
        for arg in get_args(info.annotation) or (info.annotation,):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                out |= _sections(arg, (*at, name))
            elif get_origin(arg) in (dict, list) and isinstance(get_args(arg)[-1], type) and issubclass(
                    get_args(arg)[-1], BaseModel):
                out |= _sections(get_args(arg)[-1], (*at, name, "*"))
    return out


def _maps() -> set[tuple[str, ...]]:
    """The paths whose keys are names (a context, a MultiKueueCluster), not schema keys."""
    out: set[tuple[str, ...]] = set()
    for path, section in _SECTIONS.items():
        for name, info in section.model_fields.items():
            if any(get_origin(a) is dict for a in get_args(info.annotation) or (info.annotation,)):
                out.add((*path, name))
    return out | _LISTS


def _lists(model: type[BaseModel], at: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """The paths that are lists of sections (`fleet.agents`): their indexes are `*`, the list is one key."""
    out: set[tuple[str, ...]] = set()
    for name, info in model.model_fields.items():
        for arg in get_args(info.annotation) or (info.annotation,):
            if get_origin(arg) is list and isinstance(get_args(arg)[0], type) and issubclass(get_args(arg)[0],
                                                                                             BaseModel):
                out.add((*at, name))
            elif isinstance(arg, type) and issubclass(arg, BaseModel):
                out |= _lists(arg, (*at, name))
    return out


_SECTIONS = _sections(ConfigFile)
_LISTS = _lists(ConfigFile)
_MAPS = _maps()


def key_paths() -> list[str]:
    """Every key of the file, dotted (`contexts.*.readOnly`): the leaves, as the README documents them."""
    return [".".join((*path, name)) for path, section in _SECTIONS.items() for name in section.model_fields
            if not any(path[:len(lst) + 1] == (*lst, "*") for lst in _LISTS)  # a list's entries: under its key
            and (*path, name) not in _SECTIONS and ((*path, name, "*") not in _SECTIONS or (*path, name) in _LISTS)]


def parse(doc: dict, path: Path, text: str) -> ConfigFile:
    """The validated file, or UsageError naming the first bad key (its path, the nearest known key, its line)."""
    # Unquoted context names such as `123` are YAML integers: a context name is a string.
    if isinstance(doc.get("contexts"), dict):
        doc = {**doc, "contexts": {str(k): v for k, v in doc["contexts"].items()}}
    try:
        return ConfigFile.model_validate(doc)
    except ValidationError as exc:
        errors = exc.errors()
        # A misspelt key is also a required key missing: the misspelling is what to say.
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        raise UsageError(_explain(first, doc, path, text)) from None


def _explain(error: Any, doc: dict, path: Path, text: str) -> str:
    loc = tuple(str(p) for p in error["loc"])
    if error["type"] == "extra_forbidden":
        parent, key = loc[:-1], loc[-1]
        known = list(_SECTIONS[_pattern(parent)].model_fields)
        hint = nearest(key, known)
        why = (f"unknown key {_dotted(loc)} (did you mean {hint}?)" if hint
               else f"unknown key {_dotted(loc)} (known here: {', '.join(known)})")
    else:
        where = _known_prefix(loc)
        why = f"{_dotted(where)} {_MUST[_pattern(where)]}, not {_shown(_value_in(doc, where))}"
    line = line_of(text, loc)
    return f"config file {path}: {why}" + (f" (line {line})" if line else "")


def nearest(name: str, known: list[str]) -> str | None:
    """The known name `name` most likely meant: equal ignoring case, `_` and `-` first, else the closest by
    difflib (case-insensitive), else None."""
    def norm(s: str) -> str:
        return s.lower().replace("_", "").replace("-", "")

    same = [k for k in known if norm(k) == norm(name)]
    if same:
        return same[0]
    close = difflib.get_close_matches(name.lower(), [k.lower() for k in known], n=1, cutoff=0.6)
    return next((k for k in known if close and k.lower() == close[0]), None)


def _pattern(loc: tuple[str, ...]) -> tuple[str, ...]:
    """The schema path of a location: context names and map keys become `*`."""
    out: list[str] = []
    for part in loc:
        parent = tuple(out)
        out.append("*" if parent in _MAPS else part)
    return tuple(out)


def _known_prefix(loc: tuple[str, ...]) -> tuple[str, ...]:
    """The longest prefix of `loc` the schema describes (pydantic adds union tags and map keys after it)."""
    if "[key]" in loc:  # a map's key of the wrong type: the map is what is wrong
        loc = loc[:loc.index("[key]") - 1]
    for n in range(len(loc), 0, -1):
        if _pattern(loc[:n]) in _MUST:
            return loc[:n]
    return loc[:1]


def _value_in(doc: Any, where: tuple[str, ...]) -> Any:
    """The whole value at `where` (pydantic's error carries only the innermost bad part)."""
    for part in where:
        if isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            doc = doc.get(part) if isinstance(doc, dict) else None
    return doc


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)[:60]


def _dotted(loc: tuple[str, ...]) -> str:
    return ".".join(loc)


def line_of(text: str, loc: tuple[str, ...]) -> int | None:
    """The 1-based line of the deepest key of `loc` found in the YAML text (best effort; None if not found)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = None
    for part in loc:
        if isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
            continue
        if not isinstance(node, yaml.MappingNode):
            break
        hit = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
        if hit is None:
            break
        line, node = hit[0].start_mark.line + 1, hit[1]
    return line
