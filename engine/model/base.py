"""Tolerant pydantic base types shared by every Kubernetes kind.

Unknown fields are ignored, every field the rules do not require is optional, and field
names are the API's camelCase spelling (snake_case in Python).
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel

from .quantity import Quantity


def _to_quantity(v: Any) -> Quantity:
    return Quantity.parse(v)


QuantityField = Annotated[
    Quantity,
    BeforeValidator(_to_quantity),
    PlainSerializer(lambda q: q.canonical(), return_type=str),
]


def _none_to_empty_dict(v: Any) -> Any:
    return {} if v is None else v


def _none_to_empty_list(v: Any) -> Any:
    return [] if v is None else v


StrMap = Annotated[dict[str, str], BeforeValidator(_none_to_empty_dict)]


class KModel(BaseModel):
    model_config = ConfigDict(
        extra="ignore",
        populate_by_name=True,
        alias_generator=to_camel,
        arbitrary_types_allowed=True,
        frozen=True,
    )


# The models of the kinds decoded as structs (engine/model/fast.py) — Workload, Job, Node, CSINode, Pod — and
# the parts only they hold validate only the input a struct refuses: their schemas are built on that first
# use, not at import (docs/decisions.md 164). A part other kinds share stays built at import: a deferred
# model's schema is made again inside each model that holds it.
BUILT_ON_FIRST_USE = ConfigDict(defer_build=True)


class OwnerReference(KModel):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(KModel):
    name: str = Field(min_length=1)
    namespace: str | None = None
    uid: str = ""
    generation: int = 0
    resource_version: str = ""
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: StrMap = {}
    annotations: StrMap = {}
    owner_references: Annotated[list[OwnerReference], BeforeValidator(_none_to_empty_list)] = []
    finalizers: Annotated[list[str], BeforeValidator(_none_to_empty_list)] = []


class ConditionAccessors:
    """What rules ask of a condition; shared by the pydantic model and the struct (engine/model/fast.py)."""

    __slots__ = ()
    if TYPE_CHECKING:  # what the host class provides (a field of the model or the struct)

        @property
        def status(self) -> str: ...

    @property
    def is_true(self) -> bool:
        return self.status == "True"

    @property
    def is_false(self) -> bool:
        return self.status == "False"


class Condition(KModel, ConditionAccessors):
    type: str
    status: str = "Unknown"
    reason: str = ""
    message: str = ""
    observed_generation: int | None = Field(default=None, alias="observedGeneration")
    last_transition_time: str | None = None


Conditions = Annotated[list[Condition], BeforeValidator(_none_to_empty_list)]


def find_condition(conditions: list[Condition], ctype: str) -> Condition | None:
    for c in conditions:
        if c.type == ctype:
            return c
    return None


class _Meta(Protocol):
    """The metadata fields the accessors read (pydantic ObjectMeta and the struct's alike)."""

    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str | None: ...
    @property
    def uid(self) -> str: ...
    @property
    def labels(self) -> dict[str, str]: ...
    @property
    def deletion_timestamp(self) -> str | None: ...


class ConditionLike(Protocol):
    """A condition as rules read it (the pydantic model's and the struct's)."""

    @property
    def type(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def message(self) -> str: ...


class HasConditions(Protocol):
    """A status with conditions (the pydantic models' and the structs')."""

    @property
    def conditions(self) -> Sequence[ConditionLike]: ...


class OwnerRefLike(Protocol):
    @property
    def api_version(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def controller(self) -> bool | None: ...


class MetaWithOwners(_Meta, Protocol):
    @property
    def owner_references(self) -> Sequence[OwnerRefLike]: ...


class ObjectAccessors:
    """What rules ask of any object (its `metadata`, and `status.conditions` when it has a status);
    shared by the pydantic models and the structs (engine/model/fast.py)."""

    __slots__ = ()
    if TYPE_CHECKING:  # what the host class provides (a field of the model or the struct)

        @property
        def metadata(self) -> _Meta: ...

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace

    @property
    def uid(self) -> str:
        return self.metadata.uid

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels

    @property
    def deleting(self) -> bool:
        return self.metadata.deletion_timestamp is not None

    @property
    def conditions(self) -> list[Condition]:
        status = getattr(self, "status", None)
        return list(getattr(status, "conditions", None) or [])

    def condition(self, ctype: str) -> Condition | None:
        # Straight from the status (no list copy): rules ask this several times per Workload.
        status = getattr(self, "status", None)
        c: Condition
        for c in getattr(status, "conditions", None) or ():
            if c.type == ctype:
                return c
        return None


class KubeObject(KModel, ObjectAccessors):
    """Common envelope: apiVersion, kind, metadata."""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta


class LabelSelectorRequirement(KModel):
    key: str
    operator: str
    values: Annotated[list[str], BeforeValidator(_none_to_empty_list)] = []


class LabelSelector(KModel):
    match_labels: StrMap = {}
    match_expressions: Annotated[list[LabelSelectorRequirement], BeforeValidator(_none_to_empty_list)] = []
