"""`taudash` (no command), `taudash demo`: the Textual dashboard (issue 8)."""

from __future__ import annotations

from ..errors import UsageError


def register(sub, add_source_args) -> None:
    d = sub.add_parser("demo", help="open the dashboard on the embedded demo cluster")
    d.add_argument("--status", action="store_true", help="print the status once instead of opening the dashboard")
    d.add_argument("-o", "--output", choices=("json", "yaml", "table"), default="table")
    d.add_argument("--system-namespace", default="tau-system")
    d.add_argument("--pvc", action="append", default=[])
    d.set_defaults(func=run_demo)


def run_demo(args) -> int:
    from ..cli import cmd_status

    args.snapshot, args.context, args.demo = None, None, True
    if args.status:
        return cmd_status(args)
    raise UsageError("the dashboard is not built yet; use `taudash demo --status`")


def run_default(args) -> int:
    raise UsageError("the dashboard is not built yet; use `taudash status --snapshot FILE`")
