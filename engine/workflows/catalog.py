"""The five-step workload-profile catalog change (docs/rules.md#change-procedure) and its rollback.

Step 0 happens before anything is journaled: `catalog_problems` checks the new catalog completely
(fields as the TauGrid CRD and controller validate them, and every live object a profile needs to
become Ready), `catalog_diff` says what changes, and `affected_queues` says which queues hold and
why. The hold step then sends a server dry-run of the TauCluster update before its first write.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

import yaml

from ..actions import ApiFailure, PermissionDenied, WriteRefused
from ..model import (
    AdmissionCheck,
    LocalQueue,
    MultiKueueConfig,
    Namespace,
    ResourceFlavor,
    TauTeam,
    TauWorkspace,
    Topology,
)
from ..model.kueue import MULTIKUEUE_CONTROLLER, ClusterQueue
from ..model.names import (
    CLUSTER_GENERATION_ANNOTATION,
    PROFILE_LABEL,
    PROFILE_SET_HASH_ANNOTATION,
    QUEUE_NAME_LABEL,
    WORKLOAD_PROFILE_ANNOTATION,
)
from ..model.tau import ResolvedWorkloadProfile, TauCluster, WorkloadProfile
from ..paths import write_atomic
from ..profile_snapshot import ProfileSnapshotError, export_snapshot
from ..rules.base import RuleContext
from ..rules.multikueue import _m3 as multikueue_wiring
from ..rules.profilehash import (
    MODES,
    MULTI_KUEUE,
    PLACEMENTS,
    SINGLE_CLUSTER,
    _dns1123_subdomain,
    _label_value,
    hash_input,
    normalize_label,
    normalize_name,
    normalize_profile,
    validate_profile,
)
from ..rules.profiles import targets_multikueue
from .base import Check, Context, Operation, Plan, Progress, Step, Workflow
from .drain import _same_uid
from .journal import deactivated_by
from .kind import Param, ParamError, WorkflowKind, open_journal
from .steps import DeactivatePending, Reactivate, RestoreStopPolicy, SetStopPolicy


class CatalogError(ValueError):
    pass


def load_catalog(path: str | Path) -> list[Any]:
    """A new catalog: a list of profiles, `{workloadProfiles: [...]}`, the controller chart's values
    (`tauCluster.workloadProfiles`), or a TauCluster object. Only the file and its shape are checked here;
    `catalog_problems` checks the profiles."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{p}: cannot read ({exc.__class__.__name__})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        pos = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise CatalogError(f"{p}{pos}: invalid YAML") from None
    if isinstance(data, dict) and data.get("kind") in ("TauCluster", "Cluster"):
        data = (data.get("spec") or {}).get("workloadProfiles")
    elif isinstance(data, dict) and "workloadProfiles" not in data and isinstance(data.get("tauCluster"), dict):
        data = data["tauCluster"].get("workloadProfiles")
    elif isinstance(data, dict):
        data = data.get("workloadProfiles")
    if not isinstance(data, list) or not data:
        raise CatalogError(f"{p}: expected a non-empty list of workload profiles"
                           + (f" (workloadProfiles is a {type(data).__name__})" if data and not isinstance(data, list)
                              else ""))
    return data


# --- step 0: validation ----------------------------------------------------------------------

# Declared fields (TauGrid's core/resourceprofile/workload.go) and their JSON types; anything else is a typo the
# API server would prune silently, so it is refused here.
_FIELDS: dict[str, type] = {"name": str, "description": str, "applicability": dict, "gpusPerWorker": int,
                            "workerCount": int, "mode": str, "placement": str, "defaultLocalQueue": str,
                            "executionTarget": str, "priorities": dict}
_SUBFIELDS: dict[str, dict[str, type]] = {
    "applicability": {"teams": list, "lanes": list, "namespaces": list},
    "priorities": {"workloadPriorityClassName": str, "podPriorityClassName": str, "disableDefaultPriorities": bool},
}
_REQUIRED = ("name", "gpusPerWorker", "workerCount", "mode", "placement", "defaultLocalQueue")
_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", dict: "a mapping", list: "a list"}


def _type_ok(value: Any, t: type) -> bool:
    if t is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, t)


def _label(item: Any, i: int) -> str:
    name = item.get("name") if isinstance(item, dict) else None
    return f"profile {name!r}" if isinstance(name, str) and name.strip() else f"profile #{i + 1}"


def _shape_problems(item: Any, label: str) -> list[str]:
    if not isinstance(item, dict):
        return [f"{label}: expected a mapping of profile fields, got {type(item).__name__}"]
    out = []
    for key, value in item.items():
        if key not in _FIELDS:
            out.append(f"{label}: unknown field {key!r}")
            continue
        if value is None:
            continue
        if not _type_ok(value, _FIELDS[key]):
            out.append(f"{label}: {key} must be {_TYPE_NAMES[_FIELDS[key]]}, got {type(value).__name__}")
            continue
        for sub, sval in (value.items() if key in _SUBFIELDS else ()):
            kinds = _SUBFIELDS[key]
            if sub not in kinds:
                out.append(f"{label}: unknown field {key}.{sub!r}")
            elif sval is not None and not _type_ok(sval, kinds[sub]):
                out.append(f"{label}: {key}.{sub} must be {_TYPE_NAMES[kinds[sub]]}, got {type(sval).__name__}")
            elif kinds[sub] is list and sval and not all(isinstance(v, str) for v in sval):
                out.append(f"{label}: {key}.{sub} must be a list of strings")
    for key in _REQUIRED:
        if item.get(key) is None or item.get(key) == "":
            out.append(f"{label}: {key} is required")
    given = item.get("priorities")
    pri: dict[str, Any] = given if isinstance(given, dict) else {}
    if not (pri.get("disableDefaultPriorities") or pri.get("workloadPriorityClassName")
            or pri.get("podPriorityClassName")):
        out.append(f"{label}: priorities: workloadPriorityClassName and podPriorityClassName are required "
                   "(or disableDefaultPriorities: true)")
    return out


def _field_problems(p: ResolvedWorkloadProfile, label: str) -> list[str]:
    """Every validation error of a normalised profile (validate_profile stops at the first)."""
    out = []
    if not _dns1123_subdomain(p.name):
        out.append(f"{label}: name {p.name!r} is not a DNS-1123 subdomain")
    for field, values in (("teams", p.applicability.teams), ("lanes", p.applicability.lanes),
                          ("namespaces", p.applicability.namespaces)):
        for i, v in enumerate(values):
            if not v:
                out.append(f"{label}: applicability.{field} has an empty value")
            elif i and v == values[i - 1]:
                out.append(f"{label}: applicability.{field} lists {v!r} twice")
            elif not (_dns1123_subdomain(v) if field == "namespaces" else _label_value(v)):
                out.append(f"{label}: applicability.{field} value {v!r} is invalid")
    if p.gpus_per_worker < 0:
        out.append(f"{label}: gpusPerWorker must be 0 or more, got {p.gpus_per_worker}")
    if p.worker_count < 1:
        out.append(f"{label}: workerCount must be 1 or more, got {p.worker_count}")
    if p.mode not in MODES:
        out.append(f"{label}: mode must be fixed or elastic, got {p.mode!r}")
    if p.placement not in PLACEMENTS:
        out.append(f"{label}: placement must be one of {', '.join(PLACEMENTS)}, got {p.placement!r}")
    if not _dns1123_subdomain(p.default_local_queue):
        out.append(f"{label}: defaultLocalQueue {p.default_local_queue!r} is not a valid LocalQueue name")
    if p.execution_target not in (SINGLE_CLUSTER, MULTI_KUEUE):
        out.append(f"{label}: executionTarget must be singleCluster or multiKueue, got {p.execution_target!r}")
    pri = p.priorities
    if pri.disable_default_priorities:
        if pri.workload_priority_class_name or pri.pod_priority_class_name:
            out.append(f"{label}: priorities: disableDefaultPriorities cannot be combined with priority class names")
    else:
        for field, value in (("workloadPriorityClassName", pri.workload_priority_class_name),
                             ("podPriorityClassName", pri.pod_priority_class_name)):
            if not _dns1123_subdomain(value):
                out.append(f"{label}: priorities.{field} is required (or set disableDefaultPriorities: true)"
                           if not value else f"{label}: priorities.{field} {value!r} is invalid")
    if not out and (problem := validate_profile(p)):  # the controller's own check, should they ever differ
        out.append(f"{label}: {problem}")
    return out


class _Refs:
    """Live lookups for the reference checks; an unreadable kind is one problem, not a pass."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.unreadable: dict[str, str] = {}

    def readable(self, kind: str, required: bool = True) -> bool:
        """`required=False`: a check the LocalQueue lookup covers anyway (namespaces) is skipped
        when the kind is unreadable, rather than refusing every catalog for lack of a list right."""
        if self.ctx.store.readable(kind):
            return True
        if required:
            self.unreadable.setdefault(kind, self.ctx.store.access(kind).state.value)
        return False


def _namespaces_of(ctx: Context, p: ResolvedWorkloadProfile) -> list[str]:
    """Where the controller looks for the profile's LocalQueue (the profile observer's first step)."""
    if p.applicability.namespaces:
        return list(p.applicability.namespaces)
    tc = _tau_cluster(ctx)
    shared = tc.spec.queues.shared_local_queues if tc is not None else []
    return sorted(normalize_name(q.namespace) for q in shared if normalize_name(q.name) == p.default_local_queue)


def _cq_active(cq: ClusterQueue) -> tuple[bool, str]:
    active = cq.condition("Active")
    # Stopped is a hold (maybe our own), not broken wiring: the controller accepts it too.
    if active is not None and (active.is_true or active.reason == "Stopped"):
        return True, ""
    return False, f" ({active.reason})" if active is not None and active.reason else ""


def _reference_problems(ctx: Context, refs: _Refs, p: ResolvedWorkloadProfile, label: str,
                        known_teams: set[str] | None) -> list[str]:
    out = []
    if known_teams is not None:
        for team in p.applicability.teams:
            if team not in known_teams:
                out.append(f"{label}: applicability.teams: team {team!r} not found (no TauTeam or workspace names it)")
    namespaces = _namespaces_of(ctx, p)
    if not namespaces:
        out.append(f"{label}: applicability.namespaces is empty and no spec.queues.sharedLocalQueues entry is named "
                   f"{p.default_local_queue!r}: the profile would resolve no LocalQueue")
    cq_names: set[str] = set()
    for ns in namespaces:
        if refs.readable("Namespace", required=False) and refs.ctx.store.get(Namespace, ns) is None:
            out.append(f"{label}: applicability.namespaces: namespace {ns!r} not found")
            continue
        if not refs.readable("LocalQueue"):
            continue
        lq = refs.ctx.store.get(LocalQueue, p.default_local_queue, ns)
        if lq is None:
            out.append(f"{label}: defaultLocalQueue: LocalQueue {ns}/{p.default_local_queue} not found")
        elif not lq.spec.cluster_queue:
            out.append(f"{label}: defaultLocalQueue: LocalQueue {ns}/{p.default_local_queue} has no clusterQueue")
        else:
            cq_names.add(normalize_name(lq.spec.cluster_queue))
    cqs: list[ClusterQueue] = []
    for name in sorted(cq_names):
        if not refs.readable("ClusterQueue"):
            break
        cq = refs.ctx.store.get(ClusterQueue, name)
        if cq is None:
            out.append(f"{label}: defaultLocalQueue: ClusterQueue {name!r} (behind {p.default_local_queue}) not found")
            continue
        ok, why = _cq_active(cq)
        if not ok:
            out.append(f"{label}: defaultLocalQueue: ClusterQueue {name!r} is not Active{why}")
        cqs.append(cq)
    for cq in cqs:  # flavors and their topologies (steps 4-5)
        for rg in cq.spec.resource_groups:
            for f in rg.flavors:
                if not refs.readable("ResourceFlavor"):
                    break
                rf = refs.ctx.store.get(ResourceFlavor, normalize_name(f.name))
                if rf is None:
                    out.append(f"{label}: ClusterQueue {cq.name!r} uses ResourceFlavor {f.name!r}, which does not "
                               "exist")
                elif rf.spec.topology_name and refs.readable("Topology") and \
                        refs.ctx.store.get(Topology, normalize_name(rf.spec.topology_name)) is None:
                    out.append(f"{label}: ResourceFlavor {f.name!r} names Topology {rf.spec.topology_name!r}, "
                               "which does not exist")
    out += _execution_problems(ctx, refs, p, label, cqs)
    pri = p.priorities
    if not pri.disable_default_priorities:
        for kind, field, name in (("WorkloadPriorityClass", "workloadPriorityClassName",
                                   pri.workload_priority_class_name),
                                  ("PriorityClass", "podPriorityClassName", pri.pod_priority_class_name)):
            if refs.readable(kind) and refs.ctx.store.get(kind, name) is None:
                out.append(f"{label}: priorities.{field}: {kind} {name!r} not found")
    return out


def _execution_problems(ctx: Context, refs: _Refs, p: ResolvedWorkloadProfile, label: str,
                        cqs: list[ClusterQueue]) -> list[str]:
    """Step 3: a singleCluster profile must not route through MultiKueue; a multiKueue one only must."""
    if not refs.readable("AdmissionCheck"):
        return []
    out = []
    for cq in cqs:
        names = cq.spec.admission_check_names
        mk = [n for n in names if (ac := refs.ctx.store.get(AdmissionCheck, n)) is not None
              and ac.spec.controller_name == MULTIKUEUE_CONTROLLER]
        if p.execution_target == SINGLE_CLUSTER and mk:
            out.append(f"{label}: executionTarget singleCluster, but ClusterQueue {cq.name!r} uses MultiKueue "
                       f"AdmissionCheck(s) {', '.join(mk)}")
        elif p.execution_target == MULTI_KUEUE and (not names or len(mk) != len(names)):
            out.append(f"{label}: executionTarget multiKueue, but ClusterQueue {cq.name!r} must use only MultiKueue "
                       "AdmissionChecks")
    if p.execution_target == MULTI_KUEUE:
        check, _ = multikueue_wiring(RuleContext(store=ctx.store, now=_now(ctx), config=ctx.config))
        if not check.ok:
            out.append(f"{label}: executionTarget multiKueue, but MultiKueue is not ready: {check.message}")
    return out


def _known_teams(ctx: Context, refs: _Refs, current: list[Any]) -> set[str] | None:
    if not refs.readable("TauTeam", required=False):  # the controller never reads teams: no check, no refusal
        return None
    teams = {normalize_label(t.name) for t in ctx.store.list(TauTeam)}
    teams |= {normalize_label(w.team) for w in ctx.store.list(TauWorkspace) if w.team}
    for item in current:  # a team the live catalog already names stays acceptable (a rollback restores it)
        if isinstance(item, dict):
            teams |= {normalize_label(t) for t in ((item.get("applicability") or {}).get("teams") or [])
                      if isinstance(t, str)}
    return teams


def catalog_problems(ctx: Context, items: list[Any]) -> list[str]:
    """Everything that would stop the new catalog from becoming Ready, one line per problem, each
    naming the profile and the field: shape and types, the controller's field validation
    (`ValidationSkipped` / `InvalidWorkloadProfile`), duplicate names, and the live objects its
    resolution needs (namespaces, teams, LocalQueues, ClusterQueues, flavors, topologies,
    MultiKueue wiring, priority classes). Empty: the catalog can be applied."""
    problems: list[str] = []
    refs = _Refs(ctx)
    if not refs.readable("TauCluster") or _tau_cluster(ctx) is None:
        problems.append("TauCluster cluster is not readable: the catalog cannot be checked against it")
    known_teams = _known_teams(ctx, refs, declared_catalog(ctx))
    seen: dict[str, str] = {}
    for i, item in enumerate(items):
        label = _label(item, i)
        bad = _shape_problems(item, label)
        problems += bad
        if bad:
            continue
        try:
            p = _normalized(item)
        except ValueError as exc:  # pydantic's ValidationError; the shape check should have caught it
            problems.append(f"{label}: {str(exc).splitlines()[0]}")
            continue
        fields = _field_problems(p, label)
        problems += fields
        if p.name in seen:
            problems.append(f"{label}: name {p.name!r} is declared twice (also {seen[p.name]})")
        seen.setdefault(p.name, label)
        if not fields:
            problems += _reference_problems(ctx, refs, p, label, known_teams)
    for kind, state in sorted(refs.unreadable.items()):
        problems.append(f"{kind} data is {state}: the catalog's references cannot be checked")
    return problems


# --- what changes ---------------------------------------------------------------------------


def _normalized(item: dict[str, Any]) -> ResolvedWorkloadProfile:
    return normalize_profile(ResolvedWorkloadProfile.model_validate(item))


def _declared_fields(item: dict[str, Any]) -> dict[str, Any]:
    """The profile's declared definition, normalised, flattened to `field.sub: value`."""
    out: dict[str, Any] = {}
    for key, value in hash_input(_normalized(item)).items():
        if isinstance(value, dict):
            for sub, sval in value.items():
                out[f"{key}.{sub}"] = sval
        else:
            out[key] = value
    return out


def _show(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return json.dumps(value) if isinstance(value, str) and (not value or " " in value) else str(value)


def _by_name(items: list[Any]) -> dict[str, dict[str, Any]]:
    return {normalize_name(i["name"]): i for i in items if isinstance(i, dict) and isinstance(i.get("name"), str)}


def profile_changes(current: list[Any], new: list[Any]) -> dict[str, tuple[str, list[tuple[str, Any, Any]]]]:
    """Per profile name: ("added" | "removed" | "changed", [(field, old, new)]); unchanged ones are absent."""
    cur, nxt = _by_name(current), _by_name(new)
    out: dict[str, tuple[str, list[tuple[str, Any, Any]]]] = {}
    for name in sorted(set(cur) | set(nxt)):
        if name not in nxt:
            out[name] = ("removed", [])
        elif name not in cur:
            out[name] = ("added", [])
        else:
            a, b = _declared_fields(cur[name]), _declared_fields(nxt[name])
            fields = [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
            if fields:
                out[name] = ("changed", fields)
    return out


def _field_change(old: Any, new: Any) -> str:
    """`old → new`; a list that gained or lost items says only those, `+item -item`."""
    if isinstance(old, list) and isinstance(new, list):
        gone = [v for v in old if v not in new]
        added = [v for v in new if v not in old]
        if gone or added:
            return " ".join([*(f"+{_show(v)}" for v in added), *(f"-{_show(v)}" for v in gone)])
        return f"reordered {_show(old)} → {_show(new)}"
    return f"{_show(old)} → {_show(new)}"


def catalog_diff(current: list[Any], new: list[Any]) -> list[str]:
    """`+ name`, `- name`, `~ name: field old → new` (a list field: `+item -item`) for a validated new catalog
    against the current one."""
    lines = []
    for name, (what, fields) in profile_changes(current, new).items():
        if what == "added":
            lines.append(f"+ {name}")
        elif what == "removed":
            lines.append(f"- {name}")
        else:
            lines += [f"~ {name}: {f} {_field_change(old, new_)}" for f, old, new_ in fields]
    return lines


def declared_catalog(ctx: Context) -> list[Any]:
    return ((ctx.store.raw("TauCluster", "cluster") or {}).get("spec") or {}).get("workloadProfiles") or []


def _new_queues(ctx: Context, item: dict[str, Any]) -> list[str]:
    """The ClusterQueues a declared profile will resolve to, read from the live LocalQueues."""
    p = _normalized(item)
    out = set()
    for ns in _namespaces_of(ctx, p):
        lq = ctx.store.get(LocalQueue, p.default_local_queue, ns)
        if lq is not None and lq.spec.cluster_queue:
            out.add(normalize_name(lq.spec.cluster_queue))
    return sorted(out)


def affected_queues(ctx: Context, new: list[Any], extra: list[str] | tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Per ClusterQueue (sorted), why the change affects it. Only a profile whose definition changes
    (added, removed, or any declared field differs) makes its queues affected: the queues its
    current resolution routes to, and those its new definition will route to. Plus `extra`."""
    tc = _tau_cluster(ctx)
    resolved = {p.name: list(p.cluster_queues) for p in
                (tc.status.workload_profiles.profiles if tc and tc.status.workload_profiles else [])}
    nxt = _by_name(new)
    why: dict[str, list[str]] = {}
    for name, (what, fields) in profile_changes(declared_catalog(ctx), new).items():
        change = {"added": "is added", "removed": "is removed"}.get(
            what, "changes (" + ", ".join(f for f, _, _ in fields) + ")")
        now = resolved.get(name, [])
        for q in now:
            why.setdefault(q, []).append(f"profile {name} routes to it and {name} {change}")
        if name in nxt:
            for q in _new_queues(ctx, nxt[name]):
                if q not in now:
                    why.setdefault(q, []).append(f"profile {name} will route to it and {name} {change}")
    for q in extra:
        why.setdefault(q, []).append("chosen explicitly (--cq or the form)")
    return {q: why[q] for q in sorted(why)}


# --- steps --------------------------------------------------------------------------------------


async def _dry_run_catalog(ctx: Context, catalog: list[dict[str, Any]]) -> Check:
    """A connected server dry-run of the TauCluster update: admitted and validated, stored nowhere."""
    if _same_catalog(declared_catalog(ctx), catalog):
        return Check(True, "the TauCluster already declares this catalog: nothing to dry-run")
    try:
        await ctx.actions.dry_run_patch("TauCluster", "cluster", None, {"spec": {"workloadProfiles": catalog}},
                                        "server dry-run of the catalog update")
    except (ApiFailure, WriteRefused, PermissionDenied) as exc:
        return Check(False, f"server dry-run of the TauCluster update rejected: {exc}")
    return Check(True, "server dry-run of the TauCluster update accepted")


class CatalogHold(SetStopPolicy):
    """Hold the affected queues, after a server dry-run of the catalog update has been accepted:
    a catalog the API server refuses stops here, before any queue is touched."""

    def __init__(self, step_id: str, cqs: list[str], catalog: list[dict[str, Any]],
                 why: dict[str, list[str]] | None = None,
                 title: str = "Hold the affected queues (HoldAndDrain)") -> None:
        super().__init__(step_id, cqs, "HoldAndDrain", title, why)
        self.catalog = catalog
        self._dry_run = Check(False, "the server dry-run has not run")

    async def plan(self, ctx: Context) -> Plan:
        self._dry_run = await _dry_run_catalog(ctx, self.catalog)
        plan = await super().plan(ctx)
        diff = catalog_diff(declared_catalog(ctx), self.catalog)
        plan.notes[:0] = [self._dry_run.message] + ([f"catalog change: {line}" for line in diff])
        if not self.cqs:
            plan.notes.append("no queue is affected: no profile's routing changes")
        return plan

    def preconditions(self, ctx: Context, plan: Plan) -> list[Check]:
        return [*super().preconditions(ctx, plan), self._dry_run]


def _tau_cluster(ctx: Context) -> TauCluster | None:
    return ctx.store.get(TauCluster, "cluster")


def _same_catalog(a: list[Any], b: list[Any]) -> bool:
    def canon(x: list[Any]) -> str:
        return json.dumps(sorted(x, key=lambda p: str(p.get("name", ""))), sort_keys=True)

    return canon(a or []) == canon(b or [])


class ExportCurrent(Step):
    id = "export"
    title = "Export the current TauCluster and the ready profile snapshot"

    def preconditions(self, ctx: Context, plan: Plan) -> list[Check]:
        tc = _tau_cluster(ctx)
        if tc is None or not ctx.store.readable("TauCluster"):
            return [Check(False, "TauCluster cluster is not readable: nothing to export")]
        view = ctx.view()
        return [Check(view.profiles.usable, "the current profile set is usable" if view.profiles.usable else
                      "the current profile set is not usable (stale, unready or hash mismatch): "
                      "fix it before changing the catalog, a rollback needs a ready revision")]

    async def run_local(self, ctx: Context) -> dict[str, Any]:
        assert ctx.artifacts_dir is not None and ctx.journal is not None
        ctx.artifacts_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        tc = _tau_cluster(ctx)
        if tc is None:
            raise_step("TauCluster cluster is gone: nothing to export")
        raw = ctx.store.raw("TauCluster", "cluster") or tc.model_dump(by_alias=True, mode="json")
        gen = tc.metadata.generation
        tc_path = ctx.artifacts_dir / f"taucluster-gen{gen}.yaml"
        write_atomic(tc_path, yaml.safe_dump(raw, sort_keys=False), mode=0o600)
        snap_path = ctx.artifacts_dir / f"profiles-gen{gen}.snapshot.yaml"
        try:
            doc = export_snapshot(RuleContext(store=ctx.store, now=_now(ctx), config=ctx.config), snap_path)
        except ProfileSnapshotError as exc:
            raise_step(f"profile snapshot export refused: {exc}")
        ctx.journal.append("artifact", self.id, {"name": "taucluster", "path": str(tc_path), "generation": gen})
        ctx.journal.append("artifact", self.id, {"name": "profiles", "path": str(snap_path),
                                                 "hash": doc.get("profileSetHash")})
        return {"taucluster": str(tc_path), "profiles": str(snap_path), "generation": gen,
                "hash": doc.get("profileSetHash")}

    def local_summary(self, result: dict[str, Any]) -> str:
        return (f"exported TauCluster cluster (generation {result.get('generation')}) to {result.get('taucluster')} "
                f"and the profile snapshot to {result.get('profiles')}")


def _now(ctx: Context) -> datetime:
    return datetime.fromtimestamp(ctx.clock(), UTC)


def raise_step(message: str) -> NoReturn:
    from .base import StepFailed

    raise StepFailed(message)


class ApplyCatalog(Step):
    """Patch spec.workloadProfiles (server dry-run first), wait for the new generation to be
    observed with every profile Ready, then run connected server dry-run checks."""

    wait_timeout = 900.0

    def __init__(self, step_id: str, catalog: list[dict[str, Any]], title: str, expect_hash: str | None = None) -> None:
        self.id = step_id
        self.catalog = catalog
        self.title = title
        self.expect_hash = expect_hash

    async def plan(self, ctx: Context) -> Plan:
        tc = _tau_cluster(ctx)
        current = (ctx.store.raw("TauCluster", "cluster") or {}).get("spec", {}).get("workloadProfiles", [])
        if tc is None or _same_catalog(current, self.catalog):
            return Plan([], ["the TauCluster already declares this catalog"])
        new = copy.deepcopy(self.catalog)

        def planner(cur: dict[str, Any]) -> dict[str, Any] | None:
            have = (cur.get("spec") or {}).get("workloadProfiles") or []
            return None if _same_catalog(have, new) else {"spec": {"workloadProfiles": new}}

        changes = profile_changes(current, new)
        marks = {"added": "+", "removed": "-"}
        summary = ", ".join(f"{marks.get(what, '~')} {name}" for name, (what, _fields) in changes.items())
        return Plan([Operation(
            "patch", "TauCluster", None, "cluster", f"replace the workload profile catalog ({len(new)} profiles)",
            patch={"spec": {"workloadProfiles": f"<{len(new)} profiles>"}}, planner=planner,
            # The whole lists would hide the change: name what differs (the notes hold the +/− diff).
            before=f"generation {tc.metadata.generation}", after=f"{len(new)} profiles ({summary or 'spelling only'})",
        )], catalog_diff(current, new) or ["only spelling differs (same profiles once normalised)"])

    def preconditions(self, ctx: Context, plan: Plan) -> list[Check]:
        if _tau_cluster(ctx) is None:
            return [Check(False, "TauCluster cluster not found")]
        return [Check(True, "TauCluster present")]

    def landed(self, op: dict[str, Any], obj: dict[str, Any] | None) -> bool:
        # The journaled patch only counts the profiles: the live catalog is compared with the one applied.
        return obj is not None and _same_catalog((obj.get("spec") or {}).get("workloadProfiles") or [], self.catalog)

    def progress(self, ctx: Context) -> Progress:
        tc = _tau_cluster(ctx)
        declared = (ctx.store.raw("TauCluster", "cluster") or {}).get("spec", {}).get("workloadProfiles", [])
        if tc is None or not _same_catalog(declared, self.catalog):
            return Progress(False, "waiting for the watch to show the new catalog", remaining=3)
        ps = tc.status.workload_profiles
        if ps is None or ps.observed_generation != tc.metadata.generation:
            return Progress(False, f"waiting for the controller to observe generation {tc.metadata.generation}",
                            remaining=2)
        view = ctx.view()
        # Name the first failing condition: a profile stuck not Ready says why in the progress line.
        unready = [p.name + (f": {p.condition} {p.reason}".rstrip() if p.condition or p.reason else "")
                   for p in view.profiles.profiles if not p.ready]
        if not view.profiles.usable or unready:
            return Progress(False, f"generation {tc.metadata.generation}: waiting for every profile to be Ready"
                            + (f" ({', '.join(unready)} not ready)" if unready else ""), remaining=1 + len(unready))
        return Progress(True,
                        f"generation {tc.metadata.generation} Ready, hash "
                        f"{(view.profiles.profile_set_hash or '')[:12]}…",
                        remaining=0)

    async def verify(self, ctx: Context) -> list[Check]:
        view = ctx.view()
        checks = [Check(view.profiles.usable, "profile set usable at the new generation")]
        if self.expect_hash:
            same = view.profiles.profile_set_hash == self.expect_hash
            checks.append(Check(same, "profileSetHash equals the exported one" if same else
                                f"profileSetHash {view.profiles.profile_set_hash} differs from the exported "
                                f"{self.expect_hash}: the live queues or classes changed since the export"))
        checks += await _server_dry_runs(ctx)
        return checks


async def _server_dry_runs(ctx: Context) -> list[Check]:
    """Connected server dry-run: a representative Job per profile namespace, stamped as a
    selection would stamp it, must be accepted by the API server (nothing is stored)."""
    tc = _tau_cluster(ctx)
    view = ctx.view()
    checks = []
    generation = str(tc.metadata.generation) if tc is not None else ""
    for p in tc.status.workload_profiles.profiles if tc and tc.status.workload_profiles else []:
        for lq in p.local_queues[:1]:
            job = {
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": f"taudash-dry-run-{p.name}".replace(".", "-")[:63], "namespace": lq.namespace,
                             "labels": {QUEUE_NAME_LABEL: lq.name, PROFILE_LABEL: p.name},
                             "annotations": {CLUSTER_GENERATION_ANNOTATION: generation,
                                             PROFILE_SET_HASH_ANNOTATION: view.profiles.profile_set_hash or "",
                                             WORKLOAD_PROFILE_ANNOTATION: p.name}},
                "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never",
                         "containers": [{"name": "main", "image": "busybox"}]}}},
            }
            try:
                await ctx.actions.dry_run_create(job, f"server dry-run for profile {p.name}")
                checks.append(Check(True, f"server dry-run accepted for {p.name} in {lq.namespace}"))
            except ApiFailure as exc:
                checks.append(Check(False, f"server dry-run rejected for {p.name} in {lq.namespace}: {exc}"))
    return checks


def catalog_workflow(params: dict[str, Any]) -> Workflow:
    cqs = params["cqs"]
    return Workflow("catalog", "Catalog change", [
        CatalogHold("hold", cqs, params["catalog"], params.get("why")),
        DeactivatePending("drain", cqs),
        ExportCurrent(),
        ApplyCatalog("apply", params["catalog"], "Apply the new catalog and wait for it to be Ready"),
        RestoreStopPolicy("restore", cqs),
        # The drain deactivated what was pending and what HoldAndDrain evicted (jobs that were running):
        # with admission restored they come back, confirmed on their own (declining pauses the run).
        Reactivate("reactivate", [], own=True, title="Reactivate the Workloads this change deactivated"),
    ], params)


# --- rollback ------------------------------------------------------------------------------


class SurveyMultiKueue(Step):
    """Before restoring: record the MultiKueue routing the new catalog added, for later steps."""

    id = "survey"
    title = "Record MultiKueue routing added by the change"

    def __init__(self, previous: list[dict[str, Any]]) -> None:
        self.previous_names = {p.get("name") for p in previous}

    async def run_local(self, ctx: Context) -> dict[str, Any]:
        tc = _tau_cluster(ctx)
        added_mk = []
        for p in (tc.status.workload_profiles.profiles if tc and tc.status.workload_profiles else []):
            if targets_multikueue(p) and p.name not in self.previous_names:
                added_mk.append({"name": p.name, "localQueues": [[lq.namespace, lq.name] for lq in p.local_queues],
                                 "clusterQueues": list(p.cluster_queues)})
        workers = []
        for cfg in ctx.store.list(MultiKueueConfig):
            for name in cfg.spec.clusters:
                raw = ctx.store.raw("MultiKueueCluster", name) or {}
                spec = raw.get("spec") or {}
                kc = (spec.get("clusterSource") or {}).get("kubeConfig") or spec.get("kubeConfig") or {}
                workers.append({"cluster": name, "config": cfg.name, "location": kc.get("location", ""),
                                "locationType": kc.get("locationType", "Secret")})
        return {"multikueueProfiles": added_mk, "workers": workers}


def _survey(ctx: Context) -> dict[str, Any]:
    for r in ctx.journal.records if ctx.journal else []:
        if r["event"] == "executed" and r["step"] == "survey":
            return r["data"].get("local") or {}
    return {}


class RemoveRouting(Step):
    id = "routing"
    title = "Remove MultiKueue routing objects the change added"

    def __init__(self, previous: list[dict[str, Any]]) -> None:
        self.previous = previous

    async def plan(self, ctx: Context) -> Plan:
        survey = _survey(ctx)
        keep: set[tuple[str, str]] = set()
        for item in self.previous:  # LocalQueues the restored catalog still uses stay
            prof = WorkloadProfile.model_validate(item)
            keep.update((ns, prof.default_local_queue) for ns in prof.applicability.namespaces)
        ops = []
        for prof in survey.get("multikueueProfiles", []):
            for ns, name in prof["localQueues"]:
                lq = ctx.store.get(LocalQueue, name, ns)
                if (ns, name) in keep or lq is None:
                    continue
                ops.append(Operation("delete", "LocalQueue", ns, name,
                                     f"delete LocalQueue {ns}/{name} (routing of MultiKueue profile {prof['name']})",
                                     still_wanted=partial(_same_uid, uid=lq.uid),
                                     destructive=True))
        notes = [f"ClusterQueue(s) {', '.join(p['clusterQueues'])} served profile {p['name']}: delete them through "
                 "their owner once no Workload uses them" for p in survey.get("multikueueProfiles", [])
                 if p["clusterQueues"]]
        return Plan(ops, notes, confirm_each=True)


class ListCredentials(Step):
    id = "credentials"
    title = "List worker credentials to revoke"

    async def run_local(self, ctx: Context) -> dict[str, Any]:
        survey = _survey(ctx)
        if not survey.get("multikueueProfiles"):
            return {"revoke": [], "message": "the change added no MultiKueue profile: no worker credential to revoke"}
        revoke = [{"cluster": w["cluster"], "kubeconfig": f"{w['locationType']} {w['location']}"}
                  for w in survey.get("workers", [])]
        return {"revoke": revoke, "message": "revoke these worker credentials if no remaining profile uses them "
                "(the platform owner owns worker credentials; taudash never reads Secrets)"}


def rollback_workflow(params: dict[str, Any]) -> Workflow:
    cqs = params["cqs"]
    previous = params["previous_catalog"]
    steps: list[Step] = [
        SurveyMultiKueue(previous),
        CatalogHold("hold", cqs, previous, params.get("why")),
        DeactivatePending("drain", cqs),
        ApplyCatalog("restore-catalog", previous, "Restore the previous catalog and wait for it to be Ready",
                     expect_hash=params.get("previous_hash")),
        RemoveRouting(previous),
        ListCredentials(),
        RestoreStopPolicy("restore", cqs),
    ]
    # What the catalog change deactivated, and what this rollback's own drain deactivated: restoring means
    # both come back (confirmed on its own; nothing to confirm when both lists are empty).
    steps.append(Reactivate("reactivate", [tuple(x) for x in params.get("reactivate") or []], source=params["from"],
                            own=True, title=f"Reactivate the Workloads catalog change {params['from']} "
                                            "and this rollback deactivated"))
    return Workflow("rollback", f"Rollback of catalog change {params['from']}", steps, params)


# --- parameters -------------------------------------------------------------------------------------


def catalog_params(ctx: Context, catalog_file: str, extra_cqs: Iterable[str] = ()) -> dict[str, Any]:
    """Step 0 of the change procedure: the whole catalog is checked before anything is journaled
    (every problem is reported, each naming its profile and field); the +/− diff and, per queue,
    why it is held come with the parameters so the confirmations can show them."""
    if not str(catalog_file).strip():
        raise ParamError("name the new catalog file")
    try:
        catalog = load_catalog(catalog_file)
    except CatalogError as exc:
        raise ParamError(str(exc)) from None
    problems = catalog_problems(ctx, catalog)
    extra = sorted(set(extra_cqs))
    missing = [n for n in extra if ctx.store.get(ClusterQueue, n) is None]
    problems += [f"--cq {n}: ClusterQueue not found" for n in missing]
    if problems:
        raise ParamError(f"{catalog_file}: the catalog cannot be applied ({len(problems)} problem(s))", problems)
    current = declared_catalog(ctx)
    diff = catalog_diff(current, catalog)
    if not diff and not extra:
        raise ParamError(f"{catalog_file}: declares the same profiles as TauCluster cluster: nothing to change")
    why = affected_queues(ctx, catalog, extra)
    return {"catalog": catalog, "catalog_file": str(catalog_file), "cqs": list(why), "why": why, "diff": diff}


def rollback_params(ctx: Context, from_id: str, directory: Path | None = None) -> dict[str, Any]:
    if not from_id:
        raise ParamError("choose the catalog change to roll back")
    src = open_journal(from_id, directory)
    if src.kind != "catalog":
        raise ParamError(f"workflow {from_id} is a {src.kind}, not a catalog change")
    art = src.artifacts()
    if "taucluster" not in art:
        raise ParamError(f"workflow {from_id} never exported the previous catalog: nothing to roll back to")
    try:
        with open(art["taucluster"], encoding="utf-8") as fh:
            prev = yaml.safe_load(fh) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ParamError(f"{art['taucluster']}: cannot read the exported TauCluster "
                         f"({exc.__class__.__name__})") from None
    previous = (prev.get("spec") or {}).get("workloadProfiles") or []
    if not isinstance(previous, list) or not previous:
        raise ParamError(f"{art['taucluster']}: the exported TauCluster declares no workload profiles")
    problems = catalog_problems(ctx, previous)
    if problems:
        raise ParamError(f"the catalog exported by {src.id} cannot be restored now ({len(problems)} problem(s))",
                         problems)
    prev_hash = next((r["data"].get("hash") for r in src.records
                      if r["event"] == "artifact" and r["data"].get("name") == "profiles"), None)
    why = affected_queues(ctx, previous)
    for q in src.params.get("cqs", []):  # what the change held, unless it no longer exists
        if ctx.store.get(ClusterQueue, q) is not None:
            why.setdefault(q, []).append(f"held by catalog change {src.id}")
    why = {q: why[q] for q in sorted(why)}
    return {"from": src.id, "previous_catalog": previous, "previous_hash": prev_hash, "cqs": list(why), "why": why,
            "diff": catalog_diff(declared_catalog(ctx), previous),
            "reactivate": [list(x) for x in deactivated_by(src)]}


def _catalog_values(ctx: Context, v: dict[str, Any], directory: Path | None) -> dict[str, Any]:
    return catalog_params(ctx, v["catalog"] or "", v["cq"])


def _rollback_values(ctx: Context, v: dict[str, Any], directory: Path | None) -> dict[str, Any]:
    return rollback_params(ctx, v["from_id"] or "", directory)


def catalog_written(params: dict[str, Any]) -> set[str]:
    """What a catalog change or its rollback writes: the queues it holds and TauCluster cluster's catalog."""
    return {f"ClusterQueue {q}" for q in params.get("cqs") or []} | {"TauCluster cluster"}


def _describe_catalog(params: dict[str, Any]) -> str:
    return f"{params.get('catalog_file') or 'new catalog'} · hold {', '.join(params.get('cqs') or []) or 'no queue'}"


def _describe_rollback(params: dict[str, Any]) -> str:
    return f"undo {params.get('from', '?')} · hold {', '.join(params.get('cqs') or []) or 'no queue'}"


CATALOG = WorkflowKind(
    name="catalog", label="Catalog change",
    help="the five-step workload profile catalog change",
    steps="1 hold (HoldAndDrain) · 2 drain · 3 export the TauCluster and profile snapshot · 4 apply the new "
          "catalog (server dry-run), wait until Ready · 5 restore admission · 6 reactivate what the drain deactivated",
    params=(
        Param("--catalog", "new catalog: profile list, {workloadProfiles}, or a TauCluster", metavar="FILE",
              required=True),
        Param("--cq", "also hold this ClusterQueue", type="list", metavar="NAME", pick="queues"),
    ),
    make_params=_catalog_values, build=catalog_workflow, targets=catalog_written, describe=_describe_catalog,
    deactivates=True, form="catalog",
)

ROLLBACK = WorkflowKind(
    name="rollback", label="Rollback",
    help="roll a catalog change back from its journal",
    steps="survey · hold · drain · restore the exported catalog · remove MultiKueue routing (each confirmed) · "
          "list worker credentials to revoke · restore admission",
    params=(Param("--from", "the catalog workflow to undo", dest="from_id", metavar="ID", required=True),),
    make_params=_rollback_values, build=rollback_workflow, targets=catalog_written, describe=_describe_rollback,
    deactivates=True, form="rollback", undoes="from", rolls_back=True,
)
