"""The RehearsalReport (`apiVersion: taudash/v1, kind: RehearsalReport`, docs/rehearsal.md): built from
a finished rehearsal, stored under the state dir, rendered as a table, compared with the real run.
"""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from taudash.engine.model.quantity import Quantity, QuantityError
from taudash.engine.paths import state_dir, write_atomic
from taudash.engine.session import GPU_RESOURCES
from taudash.engine.text import clean
from taudash.engine.workflows import Journal, build
from taudash.engine.workflows.journal import deactivated_by

API_VERSION = "taudash/v1"
KIND = "RehearsalReport"

# What the simulator does not model (docs/simulator.md, "What moves" → "leaves out", and "Differences
# from a real apiserver"): a prediction is only as good as these allow. Keep in step with that page.
NOT_MODELLED = [
    "Kueue preemption, fair sharing, TAS placement, partial admission, WaitForPodsReady and backoff",
    "Pods, RayClusters and per-pod restarts (a Job runs for a drawn time; an eviction keeps the time left)",
    "running jobs' remaining run times are drawn from the simulator's seed, not known from the cluster",
    "new work arriving during the operation (the rehearsal adds no arrivals, node flaps or cordons)",
    "TauGrid node label rules, Topology and desiredStateHash reconciliation, TauTeam quota validation",
    "admission webhooks other than the Kueue CRD schemas, garbage collection by ownerReferences "
    "(beyond Workloads), namespace finalization, server-side apply",
    "other writers changing the cluster while the operation runs",
]
FIDELITY_POINTER = "docs/simulator.md (What moves; Differences from a real apiserver)"

_EVICTS = re.compile(r"^evicts (\d+) admitted Workload\(s\) in (\S+):")


class RehearsalError(Exception):
    pass


def rehearsals_dir() -> Path:
    d = state_dir() / "rehearsals"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def save(report: dict[str, Any], directory: Path | None = None) -> Path:
    path = (directory or rehearsals_dir()) / f"{report['metadata']['id']}.json"
    write_atomic(path, json.dumps(report, indent=1, sort_keys=False, default=str), mode=0o600)
    return path


def load(rid: str, directory: Path | None = None) -> dict[str, Any]:
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", rid or ""):
        raise RehearsalError(f"not a rehearsal id: {rid!r}")
    path = (directory or rehearsals_dir()) / f"{rid}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RehearsalError(f"no rehearsal {rid} (looked for {path})") from None
    except (OSError, ValueError) as exc:
        raise RehearsalError(f"{path}: unreadable rehearsal report ({exc.__class__.__name__})") from None
    if not isinstance(doc, dict) or doc.get("apiVersion") != API_VERSION or doc.get("kind") != KIND:
        raise RehearsalError(f"{path}: not a {API_VERSION} {KIND}")
    return doc


# --- building ---------------------------------------------------------------------------------


def _conds(obj: dict) -> dict[str | None, dict]:  # keyed by type (None: a condition without one)
    return {c.get("type"): c for c in ((obj.get("status") or {}).get("conditions") or ()) if isinstance(c, dict)}


def _true(obj: dict, ctype: str) -> bool:
    return (_conds(obj).get(ctype) or {}).get("status") == "True"


def _gpus(wl: dict) -> int:
    """GPUs a Workload holds (its admission's usage) or asks for (pod sets × container requests)."""
    total = 0.0
    adm = (wl.get("status") or {}).get("admission") or {}
    for psa in adm.get("podSetAssignments") or ():
        for res, qty in (psa.get("resourceUsage") or {}).items():
            if res in GPU_RESOURCES or res.endswith("/gpu"):
                total += _qty(qty)
    if total:
        return int(total)
    for ps in (wl.get("spec") or {}).get("podSets") or ():
        per = 0.0
        for c in (((ps.get("template") or {}).get("spec") or {}).get("containers") or ()):
            for res, qty in (((c.get("resources") or {}).get("requests")) or {}).items():
                if res in GPU_RESOURCES or res.endswith("/gpu"):
                    per += _qty(qty)
        total += per * int(ps.get("count") or 1)
    return int(total)


def _qty(v: Any) -> float:
    try:
        return float(Quantity.parse(v).value)
    except (QuantityError, TypeError, ValueError):
        return 0.0


def _queue_of(wl: dict, lqs: dict[tuple[str, str], dict]) -> str | None:
    adm = (wl.get("status") or {}).get("admission") or {}
    if adm.get("clusterQueue"):
        return adm["clusterQueue"]
    m = wl.get("metadata") or {}
    lq = lqs.get((m.get("namespace") or "", (wl.get("spec") or {}).get("queueName") or ""))
    return ((lq or {}).get("spec") or {}).get("clusterQueue")


def _flat(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif value not in (None, "", {}, []):  # an empty value and an absent one are the same setting
        out[prefix] = value


def _watched(obj: dict | None) -> dict[str, Any]:
    """The fields an operator changes: spec, labels and annotations (status is the controllers')."""
    if obj is None:
        return {}
    out: dict[str, Any] = {}
    m = obj.get("metadata") or {}
    _flat("spec", obj.get("spec"), out)
    for part in ("labels", "annotations"):
        if m.get(part):
            _flat(f"metadata.{part}", m[part], out)
    return out


def _anon(value: Any, rid: str) -> Any:
    """The rehearsal's own id (e.g. in a deactivated-by annotation) stands for the real run's id."""
    if isinstance(value, str):
        return value.replace(rid, "<workflow-id>") if rid else value
    if isinstance(value, list):
        return [_anon(v, rid) for v in value]
    if isinstance(value, dict):
        return {k: _anon(v, rid) for k, v in value.items()}
    return value


def object_diff(before: dict | None, after: dict | None, rid: str = "") -> list[dict[str, Any]]:
    a, b = _watched(before), _watched(after)
    return [{"path": p, "before": _anon(a.get(p), rid), "after": _anon(b.get(p), rid)}
            for p in sorted(set(a) | set(b)) if a.get(p) != b.get(p)]


def _paths(prefix: str, value: Any, out: set[str]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _paths(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out.add(prefix)


def written_paths(journal: Journal) -> dict[tuple[str, str | None, str], set[str]]:
    """Per object, the fields the run's patches set (what the fork's API server defaulted on the same
    write — fields a live object already carries — is not the workflow's change)."""
    out: dict[tuple[str, str | None, str], set[str]] = {}
    for r in journal.records:
        data = r.get("data") or {}
        op, result = data.get("op"), data.get("result") or {}
        if r["event"] == "executed" and isinstance(op, dict) and result.get("changed") and op.get("patch"):
            _paths("", op["patch"],
                   out.setdefault((op.get("kind", ""), op.get("namespace"), op.get("name", "")), set()))
    return out


def _within(path: str, written: set[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in written)


def written_objects(journal: Journal) -> list[tuple[str, str, str | None, str]]:
    """(verb, kind, namespace, name) of every write the run made that changed something, in order."""
    out: dict[tuple[str, str, str | None, str], None] = {}
    for r in journal.records:
        data = r.get("data") or {}
        op, result = data.get("op"), data.get("result") or {}
        if r["event"] == "executed" and isinstance(op, dict) and result.get("changed"):
            out[(op.get("verb", ""), op.get("kind", ""), op.get("namespace"), op.get("name", ""))] = None
    return list(out)


def planned_evictions(journal: Journal) -> dict[str, dict[str, int]]:
    """Per step, per ClusterQueue: admitted Workloads the executed HoldAndDrain plan said it evicts
    (the last plan of a step before its writes; the same reading for a rehearsal and a real run)."""
    out: dict[str, dict[str, int]] = {}
    last: dict[str, dict[str, int]] = {}
    for r in journal.records:
        step = r.get("step")
        if r["event"] == "planned" and step:
            last[step] = {}
            for note in (r.get("data") or {}).get("notes") or ():
                m = _EVICTS.match(str(note))
                if m:
                    last[step][m.group(2)] = int(m.group(1))
        elif r["event"] == "executed" and step and last.get(step) and \
                ((r.get("data") or {}).get("result") or {}).get("changed"):
            out.setdefault(step, {}).update(last[step])
    return out


def step_deactivations(journal: Journal) -> dict[str, list[str]]:
    wanted = set(deactivated_by(journal))
    out: dict[str, list[str]] = {}
    for r in journal.records:
        op = (r.get("data") or {}).get("op")
        if r["event"] == "executed" and isinstance(op, dict) \
                and ((r.get("data") or {}).get("result") or {}).get("changed") \
                and (op.get("namespace"), op.get("name")) in wanted and op.get("kind") == "Workload":
            out.setdefault(r["step"], []).append(f"{op['namespace']}/{op['name']}")
    return out


def _by_queue(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    agg: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        key = (r.get("team") or "-", r.get("queue") or "-")
        a = agg.setdefault(key, {"team": key[0], "queue": key[1], "workloads": 0, "gpus": 0})
        a["workloads"] += 1
        a["gpus"] += r.get("gpus", 0)
    return [agg[k] for k in sorted(agg)]


def _finding_key(f) -> tuple:
    return (f.rule, f.object.kind, f.object.namespace or "", f.object.name)


def _finding_row(f) -> dict[str, Any]:
    return {"severity": f.severity.value, "rule": f.rule, "kind": f.object.kind, "namespace": f.object.namespace,
            "name": f.object.name, "message": f.message}


def build_report(*, rid: str, kind: str, params: dict, fork, state: str, journal: Journal, world, before: dict,
                 before_view, after_view, timeline: dict, timing: dict, wait_timeout: float | None,
                 fork_writes: dict, seed: int, refused: list[str] | None = None,
                 stand_in: int = 0) -> dict[str, Any]:
    wf = build(kind, params)
    team_of = {q.name: q.team for q in before_view.cluster_queues}
    lqs = {(o["metadata"].get("namespace") or "", o["metadata"]["name"]): o for o in world.mirror.list("LocalQueue")}
    start_stamp = datetime.fromtimestamp(fork.now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    # Workloads: evicted (admitted before, evicted during the run), released (reserving, released).
    evicted, released = [], []
    for key, wl in before.get("Workload", {}).items():
        if _true(wl, "Finished") or not _true(wl, "QuotaReserved"):
            continue
        now = world.mirror.get("Workload", key[1], key[0] or None)
        if now is None or _true(now, "Finished") or _true(now, "QuotaReserved"):
            continue
        ev = _conds(now).get("Evicted") or {}
        queue = _queue_of(wl, lqs)
        row = {"namespace": key[0], "name": key[1], "queue": queue, "team": team_of.get(queue or ""),
               "gpus": _gpus(wl), "reason": ev.get("reason", "") if ev.get("status") == "True" else "released"}
        if _true(wl, "Admitted") and ev.get("status") == "True" and (ev.get("lastTransitionTime") or "") >= start_stamp:
            evicted.append(row)
        else:
            released.append(row)
    deactivated = []
    ns: str | None  # (a namespace, or None for a cluster-scoped object below)
    for ns, name in deactivated_by(journal):
        wl = before.get("Workload", {}).get((ns, name)) or world.mirror.get("Workload", name, ns) or {}
        queue = _queue_of(wl, lqs) if wl else None
        deactivated.append({"namespace": ns, "name": name, "queue": queue, "team": team_of.get(queue or ""),
                            "gpus": _gpus(wl) if wl else 0})

    # Objects the workflow wrote: their end state as a diff of what an operator changes.
    changes = []
    paths = written_paths(journal)
    for verb, k, ns, name in written_objects(journal):
        prev = before.get(k, {}).get((ns or "", name)) if k in before else None
        now = world.mirror.get(k, name, ns) if k in before else None
        gone = now is None or bool((now.get("metadata") or {}).get("deletionTimestamp"))
        changes.append({"verb": verb, "kind": k, "namespace": ns, "name": name,
                        "deleted": verb == "delete" and gone,
                        "diff": [] if verb == "delete" else
                        [d for d in object_diff(prev, now, rid)
                         if _within(d["path"], paths.get((k, ns, name), set()))]})

    # Steps: simulated durations, where it stalled.
    planned_ev = planned_evictions(journal)
    deact_steps = step_deactivations(journal)
    recs = journal.steps()
    steps, stalled = [], None
    for s in wf.steps:
        t = timeline.get(s.id) or {}
        r = recs.get(s.id)
        if r is None:
            st = "NotReached"
        elif r.failed:
            st = "Failed"
        elif r.verified:
            st = "Done"
        else:
            st = "Stopped"
        deadline = wait_timeout if wait_timeout is not None else s.wait_timeout
        failed = r.failed if r is not None else None
        is_stall = st == "Failed" and "gave up waiting" in (failed or "")
        if is_stall and stalled is None:
            stalled = {"step": s.id, "title": s.title, "deadlineSeconds": deadline, "message": failed,
                       "waitingFor": t.get("last", "")}
        steps.append({
            "id": s.id, "title": s.title, "state": st,
            "simulatedSeconds": round(t["end"] - t["start"], 3) if "end" in t and "start" in t else None,
            "waitSeconds": round(float((r.observed or {}).get("after", 0.0)), 3) if r and r.observed else None,
            "deadlineSeconds": deadline, "stalled": is_stall,
            "operations": len([e for e in (r.executed if r else []) if e.get("op") and not e.get("skipped")]),
            "evictions": planned_ev.get(s.id, {}),
            "deactivated": len(deact_steps.get(s.id, [])),
            "error": r.failed if r else None,
        })

    fb = {_finding_key(f): f for f in before_view.findings}
    fa = {_finding_key(f): f for f in after_view.findings}
    sim_s = timing["simulatedSeconds"]
    run_wall = timing["runWallSeconds"]
    timing = {**timing, "speedFactor": round(sim_s / run_wall, 1) if run_wall > 0 else None}
    result = state if stalled is None else "Stalled"
    gpus_freed = sum(r["gpus"] for r in evicted) + sum(r["gpus"] for r in released)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"id": rid, "createdAt": datetime.now(UTC).isoformat(timespec="seconds"),
                     "context": fork.context, "cluster": fork.cluster},
        "spec": {"workflow": kind, "title": wf.title, "params": params, "waitTimeout": wait_timeout,
                 "stepSeconds": timing["stepSeconds"], "seed": seed},
        "fork": {**fork.describe(), "capturedAt": start_stamp,
                 "note": ("kinds in partialKinds were copied from the fields taudash keeps (the live source keeps "
                          "slim models for high-volume kinds), not every field the API server holds")},
        "result": {
            "state": result, "workflowState": state, "stalled": stalled,
            "writesToCluster": 0,
            "writesToCluster_note": "the rehearsal holds no writing Actions for the real cluster; every write "
                                    "went to the in-process fork",
            "forkWrites": dict(sorted(fork_writes.items())),
            # Simulated controllers' writes the fork's schema refused (e.g. a Workload derived from a
            # partially copied Job): dropped, as a real API server would refuse them.
            "refusedControllerWrites": len(refused or []),
            "refusedSamples": list(refused or [])[:5],
            # Workloads whose owner the simulator does not model (e.g. Pods), evicted or released by
            # the rehearsal's stand-in for Kueue (taudash/rehearse/standin.py)
            "standInEvictions": stand_in,
            "timing": timing,
            "predictedSeconds": sum(s["simulatedSeconds"] or 0 for s in steps),
            "steps": steps,
            "evicted": sorted(evicted, key=lambda r: (r["queue"] or "", r["namespace"], r["name"])),
            "evictedByQueue": _by_queue(evicted),
            "released": sorted(released, key=lambda r: (r["queue"] or "", r["namespace"], r["name"])),
            "deactivated": sorted(deactivated, key=lambda r: (r["queue"] or "", r["namespace"], r["name"])),
            "deactivatedByQueue": _by_queue(deactivated),
            "gpusFreed": gpus_freed,
            "findings": {
                "before": before_view.counts(), "after": after_view.counts(),
                "appeared": [_finding_row(fa[k]) for k in sorted(set(fa) - set(fb))],
                "cleared": [_finding_row(fb[k]) for k in sorted(set(fb) - set(fa))],
            },
            "changes": changes,
        },
        "notModelled": list(NOT_MODELLED),
        "fidelity": FIDELITY_POINTER,
    }


# --- after the fact: prediction beside reality ----------------------------------------------------


def _step_wall(journal: Journal) -> dict[str, float]:
    first: dict[str, float] = {}
    end: dict[str, float] = {}
    for r in journal.records:
        s = r.get("step")
        if not s:
            continue
        first.setdefault(s, r["at"])
        if r["event"] in ("verified", "failed"):
            end[s] = r["at"]
    return {s: round(end[s] - first[s], 3) for s in end if s in first}


def compare(report: dict[str, Any], journal: Journal) -> dict[str, Any]:
    """Per step: predicted vs actual duration, evictions and deactivations; the totals; and whether the
    run wrote the objects the rehearsal predicted."""
    actual_dur = _step_wall(journal)
    actual_ev = planned_evictions(journal)
    actual_de = step_deactivations(journal)
    rows = []
    for s in report["result"]["steps"]:
        rows.append({
            "id": s["id"], "title": s["title"],
            "predictedSeconds": s["simulatedSeconds"], "actualSeconds": actual_dur.get(s["id"]),
            "predictedEvictions": sum(s["evictions"].values()),
            "actualEvictions": sum(actual_ev.get(s["id"], {}).values()),
            "predictedDeactivations": s["deactivated"], "actualDeactivations": len(actual_de.get(s["id"], [])),
            "predictedState": s["state"],
        })
    predicted = {f"{c['kind']} {c['namespace'] + '/' if c['namespace'] else ''}{c['name']}"
                 for c in report["result"]["changes"]}
    actual = {f"{k} {ns + '/' if ns else ''}{name}" for _v, k, ns, name in written_objects(journal)}
    pred_de = {f"{r['namespace']}/{r['name']}" for r in report["result"]["deactivated"]}
    act_de = {f"{ns}/{name}" for ns, name in deactivated_by(journal)}
    return {
        "rehearsal": report["metadata"]["id"], "predictedResult": report["result"]["state"],
        "actualState": journal.state, "steps": rows,
        "objects": {"predicted": len(predicted), "actual": len(actual),
                    "onlyPredicted": sorted(predicted - actual), "onlyActual": sorted(actual - predicted)},
        "deactivations": {"predicted": len(pred_de), "actual": len(act_de),
                          "onlyPredicted": sorted(pred_de - act_de), "onlyActual": sorted(act_de - pred_de)},
    }


# --- rendering ----------------------------------------------------------------------------------


def _dur(s: float | None) -> str:
    if s is None:
        return "-"
    s = float(s)
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def _short(v: Any, width: int = 60) -> str:
    text = json.dumps(v, default=str) if not isinstance(v, str) else v
    return text if len(text) <= width else text[: width - 1] + "…"


def render_table(report: dict[str, Any]) -> list[str]:
    """The report as plain lines (every name from the cluster made inert by the caller's `clean`)."""
    md, spec, res = report["metadata"], report["spec"], report["result"]
    t = res["timing"]
    lines = [
        f"rehearsal {md['id']}: {spec['title']} on a fork of {md.get('context') or '?'} "
        f"({report['fork']['objects']} objects) — predicted {res['state']}",
        f"  nothing was written to the real cluster (writes to it: {res['writesToCluster']}); "
        f"{sum(res['forkWrites'].values())} write request(s) went to the in-process fork",
        f"  predicted duration {_dur(res['predictedSeconds'])} simulated, computed in {t['runWallSeconds']:.1f} s "
        f"(×{t['speedFactor'] or '-'} simulated seconds per wall second; setup {t['setupWallSeconds']:.1f} s)",
    ]
    if res.get("stalled"):
        st = res["stalled"]
        lines.append(f"  ✖ stalls at step {st['step']} ({st['title']}): not done within its "
                     f"{_dur(st['deadlineSeconds'])} deadline; waiting for: {st.get('waitingFor') or '?'}")
    lines.append("steps:")
    for i, s in enumerate(res["steps"], 1):
        ev = sum(s["evictions"].values())
        extra = (f", evicts {ev}" if ev else "") + (f", deactivates {s['deactivated']}" if s["deactivated"] else "")
        lines.append(f"  {i} {s['title']}  [{s['state']}] {_dur(s['simulatedSeconds'])}"
                     f" (deadline {_dur(s['deadlineSeconds'])}){extra}")
        if s.get("error"):
            lines.append(f"      error: {s['error']}")
    for label, key in (("evicted", "evictedByQueue"), ("deactivated", "deactivatedByQueue")):
        rows = res[key]
        if rows:
            lines.append(f"{label}: " + "; ".join(f"{r['team']}/{r['queue']} {r['workloads']} Workload(s), "
                                                  f"{r['gpus']} GPU(s)" for r in rows))
    released = res.get("released") or []
    if released:
        lines.append(f"reservations released: {len(released)} Workload(s)")
    lines.append(f"GPUs freed: {res['gpusFreed']}")
    f = res["findings"]
    lines.append(f"findings: {f['before']} → {f['after']}")
    for row in f["appeared"]:
        lines.append(f"  + {row['severity']} {row['rule']} {row['kind']} {row['name']}: {row['message']}")
    for row in f["cleared"]:
        lines.append(f"  - {row['severity']} {row['rule']} {row['kind']} {row['name']}: {row['message']}")
    lines.append("end state of the objects it changes:")
    for c in res["changes"]:
        ref = f"{c['kind']} {c['namespace'] + '/' if c['namespace'] else ''}{c['name']}"
        if c["verb"] == "delete":
            lines.append(f"  - {ref}: deleted" if c["deleted"] else f"  - {ref}: deleted (still finalizing)")
            continue
        if not c["diff"]:  # e.g. a queue held, then put back: written, but no field differs at the end
            lines.append(f"  ~ {ref}: written, ends as it was")
            continue
        lines.append(f"  ~ {ref}: " + "; ".join(f"{d['path']}: {_short(d['before'], 30)} → {_short(d['after'])}"
                                               for d in c["diff"][:4]) + (" …" if len(c["diff"]) > 4 else ""))
    if report["fork"].get("partialKinds"):
        lines.append(f"partial copies: {', '.join(report['fork']['partialKinds'])} (fields taudash reads only)")
    if report["fork"].get("access"):
        lines.append("not readable in the cluster (so not in the fork): "
                     + ", ".join(f"{k} {v}" for k, v in report["fork"]["access"].items()))
    lines.append(f"not modelled (see {report['fidelity']}):")
    lines += [f"  · {x}" for x in report["notModelled"]]
    return [clean(x) for x in lines]


def age_of(report: dict[str, Any]) -> float | None:
    try:
        return time.time() - datetime.fromisoformat(report["metadata"]["createdAt"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return None
