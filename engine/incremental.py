"""Incremental derivation: keep the ClusterView current from the store's change feed.

`derive()` runs every rule over every object; at fleet scale (100k Workloads) that is seconds. This
keeps each part of the view with what it was computed from and, on the next view, recomputes only
the parts a change can affect (by kind, namespace and object):

- Workloads: each one's contribution to its ClusterQueue's observed counts and its waiting row are
  kept per object, so a Workload event costs one Workload (a LocalQueue event: its namespace);
- ClusterQueues: only the queues whose object or observed counts moved get a new view; cohorts
  are rebuilt when a queue or a Cohort changed;
- workspaces: only those whose inputs moved (a draining workspace reads its old namespace's
  Workloads, sources and LocalQueues; identity and storage read their own kinds everywhere);
- pool, cluster, teams, profiles, MultiKueue: recomputed when a kind they read changed.

Every part is computed by the same rule functions `derive()` uses, so the result is the same view;
tests/test_bench_incremental.py checks that after random change sequences. A re-list (RESET), an
access-state change or a change feed that no longer reaches back falls back to a full build.
"""

from __future__ import annotations

import bisect
from collections import defaultdict, deque
from datetime import datetime

from .model import BY_KIND
from .rules.base import Finding, RuleConfig, RuleContext
from .rules.cluster import access_findings, derive_cluster, derive_teams
from .rules.multikueue import derive_multikueue
from .rules.pool import derive_pool
from .rules.profiles import derive_profiles
from .rules.queues import (
    Bucket,
    ObservedCounts,
    apply_quota_tree,
    cluster_queue_view,
    derive_cohorts,
    observed,
    workload_facts,
)
from .rules.workspaces import derive_workspace
from .store import Change, Store
from .view import AccessEntry, ClusterView, SourceInfo, _iso

Key = tuple[str, str]

POOL_KINDS = frozenset({"TauCluster", "Node", "ClusterQueue", "Cohort", "ResourceFlavor", "TauTeam", "TauWorkspace"})
PROFILE_KINDS = frozenset({"TauCluster", "TauWorkspace"})
MK_KINDS = frozenset({"TauCluster", "AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster"})
# A change of these kinds can move any workspace's identity, access or storage verdict.
ALL_WORKSPACE_KINDS = frozenset({"ServiceAccount", "RoleBinding", "Namespace", "StorageClass", "Node", "CSINode",
                                 "TauCluster", "PersistentVolumeClaim"})
# A draining workspace reads these in its old namespace (DESIGN §5.4).
DRAIN_NS_KINDS = frozenset({"Workload", "Job", "RayJob", "RayService", "Deployment", "LocalQueue"})


def _cq_print(cq) -> tuple:
    """What the pool rules and a drain read of a ClusterQueue (not its counts): (pool, drain)."""
    return (
        (cq.labels, cq.spec.cohort_name, cq.spec.resource_groups, cq.status.flavors_reservation,
         cq.status.flavors_usage, cq.metadata.deletion_timestamp),
        (cq.uid, cq.spec.namespace_selector),
    )


class IncrementalDeriver:
    """The session's view, kept current change by change. Not thread-safe: the caller holds the lock
    that also guards the store's writes (Session.lock)."""

    def __init__(self, store: Store, config: RuleConfig | None = None, source: SourceInfo | None = None) -> None:
        self.store = store
        self.config = config or RuleConfig()
        self.source = source or SourceInfo()
        self._rev: int | None = None
        self._access_key: tuple | None = None
        self.full_builds = 0
        self.updates = 0

    # public -----------------------------------------------------------------------------------
    def view(self, now: datetime) -> ClusterView:
        ctx = RuleContext(store=self.store, now=now, config=self.config)
        changes = self._pending()
        if changes is None or any(c.type == "RESET" for c in changes):
            self._full(ctx)
        elif changes:
            self._apply(ctx, changes)
        self._rev = self.store.revision
        self._access_key = self._access()
        return self._assemble(ctx)

    def cheap(self) -> bool:
        """True when the next view is an update, not a full build (callers may run it inline)."""
        changes = self._pending()
        return changes is not None and len(changes) < 5_000 and not any(c.type == "RESET" for c in changes)

    # state ------------------------------------------------------------------------------------
    def _access(self) -> tuple:
        return tuple((k, a.state.value, a.since, a.message) for k, a in sorted(self.store.access_states().items()))

    def _pending(self) -> list[Change] | None:
        if self._rev is None or self._access() != self._access_key:
            return None
        return self.store.changes_since(self._rev)

    def _workloads_readable(self) -> bool:
        return self.store.readable("Workload") and self.store.readable("LocalQueue")

    def _full(self, ctx: RuleContext) -> None:
        self.full_builds += 1
        s = self.store
        self._cluster = derive_cluster(ctx)
        self._teams = derive_teams(ctx)
        self._pool = derive_pool(ctx)
        self._buckets: dict[Key, Bucket] = {}
        self._counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        self._wkeys: list[Key] = []
        self._wvals: list = []
        self._waiting_out: list | None = None
        # Which waiting rows changed, version by version, so a screen can patch its 50k rows instead
        # of walking them (see `waiting_changes`). A full build starts a new epoch.
        self._wepoch = getattr(self, "_wepoch", 0) + 1
        self._wver = 0
        self._wlog: deque[tuple[int, Key]] = deque(maxlen=100_000)
        readable = self._workloads_readable()
        for wl in s.list("Workload"):
            key = (wl.namespace or "", wl.name)
            bucket, w = workload_facts(ctx, wl)
            if readable:
                self._count(key, bucket)
            if w is not None:
                self._wkeys.append(key)  # store.list is sorted by key: appends keep the order
                self._wvals.append(w)
        self._cq_parts = {cq.name: cluster_queue_view(cq, self._obs(cq.name)) for cq in s.list("ClusterQueue")}
        # A queue's flavor rows depend on its object alone; Workload events only move its counts.
        self._cq_flavors = {cq.name: (cq, self._cq_parts[cq.name][0].flavors) for cq in s.list("ClusterQueue")}
        self._cq_prints = {cq.name: _cq_print(cq) for cq in s.list("ClusterQueue")}
        self._queues_changed(ctx)
        ns = self.config.system_namespace
        self._ws_parts = {ws.name: derive_workspace(ctx, ws) for ws in s.list("TauWorkspace", ns)}
        self._profiles = derive_profiles(ctx)
        self._mk = derive_multikueue(ctx, self._profiles[0])

    def _count(self, key: Key, bucket: Bucket | None) -> set[str]:
        """Replace one Workload's contribution to the observed counts; returns the queues touched."""
        touched = set()
        old = self._buckets.pop(key, None)
        if old is not None:
            c = self._counts[old[0]]
            c[0] -= old[1]
            c[1] -= old[2]
            c[2] -= old[3]
            c[3] -= old[4]
            touched.add(old[0])
        if bucket is not None:
            self._buckets[key] = bucket
            c = self._counts[bucket[0]]
            c[0] += bucket[1]
            c[1] += bucket[2]
            c[2] += bucket[3]
            c[3] += bucket[4]
            touched.add(bucket[0])
        return touched

    def _obs(self, cq: str) -> ObservedCounts | None:
        if not self._workloads_readable():
            return None
        c = self._counts.get(cq)
        return observed(c) if c else ObservedCounts()

    def _queues_changed(self, ctx: RuleContext) -> None:
        self._queues = apply_quota_tree(ctx, [self._cq_parts[n][0] for n in sorted(self._cq_parts)])
        self._cohorts = derive_cohorts(ctx, self._queues)

    def _set_waiting(self, key: Key, w) -> None:
        i = bisect.bisect_left(self._wkeys, key)
        present = i < len(self._wkeys) and self._wkeys[i] == key
        if w is None:
            if not present:
                return
            del self._wkeys[i]
            del self._wvals[i]
        elif present:
            self._wvals[i] = w
        else:
            self._wkeys.insert(i, key)
            self._wvals.insert(i, w)
        self._waiting_out = None
        self._wver += 1
        self._wlog.append((self._wver, key))

    # one batch of changes -----------------------------------------------------------------------
    def _apply(self, ctx: RuleContext, changes: list[Change]) -> None:
        self.updates += 1
        s = self.store
        kinds = {c.kind for c in changes}
        keys: dict[str, set[Key]] = defaultdict(set)
        for c in changes:
            keys[c.kind].add((c.namespace, c.name))

        if "TauCluster" in kinds:
            self._cluster = derive_cluster(ctx)
        if "TauTeam" in kinds:
            self._teams = derive_teams(ctx)
        # Kueue rewrites ClusterQueue status all the time; most writes only move the counts, which
        # neither the pool nor a drain reads. Compare what they do read before recomputing them.
        cq_moved = {"pool": False, "drain": False}
        for _, name in keys.get("ClusterQueue", ()):
            cq = s.get("ClusterQueue", name)
            new = _cq_print(cq) if cq is not None else None
            old = self._cq_prints.get(name)
            if new is None:
                self._cq_prints.pop(name, None)
            else:
                self._cq_prints[name] = new
            if old is None or new is None or old[0] != new[0]:
                cq_moved["pool"] = True
            if old is None or new is None or old[1] != new[1]:
                cq_moved["drain"] = True
        if kinds & (POOL_KINDS - {"ClusterQueue"}) or cq_moved["pool"]:
            self._pool = derive_pool(ctx)

        # Workloads: counts and waiting rows, per object (a LocalQueue move re-routes its namespace).
        wl_keys = set(keys.get("Workload", ()))
        for ns in {k[0] for k in keys.get("LocalQueue", ())}:
            wl_keys |= {(ns, w.name) for w in s.list("Workload", ns)}
        touched: set[str] = set()
        readable = self._workloads_readable()
        for key in wl_keys:
            wl = s.get("Workload", key[1], key[0])
            bucket, w = workload_facts(ctx, wl) if wl is not None else (None, None)
            if readable:
                touched |= self._count(key, bucket)
            self._set_waiting(key, w)

        # ClusterQueues whose object or observed counts moved; cohorts only read their quota rows.
        redo = touched | {k[1] for k in keys.get("ClusterQueue", ())}
        cohorts_moved = "Cohort" in kinds
        for name in redo:
            cq = s.get("ClusterQueue", name)
            old = self._cq_parts.get(name)
            if cq is None:
                self._cq_flavors.pop(name, None)
                if self._cq_parts.pop(name, None) is not None:
                    cohorts_moved = True
                continue
            known = self._cq_flavors.get(name)
            flavors = known[1] if known is not None and known[0] is cq else None
            part = self._cq_parts[name] = cluster_queue_view(cq, self._obs(name), flavors)
            if flavors is None:
                self._cq_flavors[name] = (cq, part[0].flavors)
            if old is None or old[0].cohort != part[0].cohort or (
                    old[0].flavors is not part[0].flavors and old[0].flavors != part[0].flavors):
                cohorts_moved = True
        if redo or cohorts_moved:  # available/borrowed read the whole quota tree
            self._queues = apply_quota_tree(ctx, [self._cq_parts[n][0] for n in sorted(self._cq_parts)])
        if cohorts_moved:
            self._cohorts = derive_cohorts(ctx, self._queues)

        # Workspaces whose inputs moved.
        sysns = self.config.system_namespace
        if kinds & ALL_WORKSPACE_KINDS:
            names = set(self._ws_parts) | {n for ns, n in keys.get("TauWorkspace", ()) if ns == sysns}
        else:
            names = {n for ns, n in keys.get("TauWorkspace", ()) if ns == sysns}
            draining = {n: v.drain.old_namespace for n, (v, _) in self._ws_parts.items() if v.drain.mode is not None}
            if draining:
                if cq_moved["drain"]:
                    names |= set(draining)
                moved = {k[0] for kind in kinds & DRAIN_NS_KINDS for k in keys[kind]}
                names |= {n for n, old in draining.items() if old in moved}
        for name in names:
            ws = s.get("TauWorkspace", name, sysns)
            if ws is None:
                self._ws_parts.pop(name, None)
            else:
                self._ws_parts[name] = derive_workspace(ctx, ws)

        if kinds & PROFILE_KINDS:
            self._profiles = derive_profiles(ctx)
        if kinds & (PROFILE_KINDS | MK_KINDS):
            self._mk = derive_multikueue(ctx, self._profiles[0])

    # the view ------------------------------------------------------------------------------------
    def _waiting_list(self) -> list:
        # Views are immutable: successive views share the list until a waiting row changes, so a
        # screen can tell "nothing waits differently" by identity instead of walking 50k rows.
        if self._waiting_out is None:
            self._waiting_out = WaitingList(self._wvals, self._wepoch, self._wver)
        return self._waiting_out

    def waiting_changes(self, old: list, new: list) -> set[Key] | None:
        """Keys (namespace, name) of the waiting rows that differ between two waiting lists this deriver
        produced, or None when it cannot tell (another epoch, or older than its log)."""
        if not (isinstance(old, WaitingList) and isinstance(new, WaitingList)) or not (
                old.epoch == new.epoch == self._wepoch) or new.version < old.version:
            return None
        if old.version == new.version:
            return set()
        if not self._wlog or self._wlog[0][0] > old.version + 1:
            return None
        out: set[Key] = set()
        for ver, key in reversed(self._wlog):
            if ver <= old.version:
                break
            if ver <= new.version:
                out.add(key)
        return out

    def _assemble(self, ctx: RuleContext) -> ClusterView:
        findings: list[Finding] = []
        findings += self._cluster[1]
        findings += self._pool[1]
        for name in sorted(self._cq_parts):
            findings += self._cq_parts[name][1]
        for name in sorted(self._ws_parts):
            findings += self._ws_parts[name][1]
        findings += self._profiles[1]
        findings += self._mk[1]
        findings += access_findings(ctx)
        access = [
            AccessEntry(resource=BY_KIND[k].resource, state=a.state.value, since=_iso(a.since), message=a.message)
            for k, a in self.store.access_states().items()
        ]
        return ClusterView.model_construct(
            source=self.source,
            access=sorted(access, key=lambda a: a.resource),
            cluster=self._cluster[0],
            teams=self._teams,
            pool=self._pool[0],
            cohorts=self._cohorts,
            cluster_queues=self._queues,
            workspaces=[self._ws_parts[n][0] for n in sorted(self._ws_parts)],
            profiles=self._profiles[0],
            multikueue=self._mk[0],
            waiting=self._waiting_list(),
            findings=sorted(findings, key=Finding.sort_key),
        )


class WaitingList(list):
    """A view's waiting rows (sorted by namespace and name), stamped with the deriver's epoch and
    version so `IncrementalDeriver.waiting_changes` can say what moved between two of them."""

    def __init__(self, rows, epoch: int, version: int) -> None:
        super().__init__(rows)
        self.epoch = epoch
        self.version = version


__all__ = ["IncrementalDeriver", "WaitingList"]
