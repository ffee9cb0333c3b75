"""Where things are, for every test level (tests/unit, tests/ui, tests/sim, tests/e2e): never derive the repository
root from a test file's own depth."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
FIXTURES = TESTS / "fixtures"  # small hand-written clusters and a workflow state directory
SNAPSHOTS = REPO / "snapshots"  # the shipped snapshots (demo, drain-blocked, pool-*)
DEMO = SNAPSHOTS / "demo.yaml"
SIM_CLUSTER = FIXTURES / "sim-cluster.yaml"
UI_DEMO = FIXTURES / "ui-demo.yaml"
WORKFLOW_STATE = FIXTURES / "workflow-state"
