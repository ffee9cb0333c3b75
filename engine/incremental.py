"""The derivation: the registered rules (engine/registry.py) kept current from the store's change feed.

There is one implementation. The first `view()` of a deriver builds every rule from nothing — that
is the full derivation, `derive()` below — and each later one feeds the rules the changes since:
a rule is recomputed when a kind it declares in `reads` changed (filtered by its fingerprints) or a
rule it `needs` moved; rules with per-object state (engine/parts.py) recompute only the objects
that changed. A re-list (RESET), an access-state change or a change feed that no longer reaches
back builds everything again.

Every rule reads the store through a guard that refuses a kind the rule did not declare
(UndeclaredRead): an undeclared read would be a part of the view the dashboard never refreshes.
tests/unit/test_bench_incremental.py checks updates against the pure rule functions after random change
sequences.
"""

from __future__ import annotations

import builtins
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from datetime import datetime
from typing import Any, cast

from . import heap
from .model import BY_KIND
from .parts import WaitingList
from .registry import RULES
from .rules.base import Changed, Finding, Key, Rule, RuleConfig, RuleContext, RulePart, WholePart
from .store import KIND_NAME, Access, Change, KindKey, Store
from .view import ClusterView, SourceInfo, cluster_view_of


class UndeclaredRead(RuntimeError):
    """A rule read a kind it does not declare in `Rule.reads`."""


class GuardedStore:
    """The store as one rule sees it: objects of the kinds it declares, every kind's access state
    (an access change rebuilds the whole view), and nothing to write."""

    __slots__ = ("_store", "_reads", "_rule")

    def __init__(self, store: Store, reads: frozenset[str], rule: str) -> None:
        self._store = store
        self._reads = reads
        self._rule = rule

    def _refuse(self, kind: str | None) -> None:
        raise UndeclaredRead(
            f"rule {self._rule!r} read {kind or 'every kind'!s} but does not declare it in its reads "
            f"(engine/registry.py); the dashboard would never refresh what it derives from it")

    def get(self, kind: KindKey, name: str, namespace: str | None = None) -> Any:
        if KIND_NAME[kind] not in self._reads:
            self._refuse(KIND_NAME[kind])
        return self._store.get(kind, name, namespace)

    def list(self, kind: KindKey, namespace: str | None = None) -> builtins.list[Any]:
        if KIND_NAME[kind] not in self._reads:
            self._refuse(KIND_NAME[kind])
        return self._store.list(kind, namespace)

    def raw(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        if kind not in self._reads:
            self._refuse(kind)
        return self._store.raw(kind, name, namespace)

    def count(self, kind: str) -> int:
        if kind not in self._reads:
            self._refuse(kind)
        return self._store.count(kind)

    def by_label(self, kind: KindKey, key: str, value: str | None = None,
                 namespace: str | None = None) -> builtins.list[Any]:
        if KIND_NAME[kind] not in self._reads:
            self._refuse(KIND_NAME[kind])
        return self._store.by_label(kind, key, value, namespace)

    def by_owner(self, uid: str, kind: str | None = None) -> builtins.list[Any]:
        if kind is None or kind not in self._reads:
            self._refuse(kind)
        return self._store.by_owner(uid, kind)

    def access(self, kind: str) -> Access:
        return self._store.access(kind)

    def readable(self, kind: str) -> bool:
        return self._store.readable(kind)

    def access_states(self) -> dict[str, Access]:
        return self._store.access_states()


def _ordered(rules: Sequence[Rule]) -> list[Rule]:
    """The rules with every rule after the ones it needs; checks the registry while at it."""
    by_name: dict[str, Rule] = {}
    fields: set[str] = set()
    for r in rules:
        if r.name in by_name:
            raise ValueError(f"two rules named {r.name!r}")
        by_name[r.name] = r
        unknown = r.reads - set(BY_KIND)
        if unknown:
            raise ValueError(f"rule {r.name!r} reads unknown kinds {sorted(unknown)}")
        for f in r.fields:
            if f.name in fields or f.name in ("api_version", "kind", "source", "findings"):
                raise ValueError(f"rule {r.name!r}: view field {f.name!r} is taken")
            fields.add(f.name)
    out: list[Rule] = []
    state: dict[str, int] = {}  # 1: visiting, 2: done

    def visit(r: Rule) -> None:
        if state.get(r.name) == 2:
            return
        if state.get(r.name) == 1:
            raise ValueError(f"rule {r.name!r} needs itself (a cycle)")
        state[r.name] = 1
        for n in r.needs:
            if n not in by_name:
                raise ValueError(f"rule {r.name!r} needs {n!r}, which is not registered")
            visit(by_name[n])
        state[r.name] = 2
        out.append(r)

    for r in rules:
        visit(r)
    return out


class IncrementalDeriver:
    """The session's view, kept current change by change. Not thread-safe: the caller holds the lock
    that also guards the store's writes (Session.lock)."""

    def __init__(self, store: Store, config: RuleConfig | None = None, source: SourceInfo | None = None,
                 rules: Sequence[Rule] = RULES) -> None:
        self.store = store
        self.config = config or RuleConfig()
        self.source = source or SourceInfo()
        self.rules = tuple(rules)
        self._order = _ordered(self.rules)
        self._guards = {r.name: GuardedStore(store, r.reads, r.name) for r in self.rules}
        # The registry's view class (its fields a rule set leaves out keep their defaults); a rule set with
        # fields of its own (a test's toy rule area) gets a class of its own fields.
        own = {f.name for r in self.rules for f in r.fields}.difference(ClusterView.model_fields)
        self._view_class = cluster_view_of(self.rules) if own else ClusterView
        self._parts: dict[str, RulePart] = {}
        # (rule, kind) → the fingerprints computed so far, and the objects of the last build not printed yet
        # (a copy of the store's dict: most never change, so a build prints none of them).
        self._prints: dict[tuple[str, str], dict[Key, Any]] = {}
        self._unprinted: dict[tuple[str, str], dict[Key, Any]] = {}
        self._rev: int | None = None
        self._access_key: tuple[Any, ...] | None = None
        self.full_builds = 0
        self.updates = 0
        self.recomputed: dict[str, int] = defaultdict(int)  # rule name → times computed (tests, bench)

    # public -----------------------------------------------------------------------------------
    def view(self, now: datetime) -> ClusterView:
        access = self._access()  # once a view: rules write nothing, so it is the same after them
        changes = self._pending(access)
        if changes is None or any(c.type == "RESET" for c in changes):
            self._build(now)
        else:
            self._apply(now, changes)
        self._rev = self.store.revision
        self._access_key = access
        return self._assemble()

    def cheap(self) -> bool:
        """True when the next view is an update, not a full build (callers may run it inline)."""
        changes = self._pending()
        return changes is not None and len(changes) < 5_000 and not any(c.type == "RESET" for c in changes)

    def waiting_changes(self, old: list[Any], new: list[Any]) -> set[Key] | None:
        """Keys (namespace, name) of the waiting rows that differ between two waiting lists this deriver
        produced, or None when it cannot tell (another build, or older than its log)."""
        part = self._parts.get("workloads")
        return part.waiting_changes(old, new) if part is not None and hasattr(part, "waiting_changes") else None

    # state ------------------------------------------------------------------------------------
    def _access(self) -> tuple[Any, ...]:
        return tuple((k, a.state.value, a.since, a.message) for k, a in sorted(self.store.access_states().items()))

    def _pending(self, access: tuple[Any, ...] | None = None) -> list[Change] | None:
        if self._rev is None or (access if access is not None else self._access()) != self._access_key:
            return None
        return self.store.changes_since(self._rev)

    def _ctx(self, rule: Rule, now: datetime) -> RuleContext:
        # The guard offers the store's reads (and refuses the kinds the rule does not declare).
        return RuleContext(store=cast(Store, self._guards[rule.name]), now=now, config=self.config)

    def _run(self, rule: Rule, now: datetime, changed: Changed | None, moved: dict[str, Any]) -> Any:
        part = self._parts[rule.name]
        needs = {n: self._parts[n].provides for n in rule.needs}
        self.recomputed[rule.name] += 1
        return part.update(self._ctx(rule, now), changed, needs, {n: moved[n] for n in rule.needs if moved.get(n)})

    def _build(self, now: datetime) -> None:
        """Every rule from nothing: the full derivation. A bulk build of long-lived objects (a row per
        waiting Workload, its facts per Workload): the program's memory policy is told (engine/heap.py;
        the runtime's pauses the cyclic collector, which would otherwise re-walk the young rows dozens
        of times during one build)."""
        with heap.current().bulk():
            self._build_all(now)

    def _build_all(self, now: datetime) -> None:
        self.full_builds += 1
        self._parts = {}
        self._prints = {}
        self._unprinted = {}
        for rule in self._order:
            self._parts[rule.name] = rule.part(rule) if rule.part is not None else WholePart(rule)
            for kind in rule.fingerprints:
                # The objects themselves, copied in C: a print is computed when a change asks (most never change).
                self._prints[(rule.name, kind)] = {}
                self._unprinted[(rule.name, kind)] = self.store.objects(kind)
            self._run(rule, now, None, {})

    def _apply(self, now: datetime, changes: list[Change]) -> None:
        if changes:
            self.updates += 1
        keys: dict[str, set[Key]] = defaultdict(set)
        for c in changes:
            keys[c.kind].add((c.namespace, c.name))
        moved: dict[str, Any] = {}
        for rule in self._order:
            changed = {k: v for k, v in keys.items() if k in rule.reads}
            for kind, fp in rule.fingerprints.items():
                if kind in changed:
                    still = self._moved_prints(rule.name, kind, fp, changed[kind])
                    if still:
                        changed[kind] = still
                    else:
                        del changed[kind]
            if not changed and not rule.every_view and not any(moved.get(n) for n in rule.needs):
                continue
            moved[rule.name] = self._run(rule, now, changed, moved)

    def _moved_prints(self, rule: str, kind: str, fp: Callable[[Any], Hashable], keys: set[Key]) -> set[Key]:
        """The objects among `keys` whose fingerprint for `rule` moved (or that came or went)."""
        prints = self._prints[(rule, kind)]
        unprinted = self._unprinted[(rule, kind)]
        out: set[Key] = set()
        for key in keys:
            obj = self.store.get(kind, key[1], key[0])
            new = fp(obj) if obj is not None else None
            old = prints.pop(key, None)
            if old is None:  # not printed since the build: its object then, if it existed (taken once)
                was = unprinted.pop(key, None)
                old = fp(was) if was is not None else None
            if new is not None:
                prints[key] = new
            if old is None or new is None or old != new:
                out.add(key)
        return out

    # the view ------------------------------------------------------------------------------------
    def _assemble(self) -> ClusterView:
        values: dict[str, Any] = {}
        findings: list[Finding] = []
        for rule in self.rules:
            part = self._parts[rule.name]
            values.update(zip((f.name for f in rule.fields), part.values(), strict=True))
            findings += part.findings()
        return cast(ClusterView, self._view_class.model_construct(
            source=self.source, findings=sorted(findings, key=Finding.sort_key), **values))


def derive(store: Store, now: datetime, config: RuleConfig | None = None,
           source: SourceInfo | None = None) -> ClusterView:
    """Run every rule over the store at time `now` (rules never read a clock): a fresh incremental
    deriver's first view — the same code the dashboard's updates run (`status -o json`, the simulator,
    tests)."""
    return IncrementalDeriver(store, config, source).view(now)


__all__ = ["GuardedStore", "IncrementalDeriver", "UndeclaredRead", "WaitingList", "derive"]
