"""`taudash status` (the output contract) and `taudash check` (exit 1 on a critical finding), for one
cluster or a fleet (several --context, or --all-contexts: docs/fleet.md)."""

from __future__ import annotations

import argparse
import json
import sys

import yaml

from taudash.engine.text import clean

from ..errors import EXIT_BAD_INPUT, EXIT_CRITICAL, EXIT_OK, EXIT_UNREACHABLE, UsageError
from ..loading import load_from_args, report_issues, view_of
from .options import FLEET_SOURCE, add_prometheus_arg, add_source_args, rule_config


def register(sub) -> None:
    s = sub.add_parser("status")
    add_source_args(s, FLEET_SOURCE)
    add_prometheus_arg(s)
    s.add_argument("-o", "--output", choices=("json", "yaml", "table"), default="table")
    _fleet_args(s)
    s.set_defaults(func=cmd_status)

    c = sub.add_parser("check")
    add_source_args(c, FLEET_SOURCE)
    add_prometheus_arg(c)
    c.add_argument("-v", "--verbose", action="store_true", help="list warnings and info findings too")
    _fleet_args(c)
    c.set_defaults(func=cmd_check)


def _fleet_args(p: argparse.ArgumentParser) -> None:
    """status and check read several clusters: --context repeatable, or --all-contexts (docs/fleet.md)."""
    p.add_argument("--all-contexts", action="store_true",
                   help="every context of the kubeconfig, one FleetStatus entry each (also: --context repeated)")
    p.set_defaults(_repeatable=frozenset({"context"}))


def cmd_status(args) -> int:
    agents = agents_of_args(args)
    if agents is not None:
        return cmd_agents_status(args, agents)
    contexts = _fleet_contexts(args)
    if contexts is not None:
        return cmd_fleet_status(args, contexts)
    loaded = load_from_args(args)
    view = view_of(loaded, rule_config(args))
    if args.output in ("json", "yaml"):
        print_document(view.to_contract(), args.output)
    else:
        from ..report import print_table

        print_table(view)
    report_issues(loaded.issues)
    return EXIT_BAD_INPUT if loaded.issues else EXIT_OK


def cmd_check(args) -> int:
    agents = agents_of_args(args)
    if agents is not None:
        return cmd_agents_check(args, agents)
    contexts = _fleet_contexts(args)
    if contexts is not None:
        return cmd_fleet_check(args, contexts)
    loaded = load_from_args(args)
    view = view_of(loaded, rule_config(args))
    report_issues(loaded.issues)
    c = view.counts()
    for f in view.findings:
        if f.severity.value == "critical" or args.verbose:
            print(f"{f.severity.value:<8} {f.rule:<24} {clean(_object(f))}: {clean(f.message)}")
    print(f"{c['critical']} critical, {c['warning']} warning, {c['info']} info")
    if loaded.issues:
        return EXIT_BAD_INPUT
    return EXIT_CRITICAL if view.has_critical() else EXIT_OK


# --- several clusters -------------------------------------------------------------------------------


def _fleet_contexts(args) -> list[str] | None:
    """The contexts of a fleet command (several --context, or --all-contexts), None for one cluster."""
    contexts = list(getattr(args, "contexts", None) or ())
    if getattr(args, "all_contexts", False):
        if contexts:
            raise UsageError("--all-contexts and --context: choose one")
        from ..fleet import all_contexts

        contexts = all_contexts(args.kubeconfig)
    elif len(contexts) < 2:
        return None
    if args.snapshot or args.demo:
        raise UsageError("several clusters are live contexts: --snapshot and --demo read one cluster")
    return contexts


def _load_fleet(args, contexts: list[str]):
    from ..fleet import load_fleet

    results = load_fleet(contexts, args.kubeconfig, rule_config(args), getattr(args, "sync_timeout", 30.0))
    for r in results:
        if r.error is not None:
            print(f"taudash: {r.context}: unreachable: {clean(r.error)}", file=sys.stderr)
    return results


def cmd_fleet_status(args, contexts: list[str]) -> int:
    from ..fleet import fleet_contract, joins_of, multikueue_mapping

    results = _load_fleet(args, contexts)
    joins = joins_of(results, multikueue_mapping())
    if args.output in ("json", "yaml"):
        doc = fleet_contract(results, joins)
        print_document(doc, args.output)
    else:
        from ..report import print_table

        for r in results:
            print(f"== {clean(r.context)} ==")
            if r.view is not None:
                print_table(r.view)
            else:
                print(f"unreachable: {clean(r.error or '')}")
        _print_join(joins, verbose=True)
    # The document covers every cluster that answered; the exit code says that not every one did (a
    # status cannot vouch for a cluster it did not read, as a partly unreadable snapshot is exit 2).
    return EXIT_UNREACHABLE if not all(r.reachable for r in results) else EXIT_OK


def _print_join(joins, verbose: bool) -> int:
    """The MultiKueue join across the fleet (docs/fleet.md); returns its critical findings."""
    from ..fleet import fleet_findings

    for ctx, j in joins.items():
        counts = ", ".join(f"{n} {k}" for k, n in sorted(j.remote_counts().items())) or "none"
        print(f"{clean(ctx)}: MultiKueue: {len(j.dispatched)} dispatched (remote: {counts}), {len(j.orphans)} orphaned")
    crit = 0
    for ctx, f in fleet_findings(joins):
        crit += f.severity.value == "critical"
        if f.severity.value == "critical" or verbose:
            print(f"{clean(ctx)}: {f.severity.value:<8} {f.rule:<24} {clean(_object(f))}: {clean(f.message)}")
    return crit


def cmd_fleet_check(args, contexts: list[str]) -> int:
    from ..fleet import joins_of, multikueue_mapping

    results = _load_fleet(args, contexts)
    joins = joins_of(results, multikueue_mapping())
    total = {"critical": 0, "warning": 0, "info": 0}
    for r in results:
        if r.view is None:
            print(f"{clean(r.context)}: unreachable")
            continue
        c = r.view.counts()
        for k in total:
            total[k] += c[k]
        for f in r.view.findings:
            if f.severity.value == "critical" or args.verbose:
                print(f"{clean(r.context)}: {f.severity.value:<8} {f.rule:<24} {clean(_object(f))}: "
                      f"{clean(f.message)}")
        print(f"{clean(r.context)}: {c['critical']} critical, {c['warning']} warning, {c['info']} info")
    join_crit = _print_join(joins, args.verbose)
    down = sum(not r.reachable for r in results)
    print(f"fleet: {len(results)} clusters, {down} unreachable; "
          f"{total['critical']} critical, {total['warning']} warning, {total['info']} info; "
          f"MultiKueue across the fleet: {join_crit} critical")
    if join_crit or any(r.view is not None and r.view.has_critical() for r in results):
        return EXIT_CRITICAL
    # No critical seen, but a cluster that could not be read cannot be vouched for: fail closed.
    return EXIT_UNREACHABLE if down else EXIT_OK


# --- a fleet from agents (docs/fleet.md, "A fleet from agents") ----------------------------------------


def agents_of_args(args):
    """The agents of `--fleet-from`, None without it (bad input is exit 2)."""
    given = list(getattr(args, "fleet_from", None) or ())
    if not given:
        return None
    if args.snapshot or args.demo or getattr(args, "contexts", None) or getattr(args, "all_contexts", False):
        raise UsageError("--fleet-from reads agents: without --snapshot, --demo, --context or --all-contexts")
    from ..agents import agents_of_config, resolve_agents

    return resolve_agents(given, agents_of_config())


def _read_agents(agents):
    import asyncio

    from ..agents import agent_token, read_agents

    results = asyncio.run(read_agents(agents, agent_token()))
    for r in results:
        if r.error is not None:
            print(f"taudash: {r.agent.name}: unreachable: {clean(r.error)}", file=sys.stderr)
        elif r.reading is not None and r.reading.stale:
            print(f"taudash: {r.agent.name}: stale: {clean(r.reading.stale)}", file=sys.stderr)
    return results


def cmd_agents_status(args, agents) -> int:
    from ..agents import agents_contract

    results = _read_agents(agents)
    if args.output in ("json", "yaml"):
        doc = agents_contract(results)
        print_document(doc, args.output)
    else:
        from ..report import print_table

        for r in results:
            print(f"== {clean(r.agent.name)} ({clean(r.agent.url)}) ==")
            if r.reading is not None:
                print_table(r.reading.view)
            else:
                print(f"unreachable: {clean(r.error or '')}")
    return EXIT_UNREACHABLE if not all(r.reachable for r in results) else EXIT_OK


def cmd_agents_check(args, agents) -> int:
    results = _read_agents(agents)
    total = {"critical": 0, "warning": 0, "info": 0}
    crit = False
    for r in results:
        name = clean(r.agent.name)
        if r.reading is None:
            print(f"{name}: unreachable")
            continue
        view = r.reading.view
        c = view.counts()
        for k in total:
            total[k] += c[k]
        crit = crit or view.has_critical()
        for f in view.findings:
            if f.severity.value == "critical" or args.verbose:
                print(f"{name}: {f.severity.value:<8} {f.rule:<24} {clean(_object(f))}: {clean(f.message)}")
        print(f"{name}: {c['critical']} critical, {c['warning']} warning, {c['info']} info"
              + (f" (stale: {clean(r.reading.stale)})" if r.reading.stale else ""))
    down = sum(not r.reachable for r in results)
    stale = sum(bool(r.reading and r.reading.stale) for r in results)
    print(f"fleet: {len(results)} clusters from agents, {down} unreachable, {stale} stale; "
          f"{total['critical']} critical, {total['warning']} warning, {total['info']} info")
    if crit:
        return EXIT_CRITICAL
    # An agent not read, or one whose own data is not current, cannot vouch for its cluster: fail closed.
    return EXIT_UNREACHABLE if down or stale else EXIT_OK


def _object(f) -> str:
    return f"{f.object.kind} {f.object.namespace + '/' if f.object.namespace else ''}{f.object.name}"


def print_document(doc: dict, output: str) -> None:
    """A contract document on stdout as `-o json` or `-o yaml` asks."""
    if output == "json":
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        yaml.safe_dump(doc, sys.stdout, sort_keys=False, allow_unicode=True)
