"""The Prometheus collector of `taudash serve` on hand-built views and stores, the --metrics address,
and the command's exits. The real-Prometheus run is tests/e2e/test_prometheus_e2e.py."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest
from factories import cluster_queue, q, workload
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry
from tools.paths import DEMO

from taudash.cli import main
from taudash.engine.incremental import derive
from taudash.engine.model.quantity import Quantity
from taudash.engine.rules.base import Finding, ObjRef, Severity
from taudash.engine.rules.drain import DrainBlocker, DrainView
from taudash.engine.rules.multikueue import MultiKueueView, Worker
from taudash.engine.rules.pool import PoolFlavor, PoolView
from taudash.engine.rules.profiles import Check, ProfileRow, ProfilesView
from taudash.engine.rules.queues import ClusterQueueView
from taudash.engine.rules.workspaces import WorkspaceView
from taudash.engine.sources.snapshot import load_snapshot, store_from_objects
from taudash.engine.store import AccessState, Store
from taudash.engine.view import ClusterView
from taudash.serve import metrics as m
from taudash.serve.exporter import AddressError, MetricsServer, parse_address

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def registry_for(view: ClusterView | None, store: Store | None = None, at: float = 1000.0,
                 clock=lambda: 1010.0) -> CollectorRegistry:
    latest = m.Latest()
    if view is not None:
        latest.publish(m.sample_of(view, store or Store(), at))
    reg = CollectorRegistry(auto_describe=False)
    reg.register(m.TaudashCollector(latest, "sim", "ctx", clock=clock))
    return reg


def names(reg: CollectorRegistry) -> set[str]:
    return {s.name for fam in reg.collect() for s in fam.samples}


def series(reg: CollectorRegistry, name: str) -> dict[frozenset, float]:
    return {frozenset(s.labels.items()): s.value for fam in reg.collect() for s in fam.samples if s.name == name}


# --- values and labels ------------------------------------------------------------------------------------


def test_pool_quantities_become_numbers_in_base_units():
    flavor = PoolFlavor(name="taugrid-gpu-h100", gpu_class="h100", nodes=2,
                        budget={"cpu": q("1500m"), "memory": q("2Gi"), "nvidia.com/gpu": q("16")},
                        reserved={"nvidia.com/gpu": q("4")}, headroom={"nvidia.com/gpu": q("-2")},
                        inventory={"ephemeral-storage": q("1k")})
    reg = registry_for(ClusterView(pool=PoolView(mode="Automatic", flavors=[flavor])))
    get = reg.get_sample_value
    assert get("taudash_pool_budget", {"flavor": "taugrid-gpu-h100", "resource": "cpu"}) == 1.5
    assert get("taudash_pool_budget", {"flavor": "taugrid-gpu-h100", "resource": "memory"}) == 2 * 1024**3
    assert get("taudash_pool_budget", {"flavor": "taugrid-gpu-h100", "resource": "nvidia.com/gpu"}) == 16
    assert get("taudash_pool_reserved", {"flavor": "taugrid-gpu-h100", "resource": "nvidia.com/gpu"}) == 4
    assert get("taudash_pool_headroom", {"flavor": "taugrid-gpu-h100", "resource": "nvidia.com/gpu"}) == -2
    assert get("taudash_pool_inventory", {"flavor": "taugrid-gpu-h100", "resource": "ephemeral-storage"}) == 1000
    assert get("taudash_pool_nodes", {"flavor": "taugrid-gpu-h100"}) == 2
    # a resource the view has no amount for is absent, not 0
    assert get("taudash_pool_used", {"flavor": "taugrid-gpu-h100", "resource": "nvidia.com/gpu"}) is None
    assert get("taudash_pool_reserved", {"flavor": "taugrid-gpu-h100", "resource": "cpu"}) is None
    assert get("taudash_pool_info", {"mode": "Automatic", "team": "", "cohort": ""}) == 1


def test_unknown_values_are_left_out_never_zero():
    view = ClusterView(
        pool=PoolView(valid=None),
        cluster_queues=[ClusterQueueView(name="cq-unknown", active=None, drained=None),
                        ClusterQueueView(name="cq-known", active=False, drained=True, stop_policy="HoldAndDrain")],
        multikueue=MultiKueueView(state="NotReady", workers=[Worker(name="w-unknown", active=None),
                                                            Worker(name="w-down", active=False),
                                                            Worker(name="w-up", active=True)]),
        profiles=ProfilesView(usable=False, generation=None, profile_set_hash="abc", computed_hash=None),
    )
    reg = registry_for(view)  # a store that never saw an event: no age to report
    get = reg.get_sample_value
    present = names(reg)
    for absent in ("taudash_pool_valid", "taudash_profiles_generation", "taudash_profiles_hash_match",
                   "taudash_data_age_seconds", "taudash_last_event_timestamp_seconds"):
        assert absent not in present, absent
    assert get("taudash_cluster_queue_active", {"cluster_queue": "cq-unknown"}) is None
    assert get("taudash_cluster_queue_drained", {"cluster_queue": "cq-unknown"}) is None
    assert get("taudash_cluster_queue_active", {"cluster_queue": "cq-known"}) == 0
    assert get("taudash_cluster_queue_drained", {"cluster_queue": "cq-known"}) == 1
    assert get("taudash_multikueue_worker_active", {"worker": "w-unknown"}) is None
    assert get("taudash_multikueue_worker_active", {"worker": "w-down"}) == 0
    assert get("taudash_multikueue_worker_active", {"worker": "w-up"}) == 1
    # the stop policy is one-hot
    assert series(reg, "taudash_cluster_queue_stop_policy") == {
        frozenset({("cluster_queue", cq), ("policy", p)}): float(p == want)
        for cq, want in (("cq-unknown", "None"), ("cq-known", "HoldAndDrain")) for p in m.STOP_POLICIES}
    # the view of this base has no `inactive` count: no series rather than a made-up 0
    assert "taudash_cluster_queue_inactive_workloads" not in present
    assert get("taudash_cluster_queue_pending_workloads", {"cluster_queue": "cq-known"}) == 0


def test_profiles_and_multikueue_readiness():
    view = ClusterView(
        profiles=ProfilesView(usable=True, generation=7, profile_set_hash="h1", computed_hash="h2",
                              checks=[Check(id="ProfileSetHash", ok=False, message="")],
                              profiles=[ProfileRow(name="a", ready=True), ProfileRow(name="b", ready=False),
                                        ProfileRow(name="c", ready=True)]),
        multikueue=MultiKueueView(state="Ready", checks=[Check(id="M1", ok=True, message=""),
                                                         Check(id="M5", ok=False, message="")]),
    )
    get = registry_for(view).get_sample_value
    assert get("taudash_profiles_usable") == 1
    assert get("taudash_profiles") == 3 and get("taudash_profiles_ready") == 2
    assert get("taudash_profiles_generation") == 7
    assert get("taudash_profiles_hash_match") == 0
    assert get("taudash_profiles_check_ok", {"check": "ProfileSetHash"}) == 0
    assert get("taudash_multikueue_ready") == 1
    assert get("taudash_multikueue_state", {"state": "Ready"}) == 1
    assert get("taudash_multikueue_state", {"state": "NotReady"}) == 0
    assert get("taudash_multikueue_check_ok", {"check": "M1"}) == 1
    assert get("taudash_multikueue_check_ok", {"check": "M5"}) == 0


def test_drain_state_is_one_hot_with_blockers():
    blocker = DrainBlocker(kind="Workload", namespace="eval", name="wl-1", reason="WorkloadUnfinished")
    view = ClusterView(workspaces=[
        WorkspaceView(name="eval", namespace="eval", expected_phase="Ready", stale=False,
                      drain=DrainView(state="Blocked", mode="Retarget", blockers=[blocker, blocker])),
        WorkspaceView(name="train", namespace="train", expected_phase="Ready", stale=True),
    ])
    reg = registry_for(view)
    states = series(reg, "taudash_workspace_drain_state")
    assert {dict(k)["state"] for k, v in states.items() if v == 1 and dict(k)["workspace"] == "eval"} == {"Blocked"}
    assert ({dict(k)["state"] for k, v in states.items() if v == 1 and dict(k)["workspace"] == "train"}
            == {"NotDraining"})
    assert sum(states.values()) == 2 and len(states) == 2 * len(m.DRAIN_STATES)
    get = reg.get_sample_value
    assert get("taudash_workspace_drain_blockers", {"workspace": "eval"}) == 2
    assert get("taudash_workspace_drain_blockers", {"workspace": "train"}) is None  # not draining: nothing to count
    assert get("taudash_workspace_stale", {"workspace": "train"}) == 1


def _finding(sev: Severity, rule: str, name: str, ns: str | None = None) -> Finding:
    return Finding(severity=sev, rule=rule, object=ObjRef(kind="TauWorkspace", namespace=ns, name=name), message="m")


def test_findings_one_series_each_with_counts_and_a_cap(monkeypatch):
    findings = [_finding(Severity.CRITICAL, "DRAIN-UNKNOWN", "eval", "tau-system"),
                _finding(Severity.CRITICAL, "DRAIN-UNKNOWN", "eval", "tau-system"),  # same series
                _finding(Severity.WARNING, "DRAIN-BLOCKED", "train", "tau-system"),
                _finding(Severity.INFO, "X-INFO", "vision")]
    view = ClusterView(findings=sorted(findings, key=Finding.sort_key))
    reg = registry_for(view)
    get = reg.get_sample_value
    assert get("taudash_findings", {"severity": "critical"}) == 2
    assert get("taudash_findings", {"severity": "warning"}) == 1
    assert get("taudash_findings", {"severity": "info"}) == 1
    assert get("taudash_finding", {"rule": "DRAIN-UNKNOWN", "severity": "critical", "kind": "TauWorkspace",
                                   "namespace": "tau-system", "name": "eval"}) == 1
    assert get("taudash_finding", {"rule": "X-INFO", "severity": "info", "kind": "TauWorkspace",
                                   "namespace": "", "name": "vision"}) == 1
    assert len(series(reg, "taudash_finding")) == 3
    assert get("taudash_finding_series_dropped") == 0
    monkeypatch.setattr(m, "FINDING_SERIES_MAX", 1)
    reg = registry_for(view)
    kept = series(reg, "taudash_finding")
    assert len(kept) == 1 and dict(next(iter(kept)))["severity"] == "critical"  # the most severe stay
    assert reg.get_sample_value("taudash_finding_series_dropped") == 2


def test_label_values_are_cluster_strings_cut_to_a_bounded_length():
    hostile = 'ws"}\n# HELP fake {a="b"} \\ ' + "x" * 300
    view = ClusterView(workspaces=[WorkspaceView(name=hostile, namespace="n", expected_phase="", stale=False)])
    text = generate_latest(registry_for(view)).decode()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert "fake" not in fams  # the name could not inject a line
    workspaces = {s.labels["workspace"] for s in fams["taudash_workspace_stale"].samples}
    assert workspaces == {hostile[: m.LABEL_VALUE_MAX - 1] + "…"}
    assert len(next(iter(workspaces))) == m.LABEL_VALUE_MAX


def test_freshness_and_access_state_from_the_store():
    store = store_from_objects([cluster_queue("cq")])
    store.upsert(store.get("ClusterQueue", "cq"), at=990.0)
    store.set_access("Workload", AccessState.FORBIDDEN, "no list", since=950.0)
    reg = registry_for(ClusterView(), store, at=1000.0, clock=lambda: 1010.0)
    get = reg.get_sample_value
    assert get("taudash_last_derive_timestamp_seconds") == 1000.0
    assert get("taudash_last_event_timestamp_seconds") == 990.0
    assert get("taudash_data_age_seconds") == 20.0  # at scrape time, from the clock
    wl = series(reg, "taudash_access_state")
    assert ({dict(k)["state"] for k, v in wl.items() if dict(k)["resource"] == "workloads.kueue.x-k8s.io" and v}
            == {"Forbidden"})
    assert sum(v for k, v in wl.items() if dict(k)["resource"] == "workloads.kueue.x-k8s.io") == 1
    assert get("taudash_access_state", {"resource": "clusterqueues.kueue.x-k8s.io", "state": "Synced"}) == 1
    assert get("taudash_access_state_since_timestamp_seconds", {"resource": "workloads.kueue.x-k8s.io"}) == 950.0
    assert get("taudash_access_state_since_timestamp_seconds", {"resource": "clusterqueues.kueue.x-k8s.io"}) is None


def test_before_the_first_view_only_up_zero_and_build_info():
    reg = registry_for(None)
    assert reg.get_sample_value("taudash_up") == 0
    assert reg.get_sample_value("taudash_build_info", {"version": m.__version__}) == 1
    assert reg.get_sample_value("taudash_source_info", {"type": "sim", "context": "ctx"}) == 1
    assert not any(n.startswith(("taudash_pool", "taudash_finding", "taudash_workspace")) for n in names(reg))
    latest = m.Latest()
    latest.publish(m.sample_of(ClusterView(), Store(), 1.0))
    latest.failed()
    reg = CollectorRegistry(auto_describe=False)
    reg.register(m.TaudashCollector(latest, "kube", None))
    assert reg.get_sample_value("taudash_up") == 1
    assert reg.get_sample_value("taudash_ticks_total") == 1
    assert reg.get_sample_value("taudash_tick_errors_total") == 1


def test_the_demo_cluster_exports_what_status_reports_and_no_series_per_workload():
    loaded = load_snapshot(DEMO)
    view = derive(loaded.store, NOW)
    reg = registry_for(view, loaded.store)
    contract = view.to_contract()
    for flavor in contract["pool"]["flavors"]:
        for resource, text in flavor["budget"].items():
            assert reg.get_sample_value("taudash_pool_budget", {"flavor": flavor["name"], "resource": resource}) \
                == Quantity.parse(text).as_float()
    for cq in contract["clusterQueues"]:
        assert reg.get_sample_value("taudash_cluster_queue_admitted_workloads",
                                    {"cluster_queue": cq["name"]}) == cq["admitted"]
    eval_ws = next(w for w in contract["workspaces"] if w["name"] == "eval")
    assert reg.get_sample_value("taudash_workspace_drain_state", {"workspace": "eval", "state": "Blocked"}) == 1
    assert (reg.get_sample_value("taudash_workspace_drain_blockers", {"workspace": "eval"})
            == len(eval_ws["drain"]["blockers"]))
    before = sum(len(f.samples) for f in reg.collect())
    # a hundred more pending Workloads change counts, never the number of series
    for i in range(100):
        obj = store_from_objects([workload(f"extra-{i}", "train")]).get("Workload", f"extra-{i}", "train")
        loaded.store.upsert(obj)
    reg = registry_for(derive(loaded.store, NOW), loaded.store)
    assert sum(len(f.samples) for f in reg.collect()) == before


def test_idle_gpus_per_team_only_when_utilisation_is_known():
    from taudash.engine.rules.utilisation import IdleTeam, UtilisationGpus, UtilisationView

    assert not {n for n in names(registry_for(ClusterView())) if "utilisation" in n}  # off: nothing
    unknown = registry_for(ClusterView(utilisation=UtilisationView(enabled=True, known=False, unknown_reason="down")))
    assert unknown.get_sample_value("taudash_utilisation_known") == 0
    assert "taudash_utilisation_idle_gpus" not in names(unknown)  # unknown is no series, never 0
    known = registry_for(ClusterView(utilisation=UtilisationView(
        enabled=True, known=True, unknown_reason="", gpus=UtilisationGpus(allocated=24, measured=24, idle=9,
                                                                          unmeasured=0),
        teams=[IdleTeam(team="research", idle_gpus=8, idle_gpu_hours=16.5, workloads=1),
               IdleTeam(team="", idle_gpus=1, idle_gpu_hours=0.5, workloads=1)])))
    assert known.get_sample_value("taudash_utilisation_known") == 1
    assert known.get_sample_value("taudash_utilisation_allocated_gpus") == 24
    assert series(known, "taudash_utilisation_idle_gpus") == {frozenset({("team", "research")}): 8,
                                                             frozenset({("team", "")}): 1}
    assert known.get_sample_value("taudash_utilisation_idle_gpu_hours", {"team": "research"}) == 16.5


# --- --metrics ADDR ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "host", "port", "loopback"), [
    ("9464", "127.0.0.1", 9464, True),
    (":9464", "127.0.0.1", 9464, True),
    ("127.0.0.1:9464", "127.0.0.1", 9464, True),
    ("localhost:1", "localhost", 1, True),
    ("[::1]:9464", "::1", 9464, True),
    ("0.0.0.0:9464", "0.0.0.0", 9464, False),
    ("10.0.0.5:80", "10.0.0.5", 80, False),
    ("metrics.example.com:9464", "metrics.example.com", 9464, False),
])
def test_metrics_address(text, host, port, loopback):
    a = parse_address(text)
    assert (a.host, a.port, a.loopback) == (host, port, loopback)


@pytest.mark.parametrize("text", ["", "abc", ":", ":99999", "host:", "::1:9464", "[::1]9464", "bad host!:9464",
                                  "1.2.3.4:-1", ":9464x"])
def test_bad_metrics_address(text):
    with pytest.raises(AddressError):
        parse_address(text)


def test_metrics_endpoint_binds_loopback_by_default():
    server = MetricsServer(parse_address(":0"), m.TaudashCollector(m.Latest(), "kube", None))
    port = server.start()
    try:
        assert server._httpd.server_address[0] == "127.0.0.1"
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        assert "taudash_up 0.0" in body
    finally:
        server.stop()


def test_probes_healthz_always_readyz_only_once_ready():
    ready = threading.Event()
    server = MetricsServer(parse_address(":0"), m.TaudashCollector(m.Latest(), "kube", None), ready=ready.is_set)
    port = server.start()
    base = f"http://127.0.0.1:{port}"
    try:
        assert urllib.request.urlopen(f"{base}/healthz", timeout=10).read() == b"ok\n"
        with pytest.raises(urllib.error.HTTPError) as not_ready:
            urllib.request.urlopen(f"{base}/readyz", timeout=10)
        assert not_ready.value.code == 503
        ready.set()
        assert urllib.request.urlopen(f"{base}/readyz", timeout=10).status == 200
        assert "taudash_up" in urllib.request.urlopen(f"{base}/metrics", timeout=10).read().decode()
    finally:
        server.stop()


# --- the command --------------------------------------------------------------------------------------------


def test_bad_metrics_address_exits_2_with_one_line(capsys):
    assert main(["serve", "--snapshot", str(DEMO), "--metrics", "nowhere:port"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--metrics" in err and "port" in err


def test_a_port_in_use_exits_2_with_one_line(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--snapshot", str(DEMO), "--metrics", f"127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot listen" in err


def test_two_sources_is_a_usage_error(capsys):
    assert main(["serve", "--snapshot", str(DEMO), "--demo"]) == 2
    assert "choose one source" in capsys.readouterr().err


def wait_for_metrics(proc: subprocess.Popen, deadline_s: float = 60.0) -> tuple[str, list[str]]:
    """The metrics URL serve prints on stderr (it binds port 0), and the lines before it."""
    import time

    end = time.monotonic() + deadline_s
    lines: list[str] = []
    while time.monotonic() < end:
        line = proc.stderr.readline()
        if "metrics on http" in line:
            return line.split("metrics on ", 1)[1].strip(), lines
        lines.append(line)
        if not line and proc.poll() is not None:
            break
    raise AssertionError(f"serve printed no metrics URL (exit {proc.poll()}, output {lines!r})")


def test_snapshot_serve_exports_then_stops_on_sigterm_with_exit_0_and_warns_off_loopback(tmp_path):
    # 0.0.0.0 on purpose: the one way to see the warning; the process lives for a second
    proc = subprocess.Popen([sys.executable, "-m", "taudash.cli", "serve", "--snapshot", str(DEMO),
                             "--metrics", "0.0.0.0:0", "--interval", "0.2"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=tmp_path)
    try:
        url, before = wait_for_metrics(proc)
        assert any("warning:" in line and "0.0.0.0" in line for line in before)
        import time

        end = time.monotonic() + 60
        body = ""
        while time.monotonic() < end and "taudash_up 1.0" not in body:
            time.sleep(0.1)
            body = urllib.request.urlopen(url.replace("0.0.0.0", "127.0.0.1"), timeout=10).read().decode()
        assert "taudash_up 1.0" in body
        status = json.loads(subprocess.run([sys.executable, "-m", "taudash.cli", "status", "-o", "json", "--snapshot",
                                            str(DEMO)], capture_output=True, text=True, check=True).stdout)
        fams = {f.name: f for f in text_string_to_metric_families(body)}
        assert {s.labels["workspace"] for s in fams["taudash_workspace_drain_state"].samples} \
            == {w["name"] for w in status["workspaces"]}
        proc.terminate()  # SIGTERM
        assert proc.wait(timeout=30) == 0
        assert "stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def test_the_engine_may_not_import_the_exporter_library(tmp_path):
    from test_import_contract import _copy, lint_imports

    copy = _copy(tmp_path)
    (copy / "engine" / "leak.py").write_text("import prometheus_client\n")
    r = lint_imports(copy, env={"PYTHONPATH": str(copy), "PATH": str(Path(sys.executable).parent)})
    assert r.returncode != 0, r.stdout
    assert "taudash.engine.leak -> prometheus_client" in r.stdout


async def test_tick_hooks_see_each_view_one_at_a_time_and_a_failing_hook_does_not_stop_serve(capsys):
    import asyncio
    import threading

    from taudash.cli import parse_args
    from taudash.serve.service import Serve

    args = parse_args(["serve", "--snapshot", str(DEMO), "--interval", "0.01"])
    serve = Serve(args, None)
    loop = asyncio.get_running_loop()
    seen: list[tuple[ClusterView, Store, datetime]] = []
    active, most = [0], [0]
    guard = threading.Lock()

    def broken(view, store, now):
        raise RuntimeError("recorder is down")

    def record(view, store, now):
        with guard:
            active[0] += 1
            most[0] = max(most[0], active[0])
        threading.Event().wait(0.05)  # a slow hook: the next tick must wait for it, not run beside it
        seen.append((view, store, now))
        with guard:
            active[0] -= 1
        if len(seen) == 3:
            loop.call_soon_threadsafe(serve._stop.set)

    serve.on_tick += [broken, record]
    assert await asyncio.wait_for(serve.main(), 120) == 0
    assert len(seen) == 3 and most[0] == 1
    view, store, now = seen[-1]
    assert {w.name for w in view.workspaces} == {"eval", "train", "vision"}
    assert store.get("TauWorkspace", "eval", "tau-system") is not None and now.tzinfo is not None
    err = capsys.readouterr().err
    assert "recorder is down" in err and err.count("tick hook 'broken' failed") == 3


def test_demo_serve_stops_on_sigint_with_exit_0(tmp_path):
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "taudash.cli", "serve", "--demo", "--metrics", ":0",
                             "--interval", "0.5"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            cwd=tmp_path)
    try:
        url, before = wait_for_metrics(proc)
        assert url.startswith("http://127.0.0.1:")  # loopback without asking
        assert not any("warning" in line for line in before)
        end = time.monotonic() + 120
        body = ""
        while time.monotonic() < end and "taudash_up 1.0" not in body:
            time.sleep(0.1)
            body = urllib.request.urlopen(url, timeout=10).read().decode()
        assert 'taudash_source_info{context="taudash-sim",type="sim"} 1.0' in body
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
