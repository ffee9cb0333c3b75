"""`taudash profiles select|export|verify` (docs/rules.md#profiles and #output-contract)."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

from taudash.engine.profile_snapshot import (
    ProfileSnapshotError,
    build_snapshot,
    export_snapshot,
    render_snapshot,
    verify,
)
from taudash.engine.rules.base import RuleContext
from taudash.engine.rules.profiles import select_profile
from taudash.engine.text import clean

from ..errors import EXIT_BAD_INPUT, EXIT_CRITICAL, EXIT_OK, UsageError
from ..loading import load_from_args, report_issues
from .options import add_source_args, rule_config

SNAPSHOT_SCOPE = "a snapshot authorizes client-side rendering only, never a server dry-run or an apply"


def _context(args, loaded) -> RuleContext:
    return RuleContext(store=loaded.store, now=datetime.now(UTC), config=rule_config(args))


def cmd_select(args) -> int:
    loaded = load_from_args(args)
    result = select_profile(_context(args, loaded), args.namespace, args.team, args.lane, args.profile)
    data = result.to_contract()
    if args.output == "json":
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        # Profile names and messages come from the cluster: printed inert (control characters visible).
        print(f"profile:  {clean(data['profile'] or '-')}")
        print(f"error:    {data['error'] or '-'}")
        print(f"message:  {clean(data['message'])}")
        if data["annotations"]:
            print("annotations (identify the observed revision only, not quota or capacity):")
            for k, v in data["annotations"].items():
                print(f"  {clean(k)}: {clean(v)}")
    report_issues(loaded.issues)
    if loaded.issues:
        return EXIT_BAD_INPUT
    # A refused selection blocks the submission: exit 1 so scripts can branch without parsing.
    return EXIT_CRITICAL if result.error else EXIT_OK


def cmd_export(args) -> int:
    loaded = load_from_args(args)
    if loaded.issues:
        # A review artifact from partly unreadable input is worse than none: refuse (one line).
        raise UsageError(f"refusing to export: {len(loaded.issues)} object(s) in the source could not be read "
                         f"(first: {loaded.issues[0]})")
    ctx = _context(args, loaded)
    try:
        if args.output == "-":
            doc = build_snapshot(ctx)
            sys.stdout.write(render_snapshot(doc))
            return EXIT_OK
        doc = export_snapshot(ctx, args.output)
    except ProfileSnapshotError as exc:
        raise UsageError(str(exc)) from None
    print(
        f"wrote {args.output}: TauCluster generation {doc['tauClusterGeneration']}, "
        f"profileSetHash {doc['profileSetHash']}, {len(doc['profiles'])} profile(s); {SNAPSHOT_SCOPE}"
    )
    return EXIT_OK


def cmd_verify(args) -> int:
    try:
        snap = verify(args.file)
    except ProfileSnapshotError as exc:
        raise UsageError(str(exc)) from None
    names = [p.name for p in snap.profiles]
    if args.output == "json":
        out = {
            "valid": True,
            "tauClusterGeneration": snap.generation,
            "profileSetHash": snap.profile_set_hash,
            "profiles": names,
        }
        json.dump(out, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(clean(
            f"{args.file}: valid TauWorkloadProfileSnapshot: TauCluster generation {snap.generation}, "
            f"profileSetHash {snap.profile_set_hash}, {len(names)} profile(s): {', '.join(names) or '-'}"
        ))
        print(f"note: {SNAPSHOT_SCOPE}; re-export after every TauCluster revision")
    return EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("profiles")
    add_source_args(p, frozenset(), shown=False)  # global options may also stand between the two words
    psub = p.add_subparsers(dest="profiles_command", metavar="SUBCOMMAND", required=True)

    s = psub.add_parser(
        "select",
        help="select the workload profile for a namespace, team and lane",
        description="Prints {profile, error, message, annotations}. Exit 0 when a profile is selected, "
        "1 when the selection is refused (NoMatch, Ambiguous, NotEligible, Unusable), 2 on bad input.",
    )
    add_source_args(s)
    s.add_argument("--namespace", required=True, help="the submitting namespace")
    s.add_argument("--team", required=True, help="the submitting team")
    s.add_argument("--lane", required=True, help="the workload lane")
    s.add_argument("--profile", help="select this profile explicitly (it must be eligible)")
    s.add_argument("-o", "--output", choices=("json", "table"), default="table")
    s.set_defaults(func=cmd_select)

    e = psub.add_parser(
        "export",
        help="write a TauWorkloadProfileSnapshot of a ready, verified revision (atomically)",
        description="Refuses unless every profile is Ready at the current generation and the hash verifies; "
                    f"{SNAPSHOT_SCOPE}.",
    )
    add_source_args(e)
    e.add_argument("--output", required=True, metavar="FILE", help="snapshot file to write ('-' for stdout)")
    e.set_defaults(func=cmd_export)

    v = psub.add_parser("verify", help="check a TauWorkloadProfileSnapshot file the way TauGrid decodes it")
    add_source_args(v, frozenset({"read_only"}))  # a file check: no cluster source
    v.add_argument("file", metavar="FILE")
    v.add_argument("-o", "--output", choices=("json", "table"), default="table")
    v.set_defaults(func=cmd_verify)
