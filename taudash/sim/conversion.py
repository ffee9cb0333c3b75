"""Conversion of Kueue objects between kueue.x-k8s.io/v1beta1 and v1beta2, both directions.

What Kueue's conversion webhook does (apis/kueue/v1beta1/*_conversion.go of kubernetes-sigs/kueue,
read for the facts), for every field on which the two versions' CRD schemas differ (in
crds/v0.15.8 and crds/main-ff69552; `schema_differences()` lists them, a test keeps this module and
that list in step):

| kind | v1beta1 | v1beta2 |
|---|---|---|
| ClusterQueue | `spec.cohort` | `spec.cohortName` |
| ClusterQueue | `spec.admissionChecks[]` (names) | `spec.admissionChecksStrategy.admissionChecks[].name` (v1→v2 only; replaces a strategy) |
| ClusterQueue | `spec.flavorFungibility.whenCanBorrow: Borrow`, `whenCanPreempt: Preempt` | `MayStopSearch` (v1→v2 only) |
| ClusterQueue | `status.pendingWorkloadsStatus` | dropped |
| ClusterQueue, Cohort | `status.fairSharing.admissionFairSharingStatus` | dropped |
| ClusterQueue | dropped | `spec.concurrentAdmissionPolicy` (0.19, not in v0.15.8) |
| LocalQueue | `status.flavorUsage` | `status.flavorsUsage` |
| LocalQueue | `status.flavors[]` | dropped |
| Workload | `spec.priorityClassSource` + `spec.priorityClassName` | `spec.priorityClassRef{group,kind,name}` |
| Workload | `status.accumulatedPastExexcutionTimeSeconds` (sic) | `status.accumulatedPastExecutionTimeSeconds` |
| Workload | `...podSetAssignments[].topologyAssignment.domains[]` | `...topologyAssignment.slices[]` (compact encoding) |
| Workload | dropped | `spec.preemptionGates`, `status.preemptionGates`, `spec.podSets[].topologyRequest.podsetSliceRequiredTopologyConstraints` (0.19, not in v0.15.8) |
| MultiKueueCluster | `spec.kubeConfig`, `spec.clusterProfileRef` | `spec.clusterSource.kubeConfig`, `.clusterProfileRef` |
| MultiKueueConfig | dropped | `spec.quotaManagement` (0.19, not in v0.15.8) |
| AdmissionCheck | `spec.retryDelayMinutes` | dropped |

"dropped": the field has no counterpart, so converting loses it (as in Kueue). Every other field is
the same in both versions and passes through untouched. Conversion is tolerant: it renames what is
there and never invents or prunes anything else (pruning is the schema's job). Objects are treated
as immutable: the result shares every subtree it does not change with the input.

v2 → v1 → v2 is the identity for the fields both versions hold (tests/sim/test_sim_conversion.py, a
property test); v1 → v2 → v1 too, except for the dropped fields and the v1-only spellings v2 folds
(`admissionChecks`, `Borrow`/`Preempt`). The topology slices are re-encoded in the one-slice compact
form (a per-level common prefix/suffix, or one universal value): a v2 assignment in another valid
encoding decodes to the same domains but may come back encoded differently.
"""  # noqa: E501 - the table rows above are Markdown: a wrapped row is no longer a row

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from taudash.sim.kueue_versions import HUB, KUEUE_GROUP

Obj = dict[str, Any]
V1 = "v1beta1"
V2 = "v1beta2"
WPC_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
PC_SOURCE = "scheduling.k8s.io/priorityclass"
_REFS = {WPC_SOURCE: (KUEUE_GROUP, "WorkloadPriorityClass"), PC_SOURCE: ("scheduling.k8s.io", "PriorityClass")}
_SOURCES: dict[tuple[Any, ...], str] = {v: k for k, v in _REFS.items()}


def version_of(obj: Obj) -> str:
    api = str(obj.get("apiVersion") or "")
    return api.rsplit("/", 1)[-1] if "/" in api else ""


def convert(kind: str, obj: Obj, to: str) -> Obj:
    """`obj` (a Kueue object of `kind`, in the version its apiVersion names, v1beta2 when unnamed)
    in version `to`. Returns `obj` itself when nothing changes."""
    if to not in (V1, V2):
        raise ValueError(f"no conversion to {to}")
    src = version_of(obj) or HUB
    api = f"{KUEUE_GROUP}/{to}"
    if src == to:
        return obj if obj.get("apiVersion") == api else {**obj, "apiVersion": api}
    out = {**obj, "apiVersion": api}
    fn = (_UP if to == V2 else _DOWN).get(kind)
    if fn is not None:
        fn(out)
    return out


# --- copy-on-write helpers ---------------------------------------------------------------------


def _sub(parent: Obj, key: str) -> Obj | None:
    """A private shallow copy of parent[key] (a dict), stored back; None when absent."""
    cur = parent.get(key)
    if not isinstance(cur, dict):
        return None
    new = dict(cur)
    parent[key] = new
    return new


def _rename(d: Obj, old: str, new: str) -> None:
    if old in d:
        value = d.pop(old)
        if value is not None:
            d[new] = value


def _drop(parent: Obj, path: str) -> None:
    """Remove a dotted path (copying the dicts on the way only when it is there)."""
    parts = path.split(".")
    cur: Any = parent
    for p in parts[:-1]:
        cur = cur.get(p) if isinstance(cur, dict) else None
    if not isinstance(cur, dict) or parts[-1] not in cur:
        return
    node = parent
    for p in parts[:-1]:
        node = _sub(node, p)  # type: ignore[assignment]
    node.pop(parts[-1], None)


# --- per kind: v1beta1 → v1beta2 ----------------------------------------------------------------


def _cq_up(o: Obj) -> None:
    spec = _sub(o, "spec")
    if spec is not None:
        _rename(spec, "cohort", "cohortName")
        if not spec.get("cohortName"):
            spec.pop("cohortName", None)
        checks = spec.pop("admissionChecks", None)
        if checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
        ff = spec.get("flavorFungibility")
        if isinstance(ff, dict) and (ff.get("whenCanBorrow") == "Borrow" or ff.get("whenCanPreempt") == "Preempt"):
            ff = spec["flavorFungibility"] = dict(ff)
            if ff.get("whenCanBorrow") == "Borrow":
                ff["whenCanBorrow"] = "MayStopSearch"
            if ff.get("whenCanPreempt") == "Preempt":
                ff["whenCanPreempt"] = "MayStopSearch"
    _drop(o, "status.pendingWorkloadsStatus")
    _drop(o, "status.fairSharing.admissionFairSharingStatus")


def _cohort_up(o: Obj) -> None:
    _drop(o, "status.fairSharing.admissionFairSharingStatus")


def _lq_up(o: Obj) -> None:
    status = o.get("status")
    if isinstance(status, dict) and ("flavorUsage" in status or "flavors" in status):
        status = _sub(o, "status")
        assert status is not None
        _rename(status, "flavorUsage", "flavorsUsage")
        status.pop("flavors", None)


def _wl_up(o: Obj) -> None:
    spec = o.get("spec")
    if isinstance(spec, dict) and ("priorityClassSource" in spec or "priorityClassName" in spec):
        spec = _sub(o, "spec")
        assert spec is not None
        source, name = spec.pop("priorityClassSource", None), spec.pop("priorityClassName", None)
        if source in _REFS:
            group, kind = _REFS[source]
            spec["priorityClassRef"] = {"group": group, "kind": kind, "name": name or ""}
    status = o.get("status")
    if isinstance(status, dict):
        if "accumulatedPastExexcutionTimeSeconds" in status:
            status = _sub(o, "status")
            assert status is not None
            _rename(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
        _topology(o, domains_to_slices, "domains")


def _mkc_up(o: Obj) -> None:
    spec = o.get("spec")
    if not isinstance(spec, dict) or not ("kubeConfig" in spec or "clusterProfileRef" in spec):
        return
    spec = _sub(o, "spec")
    assert spec is not None
    kc, cp = spec.pop("kubeConfig", None), spec.pop("clusterProfileRef", None)
    source: Obj = dict(spec.get("clusterSource") or {})
    if isinstance(kc, dict) and kc.get("location"):
        source = {"kubeConfig": {k: kc[k] for k in ("location", "locationType") if k in kc}}
    if isinstance(cp, dict):
        source["clusterProfileRef"] = {"name": cp.get("name", "")}
    if source:
        spec["clusterSource"] = source


def _ac_up(o: Obj) -> None:
    _drop(o, "spec.retryDelayMinutes")


# --- per kind: v1beta2 → v1beta1 ----------------------------------------------------------------


def _cq_down(o: Obj) -> None:
    spec = o.get("spec")
    if isinstance(spec, dict) and ("cohortName" in spec or "concurrentAdmissionPolicy" in spec):
        spec = _sub(o, "spec")
        assert spec is not None
        _rename(spec, "cohortName", "cohort")
        if not spec.get("cohort"):
            spec.pop("cohort", None)
        spec.pop("concurrentAdmissionPolicy", None)


def _lq_down(o: Obj) -> None:
    status = o.get("status")
    if isinstance(status, dict) and "flavorsUsage" in status:
        status = _sub(o, "status")
        assert status is not None
        _rename(status, "flavorsUsage", "flavorUsage")


def _wl_down(o: Obj) -> None:
    spec = o.get("spec")
    if isinstance(spec, dict):
        if "priorityClassRef" in spec or "preemptionGates" in spec:
            spec = _sub(o, "spec")
            assert spec is not None
            ref = spec.pop("priorityClassRef", None)
            spec.pop("preemptionGates", None)
            if isinstance(ref, dict):
                source = _SOURCES.get((ref.get("group"), ref.get("kind")))
                if source is not None:
                    spec["priorityClassSource"] = source
                    spec["priorityClassName"] = ref.get("name", "")
        podsets = spec.get("podSets")
        if isinstance(podsets, list) and any(
            isinstance((p or {}).get("topologyRequest"), dict)
            and "podsetSliceRequiredTopologyConstraints" in p["topologyRequest"]
            for p in podsets
        ):
            spec = _sub(o, "spec")
            assert spec is not None
            new = []
            for p in podsets:
                tr = (p or {}).get("topologyRequest")
                if isinstance(tr, dict) and "podsetSliceRequiredTopologyConstraints" in tr:
                    p = {**p, "topologyRequest": {k: v for k, v in tr.items()
                                                  if k != "podsetSliceRequiredTopologyConstraints"}}
                new.append(p)
            spec["podSets"] = new
    status = o.get("status")
    if isinstance(status, dict):
        if "accumulatedPastExecutionTimeSeconds" in status or "preemptionGates" in status:
            status = _sub(o, "status")
            assert status is not None
            _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
            status.pop("preemptionGates", None)
        _topology(o, slices_to_domains, "slices")


def _mkc_down(o: Obj) -> None:
    spec = o.get("spec")
    if not isinstance(spec, dict) or "clusterSource" not in spec:
        return
    spec = _sub(o, "spec")
    assert spec is not None
    source = spec.pop("clusterSource", None) or {}
    kc, cp = source.get("kubeConfig"), source.get("clusterProfileRef")
    if isinstance(kc, dict):
        spec["kubeConfig"] = {"location": kc.get("location", ""), "locationType": kc.get("locationType", "")}
    else:  # v1beta1's kubeConfig is a required struct: Go writes it empty
        spec["kubeConfig"] = {"location": "", "locationType": ""}
    if isinstance(cp, dict):
        spec["clusterProfileRef"] = {"name": cp.get("name", "")}


def _mkconf_down(o: Obj) -> None:
    _drop(o, "spec.quotaManagement")


_UP: dict[str, Callable[[Obj], None]] = {
    "ClusterQueue": _cq_up, "Cohort": _cohort_up, "LocalQueue": _lq_up, "Workload": _wl_up,
    "MultiKueueCluster": _mkc_up, "AdmissionCheck": _ac_up,
}
_DOWN: dict[str, Callable[[Obj], None]] = {
    "ClusterQueue": _cq_down, "LocalQueue": _lq_down, "Workload": _wl_down,
    "MultiKueueCluster": _mkc_down, "MultiKueueConfig": _mkconf_down,
}

# Every schema difference (kind, path as schema_differences() spells it) and how it is handled.
HANDLED: dict[tuple[str, str], str] = {
    ("AdmissionCheck", "spec.retryDelayMinutes"): "dropped",
    ("ClusterQueue", "spec.admissionChecks"): "folded into spec.admissionChecksStrategy",
    ("ClusterQueue", "spec.cohort"): "renamed",
    ("ClusterQueue", "spec.cohortName"): "renamed",
    ("ClusterQueue", "status.fairSharing.admissionFairSharingStatus"): "dropped",
    ("ClusterQueue", "status.pendingWorkloadsStatus"): "dropped",
    ("ClusterQueue", "spec.concurrentAdmissionPolicy"): "dropped",
    ("ClusterQueue", "spec.admissionScope.admissionMode"): "same values (v1beta2 adds the enum)",
    ("ClusterQueue", "spec.flavorFungibility.whenCanBorrow"): "Borrow → MayStopSearch",
    ("ClusterQueue", "spec.flavorFungibility.whenCanPreempt"): "Preempt → MayStopSearch",
    ("Cohort", "status.fairSharing.admissionFairSharingStatus"): "dropped",
    ("LocalQueue", "status.flavorUsage"): "renamed",
    ("LocalQueue", "status.flavorsUsage"): "renamed",
    ("LocalQueue", "status.flavors"): "dropped",
    ("MultiKueueCluster", "spec.clusterProfileRef"): "moved",
    ("MultiKueueCluster", "spec.kubeConfig"): "moved",
    ("MultiKueueCluster", "spec.clusterSource"): "moved",
    ("MultiKueueConfig", "spec.quotaManagement"): "dropped",
    ("Workload", "spec.priorityClassName"): "priorityClassRef",
    ("Workload", "spec.priorityClassSource"): "priorityClassRef",
    ("Workload", "spec.priorityClassRef"): "priorityClassSource + priorityClassName",
    ("Workload", "status.accumulatedPastExexcutionTimeSeconds"): "renamed",
    ("Workload", "status.accumulatedPastExecutionTimeSeconds"): "renamed",
    ("Workload", "status.admission.podSetAssignments[].topologyAssignment.domains"): "re-encoded",
    ("Workload", "status.admission.podSetAssignments[].topologyAssignment.slices"): "re-encoded",
    ("Workload", "status.admission.podSetAssignments[].delayedTopologyRequest"): "same values (v1beta2 adds the enum)",
    ("Workload", "spec.podSets[].topologyRequest.podsetSliceRequiredTopologyConstraints"): "dropped",
    ("Workload", "spec.preemptionGates"): "dropped",
    ("Workload", "status.preemptionGates"): "dropped",
}


# --- topology assignments -----------------------------------------------------------------------


def _topology(o: Obj, fn: Callable[[Obj], Obj], key: str) -> None:
    adm = (o.get("status") or {}).get("admission")
    psas = adm.get("podSetAssignments") if isinstance(adm, dict) else None
    if not isinstance(psas, list) or not any(
        isinstance((p or {}).get("topologyAssignment"), dict) and key in p["topologyAssignment"] for p in psas
    ):
        return
    status = _sub(o, "status")
    assert status is not None
    adm = _sub(status, "admission")
    assert adm is not None
    adm["podSetAssignments"] = [
        {**p, "topologyAssignment": fn(p["topologyAssignment"])}
        if isinstance((p or {}).get("topologyAssignment"), dict) and key in p["topologyAssignment"] else p
        for p in psas
    ]


def slices_to_domains(ta: Obj) -> Obj:
    """v1beta2 `{levels, slices}` → v1beta1 `{levels, domains: [{values, count}]}`."""
    levels = list(ta.get("levels") or [])
    domains = []
    for s in ta.get("slices") or ():
        n = int(s.get("domainCount") or 0)
        per_level = s.get("valuesPerLevel") or []
        counts = s.get("podCounts") or {}
        for i in range(n):
            values = []
            for lv in per_level:
                if lv.get("universal") is not None:
                    values.append(lv["universal"])
                else:
                    ind = lv.get("individual") or {}
                    roots = ind.get("roots") or []
                    values.append((ind.get("prefix") or "") + (roots[i] if i < len(roots) else "")
                                  + (ind.get("suffix") or ""))
            count = counts.get("universal") if counts.get("universal") is not None else (
                (counts.get("individual") or [0] * n)[i] if i < len(counts.get("individual") or []) else 0)
            domains.append({"values": values, "count": count})
    out = {k: v for k, v in ta.items() if k != "slices"}
    out["levels"] = levels
    out["domains"] = domains
    return out


def domains_to_slices(ta: Obj) -> Obj:
    """v1beta1 domains → one v1beta2 slice: per level a universal value when all domains share it,
    else the individual roots around their common prefix and suffix; pod counts likewise."""
    levels = list(ta.get("levels") or [])
    domains = list(ta.get("domains") or [])
    out = {k: v for k, v in ta.items() if k != "domains"}
    out["levels"] = levels
    if not domains:
        out["slices"] = []
        return out
    per_level = []
    for li in range(len(levels)):
        values = [str((d.get("values") or [""] * len(levels))[li]) for d in domains]
        per_level.append(_level_values(values))
    counts = [int(d.get("count") or 0) for d in domains]
    pod_counts: Obj = {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts}
    out["slices"] = [{"domainCount": len(domains), "valuesPerLevel": per_level, "podCounts": pod_counts}]
    return out


def _level_values(values: list[str]) -> Obj:
    if len(set(values)) == 1:
        return {"universal": values[0]}
    shortest = min(len(v) for v in values)
    prefix = os.path.commonprefix(values)[:shortest]
    suffix = os.path.commonprefix([v[::-1] for v in values])[::-1]
    suffix = suffix[len(suffix) - min(len(suffix), shortest - len(prefix)):] if suffix else ""
    ind: Obj = {}
    if prefix:
        ind["prefix"] = prefix
    if suffix:
        ind["suffix"] = suffix
    ind["roots"] = [v[len(prefix):len(v) - len(suffix)] for v in values]
    return {"individual": ind}


# --- the schema differences ---------------------------------------------------------------------


def schema_differences(schemas: Any) -> list[tuple[str, str, str]]:
    """(kind, path, "v1beta1 only" | "v1beta2 only" | "differs") for every field on which the
    v1beta1 and v1beta2 schemas of a SchemaSet's CRDs differ (the topmost differing path only)."""
    out: list[tuple[str, str, str]] = []
    for (_group, kind), crd in sorted(schemas.crds.items()):
        if V1 not in crd.schemas or V2 not in crd.schemas:
            continue
        a, b = _paths(crd.schemas[V1]), _paths(crd.schemas[V2])
        only_a, only_b = set(a) - set(b), set(b) - set(a)
        for p in sorted(only_a):
            if not _under(p, only_a):
                out.append((kind, p, "v1beta1 only"))
        for p in sorted(only_b):
            if not _under(p, only_b):
                out.append((kind, p, "v1beta2 only"))
        for p in sorted(set(a) & set(b)):
            if a[p] != b[p]:
                out.append((kind, p, "differs"))
    return out


def _under(p: str, within: set[str]) -> bool:
    return any(p != q and (p.startswith(q + ".") or p.startswith(q + "[]") or p.startswith(q + "{}")) for q in within)


def _paths(node: Any, prefix: str = "") -> dict[str, tuple[Any, tuple[Any, ...]]]:
    out: dict[str, tuple[Any, tuple[Any, ...]]] = {}
    if not isinstance(node, dict):
        return out
    out[prefix or "."] = (node.get("type"), tuple(node.get("enum") or ()))
    for k, v in (node.get("properties") or {}).items():
        if not prefix and k == "metadata":
            continue
        out.update(_paths(v, f"{prefix}.{k}" if prefix else k))
    if isinstance(node.get("items"), dict):
        out.update(_paths(node["items"], prefix + "[]"))
    if isinstance(node.get("additionalProperties"), dict):
        out.update(_paths(node["additionalProperties"], prefix + "{}"))
    return out


__all__ = ["HANDLED", "convert", "domains_to_slices", "schema_differences", "slices_to_domains", "version_of"]
