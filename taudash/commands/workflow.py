"""`taudash workflow start|list|status|resume|abort`: guided, journaled operations."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from taudash.engine.text import clean
from taudash.engine.workflows import Journal, JournalError, Runner, artifacts_dir, build, new_id, status, summaries
from taudash.engine.workflows.base import Context, Operation, Plan, RunnerEvent, Step
from taudash.engine.workflows.params import (
    ParamError,
    catalog_params,
    drain_params,
    hold_params,
    release_params,
    rollback_params,
)

from ..errors import EXIT_BAD_INPUT, EXIT_CRITICAL, EXIT_OK, UsageError
from ..live import LiveCluster


def register(sub, add_source_args) -> None:
    w = sub.add_parser("workflow", help="guided operations: hold/release queues, catalog change, rollback, drain")
    wsub = w.add_subparsers(dest="wf_command", metavar="ACTION", required=True)

    def conn(p):
        p.add_argument("--context", metavar="NAME", help="kubeconfig context (default: the current one)")
        p.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig path (default: $KUBECONFIG, ~/.kube/config)")
        p.add_argument("--system-namespace", default="tau-system")
        p.add_argument("--yes", action="store_true",
                       help="confirm every step (needed for any write when not run from a terminal)")
        p.add_argument("--poll", type=float, default=0.5, help=argparse_hidden())

    s = wsub.add_parser("start", help="start a workflow")
    ssub = s.add_subparsers(dest="wf_kind", metavar="WORKFLOW", required=True)
    h = ssub.add_parser("hold", help="HoldAndDrain (or Hold) chosen ClusterQueues and wait until drained")
    h.add_argument("--cq", action="append", default=[], metavar="NAME", help="ClusterQueue (repeatable)")
    h.add_argument("--profile", action="append", default=[], metavar="P", help="every queue this profile resolves to")
    h.add_argument("--mode", choices=("HoldAndDrain", "Hold"), default="HoldAndDrain")
    h.add_argument("--keep-pending", action="store_true", help="do not deactivate pending Workloads")
    conn(h)
    r = ssub.add_parser("release", help="restore admission (stopPolicy None), optionally reactivating Workloads")
    r.add_argument("--cq", action="append", default=[], metavar="NAME")
    r.add_argument("--reactivate-from", metavar="ID", help="reactivate the Workloads that workflow deactivated")
    conn(r)
    c = ssub.add_parser("catalog", help="the five-step workload profile catalog change")
    c.add_argument("--catalog", required=True, metavar="FILE", help="new catalog: profile list, {workloadProfiles}, or a TauCluster")
    c.add_argument("--cq", action="append", default=[], metavar="NAME", help="also hold this ClusterQueue")
    conn(c)
    rb = ssub.add_parser("rollback", help="roll a catalog change back from its journal")
    rb.add_argument("--from", dest="from_id", required=True, metavar="ID", help="the catalog workflow to undo")
    conn(rb)
    d = ssub.add_parser("drain", help="supervise a workspace deletion/retarget drain: remove blockers one by one")
    d.add_argument("--workspace", required=True)
    conn(d)

    lst = wsub.add_parser("list", help="list workflows in the journal directory")
    lst.add_argument("-o", "--output", choices=("table", "json"), default="table")
    st = wsub.add_parser("status", help="a workflow's steps and state")
    st.add_argument("id")
    st.add_argument("-o", "--output", choices=("table", "json"), default="table")
    rs = wsub.add_parser("resume", help="continue a workflow after a crash or a closed terminal")
    rs.add_argument("id")
    conn(rs)
    ab = wsub.add_parser("abort", help="mark a workflow aborted (changes nothing in the cluster)")
    ab.add_argument("id")
    w.set_defaults(func=run)


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


def run(args) -> int:
    cmd = args.wf_command
    if cmd == "list":
        rows = summaries()
        if args.output == "json":
            print(json.dumps(rows, indent=2))
        else:
            for r in rows:
                print(clean(f"{r['id']:8} {r['kind']:9} {r['state']:11} {r.get('stepsDone', 0)}/{r.get('steps') or '?'} "
                            f"steps  context {r.get('context') or '-'}"))
            if not rows:
                print("no workflows yet", file=sys.stderr)
        return EXIT_OK
    if cmd in ("status", "abort"):
        journal = _open(args.id)
        if cmd == "abort":
            journal.append("aborted", None, {"by": "operator"})
            print(f"workflow {journal.id} marked aborted; nothing in the cluster was changed", file=sys.stderr)
            return EXIT_OK
        doc = status(journal)
        if args.output == "json":
            print(json.dumps(doc, indent=2, default=str))
        else:
            _print_status(doc)
        return EXIT_OK
    return asyncio.run(_run_live(args))


def _open(wid: str) -> Journal:
    try:
        return Journal.open(wid)
    except JournalError as exc:
        raise UsageError(str(exc)) from None


async def _run_live(args) -> int:
    from taudash.engine.rules.base import RuleConfig

    interactive = sys.stdin.isatty() and not args.yes
    if not args.yes and not sys.stdin.isatty():
        raise UsageError("workflows change the cluster: pass --yes to confirm from a script")
    async with LiveCluster(args.context, args.kubeconfig) as live:
        config = RuleConfig(system_namespace=args.system_namespace)
        if args.wf_command == "resume":
            journal = _open(args.id)
            if journal.state == "Completed":
                print(f"workflow {journal.id} already completed", file=sys.stderr)
                return EXIT_OK
            if journal.header.get("context") not in (None, live.target.context):
                raise UsageError(f"workflow {journal.id} ran against context {journal.header['context']}, "
                                 f"not {live.target.context}: resume it there")
        else:
            ctx0 = Context(store=live.store, actions=live.actions, config=config)
            params = _params(args, ctx0)
            wid = new_id()
            journal = Journal.create(wid, args.wf_kind, params, live.target.context)
            print(f"workflow {wid} ({args.wf_kind}) journal {journal.path}", file=sys.stderr)
        workflow = build(journal.kind, journal.params)
        ctx = Context(store=live.store, actions=live.actions, config=config, artifacts_dir=artifacts_dir(journal))
        runner = Runner(workflow, ctx, journal, _confirmer(interactive, live.target.context), _printer(), poll=args.poll)
        state = await runner.run()
    print(f"workflow {journal.id}: {state}", file=sys.stderr)
    return EXIT_OK if state == "Completed" else (EXIT_CRITICAL if state == "Failed" else EXIT_BAD_INPUT)


def _params(args, ctx: Context) -> dict:
    """CLI flags → workflow parameters (the same helper builds them for the dashboard's form)."""
    kind = args.wf_kind
    try:
        if kind == "hold":
            return hold_params(ctx, args.cq, args.profile, args.mode, cancel_pending=not args.keep_pending)
        if kind == "release":
            return release_params(args.cq, args.reactivate_from)
        if kind == "catalog":
            return catalog_params(ctx, args.catalog, args.cq)
        if kind == "rollback":
            return rollback_params(ctx, args.from_id)
        if kind == "drain":
            return drain_params(args.workspace)
    except ParamError as exc:
        raise UsageError(str(exc)) from None
    raise UsageError(f"unknown workflow {kind}")


def _confirmer(interactive: bool, context: str):
    async def confirm(step: Step, plan: Plan, op: Operation | None) -> bool:
        if not interactive:
            return True  # --yes
        targets = [op] if op is not None else plan.operations
        print(f"\n{clean(step.title)}:")  # object names and notes come from the cluster: inert
        for o in targets:
            print(f"  {clean(o.diff_line())}")
        for n in plan.notes:
            print(f"  note: {clean(n)}")
        if any(o.destructive for o in targets):
            answer = await asyncio.to_thread(input, f"destructive: type the context name ({context}) to confirm: ")
            return answer.strip() == context
        answer = await asyncio.to_thread(input, "apply? [y/N] ")
        return answer.strip().lower() in ("y", "yes")

    return confirm


def _printer():
    last = {"t": 0.0, "msg": ""}

    def on_event(e: RunnerEvent) -> None:
        if e.kind == "progress":
            now = time.monotonic()
            if e.message == last["msg"] and now - last["t"] < 5 and not e.data.get("done"):
                return
            last.update(t=now, msg=e.message)
            eta = e.data.get("eta")
            print(f"  … {clean(e.message)}" + (f" (ETA {int(eta)} s)" if eta else ""), file=sys.stderr)
            return
        mark = {"step-start": "▶", "verified": "✓", "failed": "✖", "completed": "✓", "aborted": "■",
                "executed": " ", "plan": " "}.get(e.kind, " ")
        print(f"{mark} {clean(e.message)}", file=sys.stderr)

    return on_event


def _print_status(doc: dict) -> None:
    """Names, errors and paths come from the cluster and the journal: every line is printed inert."""
    out(f"workflow {doc['id']} ({doc['workflow']}) · context {doc.get('context') or '-'} · {doc['state']}")
    marks = {"Done": "✓", "Failed": "✖", "Waiting": "◐", "Planned": "▶", "Pending": " "}
    for i, s in enumerate(doc["steps"], 1):
        out(f" {marks.get(s['state'], ' ')} {i} {s['title']}  [{s['state']}]")
        for op in s["plan"]:
            out(f"      {op.get('diff', '')}")
        if s.get("error"):
            out(f"      error: {s['error']}")
    for name, path in doc.get("artifacts", {}).items():
        out(f" artifact {name}: {path}")
    out(f" journal: {doc['journal']}")


def out(line: str) -> None:
    print(clean(line))
