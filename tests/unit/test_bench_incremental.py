"""Incremental derivation gives exactly the view the rules give, after any sequence of changes.

`derive()` is itself the incremental deriver started from an empty view, so the reference here is an
independent oracle: the pure rule functions called directly, one after the other, over a plain store
(what `derive()` was before the rule registry).
"""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime, timedelta

import pytest
from factories import cond, managed_template, raw_object, validated_store, workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tools.paths import DEMO

from taudash.bench.generate import generate
from taudash.engine.incremental import IncrementalDeriver, derive
from taudash.engine.model import BY_KIND, KINDS, lookup
from taudash.engine.rules.base import Finding, RuleConfig, RuleContext
from taudash.engine.rules.capacity import derive_capacity
from taudash.engine.rules.cluster import access_entries, access_findings, derive_cluster, derive_teams
from taudash.engine.rules.multikueue import derive_multikueue
from taudash.engine.rules.pool import derive_pool
from taudash.engine.rules.profiles import derive_profiles
from taudash.engine.rules.queues import all_workload_facts, derive_cluster_queues, derive_cohorts, derive_waiting
from taudash.engine.rules.workspaces import derive_workspaces
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.store import AccessState, Store
from taudash.engine.view import ClusterView, SourceInfo

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def oracle(store: Store, now: datetime, config: RuleConfig) -> ClusterView:
    """Every rule function over the whole store, called directly: no registry, no deriver, no guard."""
    ctx = RuleContext(store=store, now=now, config=config)
    findings: list[Finding] = []
    cluster, f = derive_cluster(ctx)
    findings += f
    pool, f = derive_pool(ctx)
    findings += f
    facts = all_workload_facts(ctx)
    queues, f = derive_cluster_queues(ctx, facts)
    findings += f
    cohorts = derive_cohorts(ctx, queues)
    workspaces, f = derive_workspaces(ctx)
    findings += f
    profiles, f = derive_profiles(ctx)
    findings += f
    mk, f = derive_multikueue(ctx, profiles)
    findings += f
    capacity, f = derive_capacity(ctx)
    findings += f
    findings += access_findings(ctx)
    return ClusterView(
        source=SourceInfo(), access=access_entries(ctx), cluster=cluster, teams=derive_teams(ctx), pool=pool,
        cohorts=cohorts, cluster_queues=queues, workspaces=sorted(workspaces, key=lambda w: w.name),
        profiles=profiles, multikueue=mk, waiting=derive_waiting(ctx, facts), capacity=capacity,
        findings=sorted(findings, key=Finding.sort_key),
    )


def _raws(store: Store) -> list[dict]:
    out = []
    for k in KINDS:
        for o in store.list(k.kind):
            raw = store.raw(k.kind, o.name, o.namespace)
            out.append(copy.deepcopy(raw) if raw is not None else o.model_dump(by_alias=True, mode="json"))
    return out


@pytest.fixture(scope="module")
def demo_raws() -> list[dict]:
    return _raws(load_snapshot(DEMO).store)


@pytest.fixture(scope="module")
def bench_raws() -> list[dict]:
    # A quarter of size S keeps the full-derive reference fast; the shapes are the same.
    from taudash.bench.generate import Size

    return generate(Size("T", 30, 500, 250, 10, 2, 3, 6), seed=5)


def _upsert(store: Store, raw: dict) -> None:
    k = lookup(raw["apiVersion"], raw["kind"])
    store.upsert(k.model.model_validate(raw), raw=raw)


def _cond(ctype: str, status: str, reason: str = "R", message: str = "m") -> dict:
    return cond(ctype, status, reason, message)


class Mutations:
    """Random, well-formed edits of the objects the rules read (what a busy cluster does)."""

    def __init__(self, store: Store, rng: random.Random) -> None:
        self.store, self.rng = store, rng

    def pick(self, kind: str):
        objs = self.store.list(kind)
        return self.rng.choice(objs) if objs else None

    def raw_of(self, kind: str, obj) -> dict:
        raw = self.store.raw(kind, obj.name, obj.namespace)
        return copy.deepcopy(raw) if raw is not None else obj.model_dump(by_alias=True, mode="json", exclude_none=True)

    def run(self, op: int) -> None:
        ops = [self.workload_status, self.workload_new, self.delete_some, self.local_queue_route, self.cq_status,
               self.cq_stop, self.workspace_retarget, self.namespace_labels, self.node_flip, self.source_new,
               self.access_flip, self.cohort_quota, self.reset_kind, self.workload_status, self.workload_status]
        ops[op % len(ops)]()

    def workload_status(self) -> None:
        wl = self.pick("Workload")
        if wl is None:
            return
        raw = self.raw_of("Workload", wl)
        choice = self.rng.randrange(5)
        status = raw.setdefault("status", {})
        if choice == 0:
            status["conditions"] = [_cond("QuotaReserved", "False", "Pending", f"{self.rng.randint(1, 99)} more")]
            status.pop("admission", None)
        elif choice == 1:
            status["conditions"] = [_cond("QuotaReserved", "True"), _cond("Admitted", "True")]
            status["admission"] = {"clusterQueue": self.rng.choice([q.name for q in self.store.list("ClusterQueue")]
                                                                  or ["x"])}
        elif choice == 2:
            status["conditions"] = [*status.get("conditions", []), _cond("Finished", "True")]
        elif choice == 3:
            raw.setdefault("spec", {})["active"] = not raw.get("spec", {}).get("active", True)
        else:
            raw.setdefault("spec", {})["queueName"] = self.rng.choice(["jobqueue", "shared", "multikueue", "nope"])
        _upsert(self.store, raw)

    def workload_new(self) -> None:
        ns = self.rng.choice([n.name for n in self.store.list("Namespace")] or ["default"])
        n = self.rng.randrange(10**6)
        wl = workload(f"wl-new-{n}", ns, reason="Pending", message="waiting", owner=("Job", f"j{n}", f"j{n}"))
        wl["metadata"]["uid"] = f"u{n}"
        _upsert(self.store, wl)

    def delete_some(self) -> None:
        kind = self.rng.choice(["Workload", "Workload", "Job", "LocalQueue", "ClusterQueue", "RayService",
                                "Deployment", "ServiceAccount", "RoleBinding", "TauWorkspace", "Cohort"])
        obj = self.pick(kind)
        if obj is not None:
            self.store.delete(kind, obj.name, obj.namespace)

    def local_queue_route(self) -> None:
        lq = self.pick("LocalQueue")
        if lq is None:
            return
        raw = self.raw_of("LocalQueue", lq)
        raw.setdefault("spec", {})["clusterQueue"] = self.rng.choice(
            [q.name for q in self.store.list("ClusterQueue")] + ["missing-cq"])
        _upsert(self.store, raw)

    def cq_status(self) -> None:
        cq = self.pick("ClusterQueue")
        if cq is None:
            return
        raw = self.raw_of("ClusterQueue", cq)
        st_ = raw.setdefault("status", {})
        st_["pendingWorkloads"] = self.rng.randint(0, 3)
        st_["reservingWorkloads"] = self.rng.randint(0, 1)
        st_["admittedWorkloads"] = 0
        _upsert(self.store, raw)

    def cq_stop(self) -> None:
        cq = self.pick("ClusterQueue")
        if cq is None:
            return
        raw = self.raw_of("ClusterQueue", cq)
        raw.setdefault("spec", {})["stopPolicy"] = self.rng.choice(["None", "Hold", "HoldAndDrain"])
        raw["spec"]["cohortName"] = self.rng.choice(["tau-team-research", "other", ""])
        _upsert(self.store, raw)

    def workspace_retarget(self) -> None:
        ws = self.pick("TauWorkspace")
        if ws is None:
            return
        raw = self.raw_of("TauWorkspace", ws)
        spec = raw.setdefault("spec", {})
        if self.rng.random() < 0.3:
            raw["metadata"]["deletionTimestamp"] = "2026-11-30T08:00:00Z"
        else:
            spec.setdefault("target", {})["namespace"] = self.rng.choice([n.name for n in self.store.list("Namespace")])
        _upsert(self.store, raw)

    def namespace_labels(self) -> None:
        ns = self.pick("Namespace")
        if ns is None:
            return
        raw = self.raw_of("Namespace", ns)
        labels = raw["metadata"].setdefault("labels", {})
        if labels and self.rng.random() < 0.5:
            labels.pop(self.rng.choice(sorted(labels)))
        else:
            workspaces = [w.name for w in self.store.list("TauWorkspace")]
            labels["tau.azure.com/workspace"] = self.rng.choice(workspaces or ["x"])
        _upsert(self.store, raw)

    def node_flip(self) -> None:
        node = self.pick("Node")
        if node is None:
            return
        raw = self.raw_of("Node", node)
        raw.setdefault("spec", {})["unschedulable"] = not raw.get("spec", {}).get("unschedulable", False)
        _upsert(self.store, raw)

    def source_new(self) -> None:
        ns = self.rng.choice([n.name for n in self.store.list("Namespace")] or ["default"])
        n = self.rng.randrange(10**6)
        kind = self.rng.choice(["Job", "RayService", "Deployment"])
        api = {"Job": "batch/v1", "RayService": "ray.io/v1", "Deployment": "apps/v1"}[kind]
        raw = raw_object(kind, f"src-{n}", api_version=api, namespace=ns, uid=f"s{n}",
                         labels={"kueue.x-k8s.io/queue-name": "jobqueue"},
                         spec={"template": {"metadata": {"labels": managed_template("jobqueue")}}})
        _upsert(self.store, raw)

    def access_flip(self) -> None:
        kind = self.rng.choice(["Workload", "LocalQueue", "Job", "ServiceAccount", "ClusterQueue", "Node"])
        state = self.rng.choice([AccessState.SYNCED, AccessState.SYNCED, AccessState.FORBIDDEN, AccessState.ERROR])
        self.store.set_access(kind, state, "test", since=1_700_000_000.0)

    def cohort_quota(self) -> None:
        co = self.pick("Cohort")
        if co is None:
            return
        raw = self.raw_of("Cohort", co)
        for rg in raw.get("spec", {}).get("resourceGroups", []):
            for fl in rg.get("flavors", []):
                for r in fl.get("resources", []):
                    r["nominalQuota"] = str(self.rng.randint(0, 64))
        _upsert(self.store, raw)

    def reset_kind(self) -> None:
        kind = self.rng.choice(["Workload", "LocalQueue", "ClusterQueue"])
        objs = self.store.list(kind)
        keep = objs[: max(0, len(objs) - 1)]
        self.store.replace(kind, [(o, self.store.raw(kind, o.name, o.namespace)) for o in keep])


def _check(inc: IncrementalDeriver, store: Store, config: RuleConfig, now: datetime) -> None:
    got = inc.view(now)
    want = oracle(store, now, config)
    assert got.model_dump(by_alias=True, mode="json") == want.model_dump(by_alias=True, mode="json")
    assert got.to_contract() == want.to_contract()
    # the full derivation (a deriver from an empty view) agrees too
    assert derive(store, now, config).to_contract() == want.to_contract()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=24),
       seed=st.integers(min_value=0, max_value=2**16), batch=st.integers(min_value=1, max_value=6))
def test_incremental_matches_full_derive_on_the_demo(demo_raws, ops, seed, batch):
    store = validated_store(copy.deepcopy(demo_raws))
    config = RuleConfig(storage_claims=("blob-training",))
    inc = IncrementalDeriver(store, config)
    _check(inc, store, config, NOW)
    m = Mutations(store, random.Random(seed))
    for i, op in enumerate(ops):
        m.run(op)
        if (i + 1) % batch == 0:
            _check(inc, store, config, NOW + timedelta(seconds=i))
    _check(inc, store, config, NOW + timedelta(minutes=5))
    assert inc.full_builds >= 1


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=24),
       seed=st.integers(min_value=0, max_value=2**16))
def test_incremental_matches_full_derive_on_a_bench_cluster(bench_raws, ops, seed):
    store = validated_store(copy.deepcopy(bench_raws))
    config = RuleConfig()
    inc = IncrementalDeriver(store, config)
    _check(inc, store, config, NOW)
    m = Mutations(store, random.Random(seed))
    for i, op in enumerate(ops):
        m.run(op)
        if i % 4 == 3:
            _check(inc, store, config, NOW)
    _check(inc, store, config, NOW)


def test_updates_are_incremental_not_full(bench_raws):
    store = validated_store(copy.deepcopy(bench_raws))
    inc = IncrementalDeriver(store)
    inc.view(NOW)
    m = Mutations(store, random.Random(1))
    for _ in range(5):
        m.workload_status()
        assert inc.cheap()
        _check(inc, store, RuleConfig(), NOW)
    assert inc.full_builds == 1 and inc.updates == 5


def test_a_relist_or_an_access_change_rebuilds(bench_raws):
    store = validated_store(copy.deepcopy(bench_raws))
    inc = IncrementalDeriver(store)
    inc.view(NOW)
    store.set_access("Workload", AccessState.ERROR, "boom", since=1.0)
    assert not inc.cheap()
    _check(inc, store, RuleConfig(), NOW)
    store.replace("LocalQueue", [])
    assert not inc.cheap()
    _check(inc, store, RuleConfig(), NOW)
    assert inc.full_builds == 3
    assert BY_KIND["Workload"].resource in {a.resource for a in inc.view(NOW).access}
