"""Claims: a running workflow's hold on the objects it writes, kept on the cluster for every operator.

A local journal says nothing about another operator's runs (another machine, another state folder, the
dashboard of a colleague), so a workflow that writes also claims each object it writes to on the cluster
itself (docs/workflows.md, "Claims"; docs/decisions.md, decision 98):

- a `coordination.k8s.io/v1` Lease per target, in the system namespace (`default` on a cluster without
  it), named `taudash.<kind>.<name>` and labelled `app.kubernetes.io/managed-by=taudash`: holderIdentity
  is the workflow id, acquireTime when the run took it, renewTime moves every RENEW_EVERY seconds while
  the run lives, leaseDurationSeconds says when a silent holder is stale; annotations name the target,
  the workflow kind, the operator (as the cluster authenticated them) and the host;
- the annotation `taudash.io/held-by: <id>` on the object itself, so `kubectl get -o yaml` shows it too.

Every claim write goes through engine/actions.py (read-only guard, access review, dry-run,
resourceVersion precondition, audit; field manager `taudash-claims`): a read-only session cannot claim.
The runner takes the claims when a run starts or resumes, renews them while it runs, and gives them back
when it ends finished (Completed, RolledBack, Aborted); a paused, failed or crashed run keeps them and
they go stale. A claim another workflow holds refuses the run (ClaimRefused, naming the holder), unless:

- its holder is a run journaled here, on this cluster, that no process runs now, and it is finished (its
  claim was left behind) or it is the run this one is about (`release --reactivate-from`, `rollback --from`);
- its holder stopped renewing (stale) and the operator named it: `--take-over ID`.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..actions import Actions, ApiFailure, ConflictPersisted, Obj, Operator, PermissionDenied, PreconditionFailed
from ..identity import ClusterIdentity
from ..model import Lease, Namespace
from ..model.names import (
    CLAIM_HOST_ANNOTATION,
    CLAIM_SELECTOR,
    CLAIM_TAKEN_FROM_ANNOTATION,
    CLAIM_TARGET_ANNOTATION,
    CLAIM_WHO_ANNOTATION,
    CLAIM_WORKFLOW_ANNOTATION,
    HELD_BY_ANNOTATION,
)
from ..rules.claims import Holder, holder_of, holders
from ..store import Store
from . import registry
from .journal import TERMINAL, Journal, JournalBusy, JournalError, undone_ids

LEASE_SECONDS = 120  # a holder silent for longer is stale (its process died, its machine is gone)
RENEW_EVERY = 30.0  # a quarter of the lease: three renewals may fail before the claim goes stale
CLAIM_MANAGER = "taudash-claims"  # the field manager of claim writes (they tell apart from the steps' own)
_LABEL_KEY, _, _LABEL_VALUE = CLAIM_SELECTOR.partition("=")


class ClaimRefused(JournalBusy):
    """Another workflow holds an object this run writes: nothing of the run's own was written (claims it
    took in this attempt were given back)."""


@dataclass(frozen=True)
class Target:
    kind: str
    name: str
    namespace: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.name}"


def claim_targets(kind: str, params: dict[str, Any], system_namespace: str) -> list[Target]:
    """The targets a run of `kind` declares (registry.targets) as objects, in the order they are claimed
    (by name: two runs never wait on each other's half)."""
    out = []
    for ref in sorted(registry.targets(kind, params)):
        obj_kind, _, name = ref.partition(" ")
        out.append(Target(obj_kind, name, system_namespace if obj_kind == "TauWorkspace" else None))
    return out


def lease_name(t: Target) -> str:
    """`taudash.<kind>.<name>`: a DNS subdomain like the names it is made of (a hash keeps it ≤ 253)."""
    base = f"taudash.{t.kind.lower()}.{t.name}"
    if len(base) <= 253:
        return base
    return f"{base[:240].rstrip('.-')}.{hashlib.sha256(base.encode()).hexdigest()[:12]}"


def lease_namespace(store: Store, system_namespace: str) -> str:
    """The system namespace, unless the cluster is seen not to have it (plain Kueue): then `default`."""
    if store.readable("Namespace") and store.get(Namespace, system_namespace) is None:
        return "default"
    return system_namespace


def about(params: dict[str, Any]) -> set[str]:
    """The runs a release or rollback is about (it continues or undoes them)."""
    return undone_ids(params)


def micro_time(t: float) -> str:
    """A Kubernetes MicroTime (RFC 3339, microseconds, UTC)."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def local_journals(directory: Path, cluster: ClusterIdentity | None) -> Callable[[str], Journal | None]:
    """id → that run's journal, when this machine journaled it (in `directory`) for this same cluster."""

    def find(workflow_id: str) -> Journal | None:
        try:
            other = Journal.open(workflow_id, directory)
        except JournalError:
            return None
        theirs = other.cluster
        if cluster is None or theirs is None or not cluster.same_cluster(theirs):
            return None
        return other

    return find


def judge(h: Holder, target: Target, *, me: str | None, about_ids: set[str], take_over: str | None,
          local: Callable[[str], Journal | None], now: datetime) -> str | None:
    """Why a run (`me`; None before it has an id) may not take `h`'s claim on `target`, or None when it may:
    its own; a run journaled here that no process runs and that is finished or is what this run is about;
    a stale one named by --take-over."""
    if h.workflow_id == me:
        return None
    found = local(h.workflow_id)
    if found is not None:
        pid = found.runner_pid()
        if pid is not None:
            return (f"{target.ref} is claimed by {h.describe(now)}, running now on this machine"
                    f"{f' (pid {pid})' if pid else ''}: follow it there, or stop it first; nothing was written")
        if found.terminal or h.workflow_id in about_ids:
            return None  # a finished run's leftover, or the run this one continues or undoes
    if h.stale(now):
        if take_over == h.workflow_id:
            return None
        return (f"{target.ref} is claimed by {h.describe(now)}: if that run is gone, take its claim over "
                f"explicitly with --take-over {h.workflow_id} (confirmed); nothing was written")
    return (f"{target.ref} is claimed by {h.describe(now)}, which is running: wait until it finishes "
            f"(or ask {h.who or 'its operator'}); nothing was written")


def existing(store: Store, kind: str, params: dict[str, Any], system_namespace: str) -> list[tuple[Target, Holder]]:
    """The claims the store shows on the targets of a run of `kind` (any namespace), by target."""
    if not store.readable("Lease"):
        return []
    by_ref = {t.ref: t for t in claim_targets(kind, params, system_namespace)}
    return [(by_ref[h.target], h) for h in holders(store.list(Lease)) if h.target in by_ref]


@dataclass
class Claims:
    """One run's claims (the runner's: `holding` below)."""

    actions: Actions
    store: Store
    journal: Journal
    system_namespace: str
    take_over: str | None = None
    clock: Callable[[], float] = time.time
    renew_every: float = RENEW_EVERY
    lost: str = ""  # set when another workflow took a claim over while this run lived: it must stop writing
    _held: list[tuple[Target, str, str]] = field(default_factory=list)  # (target, lease namespace, lease name)

    @property
    def id(self) -> str:
        return self.journal.id

    def _reason(self, what: str) -> str:
        return f"{self.journal.kind} {self.id}: {what}"

    # deciding ------------------------------------------------------------------------------------
    def refusal(self, h: Holder, target: Target) -> str | None:
        """Why this run may not take `h`'s claim on `target`, or None when it may."""
        return judge(h, target, me=self.id, about_ids=about(self.journal.params), take_over=self.take_over,
                     local=local_journals(self.journal.path.parent, self.journal.cluster), now=_at(self.clock()))

    def _elsewhere(self, target: Target, namespace: str, name: str) -> None:
        """A claim on the same target in another namespace (an operator with another --system-namespace)."""
        for t, h in existing(self.store, self.journal.kind, {**self.journal.params}, self.system_namespace):
            if t.ref == target.ref and h.lease != f"{namespace}/{name}":
                why = self.refusal(h, target)
                if why:
                    raise ClaimRefused(why)

    # writing -------------------------------------------------------------------------------------
    def _lease(self, t: Target, namespace: str, name: str, op: Operator) -> Obj:
        now = micro_time(self.clock())
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace, "labels": {_LABEL_KEY: _LABEL_VALUE},
                             "annotations": self._notes(t, op)},
                "spec": {"holderIdentity": self.id, "leaseDurationSeconds": LEASE_SECONDS, "acquireTime": now,
                         "renewTime": now, "leaseTransitions": 0}}

    def _notes(self, t: Target, op: Operator) -> dict[str, str]:
        return {CLAIM_TARGET_ANNOTATION: t.ref, CLAIM_WORKFLOW_ANNOTATION: self.journal.kind,
                CLAIM_WHO_ANNOTATION: op.label, CLAIM_HOST_ANNOTATION: op.host}

    def _take(self, t: Target, op: Operator, expect: str | None) -> Callable[[Obj], Obj | None]:
        """A planner: the Lease renewed by this run, or taken from `expect` (checked again on the fresh object)."""

        def plan(cur: Obj) -> Obj:
            spec = cur.get("spec") or {}
            holder = spec.get("holderIdentity") or None
            if holder not in (self.id, expect):
                raise PreconditionFailed(f"the claim on {t.ref} changed hands (now held by workflow {holder})")
            now = micro_time(self.clock())
            new: dict[str, Any] = {"renewTime": now, "leaseDurationSeconds": LEASE_SECONDS}
            notes: dict[str, Any] = self._notes(t, op)
            if holder != self.id:
                new.update(holderIdentity=self.id, acquireTime=now,
                           leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1)
                notes[CLAIM_TAKEN_FROM_ANNOTATION] = holder
            return {"spec": new, "metadata": {"annotations": notes}}

        return plan

    async def _claim(self, t: Target, namespace: str, op: Operator) -> bool:
        """Take (or renew) the Lease of `t`. True when this call created it."""
        name = lease_name(t)
        self._elsewhere(t, namespace, name)
        for _ in range(4):  # a race with another operator settles in a read or two
            cur = await self.actions.read("Lease", name, namespace)
            if cur is None:
                try:
                    await self.actions.create(self._lease(t, namespace, name, op), self._reason(f"claim {t.ref}"),
                                              field_manager=CLAIM_MANAGER)
                    return True
                except ApiFailure as exc:
                    if exc.status == 409:
                        continue  # created by someone else meanwhile: read theirs
                    raise
            h = holder_of(Lease.model_validate(cur))
            if h is not None:
                why = self.refusal(h, t)
                if why:
                    raise ClaimRefused(why)
            try:
                await self.actions.patch("Lease", name, namespace, self._take(t, op, h.workflow_id if h else None),
                                         self._reason(f"claim {t.ref}"), field_manager=CLAIM_MANAGER)
                return False
            except PreconditionFailed:
                continue  # it changed hands (or went away) between the read and the write: decide again
        raise ClaimRefused(f"{t.ref}: its claim kept changing hands; nothing was written")

    async def _mark(self, t: Target, held: bool) -> None:
        """The held-by annotation on the object itself, set (or removed when `held` is False and it is ours)."""

        def plan(cur: Obj) -> Obj | None:
            now = ((cur.get("metadata") or {}).get("annotations") or {}).get(HELD_BY_ANNOTATION)
            if held:
                return None if now == self.id else {"metadata": {"annotations": {HELD_BY_ANNOTATION: self.id}}}
            return {"metadata": {"annotations": {HELD_BY_ANNOTATION: None}}} if now == self.id else None

        try:
            await self.actions.patch(t.kind, t.name, t.namespace, plan,
                                     self._reason(f"{'mark' if held else 'unmark'} {t.ref} held"),
                                     field_manager=CLAIM_MANAGER)
        except PreconditionFailed:
            pass  # the object is gone (a deleted workspace): the Lease alone holds it
        except (ApiFailure, PermissionDenied, ConflictPersisted) as exc:
            # The mark only shows the claim on the object; the Lease is the claim. The step that writes
            # the object meets the same refusal and says so.
            self.journal.append("warning", None, {"message": f"could not {'mark' if held else 'unmark'} "
                                                             f"{t.ref} as held by workflow {self.id}: {exc}"})

    async def acquire(self, targets_: list[Target]) -> None:
        """Claim every target, or none of the new ones: a refusal gives back what this call created."""
        op = await self.actions.operator()
        namespace = lease_namespace(self.store, self.system_namespace)
        created: list[tuple[Target, str, str]] = []
        try:
            for t in targets_:
                entry = (t, namespace, lease_name(t))
                if await self._claim(t, namespace, op):
                    created.append(entry)
                self._held.append(entry)
                await self._mark(t, True)
        except BaseException:
            for entry in created:
                with suppress(Exception):  # best effort: the refusal (or crash) is what the operator must see
                    await self._give_back(entry)
                    self._held.remove(entry)
            raise

    async def renew(self) -> None:
        """Move renewTime on every claim; a claim taken over meanwhile sets `lost` (the runner stops)."""
        op = await self.actions.operator()
        for t, namespace, name in list(self._held):
            try:
                await self.actions.patch("Lease", name, namespace, self._take(t, op, None),
                                         self._reason(f"renew the claim on {t.ref}"), field_manager=CLAIM_MANAGER)
            except PreconditionFailed as exc:  # taken over (or its Lease deleted) while this run lived
                self.lost = f"{exc}: workflow {self.id} no longer holds its claim on {t.ref} and writes nothing more"
                return

    async def _give_back(self, entry: tuple[Target, str, str]) -> None:
        t, namespace, name = entry
        await self._mark(t, False)

        def still_mine(cur: Obj) -> bool:
            return (cur.get("spec") or {}).get("holderIdentity") == self.id

        try:
            await self.actions.delete("Lease", name, namespace, still_mine, self._reason(f"release {t.ref}"))
        except PreconditionFailed:
            pass  # taken over meanwhile: it is someone else's now

    async def release(self) -> list[str]:
        """Give every claim back; returns what could not be (a warning each, never an exception)."""
        problems = []
        for entry in list(self._held):
            try:
                await self._give_back(entry)
                self._held.remove(entry)
            except Exception as exc:  # noqa: BLE001 - the run is over; a leftover claim shows stale and is reported
                problems.append(f"could not release the claim on {entry[0].ref}: {exc}")
        return problems

    async def keep_renewed(self, sleep: Callable[[float], Any] = asyncio.sleep) -> None:
        """Renew until cancelled; a failed renewal is retried at the next tick (three may fail in a lease)."""
        while not self.lost:
            await sleep(self.renew_every)
            try:
                await self.renew()
            except Exception as exc:  # noqa: BLE001 - the API may be away for a while: the next tick retries
                self.journal.append("warning", None, {"message": f"claim renewal failed: {exc}"})


async def release_finished(actions: Actions, store: Store, journal: Journal, system_namespace: str) -> list[str]:
    """Give back the claims a finished run still holds, as the store shows them: for a host that marks a run
    finished after its runner stopped (an abort from outside the runner). Returns what could not be given back."""
    if not journal.terminal or not actions.writable:
        return []
    claims = Claims(actions, store, journal, system_namespace)
    for target, holder in existing(store, journal.kind, journal.params, system_namespace):
        if holder.workflow_id == journal.id:
            namespace, _, name = holder.lease.partition("/")
            claims._held.append((target, namespace, name))
    return await claims.release()


@asynccontextmanager
async def holding(runner: Any) -> AsyncIterator[Claims | None]:
    """The run's claims while `runner` runs (Runner.run): taken first, renewed meanwhile, given back when
    the run ends finished. A run without a writing connection (read-only, a rehearsal's fork) claims nothing."""
    ctx = runner.ctx
    if not getattr(runner, "claims", True) or not getattr(ctx.actions, "writable", False):
        yield None
        return
    claims = Claims(ctx.actions, ctx.store, runner.journal, ctx.config.system_namespace,
                    take_over=getattr(runner, "take_over", None))
    journal = runner.journal
    fresh = len(journal.records) == 1  # nothing but its creation: a refusal ends it before it began
    try:
        try:
            await claims.acquire(claim_targets(journal.kind, journal.params, ctx.config.system_namespace))
        except ClaimRefused:
            raise
        except Exception as exc:  # noqa: BLE001 - refused, forbidden, unreachable: no claim, so no step runs
            raise ClaimRefused(f"could not claim what workflow {journal.id} writes ({type(exc).__name__}: {exc}); "
                               "its steps wrote nothing") from None
    except ClaimRefused as exc:
        if fresh:
            journal.append("aborted", None, {"by": "claim", "message": str(exc)})
        raise
    renewer = asyncio.create_task(claims.keep_renewed(), name=f"taudash-claims-{journal.id}")
    try:
        yield claims
    finally:
        renewer.cancel()
        with suppress(asyncio.CancelledError):
            await renewer
        journal.reload()
        if journal.state in TERMINAL:
            for problem in await claims.release():
                journal.append("warning", None, {"message": problem})


__all__ = ["CLAIM_MANAGER", "LEASE_SECONDS", "RENEW_EVERY", "ClaimRefused", "Claims", "Target", "about",
           "claim_targets", "existing", "holding", "judge", "lease_name", "lease_namespace", "local_journals",
           "micro_time", "release_finished"]
