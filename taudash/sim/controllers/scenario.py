"""The knobs of the simulated world and the small scenario language that scripts it.

A scenario is YAML (or the same data in Python)::

    knobs:                      # any Knobs field, camelCase or snake_case
      arrivalsPerHour: 20
      nodeFlapsPerHour: 0
    events:                     # `at`: seconds, or "90s", "10m", "1h30m" of simulated time
      - {at: 10m, notReady: aks-h100-27604139-vmss000003}
      - {at: 25m, ready: aks-h100-27604139-vmss000003}
      - {at: 12m, gpuFault: aks-h100-27604139-vmss000004=XIDError79}
      - {at: 15m, workerInactive: eastus-2}
      - {at: 20m, delete: {kind: RayService, namespace: eval, name: llm}}
      - {at: 30m, patch: {kind: ClusterQueue, name: tau-ws-train, patch: {spec: {stopPolicy: HoldAndDrain}}}}

Actions: notReady, ready, cordon, uncordon, removeNode (a node name); gpuFault, gpuRecover ({node,
condition} or "NODE=CONDITION": one of TauGrid's GPU health conditions raised True or published False);
workerInactive, workerActive (a MultiKueueCluster name); delete {kind, name, namespace}; patch {kind,
name, namespace, patch} (a merge patch of the object), status {kind, name, namespace, status} (a merge
patch of its status).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

ACTIONS = (
    "notReady",
    "ready",
    "cordon",
    "uncordon",
    "removeNode",
    "gpuFault",
    "gpuRecover",
    "workerInactive",
    "workerActive",
    "delete",
    "patch",
    "status",
)
_DURATION = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?\s*$")


class ScenarioError(ValueError):
    """A scenario that cannot be used; the message names the entry."""


@dataclass(frozen=True)
class Knobs:
    """Rates are per simulated hour; durations in simulated minutes as (low, high) ranges."""

    arrivals_per_hour: float = 12.0  # new Jobs and RayJobs across the workspaces
    rayjob_fraction: float = 0.2
    job_minutes: tuple[float, float] = (5.0, 90.0)
    rayjob_minutes: tuple[float, float] = (10.0, 60.0)
    failure_probability: float = 0.05  # a Job or RayJob ends Failed
    retry_probability: float = 0.1  # a RayJob driver fails and the deployment is retried
    finished_ttl_minutes: float = 120.0  # generated sources are deleted this long after finishing
    node_flaps_per_hour: float = 0.01  # per GPU node: NotReady for flap_minutes
    flap_minutes: tuple[float, float] = (2.0, 10.0)
    cordons_per_hour: float = 0.005  # per GPU node: cordoned for cordon_minutes
    cordon_minutes: tuple[float, float] = (15.0, 60.0)
    gpu_faults_per_hour: float = 0.01  # per GPU node: a GPU health condition raised for gpu_fault_minutes
    gpu_fault_minutes: tuple[float, float] = (20.0, 180.0)
    resync_minutes: float = 5.0  # the TauGrid controller's periodic reconcile

    def with_overrides(self, values: dict[str, Any]) -> Knobs:
        names = {f.name: f for f in fields(self)}
        out: dict[str, Any] = {}
        for key, value in values.items():
            name = re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
            if name not in names:
                raise ScenarioError(f"unknown knob {key!r}; known: {', '.join(sorted(names))}")
            default = getattr(self, name)
            try:
                out[name] = tuple(float(v) for v in value) if isinstance(default, tuple) else float(value)
            except (TypeError, ValueError):
                raise ScenarioError(f"knob {key}: {value!r} is not a number") from None
            if isinstance(default, tuple) and len(out[name]) != 2:
                raise ScenarioError(f"knob {key}: expected [low, high]")
        return replace(self, **out)


@dataclass(frozen=True)
class Event:
    at: float  # simulated seconds after the start
    action: str
    target: Any


@dataclass(frozen=True)
class Scenario:
    knobs: Knobs = field(default_factory=Knobs)
    events: tuple[Event, ...] = ()

    @classmethod
    def parse(cls, data: dict[str, Any] | None, where: str = "scenario") -> Scenario:
        if not data:
            return cls()
        if not isinstance(data, dict):
            raise ScenarioError(f"{where}: expected a mapping with `knobs` and/or `events`")
        unknown = set(data) - {"knobs", "events"}
        if unknown:
            raise ScenarioError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        knobs = Knobs().with_overrides(data.get("knobs") or {})
        events = []
        for i, entry in enumerate(data.get("events") or []):
            if not isinstance(entry, dict) or "at" not in entry:
                raise ScenarioError(f"{where}: events[{i}] needs `at` and one action")
            actions = [k for k in entry if k != "at"]
            if len(actions) != 1 or actions[0] not in ACTIONS:
                raise ScenarioError(f"{where}: events[{i}] needs exactly one of {', '.join(ACTIONS)}")
            action = actions[0]
            target = entry[action]
            if action in ("delete", "patch", "status") and not (
                isinstance(target, dict) and target.get("kind") and target.get("name")
            ):
                raise ScenarioError(f"{where}: events[{i}].{action} needs kind and name")
            if action in ("gpuFault", "gpuRecover"):
                target = gpu_target(target, f"{where}: events[{i}].{action}")
            events.append(Event(duration(entry["at"], f"{where}: events[{i}].at"), action, target))
        return cls(knobs, tuple(sorted(events, key=lambda e: e.at)))

    @classmethod
    def load(cls, path: str | Path) -> Scenario:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ScenarioError(f"{path}: {exc.strerror or exc}") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ScenarioError(f"{path}: invalid YAML: {str(exc).splitlines()[0]}") from None
        return cls.parse(data, str(path))


def gpu_target(target: Any, where: str) -> dict[str, str]:
    """A GPU fault's target: {node, condition}, or the `NODE=CONDITION` spelling of `sim serve --node-fault`."""
    from taudash.sim.health import CONDITION_TYPES

    if isinstance(target, str) and "=" in target:
        node, _, ctype = target.partition("=")
        target = {"node": node.strip(), "condition": ctype.strip()}
    if not (isinstance(target, dict) and target.get("node") and target.get("condition")):
        raise ScenarioError(f"{where} needs node and condition (or NODE=CONDITION)")
    if target["condition"] not in CONDITION_TYPES:
        raise ScenarioError(f"{where}: unknown GPU health condition {target['condition']!r} (one of "
                            f"{', '.join(CONDITION_TYPES)})")
    return {"node": str(target["node"]), "condition": str(target["condition"])}


def duration(value: Any, where: str = "duration") -> float:
    """Seconds from a number or "1h30m", "10m", "90s"."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    m = _DURATION.match(str(value)) if isinstance(value, str) and value.strip() else None
    if not m or not any(m.groups()):
        raise ScenarioError(f"{where}: {value!r} is not a duration (seconds, or like 90s, 10m, 1h30m)")
    h, mi, s = (float(g) if g else 0.0 for g in m.groups())
    return h * 3600 + mi * 60 + s
