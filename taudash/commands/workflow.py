"""`taudash workflow start|list|status|resume|abort`: guided, journaled operations."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any

from taudash.engine.identity import resume_refusal
from taudash.engine.text import clean
from taudash.engine.workflows import (
    Journal,
    JournalBusy,
    JournalError,
    Param,
    ParamError,
    Runner,
    artifacts_dir,
    build,
    new_id,
    overlap_refusal,
    registry,
    status,
    summaries,
)
from taudash.engine.workflows.base import (
    RETRY,
    STOP,
    WAIT_ANYWAY,
    Context,
    Operation,
    Pause,
    Plan,
    RunnerEvent,
    Step,
)
from taudash.engine.workflows.ops import UNCONFIRMED, operation_records

from ..errors import EXIT_OK, UsageError
from ..live import LiveCluster
from .options import LIVE, LOCAL, add_source_args, read_only_of

EXIT_PAUSED = 4  # the run stopped before its end (paused or failed) and can be resumed: `workflow resume ID`
EXIT_INTERRUPTED = 130  # Ctrl-C: the run is Paused too (the shell's convention for SIGINT)

EXIT_CODES = """\
exit codes: 0 the run completed, or was aborted on request (`workflow abort`);
  4 the run paused (a step declined, a mistyped context name, the dashboard's pause) or failed: it is
    resumable with `taudash workflow resume ID` and the lines before say what it leaves in the cluster;
  2 bad input or usage (nothing written); 3 cluster unreachable; 130 interrupted (Ctrl-C: Paused, resumable)."""


def register(sub) -> None:
    import argparse

    w = sub.add_parser("workflow", epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_source_args(w, frozenset(), shown=False)  # global options may stand between the words too
    wsub = w.add_subparsers(dest="wf_command", metavar="ACTION", required=True)

    def conn(p):
        # --context/--kubeconfig/--system-namespace/--read-only are global options (commands/options.py).
        add_source_args(p, LIVE)
        p.add_argument("--yes", action="store_true",
                       help="confirm every step (needed for any write when not run from a terminal)")
        p.add_argument("--poll", type=float, default=0.5, help=argparse_hidden())
        p.add_argument("--wait-timeout", type=float, metavar="SECONDS",
                       help="give up a step's wait after this long (default: the step's own, 15 min for most)")
        p.add_argument("--take-over", metavar="ID",
                       help="take over the stale claim workflow ID holds on a target (its holder stopped renewing "
                            "it: its process ended or its machine is gone); asks first unless --yes")

    def start_conn(p):
        conn(p)
        p.add_argument("--rehearse", action="store_true",
                       help="rehearse on a simulated fork of the cluster first: nothing is written to the cluster; "
                            "prints the predicted outcome and saves a report (docs/rehearsal.md)")
        p.add_argument("--after-rehearsal", metavar="RID",
                       help="run for real after rehearsal RID (same workflow, parameters and cluster, or refused); "
                            "`workflow status` then shows prediction beside reality")

    s = wsub.add_parser("start", help="start a workflow")
    add_source_args(s, frozenset(), shown=False)
    ssub = s.add_subparsers(dest="wf_kind", metavar="WORKFLOW", required=True)
    for kind in registry.kinds():  # one sub-command per registered workflow, its flags from its parameters
        k = ssub.add_parser(kind.name, help=kind.help)
        for param in kind.params:
            add_param(k, param)
        start_conn(k)

    # list/status/abort read or append to the local journal only: --read-only is honoured trivially
    # (abort writes nothing to the cluster, so it stays allowed in read-only mode). Given a cluster
    # (--context/--kubeconfig), status and abort read it — never write — to check what the run left.
    lst = wsub.add_parser("list", help="list workflows in the journal directory")
    add_source_args(lst, LOCAL)
    lst.add_argument("-o", "--output", choices=("table", "json"), default="table")
    st = wsub.add_parser("status", help="a workflow's steps, every operation it sent, and what it leaves in the "
                                        "cluster (read from the cluster with --context/--kubeconfig)")
    add_source_args(st, LIVE)
    st.add_argument("id")
    st.add_argument("-o", "--output", choices=("table", "json"), default="table")
    rs = wsub.add_parser("resume", help="continue a paused, failed or interrupted workflow")
    rs.add_argument("id")
    conn(rs)
    ab = wsub.add_parser("abort", help="end a workflow for good (type its id, or --yes); changes nothing in the "
                                       "cluster and says what the run leaves there and how to undo it")
    add_source_args(ab, LIVE)
    ab.add_argument("id")
    ab.add_argument("--yes", action="store_true", help="end it without typing its id (needed from a script)")
    w.set_defaults(func=run)


def add_param(p, param: Param) -> None:
    """A workflow parameter as a flag (engine/workflows/kind.py Param)."""
    kw: dict = {"dest": param.dest, "help": param.help}
    if param.type == "list":
        kw.update(action="append", default=[], metavar=param.metavar)
    elif param.type == "flag":
        kw.update(action="store_true")
    elif param.type == "choice":
        kw.update(choices=param.choices, default=param.default)
    else:
        kw.update(metavar=param.metavar, default=param.default)
        if param.required:
            kw["required"] = True
    p.add_argument(param.flag, **kw)


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
                print(clean(_list_line(r)))
            if not rows:
                print("no workflows yet", file=sys.stderr)
        return EXIT_OK
    if cmd in ("status", "abort"):
        journal = _open(args.id)
        given = bool(getattr(args, "context", None) or getattr(args, "kubeconfig", None))
        if cmd == "abort":
            return _abort(args, journal, given)
        doc = asyncio.run(_live_status(args, journal)) if given else status(journal)
        if journal.header.get("rehearsal"):  # prediction beside reality (docs/rehearsal.md)
            doc["rehearsal"] = _prediction(journal)
        if args.output == "json":
            print(json.dumps(doc, indent=2, default=str))
        else:
            _print_status(doc)
        return EXIT_OK
    if not getattr(args, "rehearse", False):  # a rehearsal writes nothing to the cluster: allowed read-only
        _refuse_if_read_only(args, args.context)  # before connecting: flag, env, config (global or --context)
    if cmd == "resume":
        try:
            _resumable(_open(args.id))  # before connecting: a finished run needs no cluster
        except _Finished:
            return EXIT_OK
    running: dict[str, str] = {}  # the journal id once known, for the Ctrl-C hint
    try:
        return run_interruptible(_run_live(args, running))
    except KeyboardInterrupt:
        return interrupted(running.get("id"), running.get("context") or getattr(args, "context", None),
                           getattr(args, "kubeconfig", None))


RECANCEL_SECONDS = 3.0  # Ctrl-C cancels the run again this often until it has ended


def run_interruptible(main: Coroutine[Any, Any, int]) -> int:
    """asyncio.run for a workflow run, with Ctrl-C cancelling its task — and again every RECANCEL_SECONDS
    while it still runs. One cancellation can be lost: Python 3.11's `wait_for` (and libraries built on
    it) drops a cancel that lands as its own timeout fires, and the run then waits on a cluster that may
    be gone, the operator's Ctrl-C unanswered. The run's own handling is unchanged: the first cancel
    journals it Paused; KeyboardInterrupt is raised once the task has ended cancelled."""
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)  # no signal handler outside the main thread (tests drive it from others)
    with asyncio.Runner() as runner:
        loop = runner.get_loop()
        task = loop.create_task(main)
        pressed = False

        def again() -> None:
            if not task.done():
                task.cancel()
                loop.call_later(RECANCEL_SECONDS, again)

        def on_sigint() -> None:
            nonlocal pressed
            if not pressed:
                pressed = True
                loop.call_later(RECANCEL_SECONDS, again)
            task.cancel()

        loop.add_signal_handler(signal.SIGINT, on_sigint)
        try:
            return loop.run_until_complete(task)
        except asyncio.CancelledError:
            if pressed:
                raise KeyboardInterrupt from None
            raise
        finally:
            loop.remove_signal_handler(signal.SIGINT)


def interrupted(workflow_id: str | None, context: str | None, kubeconfig: str | None = None, err=None) -> int:
    """Ctrl-C: the run is journaled Paused with every step done; say what it leaves in the cluster (from its
    journal: the connection is gone) and how to continue (stderr), and exit 130."""
    err = err or sys.stderr
    if workflow_id:
        hint = f"taudash workflow resume {workflow_id}" + (f" --context {context}" if context else "") + \
            (f" --kubeconfig {kubeconfig}" if kubeconfig else "")
        print(clean(f"taudash: interrupted; the workflow is paused; resume with: {hint}"), file=err)
        try:
            journal = Journal.open(workflow_id)
        except JournalError:
            return EXIT_INTERRUPTED
        _print_leftovers(status(journal)["leftovers"], err)
    else:
        print("taudash: interrupted before a workflow was started; nothing was written", file=err)
    return EXIT_INTERRUPTED


def _abort(args, journal: Journal, given: bool) -> int:
    """End a run for good: confirmed by its id typed (or --yes); says what it leaves and how to undo each."""
    if journal.terminal:
        print(f"workflow {journal.id} is already {journal.state}", file=sys.stderr)
        if given:  # the claims it may have left behind go back too
            asyncio.run(_live_status(args, journal, give_back=True))
        return EXIT_OK
    pid = journal.runner_pid()
    if pid is not None:  # marking it would not stop it: that process would go on writing
        raise UsageError(f"workflow {journal.id} is running now in another taudash"
                         f"{f' (pid {pid})' if pid else ''}: pause it there (Ctrl-C in a terminal, "
                         "p in the dashboard's wizard); nothing was marked")
    left = (asyncio.run(_live_status(args, journal)) if given else status(journal))["leftovers"]
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError(f"workflow abort {journal.id}: ending a run for good needs its id typed, or --yes "
                             "from a script; nothing was marked")
        print(f"workflow {journal.id} ({journal.kind}, {journal.state}): aborting ends it for good (it can no "
              f"longer be resumed); nothing in the cluster is changed or undone.", file=sys.stderr)
        _print_leftovers(left, sys.stderr, heading="it leaves in the cluster")
        typed = input(f"type the workflow id ({journal.id}) to abort it for good: ").strip()
        if typed != journal.id:
            raise UsageError(clean(f"{typed!r} is not the workflow id {journal.id!r}: not aborted "
                                   f"(it stays {journal.state}; `taudash workflow resume {journal.id}` continues it)"
                                   if typed else "nothing typed: not aborted"))
    journal.append("aborted", None, {"by": "operator"})
    print(f"workflow {journal.id} aborted: it will not be resumed; nothing it changed in the cluster is undone",
          file=sys.stderr)
    # again: what undoes a leftover can depend on this run being resumable ("finish the rollback")
    _print_leftovers((asyncio.run(_live_status(args, journal, give_back=True)) if given
                      else status(journal))["leftovers"],
                     sys.stderr)
    if not given:
        print(clean(" its claims on the cluster, if it holds any, stay until they go stale (or `taudash workflow "
                    f"abort {journal.id} --context {journal.header.get('context') or 'C'}` gives them back)"),
                    file=sys.stderr)
    return EXIT_OK


async def _live_status(args, journal: Journal, give_back: bool = False) -> dict:
    """The status of a run checked against the cluster it ran on: writes in flight read back (a GET each,
    nothing journaled) and the leftovers kept only where the live objects still show them. A connection
    that cannot write: reading is all it does — except with `give_back` (an abort): then the claims the
    ended run still holds on the cluster are given back (claim writes only; not in read-only mode)."""
    from taudash.engine.identity import resume_refusal as other_cluster
    from taudash.engine.rules.base import ObjRef
    from taudash.engine.sources.ondemand import NOT_FOUND, SYNCED, KubeOnDemand
    from taudash.engine.workflows.claims import release_finished

    from ..config import ReadOnly

    reading = ReadOnly.asked(f"workflow {args.wf_command} only reads the cluster", "reads only")
    async with LiveCluster(args.context, args.kubeconfig, read_only=args.read_only if give_back else reading) as live:
        refusal = other_cluster(journal.header, live.target.context, live.identity)
        if refusal:  # another cluster's objects say nothing about this run
            print(clean(f"taudash: not checked against the cluster: {refusal}"), file=sys.stderr)
            return status(journal)
        if give_back and not live.actions.writable:
            print(clean(f" its claims on the cluster, if it holds any, stay until they go stale: "
                        f"{live.actions.why_read_only}"), file=sys.stderr)
        elif give_back:
            namespace = getattr(args, "system_namespace", None) or "tau-system"
            problems = await release_finished(live.actions, live.store, journal, namespace)
            for problem in problems:
                print(clean(f"taudash: {problem}"), file=sys.stderr)
            if not problems:
                print(" its claims on the cluster, if it held any, were given back", file=sys.stderr)
        records = operation_records(journal)
        workflow = build(journal.kind, journal.params)
        reader = KubeOnDemand.for_source(live.source)
        probed: dict[int, tuple[bool, str]] = {}
        for rec in records:
            if rec.state != UNCONFIRMED:
                continue
            got = await reader.full_object(ObjRef(kind=rec.kind, namespace=rec.namespace, name=rec.name))
            if got.access not in (SYNCED, NOT_FOUND):
                continue  # unreadable: it stays unconfirmed
            step = next((s for s in workflow.steps if s.id == rec.step), None)
            done = step.landed(rec.op, got.document) if step is not None else False
            probed[id(rec)] = (done, ("applied" if done else "not applied") + ": read from the cluster now "
                               "(the journal records it when the run is resumed)")
        return status(journal, store=live.store, probed=probed, records=records)


def _resumable(journal: Journal) -> None:
    """A finished run is never resumed: Completed exits 0 (its goal is reached), every other terminal state
    (RolledBack, Aborted, Abandoned) is refused with exit 2 — start a new workflow instead."""
    state = journal.state
    if state == "Completed":
        print(f"workflow {journal.id} already completed: nothing to resume", file=sys.stderr)
        raise _Finished
    if journal.terminal:
        raise UsageError(f"workflow {journal.id} is {state}: a finished run cannot be resumed; start a new workflow")


class _Finished(Exception):
    pass


def _list_line(r: dict) -> str:
    started = datetime.fromtimestamp(r["startedAt"]).strftime("%Y-%m-%d %H:%M") if r.get("startedAt") else "-"
    cluster = r.get("cluster") or {}
    where = f"{cluster.get('context') or r.get('context') or '-'} @ {cluster.get('server') or 'server unknown'}"
    return (f"{r['id']:8} {started:16} {r['kind']:9} {r['state']:11} {r.get('stepsDone', 0)}/{r.get('steps') or '?'} "
            f"steps  {where}  {r.get('target') or ''}").rstrip()


def _refuse_if_read_only(args, context: str | None, asked=None) -> None:
    """A workflow exists to write: in read-only mode it is refused before a journal or a request exists."""
    asked = asked if asked is not None else read_only_of(args, context)
    if asked:
        what = f"workflow {args.wf_command}" + (f" {args.wf_kind}" if args.wf_command == "start" else f" {args.id}")
        raise UsageError(f"{what} refused: {asked.why}; nothing was written and no journal was created")


def _open(wid: str) -> Journal:
    try:
        return Journal.open(wid)
    except JournalError as exc:
        raise UsageError(str(exc)) from None


async def _run_live(args, running: dict[str, str] | None = None) -> int:
    from taudash.engine.rules.base import RuleConfig

    running = running if running is not None else {}
    if getattr(args, "rehearse", False):
        from .rehearse import run_rehearsal

        return await run_rehearsal(args, _params, run_for_real=lambda a: _run_live(a, running))
    interactive = sys.stdin.isatty() and not args.yes
    if not args.yes and not sys.stdin.isatty():
        raise UsageError("workflows change the cluster: pass --yes to confirm from a script")
    if args.wait_timeout is not None and args.wait_timeout <= 0:
        raise UsageError("--wait-timeout: give a number of seconds above 0")
    async with LiveCluster(args.context, args.kubeconfig, read_only=args.read_only) as live:
        _refuse_if_read_only(args, live.target.context, live.read_only_state)  # per-context config, now known
        config = RuleConfig(system_namespace=args.system_namespace)
        if args.wf_command == "resume":
            journal = _open(args.id)
            try:
                _resumable(journal)  # again: another process may have finished it meanwhile
            except _Finished:
                return EXIT_OK
            # Bound to the cluster it ran on: a same-named context elsewhere is refused before any write.
            refusal = resume_refusal(journal.header, live.target.context, live.identity)
            if refusal:
                raise UsageError(refusal)
            await _check_claims(live, journal.kind, journal.params, config, args.take_over, journal.id, interactive)
        else:
            ctx0 = Context(store=live.store, actions=live.actions, config=config)
            params = _params(args, ctx0)
            rehearsal = None
            if getattr(args, "after_rehearsal", None):
                from .rehearse import after_rehearsal

                rehearsal = after_rehearsal(args.after_rehearsal, args.wf_kind, params, live.target.context,
                                            live.identity)
            refusal = overlap_refusal(args.wf_kind, params, live.target.context, live.identity)
            if refusal:  # another unfinished run writes to the same queue, workspace or catalog
                raise UsageError(refusal)
            # any operator's run
            await _check_claims(live, args.wf_kind, params, config, args.take_over, None, interactive)
            wid = new_id()
            if not live.identity.uid:
                print(f"taudash: cluster fingerprint unavailable ({live.identity.note}); "
                      f"binding the journal to the server URL {live.identity.server} only", file=sys.stderr)
            journal = Journal.create(wid, args.wf_kind, params, live.target.context, cluster=live.identity,
                                     rehearsal=rehearsal)
            print(f"workflow {wid} ({args.wf_kind}) journal {journal.path}", file=sys.stderr)
            for line in params.get("diff") or []:  # what the catalog change does, and why each queue holds
                print(f"  {clean(line)}", file=sys.stderr)
            for q, why in (params.get("why") or {}).items():
                print(f"  hold {clean(q)}: {clean('; '.join(why))}", file=sys.stderr)
        running.update(id=journal.id, context=live.target.context)
        workflow = build(journal.kind, journal.params)
        ctx = Context(store=live.store, actions=live.actions, config=config, artifacts_dir=artifacts_dir(journal))
        runner = Runner(workflow, ctx, journal, _confirmer(interactive, live.target.context), _printer(),
                        poll=args.poll, wait_timeout=args.wait_timeout, take_over=args.take_over)
        try:
            state = await runner.run()
        except JournalBusy as exc:  # the dashboard or another terminal runs it now: this one writes nothing
            raise UsageError(str(exc)) from None
        await runner.settle_writes()  # the leftovers are checked against the store: it must show our writes
        doc = status(journal, store=live.store)
    _print_end(doc)
    return EXIT_OK if state in ("Completed", "Aborted") else EXIT_PAUSED


async def _check_claims(live, kind: str, params: dict, config, take_over: str | None, me: str | None, interactive: bool,
                        ask: Callable[[str], str] = input) -> None:
    """Before a journal is created (or a resumed run writes): refused, naming the holder, when another
    workflow claims a target on the cluster (any operator, any machine); a --take-over is confirmed."""
    from taudash.engine.workflows.claims import about, existing, judge, local_journals
    from taudash.engine.workflows.journal import workflows_dir

    now = datetime.now(UTC)
    held = existing(live.store, kind, params, config.system_namespace)
    if take_over and not any(h.workflow_id == take_over for _, h in held):
        raise UsageError(f"--take-over {take_over}: workflow {take_over} holds no claim on what this run writes; "
                         "nothing was written")
    local = local_journals(workflows_dir(), live.identity)
    for target, holder in held:
        why = judge(holder, target, me=me, about_ids=about(params), take_over=take_over, local=local, now=now)
        if why:
            raise UsageError(why)
    taking = [(t, h) for t, h in held if h.workflow_id == take_over]
    if taking and interactive:
        for target, holder in taking:
            print(clean(f"take over {target.ref} from {holder.describe(now)}"))
        answer = await _prompt(ask, f"take over workflow {take_over}'s stale claim(s)? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            raise UsageError(f"--take-over {take_over}: not confirmed; nothing was written")


def _params(args, ctx: Context) -> dict:
    """CLI flags → workflow parameters (the same helper builds them for the dashboard's form)."""
    kind = registry.find(args.wf_kind)
    if kind is None:
        raise UsageError(f"unknown workflow {args.wf_kind}")
    try:
        return kind.make(ctx, {p.dest: getattr(args, p.dest) for p in kind.params}, kinds=registry.kinds())
    except ParamError as exc:
        for problem in exc.problems:  # every problem on its own line; the headline exits 2
            print(f"  ✖ {clean(problem)}", file=sys.stderr)
        raise UsageError(exc.headline if exc.problems else str(exc)) from None


def _confirmer(interactive: bool, context: str, ask: Callable[[str], str] = input):
    async def confirm(step: Step, plan: Plan, op: Operation | None) -> bool | str:
        if plan.question:
            return await _choose(step, plan, interactive, ask)
        if not interactive:
            return True  # --yes
        targets = [op] if op is not None else plan.operations
        print(f"\n{clean(step.title)}:")  # object names and notes come from the cluster: inert
        for o in targets:
            print(f"  {clean(o.diff_line())}")
        for n in plan.notes:
            print(f"  note: {clean(n)}")
        if any(o.destructive for o in targets):
            each = op is not None
            typed = (await _prompt(ask, f"destructive: type the context name ({context}) to confirm"
                                   + (", or `skip`" if each else "") + ": ")).strip()
            if each and typed.lower() == "skip":
                return False
            if typed != context:  # say why, so a typo is not mistaken for a refusal by the cluster
                raise Pause("context-name", f"{typed!r} is not the context name {context!r}: not confirmed"
                            if typed else "nothing typed: not confirmed")
            return True
        answer = await _prompt(ask, "apply? [y/N] (anything else pauses the run) ")
        return answer.strip().lower() in ("y", "yes")

    return confirm


async def _prompt(ask: Callable[[str], str], text: str) -> str:
    """Read an answer on a daemon thread: Ctrl-C at a prompt must end the process at once (a worker of
    asyncio's default executor would be joined at exit, waiting for an Enter that never comes)."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()

    def deliver(fn) -> None:
        try:
            loop.call_soon_threadsafe(lambda: answer.done() or fn())
        except RuntimeError:  # the loop is gone (interrupted): nobody waits for this answer
            pass

    def read() -> None:
        try:
            text_in = ask(text)
        except BaseException as exc:  # noqa: BLE001 - EOFError and friends go to the awaiting coroutine
            deliver(lambda error=exc: answer.set_exception(error))
            return
        deliver(lambda: answer.set_result(text_in))

    threading.Thread(target=read, name="taudash-prompt", daemon=True).start()
    return await answer


async def _choose(step: Step, plan: Plan, interactive: bool, ask: Callable[[str], str]) -> str:
    """A stuck wait (e.g. a drain whose blockers were skipped): retry the blocking step, wait anyway, or
    stop. Unattended (`--yes`) it stops: the run is Failed, resumable, and the message names why."""
    if not interactive:
        return STOP
    print(f"\n{clean(step.title)}: {clean(plan.question)}")
    while True:
        answer = (await _prompt(ask, "[r]etry that step / [w]ait anyway / [s]top? ")).strip().lower()
        for choice in (RETRY, WAIT_ANYWAY, STOP):
            if answer and choice.startswith(answer):
                return choice
        if answer in ("", "n", "no", "q"):
            return STOP


def _printer(now: Callable[[], datetime] = datetime.now, err=None):
    """Progress lines are timestamped and printed only when the message changes (not on a timer)."""
    last: dict[str, str | None] = {"msg": None}

    def on_event(e: RunnerEvent) -> None:
        stream = err or sys.stderr
        if e.kind == "progress":
            if e.message == last["msg"]:
                return
            last["msg"] = e.message
            eta = e.data.get("eta")
            print(f"{now():%H:%M:%S}  … {clean(e.message)}" + (f" (ETA {int(eta)} s)" if eta else ""), file=stream)
            return
        if e.kind == "step-start":
            last["msg"] = None
        mark = {"step-start": "▶", "verified": "✓", "failed": "✖", "completed": "✓", "paused": "‖",
                "aborted": "■", "executed": " ", "plan": " ", "warning": "!"}.get(e.kind, " ")
        print(f"{mark} {clean(e.message)}", file=stream)

    return on_event


OP_MARK = {"done": "✓", "not-done": "✗", "skipped": "-", "unconfirmed": "?"}
OP_WORD = {"done": "done", "not-done": "not done", "skipped": "skipped", "unconfirmed": "in flight, unconfirmed"}


def _print_status(doc: dict) -> None:
    """Names, errors and paths come from the cluster and the journal: every line is printed inert."""
    cluster = doc.get("cluster") or {}
    out(f"workflow {doc['id']} ({doc['workflow']}) · context {doc.get('context') or '-'} · "
        f"server {cluster.get('server') or 'unknown'} · {doc['state']}")
    if doc.get("paused"):
        out(f" {_paused_line(doc)}")
    marks = {"Done": "✓", "Failed": "✖", "Waiting": "◐", "Partial": "◑", "Planned": "▶", "Pending": " "}
    for i, s in enumerate(doc["steps"], 1):
        out(f" {marks.get(s['state'], ' ')} {i} {s['title']}  [{s['state']}]")
        sent = set()
        for op in s.get("operations") or []:
            sent.add(op.get("diff"))
            note = f" ({op['note']})" if op.get("note") else ""
            out(f"      {OP_MARK.get(op['state'], ' ')} {op.get('diff', '')}  "
                f"{OP_WORD.get(op['state'], op['state'])}{note}")
        if s["state"] not in ("Done", "Waiting"):  # what its last plan would still do (not sent)
            for op in s["plan"]:
                if op.get("diff") not in sent:
                    out(f"        {op.get('diff', '')}  planned, not sent")
        if s.get("error"):
            out(f"      error: {s['error']}")
    _print_prediction(doc.get("rehearsal"))
    for name, path in doc.get("artifacts", {}).items():
        out(f" artifact {name}: {path}")
    _print_leftovers(doc.get("leftovers") or [], sys.stdout, all_names=True)
    if doc.get("resume"):
        out(f" continue it: {doc['resume']}")
    out(f" journal: {doc['journal']}")


def _paused_line(doc: dict) -> str:
    p = doc.get("paused") or {}
    n = next((i for i, s in enumerate(doc["steps"], 1) if s["id"] == p.get("step")), None)
    where = f" at step {n} ({doc['steps'][n - 1]['title']})" if n else ""
    return f"paused{where}: {p.get('message') or p.get('reason') or ''}"


def _print_leftovers(items: list[dict], stream, heading: str = "what this run leaves in the cluster",
                     all_names: bool = False) -> None:
    """Each thing the run leaves, grouped under the command that undoes it (none: not reversible)."""
    def say(line: str) -> None:
        print(clean(line), file=stream)

    if not items:
        say(f" {heading}: nothing (no change of this run remains)")
        return
    checked = all(it.get("checked") == "cluster" for it in items)
    say(f" {heading} ({'checked against the cluster now' if checked else 'from its journal'}):")
    groups: dict[str | None, list[dict]] = {}
    for it in items:
        groups.setdefault(it.get("undo"), []).append(it)
    for undo, group in groups.items():
        for it in group:
            say(f"   • {it['message']}" + (f" [change {it['of']}]" if it.get("of") else ""))
            if all_names and len(it.get("objects") or []) > 10:
                for ref in it["objects"]:
                    say(f"       Workload {ref}")
        say(f"     undo: {undo}" if undo else "     (not reversible by taudash)")


def _print_end(doc: dict) -> None:
    """The run's end: its state, why it stopped, what it leaves in the cluster, and how to continue."""
    err = sys.stderr
    state = doc["state"]
    print(clean(f"workflow {doc['id']}: {state}" + (f" — {_paused_line(doc)}" if doc.get("paused") else "")), file=err)
    _print_leftovers(doc.get("leftovers") or [], err)
    if doc.get("resume"):
        print(clean(f" continue it: {doc['resume']}   (or end it for good: taudash workflow abort {doc['id']})"),
              file=err)


def out(line: str) -> None:
    print(clean(line))


def _prediction(journal: Journal) -> dict:
    from taudash.rehearse import RehearsalError, compare, load

    try:
        return compare(load(journal.header["rehearsal"]), journal)
    except RehearsalError as exc:
        return {"rehearsal": journal.header["rehearsal"], "error": str(exc)}


def _print_prediction(p: dict | None) -> None:
    """Per step: predicted (rehearsal, simulated time) beside actual (this run, wall time)."""
    if not p:
        return
    if p.get("error"):
        out(f" rehearsal {p['rehearsal']}: {p['error']}")
        return
    out(f" rehearsal {p['rehearsal']}: predicted {p['predictedResult']}, actual {p['actualState']}")
    out("   step                 duration predicted / actual   evictions   deactivations")
    for s in p["steps"]:
        dur = f"{_secs(s['predictedSeconds'])} / {_secs(s['actualSeconds'])}"
        out(f"   {s['id'][:20]:20} {dur:31} {s['predictedEvictions']:>3} / {s['actualEvictions']:<3}   "
            f"{s['predictedDeactivations']:>3} / {s['actualDeactivations']:<3}")
    for label, key in (("objects changed", "objects"), ("Workloads deactivated", "deactivations")):
        d = p[key]
        line = f"   {label}: predicted {d['predicted']}, actual {d['actual']}"
        if d["onlyPredicted"] or d["onlyActual"]:
            line += (f" (only predicted: {', '.join(d['onlyPredicted'][:5]) or '-'}; "
                     f"only actual: {', '.join(d['onlyActual'][:5]) or '-'})")
        out(line)


def _secs(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f} s"
