"""Workload and Job as msgspec structs: decoded straight from the API's bytes.

A fleet holds 100k Workloads and 50k Jobs; building them as pydantic models from decoded JSON was
two thirds of a sync and most of its memory. These structs declare only the fields taudash reads
(the same names and defaults as the pydantic models, which stay the schema of record): msgspec
skips everything else — pod templates, containers, env — without allocating it, so a list page
becomes typed objects faster than a JSON decoder builds the dicts.

Tolerance is unchanged: input the strict fast path refuses (a null list, a mistyped field) goes
through the pydantic model, which either normalises it — then the struct is built from its dump —
or raises the same ValidationError as before.
"""

from __future__ import annotations

import sys
from types import GenericAlias
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self

import msgspec
from msgspec import Struct
from msgspec.structs import force_setattr, replace
from pydantic import BaseModel

from . import base, core, kueue
from .base import ConditionAccessors, ObjectAccessors
from .quantity import Quantity

# Every struct: frozen=True, kw_only=True, rename="camel", gc=False (spelled out per class: type
# checkers read class keywords, not a dict splat; `struct_of` passes them as `_CFG`).
_CFG: dict[str, Any] = dict(frozen=True, kw_only=True, rename="camel", gc=False)


def _dec(t: type, v: Any) -> Any:
    if t is Quantity:
        return Quantity.parse(v)
    raise NotImplementedError(t)


def _enc(v: Any) -> Any:
    if isinstance(v, Quantity):
        return v.canonical()
    raise NotImplementedError(type(v))


def _drop_none(v: Any) -> Any:
    if type(v) is dict:
        return {k: _drop_none(x) for k, x in v.items() if x is not None}
    if type(v) is list:
        return [_drop_none(x) for x in v]
    return v


def struct_of(model: type[BaseModel], nested: dict[type, type], bases: tuple[type, ...] = ()) -> type[Struct]:
    """The msgspec struct of a flat pydantic model (engine/model/base.py): one declaration of the
    fields, names and defaults, read from the model. The model's None-tolerance validators have no
    struct counterpart: input the struct refuses takes the tolerant path (`model_validate`)."""
    fields: list[tuple[Any, ...]] = []
    for name, f in model.model_fields.items():
        typ: Any = f.annotation
        args = getattr(typ, "__args__", ())
        if getattr(typ, "__origin__", None) is list and args and args[0] in nested:
            typ = GenericAlias(list, (nested[args[0]],))  # a list of nested models: of their structs
        min_len = next((m.min_length for m in f.metadata if hasattr(m, "min_length")), None)
        if min_len is not None:
            typ = Annotated[typ, msgspec.Meta(min_length=min_len)]
        fields.append((name, typ) if f.is_required() else (name, typ, f.default))
    struct = msgspec.defstruct(f"_{model.__name__}Fields" if bases else model.__name__, fields, module=__name__, **_CFG)
    if not bases:
        return struct
    made: type[Struct] = type(model.__name__, (struct, *bases), {"__module__": __name__}, **_CFG)
    return made


if TYPE_CHECKING:
    # Built at run time from the models; to the type checker a struct of a model reads as the model
    # (the same field names and types; only attributes are read from them).
    OwnerReference = base.OwnerReference
    ObjectMeta = base.ObjectMeta
    Condition = base.Condition
else:
    OwnerReference = struct_of(base.OwnerReference, {})
    ObjectMeta = struct_of(base.ObjectMeta, {base.OwnerReference: OwnerReference})
    Condition = struct_of(base.Condition, {}, bases=(ConditionAccessors,))


class FastObject(Struct, ObjectAccessors, frozen=True, kw_only=True, rename="camel", gc=False):
    """The envelope of `base.KubeObject`, and its accessors, for structs."""

    pydantic_model: ClassVar[type[BaseModel]]  # the pydantic model of the same kind: validation of record
    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta

    # the pydantic API the rest of the engine uses ------------------------------------------
    @classmethod
    def model_validate(cls, raw: Any) -> Self:
        if isinstance(raw, cls):
            return raw
        try:
            return msgspec.convert(raw, cls, strict=False, dec_hook=_dec)
        except (msgspec.ValidationError, ValueError, TypeError):
            # Raises pydantic's ValidationError for input that is really bad; normalises the rest.
            model = cls.pydantic_model.model_validate(raw)
            return msgspec.convert(model.model_dump(by_alias=True, mode="json"), cls, strict=False, dec_hook=_dec)

    def model_dump(self, *, by_alias: bool = True, mode: str = "json", exclude_none: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self, enc_hook=_enc)
        return _drop_none(out) if exclude_none else out

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Self:
        return replace(self, **(update or {}))


# --- Workload ---------------------------------------------------------------------------


class PodTemplateMeta(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class PodTemplate(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    metadata: PodTemplateMeta = PodTemplateMeta()


class ContainerResources(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}


class ContainerRequests(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    name: str = ""
    resources: ContainerResources = ContainerResources()


class Toleration(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


class PodSetPodSpec(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    containers: list[ContainerRequests] = []
    init_containers: list[ContainerRequests] = []
    overhead: dict[str, Quantity] = {}
    node_selector: dict[str, str] = {}
    tolerations: list[Toleration] = []


class PodSetTemplate(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    # Workload pod sets only (not Jobs): their specs are shared per distinct value, so the
    # requests cost one decode per template, not per Workload.
    metadata: PodTemplateMeta = PodTemplateMeta()
    spec: PodSetPodSpec = PodSetPodSpec()


class PodSet(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    name: str = "main"
    count: int = 1
    min_count: int | None = None
    template: PodSetTemplate = PodSetTemplate()
    topology_request: dict[str, Any] | None = None


class PriorityClassRef(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    group: str = ""
    kind: str = ""
    name: str = ""


class WorkloadSpec(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    queue_name: str = ""
    active: bool = True
    pod_sets: list[PodSet] = []
    priority: int | None = None
    priority_class_ref: PriorityClassRef | None = None  # v1beta2
    priority_class_name: str = ""  # v1beta1
    priority_class_source: str = ""  # v1beta1


class PodSetAssignment(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    name: str = "main"
    flavors: dict[str, str] = {}
    resource_usage: dict[str, Quantity] = {}
    count: int | None = None
    topology_assignment: dict[str, Any] | None = None
    delayed_topology_request: str | None = None


class Admission(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    cluster_queue: str = ""
    pod_set_assignments: list[PodSetAssignment] = []


class AdmissionCheckState(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    name: str
    state: str = "Pending"
    message: str = ""
    last_transition_time: str | None = None


class RequeueState(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    count: int | None = None
    requeue_at: str | None = None


class PodSetRequest(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    name: str = "main"
    resources: dict[str, Quantity] = {}


class EvictionStat(Struct, **_CFG):
    reason: str = ""
    underlying_cause: str = ""
    count: int = 0


class SchedulingStats(Struct, **_CFG):
    evictions: list[EvictionStat] = []


class WorkloadStatus(Struct, **_CFG):
    admission: Admission | None = None
    conditions: list[Condition] = []
    admission_checks: list[AdmissionCheckState] = []
    requeue_state: RequeueState | None = None
    resource_requests: list[PodSetRequest] = []
    cluster_name: str | None = None
    nominated_cluster_names: list[str] = []
    scheduling_stats: SchedulingStats | None = None


class Workload(FastObject, kueue.WorkloadAccessors, frozen=True, kw_only=True, rename="camel", gc=False):
    pydantic_model: ClassVar[type] = kueue.Workload
    kind: str = "Workload"
    spec: WorkloadSpec = WorkloadSpec()
    status: WorkloadStatus = WorkloadStatus()


# --- Job --------------------------------------------------------------------------------


class JobSpec(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    suspend: bool | None = None
    parallelism: int | None = None
    completions: int | None = None
    template: PodTemplate = PodTemplate()


class JobStatus(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    conditions: list[Condition] = []
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    ready: int | None = None


class Job(FastObject, core.JobAccessors, frozen=True, kw_only=True, rename="camel", gc=False):
    pydantic_model: ClassVar[type] = core.Job
    kind: str = "Job"
    spec: JobSpec = JobSpec()
    status: JobStatus = JobStatus()


# --- Node and CSINode (5k each on a big cluster, 15 labels and 7 quantities a Node) --------


class Taint(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSpec(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    unschedulable: bool = False
    taints: list[Taint] = []


class NodeSystemInfo(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    operating_system: str = ""


class NodeStatus(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    allocatable: dict[str, Quantity] = {}
    capacity: dict[str, Quantity] = {}
    conditions: list[Condition] = []
    node_info: NodeSystemInfo | None = None


class Node(FastObject, frozen=True, kw_only=True, rename="camel", gc=False):
    pydantic_model: ClassVar[type] = core.Node
    kind: str = "Node"
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()


class CSINodeDriver(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    name: str
    node_id: str = msgspec.field(default="", name="nodeID")  # "nodeId" goes the tolerant way


class CSINodeSpec(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    drivers: list[CSINodeDriver] = []


class CSINode(FastObject, frozen=True, kw_only=True, rename="camel", gc=False):
    pydantic_model: ClassVar[type] = core.CSINode
    kind: str = "CSINode"
    spec: CSINodeSpec = CSINodeSpec()


# --- Pod (150k on a big cluster: what capacity and the Pods view read, nothing else) ----------


class PodSpec(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    node_name: str = ""
    containers: list[ContainerRequests] = []
    init_containers: list[ContainerRequests] = []
    overhead: dict[str, Quantity] = {}
    tolerations: list[Toleration] = []
    priority_class_name: str = ""


class ContainerStateDetail(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    reason: str = ""
    exit_code: int | None = None


class ContainerState(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    waiting: ContainerStateDetail | None = None
    running: ContainerStateDetail | None = None
    terminated: ContainerStateDetail | None = None


class ContainerStatus(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    name: str = ""
    ready: bool = False
    restart_count: int = 0
    state: ContainerState = ContainerState()


class PodStatus(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    phase: str = ""
    container_statuses: list[ContainerStatus] = []


class Pod(FastObject, core.PodAccessors, frozen=True, kw_only=True, rename="camel", gc=False):
    pydantic_model: ClassVar[type] = core.Pod
    kind: str = "Pod"
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()


# --- decoding list pages and watch events straight from bytes ----------------------------


class ListMeta(Struct, frozen=True, rename="camel", gc=False):
    resource_version: str = ""
    continue_: str | None = msgspec.field(default=None, name="continue")


# --- sub-objects many objects hold equal, decoded once ---------------------------------------
#
# A fleet's Workloads are made from a handful of templates: their specs and admissions repeat. The wire
# struct below keeps those two parts as raw JSON bytes (no parsing beyond finding their end); equal bytes
# become one shared, immutable struct. Half a Workload's memory at fleet scale. (A Job's spec is not
# shared: the API server stamps each Job's pod template with its own controller-uid and job-name labels,
# so no two are equal and a cache of them only cost a copy and a lookup per Job.)


class _WireWorkloadStatus(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    admission: msgspec.Raw = msgspec.Raw()  # empty: absent
    conditions: list[Condition] = []
    admission_checks: list[AdmissionCheckState] = []
    requeue_state: RequeueState | None = None
    resource_requests: list[PodSetRequest] = []
    cluster_name: str | None = None
    nominated_cluster_names: list[str] = []
    scheduling_stats: SchedulingStats | None = None


class _WireWorkload(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    api_version: str = ""
    kind: str = "Workload"
    metadata: ObjectMeta
    spec: msgspec.Raw = msgspec.Raw()
    status: _WireWorkloadStatus = _WireWorkloadStatus()


class _Shared:
    """Bytes → decoded struct, bounded (a churned cluster's templates just start over)."""

    def __init__(self, typ: Any, limit: int = 20_000) -> None:
        self._dec: msgspec.json.Decoder[Any] = msgspec.json.Decoder(typ, strict=False, dec_hook=_dec)
        self.default = typ()
        self.hits: dict[bytes, Any] = {}
        self._limit = limit

    def miss(self, key: bytes) -> Any:
        if len(self.hits) >= self._limit:
            self.hits.clear()
        hit = self.hits[key] = self._dec.decode(key)  # a bad part raises ValidationError: page refused
        return hit


_WL_SPEC = _Shared(WorkloadSpec)
_ADMISSION = _Shared(Admission)


def _workloads(wire: list[_WireWorkload], api_version: str) -> list[Workload]:
    """The stored Workloads of a page's wire structs, in one pass: shared spec and admission, the
    served apiVersion where an item omits it."""
    specs, spec_miss, no_spec = _WL_SPEC.hits, _WL_SPEC.miss, _WL_SPEC.default
    adms, adm_miss = _ADMISSION.hits, _ADMISSION.miss
    out: list[Workload] = []
    append = out.append
    for w in wire:
        st = w.status
        raw = bytes(w.spec)
        spec = (specs.get(raw) or spec_miss(raw)) if raw else no_spec
        raw = bytes(st.admission)
        adm = (adms.get(raw) or adm_miss(raw)) if raw else None
        append(Workload(api_version=w.api_version or api_version, kind=w.kind, metadata=w.metadata, spec=spec,
                        status=WorkloadStatus(admission=adm, conditions=st.conditions,
                                              admission_checks=st.admission_checks, requeue_state=st.requeue_state,
                                              resource_requests=st.resource_requests, cluster_name=st.cluster_name,
                                              nominated_cluster_names=st.nominated_cluster_names,
                                              scheduling_stats=st.scheduling_stats)))
    return out


# A Pod's containers, init containers and tolerations are its template's: equal across the Pods of one job
# (the wire keeps them as raw JSON; equal bytes become one shared list). Namespaces, node names, phases and
# owner kinds repeat across every Pod: each is held once.


class _WirePodSpec(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    node_name: str = ""
    containers: msgspec.Raw = msgspec.Raw()
    init_containers: msgspec.Raw = msgspec.Raw()
    overhead: dict[str, Quantity] = {}
    tolerations: msgspec.Raw = msgspec.Raw()
    priority_class_name: str = ""


class _WirePod(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    api_version: str = ""
    kind: str = "Pod"
    metadata: ObjectMeta
    spec: _WirePodSpec = _WirePodSpec()
    status: PodStatus = PodStatus()


_CONTAINERS = _Shared(GenericAlias(list, (ContainerRequests,)), limit=5_000)
_TOLERATIONS = _Shared(GenericAlias(list, (Toleration,)), limit=5_000)
_intern = sys.intern
_force: Any = force_setattr  # metadata and owners are structs here (the type checker reads them as the models)


def _shared_list(cache: _Shared, raw: msgspec.Raw) -> Any:
    key = bytes(raw)
    if not key or key == b"null":
        return cache.default
    return cache.hits.get(key) or cache.miss(key)


_STATUSES: dict[tuple[Any, ...], PodStatus] = {}
_LABELS: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
_OWNERS: dict[tuple[Any, ...], list[Any]] = {}
_NO_ANNOTATIONS: dict[str, str] = {}
_NO_FINALIZERS: list[str] = []


def _shared_status(st: PodStatus) -> PodStatus:
    # Statuses repeat (Running, every container ready, no restarts): equal ones become one.
    key = (st.phase, *st.container_statuses)
    hit = _STATUSES.get(key)
    if hit is None:
        if len(_STATUSES) >= 5_000:
            _STATUSES.clear()
        hit = _STATUSES[key] = PodStatus(phase=_intern(st.phase), container_statuses=st.container_statuses)
    return hit


def _pods(wire: list[_WirePod], api_version: str) -> list[Pod]:
    """The stored Pods of a page's wire structs: shared container lists and statuses, repeated strings
    (namespaces, node names, owners, label values, creation times: the Pods of one job share them) held once."""
    out: list[Pod] = []
    append = out.append
    for w in wire:
        meta, sp = w.metadata, w.spec
        if meta.namespace:
            _force(meta, "namespace", _intern(meta.namespace))
        if meta.creation_timestamp:
            _force(meta, "creation_timestamp", _intern(meta.creation_timestamp))
        labels = meta.labels
        if labels:  # the Pods of one job carry equal labels: equal dicts become one (never mutated once stored)
            key = tuple(labels.items())
            hit = _LABELS.get(key)
            if hit is None:
                if len(_LABELS) >= 20_000:
                    _LABELS.clear()
                for k, v in labels.items():
                    labels[k] = _intern(v)
                hit = _LABELS[key] = labels
            _force(meta, "labels", hit)
        refs = meta.owner_references
        if refs:  # the workers of one job have the same owner: equal lists become one
            okey = tuple(refs)
            same = _OWNERS.get(okey)
            if same is None:
                if len(_OWNERS) >= 20_000:
                    _OWNERS.clear()
                for ref in refs:
                    _force(ref, "kind", _intern(ref.kind))
                    _force(ref, "api_version", _intern(ref.api_version))
                    _force(ref, "name", _intern(ref.name))
                    _force(ref, "uid", _intern(ref.uid))
                same = _OWNERS[okey] = refs
            _force(meta, "owner_references", same)
        if not meta.annotations:  # never mutated: stored objects are read-only
            _force(meta, "annotations", _NO_ANNOTATIONS)
        if not meta.finalizers:
            _force(meta, "finalizers", _NO_FINALIZERS)
        spec = PodSpec(node_name=_intern(sp.node_name), containers=_shared_list(_CONTAINERS, sp.containers),
                       init_containers=_shared_list(_CONTAINERS, sp.init_containers), overhead=sp.overhead,
                       tolerations=_shared_list(_TOLERATIONS, sp.tolerations),
                       priority_class_name=_intern(sp.priority_class_name))
        append(Pod(api_version=_intern(w.api_version or api_version), kind=w.kind, metadata=meta, spec=spec,
                   status=_shared_status(w.status)))
    return out


def _stamped(objs: list[Any], api_version: str) -> list[Any]:
    # List items may omit apiVersion (the list names it once): record the version served.
    if api_version:
        for obj in objs:
            if not obj.api_version:
                force_setattr(obj, "api_version", api_version)
    return objs


_WIRE: dict[type, tuple[type, Any]] = {Workload: (_WireWorkload, _workloads), Pod: (_WirePod, _pods)}


class FastCodec:
    """Decoders of one kind's list pages and watch events (None for input the fast path refuses:
    the caller falls back to a plain JSON decode and the tolerant per-object path)."""

    def __init__(self, model: type[FastObject]) -> None:
        wire, self._finish = _WIRE.get(model, (model, _stamped))
        page = msgspec.defstruct(f"{model.__name__}List",
                                 [("items", GenericAlias(list, (wire,)), []), ("metadata", ListMeta, ListMeta())],
                                 gc=False)
        event = msgspec.defstruct(f"{model.__name__}Event", [("type", str), ("object", wire)], gc=False)
        self.model = model
        # The structs are made here, at run time: what they decode is typed by the annotations below.
        self._page: msgspec.json.Decoder[Any] = msgspec.json.Decoder(page, strict=False, dec_hook=_dec)
        self._event: msgspec.json.Decoder[Any] = msgspec.json.Decoder(event, strict=False, dec_hook=_dec)

    def page(self, body: bytes, api_version: str = "") -> tuple[list[FastObject], str, str | None] | None:
        """A list page's objects (apiVersion `api_version` where an item names none), its
        resourceVersion and continue token, in one decode and one pass."""
        try:
            doc = self._page.decode(body)
            items = self._finish(doc.items, api_version)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None
        return items, doc.metadata.resource_version, doc.metadata.continue_

    def event(self, line: bytes, api_version: str = "") -> tuple[str, FastObject] | None:
        try:
            ev = self._event.decode(line)
            if ev.type == "DELETED":
                return ev.type, self._finish([ev.object], "")[0]
            obj = self._finish([ev.object], api_version)[0]
        except (msgspec.ValidationError, msgspec.DecodeError):
            return None
        return ev.type, obj


FAST_MODELS: tuple[type[FastObject], ...] = (Workload, Job, Node, CSINode, Pod)

__all__ = ["FAST_MODELS", "CSINode", "FastCodec", "FastObject", "Job", "Node", "Pod", "Workload"]
