"""`taudash --snapshot FILE`, `taudash demo`: open the Textual dashboard (issue 8).

`taudash` with no source (or `--context`) needs the live dashboard source, which is not wired yet:
it says so in one line and exits 2.
"""

from __future__ import annotations

from engine.rules.base import RuleConfig
from engine.session import Session

from ..errors import UsageError
from ..loading import REPO_ROOT, load_from_args, report_issues

# Until the simulator serves the demo, `taudash demo` opens the generated demo snapshot; a checkout
# without it falls back to the dashboard's own small test fixture.
FALLBACK_DEMO = REPO_ROOT / "tests" / "fixtures" / "ui-demo.yaml"


def register(sub, add_source_args) -> None:
    d = sub.add_parser("demo", help="open the dashboard on the embedded demo cluster (read-only)")
    d.add_argument("--status", action="store_true", help="print the status once instead of opening the dashboard")
    d.add_argument("-o", "--output", choices=("json", "yaml", "table"), default="table")
    d.add_argument("--system-namespace", default="tau-system")
    d.add_argument("--pvc", action="append", default=[])
    d.add_argument("--read-only", action="store_true", help="accepted for symmetry: the demo is always read-only")
    d.set_defaults(func=run_demo)


def run_demo(args) -> int:
    from ..cli import cmd_status
    from ..loading import DEMO_SNAPSHOT

    args.snapshot, args.context, args.demo = None, None, True
    if not DEMO_SNAPSHOT.exists() and FALLBACK_DEMO.exists():
        args.snapshot, args.demo = str(FALLBACK_DEMO), False
    if args.status:
        return cmd_status(args)
    return open_dashboard(args, demo=True)


def run_default(args) -> int:
    snapshot = getattr(args, "dash_snapshot", None)
    if not snapshot:
        where = f"--context {args.dash_context}" if getattr(args, "dash_context", None) else "the current kube context"
        raise UsageError(
            f"the live dashboard ({where}) needs the live source, which is not wired into the dashboard yet; "
            "use `taudash --snapshot FILE` or `taudash demo`"
        )
    args.snapshot, args.context, args.demo = snapshot, None, False
    args.system_namespace = args.dash_system_namespace
    args.pvc = getattr(args, "dash_pvc", [])
    return open_dashboard(args, demo=False)


def open_dashboard(args, demo: bool) -> int:
    loaded = load_from_args(args)
    config = RuleConfig(system_namespace=args.system_namespace, storage_claims=tuple(args.pvc))
    session = Session(
        loaded.store,
        loaded.source,
        config,
        read_only=True,  # nothing writes yet (guided operations are issue 9); snapshots always are
        demo=demo,
        issues=tuple(str(i) for i in loaded.issues),
    )
    from ..app import TaudashApp

    TaudashApp(session).run()
    report_issues(loaded.issues)  # after the screen is restored, so they stay readable
    return 0

