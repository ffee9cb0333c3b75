"""What `taudash status --snapshot` and `taudash check --snapshot` load in a fresh process (start-up):
none of the dashboard, the simulator, the live source or the bench, and none of the pydantic schemas of the
kinds decoded as structs (decision 164). An import-set check, not a timing: what a cron job's `check` pays
for is what it imports and builds."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tools.paths import SNAPSHOTS

DEMO = str(SNAPSHOTS / "demo.yaml")

# Modules (and their sub-modules) that a one-shot read of a snapshot file has no use for.
NEVER_ON_THE_SNAPSHOT_PATH = (
    "textual", "taudash.app", "taudash.screens", "taudash.fleet_app", "taudash.sim", "taudash.bench",
    "taudash.serve", "taudash.live", "taudash.fleet", "taudash.agents", "taudash.rehearse", "taudash.whatif",
    "taudash.engine.session", "taudash.engine.actions", "taudash.engine.workflows", "aiohttp",
    "kubernetes_asyncio", "prometheus_client",
)

_PROBE = """
import json, os, sys
from taudash.cli import main
out = sys.stdout
sys.stdout = open(os.devnull, "w")
code = main(sys.argv[1:])
sys.stdout = out
from taudash.engine.model import core, kueue
built = {m.__name__: m.__pydantic_complete__ for m in (core.Node, core.Pod, core.Job, core.CSINode, kueue.Workload,
                                                       kueue.ClusterQueue, kueue.LocalQueue)}
print(json.dumps({"code": code, "modules": sorted(sys.modules), "built": built}))
"""


def _run(argv: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _unwanted(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in NEVER_ON_THE_SNAPSHOT_PATH)]


@pytest.mark.parametrize("argv", [
    ["status", "--snapshot", DEMO, "-o", "json"],
    ["status", "--snapshot", DEMO],
    ["check", "--snapshot", DEMO],
])
def test_reading_a_snapshot_imports_no_dashboard_simulator_or_live_source(argv):
    run = _run(argv)
    assert run["code"] in (0, 1)  # the demo holds critical findings: check exits 1
    assert "taudash.engine.incremental" in run["modules"]  # it did derive the view
    assert _unwanted(run["modules"]) == []


def test_json_status_needs_no_table_renderer():
    assert "rich" not in {m.split(".")[0] for m in _run(["status", "--snapshot", DEMO, "-o", "json"])["modules"]}


def test_struct_decoded_kinds_build_no_pydantic_schema_on_a_snapshot_read():
    # The demo holds Nodes, Pods, Jobs, CSINodes and Workloads; all decode as structs, none falls back.
    built = _run(["status", "--snapshot", DEMO, "-o", "json"])["built"]
    assert built == {"Node": False, "Pod": False, "Job": False, "CSINode": False, "Workload": False,
                     "ClusterQueue": True, "LocalQueue": True}


def test_a_live_status_connects_without_the_client_librarys_generated_models(demo_sim):
    # kubernetes_asyncio's package imports load ~800 models and every API class; taudash calls the API
    # with raw answers only, so a connecting CLI process reads the cluster without them (decision 172).
    run = _run(["--kubeconfig", str(demo_sim.kubeconfig), "status", "-o", "json"])
    assert run["code"] in (0, 1)
    assert "kubernetes_asyncio.client.api_client" in run["modules"]  # it did connect through the library
    generated = [m for m in run["modules"] if m.startswith(("kubernetes_asyncio.client.models.",
                                                            "kubernetes_asyncio.client.api."))]
    assert generated == []
