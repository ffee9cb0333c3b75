"""The recorder's bench phase: what recording history costs per tick at fleet scale, and how fast the
file grows.

On its own copy of the bench's generated cluster (the same objects the simulator serves, built straight
into a store: the live store of the other phases is left alone), `ticks` recording passes run with a
clock advancing `interval` seconds each (so every pass is a sample pass — the dashboard's worst case;
a pass writes the values that changed, and every value at the first pass of each 5-minute keyframe
bucket: engine/history/db.py). Between passes `churn` Workloads change as a busy fleet's do: most get a
status touch (a PodsReady transition), a fifth are admitted (a new admission-wait row) and a tenth are
preempted by another admitted Workload (an eviction row naming its preemptor); an admission or a
preemption moves its ClusterQueue's counts, reservation and usage as Kueue's status would (sample values
that change: the queue's counts, the pool's flavors, the team's sums). The
view is re-derived between passes, outside the timing, as the dashboard derives it anyway. Timed per pass: `collect`
(under the session lock) and `write` (one transaction), medians and p95 over the passes after the
first (the first is a full scan, reported alone).

Growth per day is a projection, stated as such: rows written per pass × passes per day (one per
`interval`) × the bytes per row measured on this run (the file's used pages before and after), for
raw samples and for events; it is the file's growth before retention (raw samples are rolled up after
a day; see docs/history.md).

`python -m taudash.bench.history --size M` runs it alone; `taudash bench` runs it as its last phase.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from taudash.bench.generate import CAPTURED_AT, SIZES, Size, generate
from taudash.bench.measure import Figure, median, percentile
from taudash.bench.ratios import CPU_RECORDER, with_ratios, yardstick
from taudash.bench.yardstick import cpu_yardstick
from taudash.engine.history import db as hdb
from taudash.engine.history.recorder import Recorder
from taudash.engine.model import lookup
from taudash.engine.model.quantity import Quantity
from taudash.engine.rules.base import RuleConfig
from taudash.engine.session import Session
from taudash.engine.sources.snapshot import store_from_objects
from taudash.engine.view import SourceInfo

DAY = 86400.0


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _cond(type_: str, status: str, reason: str, message: str, at: datetime) -> dict:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": _stamp(at)}


class _Churn:
    """Workload changes of a busy fleet, applied to the store as a source would."""

    def __init__(self, session: Session, raws: list[dict], seed: int) -> None:
        self.session = session
        self.rng = random.Random(seed)
        self.raws = {(r["metadata"]["namespace"], r["metadata"]["name"]): r for r in raws if r["kind"] == "Workload"}
        self.admitted = [k for k, r in self.raws.items() if (r.get("status") or {}).get("admission")]
        self.pending = [k for k, r in self.raws.items() if not (r.get("status") or {}).get("admission")]
        kind = lookup("kueue.x-k8s.io/v1beta2", "Workload")
        assert kind is not None
        self.model = kind.model
        cq_kind = lookup("kueue.x-k8s.io/v1beta2", "ClusterQueue")
        assert cq_kind is not None
        self.cq_model = cq_kind.model
        self.queues = {r["metadata"]["name"]: r for r in raws if r["kind"] == "ClusterQueue"}
        self.events = {"touch": 0, "admit": 0, "evict": 0}
        self.fresh: list[tuple[str, str]] = []

    def _put(self, key: tuple[str, str], raw: dict) -> None:
        self.raws[key] = raw
        self.session.store.upsert(self.model.model_validate(raw), raw)

    def _count(self, raw: dict, admitted: int) -> None:
        """The Workload's ClusterQueue counts it as Kueue does: admitted (+1) or back to pending (-1)."""
        admission = (raw.get("status") or {}).get("admission") or {}
        cq = self.queues.get(admission.get("clusterQueue", ""))
        if cq is None:
            return
        cq = copy.deepcopy(cq)
        st = cq.setdefault("status", {})
        st["pendingWorkloads"] = max(0, st.get("pendingWorkloads", 0) - admitted)
        for field in ("reservingWorkloads", "admittedWorkloads"):
            st[field] = max(0, st.get(field, 0) + admitted)
        self._move_usage(cq, admission, admitted)
        self.queues[cq["metadata"]["name"]] = cq
        self.session.store.upsert(self.cq_model.model_validate(cq), cq)

    @staticmethod
    def _move_usage(cq: dict, admission: dict, sign: int) -> None:
        """The Workload's admitted usage added to (or taken from) its ClusterQueue's reservation and usage
        per flavor and resource, as Kueue's status moves them: the pool's queues and its team's sums change."""
        nominal = {(fl["name"], r["name"]): Quantity.parse(r["nominalQuota"])
                   for rg in cq["spec"].get("resourceGroups", []) for fl in rg["flavors"] for r in fl["resources"]}
        for psa in admission.get("podSetAssignments", []):
            for resource, amount in (psa.get("resourceUsage") or {}).items():
                flavor = (psa.get("flavors") or {}).get(resource)
                for field in ("flavorsReservation", "flavorsUsage"):
                    for fl in cq["status"].get(field, []):
                        for e in fl["resources"] if fl["name"] == flavor else ():
                            if e["name"] != resource:
                                continue
                            total = Quantity.parse(e.get("total", "0"))
                            total = (total + Quantity.parse(amount) if sign > 0 else total - Quantity.parse(amount)).max0()
                            e["total"] = total.canonical()
                            if "borrowed" in e:
                                e["borrowed"] = (total - nominal.get((flavor, resource), Quantity(0))).max0().canonical()

    def apply(self, n: int, now: datetime) -> None:
        # A Workload admitted in this pass is not preempted in it too (the recorder would see only the
        # eviction); an evicted one is not admitted again (its admission wait is recorded once per UID).
        self.fresh = []
        with self.session.lock:
            for _ in range(n):
                roll = self.rng.random()
                if roll < 0.2 and self.pending and self.admitted:
                    self._admit(now)
                elif roll < 0.3 and len(self.admitted) > 1:
                    self._evict(now)
                else:
                    self._touch(now)
        self.admitted += self.fresh

    def _touch(self, now: datetime) -> None:
        key = self.rng.choice(self.admitted or self.pending)
        raw = copy.deepcopy(self.raws[key])
        conds = [c for c in raw["status"].get("conditions", []) if c["type"] != "PodsReady"]
        conds.append(_cond("PodsReady", self.rng.choice(["True", "False"]), "Started", "pods changed", now))
        raw["status"]["conditions"] = conds
        self._put(key, raw)
        self.events["touch"] += 1

    def _admit(self, now: datetime) -> None:
        key = self.pending.pop(self.rng.randrange(len(self.pending)))
        model = self.raws[self.rng.choice(self.admitted)]
        raw = copy.deepcopy(self.raws[key])
        raw["status"]["admission"] = copy.deepcopy(model["status"]["admission"])
        raw["status"]["conditions"] = [
            _cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved", now - timedelta(seconds=1)),
            _cond("Admitted", "True", "Admitted", "The workload is admitted", now),
        ]
        self._put(key, raw)
        self._count(raw, +1)
        self.fresh.append(key)
        self.events["admit"] += 1

    def _evict(self, now: datetime) -> None:
        i = self.rng.randrange(len(self.admitted))
        key = self.admitted.pop(i)
        preemptor = self.raws[self.rng.choice(self.admitted)]
        raw = copy.deepcopy(self.raws[key])
        self._count(raw, -1)
        raw["status"].pop("admission", None)
        msg = (f"Preempted to accommodate a workload (UID: {preemptor['metadata']['uid']}, JobUID: j) "
               "due to prioritization in the ClusterQueue")
        raw["status"]["conditions"] = [
            _cond("QuotaReserved", "False", "Pending", "evicted", now),
            _cond("Admitted", "False", "NoReservation", "The workload has no reservation", now),
            _cond("Evicted", "True", "Preempted", msg, now),
            _cond("Preempted", "True", "InClusterQueue", msg, now),
        ]
        self._put(key, raw)
        self.events["evict"] += 1


def _keyframes(conn) -> int:
    """Sample passes that began a keyframe bucket (and so wrote every value)."""
    return conn.execute(f"SELECT count(DISTINCT ts / {hdb.KEYFRAME_SECONDS}) FROM sample_passes").fetchone()[0]


def _rows(conn) -> tuple[int, int]:
    samples = conn.execute("SELECT count(*) FROM samples").fetchone()[0]
    events = sum(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                 for t in ("waits", "evictions", "finding_events", "drain_events"))
    return samples, events


def recorder_bench(size: str | Size, seed: int = 0, ticks: int = 60, churn: int | None = None,
                   interval: float = 10.0, progress: Callable[[str], None] = lambda _: None,
                   directory: Path | None = None, period: float | None = None) -> dict:
    """Measure the recorder on a generated cluster; returns figures and the numbers behind them.
    `period`: clock seconds per pass (default `interval`: every pass samples; the dashboard's cadence
    is 5 s passes with a sample every 10 s)."""
    period = period if period is not None else interval
    sz = SIZES[size.upper()] if isinstance(size, str) else size
    churn = churn if churn is not None else max(10, sz.workloads // 500)  # 0.2 % of the Workloads per pass
    progress(f"recorder: generating size {sz.name} (seed {seed}) into a store of its own")
    raws = generate(sz, seed)
    session = Session(store_from_objects(raws), SourceInfo(type="sim", context="taudash-bench", path="bench"),
                      RuleConfig())
    changes = _Churn(session, raws, seed)
    del raws
    now = CAPTURED_AT + timedelta(minutes=5)
    session.view(now)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        path = Path(tmp) / "bench.sqlite3"
        rec = Recorder(path, interval=interval)
        collect_s: list[float] = []
        write_s: list[float] = []
        total_s: list[float] = []
        rows0 = _rows(rec.conn)
        progress(f"recorder: {ticks} passes, {churn} Workload changes between passes, clock +{period:g} s each")
        cpu_runs = cpu_yardstick()  # the recorder's yardstick, just before its passes and just after
        for i in range(ticks + 1):
            if i:
                now += timedelta(seconds=period)
                changes.apply(churn, now)
            view = session.view(now)  # derived by the dashboard anyway: not counted
            t0 = time.perf_counter()
            with session.lock:
                obs = rec.collect(view, session.store, now)
            t1 = time.perf_counter()
            rec.write(obs)
            t2 = time.perf_counter()
            collect_s.append(t1 - t0)
            write_s.append(t2 - t1)
            total_s.append(t2 - t0)
            if i == 0:
                first_rows = _rows(rec.conn)
                first_bytes = hdb.file_bytes(rec.conn)
                series = rec.conn.execute("SELECT count(*) FROM series").fetchone()[0]
        cpu_runs += cpu_yardstick()
        last_rows = _rows(rec.conn)
        keyframes = _keyframes(rec.conn) - 1  # after the first pass
        last_bytes = hdb.file_bytes(rec.conn)
        # bytes per row: each table's growth over the passes after the first, from the used pages
        sample_rows = last_rows[0] - first_rows[0]
        event_rows = last_rows[1] - first_rows[1]
        grown = last_bytes - first_bytes
        rec.close()
    steady = total_s[1:]
    per_pass_bytes = grown / ticks if ticks else 0.0
    passes_per_day = DAY / period
    out = {
        "size": sz.name,
        "workloads": sz.workloads,
        "series": series,
        "ticks": ticks,
        "periodSeconds": period,
        "intervalSeconds": interval,
        "churnPerTick": churn,
        "changes": dict(changes.events),
        "firstPassSeconds": total_s[0],
        "firstPassRows": first_rows[0] - rows0[0] + first_rows[1] - rows0[1],
        "collectMedianSeconds": median(collect_s[1:]),
        "writeMedianSeconds": median(write_s[1:]),
        "medianSeconds": median(steady),
        "p95Seconds": percentile(steady, 95),
        "sampleRowsPerTick": sample_rows / ticks if ticks else 0,
        "keyframePasses": keyframes,
        "eventRowsPerTick": event_rows / ticks if ticks else 0,
        "bytesPerTick": per_pass_bytes,
        "bytesPerRow": grown / (sample_rows + event_rows) if sample_rows + event_rows else None,
        "projectedBytesPerDay": per_pass_bytes * passes_per_day,
        "projectedSampleBytesPerDay": (per_pass_bytes * sample_rows / (sample_rows + event_rows) * passes_per_day
                                       if sample_rows + event_rows else 0.0),
    }
    out["figures"] = [
        Figure("recorder_first_s", "recorder: first pass (full scan)", out["firstPassSeconds"], "s",
               note=f"{out['firstPassRows']} rows"),
        Figure("recorder_tick_s", f"recorder: collect+write per pass, median ({series} series)", out["medianSeconds"],
               "s", note=f"{churn} Workload changes per pass"),
        Figure("recorder_tick_p95_s", "recorder: collect+write per pass, p95", out["p95Seconds"], "s"),
        Figure("recorder_growth_mib_day", "recorder: projected growth per day (before retention)",
               out["projectedBytesPerDay"] / 2**20, "MiB",
               note=f"{out['bytesPerTick'] / 1024:.1f} KiB per pass × {passes_per_day:.0f} passes"),
        yardstick(CPU_RECORDER, "yardstick: fixed CPU loop (before and after the recorder's passes)", cpu_runs),
    ]
    return out


def history_phase(fig: Callable[[Figure], None], progress: Callable[[str], None], size: str, seed: int) -> None:
    """The bench's recorder phase: one call from `taudash bench`."""
    result = recorder_bench(size, seed, progress=progress)
    for f in result["figures"]:
        fig(f)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m taudash.bench.history", description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=sorted(SIZES), default="S", type=str.upper)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ticks", type=int, default=60)
    p.add_argument("--churn", type=int, default=None, help="Workload changes between passes (default 0.2 %%)")
    p.add_argument("--period", type=float, default=None,
                   help="clock seconds per pass (default 10 = the sampling interval: every pass samples)")
    args = p.parse_args(argv)
    started = time.perf_counter()
    result = recorder_bench(args.size, args.seed, args.ticks, args.churn, period=args.period,
                            progress=lambda m: print(f"[bench {time.strftime('%H:%M:%S')}] {m}", file=sys.stderr,
                                                     flush=True))
    result["figures"] = {k: f.to_json() for k, f in with_ratios({f.key: f for f in result["figures"]}).items()}
    result["totalSeconds"] = time.perf_counter() - started
    json.dump(result, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
