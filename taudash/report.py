"""Human summary of a ClusterView for `taudash status -o table` (rich, fits 100 columns)."""

from __future__ import annotations

import os
import sys

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from taudash.engine.text import clean
from taudash.engine.view import ClusterView

SEV_MARK = {"critical": ("✖", "bold red"), "warning": ("⚠", "yellow"), "info": ("ℹ", "cyan")}
PHASE_MARK = {"Ready": "✓", "Pending": "◐", "Degraded": "✖"}


def L(value: object, style: str = "") -> Text:
    """A literal cell: rich would parse a plain str cell as markup; control characters are defused."""
    return Text(clean(value), style=style)


def _q(m: dict, res: str) -> str:
    v = m.get(res)
    return "-" if v is None else v.human()


def _gpu_resource(keys) -> str:
    for k in ("nvidia.com/gpu", "gpu.nvidia.com"):
        if k in keys:
            return k
    return "nvidia.com/gpu"


def _stamp(value: str | None) -> str:
    """A Lease's MicroTime as people read it: "2026-11-30 06:30:00 UTC"."""
    if not value:
        return "never"
    return value.replace("T", " ").split(".")[0].rstrip("Z") + " UTC"


def render_table(view: ClusterView) -> Group:
    parts: list[RenderableType] = []
    src = view.source
    head = Text()
    head.append("taudash ", style="bold")
    head.append(f"{src.type}", style="bold cyan")
    if src.context:
        head.append(f" · context {src.context}")
    if src.path:
        head.append(f" · {src.path.rsplit('/', 1)[-1]}", style="dim")
    if view.cluster:
        c = view.cluster
        head.append(f" · TauCluster gen {c.generation} ({c.phase or 'no phase'})")
    parts.append(head)

    bad = [a for a in view.access if a.state not in ("Synced",)]
    if bad:
        parts.append(Text("data: " + ", ".join(f"{a.resource} {a.state}" for a in bad), style="yellow"))

    pool = view.pool
    line = Text("GPU POOL ", style="bold")
    if pool.mode == "None":
        line.append("no TauCluster capacity configuration")
    else:
        line.append(clean(f"{pool.mode.lower()} · team {pool.team or '-'} · cohort {pool.cohort or '-'}"))
        if pool.valid is True:
            line.append(" · valid", style="green")
        elif pool.valid is False:
            line.append(" · INVALID", style="bold red")
        elif pool.mode == "Automatic" or getattr(pool, "unknown", None):
            why = ", ".join(f"{u.resource} {u.reason}" for u in getattr(pool, "unknown", []) or [])
            line.append(f" · unknown ({why or 'inputs unreadable'})", style="yellow")
        if pool.zeroed:
            line.append(" · ZEROED", style="bold red")
    parts.append(line)
    if pool.flavors:
        t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for col in ("flavor", "nodes", "GPU inv", "budget", "reserved", "used", "headroom"):
            t.add_column(col, justify="left" if col == "flavor" else "right")
        for f in pool.flavors:
            gpu = _gpu_resource(f.inventory.keys() | f.budget.keys())
            head_q = f.headroom.get(gpu)
            head_s = "-" if head_q is None else head_q.human() + (" ⚠" if head_q.negative else "")
            t.add_row(
                L(f.name + (" (gone)" if f.disappeared else "")),
                f"{f.nodes}/{f.nodes + len(f.excluded)}",
                _q(f.inventory, gpu),
                _q(f.budget, gpu),
                _q(f.reserved, gpu),
                _q(f.used, gpu),
                head_s,
            )
        parts.append(t)
        parts.append(Text("inventory is allocatable capacity, not free capacity", style="dim"))

    counts = {"Ready": 0, "Pending": 0, "Degraded": 0}
    for w in view.workspaces:
        key = "Ready" if w.counted_ready else ("Pending" if w.expected_phase == "Ready" else w.expected_phase)
        counts[key] = counts.get(key, 0) + 1
    ws = Text("WORKSPACES ", style="bold")
    ws.append("  ".join(f"{PHASE_MARK.get(k, '')} {v} {k}" for k, v in counts.items()))
    parts.append(ws)
    if view.workspaces:
        t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for col in ("workspace", "namespace", "phase", "expected", "drain", "blockers"):
            t.add_column(col)
        for w in view.workspaces:
            t.add_row(
                L(w.name),
                L(w.namespace),
                L((w.phase or "-") + (" (stale)" if w.stale else "")),
                f"{PHASE_MARK.get(w.expected_phase, '')} {w.expected_phase}",
                w.drain.state + (f" ({w.drain.mode})" if w.drain.mode else ""),
                str(len(w.drain.blockers)) if w.drain.blockers else "",
            )
        parts.append(t)
    for w in view.workspaces:
        d = w.drain
        if d.state in ("NotDraining", "Clear"):
            continue
        line = Text(f"DRAIN {clean(w.name)} ", style="bold")
        line.append(clean(f"{d.mode or ''} {d.old_namespace or '?'} → {d.new_namespace or '(deleted)'}: "))
        line.append(d.state, style="yellow" if d.state == "Blocked" else "bold red")
        parts.append(line)
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=3)
        grid.add_column()
        for r in d.routes:
            grid.add_row("", L(f"route {r.local_queue or '(workload)'} → {r.cluster_queue}: {r.state}"
                               + (f" ({r.reason})" if r.reason else "")))
        for b in d.blockers:
            grid.add_row("•", L(b.action or f"{b.kind} {b.namespace}/{b.name}: {b.reason}"))
        for u in d.unknown:
            grid.add_row("?", L(f"{u.resource}: {u.reason}"))
        parts.append(grid)

    if view.cluster_queues:
        t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, title_justify="left")
        for col in ("clusterqueue", "cohort", "stop", "active", "pend", "resv", "adm", "inact"):
            t.add_column(col, justify="right" if col in ("pend", "resv", "adm", "inact") else "left")
        for q in view.cluster_queues:
            act = "?" if q.active is None else ("✓" if q.active else f"✖ {q.active_reason}")
            t.add_row(L(q.name), L(q.cohort or "-"), L(q.stop_policy), L(act), str(q.pending), str(q.reserving),
                      str(q.admitted), "?" if q.inactive is None else str(q.inactive))
        parts.append(Text("QUEUES", style="bold"))
        parts.append(t)

    if view.claims:
        parts.append(Text("CLAIMS (workflows holding what they write; no other workflow may write to it)",
                          style="bold"))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=1)
        grid.add_column(ratio=1)
        for claim in view.claims:
            who = " on ".join(x for x in (claim.who, claim.host) if x) or "unknown operator"
            line = Text.assemble((clean(claim.target), "bold"), clean(
                f": workflow {claim.holder} ({claim.workflow or '?'}, {who}), since {_stamp(claim.since)}, "
                f"renewed {_stamp(claim.renewed)}"))
            if claim.stale:
                line.append(" — stale: its run stopped renewing it", style="yellow")
            grid.add_row(Text("⚠" if claim.stale else "⚑", style="yellow" if claim.stale else "cyan"), line)
        parts.append(grid)

    prof = view.profiles
    pl = Text("PROFILES ", style="bold")
    if prof.profiles or prof.checks:
        ready = sum(1 for p in prof.profiles if p.ready)
        pl.append("✓ usable" if prof.usable else "✖ not usable", style="green" if prof.usable else "red")
        pl.append(f" · {ready}/{len(prof.profiles)} ready")
        if prof.profile_set_hash and prof.profile_set_hash == prof.computed_hash:
            pl.append(" · hash verified")
        elif prof.profile_set_hash:
            pl.append(" · hash MISMATCH", style="bold red")
    else:
        pl.append("none declared")
    mk = view.multikueue
    pl.append("    MULTIKUEUE ", style="bold")
    mark = {"Ready": "✓ ", "NotReady": "✖ "}.get(mk.state, "")
    pl.append(f"{mark}{mk.state}", style={"Ready": "green", "NotReady": "red"}.get(mk.state, ""))
    if mk.workers:
        active = sum(1 for w in mk.workers if w.active)
        pl.append(f" · {active}/{len(mk.workers)} workers active")
    parts.append(pl)

    n = view.counts()
    fl = Text("FINDINGS ", style="bold")
    fl.append(f"{n['critical']} critical · {n['warning']} warning · {n['info']} info")
    parts.append(fl)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=1)
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    for fd in view.findings:
        mark, style = SEV_MARK[fd.severity.value]
        obj = f"{fd.object.kind} {fd.object.namespace + '/' if fd.object.namespace else ''}{fd.object.name}"
        body = Text(f"{clean(obj)}: ", style="bold")
        body.append(clean(fd.message))  # Text.append never interprets markup; clean() defuses escapes
        if fd.hint:
            body.append(f"\n→ {clean(fd.hint)}", style="dim")
        grid.add_row(Text(mark, style=style), Text(fd.rule, style=style), body)
    parts.append(grid)
    return Group(*parts)


# Piped or redirected output is read by grep, awk and people's editors: nothing is wrapped or cut there. Only a
# terminal's width shapes the table (Rich would otherwise assume 80 columns for a pipe).
UNBOUNDED = 100_000


def print_table(view: ClusterView, width: int | None = None) -> None:
    if width is None and not sys.stdout.isatty() and not os.environ.get("COLUMNS"):
        width = UNBOUNDED
    console = Console(width=width, soft_wrap=False, highlight=False)
    console.print(render_table(view))
