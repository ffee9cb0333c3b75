"""Credentials and private files.

- No Secret is ever read: the informers and every command never request `secrets` (the server's
  request log), and the snapshot loader skips Secrets without loading or exporting them.
- A recognisable bearer token and client certificate/key in the kubeconfig never appear in log
  records, stdout/stderr, exports, journals, the audit log or error messages (every file taudash
  wrote is searched), across reads, exports, workflows, refused writes and failed connections.
- Files that may hold cluster data are 0600 in 0700 directories (export, journal, audit log, the
  simulator's kubeconfig); the profile snapshot is 0644 by TauGrid's convention (a shareable review
  artifact holding profile declarations only).
- The simulator's API server listens on 127.0.0.1 only (checked on the bound socket) and answers
  401 without its token.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import socket
import ssl
import subprocess
from pathlib import Path

import aiohttp
import pytest
import yaml
from tools.livedash import close, dashboard, live_session
from tools.waiting import next_renders

from taudash.cli import main
from taudash.engine.model import KINDS
from taudash.engine.sources.export import export_snapshot
from taudash.engine.sources.snapshot import load_snapshot
from taudash.sim.apiserver import ApiServer
from taudash.sim.objects import ObjectDB
from taudash.sim.server import SimServer

TOKEN = "tdsecret-7f3a9c2e41b8d6f05e7a9c3b1d2e4f60"
WRONG = "tdwrong-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
SECRET_VALUE = "cGFzc3dvcmQtZnJvbS1hLXNlY3JldA=="


def client_cert(tmp: Path) -> tuple[bytes, bytes]:
    key, crt = tmp / "client.key", tmp / "client.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(crt), "-days", "2", "-subj", "/CN=taudash-test-user"],
                   check=True, capture_output=True)
    data = key.read_bytes(), crt.read_bytes()
    key.unlink()
    crt.unlink()
    return data


def with_client_cert(kubeconfig: Path, key: bytes, crt: bytes) -> None:
    cfg = yaml.safe_load(kubeconfig.read_text())
    cfg["users"][0]["user"].update({"client-certificate-data": base64.b64encode(crt).decode(),
                                    "client-key-data": base64.b64encode(key).decode()})
    kubeconfig.write_text(yaml.safe_dump(cfg))
    kubeconfig.chmod(0o600)


def needles(key: bytes, crt: bytes) -> dict[str, str]:
    """Recognisable pieces of every credential, raw and encoded."""
    key_body = "".join(key.decode().splitlines()[1:-1])
    crt_body = "".join(crt.decode().splitlines()[1:-1])
    return {
        "token": TOKEN, "token (base64)": base64.b64encode(TOKEN.encode()).decode()[:24], "token (tail)": TOKEN[-16:],
        "wrong token": WRONG, "client key": key_body[20:60],
        "client key (kubeconfig)": base64.b64encode(key).decode()[40:80],
        "client cert": crt_body[40:80], "secret value": SECRET_VALUE,
    }


def scan(where: str, text: str, found: list) -> None:
    for name, needle in NEEDLES.items():
        if needle in text:
            found.append(f"{name} in {where}")


NEEDLES: dict[str, str] = {}


def cli(*args: str) -> int:
    return main(list(args))


async def test_credentials_never_leak_and_private_files_stay_private(tmp_path, monkeypatch, capsys, caplog):
    caplog.set_level(logging.DEBUG)  # every library's records, debug included
    state = tmp_path / "state"
    monkeypatch.setenv("TAUDASH_STATE_DIR", str(state))
    key, crt = client_cert(tmp_path)
    NEEDLES.update(needles(key, crt))
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "train"},
              "data": {"password": SECRET_VALUE}}
    kc = tmp_path / "kc" / "config"
    out = tmp_path / "out"
    out.mkdir()
    async with SimServer(token=TOKEN, kubeconfig=kc) as sim:
        assert oct(kc.stat().st_mode & 0o777) == "0o600"
        with_client_cert(kc, key, crt)
        kc_text = kc.read_text()  # the needles are real: the credential file itself holds them
        assert TOKEN in kc_text and NEEDLES["client key (kubeconfig)"] in kc_text
        k = str(kc)
        run = asyncio.to_thread
        assert await run(cli, "status", "--kubeconfig", k, "-o", "json") == 0
        assert await run(cli, "status", "--kubeconfig", k, "-o", "table") == 0
        assert await run(cli, "check", "-v", "--kubeconfig", k) in (0, 1)
        assert await run(cli, "export", "--kubeconfig", k, "-o", str(out / "cluster.yaml")) == 0
        assert await run(cli, "profiles", "select", "--kubeconfig", k, "--namespace", "train", "--team", "research",
                         "--lane", "training") in (0, 1)
        assert await run(cli, "profiles", "export", "--kubeconfig", k, "--output", str(out / "profiles.yaml")) == 0
        # a workflow that writes (journal + audit log), one refused by RBAC, one failing with a 500
        assert await run(cli, "workflow", "start", "hold", "--cq", "tau-ws-train", "--mode", "Hold", "--keep-pending",
                         "--kubeconfig", k, "--yes", "--poll", "0.05") == 0
        sim.faults.forbid("clusterqueues.kueue.x-k8s.io", verbs={"patch"})
        assert await run(cli, "workflow", "start", "hold", "--cq", "tau-ws-eval", "--keep-pending",
                         "--kubeconfig", k, "--yes", "--poll", "0.05") != 0
        sim.faults.clear()
        sim.faults.fail(500, resource="clusterqueues.kueue.x-k8s.io", verbs={"patch"})
        assert await run(cli, "workflow", "start", "hold", "--cq", "tau-ws-vision", "--keep-pending",
                         "--kubeconfig", k, "--yes", "--poll", "0.05") != 0
        sim.faults.clear()
        assert await run(cli, "workflow", "list") == 0
        for wid in [p.stem for p in (state / "workflows").glob("*.jsonl")]:
            assert await run(cli, "workflow", "status", wid) == 0
        # the dashboard on the live source, through every screen
        session, source = await live_session(sim)
        app = dashboard(session, tick=0.2)
        async with app.run_test(size=(120, 36), notifications=True) as pilot:
            for key_ in "123456789":
                await pilot.press(key_)
            await next_renders(app)
        await close(source)
        # a Secret in the cluster's data path: the simulator refuses to hold one; the loader skips it
        assert sim.db.seed([secret]) == 0
        # nothing ever asked for Secrets, and only the kinds taudash reads were listed or watched
        paths = [r.path for r in sim.api.requests]
        assert not [p for p in paths if "/secrets" in p]
        resources = {r.resource for r in sim.api.requests if r.verb in ("list", "watch")}
        assert resources <= {f"{k.plural}.{k.group}" if k.group else k.plural for k in KINDS}

        # failures: a rejected token, an unreachable server, a broken kubeconfig — none quotes a credential
        bad = tmp_path / "bad"
        bad.mkdir()
        wrong = yaml.safe_load(kc.read_text())
        wrong["users"][0]["user"]["token"] = WRONG
        (bad / "wrong").write_text(yaml.safe_dump(wrong))
        assert await run(cli, "status", "--kubeconfig", str(bad / "wrong")) == 3
    unreachable = dict(wrong, clusters=[{"name": wrong["clusters"][0]["name"],
                                         "cluster": {"server": "https://127.0.0.1:9"}}])
    (bad / "unreachable").write_text(yaml.safe_dump(unreachable))
    assert await asyncio.to_thread(cli, "status", "--kubeconfig", str(bad / "unreachable")) == 3
    broken = dict(wrong, **{"current-context": "nowhere"})
    (bad / "broken").write_text(yaml.safe_dump(broken))
    assert await asyncio.to_thread(cli, "status", "--kubeconfig", str(bad / "broken")) == 2
    assert await asyncio.to_thread(cli, "status", "--kubeconfig", str(bad / "wrong"), "--context", "nope") == 2

    # the loader: a Secret among objects is skipped (not loaded, not an issue, not exported)
    snap = tmp_path / "with-secret.yaml"
    snap.write_text(yaml.safe_dump_all([secret, {"apiVersion": "v1", "kind": "List", "items": [secret]},
                                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "train"}}]))
    loaded = load_snapshot(snap)
    assert loaded.objects == 1 and not loaded.issues and not loaded.unknown_kinds
    export_snapshot(loaded.store, out / "from-snapshot.yaml", None, "2026-11-30T09:00:00Z")
    snap.unlink()

    found: list[str] = []
    captured = capsys.readouterr()
    scan("stdout", captured.out, found)
    scan("stderr", captured.err, found)
    scan("log records", caplog.text + "".join(str(r.args) for r in caplog.records), found)
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.parent.name not in ("kc", "bad")]
    names = sorted(str(p.relative_to(tmp_path)) for p in written)
    assert {"out/cluster.yaml", "out/profiles.yaml", "out/from-snapshot.yaml", "state/audit.log"} <= set(names), names
    assert sum(n.endswith(".jsonl") for n in names) == 3, names
    for p in written:
        scan(str(p.relative_to(tmp_path)), p.read_bytes().decode("utf-8", "replace"), found)
    assert found == []
    assert "Unauthorized" in captured.err or "credentials rejected" in captured.err  # the 401 was reported

    # private files: cluster data 0600 in 0700 directories; the profile snapshot 0644 by convention
    modes = {str(p.relative_to(tmp_path)): oct(p.stat().st_mode & 0o777) for p in written}
    assert modes.pop("out/profiles.yaml") == "0o644"
    assert set(modes.values()) == {"0o600"}, modes
    assert any(p.endswith(".jsonl") for p in modes) and "state/audit.log" in modes
    for d in (state, state / "workflows"):
        assert oct(d.stat().st_mode & 0o777) == "0o700", d


# --- the simulator's API server -----------------------------------------------------------------------

def listeners(port: int) -> list[str]:
    """Local addresses with a listening TCP socket on `port` (from /proc/net/tcp and tcp6)."""
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, p = local.split(":")
            if int(p, 16) == port and state == "0A":  # LISTEN
                if len(addr) == 8:
                    out.append(socket.inet_ntop(socket.AF_INET, bytes.fromhex(addr)[::-1]))
                else:
                    raw = bytes.fromhex(addr)
                    out.append(socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))))
    return out


def host_addresses() -> set[str]:
    """This machine's non-loopback addresses (the route a packet would take; the host name's)."""
    found = set()
    for family, probe in ((socket.AF_INET, "192.0.2.254"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((probe, 9))  # UDP connect sends nothing; it only picks the source address
                found.add(s.getsockname()[0])
        except OSError:
            pass
    try:
        found |= {a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None)}
    except OSError:
        pass
    return {a for a in found if not a.startswith("127.") and a != "::1"}


def refused(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return False
    except OSError:
        return True


async def test_simulator_listens_on_loopback_only_and_requires_its_token():
    with pytest.raises(ValueError):
        ApiServer(ObjectDB(), host="0.0.0.0")
    async with SimServer(token=TOKEN) as sim:
        # `taudash demo` and `sim serve` write the kubeconfig (it holds the token) into a private directory
        assert oct(sim.kubeconfig.stat().st_mode & 0o777) == "0o600"
        assert oct(sim.kubeconfig.parent.stat().st_mode & 0o777) == "0o700"
        assert oct(sim.cert.key.stat().st_mode & 0o777) == "0o600"
        port = sim.api.port
        assert listeners(port) == ["127.0.0.1"]
        assert [a[0] for a in sim.api._runner.addresses] == ["127.0.0.1"]
        assert refused("127.0.0.2", port)  # another loopback address: nothing listens there
        others = host_addresses()
        for addr in others:  # the machine's own non-loopback addresses: nothing listens there either
            assert refused(addr, port), addr
        ctx = ssl.create_default_context(cafile=str(sim.cert.cert))
        url = sim.url + "/api/v1/nodes"
        async with aiohttp.ClientSession() as http:
            for headers, want in (({}, 401), ({"Authorization": f"Bearer {WRONG}"}, 401),
                                  ({"Authorization": f"Basic {base64.b64encode(TOKEN.encode()).decode()}"}, 401),
                                  ({"Authorization": f"Bearer {TOKEN}"}, 200)):
                async with http.get(url, headers=headers, ssl=ctx) as resp:
                    assert resp.status == want, (headers, resp.status)
                    body = await resp.text()
                    assert TOKEN not in body and WRONG not in body
            async with http.get(sim.url + "/version", ssl=ctx) as resp:  # public, as on a real cluster
                assert resp.status == 200
        # plain HTTP to the TLS port gets no data
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"GET /api/v1/nodes HTTP/1.1\r\nHost: x\r\n\r\n")
            s.settimeout(2)
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            assert b'"items"' not in data
