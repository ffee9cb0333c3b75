"""The catalog workflow end to end against each simulated Kueue release (0.14: v1beta1 only; 0.15:
v1beta1 stored, v1beta2 served by conversion; 0.19: v1beta2 stored): the same story and the same
assertions as tests/e2e/test_workflows_catalog_e2e.py, on every release."""

from __future__ import annotations

import pytest
import test_workflows_catalog_e2e as catalog_e2e  # the same stories, on every release
from tools.workflows import CQ, harness


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TAUDASH_SIM_STRICT", "1")
    return tmp_path / "state"


@pytest.fixture(params=["0.14", "0.15", "0.19"])
async def h(request):
    async with harness(request.param) as it:
        yield it


async def test_catalog_change_holds_restores_and_reactivates_on_each_release(h, tmp_path):
    kv = h.sim.kueue
    assert h.live.source.version_of("ClusterQueue") == kv.preferred
    await catalog_e2e.test_catalog_holds_only_affected_queues_restores_hold_then_reactivates(h, tmp_path)
    paths = {r.path for r in h.sim.api.requests if r.resource == CQ and r.verb == "patch"}
    assert paths and all(p.startswith(f"/apis/kueue.x-k8s.io/{kv.preferred}/") for p in paths)
    assert h.sim.db.stored(CQ, "tau-ws-eval")["apiVersion"] == f"kueue.x-k8s.io/{kv.storage}"
    assert h.world.writer.invalid == 0 and h.world.errors == []


async def test_hold_annotates_lists_and_release_reactivates_on_each_release(h, capsys):
    await catalog_e2e.test_hold_annotates_lists_and_release_reactivates(h, capsys)
    assert h.world.writer.invalid == 0
