"""Nodes and the scenario: occasional NotReady flaps, cordons and GPU faults of GPU nodes, and scripted events.

Each GPU node draws its next flap, cordon and GPU fault from exponential gaps (per-node rates from
the knobs, default rare), so the schedule does not depend on the step size. A flapping node is
NotReady (kubelet silent, `unreachable` taint) for `flap_minutes`; a cordoned one unschedulable for
`cordon_minutes`; a GPU fault is one of TauGrid's GPU health Node conditions (health.py) raised True for
`gpu_fault_minutes`, then published False (Kubernetes keeps a condition once written). Only what this
controller did is undone: nodes that were NotReady, cordoned or faulty in the seed, and faults the
scenario raises (`sim serve --node-fault`), stay so unless the scenario says otherwise.
"""

from __future__ import annotations

from taudash.engine.model.names import GPU_CLASS_LABEL as GPU_CLASS
from taudash.sim.controllers.base import Controller, Obj, condition, labels, meta, with_condition
from taudash.sim.controllers.scenario import Event
from taudash.sim.health import applicable, health_condition

UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}
UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class NodesController(Controller):
    name = "nodes"

    def __init__(self, world) -> None:
        super().__init__(world)
        self.rng = world.rng("nodes")
        self._events = list(world.scenario.events)
        self._next: dict[tuple[str, str], float] = {}  # (node, "flap"|"cordon") -> when it next happens
        self._undo: dict[tuple[str, str], float] = {}  # (node, "flap"|"cordon") -> when it ends
        # GPU faults draw from their own stream, so adding them moved no flap or cordon of an older seed.
        self.gpu_rng = world.rng("gpu-health")
        self._next_fault: dict[str, float] = {}  # node -> when its next GPU fault is raised
        self._faults: dict[str, tuple[str, float]] = {}  # node -> (condition type, when it clears)

    def reconcile(self, events) -> None:
        for ev in events:
            if ev.type == "DELETED" and ev.resource.kind == "Node":
                for what in ("flap", "cordon"):
                    self._next.pop((ev.name, what), None)
                    self._undo.pop((ev.name, what), None)
                self._next_fault.pop(ev.name, None)
                self._faults.pop(ev.name, None)
        clock = self.world.clock
        while self._events and self._events[0].at <= clock.elapsed:
            self._act(self._events.pop(0))
        now = clock.now()
        knobs = self.world.knobs
        rates = {"flap": knobs.node_flaps_per_hour / 3600.0, "cordon": knobs.cordons_per_hour / 3600.0}
        spans = {"flap": knobs.flap_minutes, "cordon": knobs.cordon_minutes}
        for node in self.m.list("Node"):
            name = meta(node)["name"]
            if not labels(node).get(GPU_CLASS):
                continue
            for what, rate in rates.items():
                key = (name, what)
                if key in self._undo:
                    if now >= self._undo[key]:
                        del self._undo[key]
                        self._ready(name) if what == "flap" else self._cordon(name, False)
                    continue
                if rate <= 0:
                    continue
                if key not in self._next:
                    self._next[key] = now + self.rng.expovariate(rate)
                if now >= self._next[key]:
                    del self._next[key]
                    self._undo[key] = now + 60.0 * self.rng.uniform(*spans[what])
                    self._not_ready(name) if what == "flap" else self._cordon(name, True)
            self._gpu_fault(name, now, knobs.gpu_faults_per_hour / 3600.0)

    def _gpu_fault(self, name: str, now: float, rate: float) -> None:
        """Raise a drawn GPU health condition on a node now and then, and clear it after a drawn time."""
        if name in self._faults:
            ctype, until = self._faults[name]
            if now >= until:
                del self._faults[name]
                self._health(name, ctype, False)
            return
        if rate <= 0:
            return
        if name not in self._next_fault:
            self._next_fault[name] = now + self.gpu_rng.expovariate(rate)
        if now >= self._next_fault[name]:
            del self._next_fault[name]
            node = self._node(name)
            kinds = applicable(node) if node is not None else ()
            ctype = kinds[self.gpu_rng.randrange(len(kinds))] if kinds else ""
            if node is None or not ctype or (condition(node, ctype) or {}).get("status") == "True":
                return  # already raised (by the seed or the scenario): not this controller's to clear
            self._faults[name] = (ctype, now + 60.0 * self.gpu_rng.uniform(*self.world.knobs.gpu_fault_minutes))
            self._health(name, ctype, True)

    def _health(self, name: str, ctype: str, present: bool) -> None:
        """Publish one GPU health condition as TauGrid's metrics collector does (only that condition)."""
        node = self._node(name)
        if node is None:
            return
        conds = list((node.get("status") or {}).get("conditions") or ())
        new = health_condition(ctype, present, self.stamp, condition(node, ctype))
        if condition(node, ctype) == new:
            return
        conds = [c for c in conds if c.get("type") != ctype] + [new]
        self.w.status("Node", name, None, {"conditions": conds})

    # --- node changes ------------------------------------------------------------------------------
    def _node(self, name: str) -> Obj | None:
        return self.m.get("Node", name)

    def _taints(self, node: Obj, taint: dict, present: bool) -> None:
        taints = [t for t in (node.get("spec") or {}).get("taints") or () if t.get("key") != taint["key"]]
        if present:
            taints.append({**taint, **({"timeAdded": self.stamp} if taint is UNREACHABLE else {})})
        if taints != list((node.get("spec") or {}).get("taints") or ()):
            self.w.patch("Node", meta(node)["name"], None, {"spec": {"taints": taints or None}})

    def _set_ready(self, name: str, ready: bool) -> None:
        node = self._node(name)
        if node is None:
            return
        now = self.stamp
        conds = []
        for c in (node.get("status") or {}).get("conditions") or ():
            if c.get("type") != "Ready":
                conds.append(c)
                continue
            same = (c.get("status") == "True") == ready
            conds.append(
                {
                    **c,
                    "status": "True" if ready else "Unknown",
                    "reason": "KubeletReady" if ready else "NodeStatusUnknown",
                    "message": "kubelet is posting ready status" if ready else "Kubelet stopped posting node status.",
                    "lastHeartbeatTime": now if ready else c.get("lastHeartbeatTime", now),
                    "lastTransitionTime": c.get("lastTransitionTime", now) if same else now,
                }
            )
        if condition(node, "Ready") is None:
            conds.append(
                {
                    "type": "Ready",
                    "status": "True" if ready else "Unknown",
                    "reason": "KubeletReady" if ready else "NodeStatusUnknown",
                    "message": "",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            )
        self.w.status("Node", name, None, {"conditions": conds})
        self._taints(self._node(name) or node, UNREACHABLE, not ready)

    def _not_ready(self, name: str) -> None:
        self._set_ready(name, False)

    def _ready(self, name: str) -> None:
        self._set_ready(name, True)

    def _cordon(self, name: str, on: bool) -> None:
        node = self._node(name)
        if node is None:
            return
        self.w.patch("Node", name, None, {"spec": {"unschedulable": True if on else None}})
        self._taints(self._node(name) or node, UNSCHEDULABLE, on)

    # --- the scenario --------------------------------------------------------------------------------
    def _act(self, ev: Event) -> None:
        t = ev.target
        if ev.action == "notReady":
            self._not_ready(str(t))
        elif ev.action == "ready":
            self._ready(str(t))
        elif ev.action in ("cordon", "uncordon"):
            self._cordon(str(t), ev.action == "cordon")
        elif ev.action == "removeNode":
            self.w.delete("Node", str(t))
        elif ev.action in ("gpuFault", "gpuRecover"):
            node, ctype = str(t["node"]), str(t["condition"])
            if self._faults.get(node, ("",))[0] == ctype:
                del self._faults[node]  # the scenario takes this fault over: it stays as the scenario leaves it
            self._health(node, ctype, ev.action == "gpuFault")
        elif ev.action in ("workerInactive", "workerActive"):
            self._worker(str(t), ev.action == "workerActive")
        elif ev.action == "delete":
            self.w.delete(t["kind"], t["name"], t.get("namespace"))
        elif ev.action == "patch":
            self.w.patch(t["kind"], t["name"], t.get("namespace"), t.get("patch") or {})
        elif ev.action == "status":
            self.w.status(t["kind"], t["name"], t.get("namespace"), t.get("status") or {})

    def _worker(self, name: str, active: bool) -> None:
        mc = self.m.get("MultiKueueCluster", name)
        if mc is None:
            return
        if active:
            state = ("True", "Active", "Connected")
        else:
            state = (
                "False",
                "ClientConnectionFailed",
                f'Get "https://{name}.hcp.example.azmk8s.io:443/api?timeout=32s": dial tcp: i/o timeout, '
                "connection attempts: 1, next connection attempt: 16s",
            )
        conds = with_condition(
            (mc.get("status") or {}).get("conditions"), "Active", *state, self.stamp, meta(mc).get("generation")
        )
        self.w.status("MultiKueueCluster", name, None, {"conditions": conds})
