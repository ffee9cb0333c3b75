"""A deterministic history database over the demo snapshot, for the History screen's tests.

The demo cluster is recorded once at NOW (its real waits and its one preemption, whose preemptor is in
the snapshot), then a week of synthetic samples at fixed times is added for its pool flavors and
ClusterQueues — a smooth daily pattern, no randomness — with one hour recorded by nobody (a gap), plus
a few older preemptions and waits. Same inputs, same file, same pictures.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

from taudash.engine.history import db as hdb
from taudash.engine.history.recorder import Eviction, Observation, Recorder, Wait, view_findings
from taudash.engine.session import Session
from taudash.engine.sources.snapshot import load_snapshot
from taudash.engine.view import SourceInfo

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "snapshots" / "demo.yaml"
NOW = datetime(2026, 11, 30, 9, 5, tzinfo=UTC)
T = NOW.timestamp()
DAY = 86400
GAP = (T - 3 * 3600, T - 2 * 3600)  # nothing recorded in this hour
BUDGET = {"taugrid-gpu-a100-80gb": 24.0, "taugrid-gpu-h100-80gb": 64.0, "taugrid-gpu-h200-141gb": 24.0,
          "taugrid-gpu-gb200-186gb": 72.0}
PHASE = {flavor: i for i, flavor in enumerate(BUDGET)}  # each flavor's wave and the h100's budget dip (index 1)
QUEUES = ("platform-cq", "research-multikueue", "tau-ws-eval", "tau-ws-train", "tau-ws-vision")
GPU = "nvidia.com/gpu"


def demo_session(history_reader=None) -> Session:
    """The demo snapshot's session (`history_reader`: what the program would give it, e.g. a HistoryReader)."""
    r = load_snapshot(DEMO)
    src = SourceInfo(type="snapshot", context=r.context, path="snapshots/demo.yaml", observed_at=r.captured_at)
    return Session(r.store, src, demo=True, history_reader=history_reader)


def times() -> list[int]:
    """Every 10 s in the last hour, every minute in the last day, every 10 minutes before (7 days)."""
    out = set(range(int(T - 7 * DAY), int(T - DAY), 600))
    out |= set(range(int(T - DAY), int(T - 3600), 60))
    out |= set(range(int(T - 3600), int(T), 10))
    return sorted(t for t in out if not GAP[0] <= t < GAP[1])


def wave(t: float, period: float, phase: float = 0.0) -> float:
    return 0.5 + 0.5 * math.sin(2 * math.pi * (t / period + phase))


def sample_values(t: float) -> dict[tuple, float]:
    out = {}
    for flavor, budget in sorted(BUDGET.items()):
        i = PHASE[flavor]
        out[("flavor", flavor, flavor, GPU, "budget")] = budget if t > T - 2 * DAY or i != 1 else budget - 16
        out[("flavor", flavor, flavor, GPU, "reserved")] = float(round(budget * (0.3 + 0.8 * wave(t, DAY, i / 3))))
    for i, cq in enumerate(QUEUES):
        out[("queue", cq, "", "", "pending")] = float(round((2 + 2 * i) * wave(t, DAY / 2, i / 5)))
        out[("queue", cq, "", "", "admitted")] = float(round((1 + i) * wave(t, DAY, i / 7 + 0.25)))
    return out


def build(path: Path) -> Path:
    """The fixture file at `path` (made fresh)."""
    session = demo_session()
    rec = Recorder(path)
    # the demo as it is at NOW: its waits, its preemption (the preemptor is named), its findings
    rec.record(session.view(NOW), session.store, NOW)
    c = rec.conn
    c.execute("BEGIN IMMEDIATE")
    ids = {}
    for key in sample_values(T):
        ids[key] = c.execute("INSERT INTO series (kind, name, flavor, resource, metric) VALUES (?,?,?,?,?) "
                             "ON CONFLICT DO UPDATE SET kind = kind RETURNING id", key).fetchone()[0]
    rows = [(ids[k], t, v) for t in times() for k, v in sample_values(t).items()]
    c.executemany("INSERT OR REPLACE INTO samples VALUES (?,?,?)", rows)
    c.executemany("INSERT OR IGNORE INTO sample_passes VALUES (?)", [(t,) for t in times()])  # each one a pass
    c.execute("COMMIT")
    rec.close()
    older = Observation(now=T - 2 * DAY)
    older.evictions = [
        Eviction(uid=f"uid-old-{i}", at=T - at, namespace=ns, name=name, cluster_queue=cq, cohort="tau-team-research",
                 team=ns, reason="Preempted", message=f"Preempted to accommodate a workload (UID: {puid}, JobUID: j) "
                 "due to reclamation within the cohort", preemption_reason="InCohortReclamation",
                 preemptor_uid=puid, preemptor_namespace=pns, preemptor_name=pname, preemptor_cluster_queue=pcq)
        for i, (at, ns, name, cq, puid, pns, pname, pcq) in enumerate([
            (1800, "vision", "job-sam2-finetune-549d1", "tau-ws-vision", "02917f0d-4df5-533d-90ca-e5360a6806fe",
             "train", "job-llama-pretrain-34b-31d4a", "tau-ws-train"),
            (5 * 3600, "eval", "job-mmlu-sweep-17-def97", "tau-ws-eval", "uid-gone", None, None, None),
            (3 * DAY, "train", "job-probe-linear-1x-e7474", "tau-ws-train", "fc690517-49c9-54f1-9f91-a84b3f662fe5",
             "train", "job-mixtral-sft-h100-eccb5", "tau-ws-train"),
        ])
    ]
    older.evictions.append(Eviction(uid="uid-old-nf", at=T - 8 * 3600, namespace="train",
                                    name="job-grad-accum-debug-4b979",
                                    cluster_queue="tau-ws-train", cohort="tau-team-research", team="train",
                                    reason="PodsReadyTimeout", message="Exceeded the PodsReady timeout"))
    older.waits = [
        Wait(uid=f"uid-wait-{i}", namespace=ns, name=f"job-w{i}", queue="jobqueue", cluster_queue=f"tau-ws-{ns}",
             team=ns, flavor="taugrid-gpu-h100-80gb", created=T - back - wait, reserved=T - back - 1, admitted=T - back)
        for i, (ns, back, wait) in enumerate([
            ("train", 600, 45), ("train", 1200, 300), ("train", 4 * 3600, 2400), ("vision", 900, 20),
            ("vision", 3 * DAY, 7200), ("eval", 1500, 90),
        ])
    ]
    older.findings = view_findings(session.view(NOW))  # still open: nothing closes
    writer = Recorder(path)
    writer.write(older)
    writer.close()
    # nothing of this run's WAL left behind: a read-only reader sees one file
    conn = hdb.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path
