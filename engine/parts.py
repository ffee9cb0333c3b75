"""Per-object state of the rules that read tens of thousands of objects (registered in engine/registry.py).

At fleet scale (100k Workloads) recomputing these whole on every event costs seconds, so each keeps
what it computed per object and, given the objects that changed, recomputes only those:

- WorkloadsPart: each Workload's contribution to its ClusterQueue's observed counts and its waiting
  row (a LocalQueue event re-routes its namespace's Workloads);
- QueuesPart: only the ClusterQueues whose object or observed counts moved; cohorts are rebuilt when
  a queue's quota rows or a Cohort changed;
- WorkspacesPart: only the workspaces whose inputs moved (a draining workspace reads its old
  namespace's drain-relevant kinds; every other kind it reads can move any workspace).

`update(ctx, None, ...)` is the build from nothing, through the same code: the full derivation
(engine.view.derive) is this started from an empty view.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from typing import Any

from .model.kinds import DRAIN_KINDS
from .rules.base import Changed, Finding, Key, Rule, RuleContext, RulePart
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

_EPOCHS = itertools.count(1)


class WaitingList(list[Any]):
    """A view's waiting rows (sorted by namespace and name), stamped with the epoch and version of the
    WorkloadsPart that made it so `waiting_changes` can say what moved between two of them."""

    def __init__(self, rows: Iterable[Any], epoch: int, version: int) -> None:
        super().__init__(rows)
        self.epoch = epoch
        self.version = version


class WorkloadsPart(RulePart):
    """Observed counts per ClusterQueue and the waiting rows, kept per Workload. `update` returns the
    ClusterQueues whose counts moved."""

    def __init__(self, rule: Rule) -> None:
        super().__init__(rule)
        self._buckets: dict[Key, Bucket] = {}
        self._counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        self._wkeys: list[Key] = []
        self._wvals: list[Any] = []
        self._waiting_out: WaitingList | None = None
        # Which waiting rows changed, version by version, so a screen can patch its 50k rows instead
        # of walking them (see `waiting_changes`). Every build starts a new epoch.
        self._wepoch = next(_EPOCHS)
        self._wver = 0
        self._wlog: deque[tuple[int, Key]] = deque(maxlen=100_000)
        self.readable = False

    def update(self, ctx: RuleContext, changed: Changed | None, needs: Mapping[str, Any],
               moved: Mapping[str, Any]) -> set[str]:
        s = ctx.store
        items: Iterable[tuple[Key, Any]]
        if changed is None:  # every Workload, in key order (so the waiting rows are appended)
            items = (((wl.metadata.namespace or "", wl.name), wl) for wl in s.list("Workload"))
        else:
            keys = set(changed.get("Workload", ()))
            for ns in {k[0] for k in changed.get("LocalQueue", ())}:
                keys |= {(ns, w.name) for w in s.list("Workload", ns)}
            items = ((key, s.get("Workload", key[1], key[0])) for key in keys)
        self.readable = s.readable("Workload") and s.readable("LocalQueue")
        touched: set[str] = set()
        for key, wl in items:
            bucket, w = workload_facts(ctx, wl) if wl is not None else (None, None)
            if self.readable:
                touched |= self._count(key, bucket)
            self._set_waiting(key, w)
        return touched

    def values(self) -> tuple[Any, ...]:
        # Views are immutable: successive views share the list until a waiting row changes, so a
        # screen can tell "nothing waits differently" by identity instead of walking 50k rows.
        if self._waiting_out is None:
            self._waiting_out = WaitingList(self._wvals, self._wepoch, self._wver)
        return (self._waiting_out,)

    def observed(self, cq: str) -> ObservedCounts | None:
        """One ClusterQueue's observed counts; None when the Workloads cannot be read."""
        if not self.readable:
            return None
        c = self._counts.get(cq)
        return observed(c) if c else ObservedCounts()

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

    def _set_waiting(self, key: Key, w: Any) -> None:
        if w is not None and (not self._wkeys or key > self._wkeys[-1]):  # a build appends in key order
            self._wkeys.append(key)
            self._wvals.append(w)
            self._waiting_out = None
            self._wver += 1
            self._wlog.append((self._wver, key))
            return
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

    def waiting_changes(self, old: list[Any], new: list[Any]) -> set[Key] | None:
        """Keys (namespace, name) of the waiting rows that differ between two waiting lists this part
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


class QueuesPart(RulePart):
    """ClusterQueue views (needs the observed counts of WorkloadsPart) and the cohorts built from them."""

    def __init__(self, rule: Rule) -> None:
        super().__init__(rule)
        self._parts: dict[str, tuple[Any, ...]] = {}  # name → (ClusterQueueView, findings)
        # A queue's flavor rows depend on its object alone; Workload events only move its counts.
        self._flavors: dict[str, tuple[Any, ...]] = {}
        self._queues: list[Any] = []
        self._cohorts: list[Any] | None = None
        # Flavor rows with the quota tree's borrowed/available figures, per queue: the tree reads ClusterQueue
        # and Cohort objects only, so Workload events (which only move counts) reuse them.
        self._tree_flavors: dict[str, Any] = {}
        self._tree_inputs: dict[str, tuple[Any, ...]] = {}  # per queue: what the tree reads of it (see _tree_input)

    def update(self, ctx: RuleContext, changed: Changed | None, needs: Mapping[str, Any],
               moved: Mapping[str, Any]) -> bool:
        s = ctx.store
        workloads: WorkloadsPart = needs["workloads"]
        if changed is None:
            redo = {cq.name for cq in s.list("ClusterQueue")}
            cohorts_moved = True
        else:
            redo = set(moved.get("workloads") or ()) | {k[1] for k in changed.get("ClusterQueue", ())}
            cohorts_moved = "Cohort" in changed
        for name in redo:
            cq = s.get("ClusterQueue", name)
            old = self._parts.get(name)
            if cq is None:
                self._flavors.pop(name, None)
                if self._parts.pop(name, None) is not None:
                    cohorts_moved = True
                continue
            known = self._flavors.get(name)
            flavors = known[1] if known is not None and known[0] is cq else None
            part = self._parts[name] = cluster_queue_view(cq, workloads.observed(name), flavors)
            if flavors is None:
                self._flavors[name] = (cq, part[0].flavors)
            if old is None or old[0].cohort != part[0].cohort or (
                    old[0].flavors is not part[0].flavors and old[0].flavors != part[0].flavors):
                cohorts_moved = True
        tree_moved = changed is None or "Cohort" in changed
        for key in (changed or {}).get("ClusterQueue", ()):  # status counts alone leave the tree as it is
            cq = s.get("ClusterQueue", key[1])
            now = _tree_input(cq) if cq is not None else None
            if self._tree_inputs.get(key[1]) != now:
                tree_moved = True
        views = [self._parts[n][0] for n in sorted(self._parts)]
        if tree_moved:  # available/borrowed read the whole quota tree: rebuilt when a quota or a usage changed
            self._queues = apply_quota_tree(ctx, views)
            self._tree_flavors = {v.name: v.flavors for v in self._queues}
            self._tree_inputs = {cq.name: _tree_input(cq) for cq in s.list("ClusterQueue")}
        elif redo or cohorts_moved:  # counts moved: the tree's figures stand (untouched queues keep their view)
            shown = {v.name: v for v in self._queues}
            self._queues = [
                (v.model_copy(update={"flavors": self._tree_flavors[v.name]}) if v.name in self._tree_flavors else v)
                if v.name in redo or v.name not in shown else shown[v.name] for v in views]
        if cohorts_moved:
            self._cohorts = derive_cohorts(ctx, self._queues)
        return bool(redo or cohorts_moved)

    def values(self) -> tuple[Any, ...]:
        return (self._cohorts, self._queues)

    def findings(self) -> Iterable[Finding]:
        for name in sorted(self._parts):
            yield from self._parts[name][1]


class WorkspacesPart(RulePart):
    """One view per TauWorkspace of the system namespace, recomputed when its inputs moved."""

    def __init__(self, rule: Rule) -> None:
        super().__init__(rule)
        self._parts: dict[str, tuple[Any, ...]] = {}  # name → (WorkspaceView, findings)
        # Kinds any workspace may read (identity, storage, the cluster): a change moves every one.
        # The drain-relevant kinds are read only in a draining workspace's old namespace.
        self._everywhere = rule.reads - DRAIN_KINDS - {"TauWorkspace", "ClusterQueue"}

    def update(self, ctx: RuleContext, changed: Changed | None, needs: Mapping[str, Any],
               moved: Mapping[str, Any]) -> bool:
        s = ctx.store
        sysns = ctx.config.system_namespace
        if changed is None:
            names = {ws.name for ws in s.list("TauWorkspace", sysns)}
        else:
            names = {n for ns, n in changed.get("TauWorkspace", ()) if ns == sysns}
            if self._everywhere.intersection(changed):
                names |= set(self._parts)
            else:
                draining = {n: v.drain.old_namespace for n, (v, _) in self._parts.items() if v.drain.mode is not None}
                if draining:
                    if "ClusterQueue" in changed:  # its fingerprint: what a drain reads of a queue
                        names |= set(draining)
                    moved_ns = {k[0] for kind in DRAIN_KINDS.intersection(changed) for k in changed[kind]}
                    names |= {n for n, old in draining.items() if old in moved_ns}
        for name in names:
            ws = s.get("TauWorkspace", name, sysns)
            if ws is None:
                self._parts.pop(name, None)
            else:
                self._parts[name] = derive_workspace(ctx, ws)
        return bool(names)

    def values(self) -> tuple[Any, ...]:
        return ([self._parts[n][0] for n in sorted(self._parts)],)

    def findings(self) -> Iterable[Finding]:
        for name in sorted(self._parts):
            yield from self._parts[name][1]


__all__ = ["QueuesPart", "WaitingList", "WorkloadsPart", "WorkspacesPart"]


def _tree_input(cq: Any) -> tuple[Any, ...]:
    """What Kueue's quota tree reads of a ClusterQueue: its cohort, its quotas and limits, and its reservations
    (not its pending/admitted counts, which Kueue updates far more often)."""
    return (cq.spec.cohort_name, repr(cq.spec.resource_groups), repr(cq.status.flavors_reservation))
