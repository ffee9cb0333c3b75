"""`taudash rehearse report|list`, and the `--rehearse` / `--after-rehearsal` branches of
`taudash workflow start` (docs/rehearsal.md)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable
from typing import Any

from taudash.engine.text import clean

from ..errors import EXIT_BAD_INPUT, EXIT_CRITICAL, EXIT_OK, UsageError
from .options import LOCAL, add_source_args


def register(sub) -> None:
    p = sub.add_parser("rehearse",
                       description="Rehearsals are made with `taudash workflow start … --rehearse`; reports are kept "
                       "under the state directory (docs/rehearsal.md: the RehearsalReport contract).")
    add_source_args(p, frozenset(), shown=False)
    rsub = p.add_subparsers(dest="rh_command", metavar="ACTION", required=True)
    rep = rsub.add_parser("report", help="show a rehearsal report")
    add_source_args(rep, LOCAL)
    rep.add_argument("id")
    rep.add_argument("-o", "--output", choices=("table", "json"), default="table")
    lst = rsub.add_parser("list", help="list rehearsals")
    add_source_args(lst, LOCAL)
    lst.add_argument("-o", "--output", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def run(args) -> int:
    from taudash.rehearse import RehearsalError, load, rehearsals_dir, render_table

    if args.rh_command == "list":
        rows = []
        for path in sorted(rehearsals_dir().glob("*.json")):
            try:
                doc = load(path.stem)
            except RehearsalError as exc:
                rows.append({"id": path.stem, "error": str(exc)})
                continue
            rows.append({"id": doc["metadata"]["id"], "createdAt": doc["metadata"]["createdAt"],
                         "workflow": doc["spec"]["workflow"], "title": doc["spec"]["title"],
                         "context": doc["metadata"].get("context"), "predicted": doc["result"]["state"],
                         "predictedSeconds": doc["result"]["predictedSeconds"]})
        rows.sort(key=lambda r: (r.get("createdAt") or "", r["id"]))
        if args.output == "json":
            print(json.dumps(rows, indent=2))
        else:
            for r in rows:
                print(clean(f"{r['id']:8} {r.get('createdAt', '-'):25} {r.get('workflow', '?'):9} "
                            f"{r.get('predicted', r.get('error', '?')):10} {r.get('context') or '-'}  "
                            f"{r.get('title', '')}"))
            if not rows:
                print("no rehearsals yet", file=sys.stderr)
        return EXIT_OK
    try:
        doc = load(args.id)
    except RehearsalError as exc:
        raise UsageError(str(exc)) from None
    if args.output == "json":
        print(json.dumps(doc, indent=2, default=str))
    else:
        for line in render_table(doc):
            print(line)
    return EXIT_OK


# --- `taudash workflow start … --rehearse` -----------------------------------------------------------


def real_command(argv: list[str], rid: str) -> str:
    """The command line that runs the rehearsed workflow for real."""
    args = [a for a in argv[1:] if a not in ("--rehearse", "--read-only")]  # the real run writes
    return "taudash " + shlex.join([*args, "--after-rehearsal", rid])


async def run_rehearsal(args, params_of: Callable[[Any, Any], dict], run_for_real=None, ask=input,
                        argv: list[str] | None = None, interactive: bool | None = None) -> int:
    """Fork the cluster (read-only connection, closed before the rehearsal starts), rehearse, save the
    report, print it, and say how to run it for real (or ask, on a terminal)."""
    from taudash.engine.rules.base import RuleConfig
    from taudash.engine.workflows.base import Context
    from taudash.rehearse import fork_store, rehearse, render_table, save

    from ..config import ReadOnly
    from ..live import LiveCluster

    if getattr(args, "after_rehearsal", None):
        raise UsageError("--rehearse and --after-rehearsal exclude each other")
    if args.wait_timeout is not None and args.wait_timeout <= 0:
        raise UsageError("--wait-timeout: give a number of seconds above 0")
    config = RuleConfig(system_namespace=args.system_namespace)
    # A connection that cannot write: the rehearsal is never given the real cluster's Actions.
    no_writes = ReadOnly.asked("a rehearsal (--rehearse) never writes to the cluster", "rehearsal")
    async with LiveCluster(args.context, args.kubeconfig, read_only=no_writes) as live:
        params = params_of(args, Context(store=live.store, actions=live.actions, config=config))
        fork = fork_store(live.store, time.time(), live.target.context, live.identity)
    print(f"rehearsing {args.wf_kind} on a simulated fork of {clean(fork.context or '?')} "
          f"({len(fork.objects)} objects); nothing is written to the cluster", file=sys.stderr)
    report = await rehearse(args.wf_kind, params, fork, config=config, wait_timeout=args.wait_timeout)
    path = save(report)
    for line in render_table(report):
        print(line)
    rid = report["metadata"]["id"]
    command = real_command(argv if argv is not None else sys.argv, rid)
    print(f"rehearsal {rid} saved to {path}", file=sys.stderr)
    print(f"run it for real: {clean(command)}", file=sys.stderr)
    from ..config import resolve_read_only

    asked = resolve_read_only(bool(args.read_only), fork.context)
    stays = resolve_read_only(False, fork.context)  # what the printed command (no --read-only) still meets
    if stays:  # the rehearsal was allowed; the real run will be refused until read-only mode is off
        print(clean(f"  (read-only now — {stays.why}: the real run is refused until that is off)"), file=sys.stderr)
    predicted = report["result"]["state"]
    if interactive is None:
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
    if run_for_real is not None and interactive and not asked:
        answer = ask("run it for real now? [y/N] ")
        if answer.strip().lower() in ("y", "yes"):
            args.rehearse = False
            args.after_rehearsal = rid
            return await run_for_real(args)
    return EXIT_OK if predicted == "Completed" else (EXIT_BAD_INPUT if predicted == "Aborted" else EXIT_CRITICAL)


def after_rehearsal(rid: str, kind: str, params: dict, context: str | None, identity) -> str:
    """The checks before a real run that follows a rehearsal: same workflow, same parameters, same
    cluster. Anything else means the rehearsal predicted another operation: refused (exit 2)."""
    from taudash.engine.identity import ClusterIdentity
    from taudash.rehearse import RehearsalError, load
    from taudash.rehearse.report import age_of

    try:
        report = load(rid)
    except RehearsalError as exc:
        raise UsageError(str(exc)) from None
    spec = report["spec"]
    if spec["workflow"] != kind:
        raise UsageError(f"rehearsal {rid} rehearsed a {spec['workflow']} workflow, not {kind}")
    rehearsed = json.loads(json.dumps(spec["params"], default=str))
    now = json.loads(json.dumps(params, default=str))
    if rehearsed != now:
        keys = sorted(k for k in set(rehearsed) | set(now) if rehearsed.get(k) != now.get(k))
        raise UsageError(f"rehearsal {rid} was made with other parameters (differs in: {', '.join(keys)}); "
                         "the cluster or the flags changed since: rehearse again")
    ident = ClusterIdentity.from_dict((report.get("metadata") or {}).get("cluster"))
    if ident is not None and identity is not None and not ident.same_cluster(identity):
        raise UsageError(f"rehearsal {rid} forked another cluster ({ident.describe()}), not {identity.describe()}")
    age = age_of(report)
    if age is not None and age > 3600:
        print(f"taudash: rehearsal {rid} is {int(age // 60)} min old: the cluster may have moved since",
              file=sys.stderr)
    return rid
