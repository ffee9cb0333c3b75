"""The `/` filter grammar shared by every table.

Terms are separated by spaces and must all match. `kind:job,rayjob` (exact, case-insensitive, comma = or;
a row also matches the kinds it stands for, e.g. a Sources row of a Job is its pending Workload too),
`ns:eval*` (glob), `label:key`, `label:key=value`, `label:key!=value`, `sev:warn`, `rule:POOL`;
anything else is plain text matched case-insensitively against the row's text.
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from taudash.engine.rules.base import Severity

SEVERITIES = tuple(s.value for s in Severity)  # what `sev:` may start with


@dataclass(frozen=True)
class RowMeta:
    """What a table row stands for: the object it names and the text the filter searches."""

    kind: str = ""
    namespace: str | None = None
    name: str = ""
    text: str = ""
    severity: str = ""
    rule: str = ""
    also: tuple[str, ...] = ()  # other kinds the row stands for (`kind:` matches them too)


LabelsOf = Callable[[RowMeta], Mapping[str, str]]


@dataclass(frozen=True)
class Filter:
    raw: str = ""
    text: tuple[str, ...] = ()
    kinds: tuple[frozenset[str], ...] = ()
    namespaces: tuple[str, ...] = ()
    labels: tuple[tuple[str, str, str | None], ...] = ()  # (key, op "="|"!="|"exists", value)
    severities: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    errors: tuple[str, ...] = field(default=())  # every term it could not read (a half-typed `kind:` too)
    invalid: tuple[str, ...] = field(default=())  # the terms that can match nothing (`sev:bogus`): said, not ignored

    @property
    def active(self) -> bool:
        return bool(self.text or self.kinds or self.namespaces or self.labels or self.severities or self.rules
                    or self.invalid)

    def matches(self, meta: RowMeta, labels_of: LabelsOf | None = None) -> bool:
        if self.invalid:  # a term that matches nothing: no row, and the table says why (never "all rows")
            return False
        haystack = " ".join((meta.kind, meta.namespace or "", meta.name, meta.text)).lower()
        if any(t not in haystack for t in self.text):
            return False
        if self.kinds:
            kinds = {meta.kind.lower(), *(k.lower() for k in meta.also)}
            if any(kinds.isdisjoint(alts) for alts in self.kinds):
                return False
        if any(not fnmatch.fnmatchcase((meta.namespace or "").lower(), pat) for pat in self.namespaces):
            return False
        if any(not meta.severity.startswith(s) for s in self.severities):
            return False
        if any(r not in meta.rule.lower() for r in self.rules):
            return False
        if self.labels:
            labels = labels_of(meta) if labels_of is not None else {}
            for key, op, value in self.labels:
                if op == "exists" and key not in labels:
                    return False
                if op == "=" and labels.get(key) != value:
                    return False
                if op == "!=" and labels.get(key) == value:
                    return False
        return True


def parse_filter(raw: str) -> Filter:
    try:
        terms = shlex.split(raw)
    except ValueError:  # an unbalanced quote while typing: fall back to plain words
        terms = raw.replace('"', " ").replace("'", " ").split()
    text: list[str] = []
    kinds: list[frozenset[str]] = []
    namespaces: list[str] = []
    labels: list[tuple[str, str, str | None]] = []
    sevs: list[str] = []
    rules: list[str] = []
    errors: list[str] = []
    invalid: list[str] = []
    for term in terms:
        prefix, sep, value = term.partition(":")
        prefix = prefix.lower()
        if not sep or prefix not in ("kind", "ns", "namespace", "label", "sev", "severity", "rule"):
            text.append(term.lower())
            continue
        if not value:
            errors.append(f"{prefix}: needs a value")
            continue
        if prefix == "kind":
            kinds.append(frozenset(v.strip().lower() for v in value.split(",") if v.strip()))
        elif prefix in ("ns", "namespace"):
            namespaces.append(value.lower())
        elif prefix == "label":
            if "!=" in value:
                k, v = value.split("!=", 1)
                labels.append((k, "!=", v))
            elif "=" in value:
                k, v = value.split("=", 1)
                labels.append((k, "=", v))
            else:
                labels.append((value, "exists", None))
        elif prefix in ("sev", "severity"):
            if not any(s.startswith(value.lower()) for s in SEVERITIES):
                invalid.append(f"unknown severity {value!r} (one of {', '.join(SEVERITIES)})")
                continue
            sevs.append(value.lower())
        else:
            rules.append(value.lower())
    return Filter(
        raw=raw,
        text=tuple(text),
        kinds=tuple(kinds),
        namespaces=tuple(namespaces),
        labels=tuple(labels),
        severities=tuple(sevs),
        rules=tuple(rules),
        errors=tuple(errors + invalid),
        invalid=tuple(invalid),
    )
