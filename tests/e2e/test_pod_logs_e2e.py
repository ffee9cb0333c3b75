"""Pod logs end to end against the simulator (taudash/sim/logs.py): the engine's on-demand read
(engine/sources/ondemand.py `stream_log`) and kubectl itself get the same deterministic lines; follow gets a new
line as the container writes it; a 403 (the pods/log fault, and RBAC without pods/log) is a refusal the screen
words as "not allowed to read logs"; a container that has not started answers 400 as the API server does."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import aiohttp
import pytest
from factories import granted_service_account
from tools.simhttp import request
from tools.waiting import eventually

from taudash.engine.rules.base import ObjRef
from taudash.engine.sources.client import connect
from taudash.engine.sources.ondemand import ERROR, FORBIDDEN, SYNCED, KubeOnDemand, LogOptions
from taudash.screens.pod_logs import refusal, split_stamp
from taudash.sim.server import SimServer

RUNNING = ObjRef(kind="Pod", namespace="eval", name="data-validate-tvscz")


async def reader(sim: SimServer) -> KubeOnDemand:
    target = await connect(kubeconfig=str(sim.kubeconfig))
    return KubeOnDemand(target)


async def read(od: KubeOnDemand, ref: ObjRef, **opts):
    lines: list[str] = []
    end = await od.stream_log(ref, LogOptions(**opts), lines.extend)
    return end, lines


async def test_a_running_pod_has_deterministic_lines_with_timestamps_and_a_tail(sim_server):
    od = await reader(sim_server)
    try:
        end, lines = await read(od, RUNNING, tail_lines=5, timestamps=True)
        assert end.access == SYNCED and len(lines) == 5
        stamp, text = split_stamp(lines[-1])
        assert stamp.endswith("Z") and text.startswith("step ") and " loss " in text
        _, again = await read(od, RUNNING, tail_lines=50, timestamps=True)
        first, second = dict(map(split_stamp, lines)), dict(map(split_stamp, again))
        assert set(first) & set(second)  # the clock moves on, the lines written stay what they were
        assert all(first[t] == second[t] for t in set(first) & set(second))
        end, plain = await read(od, RUNNING, tail_lines=2)
        assert all(not split_stamp(x)[0] for x in plain)  # no timestamps unless asked
    finally:
        await od.target.close()


async def test_follow_streams_a_new_line_and_the_cancelled_read_ends(sim_server):
    sim_server.api.log_every = 0.2  # a line every 0.2 s of the server's clock
    od = await reader(sim_server)
    lines: list[str] = []
    try:
        task = asyncio.create_task(od.stream_log(RUNNING, LogOptions(follow=True, tail_lines=1), lines.extend))
        assert await eventually(lambda: len(lines) >= 1)
        first = lines[0]
        assert await eventually(lambda: len(lines) >= 3)  # written after the read began: streamed
        assert lines[0] == first and lines[1] != first
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        await od.target.close()


async def test_forbidden_logs_are_a_refusal_the_pods_still_readable(sim_server):
    sim_server.faults.forbid_logs()
    od = await reader(sim_server)
    try:
        end, lines = await read(od, RUNNING)
        assert end.access == FORBIDDEN and end.status == 403 and not lines
        assert refusal(end).startswith("not allowed to read logs (")
        assert 'cannot get resource "pods/log"' in end.message
        assert (await od.full_object(RUNNING)).access == SYNCED  # only the log is refused
        sim_server.faults.forbid_logs(False)
        end, lines = await read(od, RUNNING, tail_lines=1)
        assert end.access == SYNCED and len(lines) == 1
    finally:
        await od.target.close()


async def test_rbac_without_pods_log_is_403_and_with_it_the_log_reads(tmp_path):
    path = f"/api/v1/namespaces/{RUNNING.namespace}/pods/{RUNNING.name}/log"
    async with SimServer(kubeconfig=tmp_path / "kube" / "config", rbac=True) as sim:
        tokens = {}
        for name, resources in (("pods-only", ["pods"]), ("with-logs", ["pods", "pods/log"])):
            for obj in granted_service_account("eval", name, [{"apiGroups": [""], "resources": resources,
                                                                "verbs": ["get", "list"]}], cluster=False):
                sim.db.create(obj)
            tokens[name] = sim.service_account_token("eval", name)
        status, body = await request(sim, "GET", path, None, token=tokens["pods-only"])
        assert status == 403 and 'cannot get resource "pods/log"' in body["message"]
        assert (await request(sim, "GET", f"/api/v1/namespaces/eval/pods/{RUNNING.name}", None,
                              token=tokens["pods-only"]))[0] == 200  # the Pod itself is readable
        headers = {"Authorization": f"Bearer {tokens['with-logs']}"}
        async with aiohttp.ClientSession() as s, s.get(sim.url + path + "?tailLines=2", headers=headers,
                                                       ssl=sim.cert.client_context()) as r:
            assert r.status == 200 and r.content_type == "text/plain"
            assert len((await r.text()).splitlines()) == 2


async def test_a_container_not_started_answers_400_in_the_api_servers_words(sim_server):
    db = sim_server.db
    pod = db.get("Pod", RUNNING.name, RUNNING.namespace)
    waiting = [{**c, "ready": False, "started": False, "state": {"waiting": {"reason": "ContainerCreating"}}}
               for c in pod["status"]["containerStatuses"]]
    db.patch_merge("Pod", RUNNING.name, {"status": {"phase": "Pending", "containerStatuses": waiting}},
                   RUNNING.namespace, subresource="status")
    unscheduled = next(p for p in db.list("Pod") if not p["spec"].get("nodeName"))
    od = await reader(sim_server)
    try:
        end, lines = await read(od, RUNNING)
        assert (end.access, end.status) == (ERROR, 400) and not lines
        assert refusal(end) == f'container "main" in pod "{RUNNING.name}" is waiting to start: ContainerCreating'
        name = unscheduled["metadata"]["name"]
        end, _ = await read(od, ObjRef(kind="Pod", namespace=unscheduled["metadata"]["namespace"], name=name))
        assert end.status == 400 and end.message == f"pod {name} does not have a host assigned"
        end, _ = await read(od, ObjRef(kind="Pod", namespace="eval", name="mmlu-sweep-17-jdmwq"), previous=True)
        assert end.status == 400 and "previous terminated container" in end.message  # it never restarted
        end, _ = await read(od, ObjRef(kind="Pod", namespace="eval", name="no-such-pod"))
        assert end.status == 404
    finally:
        await od.target.close()


async def test_kubectl_logs_reads_the_same_lines(sim_server):
    assert shutil.which("kubectl"), "kubectl is needed: the simulator's promise is that kubectl works"
    od = await reader(sim_server)
    try:
        _, ours = await read(od, ObjRef(kind="Pod", namespace="train", name="code-llm-sft-rdb25"), tail_lines=50,
                             timestamps=True)
    finally:
        await od.target.close()
    out = await asyncio.to_thread(subprocess.run, [
        "kubectl", "--kubeconfig", str(sim_server.kubeconfig), "logs", "-n", "train", "code-llm-sft-rdb25",
        "--tail=3", "--timestamps"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    theirs = dict(map(split_stamp, out.stdout.splitlines()))
    mine = dict(map(split_stamp, ours))
    assert len(theirs) == 3 and set(theirs) & set(mine)
    assert all(theirs[t] == mine[t] for t in set(theirs) & set(mine))
