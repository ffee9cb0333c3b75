"""What an operator reads first on a Kueue object (policies, fair sharing, limits, eviction history),
as plain (label, value) lines: shared by the object detail and the Queues screen."""

from __future__ import annotations

from typing import Any


def _q(v) -> str:
    return "none" if v is None else v.human()


def kueue_facts(obj) -> list[tuple[str, str]]:
    """What an operator reads first on a Kueue object, as (label, value) lines; [] for other kinds.
    Kueue's defaults are named as such when a field is absent."""
    kind = getattr(obj, "kind", "")
    spec: Any = getattr(obj, "spec", None)  # one of several kinds: read by `kind` below
    status: Any = getattr(obj, "status", None)
    out: list[tuple[str, str]] = []
    if kind == "ClusterQueue":
        p = spec.preemption
        bwc = p.borrow_within_cohort
        borrow = "Never" if bwc is None else bwc.policy + (
            f" (priority ≤ {bwc.max_priority_threshold})" if bwc.max_priority_threshold is not None else "")
        out.append(("preemption", f"withinClusterQueue {p.within_cluster_queue} · reclaimWithinCohort "
                                  f"{p.reclaim_within_cohort} · borrowWithinCohort {borrow}"))
        ff = spec.flavor_fungibility
        out.append(("flavorFungibility",
                    "default (whenCanBorrow MayStopSearch · whenCanPreempt TryNextFlavor)" if ff is None
                    else f"whenCanBorrow {ff.when_can_borrow or 'MayStopSearch'} · whenCanPreempt "
                         f"{ff.when_can_preempt or 'TryNextFlavor'}"
                         + (f" · preference {ff.preference}" if ff.preference else "")))
        if spec.admission_scope is not None:
            out.append(("admissionScope", spec.admission_scope.admission_mode or "set (no mode)"))
        limits = [f"{fl.name}/{r.name} borrow {_q(r.borrowing_limit)} lend {_q(r.lending_limit)}"
                  for rg in spec.resource_groups for fl in rg.flavors for r in fl.resources
                  if r.borrowing_limit is not None or r.lending_limit is not None]
        out.append(("limits", "; ".join(limits) if limits else "none (borrows and lends without limit)"))
    if kind in ("ClusterQueue", "Cohort", "LocalQueue"):
        fs = spec.fair_sharing
        weight = "1 (default)" if fs is None or fs.weight is None else fs.weight.human()
        share = getattr(status, "fair_sharing", None) if status is not None else None
        text = f"weight {weight}"
        if share is not None and share.weighted_share is not None:
            text += f" · weightedShare {share.weighted_share}"
        out.append(("fairSharing", text))
    if kind == "ResourceFlavor" and spec.tolerations:
        out.append(("tolerations", ", ".join(
            f"{t.key or '*'} {t.operator}{(' ' + t.value) if t.value else ''}{(' :' + t.effect) if t.effect else ''}"
            for t in spec.tolerations)))
    if kind == "Workload":
        st = status
        if st.cluster_name:
            out.append(("clusterName", st.cluster_name))
        if st.scheduling_stats is not None and st.scheduling_stats.evictions:
            out.append(("evictions", "; ".join(
                f"{e.count}× {e.reason}" + (f" ({e.underlying_cause})" if e.underlying_cause else "")
                for e in st.scheduling_stats.evictions)))
        if st.requeue_state is not None:
            rq = st.requeue_state
            out.append(("requeueState", f"count {rq.count if rq.count is not None else 0}"
                        + (f" · requeueAt {rq.requeue_at}" if rq.requeue_at else "")))
        for ps in spec.pod_sets:
            if ps.topology_request:
                out.append((f"topology {ps.name}",
                            ", ".join(f"{k} {v}" for k, v in sorted(ps.topology_request.items()))))
        adm = st.admission
        for psa in adm.pod_set_assignments if adm is not None else []:
            ta = psa.topology_assignment
            if ta:
                levels = ta.get("levels") or []
                out.append((f"placed {psa.name}", f"levels {', '.join(map(str, levels)) or '?'}"
                            + (f" · {len(ta.get('slices') or ta.get('domains') or [])} domain group(s)")))
            if psa.delayed_topology_request:
                out.append((f"topology {psa.name}", f"delayed: {psa.delayed_topology_request}"))
    return out
