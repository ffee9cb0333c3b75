"""Workflow claims and what a finished workflow left behind (docs/rules.md#claims).

A running workflow claims each object it writes with a Lease (engine/workflows/claims.py writes them).
This rule reads those Leases — whoever wrote them, from whichever machine — and says who holds what,
since when, and whether the holder still renews its claim. It also finds Workloads a workflow
deactivated (annotation `taudash.io/deactivated-by: <run>`) whose run holds no claim any more: such a
Workload is never admitted again until someone reactivates it.

Fail closed: without the Leases no Workload is said to be left deactivated (the run may still hold
its claims); without the Workloads nothing is said about them.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..model import Lease, Workload
from ..model.names import (
    CLAIM_HOST_ANNOTATION,
    CLAIM_TARGET_ANNOTATION,
    CLAIM_WHO_ANNOTATION,
    CLAIM_WORKFLOW_ANNOTATION,
    DEACTIVATED_BY_ANNOTATION,
)
from .base import Changed, Finding, Key, RuleContext, RulePart, Severity, ViewModel, finding
from .queue_order import parse_time
from .queues import workload_cluster_queue


class ClaimView(ViewModel):
    """One object a workflow holds (docs/rules.md#claims)."""

    target: str  # "ClusterQueue tau-ws-train"
    holder: str  # the workflow id
    workflow: str = ""  # its kind (hold, release, catalog, rollback, drain)
    who: str = ""  # the operator, as the cluster authenticated them (else their kubeconfig user, marked)
    host: str = ""
    since: str | None = None  # acquireTime, as published
    renewed: str | None = None  # renewTime, as published
    stale: bool = False  # not renewed for longer than the Lease's duration: its run stopped
    lease: str = ""  # namespace/name of the Lease


@dataclass(frozen=True)
class Holder:
    """Who holds one claim, read from its Lease."""

    workflow_id: str
    workflow: str
    who: str
    host: str
    target: str
    since: datetime | None
    renewed: datetime | None
    duration: int | None
    lease: str  # namespace/name
    since_text: str | None = None
    renewed_text: str | None = None

    def stale(self, now: datetime) -> bool:
        """The holder stopped renewing: renewTime + leaseDurationSeconds is past (or never set)."""
        if self.renewed is None or not self.duration:
            return True
        return (now - self.renewed).total_seconds() > self.duration

    def describe(self, now: datetime) -> str:
        """"workflow 1a2b3c (hold, alice on laptop-1, since 09:12:03 UTC)", with how stale when it is."""
        who = " on ".join(x for x in (self.who or "someone", self.host) if x)
        since = f", since {self.since:%Y-%m-%d %H:%M:%S} UTC" if self.since else ""
        text = f"workflow {self.workflow_id} ({self.workflow or 'workflow'}, {who}{since})"
        if self.stale(now):
            last = (f"last renewed {_ago(now, self.renewed)} ago" if self.renewed is not None
                    else "never renewed")
            text += f", a stale claim: {last}, its lease is {self.duration or 0} s"
        return text


def holder_of(lease: Lease) -> Holder | None:
    """The holder of a claim Lease; None when it names none (released, or not a claim)."""
    spec, notes = lease.spec, lease.metadata.annotations
    if not spec.holder_identity:
        return None
    return Holder(
        workflow_id=spec.holder_identity, workflow=notes.get(CLAIM_WORKFLOW_ANNOTATION, ""),
        who=notes.get(CLAIM_WHO_ANNOTATION, ""), host=notes.get(CLAIM_HOST_ANNOTATION, ""),
        target=notes.get(CLAIM_TARGET_ANNOTATION, ""), since=parse_time(spec.acquire_time),
        renewed=parse_time(spec.renew_time), duration=spec.lease_duration_seconds,
        lease=f"{lease.namespace}/{lease.name}", since_text=spec.acquire_time, renewed_text=spec.renew_time)


def holders(leases: Iterable[Lease]) -> list[Holder]:
    """The claims among `leases` (those naming a target and a holder), by target."""
    out = [h for h in (holder_of(lease) for lease in leases) if h is not None and h.target]
    return sorted(out, key=lambda h: (h.target, h.lease))


def _ago(now: datetime, then: datetime) -> str:
    s = max(0, int((now - then).total_seconds()))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


def _split_target(target: str) -> tuple[str, str]:
    kind, _, name = target.partition(" ")
    return kind, name


def _take_over_hint(h: Holder) -> str:
    verb = f"start {h.workflow} … --take-over {h.workflow_id}" if h.workflow else f"start … --take-over {h.workflow_id}"
    return (f"if that run is gone (its process ended, its machine is lost), take the claim over explicitly: "
            f"`taudash workflow {verb}`, or `taudash workflow resume {h.workflow_id}` where it was journaled "
            "(it renews its own claim)")


def claim_views(found: list[Holder], now: datetime) -> tuple[list[ClaimView], list[Finding]]:
    views, findings = [], []
    for h in found:
        stale = h.stale(now)
        views.append(ClaimView.trusted(target=h.target, holder=h.workflow_id, workflow=h.workflow, who=h.who,
                                       host=h.host, since=h.since_text, renewed=h.renewed_text, stale=stale,
                                       lease=h.lease))
        if stale:
            kind, name = _split_target(h.target)
            findings.append(finding(Severity.WARNING, "CLAIM-STALE", kind, name, None,
                                    f"claimed by {h.describe(now)}: that run stopped unfinished, "
                                    "and no other workflow may write to it until it is resumed or its claim is "
                                    "taken over",
                                    _take_over_hint(h)))
    return views, findings


@dataclass(frozen=True)
class _Deactivated:
    namespace: str
    name: str
    run: str
    cluster_queue: str | None


def deactivated_of(ctx: RuleContext, wl: Workload) -> _Deactivated | None:
    """The Workload as left deactivated by a workflow (spec.active false, the annotation naming the run, not
    finished), else None."""
    run = wl.metadata.annotations.get(DEACTIVATED_BY_ANNOTATION)
    if not run or wl.spec.active or wl.finished:
        return None
    return _Deactivated(wl.namespace or "", wl.name, run, workload_cluster_queue(ctx, wl))


def deactivated_workloads(ctx: RuleContext, workloads: Iterable[Workload]) -> list[_Deactivated]:
    """Unfinished Workloads a workflow deactivated (spec.active false and the annotation naming the run)."""
    out = [d for d in (deactivated_of(ctx, wl) for wl in workloads) if d is not None]
    return sorted(out, key=lambda d: (d.namespace, d.name))


def left_deactivated(found: list[_Deactivated], claimed_by: set[str]) -> list[Finding]:
    out = []
    for d in found:
        if d.run in claimed_by:
            continue  # its run still holds a claim (running, or paused/crashed and resumable): not left behind
        cq = f" --cq {d.cluster_queue}" if d.cluster_queue else ""
        out.append(finding(
            Severity.WARNING, "WORKLOAD-LEFT-DEACTIVATED", "Workload", d.name, d.namespace,
            f"deactivated by workflow {d.run}, which holds no claim any more (it ended): the Workload stays "
            f"inactive, never admitted{f' to ClusterQueue {d.cluster_queue}' if d.cluster_queue else ''}, "
            "until it is reactivated",
            f"reactivate it: `taudash workflow start release{cq} --reactivate-from {d.run}` (where workflow "
            f"{d.run} was journaled), or set spec.active: true on the Workload"))
    return out


def workload_print(wl: Workload) -> Any:
    """What this rule reads of a Workload: Kueue's constant status writes do not recompute it."""
    return (wl.spec.active, wl.metadata.annotations.get(DEACTIVATED_BY_ANNOTATION), wl.spec.queue_name,
            wl.status.admission.cluster_queue if wl.status.admission else None, wl.finished)


def local_queue_print(lq: Any) -> Any:
    return lq.spec.cluster_queue


class ClaimsPart(RulePart):
    """Claims move with the clock (a claim goes stale without any write), so the view is rebuilt on every
    frame. The deactivated Workloads it judges are kept per Workload: a change looks again at the Workloads
    that changed (their fingerprint, registry.py), a LocalQueue change re-routes the few deactivated ones;
    only a build scans every Workload."""

    def __init__(self, rule: Any) -> None:
        super().__init__(rule)
        self.claims: list[ClaimView] = []
        self._findings: list[Finding] = []
        self._by_key: dict[Key, _Deactivated] = {}
        self._deactivated: list[_Deactivated] | None = None  # None: Workloads or LocalQueues unreadable

    def update(self, ctx: RuleContext, changed: Changed | None, needs: Mapping[str, Any],
               moved: Mapping[str, Any]) -> bool:
        store = ctx.store
        readable = store.readable("Workload") and store.readable("LocalQueue")
        if not readable:
            self._by_key, self._deactivated = {}, None
        elif changed is None or self._deactivated is None:
            found = deactivated_workloads(ctx, store.list(Workload))
            self._by_key = {(d.namespace, d.name): d for d in found}
            self._deactivated = found
        elif "Workload" in changed or "LocalQueue" in changed:
            keys = set(changed.get("Workload", ()))
            if "LocalQueue" in changed:
                keys.update(self._by_key)  # the few deactivated ones: their LocalQueue may route elsewhere now
            touched = False
            for key in keys:
                wl = store.get(Workload, key[1], key[0])
                d = deactivated_of(ctx, wl) if wl is not None else None
                old = self._by_key.pop(key, None) if d is None else self._by_key.get(key)
                if d is not None and d != old:
                    self._by_key[key] = d
                touched = touched or d != old
            if touched:
                self._deactivated = sorted(self._by_key.values(), key=lambda d: (d.namespace, d.name))
        before = (self.claims, self._findings)
        if not store.readable("Lease"):
            self.claims, self._findings = [], []  # unknown: no claim shown, no Workload judged left behind
        else:
            found_h = holders(store.list(Lease))
            self.claims, self._findings = claim_views(found_h, ctx.now)
            if self._deactivated is not None:
                self._findings += left_deactivated(self._deactivated, {h.workflow_id for h in found_h})
        return (self.claims, self._findings) != before

    def values(self) -> tuple[Any, ...]:
        return (self.claims,)

    def findings(self) -> list[Finding]:
        return self._findings


__all__ = ["ClaimView", "ClaimsPart", "Holder", "holder_of", "holders", "local_queue_print", "workload_print"]
