"""Agents (docs/fleet.md, "A fleet from agents"): `taudash serve` publishes the ClusterStatus at
/api/v1/status, token-guarded as the wallboard; `status`/`check --fleet-from` and the agent fleet read
many of them, each its own failure domain (in-process agents: serve's own handler on real ports)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from tools.paths import DEMO
from tools.waiting import eventually

from taudash.agents import Agent, AgentFleet, AgentMember, resolve_agents, status_url
from taudash.cli import main
from taudash.engine.incremental import derive
from taudash.engine.session import Freshness
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.view import SUMMARY_FIELDS
from taudash.errors import UsageError
from taudash.serve.agent import StatusDocument, status_app

TOKEN = "agent-token-0123456789abcdef"


def demo_status() -> dict:
    out = subprocess.run([sys.executable, "-m", "taudash.cli", "status", "-o", "json", "--snapshot", str(DEMO)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def get(url: str, token: str | None = None, **headers: str):
    req = urllib.request.Request(url, headers={**({"Authorization": f"Bearer {token}"} if token else {}), **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


# --- the agent's endpoint ---------------------------------------------------------------------------


def test_serve_publishes_the_status_contract_beside_metrics_only_with_its_token(tmp_path):
    env = {**__import__("os").environ, "TAUDASH_WEB_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, "-m", "taudash.cli", "serve", "--snapshot", str(DEMO),
                             "--metrics", "127.0.0.1:0", "--interval", "0.5"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=tmp_path, env=env)
    try:
        url = None
        for _ in range(200):
            line = proc.stderr.readline()
            if "the agent's status on http" in line:
                url = line.split(" on ", 1)[1].split()[0]
                assert "(bearer token)" in line
                break
        assert url is not None and url.endswith("/api/v1/status")
        end = time.monotonic() + 120
        code = 503
        while code == 503 and time.monotonic() < end:  # 503 until serve's first view
            code, headers, body = get(url, TOKEN)
            time.sleep(0.1)
        assert code == 200, body
        # the body is the contract: exactly what `status -o json` prints for the same source
        assert json.loads(body) == demo_status()
        assert headers["Content-Type"] == "application/json" and int(headers["Age"]) >= 0
        assert float(headers["X-Taudash-Derived-At"]) > 0 and "X-Taudash-Stale" not in headers
        # without the token, or with another one: refused, as the wallboard refuses them
        assert get(url)[0] == 401
        assert get(url, "x" * 32)[0] == 401
        # gzip on request; 304 for the document the client holds
        code, zipped, zbody = get(url, TOKEN, **{"Accept-Encoding": "gzip"})
        assert code == 200 and zipped["Content-Encoding"] == "gzip" and json.loads(gzip.decompress(zbody)) == \
            json.loads(body)
        assert get(url, TOKEN, **{"If-None-Match": headers["ETag"]})[0] == 304
        assert get(url, TOKEN, **{"If-None-Match": '"other"'})[0] == 200
        # the summary: the same document with only the fields a fleet's row reads; any other view is refused
        code, _, summary = get(url + "?view=summary", TOKEN)
        full = json.loads(body)
        assert code == 200 and json.loads(summary) == {k: full[k] for k in SUMMARY_FIELDS}
        assert "waiting" in full and len(summary) < len(body)
        assert get(url + "?view=everything", TOKEN)[0] == 400
        # the metrics are where they were
        assert get(url.replace("/api/v1/status", "/metrics"))[0] == 200
        proc.terminate()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def call(app, method: str = "GET", **environ: str) -> tuple[str, dict, bytes]:
    seen: dict = {}

    def start(status, headers):
        seen["status"], seen["headers"] = status, dict(headers)

    body = b"".join(app({"REQUEST_METHOD": method, **environ}, start))
    return seen["status"], seen["headers"], body


def published(fresh: Freshness | None = None) -> StatusDocument:
    doc = StatusDocument(clock=lambda: 1010.0)
    doc.publish(derive(load_snapshot(DEMO).store, datetime(2026, 11, 30, 9, 5, tzinfo=UTC)), fresh, 1000.0)
    return doc


def test_the_status_handler_is_read_only_and_fails_closed():
    assert call(status_app(StatusDocument(), None, True))[0].startswith("503")  # nothing derived yet
    doc = published()
    status, headers, _ = call(status_app(doc, None, True))
    assert status.startswith("200") and headers["Age"] == "10"
    assert call(status_app(doc, None, True), "POST")[0].startswith("405")
    assert call(status_app(doc, None, True), "HEAD")[2] == b""
    # beyond loopback without a token: never published, and said why
    status, _, body = call(status_app(doc, None, False))
    assert status.startswith("403") and b"TAUDASH_WEB_TOKEN" in body
    assert call(status_app(doc, TOKEN, False), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")[0].startswith("200")
    assert call(status_app(doc, TOKEN, False), HTTP_AUTHORIZATION="Bearer nope")[0].startswith("401")


def test_an_agent_whose_own_watches_fail_says_it_is_stale():
    fresh = Freshness(mode="LIVE", read_only=True, age=40.0, observed_at=None, revision=1, unreachable=True,
                      unreachable_why="no answer for 40 s")
    _, headers, _ = call(status_app(published(fresh), None, True))
    assert headers["X-Taudash-Stale"] == "the agent's API is unreachable: no answer for 40 s"
    assert headers["X-Taudash-Watch-Age"] == "40.0"


# --- a fleet from in-process agents, one of them down ---------------------------------------------------


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


class InProcessAgent:
    """serve's status handler on a real loopback port, in a thread; `stop()` takes it down."""

    def __init__(self, document: StatusDocument, token: str | None = None) -> None:
        self.httpd = make_server("127.0.0.1", 0, status_app(document, token, True), handler_class=_Quiet)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def agents():
    doc = published()
    started = [InProcessAgent(doc), InProcessAgent(doc), InProcessAgent(doc, TOKEN)]
    yield started
    for a in started:
        try:
            a.stop()
        except OSError:
            pass


def test_status_and_check_over_agents_with_one_down(agents, cli_env, capsys, monkeypatch):
    monkeypatch.setenv("TAUDASH_AGENT_TOKEN", TOKEN)
    doc = json.loads(published().latest.body)
    agents[1].stop()
    urls = [a.url for a in agents]
    assert main(["status", *(x for u in urls for x in ("--fleet-from", u)), "-o", "json"]) == 3
    out, err = capsys.readouterr()
    fleet = json.loads(out)
    assert fleet["kind"] == "FleetStatus" and [c["reachable"] for c in fleet["clusters"]] == [True, False, True]
    assert fleet["clusters"][0]["status"] == doc and fleet["clusters"][2]["status"] == doc  # the agents' documents
    assert fleet["clusters"][1]["status"] is None and "Cannot connect" in fleet["clusters"][1]["error"]
    assert f"{agents[1].url.removeprefix('http://')}: unreachable" in err
    # check: the demo has critical findings (exit 1); without them the agent down is exit 3 (fail closed)
    code = main(["check", *(x for u in urls for x in ("--fleet-from", u))])
    out = capsys.readouterr().out
    assert code == 1 and "2 clusters from agents" not in out and "3 clusters from agents, 1 unreachable" in out


def test_an_agent_without_its_token_is_unreachable_with_the_reason(agents, cli_env, capsys, monkeypatch):
    monkeypatch.delenv("TAUDASH_AGENT_TOKEN", raising=False)
    assert main(["status", "--fleet-from", agents[2].url, "--fleet-from", agents[0].url, "-o", "json"]) == 3
    fleet = json.loads(capsys.readouterr().out)
    assert fleet["clusters"][0]["error"].startswith("HTTP 401") and fleet["clusters"][1]["reachable"]


async def test_the_agent_fleet_keeps_every_other_cluster_live_when_one_agent_goes_down(agents):
    fleet = AgentFleet([AgentMember(Agent(f"a{i}", status_url(a.url)), freshness_bound=2.0)
                        for i, a in enumerate(agents[:2])])
    fleet.start(None)
    try:
        assert await eventually(lambda: all(m.state == "live" for m in fleet.members), within=60)
        now = datetime.now(UTC)
        assert all(m.frame(now).view.source.type == "snapshot" for m in fleet.members)
        assert all(m.reading is not None and m.reading.doc is None for m in fleet.members)  # the row's fields only
        agents[1].stop()
        assert await eventually(lambda: fleet.members[1].stale_why(time.time()) is not None, within=60)
        assert fleet.members[0].stale_why(time.time()) is None and fleet.members[0].poll_error is None
        f = fleet.members[1].frame(datetime.now(UTC))
        assert f.freshness.unreachable and "agent:" in f.freshness.unreachable_why
    finally:
        await fleet.stop()


# --- naming agents: --fleet-from and fleet.agents --------------------------------------------------------


def test_fleet_from_names_urls_config_entries_or_all():
    east = Agent("east", "http://east.example:9090/api/v1/status", "prod-east")
    assert resolve_agents(["http://east.example:9090"], [east]) == [east]  # the entry with that URL
    assert resolve_agents(["east"], [east]) == [east]
    assert resolve_agents(["all"], [east]) == [east]
    assert resolve_agents(["http://10.0.0.1:9090/"], []) == [Agent("10.0.0.1:9090",
                                                                   "http://10.0.0.1:9090/api/v1/status")]
    for bad, said in ((["west"], "not a URL"), (["ftp://x"], "http(s)://HOST:PORT"), (["all"], "no fleet.agents")):
        with pytest.raises(UsageError, match=said.replace("(", r"\(").replace(")", r"\)")):
            resolve_agents(bad, [] if bad == ["all"] else [east])


def test_fleet_agents_in_the_config_file_and_its_misspelt_keys(cli_env, capsys, monkeypatch):
    cfg = cli_env / "config.yaml"
    monkeypatch.setenv("TAUDASH_CONFIG", str(cfg))
    cfg.write_text("fleet:\n  agents:\n  - name: east\n    url: http://127.0.0.1:1\n    context: prod-east\n")
    from taudash.agents import agents_of_config

    assert agents_of_config() == [Agent("east", "http://127.0.0.1:1/api/v1/status", "prod-east")]
    cfg.write_text("fleet:\n  agents:\n  - name: east\n    ulr: http://127.0.0.1:1\n")
    assert main(["status", "--fleet-from", "all"]) == 2
    assert f"config file {cfg}: unknown key fleet.agents.0.ulr (did you mean url?) (line 4)" in capsys.readouterr().err
    cfg.write_text("fleet:\n  agent:\n  - name: east\n")
    assert main(["status", "--fleet-from", "all"]) == 2
    assert "unknown key fleet.agent (did you mean agents?)" in capsys.readouterr().err
    cfg.write_text("fleet:\n  agents:\n  - name: east\n    url: east:9090\n")
    assert main(["status", "--fleet-from", "all"]) == 2
    assert "fleet.agents.0.url must be the agent's URL" in capsys.readouterr().err
    cfg.write_text("fleet:\n  agents:\n  - {name: a, url: 'http://x:1'}\n  - {name: a, url: 'http://y:1'}\n")
    assert main(["status", "--fleet-from", "all"]) == 2
    assert "'a' names two agents" in capsys.readouterr().err
    cfg.write_text("fleet:\n  agents: http://x:1\n")
    assert main(["status", "--fleet-from", "all"]) == 2
    assert "fleet.agents must be a list of agents" in capsys.readouterr().err


def test_fleet_from_is_refused_with_another_source_and_where_it_does_not_apply(cli_env, capsys):
    assert main(["status", "--fleet-from", "http://x:1", "--snapshot", str(DEMO)]) == 2
    assert "--fleet-from reads agents" in capsys.readouterr().err
    assert main(["export", "--fleet-from", "http://x:1", "-o", "x.yaml"]) == 2
    assert "--fleet-from does not apply" in capsys.readouterr().err
