"""Storage readiness per workspace namespace (docs/rules.md#storage).

Workspace Ready proves RBAC and queue reconciliation only. For each platform-managed claim this
checks what can be checked without mounting: the claim exists and is Bound, and the CSI driver
behind its StorageClass is registered on every eligible node. Writes are proven only by a canary.
"""

from typing import Any

from ..model import CSINode, Node, PersistentVolumeClaim, StorageClass, TauCluster, TauWorkspace
from ..model.names import GPU_CLASS_LABEL as GPU_CLASS
from .base import Finding, RuleContext, Severity, ViewModel, finding
from .drain import UnknownInput, drain_mode
from .pool import exclusion_reason

AZURE_CSI_SUFFIX = ".csi.azure.com"
# In-tree Azure provisioners are served by their CSI replacements (CSI migration).
IN_TREE = {"kubernetes.io/azure-disk": "disk.csi.azure.com", "kubernetes.io/azure-file": "file.csi.azure.com"}
NO_CSI = {"kubernetes.io/no-provisioner"}

CANARY_STEP = "run a mount/read/write canary with the workload's profile, ServiceAccount and security settings"
CANARY = f"Bound proves existence only: {CANARY_STEP} before handing the workspace to a researcher"


class StorageClaim(ViewModel):
    namespace: str
    name: str
    # Ready | Missing | Unbound | ClassMissing | CsiMissing | Unknown
    state: str
    phase: str | None = None
    storage_class: str | None = None
    driver: str | None = None
    eligible_nodes: int = 0
    nodes_missing_driver: list[str] = []
    flex_nodes: list[str] = []  # eligible Flex nodes relying on an AKS-managed addon driver
    unknown: list[UnknownInput] = []
    message: str = ""


class StorageView(ViewModel):
    state: str = "NotConfigured"  # NotConfigured | Skipped | Ready | NotReady | Unknown
    claims: list[StorageClaim] = []
    canary: str = ""


def _eligible_nodes(ctx: RuleContext) -> list[Node]:
    """The pool nodes (docs/rules.md#pool-nodes), with the pool rule's own eligibility test."""
    tc = ctx.store.get(TauCluster, "cluster")
    selector = tc.spec.nodes.selector if tc is not None else {}
    return [n for n in ctx.store.list(Node) if n.labels.get(GPU_CLASS) and exclusion_reason(n, selector) is None]


def _is_flex(node: Node) -> bool:
    return (
        node.labels.get("kubernetes.azure.com/managed") == "false"
        or node.labels.get("aks.azure.com/stretch-managed") == "true"
    )


def _check_claim(ctx: RuleContext, ns: str, name: str) -> tuple[StorageClaim, list[Finding]]:
    store = ctx.store
    out: list[Finding] = []
    where = f"claim {ns}/{name}"

    def fail(rule: str, msg: str, hint: str) -> None:
        out.append(
            finding(Severity.WARNING, rule, "PersistentVolumeClaim", name, ns, msg, f"{hint}; then {CANARY_STEP}")
        )

    def unknown_claim(kinds: tuple[str, ...], **kw: Any) -> tuple[StorageClaim, list[Finding]]:
        bad = [UnknownInput(resource=r, reason=why) for r, why in ctx.unreadable(*kinds)]
        return StorageClaim(
            namespace=ns, name=name, state="Unknown", unknown=bad, message="cannot be verified", **kw
        ), out

    if ctx.unreadable("PersistentVolumeClaim"):
        return unknown_claim(("PersistentVolumeClaim",))
    pvc: PersistentVolumeClaim | None = store.get(PersistentVolumeClaim, name, ns)
    if pvc is None:
        fail(
            "STORAGE-PVC-MISSING",
            f"{where} does not exist; workspace Ready does not cover storage",
            f"the platform creates it: kubectl get pvc {name} -n {ns}",
        )
        return StorageClaim(namespace=ns, name=name, state="Missing", message="claim does not exist"), out
    phase = pvc.status.phase or None
    sc_name = pvc.spec.storage_class_name or None
    if phase != "Bound":
        fail(
            "STORAGE-PVC-UNBOUND",
            f"{where} is {phase or 'without a phase'}, not Bound",
            f"check the claim's events: kubectl describe pvc {name} -n {ns}",
        )
        return (
            StorageClaim(
                namespace=ns, name=name, state="Unbound", phase=phase, storage_class=sc_name, message="not Bound"
            ),
            out,
        )
    if sc_name is None:
        # A statically bound claim without a class names no provisioner: nothing to check on nodes.
        return (
            StorageClaim(
                namespace=ns,
                name=name,
                state="Ready",
                phase=phase,
                message="Bound without a StorageClass: the CSI driver cannot be derived; check node registration by "
                        "hand",
            ),
            out,
        )
    if ctx.unreadable("StorageClass"):
        return unknown_claim(("StorageClass",), phase=phase, storage_class=sc_name)
    sc: StorageClass | None = store.get(StorageClass, sc_name)
    if sc is None:
        fail(
            "STORAGE-CLASS-MISSING",
            f"{where} uses StorageClass {sc_name}, which does not exist: its CSI driver cannot be verified",
            "restore the StorageClass through the platform's storage owner",
        )
        return (
            StorageClaim(namespace=ns, name=name, state="ClassMissing", phase=phase, storage_class=sc_name),
            out,
        )
    driver = IN_TREE.get(sc.provisioner, sc.provisioner) or None
    base = dict(namespace=ns, name=name, phase=phase, storage_class=sc_name, driver=driver)
    if driver is None or driver in NO_CSI:
        return StorageClaim(state="Ready", message="no CSI driver behind this StorageClass", **base), out
    if ctx.unreadable("Node", "CSINode", "TauCluster"):
        return unknown_claim(("Node", "CSINode", "TauCluster"), phase=phase, storage_class=sc_name, driver=driver)

    nodes = _eligible_nodes(ctx)
    missing = []
    for node in nodes:
        csinode: CSINode | None = store.get(CSINode, node.name)
        registered = csinode is not None and any(d.name == driver for d in csinode.spec.drivers)
        if not registered:
            missing.append(node.name)
    flex = sorted(n.name for n in nodes if _is_flex(n)) if driver.endswith(AZURE_CSI_SUFFIX) else []
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        fail(
            "STORAGE-CSI-MISSING",
            f"CSI driver {driver} (StorageClass {sc_name}) is not registered on {len(missing)} of {len(nodes)} "
            f"eligible node(s): {shown}; Pods there fail before container start",
            f"register {driver} on those nodes (the platform owns the driver), then re-check "
            "each with kubectl get csinode <node>",
        )
    if flex:
        fail(
            "STORAGE-FLEX-ADDON",
            f"{where} relies on {driver} on Flex node(s) {', '.join(flex)}: TauGrid does not support AKS-managed "
            "CSI addons on Flex or other externally registered nodes",
            "deploy and validate a compatible deployment-managed CSI driver for those nodes",
        )
    state = "CsiMissing" if missing else "Ready"
    msg = "" if nodes else "no eligible pool nodes to check"
    return (
        StorageClaim(
            state=state,
            eligible_nodes=len(nodes),
            nodes_missing_driver=missing,
            flex_nodes=flex,
            message=msg,
            **base,
        ),
        out,
    )


def derive_storage(ctx: RuleContext, ws: TauWorkspace) -> tuple[StorageView, list[Finding]]:
    claims = ctx.config.storage_claims
    if not claims:
        return StorageView(), []
    mode = drain_mode(ws)
    if mode == "Deletion":
        return StorageView(state="Skipped", canary=CANARY), []
    resolved = ws.status.target.resolved_namespace or ws.desired_namespace
    namespaces = [resolved]
    if mode == "Retarget":
        namespaces.append(ws.desired_namespace)  # new work lands there once the drain clears
    rows: list[StorageClaim] = []
    findings: list[Finding] = []
    for ns in namespaces:
        for name in sorted(set(claims)):
            row, f = _check_claim(ctx, ns, name)
            rows.append(row)
            findings += f
    if any(r.state == "Unknown" for r in rows):
        state = "Unknown"
    elif all(r.state == "Ready" for r in rows) and not any(r.flex_nodes for r in rows):
        state = "Ready"
    else:
        state = "NotReady"
    if state == "Ready":
        findings.append(
            finding(
                Severity.INFO,
                "STORAGE-CANARY",
                "TauWorkspace",
                ws.name,
                ws.namespace or ctx.config.system_namespace,
                f"claims {', '.join(sorted(set(claims)))} are Bound and their CSI drivers registered on every "
                f"eligible node; write access is not yet proven",
                CANARY,
            )
        )
    return StorageView(state=state, claims=rows, canary=CANARY), findings
