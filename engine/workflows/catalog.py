"""The five-step workload-profile catalog change (DESIGN §5.8) and its rollback."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from ..actions import ApiFailure
from ..model.tau import WorkloadProfile
from ..paths import write_atomic
from ..profile_snapshot import ProfileSnapshotError, export_snapshot
from ..rules.base import RuleContext
from ..rules.profiles import targets_multikueue
from .base import Check, Context, Operation, Plan, Progress, Step, Workflow
from .steps import CancelPending, SetStopPolicy


class CatalogError(ValueError):
    pass


def load_catalog(path: str | Path) -> list[dict[str, Any]]:
    """A new catalog: a list of profiles, `{workloadProfiles: [...]}`, or a TauCluster object."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogError(f"{p}: no such file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        pos = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise CatalogError(f"{p}{pos}: invalid YAML") from None
    if isinstance(data, dict) and data.get("kind") in ("TauCluster", "Cluster"):
        data = (data.get("spec") or {}).get("workloadProfiles")
    elif isinstance(data, dict):
        data = data.get("workloadProfiles")
    if not isinstance(data, list) or not data:
        raise CatalogError(f"{p}: expected a non-empty list of workload profiles")
    names = set()
    for i, item in enumerate(data):
        try:
            prof = WorkloadProfile.model_validate(item)
        except Exception as exc:  # pydantic ValidationError: one line
            raise CatalogError(f"{p}: profile #{i + 1}: {str(exc).splitlines()[1:3]}") from None
        if prof.name in names:
            raise CatalogError(f"{p}: duplicate profile name {prof.name!r}")
        names.add(prof.name)
    return data


def _tau_cluster(ctx: Context):
    return ctx.store.get("TauCluster", "cluster")


def _same_catalog(a: list, b: list) -> bool:
    def canon(x):
        return json.dumps(sorted(x, key=lambda p: p.get("name", "")), sort_keys=True)

    return canon(a or []) == canon(b or [])


def affected_queues(ctx: Context, new: list[dict], extra: list[str]) -> list[str]:
    """Every ClusterQueue the current or the new catalog resolves to, plus explicit extras."""
    out = set(extra)
    tc = _tau_cluster(ctx)
    if tc is not None and tc.status.workload_profiles is not None:
        for p in tc.status.workload_profiles.profiles:
            out.update(p.cluster_queues)
    for item in new:
        prof = WorkloadProfile.model_validate(item)
        for ns in prof.applicability.namespaces:
            lq = ctx.store.get("LocalQueue", prof.default_local_queue, ns)
            if lq is not None and lq.spec.cluster_queue:
                out.add(lq.spec.cluster_queue)
    return sorted(out)


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

    async def run_local(self, ctx: Context) -> dict:
        assert ctx.artifacts_dir is not None and ctx.journal is not None
        ctx.artifacts_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        tc = _tau_cluster(ctx)
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


def _now(ctx: Context):
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ctx.clock(), UTC)


def raise_step(message: str):
    from .base import StepFailed

    raise StepFailed(message)


class ApplyCatalog(Step):
    """Patch spec.workloadProfiles (server dry-run first), wait for the new generation to be
    observed with every profile Ready, then run connected server dry-run checks."""

    wait_timeout = 900.0

    def __init__(self, step_id: str, catalog: list[dict], title: str, expect_hash: str | None = None) -> None:
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

        def planner(cur: dict) -> dict | None:
            have = (cur.get("spec") or {}).get("workloadProfiles") or []
            return None if _same_catalog(have, new) else {"spec": {"workloadProfiles": new}}

        names_now = sorted(p.get("name", "") for p in current)
        names_new = sorted(p.get("name", "") for p in new)
        return Plan([Operation(
            "patch", "TauCluster", None, "cluster", f"replace the workload profile catalog ({len(new)} profiles)",
            patch={"spec": {"workloadProfiles": f"<{len(new)} profiles>"}}, planner=planner,
            before=f"generation {tc.metadata.generation}: {', '.join(names_now)}", after=", ".join(names_new),
        )])

    def preconditions(self, ctx: Context, plan: Plan) -> list[Check]:
        if _tau_cluster(ctx) is None:
            return [Check(False, "TauCluster cluster not found")]
        return [Check(True, "TauCluster present")]

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
        unready = [p.name for p in view.profiles.profiles if not p.ready]
        if not view.profiles.usable or unready:
            return Progress(False, f"generation {tc.metadata.generation}: waiting for every profile to be Ready"
                            + (f" ({', '.join(unready)} not ready)" if unready else ""), remaining=1 + len(unready))
        return Progress(True, f"generation {tc.metadata.generation} Ready, hash {view.profiles.profile_set_hash[:12]}…",
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
    for p in tc.status.workload_profiles.profiles if tc and tc.status.workload_profiles else []:
        for lq in p.local_queues[:1]:
            job = {
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": f"taudash-dry-run-{p.name}".replace(".", "-")[:63], "namespace": lq.namespace,
                             "labels": {"kueue.x-k8s.io/queue-name": lq.name, "tau.azure.com/profile": p.name},
                             "annotations": {"tau.azure.com/tau-cluster-generation": str(tc.metadata.generation),
                                             "tau.azure.com/workload-profile-set-hash": view.profiles.profile_set_hash or "",
                                             "tau.azure.com/workload-profile": p.name}},
                "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never",
                         "containers": [{"name": "main", "image": "busybox"}]}}},
            }
            try:
                await ctx.actions.dry_run_create(job, f"server dry-run for profile {p.name}")
                checks.append(Check(True, f"server dry-run accepted for {p.name} in {lq.namespace}"))
            except ApiFailure as exc:
                checks.append(Check(False, f"server dry-run rejected for {p.name} in {lq.namespace}: {exc}"))
    return checks


def catalog_workflow(params: dict) -> Workflow:
    cqs = params["cqs"]
    return Workflow("catalog", "Catalog change", [
        SetStopPolicy("hold", cqs, "HoldAndDrain", "Hold: stop new admissions (HoldAndDrain)"),
        CancelPending("drain", cqs, "Drain: cancel pending owners, wait for zero"),
        ExportCurrent(),
        ApplyCatalog("apply", params["catalog"], "Apply the new catalog and wait for it to be Ready"),
        SetStopPolicy("restore", cqs, "None", "Restore admission"),
    ], params)


# --- rollback ------------------------------------------------------------------------------


class SurveyMultiKueue(Step):
    """Before restoring: record the MultiKueue routing the new catalog added, for later steps."""

    id = "survey"
    title = "Record MultiKueue routing added by the change"

    def __init__(self, previous: list[dict]) -> None:
        self.previous_names = {p.get("name") for p in previous}

    async def run_local(self, ctx: Context) -> dict:
        tc = _tau_cluster(ctx)
        added_mk = []
        for p in (tc.status.workload_profiles.profiles if tc and tc.status.workload_profiles else []):
            if targets_multikueue(p) and p.name not in self.previous_names:
                added_mk.append({"name": p.name, "localQueues": [[lq.namespace, lq.name] for lq in p.local_queues],
                                 "clusterQueues": list(p.cluster_queues)})
        workers = []
        for cfg in ctx.store.list("MultiKueueConfig"):
            for name in cfg.spec.clusters:
                raw = ctx.store.raw("MultiKueueCluster", name) or {}
                spec = raw.get("spec") or {}
                kc = (spec.get("clusterSource") or {}).get("kubeConfig") or spec.get("kubeConfig") or {}
                workers.append({"cluster": name, "config": cfg.name, "location": kc.get("location", ""),
                                "locationType": kc.get("locationType", "Secret")})
        return {"multikueueProfiles": added_mk, "workers": workers}


def _survey(ctx: Context) -> dict:
    for r in ctx.journal.records if ctx.journal else []:
        if r["event"] == "executed" and r["step"] == "survey":
            return r["data"].get("local") or {}
    return {}


class RemoveRouting(Step):
    id = "routing"
    title = "Remove MultiKueue routing objects the change added"

    def __init__(self, previous: list[dict]) -> None:
        self.previous = previous

    async def plan(self, ctx: Context) -> Plan:
        survey = _survey(ctx)
        keep = set()
        for item in self.previous:  # LocalQueues the restored catalog still uses stay
            prof = WorkloadProfile.model_validate(item)
            keep.update((ns, prof.default_local_queue) for ns in prof.applicability.namespaces)
        ops = []
        for prof in survey.get("multikueueProfiles", []):
            for ns, name in prof["localQueues"]:
                if (ns, name) in keep or ctx.store.get("LocalQueue", name, ns) is None:
                    continue
                uid = ctx.store.get("LocalQueue", name, ns).uid
                ops.append(Operation("delete", "LocalQueue", ns, name,
                                     f"delete LocalQueue {ns}/{name} (routing of MultiKueue profile {prof['name']})",
                                     still_wanted=lambda cur, uid=uid: (cur.get("metadata") or {}).get("uid") == uid,
                                     destructive=True))
        notes = [f"ClusterQueue(s) {', '.join(p['clusterQueues'])} served profile {p['name']}: delete them through "
                 "their owner once no Workload uses them" for p in survey.get("multikueueProfiles", []) if p["clusterQueues"]]
        return Plan(ops, notes, confirm_each=True)


class ListCredentials(Step):
    id = "credentials"
    title = "List worker credentials to revoke"

    async def run_local(self, ctx: Context) -> dict:
        survey = _survey(ctx)
        if not survey.get("multikueueProfiles"):
            return {"revoke": [], "message": "the change added no MultiKueue profile: no worker credential to revoke"}
        revoke = [{"cluster": w["cluster"], "kubeconfig": f"{w['locationType']} {w['location']}"} for w in survey.get("workers", [])]
        return {"revoke": revoke, "message": "revoke these worker credentials if no remaining profile uses them "
                "(the platform owner owns worker credentials; taudash never reads Secrets)"}


def rollback_workflow(params: dict) -> Workflow:
    cqs = params["cqs"]
    previous = params["previous_catalog"]
    return Workflow("rollback", f"Rollback of catalog change {params['from']}", [
        SurveyMultiKueue(previous),
        SetStopPolicy("hold", cqs, "HoldAndDrain", "Hold: stop new admissions (HoldAndDrain)"),
        CancelPending("drain", cqs, "Drain: cancel pending owners, wait for zero"),
        ApplyCatalog("restore-catalog", previous, "Restore the previous catalog and wait for it to be Ready",
                     expect_hash=params.get("previous_hash")),
        RemoveRouting(previous),
        ListCredentials(),
        SetStopPolicy("restore", cqs, "None", "Restore admission"),
    ], params)
