"""taudash reads every simulated Kueue release the same way: `taudash status -o json` against Kueue
0.14 (v1beta1 only), 0.15 (v1beta1 stored, v1beta2 served) and 0.19 gives the same document as
against the default, apart from where it was read from."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from tools.paths import DEMO

from taudash.cli import main
from taudash.sim.server import SimServer


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    for var in ("TAUDASH_READ_ONLY", "TAUDASH_CONFIG", "KUBECONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)


def status_against(capsys, **kwargs) -> tuple[dict, SimServer]:
    """`taudash status -o json` against a frozen simulator served from its own loop thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = SimServer(DEMO, **kwargs)
    try:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(60)
        capsys.readouterr()
        code = main(["status", "--kubeconfig", str(server.kubeconfig), "-o", "json"])
        out = capsys.readouterr().out
        assert code in (0, 1), out  # 1: the demo has findings
        return json.loads(out), server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def comparable(doc: dict) -> dict:
    doc = dict(doc)
    doc.pop("source", None)  # where it was read from: a new server (port, uid) each time
    return doc


def test_status_json_is_the_same_against_every_kueue_release(capsys):
    default, _ = status_against(capsys)
    assert default["clusterQueues"] and default["workspaces"] and default["waiting"]
    for version in ("0.14", "0.15", "0.19"):
        doc, server = status_against(capsys, kueue_version=version)
        # it did read the Kueue objects at the release's preferred version (0.14: after a 404 at v1beta2)
        kueue_paths = {r.path.split("/")[3] for r in server.api.requests
                       if r.path.startswith("/apis/kueue.x-k8s.io/") and r.verb in ("list", "watch")
                       and r.status == 200}
        assert kueue_paths == {server.kueue.preferred}, (version, kueue_paths)
        assert comparable(doc) == comparable(default), version
