"""`taudash capacity`: what can start now — free GPUs per flavor, node and domain, GPU health, gang slots for a
shape (docs/capacity.md, "What can start now"; the JSON contract is there)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any

from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.capacity import capacity_view
from taudash.engine.rules.gang import PLACEMENTS, Shape, ShapeError, shape
from taudash.engine.rules.queue_order import parse_time
from taudash.engine.rules.utilisation import current_utilisation, duration_text
from taudash.engine.text import clean

from ..errors import EXIT_BAD_INPUT, EXIT_OK, UsageError
from ..loading import load_from_args, report_issues
from .options import add_prometheus_arg, add_source_args, rule_config

NODES_SHOWN = 40
BLOCKERS_SHOWN = 5
DOMAINS_SHOWN = 6


def register(sub) -> None:
    p = sub.add_parser(
        "capacity",
        description="Free GPUs per GPU flavor (allocatable less the requests of bound, non-terminal Pods, on "
        "healthy or degraded schedulable nodes), the GPUs that unhealthy, unknown-health, cordoned and NotReady "
        "nodes hold, and, for a shape (--gpus-per-worker, --workers, --placement), how many such gangs fit at "
        "once and where, with the Pods whose GPUs block more. Without a shape, the ready workload profiles' "
        "shapes are listed. Unreadable Pods: free capacity unknown (null), never all free. Exit 0; 2 for a bad "
        "shape or a snapshot with unreadable objects.",
    )
    add_source_args(p)
    add_prometheus_arg(p)
    p.add_argument("--gpus-per-worker", type=int, metavar="N", help="GPUs each worker needs on one host")
    p.add_argument("--workers", type=int, default=None, metavar="W", help="workers in the gang (default 1)")
    p.add_argument("--placement", default=None, metavar="P",
                   help=f"where the workers must be: {', '.join(PLACEMENTS)} (default unconstrained)")
    p.add_argument("-o", "--output", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def asked_shape(args) -> Shape | None:
    if args.gpus_per_worker is None:
        if args.workers is not None or args.placement is not None:
            raise UsageError("--workers and --placement describe a shape: give --gpus-per-worker too")
        return None
    try:
        return shape(args.gpus_per_worker, 1 if args.workers is None else args.workers, args.placement or "")
    except ShapeError as exc:
        raise UsageError(f"bad shape: {exc}") from None


def contract(view_data: dict[str, Any]) -> dict[str, Any]:
    """The output: `fits` only when a shape was asked for."""
    for fl in view_data["flavors"]:
        if fl.get("fits") is None:
            fl.pop("fits", None)
    return view_data


def run(args) -> int:
    asked = asked_shape(args)  # a bad shape is refused before any cluster is read
    loaded = load_from_args(args)
    now = parse_time(loaded.source.observed_at) or datetime.now(UTC)  # a snapshot is judged at its capture time
    ctx = RuleContext(store=loaded.store, now=now, config=rule_config(args))
    view, findings = capacity_view(ctx, asked)
    util, util_findings = current_utilisation(ctx)
    data = contract(view.to_contract())
    if util.enabled:  # only with a Prometheus: the contract above is unchanged without one
        data["utilisation"] = util.to_contract()
    data["findings"] = [f.to_contract() for f in sorted(findings + util_findings, key=lambda f: f.sort_key())]
    if args.output == "json":
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        _print_table(data, asked)
    report_issues(loaded.issues)
    return EXIT_BAD_INPUT if loaded.issues else EXIT_OK


def _n(v: Any) -> str:
    return "?" if v is None else str(v)


def _shape_text(f: dict[str, Any]) -> str:
    return f"{f['workers']}×{f['gpusPerWorker']} GPUs {f['placement']}"


def _print_table(d: dict[str, Any], asked: Shape | None) -> None:
    # Every string may come from the cluster: printed inert.
    if not d["known"]:
        print(clean(f"free capacity unknown: {d['unknownReason']}"))
    if not d["flavors"]:
        print("no GPU nodes (nodes labelled tau.azure.com/gpu-class)")
    for fl in d["flavors"]:
        g = fl["gpus"]
        print(clean(f"{fl['name']}: {_n(g['free'])} free of {g['allocatable']} GPUs ({_n(g['requested'])} requested)"
                    f"  unhealthy {g['unhealthy']}  unknown {g['unknownHealth']}  cordoned {g['cordoned']}  "
                    f"degraded {g['degraded']}  not ready {g['notReady']}"
                    + (f"  tainted {g['tainted']}" if g["tainted"] else "")))
        top = [x for x in fl["domains"] if x["level"] == fl["levels"][-2]] if len(fl["levels"]) > 1 else []
        if top:
            shown = "  ".join(f"{x['name']} {_n(x['free'])}/{x['allocatable']}" for x in top[:DOMAINS_SHOWN])
            more = f"  … {len(top) - DOMAINS_SHOWN} more" if len(top) > DOMAINS_SHOWN else ""
            print(clean(f"  {top[0]['level']} free/GPUs: {shown}{more}"))
        rows = [n for n in fl["nodes"] if n["health"] != "healthy" or not n["schedulable"] or (n["free"] or 0) > 0]
        print(f"  {'node':<34} {'gpus':>4} {'used':>4} {'free':>4}  {'health':<9} reasons")
        for n in rows[:NODES_SHOWN]:
            print(clean(f"  {n['name']:<34} {n['allocatable']:>4} {_n(n['requested']):>4} {_n(n['free']):>4}  "
                        f"{n['health']:<9} {', '.join(n['reasons']) or '-'}"))
        hidden = len(fl["nodes"]) - len(rows)
        extra = max(0, len(rows) - NODES_SHOWN)
        if hidden or extra:
            print(f"  ({hidden} full healthy node(s) not shown" + (f", {extra} more listed in -o json" if extra else "")
                  + ")")
        fits = [fl["fits"]] if asked is not None and fl.get("fits") else fl["shapes"]
        for f in fits:
            label = f"profile {f['profile']}: " if f["profile"] else "fits: "
            where = ", ".join(f"{w['domain']} {w['count']}" for w in f["where"][:6] if w["level"] != "flavor")
            print(clean(f"  {label}{_shape_text(f)} → {_n(f['count'])} now"
                        + (f" ({where})" if where else "")
                        + (f"; best domain has {f['bestFree']} free" if not f["count"] and f["bestFree"] else "")))
            if asked is not None:
                for b in f["blockers"][:BLOCKERS_SHOWN]:
                    print(clean(f"      freeing {b['namespace']}/{b['name']} ({b['gpus']} GPU on {b['node']}, "
                                f"{b['domain']}) would add {b['slotsGained']}"
                                + (f"  [{b['workload']}]" if b["workload"] else "")))
    if "utilisation" in d:
        _print_utilisation(d["utilisation"])
    for f in d["findings"]:
        print(clean(f"{f['severity']:<8} {f['rule']} {f['object']['kind']} "
                    f"{(f['object']['namespace'] + '/') if f['object']['namespace'] else ''}{f['object']['name']}: "
                    f"{f['message']}"))


WORKLOADS_SHOWN = 10


def _print_utilisation(u: dict[str, Any]) -> None:
    """Idle allocated GPUs per workload and team, or why utilisation is unknown (never shown as 0)."""
    if not u["known"]:
        print(clean(f"utilisation unknown: {u['unknownReason']}"))
        return
    g = u["gpus"]
    print(clean(f"utilisation ({u['source']}, {u['measuredAt']}): {g['idle']} of {g['allocated']} allocated GPUs "
                f"idle below {u['idleBelowPercent']:g} % for {u['idleMinutes']}m or more"
                + (f"; {g['unmeasured']} not measured" if g["unmeasured"] else "")))
    if not u["workloads"]:
        return
    print(f"  {'team':<14} {'idle GPUs':>9} {'idle GPU-h':>10}  workloads")
    for t in u["teams"]:
        print(clean(f"  {t['team'] or '-':<14} {t['idleGpus']:>9} {t['idleGpuHours']:>10g}  {t['workloads']}"))
    print(f"  {'workload':<44} {'team':<14} {'idle/GPUs':>9} {'idle for':>9} {'idle GPU-h':>10}")
    for w in u["workloads"][:WORKLOADS_SHOWN]:
        name = f"{w['namespace']}/{w['name']}" + ("" if w["kind"] == "Workload" else f" ({w['kind']})")
        print(clean(f"  {name:<44} {w['team'] or '-':<14} {str(w['idleGpus']) + '/' + str(w['gpus']):>9} "
                    f"{duration_text(w['idleSeconds']):>9} {w['idleGpuHours']:>10g}"))
    if len(u["workloads"]) > WORKLOADS_SHOWN:
        print(f"  … {len(u['workloads']) - WORKLOADS_SHOWN} more in -o json")
