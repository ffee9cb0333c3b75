"""The summary bullets of TauGrid's drain fix (v0.4.5), one behaviour each, for both Deletion and Retarget
(docs/rules.md#drain-blockers)."""

import pytest
from factories import (
    DRAIN_MODES,
    OLD,
    blocker_names,
    deployment,
    drain,
    drain_workload,
    drain_world,
    job,
    managed_template,
    rayjob,
    rayservice,
    rules,
)

from taudash.engine.store import AccessState

pytestmark = pytest.mark.parametrize("mode", DRAIN_MODES)


def op(mode: str) -> str:
    return "the deletion of workspace eval" if mode == "Deletion" else "the retarget of workspace eval"


# --- bullet 1: batch source ownership by kind, UID and name; RayJob terminal = deployment status ---------


class TestBatchSourceOwnership:
    def test_job_awaiting_its_workload_blocks(self, mode):
        view, findings = drain(drain_world(mode, job("prep")))
        assert view.state == "Blocked" and view.mode == mode
        (b,) = view.blockers
        assert ((b.kind, b.namespace, b.name, b.reason, b.route)
                == ("Job", OLD, "prep", "AwaitingWorkload", "tau-ws-eval"))
        assert b.action == f"wait for Job eval/prep to complete, or delete it, before completing {op(mode)}"
        assert rules(findings) == ["DRAIN-BLOCKED"]

    def test_derived_workload_matched_by_kind_uid_and_name_takes_over(self, mode):
        wl = drain_workload("job-prep-1a2b3", owner=("Job", "prep", "uid-job-prep"), finished=True)
        view, findings = drain(drain_world(mode, job("prep"), wl))
        assert view.state == "Clear" and view.blockers == [] and findings == []

    def test_unfinished_derived_workload_is_the_blocker_not_the_job(self, mode):
        wl = drain_workload("job-prep-1a2b3", owner=("Job", "prep", "uid-job-prep"), admitted_to="tau-ws-eval")
        view, _ = drain(drain_world(mode, job("prep"), wl))
        assert blocker_names(view) == [("Workload", "job-prep-1a2b3")]
        assert view.blockers[0].action == (
            "wait for Workload eval/job-prep-1a2b3 to finish, or cancel its owner Job eval/prep, before completing "
            f"{op(mode)}"
        )

    @pytest.mark.parametrize(
        "owner",
        [
            ("RayJob", "prep", "uid-job-prep"),  # wrong kind
            ("Job", "prep", "uid-job-prep-old"),  # a deleted and re-created Job: same name, new UID
            ("Job", "other", "uid-job-prep"),  # wrong name
        ],
        ids=["kind", "uid", "name"],
    )
    def test_ownership_needs_kind_uid_and_name(self, mode, owner):
        wl = drain_workload("job-prep-1a2b3", owner=owner, finished=True)
        view, _ = drain(drain_world(mode, job("prep"), wl))
        assert blocker_names(view) == [("Job", "prep")]

    def test_job_uid_label_links_the_workload(self, mode):
        wl = drain_workload("job-prep-1a2b3", job_uid_label="uid-job-prep", finished=True)
        view, _ = drain(drain_world(mode, job("prep"), wl))
        assert view.state == "Clear"

    @pytest.mark.parametrize("done", ["Complete", "Failed"])
    def test_completed_or_failed_job_does_not_block(self, mode, done):
        view, findings = drain(drain_world(mode, job("prep", done=done)))
        assert view.state == "Clear" and findings == []

    def test_job_without_queue_label_is_not_a_source(self, mode):
        view, _ = drain(drain_world(mode, job("plain", queue=None)))
        assert view.state == "Clear"

    @pytest.mark.parametrize(
        "deployment_status,blocks",
        [("", True), ("Initializing", True), ("Running", True), ("Suspended", True), ("Retrying", True),
         ("Complete", False), ("Failed", False)],
    )
    def test_rayjob_is_finished_only_on_terminal_deployment_status(self, mode, deployment_status, blocks):
        view, _ = drain(drain_world(mode, rayjob("sweep", deployment=deployment_status)))
        assert (blocker_names(view) == [("RayJob", "sweep")]) is blocks
        assert view.state == ("Blocked" if blocks else "Clear")

    def test_failed_driver_with_retry_pending_retains_the_route(self, mode):
        view, findings = drain(drain_world(mode, rayjob("sweep", deployment="Retrying", job_status="FAILED")))
        (b,) = view.blockers
        assert "retry pending" in b.message
        assert b.action.startswith("wait for RayJob eval/sweep to reach Complete or Failed")
        assert b.action.endswith(f"before completing {op(mode)}")
        assert rules(findings) == ["DRAIN-BLOCKED"]

    def test_ray_job_status_alone_is_not_terminal(self, mode):
        # jobStatus SUCCEEDED while the deployment is still Running: Kueue does not finish it yet.
        view, _ = drain(drain_world(mode, rayjob("sweep", deployment="Running", job_status="SUCCEEDED")))
        assert blocker_names(view) == [("RayJob", "sweep")]

    def test_rayjob_with_derived_workload_defers_to_it(self, mode):
        wl = drain_workload("rayjob-sweep-9f8e7", owner=("RayJob", "sweep", "uid-rayjob-sweep"), owner_api="ray.io/v1",
                            finished=True)
        view, _ = drain(drain_world(mode, rayjob("sweep", deployment="Retrying"), wl))
        assert view.state == "Clear"


# --- bullet 2: RayServices hold the route until deleted ----------------------------------------------------


class TestLongRunningRayService:
    def test_rayservice_blocks_even_when_its_workload_reports_finished(self, mode):
        wl = drain_workload("rayservice-llm-4d5e6", owner=("RayService", "llm", "uid-raysvc-llm"),
                            owner_api="ray.io/v1", finished=True)
        view, findings = drain(drain_world(mode, rayservice("llm"), wl))
        assert view.state == "Blocked"
        (b,) = view.blockers
        assert (b.kind, b.name, b.reason) == ("RayService", "llm", "LongRunningService")
        assert b.action == f"delete RayService eval/llm before completing {op(mode)}"
        (f,) = findings
        assert f.rule == "DRAIN-BLOCKED" and f.severity.value == "warning"
        assert (f.object.kind, f.object.namespace, f.object.name) == ("TauWorkspace", "tau-system", "eval")
        assert f"delete RayService eval/llm before completing {op(mode)}" in f.hint

    def test_rayservice_before_its_workload_exists_blocks(self, mode):
        view, _ = drain(drain_world(mode, rayservice("llm")))
        assert blocker_names(view) == [("RayService", "llm")]

    def test_deleting_the_rayservice_clears_the_route(self, mode):
        wl = drain_workload("rayservice-llm-4d5e6", owner=("RayService", "llm", "uid-raysvc-llm"), finished=True)
        view, findings = drain(drain_world(mode, wl))
        assert view.state == "Clear" and findings == []

    def test_unfinished_service_workload_points_at_the_service(self, mode):
        wl = drain_workload("rayservice-llm-4d5e6", owner=("RayService", "llm", "uid-raysvc-llm"),
                            admitted_to="tau-ws-eval")
        view, _ = drain(drain_world(mode, rayservice("llm"), wl))
        assert blocker_names(view) == [("RayService", "llm"), ("Workload", "rayservice-llm-4d5e6")]
        assert view.blockers[1].action.startswith("delete RayService eval/llm (owner of Workload")

    def test_rayservice_without_queue_label_does_not_block(self, mode):
        view, _ = drain(drain_world(mode, rayservice("llm", queue=None)))
        assert view.state == "Clear"


# --- bullet 3: Deployments by their Pod template's Kueue labels; delete the Deployment ---------------------


class TestManagedDeployment:
    @pytest.mark.parametrize(
        "variant",
        ["before-pod-workloads", "zero-replicas", "paused", "deleting", "pod-workloads-finished"],
    )
    def test_managed_deployment_holds_the_route_until_deleted(self, mode, variant):
        kw = {
            "zero-replicas": {"replicas": 0},
            "paused": {"paused": True},
            "deleting": {"deleting": True},
        }.get(variant, {})
        extra = [deployment("web", template_labels=managed_template(), **kw)]
        if variant == "pod-workloads-finished":
            extra += [drain_workload(f"pod-web-{i}", owner=("Pod", f"web-{i}", f"uid-pod-{i}"), owner_api="v1",
                                     finished=True) for i in range(2)]
        view, findings = drain(drain_world(mode, *extra))
        assert view.state == "Blocked"
        (b,) = view.blockers
        assert (b.kind, b.name, b.reason, b.route) == ("Deployment", "web", "ManagedDeployment", "tau-ws-eval")
        assert b.action == f"delete Deployment eval/web before completing {op(mode)}"
        assert rules(findings) == ["DRAIN-BLOCKED"]

    def test_state_is_named_in_the_message(self, mode):
        view, _ = drain(drain_world(mode,
                                    deployment("web", template_labels=managed_template(), replicas=0, paused=True)))
        assert "scaled to zero, paused" in view.blockers[0].message

    def test_root_labels_alone_do_not_make_a_deployment_managed(self, mode):
        dep = deployment("web", root_labels=managed_template())
        view, findings = drain(drain_world(mode, dep))
        assert view.state == "Clear" and findings == []

    def test_template_without_managed_label_never_blocks(self, mode):
        dep = deployment("notebook", template_labels={"kueue.x-k8s.io/queue-name": "jobqueue"})
        view, _ = drain(drain_world(mode, dep))
        assert view.state == "Clear"

    def test_managed_template_with_queue_only_on_root_still_blocks(self, mode):
        dep = deployment("web", template_labels={"kueue.x-k8s.io/managed": "true"},
                         root_labels={"kueue.x-k8s.io/queue-name": "jobqueue"})
        view, _ = drain(drain_world(mode, dep))
        assert blocker_names(view) == [("Deployment", "web")]

    def test_unfinished_pod_workload_also_blocks(self, mode):
        dep = deployment("web", template_labels=managed_template())
        wl = drain_workload("pod-web-0", owner=("Pod", "web-0", "uid-pod-0"), owner_api="v1", admitted_to="tau-ws-eval")
        view, _ = drain(drain_world(mode, dep, wl))
        assert blocker_names(view) == [("Deployment", "web"), ("Workload", "pod-web-0")]

    def test_deleting_the_deployment_clears_the_route(self, mode):
        wl = drain_workload("pod-web-0", owner=("Pod", "web-0", "uid-pod-0"), owner_api="v1", finished=True)
        view, _ = drain(drain_world(mode, wl))
        assert view.state == "Clear"


# --- bullet 4: read-only discovery of Jobs, RayJobs, RayServices and Deployments ---------------------------


class TestSourceDiscovery:
    @pytest.mark.parametrize("kind", ["Job", "Deployment", "RayJob", "RayService"])
    @pytest.mark.parametrize("state", [AccessState.FORBIDDEN, AccessState.ERROR, AccessState.SYNCING])
    def test_unreadable_source_api_fails_closed(self, mode, kind, state):
        view, findings = drain(drain_world(mode), {kind: state})
        assert view.state == "Unknown"
        assert [u.resource.split(".")[0] for u in view.unknown] == [kind.lower() + "s"]
        (f,) = findings
        assert ((f.rule, f.severity.value, f.object.kind, f.object.name)
                == ("DRAIN-UNKNOWN", "critical", "TauWorkspace", "eval"))

    def test_absent_ray_apis_are_skipped(self, mode):
        view, findings = drain(drain_world(mode), {"RayJob": AccessState.ABSENT, "RayService": AccessState.ABSENT})
        assert view.state == "Clear" and findings == []

    @pytest.mark.parametrize("absent,present", [("RayJob", "RayService"), ("RayService", "RayJob")])
    def test_ray_apis_are_checked_independently(self, mode, absent, present):
        src = rayservice("llm") if present == "RayService" else rayjob("sweep")
        view, _ = drain(drain_world(mode, src), {absent: AccessState.ABSENT})
        assert blocker_names(view) == [(present, src["metadata"]["name"])]

    @pytest.mark.parametrize("kind", ["Job", "Deployment"])
    def test_absent_core_source_api_is_not_optional(self, mode, kind):
        view, _ = drain(drain_world(mode), {kind: AccessState.ABSENT})
        assert view.state == "Unknown"

    def test_known_blockers_stay_listed_when_another_source_is_unreadable(self, mode):
        view, findings = drain(drain_world(mode, rayservice("llm")), {"Job": AccessState.FORBIDDEN})
        assert view.state == "Unknown" and blocker_names(view) == [("RayService", "llm")]
        assert rules(findings) == ["DRAIN-BLOCKED", "DRAIN-UNKNOWN"]

    def test_discovery_never_writes(self, mode):
        from factories import drain_ctx, the_workspace

        from taudash.engine.rules.drain import derive_drain

        ctx = drain_ctx(drain_world(mode, job("prep"), rayservice("llm"),
                                    deployment("web", template_labels=managed_template())))
        before = ctx.store.revision
        derive_drain(ctx, the_workspace(ctx))
        assert ctx.store.revision == before


# --- deactivated Workloads never finish by waiting: the advice says who stopped them ---------------------


def deactivated(wl: dict, by: str | None = None) -> dict:
    wl["spec"]["active"] = False
    if by is not None:
        wl["metadata"]["annotations"] = {"taudash.io/deactivated-by": by}
    return wl


class TestDeactivatedWorkloadAdvice:
    def test_deactivated_by_a_workflow_names_it(self, mode):
        wl = deactivated(drain_workload("job-prep-1a2b3", owner=("Job", "prep", "uid-job-prep")), by="wf-20261130-ab12")
        view, findings = drain(drain_world(mode, job("prep"), wl))
        (b,) = view.blockers
        assert (b.kind, b.name, b.reason) == ("Workload", "job-prep-1a2b3", "WorkloadUnfinished")
        assert "deactivated (spec.active=false)" in b.message
        assert b.action == (f"Workload eval/job-prep-1a2b3 deactivated by workflow wf-20261130-ab12: reactivate it "
                            f"or delete its owner Job eval/prep, before completing {op(mode)}")
        assert "wait" not in b.action
        (f,) = findings
        assert f.rule == "DRAIN-BLOCKED" and "wf-20261130-ab12" in f.hint and "wait for" not in f.hint

    def test_deactivated_without_annotation(self, mode):
        wl = deactivated(drain_workload("loose"))
        view, _ = drain(drain_world(mode, wl))
        (b,) = view.blockers
        assert "deactivated (spec.active=false)" in b.message
        assert b.action == f"Workload eval/loose deactivated: reactivate it or delete it, before completing {op(mode)}"

    def test_active_workload_keeps_the_wait_advice(self, mode):
        view, _ = drain(drain_world(mode, drain_workload("loose")))
        (b,) = view.blockers
        assert "deactivated" not in b.message + b.action
        assert b.action == f"wait for Workload eval/loose to finish, or delete it, before completing {op(mode)}"

    def test_finished_deactivated_workload_does_not_block(self, mode):
        view, _ = drain(drain_world(mode, deactivated(drain_workload("done", finished=True), by="wf-1")))
        assert view.state == "Clear"

    def test_unreadable_workloads_stay_unknown(self, mode):
        wl = deactivated(drain_workload("loose"), by="wf-1")
        view, findings = drain(drain_world(mode, wl), {"Workload": AccessState.FORBIDDEN})
        assert view.state == "Unknown" and view.blockers == []
        assert "DRAIN-UNKNOWN" in rules(findings)
