"""7 Profiles: is the workload profile set usable? Usable-set checks, published vs computed hash,
per-profile readiness with the first failing condition, the selection matrix and what it stamps."""

from __future__ import annotations

from functools import partial

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from taudash.engine.model.names import (
    CLUSTER_GENERATION_ANNOTATION,
    PROFILE_SET_HASH_ANNOTATION,
    WORKLOAD_PROFILE_ANNOTATION,
)
from taudash.engine.session import Frame

from .kit.base import DashScreen
from .kit.filtering import RowMeta
from .kit.format import kv_grid, tri
from .kit.text import Tones, lit, span
from .widgets.keyed_table import Col, KeyedTable, Row
from .widgets.section import Section

CHECK_COLS = [Col("id", "check", 16, ident=True), Col("ok", "result", 8), Col("msg", "message", flex=True)]
PROFILE_COLS = [
    Col("name", "profile", 16, ident=True),
    Col("ready", "ready (first failing)", 22),
    Col("target", "target", 13, hide=2),
    Col("placement", "placement", 15, hide=3),
    Col("queue", "queue", 10, hide=4),
]
SELECT_COLS = [Col("ns", "namespace", 14, ident=True), Col("team", "team", 12), Col("lane", "lane", 14),
               Col("result", "selects", flex=True)]
STAMPS = (CLUSTER_GENERATION_ANNOTATION, PROFILE_SET_HASH_ANNOTATION, WORKLOAD_PROFILE_ANNOTATION)


def hash_text(published: str | None, computed: str | None, tones: Tones) -> Text:
    t = Text("published ", end="")
    t.append(lit(published or "(none)", "" if published else tones.bad))
    t.append("\ncomputed  ")
    if computed is None:
        t.append("? cannot be recomputed (profiles invalid or unreadable)", style=tones.unknown)
    else:
        t.append(lit(computed))
        if published:
            t.append("  ")
            t.append(tones.mark("ok", "verified") if computed == published else tones.mark("bad", "mismatch"))
    return t


def _selection_cells(s, tones: Tones) -> tuple:
    if s.profile:
        res = tones.mark("ok", s.profile)
    else:
        res = tones.mark("bad", s.error or "no selection")
        if s.message:
            res.append("  ")
            res.append(lit(s.message, tones.muted))
    return (lit(s.namespace), lit(s.team or "–"), lit(s.lane or "(any)"), res)


def _selection_row(s, tones: Tones) -> Row:
    return Row(f"{s.namespace}|{s.team}|{s.lane}", partial(_selection_cells, s, tones),
               RowMeta(kind="TauCluster", name="cluster",
                       text=f"{s.namespace} {s.team} {s.lane} {s.profile or s.error}"))


class ProfilesScreen(DashScreen):
    HELP = """\
Profiles: may workloads select a workload profile right now? taudash fails closed.

CHECKS      the usable-set checks: TauCluster "cluster" exists, status observed at the current
            generation, WorkloadProfilesReady True at that generation, profileSetHash published and
            equal to the hash recomputed from the resolved profiles.
PROFILES    per profile: Ready at the current generation, or the first failing resolved condition.
SELECTION   for each (namespace, team, lane) in the catalog or a workspace: the profile an implicit
            selection picks, or NoMatch / Ambiguous / Unusable with the reason.
STAMPS      what a successful selection stamps on a workload. These annotations identify the
            observed revision only, not quota or capacity.
enter       open the TauCluster"""

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="body"):
            yield Static(id="pr-summary", classes="tile")
            yield Section("CHECKS", KeyedTable(CHECK_COLS, empty="no checks evaluated", id="pr-checks"))
            yield Section("PROFILES", KeyedTable(PROFILE_COLS, empty="no workload profiles declared", id="pr-profiles"))
            yield Static(id="pr-why", classes="detail")
            yield Section("SELECTION",
                          KeyedTable(SELECT_COLS, empty="no (namespace, team, lane) tuples", id="pr-select"))
            yield Static(id="pr-stamps", classes="detail")

    def render_frame(self, frame: Frame) -> None:
        tones = self.tones
        p = frame.view.profiles
        t = span("PROFILES ", tones.heading)
        if not p.applicable:
            t.append("– not applicable: TauGrid is not installed (plain Kueue)", style=tones.muted)
        elif not p.profiles and not p.checks:
            t.append("– none declared", style=tones.muted)
        else:
            t.append(tones.mark("ok", "usable") if p.usable else tones.mark("bad", "not usable"))
            n_ready = sum(1 for r in p.profiles if r.ready)
            t.append(f" · {n_ready}/{len(p.profiles)} ready · TauCluster generation "
                     f"{p.generation if p.generation is not None else '?'}")
            t.append("\n")
            t.append(hash_text(p.profile_set_hash, p.computed_hash, tones))
        for n in p.notes:
            t.append("\nnote: ", style=tones.info)
            t.append(lit(n, tones.muted))
        self.query_one("#pr-summary", Static).update(t)
        cluster_meta = RowMeta(kind="TauCluster", name="cluster")
        self.query_one("#pr-checks", KeyedTable).sync([
            Row(c.id, (lit(c.id, "bold"), tri(c.ok, tones, "ok", "fail") if c.applicable else
                       lit("n/a", tones.muted), lit(c.message)), cluster_meta)
            for c in p.checks
        ])
        rows, why = [], []
        for r in p.profiles:
            ready = tones.mark("ok", "Ready") if r.ready else tones.mark("bad", r.condition or "Ready")
            if not r.ready:
                line = Text(end="")
                line.append(lit(r.condition or "Ready", "bold"))
                line.append(" ")
                line.append(lit(r.reason, tones.warn))
                if r.message:
                    line.append(": ")
                    line.append(lit(r.message))
                why.append((r.name, line))
            rows.append(Row(r.name, (
                lit(r.name), ready,
                lit(r.execution_target or "–", tones.accent if r.execution_target == "multiKueue" else ""),
                lit(r.placement or "–"), lit(r.default_local_queue or "–"),
            ),
            RowMeta(kind="TauCluster", name="cluster", text=f"{r.name} {r.reason} {r.message} {r.execution_target}")))
        self.query_one("#pr-profiles", KeyedTable).sync(rows)
        why_pane = self.query_one("#pr-why", Static)
        why_pane.display = bool(why)
        why_pane.update(kv_grid([(f"✖ {name}", line) for name, line in why], tones.bad) if why else "")
        # A selection per namespace, team and lane (hundreds at fleet scale): rows follow their objects.
        cache = self.row_cache("selections")
        sel_rows = [cache.row(f"{s.namespace}|{s.team}|{s.lane}", s, partial(_selection_row, s, tones), tones)
                    for s in p.selections]
        cache.done()
        table = self.query_one("#pr-select", KeyedTable)
        table.sync(sel_rows)
        self._stamps(table.selected_key())

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "pr-select":
            self._stamps(event.row_key.value)

    def _stamps(self, key: str | None) -> None:
        pane = self.query_one("#pr-stamps", Static)
        p = self.frame.view.profiles if self.frame else None
        tones = self.tones
        t = span("STAMPS ", tones.heading)
        sel = next((s for s in (p.selections if p else []) if f"{s.namespace}|{s.team}|{s.lane}" == key), None)
        if p is None or sel is None:
            t.append("highlight a selection to see the annotations it stamps", style=tones.muted)
        elif not sel.profile:
            t.append(lit(f"{sel.namespace}/{sel.team}/{sel.lane or '(any)'}: nothing is stamped — "
                         f"{sel.error or 'no selection'}", tones.warn))
        else:
            values = (str(p.generation), p.profile_set_hash or "", sel.profile)
            for k, v in zip(STAMPS, values, strict=True):
                t.append(f"\n  {k}: ", style=tones.muted)
                t.append(lit(v))
        t.append("\n  stamps identify the observed revision only, not quota or capacity", style=tones.muted)
        pane.update(t)
