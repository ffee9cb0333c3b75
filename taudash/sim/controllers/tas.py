"""Kueue's Topology Aware Scheduling, the part the simulator plays: a Workload whose pod set must stay
inside one domain of a topology level is admitted only when some domain of its flavor's Topology has the
free room for all its pods now; otherwise it stays pending with QuotaReserved=False reason
`TopologyPlacementFailed` (Kueue 0.19 with the UnadmittedWorkloadsObservability gate; other releases
and gate settings write their own reason, `db.kueue.reason`). An admitted one gets the assignment
(`podSetAssignments[].topologyAssignment`, hostname level), which the Pods then follow (pods.py).

The room is the nodes' allocatable minus the non-terminal Pods bound to them and the assignments of
admitted Workloads whose Pods are not there yet (placement.py). Only pod sets with a level are checked
(their Kueue request or their workload profile's placement, topology.py), on flavors with a
`topologyName` whose Topology has that level; Workloads without one are left to kube-scheduler (no
implicit TAS). Not modelled: TAS for preempting Workloads, trying the next flavor when the topology of
the first does not fit, slices, and TAS-aware preemption.
"""

from __future__ import annotations

from taudash.sim.controllers.base import Obj, controller_owner, deleting, is_true, labels
from taudash.sim.controllers.pods import PODSET, topology_hosts
from taudash.sim.conversion import domains_to_slices
from taudash.sim.placement import HOSTNAME_LABEL, Ledger, Miss, holds_room, pod_requests, pod_spec_on
from taudash.sim.topology import podset_levels

TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"


def ledger_now(m) -> Ledger:
    """The room left on every node: bound Pods, and the topology assignments still waiting for their Pods."""
    pods = m.list("Pod")
    ledger = Ledger(m.list("Node"), pods)
    bound: dict[tuple[str, str], int] = {}
    for pod in pods:
        if holds_room(pod):
            uid = (controller_owner(pod) or {}).get("uid") or ""
            key = (uid, labels(pod).get(PODSET, "main"))
            bound[key] = bound.get(key, 0) + 1
    for wl in m.list("Workload"):
        if deleting(wl) or is_true(wl, "Finished") or not is_true(wl, "QuotaReserved"):
            continue
        hosts = topology_hosts(wl)
        if not hosts:
            continue
        owner = (controller_owner(wl) or {}).get("uid") or ""
        specs = {ps.get("name", "main"): (ps.get("template") or {}).get("spec") or {}
                 for ps in (wl.get("spec") or {}).get("podSets") or ()}
        for ps_name, nodes in hosts.items():
            req = pod_requests(specs.get(ps_name) or {})
            for node in nodes[bound.get((owner, ps_name), 0):]:
                ledger.bind(node, req)
    return ledger


def place(ledger: Ledger, m, wl: Obj, source: Obj | None, flavor_of: dict[str, str], flavors: dict[str, Obj]
          ) -> dict[str, Obj] | tuple[str, str]:
    """Topology assignments for the pod sets of `wl` that ask for a level (bound on the ledger), or
    (reason, message) when one does not fit. `flavor_of`: the flavor Kueue chose for each pod set."""
    levels = podset_levels(wl, source, m.get("TauCluster", "cluster"))
    if not levels:
        return {}
    specs = {ps.get("name", "main"): ((ps.get("template") or {}).get("spec") or {}, int(ps.get("count", 1)))
             for ps in (wl.get("spec") or {}).get("podSets") or ()}
    planned: list[tuple[str, Obj, list[str], str]] = []
    for ps_name, (level, required) in levels.items():
        tspec, count = specs.get(ps_name, ({}, 0))
        flavor = flavors.get(flavor_of.get(ps_name, ""))
        topology_name = str(((flavor or {}).get("spec") or {}).get("topologyName") or "")
        topology = m.get("Topology", topology_name) if topology_name else None
        if topology is None or count <= 0:
            continue  # not a TAS flavor (or its Topology is missing): kube-scheduler places the pods
        known = [lv.get("nodeLabel") for lv in (topology.get("spec") or {}).get("levels") or ()]
        if level not in known:
            return TOPOLOGY_PLACEMENT_FAILED, f"couldn't assign flavors to pod set {ps_name}: " \
                                              f"no requested topology level: {level}"
        spec = pod_spec_on(tspec, flavor)
        got = ledger.gang(spec, pod_requests(spec), count, level)
        if isinstance(got, Miss) and not required:
            got = ledger.gang(spec, pod_requests(spec), count, None)
        if isinstance(got, Miss):
            for _, s, nodes, _ in planned:  # give back what the earlier pod sets took
                for node in nodes:
                    ledger.release(node, pod_requests(s))
            return TOPOLOGY_PLACEMENT_FAILED, f"couldn't assign flavors to pod set {ps_name}: " \
                                              f"{got.message(topology_name)}"
        for node in got:
            ledger.bind(node, pod_requests(spec))
        planned.append((ps_name, spec, got, topology_name))
    return {ps_name: assignment_of(nodes) for ps_name, _, nodes, _ in planned}


def assignment_of(nodes: list[str]) -> Obj:
    """Kueue's topologyAssignment for pods on these hosts: the hostname level only, one compact slice."""
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node] = counts.get(node, 0) + 1
    domains = [{"values": [host], "count": n} for host, n in sorted(counts.items())]
    return domains_to_slices({"levels": [HOSTNAME_LABEL], "domains": domains})
