"""The TauGrid controller's profile observer and MultiKueue readiness (TauGrid's
workload_profile_observer.go and the TauCluster conditions).

Each declared profile is resolved from live objects into its LocalQueues, ClusterQueues, flavors,
topologies and priority classes, with the seven conditions at the TauCluster generation; the set
is published with `profile_set_hash` (the same function taudash verifies with).
"""

from __future__ import annotations

from taudash.engine.model import (
    ClusterQueue,
    LocalQueue,
    PriorityClass,
    ResourceFlavor,
    Topology,
    WorkloadPriorityClass,
)
from taudash.engine.model.tau import ResolvedWorkloadProfile, TauCluster
from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.multikueue import _m3 as multikueue_wiring
from taudash.engine.rules.profilehash import (
    MULTI_KUEUE,
    ProfileHashError,
    hash_input,
    normalize_name,
    normalize_profile,
    profile_set_hash,
    validate_profile,
)
from taudash.engine.store import Store
from taudash.engine.text import plural
from taudash.sim.controllers.base import Obj, condition, meta, with_condition
from taudash.sim.controllers.queues import MULTIKUEUE, check_names, mk_workers

ORDER = (
    "LocalQueuesResolved",
    "ClusterQueuesReady",
    "ExecutionReady",
    "ResourceFlavorsReady",
    "TopologiesReady",
    "PriorityClassesReady",
)


def multikueue_ready(ctx: RuleContext, mirror) -> tuple[str, str, str]:
    """(status, reason, message) of TauCluster MultiKueueReady. The verdict is the rule book's M3
    (an Active MultiKueue AdmissionCheck → its MultiKueueConfig → an Active worker), so the
    controller publishes exactly what taudash checks; the wording is the controller's."""
    check, _ = multikueue_wiring(ctx)
    if not check.ok:
        return "False", "PrerequisitesNotReady", check.message
    for ac in mirror.list("AdmissionCheck"):
        if (ac.get("spec") or {}).get("controllerName") != MULTIKUEUE:
            continue
        _, active, _ = mk_workers(ac, mirror)
        if active and (condition(ac, "Active") or {}).get("status") == "True":
            return (
                "True",
                "Ready",
                f'AdmissionCheck "{ac["metadata"]["name"]}" has an active MultiKueue config and worker',
            )
    return "True", "Ready", check.message


class _Resolver:
    def __init__(self, store: Store, mirror, tc: TauCluster, mk: tuple[str, str, str]) -> None:
        self.store, self.m, self.tc, self.mk = store, mirror, tc, mk
        self.gen = tc.metadata.generation

    def resolve(self, declared, previous: dict[str, Obj], now: str) -> tuple[Obj, bool]:
        """(the published profile, ready)."""
        p = normalize_profile(ResolvedWorkloadProfile.model_validate(declared.model_dump(by_alias=True)))
        results: list[tuple[str, bool | None, str, str]] = []  # (type, ok, reason, message)
        body = hash_input(p)
        problem = validate_profile(p)
        if problem:
            results = [(t, None, "ValidationSkipped", "") for t in ORDER]
            results.append(("Ready", False, "InvalidWorkloadProfile", problem))
        else:
            results = self._steps(p, body)
        old = {c["type"]: c for c in (previous.get(p.name) or {}).get("conditions") or ()}
        conds: list[Obj] = []
        for ctype, ok, reason, message in results:
            status = "Unknown" if ok is None else ("True" if ok else "False")
            conds = with_condition(
                conds + ([old[ctype]] if ctype in old else []),
                ctype,
                status,
                reason,
                message,
                now,
                self.gen,
                keep_time_on_status=False,
            )
        return {**body, "conditions": sorted(conds, key=lambda c: c["type"])}, results[-1][1] is True

    def _steps(self, p: ResolvedWorkloadProfile, body: Obj) -> list[tuple[str, bool | None, str, str]]:
        out: list[tuple[str, bool | None, str, str]] = []
        # 1. LocalQueues: the applicability namespaces, else the shared LocalQueues of that name.
        namespaces = list(p.applicability.namespaces) or sorted(
            normalize_name(q.namespace)
            for q in self.tc.spec.queues.shared_local_queues
            if normalize_name(q.name) == p.default_local_queue
        )
        lqs, issues = [], []
        for ns in namespaces:
            lq = self.store.get(LocalQueue, p.default_local_queue, ns)
            if lq is None or not lq.spec.cluster_queue:
                issues.append(
                    f'LocalQueue "{ns}/{p.default_local_queue}" '
                    + ("not found" if lq is None else "has no clusterQueue")
                )
            else:
                lqs.append(
                    {
                        "namespace": ns,
                        "name": p.default_local_queue,
                        "clusterQueue": normalize_name(lq.spec.cluster_queue),
                    }
                )
        if not namespaces:
            issues.append("no applicable namespaces (no applicability.namespaces and no matching sharedLocalQueues)")
        ok = not issues
        out.append(
            (
                "LocalQueuesResolved",
                ok,
                "LocalQueuesResolved" if ok else "LocalQueuesNotResolved",
                plural(len(lqs), "applicable LocalQueue") + " resolved" if ok else "; ".join(sorted(issues)),
            )
        )
        if lqs:
            body["localQueues"] = sorted(lqs, key=lambda q: (q["namespace"], q["name"]))
        # 2. ClusterQueues: each Active=True.
        names = sorted({q["clusterQueue"] for q in lqs})
        cqs, issues = [], []
        for n in names:
            cq = self.store.get(ClusterQueue, n)
            active = cq.condition("Active") if cq is not None else None
            if cq is None:
                issues.append(f'ClusterQueue "{n}" not found')
            elif active is None or not (active.is_true or active.reason == "Stopped"):
                # Stopped is the change procedure's own HoldAndDrain, not broken wiring: TauGrid's profile migration
                # guide waits for every profile Ready while the queues are held, so a held queue must not fail it.
                issues.append(f'ClusterQueue "{n}" is not Active' + (f" ({active.reason})" if active else ""))
            cqs.append(cq)
        ok = bool(out[-1][1]) and not issues
        out.append(
            (
                "ClusterQueuesReady",
                ok,
                "ClusterQueuesReady" if ok else "ClusterQueuesNotReady",
                f"{plural(len(names), 'ClusterQueue')} active" if ok else "; ".join(sorted(issues)),
            )
        )
        if names:
            body["clusterQueues"] = names
        # 3. Execution: singleCluster must not route through MultiKueue; multiKueue must, everywhere.
        out.append(self._execution(p, [c for c in cqs if c is not None], ok))
        # 4-5. Flavors and their topologies.
        flavors = sorted(
            {normalize_name(f.name) for c in cqs if c is not None for rg in c.spec.resource_groups for f in rg.flavors}
        )
        found = {f: self.store.get(ResourceFlavor, f) for f in flavors}
        missing = [f for f, rf in found.items() if rf is None]
        ok = bool(out[1][1]) and not missing
        out.append(
            (
                "ResourceFlavorsReady",
                ok,
                "ResourceFlavorsReady" if ok else "ResourceFlavorsNotReady",
                f"{plural(len(flavors), 'ResourceFlavor')} found"
                if ok
                else ("; ".join(f'ResourceFlavor "{f}" not found' for f in missing)),
            )
        )
        if flavors:
            body["resourceFlavors"] = flavors
        topologies = sorted(
            {normalize_name(rf.spec.topology_name) for rf in found.values() if rf is not None and rf.spec.topology_name}
        )
        gone = [t for t in topologies if self.store.get(Topology, t) is None]
        ok = ok and not gone
        out.append(
            (
                "TopologiesReady",
                ok,
                "TopologiesReady" if ok else "TopologiesNotReady",
                f"{plural(len(topologies), 'Topology', 'Topologies')} found"
                if ok
                else "; ".join(f'Topology "{t}" not found' for t in gone),
            )
        )
        if topologies:
            body["topologies"] = topologies
        # 6. Priority classes, unless disabled.
        pri = p.priorities
        issues = []
        if not pri.disable_default_priorities:
            if self.store.get(WorkloadPriorityClass, pri.workload_priority_class_name) is None:
                issues.append(f'WorkloadPriorityClass "{pri.workload_priority_class_name}" not found')
            if self.store.get(PriorityClass, pri.pod_priority_class_name) is None:
                issues.append(f'PriorityClass "{pri.pod_priority_class_name}" not found')
            body["workloadPriorityClasses"] = [pri.workload_priority_class_name]
            body["podPriorityClasses"] = [pri.pod_priority_class_name]
        out.append(
            (
                "PriorityClassesReady",
                not issues,
                "PriorityClassesReady" if not issues else "PriorityClassesNotReady",
                f'WorkloadPriorityClass "{pri.workload_priority_class_name}" and PriorityClass '
                f'"{pri.pod_priority_class_name}" exist'
                if not issues and not pri.disable_default_priorities
                else ("default priorities are disabled" if not issues else "; ".join(issues)),
            )
        )
        ready = all(ok for _, ok, _, _ in out)
        out.append(
            (
                "Ready",
                ready,
                "WorkloadProfileReady" if ready else "WorkloadProfileNotReady",
                "workload profile is ready" if ready else "",
            )
        )
        # A downstream step that failed only because an upstream one did carries no message.
        first = next((i for i, r in enumerate(out) if r[1] is False), None)
        if first is not None:
            out = [r if i <= first or r[1] else (r[0], r[1], r[2], "") for i, r in enumerate(out)]
        return out

    def _execution(self, p: ResolvedWorkloadProfile, cqs, upstream: bool) -> tuple[str, bool, str, str]:
        uses_mk = {
            c.name: [
                n
                for n in check_names(self.m.get("ClusterQueue", c.name) or {})
                if ((self.m.get("AdmissionCheck", n) or {}).get("spec") or {}).get("controllerName") == MULTIKUEUE
            ]
            for c in cqs
        }
        if p.execution_target != MULTI_KUEUE:
            bad = sorted(n for n, checks in uses_mk.items() if checks)
            if bad:
                return (
                    "ExecutionReady",
                    False,
                    "UnexpectedMultiKueueAdmissionCheck",
                    f"ClusterQueue(s) {', '.join(bad)} use a MultiKueue AdmissionCheck",
                )
            return (
                "ExecutionReady",
                upstream,
                "Ready" if upstream else "ExecutionNotReady",
                "no ClusterQueue uses a MultiKueue AdmissionCheck" if upstream else "",
            )
        status, reason, message = self.mk
        if status != "True":
            return "ExecutionReady", False, "PrerequisitesNotReady", message
        bad = []
        for c in cqs:
            names = check_names(self.m.get("ClusterQueue", c.name) or {})
            if not names or len(uses_mk[c.name]) != len(names):
                bad.append(c.name)
        if bad or not cqs:
            return (
                "ExecutionReady",
                False,
                "MultiKueueWiringNotReady",
                f"ClusterQueue(s) {', '.join(sorted(bad)) or '(none)'} must use only MultiKueue AdmissionChecks",
            )
        ac = self.m.get("AdmissionCheck", uses_mk[cqs[0].name][0])
        config = ((ac.get("spec") or {}).get("parameters") or {}).get("name", "")
        return (
            "ExecutionReady",
            upstream,
            "Ready" if upstream else "ExecutionNotReady",
            (
                f'AdmissionCheck "{meta(ac)["name"]}" has an active MultiKueue config "{config}" and an active worker '
                "on every ClusterQueue"
            )
            if upstream
            else "",
        )


def resolve_profiles(
    store: Store, mirror, tc: TauCluster, tc_raw: Obj, mk: tuple[str, str, str], now: str
) -> tuple[Obj, tuple[str, str, str]]:
    """(status.workloadProfiles, WorkloadProfilesReady (status, reason, message))."""
    gen = tc.metadata.generation
    prev_status = (tc_raw.get("status") or {}).get("workloadProfiles") or {}
    previous = {p.get("name"): p for p in prev_status.get("profiles") or ()}
    resolver = _Resolver(store, mirror, tc, mk)
    published, ready = [], 0
    for declared in tc.spec.workload_profiles:
        body, ok = resolver.resolve(declared, previous, now)
        published.append(body)
        ready += int(ok)
    published.sort(key=lambda b: b["name"])
    try:
        invalid = any(
            c["type"] == "Ready" and c["reason"] == "InvalidWorkloadProfile" for b in published for c in b["conditions"]
        )
        digest = "" if invalid else profile_set_hash([ResolvedWorkloadProfile.model_validate(b) for b in published])
    except ProfileHashError:
        digest = ""
    total = len(published)
    status = {
        "observedGeneration": gen,
        "observed": total,
        "ready": ready,
        "drifted": total - ready,
        "profileSetHash": digest,
        "profiles": published,
    }
    if total == 0:
        cond = ("True", "NoWorkloadProfiles", "no workload profiles are declared")
    elif ready == total:
        cond = ("True", "WorkloadProfilesReady", f"{total} workload profiles resolved successfully")
    else:
        cond = ("False", "WorkloadProfilesNotReady", f"{total - ready} of {total} workload profiles are not ready")
    return status, cond
