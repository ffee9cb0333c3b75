"""Measure the wallboard's cost per viewer (docs/benchmarks.md, "Wallboard"):

    python -m taudash.serve.web_bench [--seconds 20] [--viewers 10] [--process-per-tab 2]

The simulator (the demo world, simulating: the view changes every tick) runs in this process; `taudash
serve --web` runs as a child process, measured from /proc: RSS and CPU seconds per second of wall clock
with 0, 1 and N viewers (websocket clients speaking the browser's protocol, in this process), and the
watch requests the simulator's API server received. For comparison, textual-serve's own model — one
dashboard process per tab, each with its own connection — is measured the same way: a `taudash`
dashboard on the live simulator under Textual's web driver, per process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

TICK = os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


async def viewer(url: str, received: list[int], stop: asyncio.Event) -> None:
    async with aiohttp.ClientSession() as http, http.ws_connect(f"{url}ws?width=160&height=48") as ws:
        await ws.send_str(json.dumps(["resize", {"width": 160, "height": 48}]))
        reader = asyncio.ensure_future(_drain(ws, received))
        await stop.wait()
        await ws.close()
        reader.cancel()


async def _drain(ws, received: list[int]) -> None:
    async for msg in ws:
        if msg.type == aiohttp.WSMsgType.BINARY:
            received[0] += len(msg.data)


async def measure(pid: int, seconds: float) -> tuple[float, float]:
    """(RSS MiB at the end, CPU seconds per wall second over the window)."""
    c0, t0 = cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(seconds)
    return rss_mib(pid), (cpu_seconds(pid) - c0) / (time.monotonic() - t0)


def watches(sim) -> int:
    return sum(1 for r in sim.api.requests if r.verb == "watch")


async def run(seconds: float, n: int, per_tab: int) -> dict:
    from taudash.sim.server import SimServer

    out: dict = {}
    async with SimServer(simulate=True, speed=10.0, seed=1) as sim:
        log = Path(tempfile.mkdtemp()) / "serve.log"
        fh = await asyncio.to_thread(open, log, "wb")
        serve = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "taudash.cli", "serve", "--kubeconfig", str(sim.kubeconfig),
            "--web", "127.0.0.1:0", "--interval", "1", stdout=fh, stderr=subprocess.STDOUT)
        fh.close()
        try:
            url = None
            while url is None or "serving" not in log.read_text():
                m = re.search(r"wallboard on (http://\S+/)", log.read_text())
                url = m.group(1) if m else None
                if serve.returncode is not None:
                    raise SystemExit(log.read_text())
                await asyncio.sleep(0.1)
            await asyncio.sleep(3)
            synced_watches = watches(sim)
            rss, cpu = await measure(serve.pid, seconds)
            out["0 viewers"] = {"rss_mib": rss, "cpu_per_s": cpu, "watch_requests": watches(sim)}
            stop = asyncio.Event()
            counters: list[list[int]] = []
            tasks: list[asyncio.Future[Any]] = []
            for target in (1, n):
                while len(tasks) < target:
                    counters.append([0])
                    tasks.append(asyncio.ensure_future(viewer(url, counters[-1], stop)))
                await asyncio.sleep(5)  # every tab mounted and painted
                before = sum(c[0] for c in counters)
                rss, cpu = await measure(serve.pid, seconds)
                out[f"{target} viewers"] = {"rss_mib": rss, "cpu_per_s": cpu, "watch_requests": watches(sim),
                                            "bytes_per_s": (sum(c[0] for c in counters) - before) / seconds}
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            out["watch_requests_after_sync"] = synced_watches
        finally:
            serve.terminate()
            await asyncio.wait_for(serve.wait(), 30)

        # textual-serve's model: a dashboard process per tab, each with its own live connection
        env = {**os.environ, "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver", "COLUMNS": "160",
               "ROWS": "48", "TEXTUAL_COLOR_SYSTEM": "truecolor"}
        before = watches(sim)
        procs = []
        for _ in range(per_tab):
            procs.append(await asyncio.create_subprocess_exec(
                sys.executable, "-m", "taudash.cli", "--kubeconfig", str(sim.kubeconfig), "--read-only",
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
        try:
            await asyncio.sleep(15)  # synced and painting
            stats = [await measure(p.pid, seconds) for p in procs]
            out["process per tab"] = {
                "processes": per_tab, "rss_mib_each": [s[0] for s in stats], "cpu_per_s_each": [s[1] for s in stats],
                "watch_requests": watches(sim) - before}
        finally:
            for p in procs:
                p.terminate()
                try:
                    await asyncio.wait_for(p.wait(), 10)
                except TimeoutError:
                    p.kill()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20.0, help="measuring window per step")
    ap.add_argument("--viewers", type=int, default=10)
    ap.add_argument("--process-per-tab", type=int, default=2, help="dashboard processes for the comparison")
    a = ap.parse_args()
    print(json.dumps(asyncio.run(run(a.seconds, a.viewers, a.process_per_tab)), indent=2))


if __name__ == "__main__":
    main()
