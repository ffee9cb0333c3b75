"""The Kueue releases the simulator can play: one setting for what is served, stored and validated.

    SimServer(kueue_version="0.15")            # `taudash sim serve --kueue-version 0.15`
    sim.kueue.served, sim.kueue.storage        # ("v1beta2", "v1beta1"), "v1beta1"
    sim.kueue.reason("QuotaReserved", "WaitingForQuota")   # what this release writes: "Pending"

Facts (from the release tags of kubernetes-sigs/kueue and their changelogs):
- ≤ 0.14 serves and stores v1beta1 only (no v1beta2 at all).
- 0.15 stores v1beta1 and serves v1beta2 beside it, by conversion; discovery prefers v1beta2 (the
  apiserver orders a CRD group's versions kube-aware, highest first, whatever the storage).
- 0.16+ stores v1beta2; v1beta1 is still served (deprecated).
- CRD short names (`spec.names.shortNames`): 0.14-0.15 `cq`, `queue,queues,lq`, `flavor,flavors,rf`,
  `wl,kwl,kueueworkload`; 0.16 drops `wl` and adds `kueueworkloads`; 0.18 adds `ac`, `co`, `mkc`,
  `mkconf`, `topo`, `wpc` (and `prc`, a kind the simulator does not serve).
- Condition reasons: Kueue 0.19's `UnadmittedWorkloadsObservability` gate (beta, off upstream by
  default) makes QuotaReserved=False carry granular reasons (`WaitingForQuota`, `Suspended`, ...) and
  syncs `Admitted` as soon as QuotaReserved is set (Admitted=False `NoReservation` on a workload never
  admitted). Without it (and in 0.14/0.15) QuotaReserved=False says `Pending` (scheduler, requeue after
  eviction), `Inadmissible` (stopped, missing or inactive queues) or `Waiting` (waitForPodsReady), and
  Admitted is written only when a workload gains or loses admission.

The simulator's 0.19 plays the upstream default (gate off: the reasons a real 0.19.2 writes);
`kueue_gates={"UnadmittedWorkloadsObservability": True}` / `sim serve --kueue-gate ...` plays a cluster that
turned it on. CRDs: 0.14 and 0.15 validate against the v0.15.8 CRDs (0.14 serves only
their v1beta1: fields added in 0.15 are accepted there, a known difference), 0.19 against main
at ff69552 (0.20.0-devel, the same schema as 0.19 for every field the simulator writes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

KUEUE_GROUP = "kueue.x-k8s.io"
HUB = "v1beta2"  # the internal (conversion hub) version: the shape the simulated controllers read and write
OBSERVABILITY = "UnadmittedWorkloadsObservability"
EXPLICIT_STATUS = "UnadmittedWorkloadsExplicitStatus"

_SHORT_015: dict[str, tuple[str, ...]] = {
    "ClusterQueue": ("cq",),
    "LocalQueue": ("queue", "queues", "lq"),
    "ResourceFlavor": ("flavor", "flavors", "rf"),
    "Workload": ("wl", "kwl", "kueueworkload"),
}
_SHORT_019: dict[str, tuple[str, ...]] = {
    "ClusterQueue": ("cq",),
    "LocalQueue": ("queue", "queues", "lq"),
    "Cohort": ("co",),
    "ResourceFlavor": ("flavor", "flavors", "rf"),
    "Workload": ("kwl", "kueueworkload", "kueueworkloads"),
    "AdmissionCheck": ("ac",),
    "WorkloadPriorityClass": ("wpc",),
    "Topology": ("topo",),
    "MultiKueueConfig": ("mkconf",),
    "MultiKueueCluster": ("mkc",),
}

# Granular QuotaReserved=False / Admitted=False reasons → what Kueue writes without the gate.
_FALLBACK: dict[str, dict[str, str]] = {
    "QuotaReserved": {
        "NoMatchingFlavor": "Pending",
        "WaitingForQuota": "Pending",
        "ExceedsMaxQuota": "Pending",
        "TopologyPlacementFailed": "Pending",
        "WaitingForPreemptedWorkloads": "Pending",
        "PendingEvaluation": "Pending",
        "AdmissionGated": "Pending",
        "Misconfigured": "Inadmissible",
        "Suspended": "Inadmissible",
        "WaitingForPodsReady": "Waiting",
    },
    "Admitted": {
        "UnsatisfiedAdmissionChecks": "UnsatisfiedChecks",
    },
}


@dataclass(frozen=True)
class KueueVersion:
    name: str  # "0.19"
    release: str  # the release modelled, e.g. "v0.19.2"
    served: tuple[str, ...]  # kueue.x-k8s.io versions served, the preferred (discovery) first
    storage: str  # the version objects are stored in
    crd_folder: str  # under <kueue test data>/crds/: the CRDs that validate writes
    short_names: Mapping[str, tuple[str, ...]] = field(compare=False, repr=False)
    gates: frozenset[str] = frozenset()  # feature gates on

    @property
    def preferred(self) -> str:
        return self.served[0]

    def short(self, kind: str) -> tuple[str, ...]:
        return tuple(self.short_names.get(kind, ()))

    def enabled(self, gate: str) -> bool:
        return gate in self.gates

    def with_gates(self, gates: Mapping[str, bool] | None) -> KueueVersion:
        """This release with feature gates switched on or off."""
        if not gates:
            return self
        unknown = sorted(set(gates) - {OBSERVABILITY, EXPLICIT_STATUS})
        if unknown:
            raise ValueError(f"unknown Kueue feature gate(s): {', '.join(unknown)}")
        if any(gates.values()) and self.name != "0.19":
            raise ValueError(f"Kueue {self.name} has no {', '.join(g for g, on in gates.items() if on)} gate")
        on = {g for g in self.gates if gates.get(g, True)} | {g for g, v in gates.items() if v}
        return replace(self, gates=frozenset(on))

    @property
    def granular(self) -> bool:
        """QuotaReserved/Admitted=False carry the granular reasons (UnadmittedWorkloadsObservability)."""
        return OBSERVABILITY in self.gates

    def reason(self, condition: str, granular: str) -> str:
        """The reason this release writes for `condition` where Kueue 0.19 with the gate writes
        `granular` (Kueue's `UnadmittedWorkloadReasonWithFallback`). Reasons without a fallback
        (e.g. "Inadmissible", "NoReservation") are the same in every release."""
        if self.granular:
            return granular
        return _FALLBACK.get(condition, {}).get(granular, granular)

    def admitted_on_reservation_loss(self, was_admitted: bool) -> bool:
        """Whether losing (or being refused) a quota reservation writes Admitted=False: always with
        the gate (the condition follows QuotaReserved), otherwise only when it was Admitted."""
        return self.granular or was_admitted


VERSIONS: dict[str, KueueVersion] = {
    "0.14": KueueVersion("0.14", "v0.14.8", ("v1beta1",), "v1beta1", "v0.15.8", _SHORT_015),
    "0.15": KueueVersion("0.15", "v0.15.8", ("v1beta2", "v1beta1"), "v1beta1", "v0.15.8", _SHORT_015),
    "0.19": KueueVersion("0.19", "v0.19.2", ("v1beta2", "v1beta1"), "v1beta2", "main-ff69552", _SHORT_019),
}
DEFAULT_VERSION = "0.19"


def kueue_version(name: str | KueueVersion | None = None, gates: Mapping[str, bool] | None = None) -> KueueVersion:
    """The release named `name` ("0.14", "0.15", "0.19"; also "v0.15"/"0.15.8"), default 0.19."""
    if isinstance(name, KueueVersion):
        return name.with_gates(gates)
    key = (name or DEFAULT_VERSION).lstrip("v")
    if key not in VERSIONS:
        key = ".".join(key.split(".")[:2])
    if key not in VERSIONS:
        raise ValueError(f"Kueue {name}: the simulator plays {', '.join(VERSIONS)}")
    return VERSIONS[key].with_gates(gates)


__all__ = ["DEFAULT_VERSION", "HUB", "KUEUE_GROUP", "VERSIONS", "KueueVersion", "kueue_version"]
