"""The wait report (`why`) in an operator's words: one text for `taudash why` and the dashboard's why view.

The contract (engine/rules/why.py, docs/queue-insight.md) keeps Kueue's shapes: 0-based positions, exact
quantities, a rank per reason. What a person reads says the same in words: reasons numbered from 1 in
the order of the report, amounts in GPUs / cores / GiB with every number labelled, positions counted
from #1 (next in line), and a flavor that could fit only by preemption said together with whether
preemption can happen.

A line is a list of (style, text) segments; style is "heading", "bold", "muted", "warn" or "".
"""

from __future__ import annotations

from typing import Any

from .text import clean, place
from .units import amount

Line = list[tuple[str, str]]

SOURCE_WORDS = {"visibility": "from Kueue's visibility API", "estimated": "estimated from the objects"}
SEVERITY_WORDS = {"blocking": "blocks", "waiting": "waits", "unknown": "unknown", "info": "note"}


def mode_words(mode: str, preemption_possible: bool | None) -> str:
    """A flavor row's mode as a sentence fragment; "Preempt" beside "preemption: no" would contradict."""
    if mode == "Fit":
        return "fits now"
    if mode == "Preempt":
        if preemption_possible is False:
            return "short now: waits for quota to be released (no preemption, see below)"
        if preemption_possible is None:
            return "short now: only released quota or preemption makes room (preemption unknown)"
        return "short now: preemption could make room"
    if mode == "ExceedsMaxQuota":
        return "more than this queue can ever have"
    return {"Unknown": "unknown (inputs unreadable)", "NoFit": "does not fit"}.get(mode, mode)


def position_words(q: dict[str, Any], status: str) -> str:
    if q["positionInClusterQueue"] is not None:
        source = SOURCE_WORDS.get(q["positionSource"], q["positionSource"])
        return (f"{place(q['positionInClusterQueue'])} in ClusterQueue, {place(q['positionInLocalQueue'])} in "
                f"LocalQueue ({source})")
    if q["positionSource"] == "unknown" and status == "pending":
        return f"unknown ({q['positionNote'] or 'not readable'})"
    return "-"


def report_lines(d: dict[str, Any], ahead_shown: int = 20, held_shown: int = 5) -> list[Line]:
    """The report `d` (WorkloadWaitReport.to_contract()) as lines of text."""
    w, q, p = d["workload"], d["queue"], d["preemption"]
    out: list[Line] = []
    owner = f"{w['owner']['kind']}/{w['owner']['name']}" if w["owner"] else "none"
    out.append([("bold", f"Workload {w['namespace']}/{w['name']}"),
                ("", f"  owner {owner} · priority {w['priority']} · status {w['status']}"
                     + ("" if w["active"] else " · INACTIVE"))])
    out.append([("", f"queue {q['localQueue'] or '-'} → {q['clusterQueue'] or '-'} · cohort {q['cohort'] or 'none'}"
                     + (f" · {q['queueingStrategy']}" if q["queueingStrategy"] else "")
                     + f" · position {position_words(q, w['status'])}")])
    out.append([("heading", f"reasons ({len(d['reasons'])}, most fundamental first):")])
    for i, r in enumerate(d["reasons"], 1):
        sev = SEVERITY_WORDS.get(r["severity"], r["severity"])
        out.append([("muted", f"  {i:>2}. "), ("bold", f"{sev:<7} {r['code']:<22} "), ("", r["message"])])
    short = [f for f in d["flavors"] if f["mode"] != "NotMatching"]
    if short:
        out.append([("heading", "quota per flavor and resource:")])
        for f in short:
            res = f["resource"]
            limit = "no borrowing limit" if f["borrowingLimit"] is None else \
                f"may borrow {amount(res, f['borrowingLimit'])}"
            out.append([("bold", f"  {f['flavor']} {res}: "),
                        ("", f"requested {amount(res, f['requested'])}, available now {amount(res, f['available'])}, "
                             f"most ever {amount(res, f['potentialAvailable'])}; own quota "
                             f"{amount(res, f['nominal'])}, {limit}, the cohort can lend "
                             f"{amount(res, f['cohortLendable'])} — "),
                        ("" if f["mode"] == "Fit" else "warn", mode_words(f["mode"], p["possible"]))])
            for o in f["lendingLimitOfOthers"]:
                out.append([("muted", f"      {o['clusterQueue']} keeps {amount(res, o['withheld'])} back "
                                      f"(lendingLimit {amount(res, o['lendingLimit'])})")])
            if f["mode"] != "Fit":
                for h in f["reservedBy"][:held_shown]:
                    out.append([("muted", f"      held by {h['namespace']}/{h['name']} in {h['clusterQueue']}: "
                                          f"{amount(res, h['amount'])} (priority {h['priority']})")])
                if len(f["reservedBy"]) > held_shown:
                    out.append([("muted", f"      … {len(f['reservedBy']) - held_shown} more holders")])
    if d["ahead"]:
        out.append([("heading", f"ahead in the ClusterQueue ({len(d['ahead'])}):")])
        for a in d["ahead"][:ahead_shown]:
            who = f"{a['owner']['kind']}/{a['owner']['name']}" if a["owner"] else "no owner"
            out.append([("muted", f"  {place(a['position']):>4} "),
                        ("", f"{a['namespace']}/{a['name']}  {who}  priority {a['priority']}")])
        if len(d["ahead"]) > ahead_shown:
            out.append([("muted", f"  … {len(d['ahead']) - ahead_shown} more (-o json lists them all)")])
    out.append([("heading", "preemption: "), ("", p["message"])])
    for c in p["candidates"]:
        out.append([("", f"  would evict {c['namespace']}/{c['name']} in {c['clusterQueue']} "
                         f"(priority {c['priority']})")])
    return [[(style, clean(text)) for style, text in line] for line in out]


def plain(lines: list[Line]) -> str:
    """The lines as plain text (the CLI's table output)."""
    return "\n".join("".join(text for _, text in line) for line in lines)


__all__ = ["Line", "mode_words", "plain", "position_words", "report_lines"]
