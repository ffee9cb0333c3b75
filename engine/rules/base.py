"""Shared types for rule outputs: view models, findings, the rule context."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Self, cast

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from ..model.base import QuantityField
from ..store import AccessState, Store
from .gpu_health import CapacityConfig
from .gpu_usage import UtilisationConfig

__all__ = [
    "Finding",
    "ObjRef",
    "QtyMap",
    "QuantityField",
    "Rule",
    "RuleConfig",
    "RuleContext",
    "RulePart",
    "Severity",
    "ViewField",
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

    def to_contract(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")

    @classmethod
    def trusted(cls, **values: Any) -> Self:
        """An instance from values a rule has already checked, every field given: no validation.
        Rules build one row per Workload of a fleet; validation was most of that cost. Anything less
        than every field goes through `model_construct` (defaults, aliases)."""
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = frozenset(cls.model_fields)
        if len(values) != len(names):
            return cast(Self, cls.model_construct(**values))  # the pydantic plugin types it as the base class
        m: Self = _new(cls)
        _set(m, "__dict__", values)
        _set(m, "__pydantic_fields_set__", names)
        _set(m, "__pydantic_extra__", None)
        _set(m, "__pydantic_private__", None)
        return m


    def replaced(self, **changes: Any) -> Self:
        """A copy with `changes` (values a rule has already checked): `model_copy(update=...)` without
        its bookkeeping, and it works on `trusted` instances (whose field set is shared and frozen)."""
        m: Self = _new(type(self))
        _set(m, "__dict__", {**self.__dict__, **changes})
        fields = self.__pydantic_fields_set__
        _set(m, "__pydantic_fields_set__", fields if fields.issuperset(changes) else frozenset(fields.union(changes)))
        _set(m, "__pydantic_extra__", self.__pydantic_extra__)
        _set(m, "__pydantic_private__", self.__pydantic_private__)
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

    def sort_key(self) -> tuple[Any, ...]:
        return (self.severity.rank, self.rule, self.object.kind, self.object.namespace or "", self.object.name,
                self.message)


def finding(severity: Severity, rule: str, kind: str, name: str, namespace: str | None, message: str,
            hint: str = "") -> Finding:
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
    capacity: CapacityConfig = CapacityConfig()  # GPU health classes and tolerated taints (the `capacity:` config)
    # Prometheus's DCGM readings (a feed doing its own I/O) and the idle threshold: the `utilisation:` config
    utilisation: UtilisationConfig = UtilisationConfig()


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


Key = tuple[str, str]  # a store key: (namespace or "", name)
Changed = Mapping[str, set[Key]]  # kind → keys of the objects that changed (only kinds the rule reads)


@dataclass(frozen=True)
class ViewField:
    """A ClusterView field a rule fills: its name (snake_case; camelCase in the contract), type, default."""

    name: str
    type: Any
    default: Any = None


class RulePart:
    """The state of one registered rule inside a deriver (engine/incremental.py).

    `update(ctx, None, ...)` builds it from nothing (a full derivation); `update(ctx, changed, ...)`
    moves it by the objects that changed since. Either way it returns what moved for the rules that
    need it (anything falsy: nothing did). A rule without per-object state is a `Rule.derive` function
    instead and never sees this class.
    """

    def __init__(self, rule: Rule) -> None:
        self.rule = rule

    def update(self, ctx: RuleContext, changed: Changed | None, needs: Mapping[str, Any],
               moved: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    def values(self) -> tuple[Any, ...]:
        """The values of the rule's `fields`, in order."""
        raise NotImplementedError

    def findings(self) -> Iterable[Finding]:
        return ()

    @property
    def provides(self) -> Any:
        """What a rule that `needs` this one receives."""
        return self


class WholePart(RulePart):
    """A rule recomputed whole when anything it reads or needs moved: `Rule.derive` by default; a
    subclass that keeps state between derivations overrides `derive`."""

    def __init__(self, rule: Rule) -> None:
        super().__init__(rule)
        self.value: Any = None
        self._findings: list[Finding] = []

    def derive(self, ctx: RuleContext, needs: Mapping[str, Any]) -> tuple[Any, list[Finding]]:
        assert self.rule.derive is not None  # a Rule has derive= exactly when it has no part=
        return self.rule.derive(ctx, *(needs[n] for n in self.rule.needs))

    def update(self, ctx: RuleContext, changed: Changed | None, needs: Mapping[str, Any],
               moved: Mapping[str, Any]) -> bool:
        self.value, self._findings = self.derive(ctx, needs)
        return True

    def values(self) -> tuple[Any, ...]:
        return (self.value,)

    def findings(self) -> list[Finding]:
        return self._findings

    @property
    def provides(self) -> Any:
        return self.value


@dataclass(frozen=True)
class Rule:
    """One registered part of the ClusterView (the registry is engine/registry.py).

    `reads`: every kind the rule reads from the store. A derivation hands the rule a store that
    refuses any other kind (UndeclaredRead), and recomputes the rule when one of them changes.
    `needs`: rules whose results it takes as input (computed first; a change there recomputes it).
    `fields`: the ClusterView fields it fills, in contract order.
    Exactly one of:
    `derive(ctx, *needed) -> (value, findings)` for a single-field rule recomputed whole, or
    `part(rule) -> RulePart` for a rule that keeps per-object state and updates by the changed objects.
    `fingerprints`: kind → what the rule reads of one object of that kind; a change of such an
    object that leaves its fingerprint equal does not count as a change for this rule (Kueue
    rewrites ClusterQueue status counts all the time; the pool does not read them).
    `every_view`: its result moves with `now` alone (how long data has been stale): recomputed for
    every view. Other rules are recomputed only when what they read changed.
    """

    name: str
    reads: frozenset[str]
    fields: tuple[ViewField, ...]
    derive: Callable[..., tuple[Any, list[Finding]]] | None = None
    part: Callable[[Rule], RulePart] | None = None
    needs: tuple[str, ...] = ()
    fingerprints: Mapping[str, Callable[[Any], Hashable]] = field(default_factory=dict)
    every_view: bool = False

    def __post_init__(self) -> None:
        if (self.derive is None) == (self.part is None):
            raise ValueError(f"rule {self.name!r}: give exactly one of derive= and part=")
        if self.derive is not None and len(self.fields) != 1:
            raise ValueError(f"rule {self.name!r}: a derive= rule fills exactly one field")
        if not set(self.fingerprints) <= self.reads:
            raise ValueError(f"rule {self.name!r}: fingerprints for kinds it does not read")
