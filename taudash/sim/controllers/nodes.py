"""Nodes and the scenario: occasional NotReady flaps and cordons of GPU nodes, and scripted events.

Each GPU node draws its next flap and its next cordon from exponential gaps (per-node rates from
the knobs, default rare), so the schedule does not depend on the step size. A flapping node is
NotReady (kubelet silent, `unreachable` taint) for `flap_minutes`; a cordoned one unschedulable for
`cordon_minutes`. Only what this controller did is undone: nodes that were NotReady or cordoned in
the seed stay so unless the scenario says otherwise.
"""

from __future__ import annotations

from taudash.engine.model.names import GPU_CLASS_LABEL as GPU_CLASS
from taudash.sim.controllers.base import Controller, Obj, condition, labels, meta, with_condition
from taudash.sim.controllers.scenario import Event

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

    def reconcile(self, events) -> None:
        for ev in events:
            if ev.type == "DELETED" and ev.resource.kind == "Node":
                for what in ("flap", "cordon"):
                    self._next.pop((ev.name, what), None)
                    self._undo.pop((ev.name, what), None)
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
