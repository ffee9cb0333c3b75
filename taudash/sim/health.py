"""GPU health as TauGrid's metrics collector publishes it: Node conditions (facts: the shared reference on
GPU health and topology). The 20 default condition types, each with what UNO does by default (drain or
taint), and the required exporter's availability condition; `True` means the problem is present, `False`
that it was checked and is absent. The collector patches only the condition that changed and never
deletes one (Kubernetes cannot), so a cleared fault stays as `False`.

The reasons and messages are the simulator's own wording (the reference records none; docs/decisions.md):
`True` carries the type as its reason and a one-line description of the fault, `False` the reason
`NoProblem`.
"""

from __future__ import annotations

from taudash.engine.model.names import DCGM_EXPORTER_UNAVAILABLE, GPU_DRAIN_CONDITIONS, INFINIBAND_LABEL
from taudash.sim.controllers.base import Obj

ARCH = "kubernetes.io/arch"

EXPORTER_UNAVAILABLE = DCGM_EXPORTER_UNAVAILABLE  # the types are the engine's (engine/model/names.py)

# type -> what the fault is (the type names and their classes are the engine's: engine/model/names.py)
_DESCRIPTIONS: dict[str, str] = {
    "GPUECCDoubleRetired": "a GPU retired pages after double-bit ECC errors",
    "GPUECCDoubleVolatile": "volatile double-bit ECC errors on a GPU",
    "GPUNVLinkCRCFlitErrors": "NVLink CRC flit errors above the threshold",
    "GPUNVLinkCRCDataErrors": "NVLink CRC data errors above the threshold",
    "GPUNVLinkReplayErrors": "NVLink replay errors above the threshold",
    "XIDError48": "XID 48: double-bit ECC error",
    "XIDError63": "XID 63: ECC page retirement or row remapping event",
    "XIDError64": "XID 64: ECC page retirement or row remapper failure",
    "XIDError79": "XID 79: a GPU has fallen off the bus",
    "XIDError94": "XID 94: contained ECC error",
    "XIDError95": "XID 95: uncontained ECC error",
    "GPUThermalViolation": "a GPU is throttled by thermal limits",
    "GPUPowerViolation": "a GPU is throttled by power limits",
    "IBLinkDown": "an InfiniBand link is down",
    "IBSymbolError": "InfiniBand symbol errors above the threshold",
    "GPUECCSingleVolatileRate": "single-bit ECC error rate above the threshold",
    "GPUECCSingleRetired": "a GPU retired pages after single-bit ECC errors",
    "GPUPCIeReplayErrors": "PCIe replay errors above the threshold",
    "GraceCPUECCUncorrectable": "uncorrectable ECC error on a Grace CPU",
    "GraceCPUECCCorrectableRate": "correctable ECC error rate on a Grace CPU above the threshold",
}
# type -> (UNO's default action, what the fault is)
GPU_CONDITIONS: dict[str, tuple[str, str]] = {
    t: ("drain" if t in GPU_DRAIN_CONDITIONS else "taint", d) for t, d in _DESCRIPTIONS.items()}
# Every type the simulator raises: the 20 and the required exporter's availability.
CONDITION_TYPES: tuple[str, ...] = (*GPU_CONDITIONS, EXPORTER_UNAVAILABLE)
DRAIN = frozenset(t for t, (action, _) in GPU_CONDITIONS.items() if action == "drain")
TAINT = frozenset(t for t, (action, _) in GPU_CONDITIONS.items() if action == "taint")


def applicable(node: Obj) -> tuple[str, ...]:
    """The condition types a node's collector evaluates: InfiniBand rules on InfiniBand nodes only, Grace
    CPU rules on Arm (Grace) hosts only."""
    lbl = (node.get("metadata") or {}).get("labels") or {}
    ib = lbl.get(INFINIBAND_LABEL) == "true"
    grace = lbl.get(ARCH) == "arm64"
    return tuple(t for t in CONDITION_TYPES
                 if (ib or not t.startswith("IB")) and (grace or not t.startswith("GraceCPU")))


def describe(ctype: str) -> str:
    if ctype == EXPORTER_UNAVAILABLE:
        return "the required DCGM exporter has not answered a scrape for more than 2 minutes"
    return GPU_CONDITIONS.get(ctype, ("", ctype))[1]


def health_condition(ctype: str, present: bool, now: str, old: Obj | None = None) -> Obj:
    """The condition `ctype` as the collector writes it now; the transition time moves only with the status."""
    status = "True" if present else "False"
    since = (old or {}).get("lastTransitionTime") if (old or {}).get("status") == status else None
    return {
        "type": ctype,
        "status": status,
        "reason": ctype if present else "NoProblem",
        "message": describe(ctype) if present else f"{ctype}: checked, no problem",
        "lastHeartbeatTime": now,
        "lastTransitionTime": since or now,
    }
