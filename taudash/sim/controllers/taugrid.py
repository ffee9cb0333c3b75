"""The simulated TauGrid controller: it applies the rule book's expected state, computed by the very
rules taudash checks with (engine.rules.pool, drain, identity, workspaces, profilehash).

Three reconcilers with their own triggers, because a pool evaluation costs ~9 ms at the demo size:
the pool (root Cohort budget, GPU flavors, team status, and in Reconcile mode the nodes' topology labels
and the Kueue Topology, topology.py), the workspaces (workspaces.py), and the
TauCluster status (profiles and MultiKueueReady, profiles.py). Status-only updates of the objects
this controller writes itself, and of Kueue's queue counters, trigger nothing; a periodic resync
(`resync_minutes`) catches whatever a trigger missed.
"""

from __future__ import annotations

from taudash.engine.model import TauCluster, TauTeam, TauWorkspace
from taudash.engine.model.names import GPU_CLASS_LABEL, RESOURCE_IN_USE_FINALIZER, TEAM_LABEL
from taudash.engine.rules.base import RuleConfig, RuleContext
from taudash.engine.rules.pool import FLAVOR_PREFIX, PoolView, derive_pool, team_cohort_name
from taudash.sim.controllers.base import (
    MANAGED_BY,
    OWNER_UID,
    TAU_MANAGER,
    Controller,
    Obj,
    condition,
    labels,
    meta,
    qparse,
    with_condition,
)
from taudash.sim.controllers.profiles import multikueue_ready, resolve_profiles
from taudash.sim.controllers.workspaces import WorkspaceReconciler
from taudash.sim.topology import TOPOLOGY_NAME, derived_labels, topology_object

KQ = "kueue.x-k8s.io/v1beta2"
_OWN_STATUS = {"TauCluster", "TauWorkspace", "TauTeam"}
POOL_KINDS = {"Node", "Cohort", "ResourceFlavor", "TauCluster", "TauTeam", "TauWorkspace", "ClusterQueue", "Topology"}
WORKSPACE_KINDS = {
    "TauWorkspace",
    "TauCluster",
    "TauTeam",
    "Namespace",
    "LocalQueue",
    "ClusterQueue",
    "ServiceAccount",
    "RoleBinding",
    "Cohort",
    "Node",
    "ResourceFlavor",
}
SOURCE_KINDS = {"Workload", "Job", "RayJob", "RayService", "Deployment"}
PROFILE_KINDS = {
    "TauCluster",
    "LocalQueue",
    "ClusterQueue",
    "ResourceFlavor",
    "Topology",
    "WorkloadPriorityClass",
    "PriorityClass",
    "AdmissionCheck",
    "MultiKueueConfig",
    "MultiKueueCluster",
}


def _groups_key(groups) -> list:
    """Resource groups compared by value: quantities as numbers, whatever their spelling."""
    out = []
    for rg in groups or ():
        flavors = []
        for fl in rg.get("flavors") or ():
            res = [
                (
                    r.get("name"),
                    qparse(r.get("nominalQuota", "0"))[0],
                    None if r.get("borrowingLimit") is None else qparse(r["borrowingLimit"])[0],
                    None if r.get("lendingLimit") is None else qparse(r["lendingLimit"])[0],
                )
                for r in fl.get("resources") or ()
            ]
            flavors.append((fl.get("name"), res))
        out.append((tuple(rg.get("coveredResources") or ()), flavors))
    return out


def _status_only(ev) -> bool:
    old, new = ev.old, ev.object
    if ev.type != "MODIFIED" or old is None:
        return False
    strip = ("status", "metadata")
    same_body = {k: v for k, v in old.items() if k not in strip} == {k: v for k, v in new.items() if k not in strip}
    mo, mn = meta(old), meta(new)
    same_meta = all(
        mo.get(k) == mn.get(k) for k in ("labels", "annotations", "finalizers", "deletionTimestamp", "ownerReferences")
    )
    return same_body and same_meta


def _touches_pool(ev) -> bool:
    return any(
        fl.get("name", "").startswith(FLAVOR_PREFIX)
        for obj in (ev.old, ev.object)
        for fl in ((obj or {}).get("status") or {}).get("flavorsReservation") or ()
    )


class TauGridController(Controller):
    name = "taugrid"

    def __init__(self, world) -> None:
        super().__init__(world)
        self.system_namespace = world.system_namespace
        self.pool: PoolView | None = None
        self._dirty = {"pool", "workspaces", "cluster"}
        # Each part resyncs on its own phase, so the three full passes never land on one tick.
        period = world.knobs.resync_minutes * 60
        self._next_resync = {
            part: world.clock.now() + period * (i + 1) / 3 for i, part in enumerate(("pool", "workspaces", "cluster"))
        }

    # --- triggers ------------------------------------------------------------------------------------
    def _triage(self, events) -> None:
        draining = self._old_namespaces()
        for ev in events:
            kind = ev.resource.kind
            if kind in _OWN_STATUS and _status_only(ev):
                continue
            if kind == "ClusterQueue" and _status_only(ev):
                old, new = condition(ev.old, "Active") or {}, condition(ev.object, "Active") or {}
                external = labels(ev.object).get(MANAGED_BY) != TAU_MANAGER
                if (old.get("status"), old.get("reason")) != (new.get("status"), new.get("reason")):
                    self._dirty |= {"workspaces", "cluster"}
                if external and _touches_pool(ev):  # an external reservation on the pool invalidates it
                    self._dirty.add("pool")
                continue
            if kind == "LocalQueue" and _status_only(ev):
                continue
            if kind in POOL_KINDS:
                self._dirty.add("pool")
            if kind in WORKSPACE_KINDS or (kind in SOURCE_KINDS and ev.namespace in draining):
                self._dirty.add("workspaces")
            if kind in PROFILE_KINDS:
                self._dirty.add("cluster")

    def _old_namespaces(self) -> set[str]:
        out = set()
        for ws in self.m.list("TauWorkspace", self.system_namespace):
            st = ((ws.get("status") or {}).get("target") or {}).get("resolvedNamespace")
            if st:
                out.add(st)
        return out

    def reconcile(self, events) -> None:
        now = self.world.clock.now()
        period = max(self.world.knobs.resync_minutes * 60, 1.0)
        for part, due in self._next_resync.items():
            if now >= due:
                self._dirty.add(part)
                self._next_resync[part] = due + period * (1 + int((now - due) // period))
        self._triage(events)
        if not self._dirty:
            return
        dirty, self._dirty = self._dirty, set()
        self.store = self.m.store
        self.ctx = RuleContext(
            store=self.store, now=self.world.clock.datetime(), config=RuleConfig(system_namespace=self.system_namespace)
        )
        if "pool" in dirty or self.pool is None:
            self._pool()
        if "workspaces" in dirty:
            for ws in self.store.list(TauWorkspace, self.system_namespace):
                WorkspaceReconciler(self, ws, self.pool).run()
        if "cluster" in dirty:
            self._cluster()

    # --- helpers for the workspace reconciler --------------------------------------------------------
    def team_cohort(self, team: str) -> str:
        return team_cohort_name(team, self.store.get(TauTeam, team, self.system_namespace))

    def workspace_groups(self, ws) -> list[Obj] | None:
        """The workspace queue's resource groups: zero nominal on every covered pool flavor/resource
        (automatic mode), the declared guarantees (explicit mode), None when unknown."""
        pool = self.pool
        if pool is not None and pool.mode == "Automatic" and ws.team == pool.team:
            flavors = [f.name for f in pool.flavors if f.budget]
            if not flavors or not pool.covered_resources:
                return None
            return [
                {
                    "coveredResources": list(pool.covered_resources),
                    "flavors": [
                        {"name": fl, "resources": [{"name": r, "nominalQuota": "0"} for r in pool.covered_resources]}
                        for fl in flavors
                    ],
                }
            ]
        if not ws.spec.quota:
            return None
        by_flavor: dict[str, list[Obj]] = {}
        for q in ws.spec.quota:
            entry = {
                "name": q.resource,
                "nominalQuota": q.nominal_quota.canonical(),
                "borrowingLimit": (q.borrowing_limit.canonical() if q.borrowing_limit is not None else "0"),
                "lendingLimit": (q.lending_limit.canonical() if q.lending_limit is not None else "0"),
            }
            by_flavor.setdefault(q.flavor, []).append(entry)
        groups: dict[tuple[str, ...], list[Obj]] = {}
        for fl, res in by_flavor.items():
            res.sort(key=lambda r: r["name"])
            groups.setdefault(tuple(r["name"] for r in res), []).append({"name": fl, "resources": res})
        return [{"coveredResources": list(k), "flavors": v} for k, v in groups.items()]

    @staticmethod
    def same_spec(have, want) -> bool:
        if isinstance(want, list) and want and isinstance(want[0], dict) and "flavors" in want[0]:
            return _groups_key(have) == _groups_key(want)
        return have == want

    # --- the pool ----------------------------------------------------------------------------------------
    def _pool(self) -> None:
        view, _ = derive_pool(self.ctx)
        self.pool = view
        tc = self.store.get(TauCluster, "cluster")
        if tc is not None and tc.spec.management_mode == "Reconcile":
            self._topology()
        if view.mode != "Automatic" or view.valid is None or tc is None:
            return
        if tc.spec.management_mode != "Reconcile":
            return  # Observe mode reports; it never writes budgets
        self._flavors(view)
        if view.valid is False and not view.established:
            return  # an invalid pool that was never established gets no Cohort
        team_name, cohort_name = view.team, view.cohort
        if team_name is None or cohort_name is None:
            return  # an automatic pool names its team and root Cohort; without them there is nothing to write
        budget = {f.name: f.budget for f in view.flavors if f.budget}
        covered = list(view.covered_resources)
        groups = (
            [
                {
                    "coveredResources": covered,
                    "flavors": [
                        {
                            "name": fl,
                            "resources": [
                                {"name": r, "nominalQuota": budget[fl][r].canonical()}
                                for r in covered
                                if r in budget[fl]
                            ],
                        }
                        for fl in sorted(budget)
                    ],
                }
            ]
            if budget
            else []
        )
        team = self.store.get(TauTeam, team_name, self.system_namespace)
        cohort = self.m.get("Cohort", cohort_name)
        if cohort is None:
            self.w.create(
                {
                    "apiVersion": KQ,
                    "kind": "Cohort",
                    "metadata": {
                        "name": cohort_name,
                        "labels": {MANAGED_BY: TAU_MANAGER, TEAM_LABEL: team_name},
                        "annotations": {OWNER_UID: team.uid} if team else {},
                    },
                    "spec": {"resourceGroups": groups},
                }
            )
        elif _groups_key((cohort.get("spec") or {}).get("resourceGroups")) != _groups_key(groups) and view.established:
            self.w.patch("Cohort", cohort_name, None, {"spec": {"resourceGroups": groups}})
        cohort = self.m.get("Cohort", cohort_name)
        if team is not None and cohort is not None:
            st = (self.m.get("TauTeam", team.name, self.system_namespace) or {}).get("status") or {}
            want = {"cohort": cohort_name, "cohortUID": meta(cohort).get("uid", "")}
            if any(st.get(k) != v for k, v in want.items()):
                self.w.status("TauTeam", team.name, self.system_namespace, want)

    def _flavors(self, view: PoolView) -> None:
        """Reconcile mode discovers a flavor per GPU class with counted nodes."""
        for f in view.flavors:
            if f.nodes == 0 or not f.name.startswith(FLAVOR_PREFIX) or self.m.get("ResourceFlavor", f.name):
                continue
            self.w.create(
                {
                    "apiVersion": KQ,
                    "kind": "ResourceFlavor",
                    "metadata": {
                        "name": f.name,
                        "labels": {MANAGED_BY: TAU_MANAGER, GPU_CLASS_LABEL: f.gpu_class},
                        "finalizers": [RESOURCE_IN_USE_FINALIZER],
                    },
                    "spec": {
                        "nodeLabels": {"kubernetes.io/os": "linux", GPU_CLASS_LABEL: f.gpu_class},
                        "nodeTaints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
                        "topologyName": TOPOLOGY_NAME,
                    },
                }
            )

    def _topology(self) -> None:
        """Reconcile mode: every node carries its derived topology labels, the Kueue Topology exists, and the
        GPU flavors this controller manages point at it (topology.py; Kueue refuses to change a set one)."""
        for node in self.m.list("Node"):
            have, want = labels(node), derived_labels(node)
            drift = {k: v for k, v in want.items() if have.get(k) != v}
            if drift:
                self.w.patch("Node", meta(node)["name"], None, {"metadata": {"labels": drift}})
        if self.m.get("Topology", TOPOLOGY_NAME) is None:
            self.w.create(topology_object(KQ))
        for rf in self.m.list("ResourceFlavor"):
            spec = rf.get("spec") or {}
            managed = labels(rf).get(MANAGED_BY) == TAU_MANAGER and meta(rf)["name"].startswith(FLAVOR_PREFIX)
            if managed and not spec.get("topologyName") and spec.get("nodeLabels"):
                self.w.patch("ResourceFlavor", meta(rf)["name"], None, {"spec": {"topologyName": TOPOLOGY_NAME}})

    # --- the TauCluster status ------------------------------------------------------------------------
    def _cluster(self) -> None:
        tc = self.store.get(TauCluster, "cluster")
        raw = self.m.get("TauCluster", "cluster")
        if tc is None or raw is None:
            return
        now, gen = self.stamp, tc.metadata.generation
        st = raw.get("status") or {}
        mk = multikueue_ready(self.ctx, self.m)
        profiles, ready = resolve_profiles(self.store, self.m, tc, raw, mk, now)
        conds = [{**c, "observedGeneration": gen} for c in st.get("conditions") or ()]
        conds = with_condition(conds, "MultiKueueReady", *mk, now, gen, keep_time_on_status=False)
        conds = with_condition(conds, "WorkloadProfilesReady", *ready, now, gen, keep_time_on_status=False)
        conds.sort(key=lambda c: c["type"])
        desired = {"observedGeneration": gen, "workloadProfiles": profiles, "conditions": conds}
        if any(st.get(k) != v for k, v in desired.items()):
            self.w.status("TauCluster", "cluster", None, desired)
