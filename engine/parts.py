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
(engine.incremental.derive) is this started from an empty view.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from typing import Any

from .model import ClusterQueue, TauWorkspace, Workload
from .model.kinds import DRAIN_KINDS
from .quota import QueueInput, QuotaTree
from .rules.base import Changed, Finding, Key, Rule, RuleContext, RulePart
from .rules.drain import BlockerMemo
from .rules.queues import (
    Bucket,
    FactsMemo,
    ObservedCounts,
    cluster_queue_view,
    cq_flavors,
    derive_cohorts,
    observed,
    queue_input,
    quota_tree,
    tree_flavors,
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
        self.readable = s.readable("Workload") and s.readable("LocalQueue")
        memo = FactsMemo()  # LocalQueue routes and buckets, for this pass
        if changed is None:
            return self._build(ctx, memo)
        keys = set(changed.get("Workload", ()))
        for ns in {k[0] for k in changed.get("LocalQueue", ())}:
            keys |= {(ns, w.name) for w in s.list(Workload, ns)}
        touched: set[str] = set()
        for key in keys:
            wl = s.get(Workload, key[1], key[0])
            bucket, w = workload_facts(ctx, wl, memo) if wl is not None else (None, None)
            if self.readable:
                touched |= self._count(key, bucket)
            self._set_waiting(key, w)
        return touched

    def _build(self, ctx: RuleContext, memo: FactsMemo) -> set[str]:
        """Every Workload from nothing, in the store's key order (so the waiting rows are appended): the one
        pass over 100k Workloads a full derivation makes, kept to the facts and two appends each."""
        buckets, counts, wkeys, wvals = self._buckets, self._counts, self._wkeys, self._wvals
        assert not buckets and not wkeys, "a part is built once (the deriver makes a new one per build)"
        readable = self.readable
        facts = workload_facts
        for wl in ctx.store.list(Workload):
            bucket, w = facts(ctx, wl, memo)
            if bucket is None and w is None:
                continue
            meta = wl.metadata
            key = (meta.namespace or "", meta.name)
            if bucket is not None and readable:
                buckets[key] = bucket
                c = counts[bucket[0]]
                c[0] += bucket[1]
                c[1] += bucket[2]
                c[2] += bucket[3]
                c[3] += bucket[4]
            if w is not None:
                wkeys.append(key)
                wvals.append(w)
        # A new epoch's first version: no earlier list of this epoch exists, so the rows need no log.
        self._wver += 1
        self._waiting_out = None
        return set(counts)

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


class _QueueObj:
    """What QueuesPart keeps of one ClusterQueue object: its flavor rows without tree figures and its
    quota-tree input; the exact keys they are compared by are made when a newer object asks (a build
    makes none: most queues never change what these read)."""

    __slots__ = ("cq", "_key", "rows", "_rows_key", "tree_input", "_tree_key")

    def __init__(self, cq: Any, rows: list[Any], tree_input: QueueInput, key: tuple[Any, ...] | None = None,
                 rows_key: tuple[Any, ...] | None = None) -> None:
        self.cq, self.rows, self.tree_input = cq, rows, tree_input
        self._key = key
        self._rows_key = rows_key
        self._tree_key: tuple[Any, ...] | None = None

    @property
    def key(self) -> tuple[Any, ...]:
        """What `cq_flavors` and `queue_input` read of the object (_cq_key)."""
        if self._key is None:
            self._key = _cq_key(self.cq)
        return self._key

    @property
    def rows_key(self) -> tuple[Any, ...]:
        if self._rows_key is None:
            self._rows_key = _rows_key(self.rows)
        return self._rows_key

    @property
    def tree_key(self) -> tuple[Any, ...]:
        if self._tree_key is None:
            self._tree_key = self.tree_input.key
        return self._tree_key


class QueuesPart(RulePart):
    """ClusterQueue views (needs the observed counts of WorkloadsPart) and the cohorts built from them.

    Per ClusterQueue object it keeps what depends on that object alone (its flavor rows, what the quota
    tree reads of it); the quota tree is built once per update that moved a quota, a reservation, a
    cohort membership or a Cohort, and serves both the queues' and the cohorts' figures."""

    def __init__(self, rule: Rule) -> None:
        super().__init__(rule)
        self._parts: dict[str, tuple[Any, ...]] = {}  # name → (ClusterQueueView, findings)
        # What depends on one ClusterQueue object alone: a Workload event moves only a queue's counts, a
        # status count write leaves the rest as it was.
        self._objs: dict[str, _QueueObj] = {}
        self._tree: QuotaTree | None = None
        # name → (flavor rows without tree figures, the tree they were read off, rows with its figures)
        self._shown: dict[str, tuple[list[Any], QuotaTree, list[Any]]] = {}
        self._rows: dict[str, list[Any]] = {}  # name → the flavor rows its view was made with
        self._queues: list[Any] = []
        self._cohorts: list[Any] | None = None
        self._found: list[Finding] | None = None  # the queues' findings, in name order, until a queue moves

    def _obj(self, cq: Any) -> _QueueObj:
        known = self._objs.get(cq.name)
        if known is None:
            out = self._objs[cq.name] = _QueueObj(cq, cq_flavors(cq), queue_input(cq))
            return out
        if known.cq is cq:
            return known
        key = _cq_key(cq)
        if known.key == key:  # a new object, the same quotas and reservations
            known.cq = cq
            return known
        rows = cq_flavors(cq)
        rkey = _rows_key(rows)
        if known.rows_key == rkey:
            rows = known.rows  # the same rows: the queue's shown rows and the cohorts stand
        out = self._objs[cq.name] = _QueueObj(cq, rows, queue_input(cq), key, rkey)
        return out

    def _flavors(self, name: str, base: list[Any]) -> list[Any]:
        """A queue's flavor rows with the current tree's figures (reused while neither moved)."""
        tree = self._tree
        assert tree is not None
        shown = self._shown.get(name)
        if shown is not None and shown[0] is base and shown[1] is tree:
            return shown[2]
        node = tree.node(name)
        rows = base if node is None else tree_flavors(tree, node, base)
        self._shown[name] = (base, tree, rows)
        return rows

    def update(self, ctx: RuleContext, changed: Changed | None, needs: Mapping[str, Any],
               moved: Mapping[str, Any]) -> bool:
        s = ctx.store
        workloads: WorkloadsPart = needs["workloads"]
        if changed is None:
            redo = {cq.name for cq in s.list(ClusterQueue)}
            tree_moved = cohorts_moved = True
        else:
            redo = set(moved.get("workloads") or ()) | {k[1] for k in changed.get("ClusterQueue", ())}
            tree_moved = cohorts_moved = "Cohort" in changed
        objs: dict[str, Any] = {}
        for name in redo:
            cq = s.get(ClusterQueue, name)
            if cq is None:
                if self._objs.pop(name, None) is not None:
                    tree_moved = True
                self._shown.pop(name, None)
                self._rows.pop(name, None)
                if self._parts.pop(name, None) is not None:
                    cohorts_moved = True
                continue
            known = self._objs.get(name)
            obj = objs[name] = self._obj(cq)
            if not tree_moved and (known is None or (obj is not known and obj.tree_key != known.tree_key)):
                tree_moved = True  # status counts alone leave the tree as it is
        if tree_moved:  # available/borrowed read the whole quota tree
            self._tree = quota_tree(ctx, [self._objs[n].tree_input for n in sorted(self._objs)])
            cohorts_moved = True
        for name, obj in objs.items():
            old = self._parts.get(name)
            rows = self._flavors(name, obj.rows)
            part = self._parts[name] = cluster_queue_view(obj.cq, workloads.observed(name), rows)
            if old is None or old[0].cohort != part[0].cohort or self._rows.get(name) is not rows:
                cohorts_moved = True
            self._rows[name] = rows  # (the view holds a copy: validation copies lists)
        if tree_moved:  # every queue's figures may have moved: untouched views take their new rows
            for name, (view, findings) in self._parts.items():
                if name not in objs:
                    rows = self._flavors(name, self._objs[name].rows)
                    if rows is not self._rows.get(name):
                        self._parts[name] = (view.replaced(flavors=rows), findings)
                        self._rows[name] = rows
        if redo or tree_moved:
            self._queues = [self._parts[n][0] for n in sorted(self._parts)]
            self._found = None
        if cohorts_moved:
            self._cohorts = derive_cohorts(ctx, self._queues, self._tree)
        return bool(redo or cohorts_moved)

    def values(self) -> tuple[Any, ...]:
        return (self._cohorts, self._queues)

    def findings(self) -> Iterable[Finding]:
        if self._found is None:  # every view asks; a walk of every queue only after one moved
            self._found = [f for n in sorted(self._parts) for f in self._parts[n][1]]
        return self._found


class WorkspacesPart(RulePart):
    """One view per TauWorkspace of the system namespace, recomputed when its inputs moved."""

    def __init__(self, rule: Rule) -> None:
        super().__init__(rule)
        self._parts: dict[str, tuple[Any, ...]] = {}  # name → (WorkspaceView, findings)
        self._memos: dict[str, BlockerMemo] = {}  # name → its drain's blockers, kept by Workload (rules/drain.py)
        self._draining: dict[str, str | None] = {}  # name → old namespace, of the workspaces a drain holds
        self._out: tuple[list[Any], list[Finding]] | None = None  # (views, findings) until a workspace moves
        # Kinds any workspace may read (identity, storage, the cluster): a change moves every one.
        # The drain-relevant kinds are read only in a draining workspace's old namespace.
        self._everywhere = rule.reads - DRAIN_KINDS - {"TauWorkspace", "ClusterQueue"}

    def update(self, ctx: RuleContext, changed: Changed | None, needs: Mapping[str, Any],
               moved: Mapping[str, Any]) -> bool:
        s = ctx.store
        sysns = ctx.config.system_namespace
        if changed is None:
            names = {ws.name for ws in s.list(TauWorkspace, sysns)}
        else:
            names = {n for ns, n in changed.get("TauWorkspace", ()) if ns == sysns}
            if self._everywhere.intersection(changed):
                names |= set(self._parts)
            else:
                draining = self._draining  # kept as the views move: not a walk of every workspace per update
                if draining:
                    if "ClusterQueue" in changed:  # its fingerprint: what a drain reads of a queue
                        names |= set(draining)
                    moved_ns = {k[0] for kind in DRAIN_KINDS.intersection(changed) for k in changed[kind]}
                    names |= {n for n, old in draining.items() if old in moved_ns}
        if changed is None:
            self._memos = {}
        for name in names:
            ws = s.get(TauWorkspace, name, sysns)
            if ws is None:
                self._parts.pop(name, None)
                self._memos.pop(name, None)
                self._draining.pop(name, None)
            else:
                part = self._parts[name] = derive_workspace(ctx, ws, self._memos.setdefault(name, {}))
                if part[0].drain.mode is None:
                    self._memos.pop(name, None)
                    self._draining.pop(name, None)
                else:
                    self._draining[name] = part[0].drain.old_namespace
        if names:
            self._out = None
        return bool(names)

    def _views(self) -> tuple[list[Any], list[Finding]]:
        if self._out is None:  # views are immutable: successive views share the list while no workspace moved
            ordered = sorted(self._parts)
            self._out = ([self._parts[n][0] for n in ordered], [f for n in ordered for f in self._parts[n][1]])
        return self._out

    def values(self) -> tuple[Any, ...]:
        return (self._views()[0],)

    def findings(self) -> Iterable[Finding]:
        return self._views()[1]


__all__ = ["QueuesPart", "WaitingList", "WorkloadsPart", "WorkspacesPart"]



def _q(q: Any) -> Any:
    return None if q is None else (q.value, q.format)


def _rows_key(flavors: list[Any]) -> tuple[Any, ...]:
    """A queue's flavor rows compared exactly (a quantity's format shows; Quantity's == ignores it)."""
    return tuple((fl.name, tuple((r.name, _q(r.nominal), _q(r.borrowing_limit), _q(r.lending_limit), _q(r.reserved),
                                  _q(r.used), _q(r.borrowed)) for r in fl.resources)) for fl in flavors)


def _cq_key(cq: Any) -> tuple[Any, ...]:
    """What `cq_flavors` and `queue_input` read of a ClusterQueue, exactly (its counts and conditions are not)."""
    spec, st = cq.spec, cq.status
    return (spec.cohort_name,
            tuple(tuple((fl.name, tuple((r.name, _q(r.nominal_quota), _q(r.borrowing_limit), _q(r.lending_limit))
                                        for r in fl.resources)) for fl in rg.flavors) for rg in spec.resource_groups),
            tuple((fl.name, tuple((r.name, _q(r.total)) for r in fl.resources)) for fl in st.flavors_reservation),
            tuple((fl.name, tuple((r.name, _q(r.total)) for r in fl.resources)) for fl in st.flavors_usage))
