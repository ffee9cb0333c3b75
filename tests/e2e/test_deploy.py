"""taudash in the cluster, as processes: `sim serve --rbac`, `taudash deploy manifests | kubectl apply -f -`,
`kubectl create token`, then `taudash status` and `taudash serve` in the Pod's environment (the
ServiceAccount folder in tmp, no kubeconfig) — every kind readable, nothing written, one removed rule
one Forbidden kind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import urllib.error
import urllib.request

import pytest
import yaml
from tools.paths import FIXTURES, REPO

from taudash.cli import main
from taudash.deploy import manifests as mf
from taudash.engine.model import KINDS

FIXTURE = FIXTURES / "sim-cluster.yaml"


def test_deploy_manifests_prints_the_builders_documents(capsys):
    assert main(["deploy", "manifests", "--namespace", "ops", "--web", "--image", "example/td:1"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert docs == mf.build(mf.Options("ops", True, "example/td:1"))
    assert main(["deploy", "manifests", "--service-monitor"]) == 0
    assert list(yaml.safe_load_all(capsys.readouterr().out))[-1]["kind"] == "ServiceMonitor"


@pytest.mark.parametrize("args", [["--namespace", "Bad_NS"], ["--image", "a b"]])
def test_deploy_manifests_refuses_bad_input_with_exit_2(capsys, args):
    assert main(["deploy", "manifests", *args]) == 2
    assert "--" in capsys.readouterr().err


class Cluster:
    """`sim serve --rbac` in a process of its own, and kubectl as its administrator."""

    def __init__(self, tmp_path) -> None:
        self.tmp = tmp_path
        self.kubeconfig = tmp_path / "admin" / "kubeconfig"
        self.proc: asyncio.subprocess.Process | None = None
        self.url = ""

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "taudash.cli", "sim", "serve", "--rbac", "--no-controllers", "--snapshot",
            str(FIXTURE), "--kubeconfig-out", str(self.kubeconfig),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO)
        lines: list[str] = []
        while not any(line.startswith("rbac:") for line in lines):
            line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
            assert line, (await self.proc.stderr.read()).decode()
            lines.append(line.decode().strip())
        self.url = lines[0].rsplit(" at ", 1)[1]

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGINT)
            assert await asyncio.wait_for(self.proc.wait(), 30) == 0

    async def kubectl(self, *args: str, stdin: bytes | None = None) -> str:
        env = {**os.environ, "HOME": str(self.tmp / "admin")}
        proc = await asyncio.create_subprocess_exec(
            "kubectl", "--kubeconfig", str(self.kubeconfig), "--request-timeout=20s", *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
        out, err = await asyncio.wait_for(proc.communicate(stdin), 60)
        assert proc.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
        return out.decode()

    def pod_env(self, token: str) -> dict[str, str]:
        """What the kubelet gives the Pod: the service's address and the ServiceAccount's files."""
        folder = self.tmp / "serviceaccount"
        folder.mkdir(exist_ok=True)
        (folder / "token").write_text(token)
        ca = yaml.safe_load(self.kubeconfig.read_text())["clusters"][0]["cluster"]["certificate-authority-data"]
        import base64

        (folder / "ca.crt").write_bytes(base64.b64decode(ca))
        (folder / "namespace").write_text("taudash")
        host, port = self.url.removeprefix("https://").rsplit(":", 1)
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        (self.tmp / "pod-home").mkdir(exist_ok=True)
        return {**env, "KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port,
                "TAUDASH_SERVICEACCOUNT_DIR": str(folder), "HOME": str(self.tmp / "pod-home"),
                "XDG_STATE_HOME": str(self.tmp / "state"), "XDG_CONFIG_HOME": str(self.tmp / "config")}


async def status_json(env: dict[str, str]) -> dict:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "taudash.cli", "status", "-o", "json",
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                env=env, cwd=REPO)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert out, err.decode()
    return json.loads(out)


def unreadable(status: dict) -> dict[str, str]:
    return {a["resource"]: a["state"] for a in status["access"] if a["state"] != "Synced"}


async def test_deployed_taudash_reads_everything_writes_nothing_and_one_removed_rule_is_one_forbidden_kind(tmp_path):
    cluster = Cluster(tmp_path)
    await cluster.start()
    try:
        printer = await asyncio.create_subprocess_exec(sys.executable, "-m", "taudash.cli", "deploy", "manifests",
                                                       stdout=asyncio.subprocess.PIPE, cwd=REPO)
        manifests, _ = await asyncio.wait_for(printer.communicate(), 60)
        assert printer.returncode == 0
        applied = await cluster.kubectl("apply", "--validate=false", "-f", "-", stdin=manifests)
        assert "deployment.apps/taudash created" in applied and "service/taudash created" in applied
        token = (await cluster.kubectl("create", "token", "taudash", "-n", "taudash")).strip()
        env = cluster.pod_env(token)

        status = await status_json(env)
        assert status["source"]["context"] == "in-cluster"
        assert unreadable(status) == {}
        assert {a["resource"] for a in status["access"]} == {k.resource for k in KINDS}

        # a write with the token: 403 (kubectl as the ServiceAccount)
        proc = await asyncio.create_subprocess_exec(
            "kubectl", "--kubeconfig", str(cluster.kubeconfig), "--token", token, "delete", "localqueue", "jobqueue",
            "-n", "training", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "HOME": str(tmp_path / "admin")})
        _, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode != 0 and "forbidden" in err.decode().lower()
        assert "cannot delete resource" in err.decode()

        # `taudash serve` in the Pod: ready once synced, its metrics say every kind Synced
        serve = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "taudash.cli", "serve", "--metrics", "127.0.0.1:0", "--interval", "0.5",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env, cwd=REPO)
        try:
            url = ""
            while not url:
                line = (await asyncio.wait_for(serve.stderr.readline(), 60)).decode()
                assert line, "serve exited before announcing its metrics"
                if "metrics on " in line:
                    url = line.split("metrics on ", 1)[1].strip()
            ready = url.replace("/metrics", "/readyz")

            def readyz() -> int:
                try:
                    return urllib.request.urlopen(ready, timeout=10).status
                except urllib.error.HTTPError as exc:
                    return exc.code

            for _ in range(600):
                if await asyncio.to_thread(readyz) == 200:
                    break
                await asyncio.sleep(0.1)
            assert await asyncio.to_thread(readyz) == 200
            body = (await asyncio.to_thread(urllib.request.urlopen, url, timeout=10)).read().decode()
            from prometheus_client.parser import text_string_to_metric_families

            fams = {f.name: f for f in text_string_to_metric_families(body)}
            current = {s.labels["resource"]: s.labels["state"] for s in fams["taudash_access_state"].samples
                       if s.value == 1}
            assert current == {k.resource: "Synced" for k in KINDS}
        finally:
            serve.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(serve.wait(), 30) == 0

        # one rule removed from the role: exactly that kind is Forbidden
        role = json.loads(await cluster.kubectl("get", "clusterrole", "taudash-read", "-o", "json"))
        batch = next(i for i, r in enumerate(role["rules"]) if r["apiGroups"] == ["batch"])
        patch = json.dumps([{"op": "remove", "path": f"/rules/{batch}"}])
        await cluster.kubectl("patch", "clusterrole", "taudash-read", "--type", "json", "-p", patch)
        assert unreadable(await status_json(env)) == {"jobs.batch": "Forbidden"}
    finally:
        await cluster.stop()
