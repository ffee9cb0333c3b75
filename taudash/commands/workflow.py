"""`taudash workflow start|list|status|resume|abort`: guided, journaled operations."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from engine.workflows import Journal, JournalError, Runner, artifacts_dir, build, new_id, status, summaries
from engine.workflows.base import Context, Operation, Plan, RunnerEvent, Step
from engine.workflows.catalog import CatalogError, affected_queues, load_catalog
from engine.workflows.hold import deactivated_by

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
                print(f"{r['id']:8} {r['kind']:9} {r['state']:11} {r.get('stepsDone', 0)}/{r.get('steps') or '?'} steps"
                      f"  context {r.get('context') or '-'}")
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
    from engine.rules.base import RuleConfig

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
    kind = args.wf_kind
    if kind == "hold":
        cqs = list(args.cq)
        for p in args.profile:
            tc = ctx.store.get("TauCluster", "cluster")
            prof = next((x for x in (tc.status.workload_profiles.profiles if tc and tc.status.workload_profiles else [])
                         if x.name == p), None)
            if prof is None:
                raise UsageError(f"profile {p!r} is not in TauCluster cluster's resolved profiles")
            cqs += prof.cluster_queues
        if not cqs:
            raise UsageError("name at least one --cq or --profile")
        return {"cqs": sorted(set(cqs)), "mode": args.mode, "cancel_pending": not args.keep_pending}
    if kind == "release":
        params: dict = {"cqs": sorted(set(args.cq))}
        if args.reactivate_from:
            src = _open(args.reactivate_from)
            params["reactivate"] = deactivated_by(src)
            if not params["cqs"]:
                params["cqs"] = src.params.get("cqs", [])
        if not params["cqs"]:
            raise UsageError("name at least one --cq (or --reactivate-from a hold)")
        return params
    if kind == "catalog":
        try:
            catalog = load_catalog(args.catalog)
        except CatalogError as exc:
            raise UsageError(str(exc)) from None
        return {"catalog": catalog, "catalog_file": args.catalog, "cqs": affected_queues(ctx, catalog, args.cq)}
    if kind == "rollback":
        src = _open(args.from_id)
        if src.kind != "catalog":
            raise UsageError(f"workflow {args.from_id} is a {src.kind}, not a catalog change")
        art = src.artifacts()
        if "taucluster" not in art:
            raise UsageError(f"workflow {args.from_id} never exported the previous catalog: nothing to roll back to")
        import yaml

        with open(art["taucluster"], encoding="utf-8") as fh:
            prev = yaml.safe_load(fh)
        previous = (prev.get("spec") or {}).get("workloadProfiles") or []
        prev_hash = next((r["data"].get("hash") for r in src.records
                          if r["event"] == "artifact" and r["data"].get("name") == "profiles"), None)
        return {"from": src.id, "previous_catalog": previous, "previous_hash": prev_hash,
                "cqs": sorted(set(src.params.get("cqs", [])) | set(affected_queues(ctx, previous, [])))}
    if kind == "drain":
        return {"workspace": args.workspace}
    raise UsageError(f"unknown workflow {kind}")


def _confirmer(interactive: bool, context: str):
    async def confirm(step: Step, plan: Plan, op: Operation | None) -> bool:
        if not interactive:
            return True  # --yes
        targets = [op] if op is not None else plan.operations
        print(f"\n{step.title}:")
        for o in targets:
            print(f"  {o.diff_line()}")
        for n in plan.notes:
            print(f"  note: {n}")
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
            print(f"  … {e.message}" + (f" (ETA {int(eta)} s)" if eta else ""), file=sys.stderr)
            return
        mark = {"step-start": "▶", "verified": "✓", "failed": "✖", "completed": "✓", "aborted": "■",
                "executed": " ", "plan": " "}.get(e.kind, " ")
        print(f"{mark} {e.message}", file=sys.stderr)

    return on_event


def _print_status(doc: dict) -> None:
    print(f"workflow {doc['id']} ({doc['workflow']}) · context {doc.get('context') or '-'} · {doc['state']}")
    marks = {"Done": "✓", "Failed": "✖", "Waiting": "◐", "Planned": "▶", "Pending": " "}
    for i, s in enumerate(doc["steps"], 1):
        print(f" {marks.get(s['state'], ' ')} {i} {s['title']}  [{s['state']}]")
        for op in s["plan"]:
            print(f"      {op.get('diff', '')}")
        if s.get("error"):
            print(f"      error: {s['error']}")
    for name, path in doc.get("artifacts", {}).items():
        print(f" artifact {name}: {path}")
    print(f" journal: {doc['journal']}")
