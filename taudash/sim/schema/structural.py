"""Kubernetes structural-schema validation of one object, as the API server applies a CRD's schema.

One walk over the object does what the API server does to a custom resource on a write: drop nulls
of non-nullable fields, prune unknown fields (or report them for `fieldValidation=Strict`), apply
`default`s, then validate `type`/`format`/`enum`/bounds/`pattern`/`required`, list-type uniqueness
and the CEL rules (`x-kubernetes-validations`, transition rules against the old object). Schemas
are compiled once into `Node`s (a CRD version is compiled on first use and cached).

Messages and reasons follow the API server's field errors (`spec.x: Required value`,
`Unsupported value: "X": supported values: ...`, `Invalid value: "object": <rule message>`).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from taudash.sim.schema.cel import CelError, CelUnsupported, Program, compile_rule, to_callable, uses_old_self

Cause = tuple[str, str, str]  # (field path, reason, message)

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_ROOT_KEPT = ("apiVersion", "kind", "metadata")  # the API server owns these at the root (and in embedded objects)


@dataclass
class Rule:
    source: str
    message: str
    program: Program | None  # None: skipped (not in the supported CEL subset)
    transition: bool
    skip_reason: str = ""


@dataclass
class Node:
    """A compiled schema node."""

    type: str | None = None
    nullable: bool = False
    properties: dict[str, Node] | None = None
    required: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)
    items: Node | None = None
    additional: Node | None = None  # additionalProperties schema (a map)
    preserve_unknown: bool = False
    embedded: bool = False
    int_or_string: bool = False
    enum: tuple[Any, ...] | None = None
    format: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    min_properties: int | None = None
    max_properties: int | None = None
    pattern: re.Pattern[str] | None = None
    pattern_text: str = ""
    list_type: str | None = None
    list_map_keys: tuple[str, ...] = ()
    rules: list[Rule] = field(default_factory=list)
    has_transition: bool = False  # a transition rule here or below: never ratcheted


_INLINE_FLAGS = re.compile(r"\(\?([ims]+)\)")


def re2(pattern: str) -> re.Pattern[str]:
    """Compile a Go (RE2) pattern: RE2 allows `(?i)` mid-pattern (`^(?i)[a-z]...`), Python only at
    the start, so a later flag group becomes a scoped `(?i:...)` over the rest of the pattern."""
    m = _INLINE_FLAGS.search(pattern)
    if m is not None and m.start() > 0:
        pattern = f"{pattern[:m.start()]}(?{m.group(1)}:{pattern[m.end():]})"
    return re.compile(pattern)


def compile_schema(schema: dict[str, Any]) -> Node:
    """Compile an openAPIV3Schema (structural) into Nodes; CEL rules are parsed here, once."""
    n = Node(
        type=schema.get("type"),
        nullable=bool(schema.get("nullable")),
        required=tuple(schema.get("required") or ()),
        preserve_unknown=bool(schema.get("x-kubernetes-preserve-unknown-fields")),
        embedded=bool(schema.get("x-kubernetes-embedded-resource")),
        int_or_string=bool(schema.get("x-kubernetes-int-or-string")),
        enum=tuple(schema["enum"]) if "enum" in schema else None,
        format=schema.get("format"),
        minimum=schema.get("minimum"),
        maximum=schema.get("maximum"),
        exclusive_minimum=bool(schema.get("exclusiveMinimum")),
        exclusive_maximum=bool(schema.get("exclusiveMaximum")),
        min_length=schema.get("minLength"),
        max_length=schema.get("maxLength"),
        min_items=schema.get("minItems"),
        max_items=schema.get("maxItems"),
        min_properties=schema.get("minProperties"),
        max_properties=schema.get("maxProperties"),
        list_type=schema.get("x-kubernetes-list-type"),
        list_map_keys=tuple(schema.get("x-kubernetes-list-map-keys") or ()),
    )
    if "pattern" in schema:
        n.pattern_text = schema["pattern"]
        n.pattern = re2(schema["pattern"])
    if "properties" in schema:
        n.properties = {k: compile_schema(v) for k, v in schema["properties"].items()}
        n.defaults = {k: v["default"] for k, v in schema["properties"].items() if "default" in v}
    if isinstance(schema.get("items"), dict):
        n.items = compile_schema(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        n.additional = compile_schema(schema["additionalProperties"])
    elif schema.get("additionalProperties") is True:
        n.preserve_unknown = True
    for rule in schema.get("x-kubernetes-validations") or ():
        src = rule["rule"]
        message = rule.get("message") or f"failed rule: {src}"
        try:
            program = compile_rule(src)
        except CelUnsupported as exc:
            n.rules.append(Rule(src, message, None, False, str(exc)))
            continue
        if "messageExpression" in rule or "optionalOldSelf" in rule or "fieldPath" in rule:
            n.rules.append(Rule(src, message, None, False, "messageExpression/optionalOldSelf/fieldPath"))
            continue
        n.rules.append(Rule(src, message, to_callable(program), uses_old_self(program)))
    children = [*(n.properties or {}).values(), n.items, n.additional]
    n.has_transition = any(r.transition for r in n.rules) or any(c.has_transition for c in children if c is not None)
    return n


@dataclass
class Outcome:
    """What one validation found."""

    causes: list[Cause] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # pruned (or, Strict, refused) field paths
    rules_evaluated: int = 0
    rules_skipped: int = 0
    ratcheted: int = 0  # unchanged subtrees of an update left as stored
    skipped_rules: set[str] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not self.causes


def _typename(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _show(value: Any) -> str:
    """A value as the API server prints it in `Invalid value: ...`."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    return json.dumps(value)


def _type_ok(want: str, value: Any) -> bool:
    if want == "object":
        return isinstance(value, dict)
    if want == "array":
        return isinstance(value, list)
    if want == "string":
        return isinstance(value, str)
    if want == "boolean":
        return isinstance(value, bool)
    if want == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if want == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _date_time_ok(text: str) -> bool:
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return "T" in text or "t" in text


class _Walk:
    def __init__(self, out: Outcome) -> None:
        self.out = out

    def fail(self, path: str, reason: str, message: str) -> None:
        self.out.causes.append((path, reason, message))

    # pruning, null-dropping and defaulting (mutates `value`), then validation
    def visit(self, node: Node, value: Any, old: Any, path: str, root: bool = False) -> None:
        if old is not None and not node.has_transition and value == old:
            # Ratcheting (the API server's CRDValidationRatcheting): an update leaves a value it does
            # not change as stored, unvalidated; only transition rules always run. It also keeps a
            # status write from re-walking an unchanged spec.
            self.out.ratcheted += 1
            return
        if node.int_or_string:
            if not (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))):
                self.fail(path, "FieldValueTypeInvalid",
                          f"Invalid value: {_show(value)}: {path} in body must be of type int-or-string: "
                          f'"{_typename(value)}"')
                return
        elif node.type and not _type_ok(node.type, value):
            self.fail(path, "FieldValueTypeInvalid",
                      f'Invalid value: "{_typename(value)}": {path} in body must be of type {node.type}: '
                      f'"{_typename(value)}"')
            return
        if isinstance(value, dict):
            self.visit_object(node, value, old if isinstance(old, dict) else None, path, root)
        elif isinstance(value, list):
            self.visit_list(node, value, old if isinstance(old, list) else None, path)
        else:
            self.scalar(node, value, path)
        if node.rules:
            self.run_rules(node, value, old, path)

    def visit_object(self, node: Node, value: dict[str, Any], old: dict[str, Any] | None, path: str,
                     root: bool) -> None:
        keep_meta = root or node.embedded
        props = node.properties
        if props is not None or node.additional is not None or not node.preserve_unknown:
            for key in list(value):
                if keep_meta and key in _ROOT_KEPT:
                    continue
                child = props.get(key) if props is not None else node.additional
                if child is None and props is not None and node.additional is not None:
                    child = node.additional
                if child is None:
                    if node.preserve_unknown:
                        continue
                    self.out.unknown.append(_join(path, key))
                    del value[key]
                elif value[key] is None and not child.nullable:
                    del value[key]  # the API server drops nulls of non-nullable fields
        for key, default in node.defaults.items():
            if key not in value:
                value[key] = copy.deepcopy(default)
        for key in node.required:
            if key not in value:
                self.fail(_join(path, key), "FieldValueRequired", "Required value")
        n = len(value)
        if node.max_properties is not None and n > node.max_properties:
            self.fail(path, "FieldValueTooMany", f"Too many: {n}: must have at most {node.max_properties} items")
        if node.min_properties is not None and n < node.min_properties:
            self.fail(path, "FieldValueInvalid",
                      f"Invalid value: {n}: {path} in body should have at least {node.min_properties} properties")
        for key, child_value in value.items():
            if keep_meta and key in _ROOT_KEPT:
                continue
            child = props.get(key) if props is not None else None
            if child is None:
                child = node.additional
            if child is None:
                continue  # preserved unknown field
            if child_value is None:
                continue  # nullable null
            self.visit(child, child_value, old.get(key) if old is not None else None,
                       _join(path, key, mapkey=props is None))

    def visit_list(self, node: Node, value: list[Any], old: list[Any] | None, path: str) -> None:
        n = len(value)
        if node.max_items is not None and n > node.max_items:
            self.fail(path, "FieldValueTooMany", f"Too many: {n}: must have at most {node.max_items} items")
        if node.min_items is not None and n < node.min_items:
            self.fail(path, "FieldValueInvalid",
                      f"Invalid value: {n}: {path} in body should have at least {node.min_items} items")
        old_by_key: dict[Any, Any] = {}
        if node.list_type == "map" and old is not None and node.list_map_keys:
            for item in old:
                if isinstance(item, dict):
                    old_by_key[self._map_key(node, item)] = item
        if node.items is not None:
            for i, item in enumerate(value):
                if item is None and not node.items.nullable:
                    self.fail(f"{path}[{i}]", "FieldValueTypeInvalid",
                              f'Invalid value: "null": {path}[{i}] in body must be of type {node.items.type}: "null"')
                    continue
                # Only list-type=map items correlate with an old item (for transition rules).
                old_item = old_by_key.get(self._map_key(node, item)) if old_by_key and isinstance(item, dict) else None
                self.visit(node.items, item, old_item, f"{path}[{i}]")
        if node.list_type == "set":
            seen: list[Any] = []
            for i, item in enumerate(value):
                if item in seen:
                    self.fail(f"{path}[{i}]", "FieldValueDuplicate", f"Duplicate value: {json.dumps(item)}")
                else:
                    seen.append(item)
        elif node.list_type == "map" and node.list_map_keys:
            keys: set[Any] = set()
            for i, item in enumerate(value):
                if not isinstance(item, dict):
                    continue
                k = self._map_key(node, item)
                if k in keys:
                    shown = {name: item.get(name) for name in node.list_map_keys if name in item}
                    self.fail(f"{path}[{i}]", "FieldValueDuplicate",
                              f"Duplicate value: {json.dumps(shown, separators=(',', ':'))}")
                keys.add(k)

    @staticmethod
    def _map_key(node: Node, item: dict[str, Any]) -> tuple:
        return tuple(json.dumps(item.get(k), sort_keys=True) for k in node.list_map_keys)

    def scalar(self, node: Node, value: Any, path: str) -> None:
        if node.enum is not None and value not in node.enum:
            supported = ", ".join(json.dumps(e) for e in node.enum)
            self.fail(path, "FieldValueNotSupported",
                      f"Unsupported value: {json.dumps(value)}: supported values: {supported}")
        if isinstance(value, str):
            if node.max_length is not None and len(value) > node.max_length:
                self.fail(path, "FieldValueTooLong", f"Too long: may not be more than {node.max_length} bytes")
            if node.min_length is not None and len(value) < node.min_length:
                self.fail(path, "FieldValueInvalid",
                          f"Invalid value: {json.dumps(value)}: {path} in body should be at least {node.min_length} "
                          "chars long")
            if node.pattern is not None and node.pattern.search(value) is None:
                self.fail(path, "FieldValueInvalid",
                          f"Invalid value: {json.dumps(value)}: {path} in body should match '{node.pattern_text}'")
            if node.format == "date-time" and not _date_time_ok(value):
                self.fail(path, "FieldValueInvalid",
                          f'Invalid value: {json.dumps(value)}: {path} in body must be of type date-time: '
                          f'{json.dumps(value)}')
        elif isinstance(value, int | float) and not isinstance(value, bool):
            bounds = {"int32": _INT32, "int64": _INT64}.get(node.format or "")
            if bounds is not None and not bounds[0] <= value <= bounds[1]:
                self.fail(path, "FieldValueInvalid",
                          f'Invalid value: {value}: {path} in body must be of type {node.format}: "{value}"')
            if node.minimum is not None and (value < node.minimum
                                             or (node.exclusive_minimum and value == node.minimum)):
                word = "greater than" if node.exclusive_minimum else "greater than or equal to"
                self.fail(path, "FieldValueInvalid",
                          f"Invalid value: {value}: {path} in body should be {word} {node.minimum}")
            if node.maximum is not None and (value > node.maximum
                                             or (node.exclusive_maximum and value == node.maximum)):
                word = "less than" if node.exclusive_maximum else "less than or equal to"
                self.fail(path, "FieldValueInvalid",
                          f"Invalid value: {value}: {path} in body should be {word} {node.maximum}")

    def run_rules(self, node: Node, value: Any, old: Any, path: str) -> None:
        shown = node.type or ("int-or-string" if node.int_or_string else _typename(value))
        for rule in node.rules:
            if rule.program is None:
                self.out.rules_skipped += 1
                self.out.skipped_rules.add(rule.source)
                continue
            if rule.transition and old is None:
                continue  # a transition rule applies only to an update with a correlated old value
            env = {"self": value, "oldSelf": old} if rule.transition else {"self": value}
            self.out.rules_evaluated += 1
            try:
                result = rule.program(env)
            except CelError as exc:
                self.fail(path, "FieldValueInvalid",
                          f'Invalid value: "{shown}": {rule.message}: evaluation error: {exc}')
                continue
            if result is not True:
                self.fail(path, "FieldValueInvalid", f'Invalid value: "{shown}": {rule.message}')


def _join(path: str, key: str, mapkey: bool = False) -> str:
    if mapkey:
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def validate(node: Node, obj: dict[str, Any], old: dict[str, Any] | None = None) -> Outcome:
    """Prune, default and validate `obj` in place against a compiled root schema.

    `old` (the stored object of an update) enables transition rules. Pruned fields are listed in
    `Outcome.unknown`, so a caller honouring `fieldValidation=Strict` can refuse the request."""
    out = Outcome()
    _Walk(out).visit(node, obj, old, "", root=True)
    return out
