"""Shared types for rule outputs: view models, findings, the rule context."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from ..model.base import QuantityField
from ..store import AccessState, Store

__all__ = [
    "Finding",
    "ObjRef",
    "QtyMap",
    "QuantityField",
    "RuleConfig",
    "RuleContext",
    "Severity",
    "ViewModel",
]


class ViewModel(BaseModel):
    """Immutable derived state; serialises with the contract's camelCase names."""

    model_config = ConfigDict(
        frozen=True,
        populate_by_name=True,
        alias_generator=to_camel,
        arbitrary_types_allowed=True,
    )

    def to_contract(self) -> dict:
        return self.model_dump(by_alias=True, mode="json")

    @classmethod
    def trusted(cls, **values):
        """An instance from values a rule has already checked, every field given: no validation.
        Rules build one row per Workload of a fleet; validation was most of that cost. Anything less
        than every field goes through `model_construct` (defaults, aliases)."""
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = frozenset(cls.model_fields)
        if len(values) != len(names):
            return cls.model_construct(**values)
        m = _new(cls)
        _set(m, "__dict__", values)
        _set(m, "__pydantic_fields_set__", names)
        _set(m, "__pydantic_extra__", None)
        _set(m, "__pydantic_private__", None)
        return m


_new = object.__new__
_set = object.__setattr__
_FIELD_NAMES: dict[type, frozenset[str]] = {}


QtyMap = dict[str, QuantityField]


class Severity(StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"critical": 0, "warning": 1, "info": 2}[self.value]


class ObjRef(ViewModel):
    kind: str
    namespace: str | None = None
    name: str


class Finding(ViewModel):
    severity: Severity
    rule: str
    object: ObjRef
    message: str
    hint: str = ""

    def sort_key(self) -> tuple:
        return (self.severity.rank, self.rule, self.object.kind, self.object.namespace or "", self.object.name, self.message)


def finding(severity: Severity, rule: str, kind: str, name: str, namespace: str | None, message: str, hint: str = "") -> Finding:
    return Finding(
        severity=severity,
        rule=rule,
        object=ObjRef(kind=kind, namespace=namespace, name=name),
        message=message,
        hint=hint,
    )


@dataclass(frozen=True)
class RuleConfig:
    system_namespace: str = "tau-system"
    storage_claims: tuple[str, ...] = ()  # PVC names checked in every workspace namespace


@dataclass
class RuleContext:
    """What every rule receives: the store, the time (never read from a clock), the config."""

    store: Store
    now: datetime
    config: RuleConfig = field(default_factory=RuleConfig)

    def unreadable(self, *kinds: str, optional_absent_ok: bool = False) -> list[tuple[str, str]]:
        """Kinds among `kinds` the rule cannot trust, as (resource, reason) pairs.

        `Absent` is unreadable unless the kind is optional and the caller says so.
        """
        from ..model import BY_KIND

        bad = []
        for kind in kinds:
            acc = self.store.access(kind)
            if acc.state is AccessState.SYNCED:
                continue
            info = BY_KIND[kind]
            if acc.state is AccessState.ABSENT and info.optional and optional_absent_ok:
                continue
            reason = acc.state.value if not acc.message else f"{acc.state.value}: {acc.message}"
            bad.append((info.resource, reason))
        return bad
