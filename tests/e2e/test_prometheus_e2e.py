"""`taudash serve --metrics` scraped by a real Prometheus, with the example alert rules loaded.

The simulator (the demo cluster, no controllers: only the test changes it) runs in-process; serve
and Prometheus are subprocesses on loopback, each binding port 0 and logging the port it got.
Prometheus must be installed (.ci/run installs it): a missing binary fails the test, it never skips.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import yaml
from tools.paths import DEMO, REPO

from taudash.engine.model.quantity import Quantity
from taudash.sim.server import SimServer

RULES = REPO / "docs" / "alerts.rules.yml"
WORKSPACES = "workspaces.tau.azure.com"
DEADLINE = 120.0  # seconds for each wait; a loaded 2-core machine starts Prometheus slowly


def tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed: .ci/run installs it (Debian package `prometheus`)"
    return path


def test_the_example_rules_pass_promtool():
    out = subprocess.run([tool("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_every_example_rule_is_documented_and_uses_exported_metrics():
    doc = (REPO / "docs" / "alerts.md").read_text()
    rules = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
    assert len(rules) >= 10
    for rule in rules:
        assert f"| {rule['alert']} | `{rule['expr']}` | {rule['for']} | {rule['labels']['severity']} |" in doc, rule
    # every metric a rule reads is one the exporter emits (on the demo cluster, where all are known)
    from test_serve_metrics import names, registry_for

    from taudash.engine.incremental import derive
    from taudash.engine.sources.snapshot import load_snapshot

    loaded = load_snapshot(DEMO)
    loaded.store.last_event_at = 1.0
    loaded.store.set_watch("Workload", True, 1.0)  # a live source's watch health (the snapshot has none)
    emitted = names(registry_for(derive(loaded.store, datetime.now(UTC)), loaded.store))
    used = {m for rule in rules for m in re.findall(r"\btaudash_[a-z_]+", rule["expr"])}
    assert used <= emitted, used - emitted


def test_the_rules_alert_per_cluster_over_a_fleet(tmp_path):
    """docs/alerts.test.yml: over many clusters' series (a `cluster` label each, docs/federation.md) each alert
    names its cluster, and one cluster's series never completes another's expression."""
    tests = REPO / "docs" / "alerts.test.yml"
    out = subprocess.run([tool("promtool"), "test", "rules", tests.name], capture_output=True, text=True,
                         cwd=tests.parent)
    assert out.returncode == 0 and "SUCCESS" in out.stdout, out.stdout + out.stderr
    # matching every label away (`on()`) pairs one cluster's verdict with another's generation: caught
    (tmp_path / RULES.name).write_text(RULES.read_text().replace("on(cluster)", "on()"))
    (tmp_path / tests.name).write_text(tests.read_text())
    out = subprocess.run([tool("promtool"), "test", "rules", tests.name], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode != 0 and "east" in out.stdout + out.stderr


def test_a_broken_rule_file_fails_promtool(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(RULES.read_text().replace('taudash_pool_zeroed == 1', 'taudash_pool_zeroed == ('))
    out = subprocess.run([tool("promtool"), "check", "rules", str(broken)], capture_output=True, text=True)
    assert out.returncode != 0


def short_for(text: str) -> str:
    """The example rules with every `for:` cut to 1 s, so a test sees alerts fire within seconds
    (the shipped durations are tens of minutes)."""
    return re.sub(r"(?m)^(\s*for:\s*)\S+$", r"\g<1>1s", text)


class Proc:
    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self._out = log.open("w")
        self.p = subprocess.Popen(args, stdout=self._out, stderr=subprocess.STDOUT)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self._out.close()


async def until(check, what: str, procs: list[Proc]):
    """Poll `check()` (async) until it returns a truthy value or the deadline passes."""
    end = time.monotonic() + DEADLINE
    last: object = None
    while time.monotonic() < end:
        for proc in procs:
            assert proc.p.poll() is None, f"{proc.log.name} exited {proc.p.returncode}:\n{proc.text()[-3000:]}"
        try:
            result = await check()
        except (aiohttp.ClientError, OSError) as exc:  # not listening yet
            last = exc
        else:
            if result:
                return result
            last = result
        await asyncio.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


async def logged_port(proc: Proc, pattern: str, procs: list[Proc]) -> int:
    """The port a process bound (it was given port 0), read from its log: no port is picked and then raced for."""
    async def found() -> int | None:
        m = re.search(pattern, proc.text())
        return int(m.group(1)) if m else None

    return await until(found, f"the port in {proc.log.name}", procs)


async def test_prometheus_scrapes_serve_and_fires_the_drain_alert(tmp_path):
    prometheus = tool("prometheus")
    procs: list[Proc] = []
    async with SimServer() as sim, aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        try:
            serve = Proc([sys.executable, "-m", "taudash.cli", "serve", "--kubeconfig", str(sim.kubeconfig),
                          "--metrics", "127.0.0.1:0", "--interval", "0.5"], tmp_path / "serve.log")
            procs.append(serve)
            metrics_port = await logged_port(serve, r"metrics on http://127\.0\.0\.1:(\d+)/", procs)
            rules = tmp_path / "rules.yml"
            rules.write_text(short_for(RULES.read_text()))
            config = tmp_path / "prometheus.yml"
            config.write_text(yaml.safe_dump({
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(rules)],
                "scrape_configs": [{"job_name": "taudash",
                                    "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}]}],
            }))
            prom = Proc([prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                         "--web.listen-address=127.0.0.1:0"], tmp_path / "prometheus.log")
            procs.append(prom)
            prom_port = await logged_port(prom, r'msg="Listening on" address=127\.0\.0\.1:(\d+)', procs)
            api = f"http://127.0.0.1:{prom_port}/api/v1"

            async def query(expr: str) -> dict[frozenset, float]:
                async with http.get(f"{api}/query", params={"query": expr}) as r:
                    body = await r.json()
                assert body["status"] == "success", body
                return {frozenset((k, v) for k, v in s["metric"].items() if k not in ("job", "instance")):
                        float(s["value"][1]) for s in body["data"]["result"]}

            async def alerts() -> list[dict]:
                async with http.get(f"{api}/alerts") as r:
                    body = await r.json()
                return body["data"]["alerts"]

            async def drain_alert(workspace: str, state: str) -> list[dict]:
                return [a for a in await alerts() if a["labels"].get("alertname") == "TaudashDrainBlocked"
                        and a["labels"].get("workspace") == workspace and a["state"] == state]

            # serve is up and scraped: taudash_up is 1 in Prometheus
            await until(lambda: _has(query("taudash_up == 1")), "taudash_up == 1 in Prometheus", procs)

            # the pool budget Prometheus holds is what `taudash status -o json` says for the same cluster
            status = await _status(sim)
            flavors = status["pool"]["flavors"]
            assert flavors
            for flavor in flavors:
                gpu = flavor["budget"]["nvidia.com/gpu"]
                got = await query(f'taudash_pool_budget{{flavor="{flavor["name"]}",resource="nvidia.com/gpu"}}')
                assert list(got.values()) == [Quantity.parse(gpu).as_float()], (flavor["name"], got)
            got = await query('taudash_pool_budget{resource="memory"}')
            assert {dict(k)["flavor"]: v for k, v in got.items()} == {
                f["name"]: Quantity.parse(f["budget"]["memory"]).as_float() for f in flavors if "memory" in f["budget"]}
            findings = await query("taudash_findings")
            counts = {dict(k)["severity"]: v for k, v in findings.items()}
            assert counts == {sev: float(sum(f["severity"] == sev for f in status["findings"]))
                              for sev in ("critical", "warning", "info")}

            # the demo's `eval` drain is blocked already; `train` is not draining, and no alert names it
            assert await query('taudash_workspace_drain_state{workspace="train",state="NotDraining"}') \
                == {frozenset({("__name__", "taudash_workspace_drain_state"), ("workspace", "train"),
                               ("state", "NotDraining")}): 1.0}
            await until(lambda: drain_alert("eval", "firing"), "the drain alert of eval firing", procs)
            assert not [a for a in await alerts() if a["labels"].get("workspace") == "train"]

            # retarget `train` in the cluster: its admitted work now holds the drain
            sim.db.patch_merge(WORKSPACES, "train", {"spec": {"target": {"namespace": "train-v2"}}}, "tau-system")
            await until(lambda: _has(query('taudash_workspace_drain_state{workspace="train",state="Blocked"} == 1')),
                        "train's drain Blocked in Prometheus", procs)
            blockers = await query('taudash_workspace_drain_blockers{workspace="train"}')
            assert list(blockers.values())[0] > 0
            fired = await until(lambda: drain_alert("train", "firing"), "the drain alert of train firing", procs)
            assert fired[0]["labels"]["severity"] == "warning"

            # serve never wrote to the cluster, and stops on SIGTERM with exit 0
            assert sum(sim.api.writes.values()) == 0, sim.api.writes
            serve.p.terminate()
            assert await asyncio.to_thread(serve.p.wait, 30) == 0, serve.text()
        finally:
            for proc in procs:
                proc.stop()


async def _has(coro) -> bool:
    return bool(await coro)


async def _status(sim: SimServer) -> dict:
    p = await asyncio.create_subprocess_exec(sys.executable, "-m", "taudash.cli", "status", "-o", "json",
                                             "--kubeconfig", str(sim.kubeconfig),
                                             stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(p.communicate(), DEADLINE)
    assert p.returncode == 0, err.decode()
    return json.loads(out)
