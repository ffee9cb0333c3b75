"""1 Overview: is anything wrong, and where? Pool per flavor, borrowing, workspaces, drains, profiles,
MultiKueue, then every finding ranked by severity (Enter jumps to its object)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.events import Click
from textual.widgets import Static

from taudash.engine.session import Frame
from taudash.engine.view import ClusterView

from .kit.base import DashScreen
from .kit.format import gpu_of, plural, qfloat, qty, short_flavor
from .kit.messages import Navigate
from .kit.presenters import FINDING_COLS, finding_rows, pool_summary
from .kit.text import Tones, lit, span
from .widgets.bars import bar, sparkline
from .widgets.keyed_table import KeyedTable
from .widgets.section import Section

# The kinds each overview figure is derived from: while one of them cannot be read, the figure is "?"
# with the reason, never a number, a 0 or a ✖ computed from stale or missing data.
POOL_KINDS = ("Node", "ClusterQueue", "ResourceFlavor", "Cohort", "TauCluster", "TauTeam")
BORROW_KINDS = ("ClusterQueue", "Cohort")
WORKSPACE_KINDS = ("TauWorkspace",)
PROFILE_KINDS = ("TauCluster", "TauWorkspace")
MK_KINDS = ("MultiKueueConfig", "MultiKueueCluster", "AdmissionCheck", "TauCluster")


def unknown_reason(frame: Frame, kinds: tuple[str, ...]) -> str | None:
    """Why a figure derived from `kinds` is unknown right now (None: all of them are readable)."""
    fresh = frame.freshness
    if fresh.unreachable:
        return "API unreachable"
    # an API that is not served is a fact the rules read (plain Kueue, no MultiKueue), not an unknown
    bad = [p for p in fresh.problems if p.kind in kinds and p.state != "Absent"]
    if not bad:
        return None
    text = ", ".join(f"{p.resource} {p.state.lower()}" for p in bad[:2])
    return text + (f" +{len(bad) - 2} more" if len(bad) > 2 else "")


def _unknown(t: Text, why: str, tones: Tones) -> Text:
    t.append(f"? unknown — {why}", style=tones.unknown)
    return t


SHORT_HEIGHT = 26  # rows below which the Overview drops its explanatory lines for the findings


def pool_table(frame: Frame, tones: Tones, bar_width: int = 16, short: bool = False, spark: bool = True,
               used: bool = True) -> Table:
    """The pool's rows; `used` False drops the used column (a narrow terminal: reserved is beside it, the Pool
    screen has both) so no figure is ever cut."""
    view = frame.view
    unknown = unknown_reason(frame, POOL_KINDS) is not None
    t = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 1), header_style=tones.muted)
    names = [short_flavor(f.name) if short else f.name for f in view.pool.flavors]
    # the flavor is what a row is about: whole, the figures give way first
    t.add_column("flavor", no_wrap=True, min_width=max((len(n) for n in names), default=6))
    t.add_column("nodes", justify="right", no_wrap=True)
    t.add_column("GPUs", justify="right", no_wrap=True)
    t.add_column("reserved of budget" if spark else "reserved", no_wrap=True)
    t.add_column("", justify="right", no_wrap=True)
    if used:
        t.add_column("used", justify="right", no_wrap=True)
    t.add_column("headroom", justify="right", no_wrap=True)
    if spark:
        t.add_column("last 30 min", no_wrap=True)
    for f in view.pool.flavors:
        gpu = gpu_of(f.inventory, f.budget, f.reserved)
        budget = f.observed_budget if f.observed_budget else f.budget
        res_v, bud_v = qfloat(f.reserved, gpu), qfloat(budget, gpu)
        if res_v is None and gpu is not None:
            res_v = 0.0  # a flavor nobody reserves: the status lists it with no entry
        head = f.headroom.get(gpu) if gpu else None
        head_t = span("–", tones.unknown) if head is None else Text(head.human(), end="")
        if head is not None and head.negative:
            head_t = span(f"{head.human()} ⚠", tones.warn)
        name = lit(short_flavor(f.name) if short else f.name)
        if f.disappeared:
            name.append(" (gone)", style=tones.warn)
        if unknown:  # the last figures read are not shown as if they held now
            q = span("?", tones.unknown)
            t.add_row(name, q, q, bar(None, None, bar_width, tones), q, *([q] if used else []), q,
                      *([sparkline(frame.history.get(f.name, ()), tones, ceiling=bud_v)] if spark else []))
            continue
        t.add_row(
            name,
            f"{f.nodes}/{f.nodes + len(f.excluded)}",
            qty(f.inventory, gpu),
            bar(res_v, bud_v, bar_width, tones),
            f"{qty(f.reserved, gpu) if f.reserved.get(gpu or '') is not None else '0'} / {qty(budget, gpu)}",
            *([qty(f.used, gpu) if f.used.get(gpu or "") is not None else "0"] if used else []),
            head_t,
            *([sparkline(frame.history.get(f.name, ()), tones, ceiling=bud_v)] if spark else []),
        )
    return t


def borrowing_line(view: ClusterView, tones: Tones, unknown: str | None = None) -> Text:
    t = span("BORROWING ", tones.heading)
    if unknown:
        return _unknown(t, unknown, tones)
    parts: list[Text] = []
    for c in view.cohorts:
        per_q = []
        members = {q.name: q for q in view.cluster_queues if q.cohort == c.name}
        for name in c.members:
            q = members.get(name)
            if q is None:
                continue
            total = 0.0
            for fl in q.flavors:
                for r in fl.resources:
                    if r.name.endswith("/gpu"):
                        total += r.borrowed.as_float()
            if total:
                per_q.append((name, total))
        if per_q:
            p = Text(end="")
            p.append(lit(c.name, "bold"))
            p.append(": ")
            for i, (name, total) in enumerate(sorted(per_q, key=lambda x: (-x[1], x[0]))):
                if i:
                    p.append(" · ")
                p.append(lit(name))
                p.append(f" {total:g}")
            p.append(" GPUs")
            parts.append(p)
    if not parts:
        t.append("no queue borrows GPUs from its cohort", style=tones.muted)
    for i, p in enumerate(parts):
        if i:
            t.append("   ")
        t.append(p)
    return t


def status_lines(view: ClusterView, tones: Tones, frame: Frame | None = None) -> Text:
    def why(kinds: tuple[str, ...]) -> str | None:
        return unknown_reason(frame, kinds) if frame is not None else None

    counts = {"Ready": 0, "Pending": 0, "Degraded": 0}
    stale = 0
    for w in view.workspaces:
        key = "Ready" if w.counted_ready else ("Pending" if w.expected_phase == "Ready" else w.expected_phase)
        counts[key] = counts.get(key, 0) + 1
        stale += w.stale
    t = span("WORKSPACES ", tones.heading)
    if reason := why(WORKSPACE_KINDS):
        _unknown(t, reason, tones)
    elif not view.workspaces:
        t.append("none", style=tones.muted)
    else:
        t.append(tones.mark("ok", f"{counts['Ready']} Ready"))
        t.append("  ")
        t.append(tones.mark("partial", f"{counts['Pending']} Pending"))
        t.append("  ")
        t.append(tones.mark("bad", f"{counts['Degraded']} Degraded"))
        if stale:
            t.append(f"  ({stale} stale)", style=tones.warn)
    t.append("\nDRAINS ", style=tones.heading)
    draining = [w for w in view.workspaces if w.drain.state != "NotDraining"]
    if not draining:
        t.append("✓ none in progress", style=tones.ok)
    for i, w in enumerate(draining):
        d = w.drain
        if i:
            t.append(" · ")
        tone = {"Clear": "ok", "Blocked": "warn", "Unknown": "bad"}.get(d.state, "unknown")
        mark = {"ok": "✓", "warn": "⚠", "bad": "?"}.get(tone, "?")
        t.append(f"{mark} ", style=tones.of(tone))
        t.append(lit(w.name, tones.of(tone)))
        if d.mode == "Retarget":
            t.append(" → ")
            t.append(lit(d.new_namespace or "?"))
        elif d.mode == "Deletion":
            t.append(" (deleting)")
        t.append(f": {d.state}", style=tones.of(tone))
        if d.blockers:
            t.append(f", {plural(len(d.blockers), 'blocker')}")
        if d.unknown and frame is not None and frame.freshness.unreachable:
            t.append(", API unreachable", style=tones.warn)
        elif d.unknown:
            t.append(", unreadable: ")
            t.append(lit(", ".join(u.resource for u in d.unknown), tones.warn))
    t.append("\nPROFILES ", style=tones.heading)
    p = view.profiles
    if reason := why(PROFILE_KINDS):
        _unknown(t, reason, tones)
    elif not p.applicable:
        t.append("– not applicable (TauGrid not installed)", style=tones.muted)
    elif not p.profiles and not p.checks:
        t.append("– none declared", style=tones.muted)
    else:
        t.append(tones.mark("ok", "usable") if p.usable else tones.mark("bad", "not usable"))
        ready = sum(1 for r in p.profiles if r.ready)
        t.append(f" · {ready}/{len(p.profiles)} ready · hash ")
        if not p.profile_set_hash:
            t.append("✖ not published", style=tones.bad)
        elif p.computed_hash is None:
            t.append("? not verifiable", style=tones.unknown)
        elif p.computed_hash == p.profile_set_hash:
            t.append("✓ verified", style=tones.ok)
        else:
            t.append("✖ mismatch", style=tones.bad)
    t.append("\nMULTIKUEUE ", style=tones.heading)
    mk = view.multikueue
    if mk.state == "NotConfigured":
        t.append("– not configured", style=tones.muted)
    elif reason := why(MK_KINDS):
        _unknown(t, reason, tones)
    else:
        t.append(tones.mark("ok" if mk.state == "Ready" else "bad", mk.state))
        active = sum(1 for w in mk.workers if w.active)
        t.append(f" · {active}/{len(mk.workers)} workers active")
        failed = [c.id for c in mk.checks if not c.ok]
        if failed:
            t.append(" · failing ")
            t.append(lit(", ".join(failed), tones.bad))
    return t


class OverviewScreen(DashScreen):
    HELP = """\
Overview answers "is anything wrong, and where?" in one glance.

GPU POOL     per flavor: counted/total nodes, allocatable GPUs, reservations against the budget
             (bar), used, headroom (budget − reserved; negative ⚠ = overcommitted, nothing is
             evicted, new admissions wait) and reserved GPUs over the last 30 minutes.
             Inventory is allocatable capacity, not free capacity.
BORROWING    GPUs each ClusterQueue borrows from its cohort right now.
WORKSPACES   counted by the phase their conditions imply (a stale workspace is never Ready).
DRAINS       workspaces being deleted or retargeted, and what blocks them.
FINDINGS     everything the rules found, most severe first.

enter        open the highlighted finding's object
o / O        sort the findings by the next column / reverse it (a header click too)
c            Capacity: what can start now (free GPUs per domain, gang slots, blockers)
click        a tile opens its screen (pool → 2, workspaces/drains → 4, profiles → 7, MultiKueue → 6)"""
    BINDINGS = [Binding("c", "capacity", "capacity", show=False)]

    def action_capacity(self) -> None:
        self.post_message(Navigate("capacity"))

    def frame_signature(self, frame: Frame) -> tuple | None:
        sig = super().frame_signature(frame)
        # the sparklines move with time, not only with the view (None: always rendered)
        return None if sig is None else sig + (frame.history,)

    def compose_body(self) -> ComposeResult:
        with Vertical(id="body"):
            yield Static(id="ov-pool-title", classes="tile")
            yield Static(id="ov-pool", classes="tile")
            yield Static(id="ov-pool-note", classes="note")
            yield Static(id="ov-borrow", classes="tile")
            yield Static(id="ov-status", classes="tile")
            yield Section("FINDINGS", KeyedTable(FINDING_COLS, empty="✓ no findings", id="findings"), id="ov-findings",
                          classes="primary")

    def render_frame(self, frame: Frame) -> None:
        view, tones = frame.view, self.tones
        title = pool_summary(view, tones)
        pool_why = unknown_reason(frame, POOL_KINDS)
        if pool_why and view.pool.mode != "None":
            title.append(" · ")
            _unknown(title, pool_why, tones)
        self.query_one("#ov-pool-title", Static).update(title)
        pool = self.query_one("#ov-pool", Static)
        pool.display = bool(view.pool.flavors)
        if view.pool.flavors:
            wide, narrow = self.size.width >= 110, self.size.width < 80
            # a narrow terminal drops the sparkline (2 Pool has it) so the figures stay whole
            pool.update(pool_table(frame, tones, bar_width=16 if wide else 6 if narrow else 12, short=not wide,
                                   spark=not narrow, used=not narrow))
        note = self.query_one("#ov-pool-note", Static)
        # a short terminal keeps room for the findings (the note is the Pool screen's too; `?` explains it)
        short_term = self.size.height < SHORT_HEIGHT
        note.display = bool(view.pool.flavors) and not short_term
        self.query_one("#ov-borrow", Static).display = not short_term
        note.update(Text("  inventory is allocatable capacity, not free capacity · a reservation is not proof that "
                         "work runs",
                         style=tones.muted))
        self.query_one("#ov-borrow", Static).update(borrowing_line(view, tones, unknown_reason(frame, BORROW_KINDS)))
        self.query_one("#ov-status", Static).update(status_lines(view, tones, frame))
        self.query_one("#findings", KeyedTable).sync(finding_rows(view, tones, self.row_cache("findings")))

    def on_click(self, event: Click) -> None:
        target = {"ov-pool-title": "pool", "ov-pool": "pool", "ov-borrow": "queues", "ov-status": None}
        wid = event.widget.id if event.widget is not None else None
        screen = target.get(wid) if wid is not None else None
        if screen:
            self.post_message(Navigate(screen))
        elif wid == "ov-status":
            line = event.y
            self.post_message(Navigate(["workspaces", "workspaces", "profiles"][min(line, 2)]
                                       if event.x < 50 or line < 2 else "multikueue"))
