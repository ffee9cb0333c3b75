"""The per-node capacity part (engine/rules/capacity_part.py) gives exactly what `capacity_view` gives from
scratch, after any sequence of Pod, Node, Workload, flavor and access events; and it moves only what changed."""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime

from factories import GPU, cond, demo_raw_objects, pod, validated_store, workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taudash.engine.incremental import IncrementalDeriver
from taudash.engine.model import lookup
from taudash.engine.rules.base import Finding, RuleConfig, RuleContext
from taudash.engine.rules.capacity import capacity_view
from taudash.engine.store import AccessState, Store

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
ACC = "tau.azure.com/accelerator-domain"
CAPACITY_RULES = ("CAPACITY-",)


def _upsert(store: Store, raw: dict) -> None:
    k = lookup(raw["apiVersion"], raw["kind"])
    store.upsert(k.model.model_validate(raw), raw=raw)


def _scratch(store: Store) -> tuple[dict, list[dict]]:
    view, findings = capacity_view(RuleContext(store=store, now=NOW, config=RuleConfig()), None)
    return view.to_contract(), [f.to_contract() for f in sorted(findings, key=Finding.sort_key)]


def _incremental(inc: IncrementalDeriver) -> tuple[dict, list[dict]]:
    v = inc.view(NOW)
    return v.capacity.to_contract(), [f.to_contract() for f in v.findings if f.rule.startswith(CAPACITY_RULES)]


class Events:
    """Random, well-formed events of what capacity reads (what a busy GPU cluster does)."""

    def __init__(self, store: Store, rng: random.Random) -> None:
        self.store, self.rng = store, rng
        self.made = 0

    def raw(self, kind: str) -> dict | None:
        objs = self.store.list(kind)
        if not objs:
            return None
        o = self.rng.choice(objs)
        return copy.deepcopy(self.store.raw(kind, o.name, o.namespace))

    def nodes(self) -> list[str]:
        return [n.name for n in self.store.list("Node")]

    def run(self, op: int) -> None:
        ops = [self.pod_new, self.pod_new, self.pod_move, self.pod_phase, self.pod_delete, self.node_health,
               self.node_cordon, self.node_relabel, self.node_gpus, self.node_delete, self.workload_owner,
               self.workload_state, self.gang_new, self.flavor_toleration, self.topology_levels, self.access_flip,
               self.pod_new, self.workload_state]
        ops[op % len(ops)]()

    def pod_new(self) -> None:
        self.made += 1
        owners = [w.owner for w in self.store.list("Workload") if w.owner is not None]
        owner = self.rng.choice(owners) if owners and self.rng.random() < 0.7 else None
        node = self.rng.choice([*self.nodes(), "", "no-such-node"])
        p = pod(f"p-{self.made}", self.rng.choice(["ns", "eval"]), node=node or None, gpus=self.rng.choice([0, 1, 2, 4, 8]),
                phase=self.rng.choice(["Running", "Running", "Pending", "Succeeded", "Failed"]),
                owner=(owner.kind, owner.name, owner.uid) if owner is not None else None,
                init_gpus=self.rng.choice([None, None, 8]))
        _upsert(self.store, p)

    def pod_move(self) -> None:
        raw = self.raw("Pod")
        if raw is not None:
            raw["spec"]["nodeName"] = self.rng.choice(self.nodes() or ["x"])
            _upsert(self.store, raw)

    def pod_phase(self) -> None:
        raw = self.raw("Pod")
        if raw is not None:
            raw.setdefault("status", {})["phase"] = self.rng.choice(["Running", "Succeeded", "Failed", "Pending"])
            _upsert(self.store, raw)

    def pod_delete(self) -> None:
        p = self.rng.choice(self.store.list("Pod") or [None])
        if p is not None:
            self.store.delete("Pod", p.name, p.namespace)

    def node_health(self) -> None:
        raw = self.raw("Node")
        if raw is None:
            return
        conds = [c for c in raw.setdefault("status", {}).setdefault("conditions", [])
                 if c["type"] not in ("XIDError79", "GPUThermalViolation", "DcgmExporterUnavailable", "Ready")]
        conds.append(cond("Ready", self.rng.choice(["True", "True", "False", "Unknown"]), "R", "m"))
        kind = self.rng.choice(["XIDError79", "GPUThermalViolation", "DcgmExporterUnavailable", None])
        if kind:
            conds.append(cond(kind, self.rng.choice(["True", "False", "Unknown"]), "R", "m"))
        raw["status"]["conditions"] = conds
        _upsert(self.store, raw)

    def node_cordon(self) -> None:
        raw = self.raw("Node")
        if raw is None:
            return
        spec = raw.setdefault("spec", {})
        spec["unschedulable"] = not spec.get("unschedulable", False)
        if self.rng.random() < 0.3:
            spec["taints"] = [*spec.get("taints", []), {"key": "maintenance", "effect": "NoExecute"}]
        if self.rng.random() < 0.1:
            raw["metadata"]["deletionTimestamp"] = "2026-11-30T08:00:00Z"
            raw["metadata"]["finalizers"] = ["x/y"]
        _upsert(self.store, raw)

    def node_relabel(self) -> None:
        raw = self.raw("Node")
        if raw is None:
            return
        labels = raw["metadata"].setdefault("labels", {})
        choice = self.rng.randrange(3)
        if choice == 0:
            labels[ACC] = f"rack-{self.rng.randrange(3)}"
        elif choice == 1:
            labels.pop(ACC, None)
        else:
            labels["tau.azure.com/gpu-class"] = self.rng.choice(["h100-80gb", "a100-80gb", "new-class"])
        _upsert(self.store, raw)

    def node_gpus(self) -> None:
        raw = self.raw("Node")
        if raw is not None:
            raw.setdefault("status", {}).setdefault("allocatable", {})[GPU] = str(self.rng.choice([0, 4, 8]))
            _upsert(self.store, raw)

    def node_delete(self) -> None:
        if self.rng.random() < 0.5:
            n = self.rng.choice(self.store.list("Node") or [None])
            if n is not None:
                self.store.delete("Node", n.name)
            return
        raw = self.raw("Node")
        if raw is not None:  # a new node, a copy of one
            self.made += 1
            raw["metadata"]["name"] = f"node-new-{self.made}"
            raw["metadata"].pop("uid", None)
            _upsert(self.store, raw)

    def workload_owner(self) -> None:
        """An admitted Workload for the job that owns some Pod (so a blocker or a finding names it)."""
        owned = [p for p in self.store.list("Pod") if p.metadata.owner_references]
        if not owned:
            return
        ref = self.rng.choice(owned).metadata.owner_references[0]
        self.made += 1
        _upsert(self.store, workload(f"wl-{self.made}", self.rng.choice(["ns", "eval"]), admitted_to="cq",
                                     state=self.rng.choice(["admitted", "admitted", "finished", "pending"]),
                                     owner=(ref.kind, ref.name, ref.uid)))

    def workload_state(self) -> None:
        raw = self.raw("Workload")
        if raw is None:
            return
        if self.rng.random() < 0.2:
            self.store.delete("Workload", raw["metadata"]["name"], raw["metadata"].get("namespace"))
            return
        st_ = raw.setdefault("status", {})
        choice = self.rng.randrange(3)
        if choice == 0:
            st_["conditions"] = [cond("QuotaReserved", "False", self.rng.choice(["Pending", "TopologyPlacementFailed"]),
                                      "m")]
            st_.pop("admission", None)
        elif choice == 1:
            st_["conditions"] = [cond("QuotaReserved", "True", "R", "m"), cond("Admitted", "True", "R", "m")]
            st_["admission"] = {"clusterQueue": "cq"}
        else:
            st_["conditions"] = [*st_.get("conditions", []), cond("Finished", "True", "R", "m")]
        _upsert(self.store, raw)

    def gang_new(self) -> None:
        self.made += 1
        gang = workload(f"gang-{self.made}", "ns", reason=self.rng.choice(["Pending", "TopologyPlacementFailed"]))
        gang["spec"]["podSets"] = [{
            "name": "main", "count": self.rng.choice([1, 2, 4]),
            "topologyRequest": {"required": self.rng.choice([ACC, "tau.azure.com/network-domain", "kubernetes.io/hostname"])},
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {GPU: str(self.rng.choice([1, 4, 8]))}}}],
                                  **({"nodeSelector": {"tau.azure.com/gpu-class": "h100-80gb"}}
                                     if self.rng.random() < 0.5 else {})}}}]
        _upsert(self.store, gang)

    def flavor_toleration(self) -> None:
        gpu = [f for f in self.store.list("ResourceFlavor") if f.name.startswith("taugrid-gpu-")]
        if not gpu:
            return
        f = self.rng.choice(gpu)
        raw = copy.deepcopy(self.store.raw("ResourceFlavor", f.name))
        raw["spec"]["tolerations"] = [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute"}] \
            if self.rng.random() < 0.5 else []
        _upsert(self.store, raw)

    def topology_levels(self) -> None:
        raw = self.raw("Topology")
        if raw is not None:
            levels = raw["spec"]["levels"]
            raw["spec"]["levels"] = levels[1:] if len(levels) > 2 else [{"nodeLabel": "tau.azure.com/site"}, *levels]
            _upsert(self.store, raw)

    def access_flip(self) -> None:
        kind = self.rng.choice(["Pod", "Node", "Workload", "ResourceFlavor", "Topology", "TauCluster"])
        state = self.rng.choice([AccessState.SYNCED, AccessState.SYNCED, AccessState.FORBIDDEN, AccessState.ERROR])
        self.store.set_access(kind, state, "test", since=1_700_000_000.0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.integers(min_value=0, max_value=1000), min_size=1, max_size=30),
       seed=st.integers(min_value=0, max_value=2**16), batch=st.integers(min_value=1, max_value=5))
def test_random_events_give_the_view_from_scratch(ops, seed, batch):
    store = validated_store(demo_raw_objects())
    inc = IncrementalDeriver(store)
    assert _incremental(inc) == _scratch(store)
    ev = Events(store, random.Random(seed))
    for i, op in enumerate(ops):
        ev.run(op)
        if (i + 1) % batch == 0:
            assert _incremental(inc) == _scratch(store), f"after {i + 1} events"
    assert _incremental(inc) == _scratch(store)


def test_a_pod_event_moves_one_flavor_and_reuses_the_other_nodes_views():
    store = validated_store(demo_raw_objects())
    inc = IncrementalDeriver(store)
    before = inc.view(NOW).capacity
    target = next(f for f in before.flavors if f.name == "taugrid-gpu-h100-80gb")
    node = next(n for n in target.nodes if n.free and n.free >= 2)
    _upsert(store, pod("new-holder", "ns", node=node.name, gpus=2))
    assert inc.cheap()
    after = inc.view(NOW).capacity
    assert inc.full_builds == 1
    moved = next(f for f in after.flavors if f.name == target.name)
    now_node = next(n for n in moved.nodes if n.name == node.name)
    assert (now_node.requested, now_node.free) == (node.requested + 2, node.free - 2)
    assert moved.gpus.free == target.gpus.free - 2
    # Other flavors are the very same objects; in the moved one, only the node with the new Pod is new.
    for old, new in zip(before.flavors, after.flavors, strict=True):
        if old.name != target.name:
            assert new is old
    assert [a is b for a, b in zip(target.nodes, moved.nodes, strict=True)].count(False) == 1
    assert after.to_contract() == _scratch(store)[0]


def test_an_unrelated_pod_or_workload_event_moves_nothing():
    store = validated_store(demo_raw_objects())
    inc = IncrementalDeriver(store)
    before = inc.view(NOW).capacity
    _upsert(store, pod("cpu-only", "ns", node=before.flavors[0].nodes[0].name, gpus=0))  # no GPUs: not a holder
    _upsert(store, pod("unbound", "ns", gpus=8))  # not bound: holds nothing
    _upsert(store, workload("plain", "ns"))  # pending, no topology request, owns no Pod
    assert inc.view(NOW).capacity is before


def test_unreadable_pods_make_free_capacity_unknown_then_known_again():
    store = validated_store(demo_raw_objects())
    inc = IncrementalDeriver(store)
    assert inc.view(NOW).capacity.known
    store.set_access("Pod", AccessState.FORBIDDEN, "pods is forbidden", since=1.0)
    v = inc.view(NOW).capacity
    assert not v.known and "forbidden" in v.unknown_reason
    assert all(f.gpus.free is None and f.gpus.requested is None for f in v.flavors)
    assert all(s.count is None for f in v.flavors for s in f.shapes)  # never "all free"
    _upsert(store, pod("while-blind", "ns", node=v.flavors[0].nodes[0].name, gpus=1))
    assert inc.view(NOW).capacity.to_contract() == _scratch(store)[0]  # still unknown, still whole
    store.set_access("Pod", AccessState.SYNCED)
    back = inc.view(NOW).capacity
    assert back.known and back.to_contract() == _scratch(store)[0]


def test_a_build_holds_and_names_what_updates_from_an_empty_store_would():
    """The build's own pass (bound, running Pods; admitted, unfinished Workloads and pending gangs) against the
    same objects arriving one event at a time, and against the view from scratch."""
    store = validated_store(demo_raw_objects())
    node = next(n for f in IncrementalDeriver(store).view(NOW).capacity.flavors for n in f.nodes if n.free)
    owner = ("Job", "trainer", "uid-trainer")
    objects = [
        pod("trainer-0", "ns", node=node.name, gpus=1, owner=owner),
        pod("trainer-done", "ns", node=node.name, gpus=1, phase="Succeeded", owner=owner),
        pod("trainer-waits", "ns", gpus=1, owner=owner),
        workload("trainer-a", "ns", admitted_to="tau-ws-ns", state="admitted", owner=owner),
        workload("trainer-b", "ns", admitted_to="tau-ws-ns", state="admitted", owner=owner),
        workload("trainer-c", "ns", admitted_to="tau-ws-ns", state="finished", owner=owner),
    ]
    updated = IncrementalDeriver(store)
    updated.view(NOW)
    for raw in objects:
        _upsert(store, raw)
        updated.view(NOW)
    built = IncrementalDeriver(store)
    assert _incremental(built) == _incremental(updated) == _scratch(store)
    assert updated.full_builds == built.full_builds == 1
    for inc in (built, updated):  # the owner's last admitted, unfinished Workload by key is the one named
        assert inc._parts["capacity"]._best["uid-trainer"].name == "trainer-b"  # type: ignore[attr-defined]


def test_renaming_the_workload_on_an_unhealthy_node_keeps_the_flavor_rows_and_moves_the_finding():
    """An owner's admitted Workload moving re-dresses its flavor: the finding names the new one, as from scratch,
    and the flavor's rows and their health (a walk of every node of the flavor) are kept, not rebuilt."""
    store = validated_store(demo_raw_objects())
    inc = IncrementalDeriver(store)
    bad = next(f for f in inc.view(NOW).findings if f.rule == "CAPACITY-WORKLOAD-ON-UNHEALTHY-NODE")
    wl = store.get("Workload", bad.object.name, bad.object.namespace)
    owner = wl.owner
    part = inc._parts["capacity"]  # type: ignore[attr-defined]
    cls = next(c for c, (unhealthy, _) in part._health.items() if unhealthy)
    rows, health = part._rows[cls], part._health[cls]
    _upsert(store, workload(bad.object.name + "-z", bad.object.namespace, admitted_to="tau-ws-train",
                            state="admitted", owner=(owner.kind, owner.name, owner.uid)))
    after = [f for f in inc.view(NOW).findings if f.rule == "CAPACITY-WORKLOAD-ON-UNHEALTHY-NODE"]
    assert [f.object.name for f in after] == [bad.object.name + "-z"]
    assert _incremental(inc) == _scratch(store)
    assert part._rows[cls] is rows and part._health[cls] is health
