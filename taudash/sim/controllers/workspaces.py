"""The TauGrid controller's workspace reconcile (TauGrid's workspace_controller.go; the TauWorkspace
reference and the drain fix of TauGrid v0.4.5).

Namespace labels, the workspace ClusterQueue and LocalQueue, researcher RBAC, the workload
identity, conditions and phase; and the drain: while `derive_drain` says Blocked or Unknown the
old namespace keeps its routes and unchanged identity; once Clear, a retarget strips the old
namespace and moves `status.target.resolvedNamespace`, a deletion cleans up and drops the
finalizer. What must be revoked, kept or bound comes from `derive_identity`.
"""

from __future__ import annotations

from taudash.engine.model import TauCluster, TauTeam, TauWorkspace
from taudash.engine.model.base import Condition
from taudash.engine.model.names import DEFAULT_LOCAL_QUEUE_LABEL as DEFAULT_LQ_LABEL
from taudash.engine.model.names import LOCAL_QUEUE_LABEL as LQ_LABEL
from taudash.engine.model.names import RESOURCE_IN_USE_FINALIZER, TEAM_LABEL
from taudash.engine.model.names import RESULT_SCOPE_LABEL as RESULT_SCOPE
from taudash.engine.model.names import WORKSPACE_CLEANUP_FINALIZER as FINALIZER
from taudash.engine.model.names import WORKSPACE_LABEL as WS_LABEL
from taudash.engine.rules.drain import CLEANED_LABELS, derive_drain
from taudash.engine.rules.identity import CLIENT_ID, RESEARCHER_ROLE, derive_identity
from taudash.engine.rules.pool import PoolView
from taudash.engine.rules.workspaces import expected_phase
from taudash.sim.controllers.base import (
    MANAGED_BY,
    OWNER_UID,
    TAU_MANAGER,
    Obj,
    condition,
    labels,
    meta,
    with_condition,
)

PSA = {
    "pod-security.kubernetes.io/enforce": "baseline",
    "pod-security.kubernetes.io/audit": "restricted",
    "pod-security.kubernetes.io/warn": "restricted",
}
KQ = "kueue.x-k8s.io/v1beta2"


def reserved_namespace(ns: str, system_ns: str) -> bool:
    return ns in (system_ns, "tau-platform", "default") or ns.startswith("kube-")


class WorkspaceReconciler:
    """One pass over one TauWorkspace. `ctl` is the TauGrid controller (mirror, writer, context)."""

    def __init__(self, ctl, ws: TauWorkspace, pool: PoolView | None) -> None:
        self.ctl, self.ws, self.pool = ctl, ws, pool
        self.m, self.w = ctl.m, ctl.w
        self.raw = self.m.get("TauWorkspace", ws.name, ws.namespace)
        self.sys_ns = ctl.system_namespace
        tc = ctl.store.get(TauCluster, "cluster")
        self.queue = ws.spec.queue or (tc.spec.workspace_defaults.default_queue if tc else "") or "jobqueue"
        self.team = ws.team
        self.cq_name = f"tau-ws-{ws.name}" if self.team else self.queue
        self.desired = ws.desired_namespace
        self.conds: dict[str, tuple[str, str, str]] = {}

    def owned(self, obj: Obj) -> bool:
        owner = (meta(obj).get("annotations") or {}).get(OWNER_UID)
        return labels(obj).get(WS_LABEL) == self.ws.name and (not owner or owner == self.ws.uid)

    def stamp_labels(self) -> dict[str, str]:
        out = {MANAGED_BY: TAU_MANAGER, WS_LABEL: self.ws.name}
        if self.team:
            out[TEAM_LABEL] = self.team
        return out

    # --- entry ---------------------------------------------------------------------------------------
    def run(self) -> None:
        ws = self.ws
        if self.raw is None:
            return
        drain, _ = derive_drain(self.ctl.ctx, ws)
        identity, _ = derive_identity(self.ctl.ctx, ws, drain)
        if ws.deleting:
            return self._deletion(drain, identity)
        if FINALIZER not in ws.metadata.finalizers:
            self.w.patch(
                "TauWorkspace",
                ws.name,
                ws.namespace,
                {"metadata": {"finalizers": [*ws.metadata.finalizers, FINALIZER]}},
            )
        ns_ok = self._namespace()
        q_ok, cq_uid = self._queues() if ns_ok else (False, "")
        self._revoke(identity)
        rbac_ok = self._rbac(identity, ns_ok)
        self._identity(identity, ns_ok)
        resolved = ws.status.target.resolved_namespace
        if drain.mode == "Retarget" and drain.state == "Clear" and ns_ok and rbac_ok and q_ok:
            self._strip(drain.old_namespace or "")
            resolved = self.desired
        elif not resolved and ns_ok:
            resolved = self.desired
        self._publish(resolved, cq_uid if q_ok else ws.status.queue.cluster_queue_uid)

    # --- namespace -------------------------------------------------------------------------------------
    def _namespace(self) -> bool:
        ns, ws = self.desired, self.ws
        if reserved_namespace(ns, self.sys_ns):
            self.conds["DriftDetected"] = ("True", "NamespaceReconcileFailed", f'namespace "{ns}" is reserved')
            return False
        obj = self.m.get("Namespace", ns)
        want = {**self.stamp_labels(), LQ_LABEL: self.queue, DEFAULT_LQ_LABEL: self.queue}
        ann = {OWNER_UID: ws.uid}
        output_root = ((self.raw.get("spec") or {}).get("defaults") or {}).get("outputRoot")
        if output_root:
            ann[RESULT_SCOPE] = output_root
        if obj is None:
            if not ws.spec.target.create_namespace:
                self.conds["DriftDetected"] = (
                    "True",
                    "NamespaceReconcileFailed",
                    f'namespace "{ns}" does not exist and target.createNamespace is false',
                )
                return False
            self.w.create(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "status": {"phase": "Active"},
                    "metadata": {
                        "name": ns,
                        "labels": {"kubernetes.io/metadata.name": ns, **PSA, **want},
                        "annotations": ann,
                    },
                }
            )
            return True
        other = labels(obj).get(WS_LABEL)
        if other and other != ws.name:
            rival = self.m.get("TauWorkspace", other, ws.namespace)
            if rival is not None and not meta(rival).get("deletionTimestamp"):
                self.conds["DriftDetected"] = (
                    "True",
                    "NamespaceReconcileFailed",
                    f'namespace "{ns}" is owned by TauWorkspace "{other}"',
                )
                return False
        have_l, have_a = labels(obj), meta(obj).get("annotations") or {}
        if any(have_l.get(k) != v for k, v in want.items()) or any(have_a.get(k) != v for k, v in ann.items()):
            self.w.patch("Namespace", ns, None, {"metadata": {"labels": want, "annotations": ann}})
        return True

    # --- queues -----------------------------------------------------------------------------------------
    def _queues(self) -> tuple[bool, str]:
        """(QueueReady, the backing ClusterQueue's UID)."""
        if self.team and self.ctl.store.get(TauTeam, self.team, self.ws.namespace) is None:
            self.conds["QueueReady"] = ("False", "QueueNotReady", f'team "{self.team}" does not exist')
            return False, ""
        cq = self.m.get("ClusterQueue", self.cq_name)
        if self.team:
            cq = self._team_queue(cq)
            if cq is False:
                return False, ""
        if cq is None:
            self.conds["QueueReady"] = (
                "False",
                "QueueNotReady",
                f'backing ClusterQueue "{self.cq_name}" does not exist',
            )
            return False, ""
        lq = self.m.get("LocalQueue", self.queue, self.desired)
        if lq is None:
            self.w.create(
                {
                    "apiVersion": KQ,
                    "kind": "LocalQueue",
                    "metadata": {
                        "name": self.queue,
                        "namespace": self.desired,
                        "labels": self.stamp_labels(),
                        "annotations": {OWNER_UID: self.ws.uid},
                    },
                    "spec": {"clusterQueue": self.cq_name, "stopPolicy": "None"},
                }
            )
        elif (lq.get("spec") or {}).get("clusterQueue") != self.cq_name:
            where = (lq.get("spec") or {}).get("clusterQueue")
            self.conds["QueueReady"] = (
                "False",
                "QueueNotReady",
                f'LocalQueue "{self.queue}" targets ClusterQueue "{where}", but team-backed '
                f'TauWorkspace "{self.ws.name}" requires "{self.cq_name}"; update or remove the '
                "LocalQueue before migration",
            )
            return False, meta(cq).get("uid", "")
        active = condition(cq, "Active")
        # A stop is the operator's decision (a drain), not a reconcile failure.
        if active is not None and active.get("status") == "False" and active.get("reason") != "Stopped":
            self.conds["QueueReady"] = (
                "False",
                "QueueNotReady",
                f'backing ClusterQueue "{self.cq_name}" is not ready: Active=False '
                f"{active.get('reason', '')}: {active.get('message', '')}",
            )
            return False, meta(cq).get("uid", "")
        self.conds["QueueReady"] = ("True", "QueueReady", "workspace queue and backing ClusterQueue are readable")
        return True, meta(cq).get("uid", "")

    def _team_queue(self, cq: Obj | None):
        """Create or correct `tau-ws-<ws>` (cohort, selector, zero nominal); False when it is someone else's."""
        groups = self.ctl.workspace_groups(self.ws)
        spec = {
            "cohortName": self.ctl.team_cohort(self.team),
            "namespaceSelector": {"matchLabels": {WS_LABEL: self.ws.name}},
        }
        if groups is not None:
            spec["resourceGroups"] = groups
        if cq is None:
            return self.w.create(
                {
                    "apiVersion": KQ,
                    "kind": "ClusterQueue",
                    "metadata": {
                        "name": self.cq_name,
                        "labels": self.stamp_labels(),
                        "annotations": {OWNER_UID: self.ws.uid},
                        "finalizers": [RESOURCE_IN_USE_FINALIZER],
                    },
                    "spec": {
                        **spec,
                        "queueingStrategy": "BestEffortFIFO",
                        "stopPolicy": "None",
                        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
                        "preemption": {
                            "withinClusterQueue": "LowerPriority",
                            "reclaimWithinCohort": "Never",
                            "borrowWithinCohort": {"policy": "Never"},
                        },
                    },
                }
            )
        if labels(cq).get(MANAGED_BY) != TAU_MANAGER:
            self.conds["QueueReady"] = (
                "False",
                "QueueNotReady",
                f'ClusterQueue "{self.cq_name}" exists but is not managed by {TAU_MANAGER}; '
                "external queues are never adopted",
            )
            return False
        have = cq.get("spec") or {}
        # stopPolicy, queueingStrategy and admission checks stay as the operator set them.
        drift = {k: v for k, v in spec.items() if not self.ctl.same_spec(have.get(k), v)}
        if drift:
            self.w.patch("ClusterQueue", self.cq_name, None, {"spec": drift})
        return cq

    # --- RBAC and identity ----------------------------------------------------------------------------
    def _revoke(self, identity) -> None:
        """Obsolete accounts go now, even during a drain; owned researcher bindings that must not exist go too."""
        for ref in identity.obsolete:
            ns, name = ref.split("/", 1)
            self.w.delete("ServiceAccount", name, ns)
        for b in identity.bindings:
            if b.owned and b.status in ("NotRevoked", "Unexpected"):
                self.w.delete("RoleBinding", b.name, b.namespace)

    def _rbac(self, identity, ns_ok: bool) -> bool:
        ws = self.ws
        if ws.spec.authorization.mode == "cluster-wide":
            self.conds["RBACReady"] = (
                "True",
                "ExistingClusterAuthorization",
                "workspace relies on pre-existing cluster authorization; the controller grants no researcher access",
            )
            return True
        subj = ws.spec.kubernetes_subject
        if subj is None or not subj.name:
            self.conds["RBACReady"] = (
                "False",
                "AuthorizationNotReady",
                "spec.kubernetesSubject is required for workspace-rbac",
            )
            return False
        subject = {"kind": subj.kind, "name": subj.name}
        if subj.kind != "ServiceAccount":
            subject["apiGroup"] = "rbac.authorization.k8s.io"
        for ns in identity.expected_bindings:
            if ns in identity.missing_bindings and self.m.get("Namespace", ns) is not None:
                self.w.create(
                    {
                        "apiVersion": "rbac.authorization.k8s.io/v1",
                        "kind": "RoleBinding",
                        "metadata": {
                            "name": RESEARCHER_ROLE,
                            "namespace": ns,
                            "labels": self.stamp_labels(),
                            "annotations": {OWNER_UID: ws.uid},
                        },
                        "roleRef": {
                            "apiGroup": "rbac.authorization.k8s.io",
                            "kind": "ClusterRole",
                            "name": RESEARCHER_ROLE,
                        },
                        "subjects": [subject],
                    }
                )
        reader = f"tau-workspace-reader-{ws.name}"
        if self.m.get("RoleBinding", reader, self.sys_ns) is None:
            self.w.create(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "RoleBinding",
                    "metadata": {
                        "name": reader,
                        "namespace": self.sys_ns,
                        "labels": self.stamp_labels(),
                        "annotations": {OWNER_UID: ws.uid},
                    },
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": reader},
                    "subjects": [subject],
                }
            )
        if not ns_ok:
            self.conds["RBACReady"] = ("False", "AuthorizationNotReady", f'namespace "{self.desired}" is not ready')
            return False
        if identity.revocation_confirmed is False:
            self.conds["RBACReady"] = (
                "False",
                "AuthorizationNotReady",
                "researcher access is withheld until obsolete workload identity is revoked: "
                + ", ".join(identity.obsolete),
            )
            return False
        self.conds["RBACReady"] = (
            "True",
            "RoleBindingReady",
            f"researcher RoleBinding {RESEARCHER_ROLE} is reconciled",
        )
        return True

    def _identity(self, identity, ns_ok: bool) -> None:
        wi = self.ws.spec.workload_identity
        if wi is None or not wi.service_account_name:
            self.conds["WorkloadIdentityReady"] = ("Unknown", "NotConfigured", "spec.workloadIdentity is not set")
            return
        if not ns_ok:
            self.conds["WorkloadIdentityReady"] = (
                "False",
                "ServiceAccountNotReady",
                f'namespace "{self.desired}" is not ready',
            )
            return
        sa = self.m.get("ServiceAccount", wi.service_account_name, self.desired)
        ref = f'ServiceAccount "{self.desired}/{wi.service_account_name}"'
        if sa is None:
            self.w.create(
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {
                        "name": wi.service_account_name,
                        "namespace": self.desired,
                        "labels": {**self.stamp_labels(), "azure.workload.identity/use": "true"},
                        "annotations": {CLIENT_ID: wi.client_id, OWNER_UID: self.ws.uid},
                    },
                }
            )
            self.conds["WorkloadIdentityReady"] = (
                "True",
                "ServiceAccountReady",
                f"{ref} carries the configured client id",
            )
            return
        have = (meta(sa).get("annotations") or {}).get(CLIENT_ID, "")
        if not self.owned(sa):
            self.conds["WorkloadIdentityReady"] = (
                "False",
                "ServiceAccountNotReady",
                f'{ref} client id mismatch: has "{have}", want "{wi.client_id}" (not owned by this workspace)'
                if have != wi.client_id
                else f"{ref} is not owned by this workspace",
            )
            return
        if have != wi.client_id:
            self.conds["WorkloadIdentityReady"] = (
                "False",
                "ServiceAccountNotReady",
                f"{ref} carries an obsolete client id; revoking it",
            )
            return
        self.conds["WorkloadIdentityReady"] = ("True", "ServiceAccountReady", f"{ref} carries the configured client id")

    # --- drain completion ---------------------------------------------------------------------------
    def _cleanup_namespace(self, ns: str) -> None:
        """Remove what the workspace put in `ns` (RBAC, accounts, LocalQueues) and strip its labels."""
        if not ns or ns == self.sys_ns:
            return
        for kind in ("RoleBinding", "ServiceAccount", "LocalQueue"):
            for obj in self.m.list(kind, ns):
                if self.owned(obj):
                    self.w.delete(kind, meta(obj)["name"], ns)
        obj = self.m.get("Namespace", ns)
        if obj is None or reserved_namespace(ns, self.sys_ns) or labels(obj).get(WS_LABEL) != self.ws.name:
            return
        strip = {k: None for k in CLEANED_LABELS if k in labels(obj)}
        ann = {k: None for k in (RESULT_SCOPE, OWNER_UID) if k in (meta(obj).get("annotations") or {})}
        if strip or ann:
            self.w.patch("Namespace", ns, None, {"metadata": {"labels": strip or None, "annotations": ann or None}})

    def _strip(self, old: str) -> None:
        if old and old != self.desired:
            self._cleanup_namespace(old)

    def _deletion(self, drain, identity) -> None:
        ws = self.ws
        # Researcher access goes first, before any wait.
        for b in identity.bindings:
            if b.owned:
                self.w.delete("RoleBinding", b.name, b.namespace)
        for ref in identity.obsolete:
            ns, name = ref.split("/", 1)
            self.w.delete("ServiceAccount", name, ns)
        if drain.state in ("Blocked", "Unknown"):
            return
        for ns in sorted({ws.status.target.resolved_namespace, self.desired} - {""}):
            self._cleanup_namespace(ns)
        for lq in self.m.list("LocalQueue"):
            if self.owned(lq):
                self.w.delete("LocalQueue", meta(lq)["name"], meta(lq)["namespace"])
        cq = self.m.get("ClusterQueue", f"tau-ws-{ws.name}") if self.team else None
        if cq is not None and self.owned(cq) and labels(cq).get(MANAGED_BY) == TAU_MANAGER:
            recorded = ws.status.queue.cluster_queue_uid
            if not recorded or recorded == meta(cq).get("uid"):  # a replaced queue is never deleted
                self.w.delete("ClusterQueue", meta(cq)["name"])
        self.w.delete("RoleBinding", f"tau-workspace-reader-{ws.name}", self.sys_ns)
        self.w.patch(
            "TauWorkspace",
            ws.name,
            ws.namespace,
            {"metadata": {"finalizers": [f for f in ws.metadata.finalizers if f != FINALIZER] or None}},
        )

    # --- status --------------------------------------------------------------------------------------
    def _publish(self, resolved: str, cq_uid: str) -> None:
        ws, now = self.ws, self.ctl.stamp
        self.conds.setdefault("DriftDetected", ("False", "NoDrift", "no drift observed"))
        for ctype in ("RBACReady", "QueueReady"):
            self.conds.setdefault(ctype, ("False", "QueueUnresolved", "the workspace queue could not be resolved"))
        st = self.raw.get("status") or {}
        conds = list(st.get("conditions") or ())
        for ctype in ("RBACReady", "QueueReady", "WorkloadIdentityReady", "DriftDetected"):
            if ctype in self.conds:
                conds = with_condition(
                    conds, ctype, *self.conds[ctype], now, ws.metadata.generation, keep_time_on_status=False
                )
        phase = expected_phase([Condition.model_validate(c) for c in conds])
        queue = {"localQueue": self.queue, "clusterQueue": self.cq_name}
        if cq_uid:
            queue["clusterQueueUID"] = cq_uid
        desired = {
            "phase": phase,
            "observedGeneration": ws.metadata.generation,
            "conditions": conds,
            "target": {"resolvedNamespace": resolved},
            "queue": queue,
        }
        if any(st.get(k) != v for k, v in desired.items()):
            self.w.status("TauWorkspace", ws.name, ws.namespace, desired)
