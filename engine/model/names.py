"""Well-known label, annotation and finalizer keys, defined once (TauGrid, Kueue, Kubernetes, taudash).

Everything in engine/, screens/ and taudash/ imports these instead of spelling the keys out.
"""

from __future__ import annotations

# --- TauGrid labels --------------------------------------------------------------------------------
GPU_CLASS_LABEL = "tau.azure.com/gpu-class"  # a Node's GPU class; pool flavors are taugrid-gpu-<class>
TEAM_LABEL = "tau.azure.com/team"
WORKSPACE_LABEL = "tau.azure.com/workspace"
OWNER_UID_LABEL = "tau.azure.com/owner-uid"  # the TauWorkspace that owns an identity object
LOCAL_QUEUE_LABEL = "tau.azure.com/local-queue"
PROFILE_LABEL = "tau.azure.com/profile"
LANE_LABEL = "tau.azure.com/lane"
JOB_LABEL = "tau.azure.com/job"
WORKLOAD_KIND_LABEL = "tau.azure.com/workload-kind"  # the CLI's own label: what was submitted
TAU_MANAGED_BY_LABEL = "tau.azure.com/managed-by"
RESULT_SCOPE_LABEL = "tau.azure.com/result-scope"
DISCOVER_GPU_FLAVORS_LABEL = "tau.azure.com/discover-gpu-flavors"
EXECUTION_TARGET_LABEL = "tau.azure.com/execution-target"
NETWORK_DOMAIN_LABEL = "tau.azure.com/network-domain"
ACCELERATOR_DOMAIN_LABEL = "tau.azure.com/accelerator-domain"
INFINIBAND_LABEL = "tau.azure.com/infiniband"
SITE_LABEL = "tau.azure.com/site"
REGION_LABEL = "tau.azure.com/region"

HOSTNAME_LABEL = "kubernetes.io/hostname"  # the lowest level of TauGrid's Kueue Topology
# TauGrid's topology levels, highest first (its Kueue Topology `taugrid-gpu-topology` lists them so).
TOPOLOGY_LEVEL_LABELS = (SITE_LABEL, NETWORK_DOMAIN_LABEL, ACCELERATOR_DOMAIN_LABEL, HOSTNAME_LABEL)

# --- GPU health Node conditions (TauGrid's metrics collector; status True = the problem is present) ---------
# The 20 default types by what UNO does with them by default: drain the node, or taint it.
GPU_DRAIN_CONDITIONS = (
    "GPUECCDoubleRetired", "GPUECCDoubleVolatile", "GPUNVLinkCRCFlitErrors", "GPUNVLinkCRCDataErrors",
    "GPUNVLinkReplayErrors", "XIDError48", "XIDError63", "XIDError64", "XIDError79", "XIDError94", "XIDError95",
    "GraceCPUECCUncorrectable",
)
GPU_TAINT_CONDITIONS = (
    "GPUThermalViolation", "GPUPowerViolation", "IBLinkDown", "IBSymbolError", "GPUECCSingleVolatileRate",
    "GPUECCSingleRetired", "GPUPCIeReplayErrors", "GraceCPUECCCorrectableRate",
)
DCGM_EXPORTER_UNAVAILABLE = "DcgmExporterUnavailable"  # the required scrape target is silent: health unknown
DCGM_HEALTH_PROBLEM = "DcgmHealthProblem"  # node-problem-detector's own DCGM diagnostic

# --- TauGrid annotations (the stamps on resolved profile objects) -----------------------------------
CLUSTER_GENERATION_ANNOTATION = "tau.azure.com/tau-cluster-generation"
PROFILE_SET_HASH_ANNOTATION = "tau.azure.com/workload-profile-set-hash"
WORKLOAD_PROFILE_ANNOTATION = "tau.azure.com/workload-profile"

# --- TauGrid resources and finalizers ----------------------------------------------------------------
TORCHRUN_HOST_SLOT = "tau.azure.com/torchrun-host-slot"  # an extended resource, one per host
WORKSPACE_CLEANUP_FINALIZER = "tau.azure.com/workspace-cleanup"
TEAM_CLEANUP_FINALIZER = "tau.azure.com/team-cleanup"

# --- Kueue --------------------------------------------------------------------------------------------
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
DEFAULT_LOCAL_QUEUE_LABEL = "kueue.x-k8s.io/default-local-queue"
KUEUE_MANAGED_LABEL = "kueue.x-k8s.io/managed"
POD_SUSPENDING_PARENT_ANNOTATION = "kueue.x-k8s.io/pod-suspending-parent"
PRIORITY_BOOST_ANNOTATION = "kueue.x-k8s.io/priority-boost"
ADMISSION_GATED_BY_ANNOTATION = "kueue.x-k8s.io/admission-gated-by"  # non-empty: Kueue does not queue it
RESOURCE_IN_USE_FINALIZER = "kueue.x-k8s.io/resource-in-use"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"  # an AdmissionCheck's controllerName

# --- Kubernetes and taudash -----------------------------------------------------------------------------
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
APP_INSTANCE_LABEL = "app.kubernetes.io/instance"
DEACTIVATED_BY_ANNOTATION = "taudash.io/deactivated-by"  # set by taudash workflows that deactivate a Workload
HELD_BY_ANNOTATION = "taudash.io/held-by"  # on each object a running workflow claims: the workflow id

# --- taudash claims: a coordination.k8s.io Lease per object a workflow writes (engine/workflows/claims.py) ---
# every claim Lease carries this label (and only those are read)
CLAIM_SELECTOR = "app.kubernetes.io/managed-by=taudash"
CLAIM_TARGET_ANNOTATION = "taudash.io/claim-target"  # "ClusterQueue tau-ws-train": the object claimed
CLAIM_WORKFLOW_ANNOTATION = "taudash.io/claim-workflow"  # the holder's workflow kind (hold, catalog, ...)
CLAIM_WHO_ANNOTATION = "taudash.io/claim-who"  # the holder's authenticated user (or its kubeconfig user, marked)
CLAIM_HOST_ANNOTATION = "taudash.io/claim-host"  # the host the holder runs on
CLAIM_TAKEN_FROM_ANNOTATION = "taudash.io/claim-taken-from"  # the workflow a take-over replaced
