"""Idle allocated GPUs, end to end: the simulator with its DCGM exporter, a real Prometheus scraping it, and
`taudash capacity --prometheus URL -o json` run as a user runs it; then Prometheus stopped: utilisation unknown.

The simulator (the demo cluster, frozen: only the test changes it) and its exporter run in-process; Prometheus and
taudash are subprocesses, Prometheus on a port it picks and logs. Prometheus must be installed (.ci/run installs
it): a missing binary fails the test, it never skips.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import aiohttp
import test_prometheus_e2e
import yaml
from test_prometheus_e2e import Proc, logged_port, tool, until

from taudash.sim.dcgm import DcgmExporter
from taudash.sim.server import SimServer

DEADLINE = 240.0  # the idle minute has to pass in Prometheus's data, on a loaded machine
IDLE = "UTIL-GPU-IDLE-ALLOCATED"


def expected_idle(sim: SimServer, exporter: DcgmExporter) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
    """What the simulator made idle: idle GPUs per (namespace, Workload) and per team, from its own objects."""
    owner_of = {}
    for wl in sim.db.list("Workload"):
        for ref in wl["metadata"].get("ownerReferences") or ():
            owner_of[ref["uid"]] = wl["metadata"]["name"]
    team_of = {(ws["status"].get("target") or {}).get("resolvedNamespace"): (ws["spec"].get("teamRef") or {}).get(
        "name", "") for ws in sim.db.list("TauWorkspace")}
    per_workload: Counter[tuple[str, str]] = Counter()
    per_team: Counter[str] = Counter()
    for s in exporter.series():
        if not (s.allocated and s.idle):
            continue
        pod = sim.db.get("Pod", s.pod, s.namespace)
        ref = next(r for r in pod["metadata"]["ownerReferences"] if r.get("controller"))
        per_workload[(s.namespace, owner_of[ref["uid"]])] += 1
        per_team[team_of.get(s.namespace, "")] += 1
    return dict(per_workload), dict(per_team)


async def taudash(env: dict[str, str], *args: str) -> str:
    p = await asyncio.create_subprocess_exec(sys.executable, "-m", "taudash.cli", *args, stdout=asyncio.subprocess.PIPE,
                                             stderr=asyncio.subprocess.PIPE, env=env)
    out, err = await asyncio.wait_for(p.communicate(), DEADLINE)
    assert p.returncode in (0, 1), err.decode()  # check: 1 when a critical finding exists (the demo has some)
    return out.decode()


async def capacity(kubeconfig: Path, prometheus: str, env: dict[str, str]) -> dict:
    return json.loads(await taudash(env, "capacity", "--kubeconfig", str(kubeconfig), "--prometheus", prometheus,
                                    "-o", "json"))


async def test_prometheus_scraping_the_simulated_exporter_finds_exactly_the_idle_allocations(tmp_path, cli_env,
                                                                                            monkeypatch):
    monkeypatch.setattr(test_prometheus_e2e, "DEADLINE", DEADLINE)  # its waits, with this test's longer deadline
    prometheus = tool("prometheus")
    config = cli_env / "taudash.yaml"  # idle for a minute: the shortest the config allows, so the test waits one
    config.write_text(yaml.safe_dump({"capacity": {"idleMinutes": 1}, "utilisation": {"intervalSeconds": 5}}))
    env = {**os.environ, "TAUDASH_CONFIG": str(config)}
    procs: list[Proc] = []
    async with SimServer() as sim, aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        exporter = await DcgmExporter(sim.db, seed=0, idle_share=0.25).start()
        try:
            want_workloads, want_teams = expected_idle(sim, exporter)
            assert want_workloads and len(want_workloads) < len({(s.namespace, s.pod) for s in exporter.series()
                                                                 if s.allocated})  # some idle, not all
            gpus = len(exporter.series())
            prom_config = tmp_path / "prometheus.yml"
            prom_config.write_text(yaml.safe_dump({
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "scrape_configs": [{"job_name": "dcgm",
                                    "static_configs": [{"targets": [f"127.0.0.1:{exporter.port}"]}]}]}))
            prom = Proc([prometheus, f"--config.file={prom_config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                         "--web.listen-address=127.0.0.1:0"], tmp_path / "prometheus.log")
            procs.append(prom)
            port = await logged_port(prom, r'msg="Listening on" address=127\.0\.0\.1:(\d+)', procs)
            url = f"http://127.0.0.1:{port}"

            async def scraped() -> bool:  # the first scrape landed: every GPU's series is in Prometheus
                async with http.get(f"{url}/api/v1/query", params={"query": "count(DCGM_FI_DEV_GPU_UTIL)"}) as r:
                    body = await r.json()
                result = body["data"]["result"]
                return bool(result) and int(result[0]["value"][1]) == gpus

            await until(scraped, "the first scrape of the DCGM exporter in Prometheus", procs)
            idle_minute_ends = time.monotonic() + 60  # no data can show a minute of idleness before it has a minute
            first = await capacity(sim.kubeconfig, url, env)
            u = first["utilisation"]
            assert u["enabled"] and u["known"], u["unknownReason"]
            assert u["gpus"]["measured"] == u["gpus"]["allocated"] == sum(1 for s in exporter.series() if s.allocated)

            async def idle_found() -> dict | None:
                doc = await capacity(sim.kubeconfig, url, env)
                return doc if doc["utilisation"]["known"] and doc["utilisation"]["workloads"] else None

            # Each poll is a whole taudash process (~2 s of CPU): none before the minute could succeed.
            await asyncio.sleep(max(0.0, idle_minute_ends - time.monotonic()))
            doc = await until(idle_found, "idle allocated GPUs reported by taudash capacity", procs)
            u = doc["utilisation"]
            assert {(w["namespace"], w["name"]): w["idleGpus"] for w in u["workloads"]} == want_workloads
            assert {t["team"]: t["idleGpus"] for t in u["teams"]} == want_teams
            assert u["gpus"]["idle"] == sum(want_workloads.values())
            assert all(w["kind"] == "Workload" and w["idleSeconds"] >= 60 and w["idleGpuHours"] > 0
                       for w in u["workloads"])
            hours = [w["idleGpuHours"] for w in u["workloads"]]
            assert hours == sorted(hours, reverse=True)
            idle_findings = {(f["object"]["namespace"], f["object"]["name"]) for f in doc["findings"]
                             if f["rule"] == IDLE}
            assert idle_findings == set(want_workloads)
            # the same findings through status/check's normal path
            checked = await taudash(env, "check", "-v", "--kubeconfig", str(sim.kubeconfig), "--prometheus", url)
            assert {ns_name for ns_name in want_workloads if f"{ns_name[0]}/{ns_name[1]}" in checked} \
                == set(want_workloads)
            assert checked.count(IDLE) == len(want_workloads)

            # Prometheus stopped: utilisation unknown with the reason, never 0, and no idle finding
            prom.stop()
            down = await capacity(sim.kubeconfig, url, env)
            u = down["utilisation"]
            assert u["enabled"] and not u["known"] and "unreachable" in u["unknownReason"]
            assert u["gpus"] is None and u["workloads"] == [] and u["teams"] == []
            assert not [f for f in down["findings"] if f["rule"] == IDLE]
            assert [f["rule"] for f in down["findings"] if f["rule"].startswith("UTIL-")] == ["UTIL-UNKNOWN"]
            assert exporter.scrapes > 0 and sum(sim.api.writes.values()) == 0
        finally:
            for proc in procs:
                proc.stop()
            await exporter.stop()
