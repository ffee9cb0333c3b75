"""What-if predictions kept beside the recorded history, and held against what then happened.

Each `taudash whatif` (the WhatIfPrediction, docs/whatif.md) is kept as a private JSON file under
`<state dir>/whatif/<cluster key>/<id>.json`: the same key as the cluster's history file. When the object is
really submitted later, the history the dashboard records (the `waits` and `evictions` tables) says what
happened to its Workload: `actual_of` finds that Workload — the object's own name for a Workload, else the
name Kueue derives from the owner (`<kind>-<name>-<hash>`) in the same namespace, created after the
prediction — and `compare` sets the two side by side. Matching is by name and time, never by guess: no
recorded Workload gives `actual: null` ("not seen yet"), never a made-up outcome.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from ..paths import state_dir, write_atomic
from .db import preemptor_uid
from .query import PREEMPTED

STARTS_NOW_SECONDS = 60.0  # reserved within a minute of creation counts as "started now" on the real side
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_KEY = re.compile(r"[A-Za-z0-9._-]{1,128}")


def predictions_dir(key: str, base: Path | None = None) -> Path:
    if not _KEY.fullmatch(key) or key.startswith("."):
        raise ValueError(f"invalid cluster key {key!r}")
    return (base or state_dir()) / "whatif" / key


def record(doc: dict[str, Any], key: str, base: Path | None = None) -> Path:
    """Keep one prediction (mode 0600, written atomically)."""
    pid = str((doc.get("metadata") or {}).get("id") or "")
    if not _ID.fullmatch(pid):
        raise ValueError(f"not a prediction id: {pid!r}")
    directory = predictions_dir(key, base)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / f"{pid}.json"
    write_atomic(path, json.dumps(doc, indent=1, default=str), mode=0o600)
    return path


def load_all(key: str, base: Path | None = None) -> list[dict[str, Any]]:
    """Every kept prediction of a cluster, oldest first (unreadable files are skipped)."""
    directory = predictions_dir(key, base)
    out = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else ():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("kind") == "WhatIfPrediction":
            out.append(doc)
    return sorted(out, key=lambda d: (str(d["metadata"].get("createdAt")), str(d["metadata"].get("id"))))


def _workload_name_matches(obj: dict[str, Any], name: str) -> bool:
    if obj.get("kind") == "Workload":
        return name == obj.get("name")
    prefix = f"{str(obj.get('kind', '')).lower()}-{obj.get('name')}"[:247].rstrip("-.")
    return re.fullmatch(re.escape(prefix) + r"-[0-9a-f]{5}", name) is not None  # Kueue's 5-hex suffix


def actual_of(conn: sqlite3.Connection, doc: dict[str, Any], since: float) -> dict[str, Any] | None:
    """What the recorded history says happened to the predicted object's Workload (the first admitted after
    `since`, the prediction's time), or None when none was recorded."""
    obj = (doc.get("spec") or {}).get("object") or {}
    rows = conn.execute(
        "SELECT uid, name, cluster_queue, flavor, created, reserved, admitted FROM waits "
        "WHERE namespace = ? AND admitted >= ? ORDER BY admitted", (obj.get("namespace"), since)).fetchall()
    for uid, name, cq, flavor, created, reserved, admitted in rows:
        if not _workload_name_matches(obj, name) or (created is not None and created < since - 1):
            continue
        start = reserved if reserved is not None else admitted
        wait = None if created is None else max(0.0, start - created)
        victims = [
            {"namespace": ns, "name": n, "at": at}
            for ns, n, at, message in conn.execute(
                "SELECT namespace, name, at, message FROM evictions WHERE reason = ? AND at >= ? ORDER BY at",
                (PREEMPTED, since))
            if preemptor_uid(message) == uid]
        return {"workload": name, "uid": uid, "clusterQueue": cq, "flavor": flavor, "waitSeconds": wait,
                "startedNow": wait is not None and wait <= STARTS_NOW_SECONDS, "preempted": victims}
    return None


def predicted_gpu_flavor(prediction: dict[str, Any]) -> str | None:
    """The flavor the prediction gives the GPUs of its first pod set that asks for any (else its first flavor)."""
    flavors = [f.get("flavors") or {} for f in prediction.get("flavors") or []]
    for f in flavors:
        for resource, flavor in sorted(f.items()):
            if resource.endswith("/gpu"):
                return str(flavor)
    return next((str(v) for f in flavors for v in f.values()), None)


def compare(doc: dict[str, Any], actual: dict[str, Any] | None) -> dict[str, Any]:
    """A prediction beside what happened: flavor, starts now, the wait against the interval, the preemptions."""
    p = doc.get("prediction") or {}
    eta = p.get("eta") or {}
    est = eta.get("estimate") or {}
    fork = (eta.get("fork") or {}).get("simulatedAdmissionSeconds")
    predicted = {"admissible": p.get("admissible"), "clusterQueue": p.get("clusterQueue"),
                 "flavor": predicted_gpu_flavor(p), "startsNow": p.get("startsNow"),
                 "waitSeconds": 0.0 if p.get("startsNow") else fork,
                 "interval": [est["low"], est["high"]] if est.get("known") else None,
                 "preempts": sorted(f"{v['namespace']}/{v['name']}" for v in p.get("preempts") or [])}
    out: dict[str, Any] = {"id": doc["metadata"].get("id"), "createdAt": doc["metadata"].get("createdAt"),
                           "object": (doc.get("spec") or {}).get("object"), "predicted": predicted, "actual": None,
                           "match": None}
    if actual is None:
        return out
    victims = sorted(f"{v['namespace']}/{v['name']}" for v in actual["preempted"])
    out["actual"] = {**actual, "preempts": victims}
    interval = [est["low"], est["high"]] if est.get("known") else None
    wait = actual["waitSeconds"]
    out["match"] = {
        "flavor": predicted["flavor"] == actual["flavor"] if predicted["flavor"] and actual["flavor"] else None,
        "startsNow": predicted["startsNow"] == actual["startedNow"],
        "waitInInterval": (interval[0] <= wait <= interval[1]) if interval is not None and wait is not None else None,
        "preempts": predicted["preempts"] == victims,
    }
    return out


def created_at(doc: dict[str, Any]) -> float:
    """The prediction's time (epoch seconds) from its `metadata.createdAt`."""
    from datetime import datetime

    return datetime.fromisoformat(str(doc["metadata"].get("createdAt")).replace("Z", "+00:00")).timestamp()


def outcomes(conn: sqlite3.Connection | None, key: str, since: float, base: Path | None = None) -> list[dict[str, Any]]:
    """Each prediction of the cluster made since `since`, beside what the history (`conn`; None: no history
    recorded yet, so nothing seen) says happened, oldest first."""
    out = []
    for d in load_all(key, base):
        try:
            at = created_at(d)
        except (TypeError, ValueError):  # a file without a readable time: never shown as a match
            continue
        if at >= since:
            out.append(compare(d, actual_of(conn, d, at) if conn is not None else None))
    return out


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def outcome_cells(item: dict[str, Any]) -> list[str]:
    """An outcome as the table cells `history whatif` and the History screen show: ID, OBJECT, then
    predicted → actual per column; ✓/✗ when both sides are known, '…' for "not seen yet"."""
    p, a, m = item["predicted"], item["actual"], item["match"] or {}

    def pair(pred: str, act: str | None, ok: bool | None) -> str:
        mark = "" if ok is None else (" ✓" if ok else " ✗")
        return f"{pred} → {act if act is not None else '…'}{mark}"

    obj = item["object"] or {}
    wait = None if a is None else _duration(a["waitSeconds"])
    lo_hi = p["interval"]
    pw = "now" if p["startsNow"] else (f"{_duration(lo_hi[0])}–{_duration(lo_hi[1])}" if lo_hi else
                                        _duration(p["waitSeconds"]))
    return [str(item["id"]), f"{obj.get('kind')} {obj.get('namespace')}/{obj.get('name')}",
            pair(p["flavor"] or "-", None if a is None else a["flavor"] or "-", m.get("flavor")),
            pair("yes" if p["startsNow"] else "no", None if a is None else ("yes" if a["startedNow"] else "no"),
                 m.get("startsNow")),
            pair(pw, wait, m.get("waitInInterval")),
            pair(str(len(p["preempts"])), None if a is None else str(len(a["preempts"])), m.get("preempts"))]


OUTCOME_COLUMNS = ("ID", "OBJECT", "FLAVOR", "STARTS NOW", "WAIT", "PREEMPTS")

__all__ = ["OUTCOME_COLUMNS", "actual_of", "compare", "created_at", "load_all", "outcome_cells", "outcomes",
           "predicted_gpu_flavor", "predictions_dir", "record"]
