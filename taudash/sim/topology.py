"""TauGrid's topology for the simulator: the labels its controller derives for every node, the Kueue
Topology it creates, and which topology level a Workload's pod sets must stay inside.

Node labels (TauGrid >= 0.4.4, `cluster_topology.go`; facts: the shared TauGrid reference, node processing):
region from `topology.kubernetes.io/region` (else `aks.azure.com/region`, else `unplaced-<hash>`); site
`azure-<region>` for Azure nodes, `<cloud>-site-<site>` for Flex nodes with a site; network domain
`azure-ib-<region>-<agentpool>-<sku>` for Azure ND SKUs in an agent pool, `<cloud>-fabric-<domain>` for
Flex nodes that name one; accelerator domain `<provider>-accelerator-<value>` from
`net.unbounded-cloud.io/accelerator-domain`; otherwise `isolated-…-<hash>`. Values over 63 characters are
cut and given a 12-hex sha256 suffix. Where the reference is silent (which hash, the Flex cloud's name,
what sets `infiniband`) the choices are the simulator's (docs/simulator.md).

A pod set's level: its Kueue topology request (`podSets[].topologyRequest.required`/`.preferred`, from the
`kueue.x-k8s.io/podset-required-topology`/`-preferred-topology` pod template annotations), else the
`placement` of the TauGrid workload profile its job was rendered from (same-host → hostname,
same-accelerator-domain, same-network-domain, same-site; the older `single-node-nvlink` → hostname and
`multi-node-nccl` → network domain) for the pod sets that ask for GPUs; else none (spread).
"""

from __future__ import annotations

import hashlib
import re

from taudash.engine.model.names import (
    ACCELERATOR_DOMAIN_LABEL,
    INFINIBAND_LABEL,
    MANAGED_BY_LABEL,
    NETWORK_DOMAIN_LABEL,
    REGION_LABEL,
    SITE_LABEL,
    WORKLOAD_PROFILE_ANNOTATION,
)
from taudash.engine.rules.queues import TAU_MANAGER
from taudash.sim.controllers.base import Obj, labels, meta
from taudash.sim.placement import HOSTNAME_LABEL, pod_requests

TOPOLOGY_NAME = "taugrid-gpu-topology"
LEVELS = (SITE_LABEL, NETWORK_DOMAIN_LABEL, ACCELERATOR_DOMAIN_LABEL, HOSTNAME_LABEL)
TOPOLOGY_LABELS = (REGION_LABEL, SITE_LABEL, NETWORK_DOMAIN_LABEL, ACCELERATOR_DOMAIN_LABEL, INFINIBAND_LABEL)

# Kubernetes, AKS and unbounded-cloud node labels the derivation reads.
K8S_REGION = "topology.kubernetes.io/region"
AKS_REGION = "aks.azure.com/region"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
AGENT_POOL = "kubernetes.azure.com/agentpool"
AKS_MANAGED = "kubernetes.azure.com/managed"
AKS_STRETCH = "aks.azure.com/stretch-managed"
FLEX_SITE = "net.unbounded-cloud.io/site"
FLEX_NETWORK_DOMAIN = "net.unbounded-cloud.io/network-domain"
FLEX_ACCELERATOR_DOMAIN = "net.unbounded-cloud.io/accelerator-domain"
FLEX_CLOUD = "net.unbounded-cloud.io/cloud"
RDMA = "rdma/ib"

# Kueue's pod template annotations for a pod set's topology request (jobframework → podSets[].topologyRequest).
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"

PLACEMENT_LEVELS: dict[str, str | None] = {
    "unconstrained": None,
    "same-host": HOSTNAME_LABEL,
    "same-accelerator-domain": ACCELERATOR_DOMAIN_LABEL,
    "same-network-domain": NETWORK_DOMAIN_LABEL,
    "same-site": SITE_LABEL,
    # the spellings before TauGrid 0.4.4
    "independent": None,
    "single-node-nvlink": HOSTNAME_LABEL,
    "multi-node-nccl": NETWORK_DOMAIN_LABEL,
}
GPU = "nvidia.com/gpu"


def _hash8(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()[:8]


def _fit63(value: str) -> str:
    if len(value) <= 63:
        return value
    return f"{value[:50]}-{hashlib.sha256(value.encode()).hexdigest()[:12]}"


def _flex(lbl: dict[str, str]) -> bool:
    return lbl.get(AKS_MANAGED) == "false" or lbl.get(AKS_STRETCH) == "true"


def derived_labels(node: Obj) -> dict[str, str]:
    """The topology labels TauGrid's controller puts on a node."""
    name = meta(node)["name"]
    lbl = labels(node)
    flex = _flex(lbl)
    azure = not flex and str((node.get("spec") or {}).get("providerID") or "").startswith("azure://")
    cloud = lbl.get(FLEX_CLOUD, "flex") if flex else "azure"
    region = lbl.get(K8S_REGION) or lbl.get(AKS_REGION) or f"unplaced-{_hash8(name)}"
    if azure:
        site = f"azure-{region}"
    elif flex and lbl.get(FLEX_SITE):
        site = f"{cloud}-site-{lbl[FLEX_SITE]}"
    else:
        site = f"isolated-site-{_hash8(name)}"
    sku, pool = lbl.get(INSTANCE_TYPE, "").lower(), lbl.get(AGENT_POOL)
    if azure and sku.startswith("standard_nd") and pool:
        network = f"azure-ib-{region}-{pool}-{sku}"
    elif flex and lbl.get(FLEX_NETWORK_DOMAIN):
        network = f"{cloud}-fabric-{lbl[FLEX_NETWORK_DOMAIN]}"
    else:
        network = f"isolated-domain-{_hash8(name)}"
    accel = (f"{cloud}-accelerator-{lbl[FLEX_ACCELERATOR_DOMAIN]}" if lbl.get(FLEX_ACCELERATOR_DOMAIN)
             else f"isolated-accelerator-{_hash8(name)}")
    rdma = str(((node.get("status") or {}).get("allocatable") or {}).get(RDMA) or "0")
    return {
        REGION_LABEL: _fit63(region),
        SITE_LABEL: _fit63(site),
        NETWORK_DOMAIN_LABEL: _fit63(network),
        ACCELERATOR_DOMAIN_LABEL: _fit63(accel),
        INFINIBAND_LABEL: "false" if rdma in ("", "0") else "true",
    }


def topology_object(api_version: str) -> Obj:
    """The Kueue Topology TauGrid's controller creates: site → network-domain → accelerator-domain → host."""
    return {
        "apiVersion": api_version,
        "kind": "Topology",
        "metadata": {"name": TOPOLOGY_NAME, "labels": {MANAGED_BY_LABEL: TAU_MANAGER}},
        "spec": {"levels": [{"nodeLabel": level} for level in LEVELS]},
    }


# --- which level a pod set must stay inside -----------------------------------------------------------


def template_request(template: Obj) -> Obj | None:
    """A pod template's Kueue topology request, from its annotations (Kueue's jobframework)."""
    ann = (template.get("metadata") or {}).get("annotations") or {}
    if ann.get(REQUIRED_TOPOLOGY):
        return {"required": ann[REQUIRED_TOPOLOGY]}
    if ann.get(PREFERRED_TOPOLOGY):
        return {"preferred": ann[PREFERRED_TOPOLOGY]}
    return None


def profile_placement(tau_cluster: Obj | None, profile: str) -> str | None:
    """A workload profile's placement: the resolved one in the TauCluster's status, else the declared one."""
    if tau_cluster is None or not profile:
        return None
    resolved = ((tau_cluster.get("status") or {}).get("workloadProfiles") or {}).get("profiles") or ()
    declared = (tau_cluster.get("spec") or {}).get("workloadProfiles") or ()
    for p in (*resolved, *declared):
        if p.get("name") == profile:
            return re.sub(r"[\s_]+", "-", str(p.get("placement") or "").strip().lower())
    return None


def podset_levels(workload: Obj, source: Obj | None, tau_cluster: Obj | None) -> dict[str, tuple[str, bool]]:
    """Pod set name → (topology level, required) for the pod sets that must stay inside one domain."""
    ann = (meta(source).get("annotations") or {}) if source is not None else {}
    placement = profile_placement(tau_cluster, ann.get(WORKLOAD_PROFILE_ANNOTATION, ""))
    from_profile = PLACEMENT_LEVELS.get(placement or "")
    out: dict[str, tuple[str, bool]] = {}
    for ps in (workload.get("spec") or {}).get("podSets") or ():
        name = ps.get("name", "main")
        tr = ps.get("topologyRequest") or {}
        if tr.get("required"):
            out[name] = (tr["required"], True)
        elif tr.get("preferred"):
            out[name] = (tr["preferred"], False)
        elif from_profile and GPU in pod_requests((ps.get("template") or {}).get("spec") or {}):
            out[name] = (from_profile, True)
    return out
