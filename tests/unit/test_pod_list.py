"""The Pods a Pods view lists (engine/pod_list.py): every Pod, or a namespace's, a node's, a Workload's (its owner's
Pods), a ClusterQueue's (its admitted Workloads') or a LocalQueue's; the phase a Pending Pod shows; restarts and the
owning Workload; a scope that names nothing lists nothing."""

from __future__ import annotations

import pytest
from factories import job_pod, pod, workload

from taudash.engine.pod_list import (
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    NAMESPACE,
    NODE,
    WORKLOAD,
    PodScope,
    list_pods,
)


def names(rows) -> list[str]:
    return [f"{r.namespace}/{r.name}" for r in rows]


def test_the_demo_lists_every_pod_with_its_workload(demo_store):
    rows = list_pods(demo_store)
    assert len(rows) == 24 and names(rows) == sorted(names(rows))
    code = next(r for r in rows if r.name == "code-llm-sft-rdb25")
    assert (code.phase, code.gpus, code.restarts, code.owner, code.workload) == (
        "Running", 8, 0, "Job/code-llm-sft", "train/job-code-llm-sft-6b7bb")
    assert code.node == "aks-h100-27604139-vmss000004" and code.created == "2026-11-30T06:01:00Z" and code.started
    pending = next(r for r in rows if r.name == "sam2-finetune-2h5w6")
    assert pending.phase == "Pending" and pending.node == "" and not pending.started


def test_scopes_narrow_the_list(demo_store):
    assert {r.namespace for r in list_pods(demo_store, PodScope(NAMESPACE, "vision"))} == {"vision"}
    on_node = list_pods(demo_store, PodScope(NODE, "aks-a100-51938270-vmss000002"))
    assert len(on_node) == 3 and {r.node for r in on_node} == {"aks-a100-51938270-vmss000002"}
    ray = list_pods(demo_store, PodScope(WORKLOAD, "rayjob-hparam-search-a62ef", "train"))
    assert len(ray) == 4 and {r.owner for r in ray} == {"RayJob/hparam-search"}  # head, workers and submitter
    # negative: the same name in another namespace is another Workload
    assert list_pods(demo_store, PodScope(WORKLOAD, "rayjob-hparam-search-a62ef", "eval")) == []


def test_queue_scopes_follow_the_workloads(store_of):
    store = store_of(
        workload("wl-a", "team", queue="lq-a", admitted_to="cq-a", state="admitted", owner=("Job", "a", "uid-a")),
        workload("wl-b", "team", queue="lq-b", admitted_to="cq-b", state="admitted", owner=("Job", "b", "uid-b")),
        pod("a-1", "team", node="n1", owner=("Job", "a", "uid-a")),
        pod("b-1", "team", node="n1", owner=("Job", "b", "uid-b")),
        pod("loose", "team", node="n1"),
    )
    assert names(list_pods(store, PodScope(CLUSTER_QUEUE, "cq-a"))) == ["team/a-1"]
    assert names(list_pods(store, PodScope(LOCAL_QUEUE, "lq-b", "team"))) == ["team/b-1"]
    assert list_pods(store, PodScope(LOCAL_QUEUE, "lq-b", "other")) == []
    loose = next(r for r in list_pods(store) if r.name == "loose")
    assert loose.owner == "" and loose.workload == ""  # no controller: no Workload, said as none


def test_restarts_and_a_waiting_container_show(store_of):
    creating = pod("w", "train", node="n1", phase="Pending")
    creating["status"]["containerStatuses"] = [{"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}}]
    store = store_of(job_pod("p", "n1"), creating)
    running, waiting = sorted(list_pods(store), key=lambda r: r.name)
    assert running.restarts == 2 and running.containers == ("main",) and running.started
    assert waiting.phase == "ContainerCreating" and not waiting.started  # what kubectl's STATUS column says


def test_an_unknown_scope_is_refused():
    with pytest.raises(ValueError, match="a Pods scope is one of"):
        PodScope("Deployment", "x")
    assert PodScope().label == "all namespaces"
    assert PodScope(WORKLOAD, "w", "ns").label == "Workload ns/w" and PodScope(NODE, "n").label == "node n"
