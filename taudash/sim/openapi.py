"""OpenAPI v2 and v3 documents for what the simulated API server serves: what kubectl reads them for.

kubectl (1.27+) reads OpenAPI v3: `/openapi/v3` lists one document per group-version, each at
`/openapi/v3/<api|apis/group>/<version>?hash=…`. From a group-version's document it learns
whether a PATCH operation for the kind takes `fieldValidation` (then `apply`, `create` and `edit`
leave validation to the server instead of validating client-side), whether it takes a
strategic-merge patch (none here: kubectl then builds built-in kinds' patches from its own types
and sends CRDs a merge patch) and the schema `explain` prints (`components.schemas`, found by
`x-kubernetes-group-version-kind`). CRD kinds carry their CRD's `openAPIV3Schema` (the Kueue CRDs
the server validates with), other kinds a minimal schema of the fields taudash and the simulator
read, open to the rest (`x-kubernetes-preserve-unknown-fields`).

`/openapi/v2` is the same in Swagger 2.0 (v3-only keywords dropped, as the apiserver publishes
CRDs), as JSON only. client-go asks for v2 as protobuf only: a protobuf-only Accept gets 406, and
kubectl then gives v2 up (it tries the pre-1.10 `/swagger-2.0.0.pb-v1`, a 404) and uses v3.

Each document is built once per served set of resources and kept as bytes (`OpenApi.document`).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Iterable
from typing import Any

from orjson import dumps

from taudash.sim.resources import Resource

Obj = dict[str, Any]
Served = Callable[[], Iterable[tuple[Resource, str]]]  # (resource, version) pairs being served

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
OBJECT_META = f"{META}.ObjectMeta"
_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")
_V3_ONLY = ("nullable", "oneOf", "anyOf", "not")  # Swagger 2.0 has none of them


def definition_name(r: Resource, version: str) -> str:
    """The schema's name as the apiserver spells it: `io.k8s.api.batch.v1.Job`, `io.x-k8s.kueue.v1beta2.Workload`."""
    if r.group == "" or "." not in r.group:
        return f"io.k8s.api.{r.group.split('.')[0] or 'core'}.{version}.{r.kind}"
    if r.group.endswith(".k8s.io") and r.group.count(".") == 2:  # rbac.authorization.k8s.io, storage.k8s.io
        return f"io.k8s.api.{r.group.split('.')[0]}.{version}.{r.kind}"
    return ".".join(reversed(r.group.split("."))) + f".{version}.{r.kind}"


def gv_path(group: str, version: str) -> str:
    """The key of a group-version in the v3 root: `api/v1`, `apis/batch/v1`."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


class OpenApi:
    """The documents of one server, from `served` (what discovery lists) and CRD schemas (`crd_schema`)."""

    def __init__(self, served: Served, crd_schema: Callable[[Resource, str], Obj | None]) -> None:
        self._served = served
        self._crd_schema = crd_schema
        self._cache: dict[tuple[Any, str], bytes] = {}

    def _key(self) -> tuple[tuple[str, str, str], ...]:
        return tuple((r.group, r.plural, v) for r, v in self._served())

    def document(self, path: str) -> bytes | None:
        """`v2`, `v3` or `v3/<gv path>` as JSON bytes; None when no such document is served."""
        key = (self._key(), path)
        body = self._cache.get(key)
        if body is None:
            doc = self._build(path)
            if doc is None:
                return None
            if len(self._cache) > 256:  # resources switched on and off many times (tests): start over
                self._cache.clear()
            body = self._cache[key] = dumps(doc)
        return body

    def _groups(self) -> dict[str, list[tuple[Resource, str]]]:
        groups: dict[str, list[tuple[Resource, str]]] = {}
        for r, v in self._served():
            groups.setdefault(gv_path(r.group, v), []).append((r, v))
        return groups

    def _build(self, path: str) -> Obj | None:
        if path == "v2":
            return self._v2()
        if path == "v3":
            paths = {}
            for gv in self._groups():
                body = self.document(f"v3/{gv}") or b""
                paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={hashlib.sha512(body).hexdigest()[:64]}"}
            return {"paths": paths}
        if path.startswith("v3/"):
            members = self._groups().get(path[3:])
            return self._v3(members) if members else None
        return None

    # --- the schemas ------------------------------------------------------------------------------
    def schema(self, r: Resource, version: str) -> Obj:
        """The kind's schema at `version`: its CRD's when there is one, else a minimal one; with the
        type identity and ObjectMeta the apiserver adds."""
        crd = self._crd_schema(r, version)
        body = copy.deepcopy(crd) if crd is not None else builtin_schema(r)
        props = body.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string", "description": _API_VERSION})
        props.setdefault("kind", {"type": "string", "description": _KIND})
        meta_doc = "Standard object's metadata."
        props["metadata"] = {"description": meta_doc, "allOf": [{"$ref": "#/components/schemas/" + OBJECT_META}]}
        body["type"] = "object"
        body["x-kubernetes-group-version-kind"] = [{"group": r.group, "kind": r.kind, "version": version}]
        return body

    def _v3(self, members: list[tuple[Resource, str]]) -> Obj:
        schemas: Obj = {OBJECT_META: _object_meta(), f"{META}.Patch": {
            "type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes "
                                             "PATCH request body."}}
        paths: Obj = {}
        for r, v in members:
            name = definition_name(r, v)
            schemas[name] = self.schema(r, v)
            paths.update(_paths(r, v, "#/components/schemas/" + name, v3=True))
        return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0-taudash-sim"},
                "paths": paths, "components": {"schemas": schemas}}

    def _v2(self) -> Obj:
        definitions: Obj = {OBJECT_META: _object_meta()}
        paths: Obj = {}
        for r, v in self._served():
            name = definition_name(r, v)
            definitions[name] = swagger2(self.schema(r, v))
            paths.update(_paths(r, v, "#/definitions/" + name, v3=False))
        return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0-taudash-sim"},
                "paths": paths, "definitions": definitions}


def swagger2(schema: Any) -> Any:
    """A v3 schema as Swagger 2.0 has it: v3-only keywords dropped, `$ref`s to definitions."""
    if isinstance(schema, list):
        return [swagger2(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k in _V3_ONLY:
            continue
        if k == "$ref" and isinstance(v, str):
            v = v.replace("#/components/schemas/", "#/definitions/")
        # property names and vendor extensions' contents are data, not schemas
        out[k] = {n: swagger2(s) for n, s in v.items()} if k == "properties" and isinstance(v, dict) else (
            v if k.startswith("x-") or k in ("enum", "default", "example") else swagger2(v))
    return out


def _paths(r: Resource, version: str, ref: str, *, v3: bool) -> Obj:
    """The collection and item paths of one resource, with the operations kubectl looks for."""
    gvk = {"group": r.group, "kind": r.kind, "version": version}
    base = f"/apis/{r.group}/{version}" if r.group else f"/api/{version}"
    collection = f"{base}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{base}/{r.plural}"
    scoped = "Namespaced" if r.namespaced else ""

    def param(name: str, where: str = "query") -> Obj:
        p: Obj = {"name": name, "in": where, "description": name, "required": where == "path"}
        if v3:
            p["schema"] = {"type": "string", "uniqueItems": True}
        else:
            p["type"] = "string"
            p["uniqueItems"] = True
        return p

    writes = [param("dryRun"), param("fieldManager"), param("fieldValidation")]  # on each write: kubectl looks there

    def op(action: str, verb: str, body: tuple[str, ...] = ()) -> Obj:
        out: Obj = {"operationId": f"{verb}{scoped}{r.kind}", "description": f"{verb} {r.kind}",
                    "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk}
        if v3:
            out["responses"] = {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": ref}}}}}
            if body:
                out["requestBody"] = {"content": {t: {"schema": {"$ref": ref}} for t in body}}
                out["parameters"] = writes
        else:
            out["responses"] = {"200": {"description": "OK", "schema": {"$ref": ref}}}
            out["produces"] = ["application/json"]
            if body:
                out["consumes"] = list(body)
                out["parameters"] = [{"name": "body", "in": "body", "required": True, "schema": {"$ref": ref}},
                                     *writes]
        return out

    scope = [param("namespace", "path")] if r.namespaced else []
    return {
        collection: {"parameters": scope,
                     "get": op("list", "list"), "post": op("post", "create", ("application/json",))},
        f"{collection}/{{name}}": {
            "parameters": [param("name", "path"), *scope],
            "get": op("get", "read"), "put": op("put", "replace", ("application/json",)),
            "patch": op("patch", "patch", _PATCH_TYPES), "delete": op("delete", "delete")},
    }


# --- minimal schemas of the kinds no CRD describes here --------------------------------------------

_API_VERSION = ("APIVersion defines the versioned schema of this representation of an object. Servers should "
                "convert recognized schemas to the latest internal value, and may reject unrecognized values.")
_KIND = ("Kind is a string value representing the REST resource this object represents. Servers may infer this "
         "from the endpoint the client submits requests to. In CamelCase.")


def _open(description: str, **props: Obj) -> Obj:
    """An object with the fields named and any others kept."""
    out: Obj = {"type": "object", "description": description, "x-kubernetes-preserve-unknown-fields": True}
    if props:
        out["properties"] = props
    return out


def _s(description: str, type_: str = "string") -> Obj:
    return {"type": type_, "description": description}


def _list(description: str, item: Obj) -> Obj:
    return {"type": "array", "description": description, "items": item}


_LABELS = {"type": "object", "additionalProperties": {"type": "string"}}
_POD_SPEC = _open(
    "Specification of the desired behavior of the pod.",
    containers=_list("List of containers belonging to the pod.", _open(
        "A single application container that you want to run within a pod.", name=_s("Name of the container."),
        image=_s("Container image name."), resources=_open("Compute Resources required by this container."))),
    nodeName=_s("The node this pod is bound to."), nodeSelector={**_LABELS, "description": "Node labels to match."},
    priorityClassName=_s("The pod's priority class."), restartPolicy=_s("Restart policy for all containers."),
    tolerations=_list("The pod's tolerations.", _open("A toleration of a taint.")))
_TEMPLATE = _open("Describes the pods that will be created.",
                  metadata=_open("Standard object's metadata.", labels=_LABELS, annotations=_LABELS), spec=_POD_SPEC)

_BUILTIN: dict[str, Obj] = {
    "Node": _open("Node is a worker node in Kubernetes.",
                  spec=_open("Spec defines the behavior of a node.", unschedulable=_s(
                      "Unschedulable controls node schedulability of new pods.", "boolean"),
                      taints=_list("The node's taints.", _open("A taint.", key=_s("The taint key."),
                                                                  effect=_s("The taint effect.")))),
                  status=_open("Most recently observed status of the node.",
                               capacity=_open("The total resources of the node."),
                               allocatable=_open("The resources of a node available for scheduling."),
                               conditions=_list("Conditions is an array of current observed node conditions.",
                                                _open("A node condition.")))),
    "Namespace": _open("Namespace provides a scope for Names.",
                       spec=_open("Spec defines the behavior of the Namespace."),
                       status=_open("Status describes the current status of a Namespace.",
                                    phase=_s("Phase is the current lifecycle phase of the namespace."))),
    "Pod": _open("Pod is a collection of containers that can run on a host.", spec=_POD_SPEC,
                 status=_open("Most recently observed status of the pod.",
                              phase=_s("The phase of a Pod: Pending, Running, Succeeded, Failed or Unknown."),
                              containerStatuses=_list("Statuses of the containers.", _open("A container's status.")))),
    "Event": _open("Event is a report of an event somewhere in the cluster.",
                   involvedObject=_open("The object that this event is about.", kind=_s("Kind of the referent."),
                                        name=_s("Name of the referent."), namespace=_s("Namespace of the referent.")),
                   reason=_s("A short, machine understandable string that gives the reason for the transition."),
                   message=_s("A human-readable description of the status of this operation."),
                   type=_s("Type of this event (Normal, Warning)."), count=_s("The number of times it occurred.",
                                                                              "integer")),
    "Job": _open("Job represents the configuration of a single job.",
                 spec=_open("Specification of the desired behavior of a job.",
                            parallelism=_s("The maximum number of pods the job should run at once.", "integer"),
                            completions=_s("The number of successfully finished pods the job needs.", "integer"),
                            suspend=_s("Whether the Job controller should create Pods or not.", "boolean"),
                            template=_TEMPLATE),
                 status=_open("Current status of a job.", active=_s("The number of pending and running pods.",
                                                                     "integer"),
                              conditions=_list("The latest available observations of the job's state.",
                                               _open("A job condition.")))),
    "Deployment": _open("Deployment enables declarative updates for Pods and ReplicaSets.",
                        spec=_open("Specification of the desired behavior of the Deployment.",
                                   replicas=_s("Number of desired pods.", "integer"), template=_TEMPLATE),
                        status=_open("Most recently observed status of the Deployment.")),
    "Lease": _open("Lease defines a lease concept.",
                   spec=_open("Specification of the Lease.", holderIdentity=_s("The holder of the lease."),
                              leaseDurationSeconds=_s("The duration of the lease.", "integer"))),
    "PriorityClass": _open("PriorityClass defines mapping from a priority class name to the priority integer value.",
                           value=_s("The integer priority of pods that have this class.", "integer"),
                           globalDefault=_s("Whether this class is the default.", "boolean")),
}


def builtin_schema(r: Resource) -> Obj:
    """A kind no CRD file describes here: its fields as far as taudash reads them, the rest kept."""
    if r.kind in _BUILTIN:
        return copy.deepcopy(_BUILTIN[r.kind])
    return _open(f"{r.kind} ({r.api_version()}).", spec=_open(f"The desired state of the {r.kind}."),
                 status=_open(f"The observed state of the {r.kind}."))


def _object_meta() -> Obj:
    return {"type": "object", "description": "ObjectMeta is metadata that all persisted resources must have.",
            "properties": {
                "name": _s("Name must be unique within a namespace."),
                "generateName": _s("An optional prefix used by the server to generate a unique name."),
                "namespace": _s("Namespace defines the space within which each name must be unique."),
                "labels": {**_LABELS, "description": "Map of string keys and values to organize and categorize "
                                                     "objects."},
                "annotations": {**_LABELS, "description": "Unstructured key value map stored with a resource."},
                "uid": _s("UID is the unique in time and space value for this object."),
                "resourceVersion": _s("An opaque value that represents the internal version of this object."),
                "generation": _s("A sequence number representing a specific generation of the desired state.",
                                 "integer"),
                "creationTimestamp": {"type": "string", "format": "date-time",
                                      "description": "The time this object was created."},
                "deletionTimestamp": {"type": "string", "format": "date-time",
                                      "description": "The time this object will be deleted."},
                "finalizers": _list("Must be empty before the object is deleted from the registry.",
                                    {"type": "string"}),
                "ownerReferences": _list("Objects depended by this object.", {"type": "object",
                                                                                "x-kubernetes-preserve-unknown-fields":
                                                                                    True}),
            }}
