"""Conversion between kueue.x-k8s.io/v1beta1 and v1beta2 (taudash/sim/conversion.py): every field on
which the two schemas differ is handled, each rename both ways, and v2 → v1 → v2 is the identity
for the fields both versions hold (a property test)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tools import kueue_data

from taudash.sim.conversion import HANDLED, convert, domains_to_slices, schema_differences, slices_to_domains
from taudash.sim.schema import SchemaSet

KUEUE = "kueue.x-k8s.io"
V1, V2 = f"{KUEUE}/v1beta1", f"{KUEUE}/v1beta2"
FOLDERS = ("v0.15.8", "main-ff69552")


@pytest.fixture(scope="module", params=FOLDERS)
def crds(request) -> SchemaSet:
    return kueue_data.schemas(request.param)


def test_every_schema_difference_is_handled_and_none_is_made_up(crds):
    diffs = schema_differences(crds)
    assert diffs, "the v1beta1 and v1beta2 schemas should differ"
    missing = [(k, p, how) for k, p, how in diffs if (k, p) not in HANDLED]
    assert missing == []
    # every entry of HANDLED is a real difference in at least one of the two folders
    seen = {(k, p) for f in FOLDERS for k, p, _ in schema_differences(kueue_data.schemas(f))}
    assert set(HANDLED) - seen == set()


def test_schema_differences_lists_the_known_renames(crds):
    diffs = {(k, p): how for k, p, how in schema_differences(crds)}
    assert diffs[("ClusterQueue", "spec.cohort")] == "v1beta1 only"
    assert diffs[("ClusterQueue", "spec.cohortName")] == "v1beta2 only"
    assert diffs[("Workload", "spec.priorityClassRef")] == "v1beta2 only"
    assert diffs[("LocalQueue", "status.flavorUsage")] == "v1beta1 only"
    assert diffs[("MultiKueueCluster", "spec.clusterSource")] == "v1beta2 only"
    assert diffs[("ClusterQueue", "spec.flavorFungibility.whenCanBorrow")] == "differs"
    # a field both hold the same way is no difference
    assert ("ClusterQueue", "spec.stopPolicy") not in diffs


def test_cluster_queue_both_ways():
    v1 = {"apiVersion": V1, "kind": "ClusterQueue", "metadata": {"name": "a"},
          "spec": {"cohort": "c", "admissionChecks": ["ac1", "ac2"], "stopPolicy": "Hold",
                   "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}},
          "status": {"pendingWorkloadsStatus": {"lastChangeTime": "2026-01-01T00:00:00Z"},
                     "fairSharing": {"weightedShare": 3, "admissionFairSharingStatus": {"lastUpdate": "x"}}}}
    before = copy.deepcopy(v1)
    v2 = convert("ClusterQueue", v1, "v1beta2")
    assert v1 == before  # the input is never changed
    assert v2["apiVersion"] == V2
    assert v2["spec"] == {"cohortName": "c", "stopPolicy": "Hold",
                          "admissionChecksStrategy": {"admissionChecks": [{"name": "ac1"}, {"name": "ac2"}]},
                          "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}}
    assert v2["status"] == {"fairSharing": {"weightedShare": 3}}
    back = convert("ClusterQueue", v2, "v1beta1")
    assert back["spec"]["cohort"] == "c" and "cohortName" not in back["spec"]
    assert back["spec"]["admissionChecksStrategy"] == v2["spec"]["admissionChecksStrategy"]  # v1beta1 holds it too
    assert "admissionChecks" not in back["spec"]  # folded: not restored
    # no cohort: neither spelling appears
    assert "cohort" not in convert("ClusterQueue", {"apiVersion": V2, "spec": {"cohortName": ""}}, "v1beta1")["spec"]
    # main's v1beta2-only field is dropped on the way down
    assert "concurrentAdmissionPolicy" not in convert(
        "ClusterQueue", {"apiVersion": V2, "spec": {"concurrentAdmissionPolicy": {}}}, "v1beta1")["spec"]


def test_local_queue_workload_and_multikueue_both_ways():
    lq = convert("LocalQueue", {"apiVersion": V1, "status": {"flavorUsage": [{"name": "f"}], "flavors": [{"name": "f"}],
                                                             "pendingWorkloads": 2}}, "v1beta2")
    assert lq["status"] == {"flavorsUsage": [{"name": "f"}], "pendingWorkloads": 2}
    assert convert("LocalQueue", lq, "v1beta1")["status"] == {"flavorUsage": [{"name": "f"}], "pendingWorkloads": 2}

    for source, ref in (("kueue.x-k8s.io/workloadpriorityclass", {"group": KUEUE, "kind": "WorkloadPriorityClass"}),
                        ("scheduling.k8s.io/priorityclass", {"group": "scheduling.k8s.io", "kind": "PriorityClass"})):
        wl = {"apiVersion": V1, "spec": {"priorityClassSource": source, "priorityClassName": "high", "priority": 9},
              "status": {"accumulatedPastExexcutionTimeSeconds": 30}}
        up = convert("Workload", wl, "v1beta2")
        assert up["spec"] == {"priorityClassRef": {**ref, "name": "high"}, "priority": 9}
        assert up["status"] == {"accumulatedPastExecutionTimeSeconds": 30}
        assert convert("Workload", up, "v1beta1") == wl
    # an empty source names no class in v1beta2 (Kueue drops the name too)
    assert convert("Workload", {"apiVersion": V1, "spec": {"priorityClassSource": "", "priorityClassName": "x"}},
                   "v1beta2")["spec"] == {}
    # main's v1beta2-only Workload fields are dropped on the way down
    down = convert("Workload", {"apiVersion": V2, "spec": {
        "preemptionGates": [{"name": "g"}],
        "podSets": [{"name": "m", "count": 1, "topologyRequest": {"required": "rack",
                                                                  "podsetSliceRequiredTopologyConstraints": []}}]},
        "status": {"preemptionGates": [{"name": "g"}]}}, "v1beta1")
    assert down["spec"] == {"podSets": [{"name": "m", "count": 1, "topologyRequest": {"required": "rack"}}]}
    assert down["status"] == {}

    mkc = {"apiVersion": V1, "spec": {"kubeConfig": {"location": "w1-secret", "locationType": "Secret"}}}
    up = convert("MultiKueueCluster", mkc, "v1beta2")
    assert up["spec"] == {"clusterSource": {"kubeConfig": {"location": "w1-secret", "locationType": "Secret"}}}
    assert convert("MultiKueueCluster", up, "v1beta1") == mkc
    prof = convert("MultiKueueCluster",
                   {"apiVersion": V2, "spec": {"clusterSource": {"clusterProfileRef": {"name": "p"}}}},
                   "v1beta1")
    assert prof["spec"]["clusterProfileRef"] == {"name": "p"}
    assert (convert("MultiKueueCluster", prof, "v1beta2")["spec"]
            == {"clusterSource": {"clusterProfileRef": {"name": "p"}}})

    assert convert("AdmissionCheck", {"apiVersion": V1, "spec": {"controllerName": "c", "retryDelayMinutes": 15}},
                   "v1beta2")["spec"] == {"controllerName": "c"}
    assert convert("MultiKueueConfig", {"apiVersion": V2, "spec": {"clusters": ["a"], "quotaManagement": "Manual"}},
                   "v1beta1")["spec"] == {"clusters": ["a"]}


def test_topology_assignment_domains_and_slices():
    v1 = {"levels": ["rack", "host"], "domains": [{"values": ["r1", "node-a1"], "count": 2},
                                                  {"values": ["r1", "node-b12"], "count": 2}]}
    v2 = domains_to_slices(v1)
    assert v2 == {"levels": ["rack", "host"], "slices": [{
        "domainCount": 2, "podCounts": {"universal": 2},
        "valuesPerLevel": [{"universal": "r1"}, {"individual": {"prefix": "node-", "roots": ["a1", "b12"]}}]}]}
    assert slices_to_domains(v2) == v1
    wl = {"apiVersion": V1, "status": {"admission": {"clusterQueue": "q", "podSetAssignments": [
        {"name": "main", "count": 4, "topologyAssignment": v1}, {"name": "other", "count": 1}]}}}
    up = convert("Workload", wl, "v1beta2")
    assert up["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] == v2
    assert up["status"]["admission"]["podSetAssignments"][1] == {"name": "other", "count": 1}
    assert convert("Workload", up, "v1beta1") == wl


def test_kinds_without_differences_pass_through_and_same_version_is_a_relabel():
    rf = {"apiVersion": V2, "kind": "ResourceFlavor", "spec": {"nodeLabels": {"a": "b"}}}
    out = convert("ResourceFlavor", rf, "v1beta1")
    assert out == {**rf, "apiVersion": V1} and out["spec"] is rf["spec"]  # shared, not copied
    assert convert("ResourceFlavor", rf, "v1beta2") is rf
    with pytest.raises(ValueError):
        convert("ResourceFlavor", rf, "v1")


# --- the round trip, as a property ---------------------------------------------------------------

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
quantities = st.sampled_from(["0", "1", "8", "500m", "64Gi", "1.5"])
maybe = st.booleans()


@st.composite
def v2_cluster_queue(draw) -> dict:
    spec: dict = {"namespaceSelector": {}}
    if draw(maybe):
        spec["cohortName"] = draw(names)
    if draw(maybe):
        spec["stopPolicy"] = draw(st.sampled_from(["None", "Hold", "HoldAndDrain"]))
    if draw(maybe):
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": n} for n in draw(st.lists(names, max_size=3))]}
    if draw(maybe):
        spec["flavorFungibility"] = {"whenCanBorrow": draw(st.sampled_from(["MayStopSearch", "TryNextFlavor"]))}
    spec["resourceGroups"] = [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
        {"name": f, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": draw(quantities)}]}
        for f in draw(st.lists(names, min_size=1, max_size=2, unique=True))]}]
    status = {"flavorsUsage": [{"name": "f", "resources": [{"name": "cpu", "total": draw(quantities),
                                                            "borrowed": draw(quantities)}]}],
              "pendingWorkloads": draw(st.integers(0, 9))}
    return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": draw(names)}, "spec": spec,
            "status": status}


@st.composite
def v2_local_queue(draw) -> dict:
    status: dict = {"pendingWorkloads": draw(st.integers(0, 5))}
    if draw(maybe):
        status["flavorsUsage"] = [{"name": draw(names), "resources": [{"name": "cpu", "total": draw(quantities)}]}]
    if draw(maybe):
        status["flavorsReservation"] = [{"name": draw(names), "resources": []}]
    return {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": draw(names), "namespace": "ns"},
            "spec": {"clusterQueue": draw(names)}, "status": status}


@st.composite
def v2_workload(draw) -> dict:
    spec: dict = {"queueName": draw(names), "podSets": [{"name": "main", "count": draw(st.integers(1, 8))}]}
    if draw(maybe):
        group, kind = draw(st.sampled_from([(KUEUE, "WorkloadPriorityClass"), ("scheduling.k8s.io", "PriorityClass")]))
        spec["priorityClassRef"] = {"group": group, "kind": kind, "name": draw(names)}
        spec["priority"] = draw(st.integers(-10, 1000))
    if draw(maybe):
        spec["active"] = draw(st.booleans())
    status: dict = {}
    if draw(maybe):
        status["accumulatedPastExecutionTimeSeconds"] = draw(st.integers(0, 10_000))
    if draw(maybe):
        levels = ["rack", "host"][: draw(st.integers(1, 2))]
        domains = [{"values": [draw(names) for _ in levels], "count": draw(st.integers(1, 4))}
                   for _ in range(draw(st.integers(1, 4)))]
        ta = domains_to_slices({"levels": levels, "domains": domains})  # the canonical encoding
        status["admission"] = {"clusterQueue": "q", "podSetAssignments": [
            {"name": "main", "count": 1, "topologyAssignment": ta}]}
    if draw(maybe):
        status["conditions"] = [{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "m",
                                 "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    return {"apiVersion": V2, "kind": "Workload", "metadata": {"name": draw(names), "namespace": "ns"},
            "spec": spec, "status": status}


@st.composite
def v2_multikueue_cluster(draw) -> dict:
    if draw(maybe):
        source = {"kubeConfig": {"location": draw(names), "locationType": draw(st.sampled_from(["Secret", "Path"]))}}
    else:
        source = {"clusterProfileRef": {"name": draw(names)}}
    return {"apiVersion": V2, "kind": "MultiKueueCluster", "metadata": {"name": draw(names)},
            "spec": {"clusterSource": source}}


@st.composite
def v2_plain(draw) -> dict:
    kind = draw(st.sampled_from(["ResourceFlavor", "Cohort", "AdmissionCheck", "WorkloadPriorityClass", "Topology"]))
    return {"apiVersion": V2, "kind": kind, "metadata": {"name": draw(names)},
            "spec": {"x": draw(names), "n": draw(st.integers())}}


objects_v2 = st.one_of(v2_cluster_queue(), v2_local_queue(), v2_workload(), v2_multikueue_cluster(), v2_plain())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objects_v2)
def test_v2_to_v1_to_v2_is_the_identity(obj):
    before = copy.deepcopy(obj)
    down = convert(obj["kind"], obj, "v1beta1")
    assert obj == before
    assert down["apiVersion"] == V1
    assert convert(obj["kind"], down, "v1beta2") == obj
    # and down again gives the same v1beta1 object (v1 → v2 → v1 on what v2 produced)
    assert convert(obj["kind"], convert(obj["kind"], down, "v1beta2"), "v1beta1") == down
