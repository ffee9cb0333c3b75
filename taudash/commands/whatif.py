"""`taudash whatif FILE`: what would happen if this Job, RayJob, Deployment or Workload were submitted now
(docs/whatif.md: the WhatIfPrediction contract). Predicted on an in-process simulated fork; never written."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from taudash.engine.text import clean

from ..errors import EXIT_CRITICAL, EXIT_OK, UsageError
from .options import SOURCE, add_source_args, rule_config


def register(sub) -> None:
    p = sub.add_parser(
        "whatif",
        description="Forks the cluster (a live context over a read-only connection, a --snapshot or --demo) into "
        "an in-process simulator, adds the object and runs Kueue's admission forward in simulated time. Nothing is "
        "written to the cluster. Prints a WhatIfPrediction (docs/whatif.md). Exit 0 when the object is admissible, "
        "1 when it can never be admitted as the cluster stands (the reason says why) or when the queues could not "
        "be read (admissible: null), 2 on a bad manifest, 3 when the cluster cannot be reached.",
    )
    p.add_argument("file", metavar="FILE", nargs="?", help="the manifest (YAML or JSON, one object; - reads stdin)")
    p.add_argument("--quota", metavar="FILE", help="instead of an object: changed ClusterQueues, Cohorts, "
                   "TauWorkspaces or TauTeams (YAML, several documents); the pending queue is run forward with and "
                   "without them, and admissions and waits compared per queue and team")
    p.add_argument("--catalog", metavar="FILE", help="instead of an object: a changed workload-profile catalog (a "
                   "TauCluster, the chart's tauCluster.workloadProfiles, or a list of profiles: the whole catalog, "
                   "as `workflow start catalog` takes it); "
                   "reports which profiles would be Ready, what changes, the jobs stamped with a removed or changed "
                   "profile, and the pending queue run forward both ways")
    add_source_args(p, SOURCE - {"pvc"})
    p.add_argument("-o", "--output", choices=("table", "json"), default="table")
    p.add_argument("--horizon", type=float, default=None, metavar="SECONDS",
                   help="simulated seconds to run the fork forward at most (default 6 h)")
    p.add_argument("--step", type=float, default=None, metavar="SECONDS",
                   help="simulated seconds per step: the resolution of the predicted admission time (default 30)")
    p.add_argument("--seed", type=int, default=0, help="the simulator's seed (job durations in the fork)")
    p.set_defaults(func=run)


def read_manifest(path: str):
    from taudash.whatif import ManifestError, parse

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return parse(text, "stdin" if path == "-" else path)
    except ManifestError as exc:
        raise UsageError(clean(str(exc))) from None


def run(args) -> int:
    from taudash.whatif import DEFAULT_HORIZON, DEFAULT_STEP, ManifestError, whatif
    from taudash.whatif.document import render_table

    for flag, value in (("--horizon", args.horizon), ("--step", args.step)):
        if value is not None and not value > 0:
            raise UsageError(f"{flag}: give a number of seconds above 0")
    if sum(x is not None for x in (args.file, args.quota, args.catalog)) != 1:
        raise UsageError("give one manifest FILE, or --quota FILE, or --catalog FILE")
    if args.quota is not None:
        return _run_quota(args)
    if args.catalog is not None:
        return _run_catalog(args)
    manifest = read_manifest(args.file)  # a bad manifest fails before any cluster is reached
    fork, source, key = _fork(args)
    try:
        doc = whatif(fork, manifest, config=rule_config(_no_pvc(args)), horizon=args.horizon or DEFAULT_HORIZON,
                     step=args.step or DEFAULT_STEP, seed=args.seed, source=source)
    except ManifestError as exc:
        raise UsageError(clean(str(exc))) from None
    _record(doc, key)
    if args.output == "json":
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    else:
        for line in render_table(doc):
            print(line)
    return EXIT_OK if doc["prediction"]["admissible"] else EXIT_CRITICAL  # never, or unknown (unreadable kinds)


def _read_docs(path: str, parse):
    """`parse(documents, path)` of a YAML file; any problem with it is a usage error (exit 2) naming the file."""
    import yaml

    from taudash.whatif import ManifestError

    try:
        text = Path(path).read_text(encoding="utf-8")
        return parse([d for d in yaml.safe_load_all(text) if d is not None], path)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except yaml.YAMLError as exc:
        raise UsageError(clean(f"{path}: not valid YAML: {getattr(exc, 'problem', None) or exc}")) from None
    except ManifestError as exc:
        raise UsageError(clean(str(exc))) from None


def _run_quota(args) -> int:
    from taudash.whatif import DEFAULT_HORIZON, DEFAULT_STEP, ManifestError
    from taudash.whatif.quota import parse_changes, quota_whatif

    changes = _read_docs(args.quota, parse_changes)
    fork, source, _key = _fork(args)
    try:
        body = quota_whatif(fork, changes, horizon=args.horizon or DEFAULT_HORIZON, step=args.step or DEFAULT_STEP,
                            seed=args.seed, system_namespace=args.system_namespace)
    except ManifestError as exc:
        raise UsageError(clean(str(exc))) from None
    doc = {"apiVersion": "taudash/v1", "kind": "QuotaWhatIf", "metadata": {"source": source, "context": fork.context},
           "result": body, "writesToCluster": 0}
    if args.output == "json":
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
        return EXIT_OK
    print(clean(f"what if {', '.join(body['changes'])} changed (fork of {fork.context or source}; the pending "
                f"queue run {body['horizonSeconds'] / 3600:g} h forward both ways; nothing written to the cluster)"))
    _print_queues(body)
    return EXIT_OK


def _run_catalog(args) -> int:
    from taudash.engine.workflows.catalog import CatalogError, load_catalog
    from taudash.whatif import DEFAULT_HORIZON, DEFAULT_STEP, ManifestError
    from taudash.whatif.catalog import catalog_whatif, check_names

    try:
        profiles = check_names(load_catalog(args.catalog), args.catalog)
    except (CatalogError, ManifestError) as exc:
        raise UsageError(clean(str(exc))) from None
    fork, source, _key = _fork(args)
    try:
        body = catalog_whatif(fork, profiles, horizon=args.horizon or DEFAULT_HORIZON,
                              step=args.step or DEFAULT_STEP, seed=args.seed, system_namespace=args.system_namespace)
    except ManifestError as exc:
        raise UsageError(clean(str(exc))) from None
    doc = {"apiVersion": "taudash/v1", "kind": "CatalogWhatIf",
           "metadata": {"source": source, "context": fork.context}, "result": body, "writesToCluster": 0}
    after = body["catalog"]["after"]
    if args.output == "json":
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write("\n")
    else:
        before = body["catalog"]["before"]
        print(clean(f"what if the workload-profile catalog changed (fork of {fork.context or source}; nothing "
                    "written to the cluster)"))
        print(clean(f"profiles ready: {before['ready']} of {before['profiles']} → {after['ready']} of "
                    f"{after['profiles']}; the set {_set_word(before['setReady'])} → {_set_word(after['setReady'])}"))
        print(f"{'PROFILE':36} {'CHANGE':8} {'READY':>13} {'JOBS WAITING/RUNNING':>20}  WHY NOT READY")
        for r in body["profiles"]:
            ready = f"{_ready_word(r['before'])} → {_ready_word(r['after'])}"
            jobs = r["submitted"]
            why = r["after"]
            why_text = f"{why['reason']}: {why['message']}" if why and not why.get("ready") else ""
            print(clean(f"{r['name']:36} {r['change']:8} {ready:>13} "
                        f"{str(jobs['pending']) + ' / ' + str(jobs['admitted']):>20}  {why_text}"))
        for r in body["profiles"]:
            n = r["submitted"]["pending"] + r["submitted"]["admitted"]
            if r["change"] in ("removed", "changed") and n:
                what = f"changed: {', '.join(r['fields'])}" if r["fields"] else r["change"]
                print(clean(f"note: {n} submitted job(s) carry {r['name']} ({what}): they keep their queue "
                            "and placement; new submissions get the new catalog"))
        _print_queues(body)
    # The catalog is unsafe to apply when a profile it declares would not become Ready.
    return EXIT_OK if after["setReady"] else EXIT_CRITICAL


def _ready_word(s: dict | None) -> str:
    return "-" if s is None else "?" if s.get("ready") is None else "yes" if s["ready"] else "no"


def _set_word(v: bool | None) -> str:
    return "unknown" if v is None else "Ready" if v else "not Ready"


def _print_queues(body: dict) -> None:
    print(f"{'TEAM':12} {'CLUSTERQUEUE':24} {'PENDING':>7} {'ADMITTED':>13} {'LONGER':>6} {'SHORTER':>7} "
          f"{'MEDIAN Δ WAIT':>13}")
    for r in body["queues"]:
        delta = r["medianWaitDeltaSeconds"]
        print(clean(f"{r['team'] or '-':12} {r['clusterQueue']:24} {r['pending']:>7} "
                    f"{str(r['admittedBefore']) + ' → ' + str(r['admittedAfter']):>13} {r['longerWaits']:>6} "
                    f"{r['shorterWaits']:>7} {'-' if delta is None else f'{delta / 60:+.0f} min':>13}"))
        for what in ("gained", "lost"):
            if r[what]:
                print(clean(f"    {what}: {', '.join(r[what][:6])}" + (" …" if len(r[what]) > 6 else "")))
    for what in body["reverted"]:
        print(clean(f"note: {what} was put back by its controller in the fork (TauGrid manages it): "
                    "change what it is derived from (the TauWorkspace or TauTeam quota, or the pool)"))
    for t in body["teams"]:
        print(clean(f"team {t['team']}: admitted {t['admittedBefore']} → {t['admittedAfter']} of {t['pending']} "
                    f"pending; {t['longerWaits']} wait longer, {t['shorterWaits']} shorter"))


def _record(doc: dict, key: str) -> None:
    """Keep the prediction beside the cluster's history (`taudash history whatif` holds it against reality)."""
    from taudash.engine.history.whatif import record

    try:
        path = record(doc, key)
    except (OSError, ValueError) as exc:  # a prediction that cannot be kept is still shown
        print(clean(f"taudash: the prediction was not kept: {exc}"), file=sys.stderr)
        return
    print(clean(f"prediction {doc['metadata']['id']} kept in {path}"), file=sys.stderr)


def _no_pvc(args):
    args.pvc = []
    return args


def _fork(args) -> tuple[Any, str, str]:
    """(the fork, its source word, the cluster's history key): a snapshot or the demo at its capture time; a
    live cluster now."""
    from taudash.engine.history import DEMO_CLUSTER_KEY, cluster_key
    from taudash.rehearse import fork_store
    from taudash.sim.clock import parse_rfc3339

    from ..loading import load_from_args

    if args.snapshot or args.demo:
        loaded = load_from_args(args)
        at = parse_rfc3339(loaded.source.observed_at) or time.time()
        fork = fork_store(loaded.store, at, loaded.source.context)
        if args.demo:
            return fork, "demo", DEMO_CLUSTER_KEY
        return fork, "snapshot", cluster_key(loaded.source.context, None)
    import asyncio

    fork, server = asyncio.run(_live_fork(args))
    return fork, "live", cluster_key(fork.context, server)


async def _live_fork(args):
    from taudash.rehearse import fork_store

    from ..config import ReadOnly
    from ..live import LiveCluster

    # A connection that cannot write: whatif is never given the real cluster's Actions.
    no_writes = ReadOnly.asked("a what-if (taudash whatif) never writes to the cluster", "whatif")
    async with LiveCluster(args.context, args.kubeconfig, read_only=no_writes) as live:
        return fork_store(live.store, time.time(), live.target.context, live.identity), live.target.server
