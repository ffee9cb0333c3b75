"""`taudash bench --fleet N --size M`: N simulated clusters of one size in one dashboard session (docs/fleet.md).

The simulator runs in its own process (`python -m taudash.bench.fleet --serve ...`): one synthetic
cluster (engine.bench.generate) served by N API servers, each its own port and kubeconfig context
(`bench-1` … `bench-N`), over one object database — N clusters to the client, one copy of the data in
the simulator. The client is the fleet dashboard itself: one `FleetMember` per context (own store,
session and watch), all started at once as `taudash --context …` starts them. Measured:

- sync: per cluster (start → synced, while all N sync at once) and the whole fleet (start → all live);
- first view per cluster and one fleet tick (every member's frame + the MultiKueue join);
- the Fleet screen headless at 120×36: key → screen (a number key to the overview, `0` back to the
  Fleet screen, until it has rendered its rows and repainted), median and max of several rounds;
- resident memory (client peak ≤ 1.5 GiB), after each phase; the simulator's apart;
- per cluster, a table: its sync, objects held, first view and share of the resident memory (the
  growth over the sync apportioned by objects held: one process cannot measure a store apart).

Wall-clock figures on a shared machine are indicative: the simulator serves all N clusters from one
process (one core), so concurrent syncs queue behind it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from taudash.bench.child import LineChild
from taudash.bench.measure import Figure, median, peak_rss_mib, rss_mib, say

RSS_TARGET_MIB = 1536.0  # 1.5 GiB for the client holding N clusters
KEY_TARGET_S = 0.150  # the single-cluster bench's screen-switch target
UI_SIZE = (120, 36)


# --- the simulator process ----------------------------------------------------------------------
async def _serve(size: str, seed: int, clusters: int, out: Path) -> None:
    import gc
    import resource

    from taudash.bench.generate import generate
    from taudash.sim.apiserver import ApiServer
    from taudash.sim.kubeconfig import kubeconfig_dict
    from taudash.sim.server import SimServer

    objects = generate(size, seed)
    n = len(objects)
    sim = SimServer(snapshot=None, objects=objects, kubeconfig=out.with_name("kc-1"), context="bench-1",
                    history=50_000, bookmark_interval=30.0)
    del objects
    await sim.start()
    extra = [ApiServer(sim.db, token=sim.api.token, faults=sim.faults, bookmark_interval=30.0,
                       ssl_context=sim.api.ssl_context) for _ in range(clusters - 1)]
    for api in extra:
        await api.start()
    gc.freeze()
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "preferences": {}, "clusters": [], "users": [],
                              "contexts": [], "current-context": "bench-1"}
    pem = sim.cert.pem() if sim.cert else None
    for i, api in enumerate([sim.api, *extra], start=1):
        one = kubeconfig_dict(api.url, api.token, f"bench-{i}", None, pem)
        for key in ("clusters", "users", "contexts"):
            merged[key] += one[key]
    _write_private(out, yaml.safe_dump(merged, sort_keys=False))
    print(f"READY {out} {n}", flush=True)
    try:
        while True:
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line or line.strip() == "quit":
                break
            if line.strip() == "rss":
                print(f"RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", flush=True)
    finally:
        for api in extra:
            await api.stop()
        await sim.stop()


def _write_private(path: Path, text: str) -> None:
    path.touch(mode=0o600)
    path.write_text(text, encoding="utf-8")


class FleetSimProcess(LineChild):
    """The simulator of N clusters in its own process; commands over stdin (`rss`, `quit`)."""

    what = "the fleet simulator"

    def __init__(self, size: str, seed: int, clusters: int) -> None:
        self.size, self.seed, self.clusters = size, seed, clusters
        self.dir = Path(tempfile.mkdtemp(prefix="taudash-bench-fleet-"))
        self.kubeconfig = self.dir / "kubeconfig"
        self.objects = 0
        self.proc: Any = None

    def start(self, timeout: float = 900.0) -> float:
        line, took = self.spawn("taudash.bench.fleet", [
            "--serve", "--size", self.size, "--seed", str(self.seed), "--clusters", str(self.clusters),
            "--kubeconfig", str(self.kubeconfig)], timeout)
        self.objects = int(line.split()[2])
        return took

    def stop(self) -> None:
        import shutil

        super().stop()
        shutil.rmtree(self.dir, ignore_errors=True)


# --- the client -----------------------------------------------------------------------------------
def _mem() -> str:
    now = rss_mib()
    return (f"RSS now {now:.0f} MiB, peak {peak_rss_mib():.0f} MiB" if now is not None
            else f"peak {peak_rss_mib():.0f} MiB")


async def fleet_bench(size: str, clusters: int, seed: int = 0, progress=None, rounds: int = 5) -> dict:
    from taudash.fleet import Fleet, FleetMember

    progress = progress or say
    figs: dict[str, Figure] = {}

    def fig(f: Figure) -> None:
        figs[f.key] = f
        progress(f"  {f.line()}")

    started = time.perf_counter()
    sim = FleetSimProcess(size, seed, clusters)
    progress(f"generating size {size} (seed {seed}); one simulator process serving it as {clusters} clusters")
    setup = sim.start()
    progress(f"simulator serving {sim.objects} objects per cluster on {clusters} API servers ({setup:.1f} s)")
    kubeconfig = str(sim.kubeconfig)
    contexts = [f"bench-{i}" for i in range(1, clusters + 1)]
    fleet = Fleet([FleetMember(c, source_type="sim") for c in contexts])
    per_cluster: dict[str, float] = {}
    try:
        progress(f"sync: {clusters} members connect, list and watch at once (the fleet dashboard's start)")
        base_rss = rss_mib() or 0.0
        t = time.perf_counter()
        fleet.start(kubeconfig, retry=1.0)
        while not all(m.state == "live" for m in fleet.members):
            if any(m.state == "unreachable" for m in fleet.members):
                bad = next(m for m in fleet.members if m.state == "unreachable")
                raise RuntimeError(f"{bad.context}: {bad.error}")
            if time.perf_counter() - t > 1800:
                raise RuntimeError("the fleet did not sync in 30 min")
            await asyncio.sleep(0.05)
        total_sync = time.perf_counter() - t
        per_cluster = {m.context: m.synced_after or 0.0 for m in fleet.members}
        fig(Figure("fleet_sync_total_s", f"sync, the whole fleet ({clusters} clusters at once)", total_sync, "s"))
        fig(Figure("fleet_sync_cluster_p50_s", "sync, per cluster (concurrent), median",
                   median(list(per_cluster.values())), "s"))
        fig(Figure("fleet_sync_cluster_max_s", "sync, per cluster (concurrent), slowest",
                   max(per_cluster.values()), "s"))
        progress(f"  per cluster: {', '.join(f'{c} {s:.1f} s' for c, s in per_cluster.items())} ({_mem()})")
        fig(Figure("fleet_rss_synced_mib", "resident memory after the sync", rss_mib(), "MiB"))

        progress("first view of every member (what the first fleet tick pays)")
        now = datetime.now(UTC)
        firsts: list[float] = []
        for m in fleet.members:
            t = time.perf_counter()
            m.session.frame(now)
            firsts.append(time.perf_counter() - t)
        fig(Figure("fleet_first_view_cluster_s", "first view, per cluster, median", median(firsts), "s"))
        fig(Figure("fleet_first_view_total_s", "first view, every cluster", sum(firsts), "s"))
        ticks = []
        for _ in range(3):
            now = datetime.now(UTC)
            t = time.perf_counter()
            for m in fleet.members:
                m.session.frame(now)
            fleet._join_key = None  # measure the join itself, not its cache
            fleet.join(now)
            ticks.append(time.perf_counter() - t)
        fig(Figure("fleet_tick_s", "fleet tick, nothing changed (every frame + join), median",
                   median(ticks), "s", note="off the UI thread"))
        progress(f"  ({_mem()})")

        await _ui(fleet, fig, progress, rounds)
        fig(Figure("fleet_peak_rss_mib", f"peak resident memory (client, {clusters} clusters)", peak_rss_mib(), "MiB",
                   RSS_TARGET_MIB))
        growth = (figs["fleet_rss_synced_mib"].value or 0) - base_rss
        fig(Figure("fleet_rss_per_cluster_mib", "resident memory per cluster (growth over the sync / clusters)",
                   growth / clusters, "MiB"))
        rows = cluster_rows(fleet, firsts, growth)
        for line in cluster_table(rows):
            progress(line)
        rss = sim.command("rss")
        if rss.startswith("RSS"):
            fig(Figure("fleet_sim_rss_mib", "peak resident memory (simulator process, one copy of the data)",
                       int(rss.split()[1]) / 1024, "MiB"))
    finally:
        await fleet.stop()
        sim.stop()
    total = time.perf_counter() - started
    progress(f"done in {total:.0f} s")
    return {"apiVersion": "taudash/v1", "kind": "BenchResult", "size": size, "seed": seed, "fleet": clusters,
            "objects": sim.objects, "decoder": "", "totalSeconds": round(total, 3),
            "syncSecondsPerCluster": {c: round(s, 3) for c, s in per_cluster.items()},
            "clusters": rows,
            "figures": {k: f.to_json() for k, f in figs.items()}}


def objects_held(store: Any) -> int:
    from taudash.engine.model import KINDS

    return sum(len(store.list(k.kind)) for k in KINDS)


def cluster_rows(fleet: Any, first_views: list[float], rss_growth_mib: float) -> list[dict]:
    """One row per member: sync (concurrent), objects its store holds, its first view, and its share of
    the client's memory growth over the sync, apportioned by objects held (an estimate: labelled so)."""
    held = [objects_held(m.session.store) for m in fleet.members]
    total = sum(held) or 1
    return [{"context": m.context, "syncSeconds": round(m.synced_after or 0.0, 3), "objects": n,
             "firstViewSeconds": round(first_views[i], 4) if i < len(first_views) else None,
             "rssShareMiB": round(rss_growth_mib * n / total, 1)}
            for i, (m, n) in enumerate(zip(fleet.members, held, strict=True))]


def cluster_table(rows: list[dict]) -> list[str]:
    out = [f"{'cluster':<20} {'sync':>9} {'objects':>9} {'first view':>11} {'RSS share':>11}"]
    for r in rows:
        fv = "n/a" if r["firstViewSeconds"] is None else f"{r['firstViewSeconds'] * 1000:.0f} ms"
        out.append(f"{r['context']:<20} {r['syncSeconds']:>7.2f} s {r['objects']:>9} {fv:>11} "
                   f"{r['rssShareMiB']:>7.0f} MiB")
    out.append("RSS share: the client's growth over the sync apportioned by objects held (estimate)")
    return out


async def _ui(fleet, fig, progress, rounds: int) -> None:
    from textual import events
    from textual.widgets import DataTable

    from taudash.fleet_app import FLEET_MODE, FleetApp
    from taudash.screens.fleet import FleetScreen
    from taudash.screens.overview import OverviewScreen

    app = FleetApp(fleet, tick=1.0)

    async def press(key: str, screen: type) -> float:
        t = time.perf_counter()
        app.post_message(events.Key(key, key))
        for _ in range(60000):
            current = app.screen
            if isinstance(current, screen) and getattr(current, "frame", None) is not None:
                break
            await asyncio.sleep(0.001)
        for _ in range(2):
            await app.screen.wait_for_refresh()
        return time.perf_counter() - t

    progress(f"headless fleet dashboard at {UI_SIZE[0]}x{UI_SIZE[1]}: key → screen on the Fleet screen")
    t = time.perf_counter()
    async with app.run_test(size=UI_SIZE) as pilot:
        for _ in range(600):
            if app.current_mode == FLEET_MODE and isinstance(app.screen, FleetScreen) and app.screen.frame is not None:
                break
            await asyncio.sleep(0.05)
        await pilot.pause()
        fig(Figure("fleet_ui_start_s", "fleet dashboard start (Fleet screen painted)", time.perf_counter() - t, "s"))
        to_fleet, to_overview = [], []
        for _ in range(rounds):
            to_overview.append(await press("1", OverviewScreen))
            to_fleet.append(await press("0", FleetScreen))
        fig(Figure("fleet_key_p50_s", "key → Fleet screen, median", median(to_fleet), "s", KEY_TARGET_S))
        fig(Figure("fleet_key_max_s", "key → Fleet screen, slowest", max(to_fleet), "s"))
        fig(Figure("fleet_key_overview_p50_s", "key → overview of the subject, median", median(to_overview), "s",
                   KEY_TARGET_S))
        rows = app.screen.query_one("#fleet", DataTable).row_count if isinstance(app.screen, FleetScreen) else 0
        progress(f"  Fleet screen rows: {rows}; to the Fleet screen "
                 + ", ".join(f"{x * 1000:.0f}" for x in to_fleet) + " ms; to the overview "
                 + ", ".join(f"{x * 1000:.0f}" for x in to_overview) + f" ms ({_mem()})")


def run_fleet_bench(size: str, clusters: int, seed: int, output: str) -> int:
    """`taudash bench --fleet N` (parsed in taudash/commands/bench.py): the result as a table or JSON on stdout."""
    import json

    results = asyncio.run(fleet_bench(size, clusters, seed))
    if output == "json":
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        from taudash.bench.table import print_table

        print_table(results)
        print()
        print("\n".join(cluster_table(results["clusters"])))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="serve one synthetic bench cluster as N clusters")
    p.add_argument("--serve", action="store_true", required=True)
    p.add_argument("--size", default="S")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--clusters", type=int, default=10)
    p.add_argument("--kubeconfig", required=True)
    args = p.parse_args(argv)
    asyncio.run(_serve(args.size, args.seed, args.clusters, Path(args.kubeconfig)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
