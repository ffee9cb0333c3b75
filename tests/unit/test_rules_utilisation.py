"""Utilisation rules (engine/rules/utilisation.py) and the Prometheus reading they judge
(engine/sources/prometheus.py): idle allocated GPUs per Workload and team, unknown never 0
(docs/rules.md#utilisation)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from factories import NOW, pod, rule_context, rules, workload, workspace

from taudash.engine.incremental import IncrementalDeriver
from taudash.engine.rules.base import RuleConfig
from taudash.engine.rules.gpu_usage import GPU_UTIL, GR_ENGINE_ACTIVE, GpuSample, UtilisationConfig, UtilisationReading
from taudash.engine.rules.utilisation import IDLE_ALLOCATED, UNKNOWN, utilisation_view
from taudash.engine.sources.prometheus import QueryError, read_utilisation
from taudash.engine.store import AccessState

HOUR = 3600.0
JOB = ("Job", "pretrain", "uid-job-pretrain")


class Feed:
    """A feed holding one given reading (the rule's input; the real one queries Prometheus)."""

    url = "http://prometheus:9090"
    rounds = 0

    def __init__(self, reading: UtilisationReading | None) -> None:
        self.reading = reading
        self.asked = 0

    def latest(self) -> UtilisationReading | None:
        self.asked += 1
        return self.reading

    def arrive(self, r: UtilisationReading) -> None:
        """A new round's reading, as the feed's thread publishes it."""
        self.reading = r
        self.rounds += 1


def sample(pod_name: str, gpu: int, *, util: float = 0.0, idle: float = 2 * HOUR, ns: str = "train",
           node: str = "n1") -> GpuSample:
    return GpuSample(namespace=ns, pod=pod_name, node=node, gpu=str(gpu), uuid=f"GPU-{node}-{gpu}", util=util,
                     idle_seconds=0.0 if util >= 5 else idle)


def reading(*samples: GpuSample, at=NOW, known: bool = True, reason: str = "") -> UtilisationReading:
    return UtilisationReading(at=at, known=known, reason=reason, samples=samples, series=len(samples))


def config_with(feed: Feed | None) -> RuleConfig:
    return RuleConfig(utilisation=UtilisationConfig(feed=feed))


def judged(objs, r: UtilisationReading | None, *, access=None, now=NOW):
    ctx = rule_context(objs, access=access, config=config_with(Feed(r)), now=now)
    return utilisation_view(ctx, r, Feed.url)


def pretrain_world() -> list[dict]:
    """Job pretrain: two 4-GPU Pods on n1 and n2, its admitted Workload, in workspace train of team research; a
    busy 1-GPU notebook in eval."""
    return [pod("pretrain-0", "train", node="n1", gpus=4, owner=JOB),
            pod("pretrain-1", "train", node="n2", gpus=4, owner=JOB),
            workload("job-pretrain-x1", "train", state="admitted", admitted_to="tau-ws-train", owner=JOB),
            pod("notebook", "eval", node="n3", gpus=1, owner=("Job", "notebook", "uid-nb")),
            workspace("train"), workspace("eval", team="vision")]


# --- positive ---------------------------------------------------------------------------------------------------


def test_idle_allocated_gpus_are_grouped_per_workload_and_team_and_found():
    r = reading(*(sample("pretrain-0", i) for i in range(4)), *(sample("pretrain-1", i, util=80, node="n2")
                                                                for i in range(4)),
                sample("notebook", 0, util=90, ns="eval", node="n3"))
    view, findings = judged(pretrain_world(), r)
    assert view.known and view.gpus is not None
    assert (view.gpus.allocated, view.gpus.measured, view.gpus.idle, view.gpus.unmeasured) == (9, 9, 4, 0)
    [w] = view.workloads
    assert (w.kind, w.namespace, w.name, w.owner) == ("Workload", "train", "job-pretrain-x1", "Job/pretrain")
    assert (w.workspace, w.team, w.gpus, w.idle_gpus, w.idle_gpu_hours) == ("train", "research", 8, 4, 8.0)
    assert w.pods == ["pretrain-0"] and w.nodes == ["n1"] and w.idle_seconds == 2 * HOUR
    assert [(t.team, t.idle_gpus, t.idle_gpu_hours, t.workloads) for t in view.teams] == [("research", 4, 8.0, 1)]
    [f] = findings
    assert (f.rule, f.severity, f.object.kind, f.object.name) == (IDLE_ALLOCATED, "warning", "Workload",
                                                                 "job-pretrain-x1")
    assert "4 of 8 allocated GPUs idle" in f.message and "2h 00m" in f.message and "team research" in f.message
    pods = {p.name: p for p in view.pods}
    assert pods["pretrain-1"].utilisation == 80.0 and pods["pretrain-0"].idle_gpus == 4


def test_workloads_and_teams_are_ranked_by_idle_gpu_hours():
    objs = [*pretrain_world(), pod("sweep", "eval", node="n4", gpus=2, owner=("Job", "sweep", "uid-sw"))]
    r = reading(sample("pretrain-0", 0, idle=HOUR), sample("sweep", 0, ns="eval", node="n4", idle=5 * HOUR),
                sample("sweep", 1, ns="eval", node="n4", idle=5 * HOUR))
    view, findings = judged(objs, r)
    assert [(w.name, w.idle_gpu_hours) for w in view.workloads] == [("sweep", 10.0), ("job-pretrain-x1", 1.0)]
    assert view.workloads[0].kind == "Job"  # no Workload owns the sweep job: its owner stands for it
    assert [t.team for t in view.teams] == ["vision", "research"]
    assert rules(findings) == [IDLE_ALLOCATED, IDLE_ALLOCATED]


# --- negative ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["busy", "idle-too-briefly", "terminal", "unbound", "no-gpus", "unknown-pod"])
def test_no_idle_finding(case):
    objs = pretrain_world()
    s = sample("pretrain-0", 0)
    if case == "busy":
        s = sample("pretrain-0", 0, util=40)
    elif case == "idle-too-briefly":  # below the threshold, but for less than capacity.idleMinutes (30)
        s = sample("pretrain-0", 0, idle=29 * 60)
    elif case == "terminal":
        objs[0] = pod("pretrain-0", "train", node="n1", gpus=4, owner=JOB, phase="Succeeded")
    elif case == "unbound":
        objs[0] = pod("pretrain-0", "train", gpus=4, owner=JOB)
    elif case == "no-gpus":
        objs[0] = pod("pretrain-0", "train", node="n1", gpus=0, owner=JOB)
    else:  # DCGM names a Pod the cluster does not have
        s = sample("gone-pod", 0)
    view, findings = judged(objs, reading(s))
    assert view.known and not view.workloads and not view.teams
    assert IDLE_ALLOCATED not in rules(findings)


def test_allocated_gpus_without_a_sample_are_unmeasured_not_idle():
    view, findings = judged(pretrain_world(), reading(sample("notebook", 0, util=70, ns="eval", node="n3")))
    assert view.gpus is not None and (view.gpus.allocated, view.gpus.measured, view.gpus.unmeasured) == (9, 1, 8)
    assert view.gpus.idle == 0 and not findings


def test_the_idle_threshold_and_duration_are_configuration():
    r = reading(sample("pretrain-0", 0, util=12.0))
    r = replace(r, samples=(replace(r.samples[0], idle_seconds=3 * HOUR),))
    strict = RuleConfig(utilisation=UtilisationConfig(feed=Feed(r), idle_below_percent=15.0))
    view, _ = utilisation_view(rule_context(pretrain_world(), config=strict), r, Feed.url)
    assert view.gpus is not None and view.gpus.idle == 1  # 12 % is idle below 15 %
    default, _ = judged(pretrain_world(), r)
    assert default.gpus is not None and default.gpus.idle == 0  # ... not below 5 %


# --- fail closed: unknown, never 0 -------------------------------------------------------------------------------


@pytest.mark.parametrize(("r", "access", "why"), [
    (None, None, "no reading from Prometheus yet"),
    (reading(known=False, reason="http://prometheus:9090 unreachable: timed out"), None, "unreachable: timed out"),
    (reading(sample("pretrain-0", 0), at=NOW - timedelta(hours=1)), None, "is 3600 s old"),
    (reading(sample("pretrain-0", 0)), {"Pod": AccessState.FORBIDDEN}, "pods is Forbidden"),
])
def test_unknown_utilisation_is_null_with_the_reason_and_no_idle_finding(r, access, why):
    view, findings = judged(pretrain_world(), r, access=access)
    assert view.enabled and not view.known and why in view.unknown_reason
    assert view.gpus is None and view.workloads == [] and view.teams == []
    assert rules(findings) == [UNKNOWN]
    assert findings[0].severity == "info"


def test_off_without_prometheus_and_every_view_asks_the_feed():
    view = IncrementalDeriver(rule_context(pretrain_world()).store).view(NOW)
    assert not view.utilisation.enabled and not view.utilisation.known
    assert "--prometheus" in view.utilisation.unknown_reason
    assert not [f for f in view.findings if f.rule.startswith("UTIL-")]
    feed = Feed(reading(sample("pretrain-0", 0)))
    deriver = IncrementalDeriver(rule_context(pretrain_world()).store, config_with(feed))
    assert deriver.view(NOW).utilisation.workloads[0].idle_gpus == 1
    feed.arrive(reading(*(sample("pretrain-0", i) for i in range(3))))  # a new reading, nothing else moved
    assert deriver.view(NOW).utilisation.workloads[0].idle_gpus == 3
    assert feed.asked == 2
    later = NOW + timedelta(hours=1)  # no reading since: the old one is not trusted
    assert not deriver.view(later).utilisation.known


def test_a_session_derives_again_when_a_new_reading_arrives_though_no_object_changed():
    from taudash.engine.session import Session
    from taudash.engine.view import SourceInfo

    feed = Feed(reading(sample("pretrain-0", 0)))
    session = Session(rule_context(pretrain_world()).store, SourceInfo(type="kube"), config_with(feed))
    assert session.view(NOW).utilisation.workloads[0].idle_gpus == 1
    assert session.view(NOW).utilisation.workloads[0].idle_gpus == 1  # nothing new: the cached view
    feed.arrive(reading(*(sample("pretrain-0", i) for i in range(4))))
    assert session.view(NOW).utilisation.workloads[0].idle_gpus == 4
    feed.arrive(reading(known=False, reason="http://prometheus:9090 unreachable: refused"))
    down = session.view(NOW)
    assert not down.utilisation.known and not [f for f in down.findings if f.rule == IDLE_ALLOCATED]


def test_pods_that_change_between_readings_are_judged_with_the_next_reading():
    store = rule_context(pretrain_world()).store
    feed = Feed(reading(sample("pretrain-0", 0)))
    deriver = IncrementalDeriver(store, config_with(feed))
    assert [w.idle_gpus for w in deriver.view(NOW).utilisation.workloads] == [1]
    store.delete("Pod", "pretrain-0", "train")  # the job ended: its Pod went
    assert [w.idle_gpus for w in deriver.view(NOW).utilisation.workloads] == [1]  # as of the reading
    feed.arrive(reading(sample("pretrain-0", 0)))  # DCGM still had the series: the Pod is gone all the same
    assert deriver.view(NOW).utilisation.workloads == []
    assert IncrementalDeriver(store, config_with(feed)).view(NOW).utilisation.workloads == []  # = a full build


def test_the_kept_gpu_holders_equal_a_full_build_after_pods_come_go_and_finish():
    from factories import upsert_raw

    store = rule_context(pretrain_world()).store
    feed = Feed(reading(sample("pretrain-0", 0)))
    deriver = IncrementalDeriver(store, config_with(feed))
    deriver.view(NOW)
    upsert_raw(store, pod("pretrain-1", "train", node="n2", gpus=4, owner=JOB, phase="Succeeded"),  # finished
               pod("late", "train", node="n5", gpus=2, owner=JOB))  # came
    store.delete("Pod", "notebook", "eval")  # went
    feed.arrive(reading(sample("pretrain-0", 0), sample("late", 0, node="n5"), sample("late", 1, node="n5")))
    kept = deriver.view(NOW).utilisation
    assert kept == IncrementalDeriver(store, config_with(feed)).view(NOW).utilisation
    assert [(p.name, p.gpus) for p in kept.pods] == [("late", 2), ("pretrain-0", 4)]
    assert [(w.name, w.gpus, w.idle_gpus) for w in kept.workloads] == [("job-pretrain-x1", 6, 3)]


# --- the reading: PromQL answers to samples ----------------------------------------------------------------------


class FakePrometheus:
    """Answers the three queries per metric from a table of series (labels, value now, last busy, first seen)."""

    url = "http://prometheus:9090"

    def __init__(self, series: dict[str, list[tuple[dict, float, float | None, float]]] | None = None,
                 error: str = "") -> None:
        self.series = series or {}
        self.error = error
        self.asked: list[str] = []

    def query(self, expr: str, at: float) -> list[dict]:
        self.asked.append(expr)
        if self.error:
            raise QueryError(self.error)
        metric = GR_ENGINE_ACTIVE if GR_ENGINE_ACTIVE in expr else GPU_UTIL
        rows = self.series.get(metric, [])
        if expr.startswith("max_over_time"):
            return [{"metric": lb, "value": [at, str(busy)]} for lb, _, busy, _ in rows if busy is not None]
        if expr.startswith("min_over_time"):
            return [{"metric": lb, "value": [at, str(first)]} for lb, _, _, first in rows]
        return [{"metric": {"__name__": metric, **lb}, "value": [at, str(v)]} for lb, v, _, _ in rows]


def labels(gpu: int, pod_name: str | None = "p", node: str = "n1") -> dict:
    lb = {"gpu": str(gpu), "UUID": f"GPU-{gpu}", "Hostname": node, "job": "dcgm", "instance": "x:9400"}
    return lb | ({"pod": pod_name, "namespace": "train", "container": "main"} if pod_name else {})


AT = 1_800_000_000.0


def test_idle_for_is_since_the_last_busy_sample_or_the_first_sample():
    prom = FakePrometheus({GPU_UTIL: [(labels(0), 0.0, AT - 600, AT - 7200),  # busy 10 minutes ago
                                      (labels(1), 0.0, None, AT - 7200),  # never busy: since first seen
                                      (labels(2), 70.0, AT, AT - 7200),  # busy now
                                      (labels(3, pod_name=None), 0.0, None, AT - 7200)]})  # nobody holds it
    r = read_utilisation(prom, threshold=5, idle_seconds=1800, at=AT)  # type: ignore[arg-type]
    assert r.known and r.series == 4
    assert [(s.gpu, s.util, s.idle_seconds) for s in r.samples] == [("0", 0.0, 600.0), ("1", 0.0, 7200.0),
                                                                    ("2", 70.0, 0.0)]
    assert any("timestamp(DCGM_FI_DEV_GPU_UTIL >= 5)" in q for q in prom.asked)


def test_the_graphics_engine_reading_wins_where_a_gpu_has_both():
    prom = FakePrometheus({GR_ENGINE_ACTIVE: [(labels(0), 1.0, None, AT - 100)],
                           GPU_UTIL: [(labels(0), 80.0, AT, AT - 100), (labels(1), 0.0, None, AT - 100)]})
    r = read_utilisation(prom, threshold=5, idle_seconds=60, at=AT)  # type: ignore[arg-type]
    assert [(s.gpu, s.metric) for s in r.samples] == [("0", GR_ENGINE_ACTIVE), ("1", GPU_UTIL)]
    assert r.samples[0].util == 1.0 and r.samples[0].idle_seconds == 100.0


@pytest.mark.parametrize(("prom", "why"), [
    (FakePrometheus(error="http://prometheus:9090 unreachable: Connection refused"), "Connection refused"),
    (FakePrometheus({}), "no DCGM series"),
])
def test_an_unreachable_prometheus_or_no_dcgm_series_is_an_unknown_reading(prom, why):
    r = read_utilisation(prom, threshold=5, idle_seconds=60, at=AT)  # type: ignore[arg-type]
    assert not r.known and why in r.reason and r.samples == ()
