"""`taudash bench --fleet N --size S|M --via agents`: a fleet read from N agents' documents (docs/fleet.md).

The agents are simulated in one process of their own (`python -m taudash.bench.agents --serve …`): one
synthetic cluster (taudash/bench/generate.py) derived once, its ClusterStatus published by N agent
endpoints — serve's own `/api/v1/status` handler (taudash/serve/agent.py), each on its own port, each
document naming its cluster `bench-K`. They are not N `taudash serve` processes: each would sync its
own copy of the cluster (N × its memory and cores), and what is measured here is the client. The
client is the agent fleet dashboard itself (taudash/agents.py: one poll loop per agent). Measured:

- fleet first view: start → every agent's document read and every row drawn on the Fleet screen;
- key → Fleet screen at 120×36 (`0` from the overview, which stays closed in agent mode and says so);
- peak client RSS (≤ 300 MiB at 50 clusters: memory grows with clusters × summary, never × store);
- the document's size, and one agent down (`down K`): that row stale, the rest live.

The farm takes commands on stdin: `down K`, `up K` (stop/start agent K's port), `rss`, `quit`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIServer, make_server

from taudash.bench.child import LineChild
from taudash.bench.measure import Figure, median, peak_rss_mib, rss_mib, say

RSS_TARGET_MIB = 300.0  # the client over 50 agents
FIRST_VIEW_TARGET_S = 10.0  # every agent read and drawn (polls every bound/5 s: 3 s at the default)
KEY_TARGET_S = 0.150
UI_SIZE = (120, 36)
VIA = "agents simulated in one process of their own (serve's status handler on N ports; one derived cluster)"


# --- the agent farm (its own process) -----------------------------------------------------------------
def _documents(size: str, seed: int, count: int) -> tuple[list[Any], int]:
    from datetime import UTC, datetime

    from taudash.bench.generate import generate
    from taudash.engine.incremental import derive
    from taudash.engine.sources.snapshot import store_from_objects
    from taudash.engine.view import SourceInfo
    from taudash.serve.agent import StatusDocument

    objects = generate(size, seed)
    store = store_from_objects(objects)
    now = datetime.now(UTC)
    view = derive(store, now, None, SourceInfo(type="sim", context="bench-1"))
    docs = []
    for i in range(1, count + 1):
        d = StatusDocument()
        d.publish(view.replaced(source=view.source.replaced(context=f"bench-{i}")), None, now.timestamp())
        docs.append(d)
    return docs, len(objects)


class _Quiet(ThreadingMixIn, WSGIServer):
    # A thread per request (as serve's metrics server): one connection that is slow to send its request
    # never holds the others, nor `down` (shutdown waits for the serving loop).
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:  # a client gone mid-answer is not news
        pass


class _Agent:
    def __init__(self, app: Any, port: int = 0) -> None:
        from wsgiref.simple_server import WSGIRequestHandler

        class Handler(WSGIRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

        self.httpd = make_server("127.0.0.1", port, app, _Quiet, handler_class=Handler)
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def farm(size: str, seed: int, count: int, ports_file: Path | None) -> None:
    import resource

    from taudash.serve.agent import status_app

    docs, objects = _documents(size, seed, count)
    apps = [status_app(d, None, True) for d in docs]
    agents: list[_Agent | None] = [_Agent(a) for a in apps]
    ports = [a.port for a in agents if a is not None]
    first, summary = docs[0].latest, docs[0].summary
    size_bytes = f"{len(first.body) if first else 0} {len(summary.body) if summary else 0}"
    if ports_file is not None:
        ports_file.write_text("".join(f"http://127.0.0.1:{p}\n" for p in ports), encoding="utf-8")
    print(f"READY {objects} {size_bytes} {' '.join(map(str, ports))}", flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "quit":
            break
        if cmd == "rss":
            print(f"RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", flush=True)
        elif cmd in ("down", "up") and arg.isdigit() and 1 <= int(arg) <= count:
            k = int(arg) - 1
            current = agents[k]
            if cmd == "down" and current is not None:
                current.stop()
                agents[k] = None
            elif cmd == "up" and current is None:
                agents[k] = _Agent(apps[k], ports[k])
            print(f"OK {cmd} {arg}", flush=True)
        else:
            print(f"ERR {line.strip()!r}", flush=True)
    for a in agents:
        if a is not None:
            a.stop()


class AgentFarm(LineChild):
    """The farm process; its agents' URLs once started."""

    what = "the agent farm"

    def __init__(self, size: str, seed: int, count: int) -> None:
        self.size, self.seed, self.count = size, seed, count
        self.urls: list[str] = []
        self.document_bytes = 0
        self.summary_bytes = 0  # ?view=summary, what the Fleet screen polls
        self.objects = 0  # of the one generated cluster every agent publishes
        self.proc: Any = None

    def start(self, timeout: float = 900.0) -> float:
        line, took = self.spawn("taudash.bench.agents", [
            "--serve", "--size", self.size, "--seed", str(self.seed), "--count", str(self.count)], timeout)
        _, nobjects, nbytes, nsummary, *ports = line.split()
        self.objects, self.document_bytes, self.summary_bytes = int(nobjects), int(nbytes), int(nsummary)
        self.urls = [f"http://127.0.0.1:{p}" for p in ports]
        return took


# --- the client ---------------------------------------------------------------------------------------
async def agents_bench(size: str, clusters: int, seed: int = 0, progress=None, rounds: int = 5) -> dict:
    from textual import events

    from taudash.agents import Agent, AgentFleet, AgentMember, status_url
    from taudash.fleet_app import FLEET_MODE, AgentFleetApp
    from taudash.screens.fleet import FleetScreen
    from taudash.screens.overview import OverviewScreen

    progress = progress or say
    figs: dict[str, Figure] = {}

    def fig(f: Figure) -> None:
        figs[f.key] = f
        progress(f"  {f.line()}")

    started = time.perf_counter()
    farm_ = AgentFarm(size, seed, clusters)
    progress(f"via agents: {VIA}; size {size}, {clusters} agents")
    setup = farm_.start()
    progress(f"agents up ({setup:.1f} s): document {farm_.document_bytes / 1024:.0f} KiB each, its summary "
             f"(what the Fleet screen polls) {farm_.summary_bytes / 1024:.0f} KiB")
    base_rss = rss_mib() or 0.0
    fleet = AgentFleet([AgentMember(Agent(f"bench-{i}", status_url(u))) for i, u in enumerate(farm_.urls, 1)])
    try:
        t = time.perf_counter()
        app = AgentFleetApp(fleet, tick=1.0)
        async with app.run_test(size=UI_SIZE) as pilot:
            fleet.start(None)
            from textual.widgets import DataTable

            def drawn_live() -> int:
                screen = app.screen
                if not isinstance(screen, FleetScreen) or screen.frame is None:
                    return 0
                table = screen.query_one("#fleet", DataTable)
                return sum(1 for m in fleet.members if m.state == "live") if table.row_count == clusters else 0

            while not (app.current_mode == FLEET_MODE and drawn_live() == clusters
                       and all(m.session.last_frame is not None for m in fleet.members)):
                if time.perf_counter() - t > 600:
                    raise RuntimeError("the agents' fleet did not show in 10 min")
                await asyncio.sleep(0.02)
            await app.screen.wait_for_refresh()
            fig(Figure("agents_first_view_s", f"fleet first view ({clusters} agents read, Fleet screen drawn)",
                       time.perf_counter() - t, "s", FIRST_VIEW_TARGET_S))
            await pilot.pause()

            async def press(key: str, screen: type) -> float:
                t = time.perf_counter()
                app.post_message(events.Key(key, key))
                for _ in range(60000):
                    if isinstance(app.screen, screen) and getattr(app.screen, "frame", None) is not None:
                        break
                    await asyncio.sleep(0.001)
                for _ in range(2):
                    await app.screen.wait_for_refresh()
                return time.perf_counter() - t

            to_fleet = []
            for _ in range(rounds):
                app.switch_mode("overview")  # what `0` comes back from (in agent mode a number key says why not)
                for _ in range(60000):
                    if isinstance(app.screen, OverviewScreen):
                        break
                    await asyncio.sleep(0.005)
                await app.screen.wait_for_refresh()
                to_fleet.append(await press("0", FleetScreen))
            fig(Figure("agents_key_p50_s", "key → Fleet screen, median", median(to_fleet), "s", KEY_TARGET_S,
                       runs=[round(x, 4) for x in to_fleet]))
            fig(Figure("agents_key_max_s", "key → Fleet screen, slowest", max(to_fleet), "s"))

            progress("one agent down (bench-1): its row stale, the rest live")
            farm_.command("down 1")
            t = time.perf_counter()
            while fleet.members[0].stale_why(time.time()) is None:
                if time.perf_counter() - t > 120:
                    raise RuntimeError("bench-1 did not turn stale in 2 min")
                await asyncio.sleep(0.05)
            fig(Figure("agents_down_stale_s", "one agent down → its row stale", time.perf_counter() - t, "s",
                       note="polls every bound/5 s, each within bound/2 s"))
            others = sum(m.state != "live" or m.stale_why(time.time()) is not None for m in fleet.members[1:])
            fig(Figure("agents_others_not_live", "the other agents not live meanwhile", float(others), "", 0.0))
            farm_.command("up 1")
        fig(Figure("agents_peak_rss_mib", f"peak resident memory (client, {clusters} clusters)", peak_rss_mib(),
                   "MiB", RSS_TARGET_MIB))
        fig(Figure("agents_rss_growth_mib", "client memory growth over the run", (rss_mib() or 0.0) - base_rss,
                   "MiB"))
        rss = farm_.command("rss")
        if rss.startswith("RSS"):
            fig(Figure("agents_farm_rss_mib", "peak resident memory (the agent farm's process)",
                       int(rss.split()[1]) / 1024, "MiB"))
    finally:
        await fleet.stop()
        farm_.stop()
    total = time.perf_counter() - started
    return {"apiVersion": "taudash/v1", "kind": "BenchResult", "size": size, "seed": seed, "fleet": clusters,
            "via": VIA, "objects": farm_.objects, "decoder": "n/a: documents", "documentBytes": farm_.document_bytes, "summaryBytes": farm_.summary_bytes,
            "totalSeconds": round(total, 3), "figures": {k: f.to_json() for k, f in figs.items()}}


def run_agents_bench(size: str, clusters: int, seed: int, output: str) -> int:
    """`taudash bench --fleet N --via agents` (parsed in taudash/commands/bench.py)."""
    import json

    results = asyncio.run(agents_bench(size, clusters, seed))
    if output == "json":
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        from taudash.bench.table import print_table

        print(f"via: {results['via']}; {clusters} clusters; document {results['documentBytes'] / 1024:.0f} KiB, "
              f"summary polled {results['summaryBytes'] / 1024:.0f} KiB")
        print_table(results)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="serve one synthetic cluster's status as N agents")
    p.add_argument("--serve", action="store_true", required=True)
    p.add_argument("--size", default="S")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=20)
    p.add_argument("--ports-file", type=Path, help="also write the agents' URLs here, one a line")
    args = p.parse_args(argv)
    farm(args.size, args.seed, args.count, args.ports_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
