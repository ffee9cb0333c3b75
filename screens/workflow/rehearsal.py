"""A rehearsal's report (docs/rehearsal.md): what the workflow would do, predicted on a simulated fork.

Screens never import the simulator: the form posts `RehearseWorkflow`, the app (program layer) runs
the rehearsal and shows its report here as a plain dict (the `taudash/v1 RehearsalReport`,
docs/rehearsal.md). Nothing on this screen writes; "run for real" dismisses with True and the app
starts the ordinary workflow, whose every step still asks first.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from ..kit.text import lit

_STATE_STYLE = {"Completed": "green", "Stalled": "bold red", "Failed": "bold red", "Aborted": "yellow"}
_STEP_MARK = {"Done": "✓", "Failed": "✖", "NotReached": "·", "Stopped": "■"}


def _dur(s: float | None) -> str:
    if s is None:
        return "-"
    s = float(s)
    if s < 90:
        return f"{s:.0f} s"
    return f"{s / 60:.1f} min" if s < 5400 else f"{s / 3600:.1f} h"


def _ref(c: dict[str, Any]) -> str:
    return f"{c.get('kind')} {c['namespace'] + '/' if c.get('namespace') else ''}{c.get('name')}"


def _short(v: Any, width: int = 40) -> str:
    text = v if isinstance(v, str) else ("null" if v is None else str(v).lower() if isinstance(v, bool) else
                                        f"<{len(v)} items>" if isinstance(v, list) else str(v))
    return text if len(text) <= width else text[: width - 1] + "…"


def report_text(report: dict[str, Any], limit: int = 12) -> Text:
    """The report as text; every name and message from the cluster is inert (`lit`)."""
    md, spec, res = report.get("metadata") or {}, report.get("spec") or {}, report.get("result") or {}
    timing = res.get("timing") or {}
    t = Text(end="")
    t.append("predicted ")
    t.append(lit(str(res.get("state", "?")), _STATE_STYLE.get(res.get("state", ""), "bold")))
    t.append(f" in {_dur(res.get('predictedSeconds'))} of simulated time")
    t.append(f"  · computed in {timing.get('runWallSeconds', 0):.1f} s (×{timing.get('speedFactor') or '-'})\n",
             style="dim")
    t.append("nothing was written to the cluster", style="bold green")
    t.append(f" (writes to it: {res.get('writesToCluster', 0)}; "
             f"{sum((res.get('forkWrites') or {}).values())} went to the in-process fork)\n", style="dim")
    stalled = res.get("stalled")
    if stalled:
        t.append("✖ stalls at ", style="bold red")
        t.append(lit(f"{stalled.get('title')}: not done within {_dur(stalled.get('deadlineSeconds'))}"))
        t.append(lit(f" — waiting for: {stalled.get('waitingFor') or '?'}", "dim"))
        t.append("\n")
    t.append("\nSteps\n", style="bold")
    for i, s in enumerate(res.get("steps") or [], 1):
        t.append(f" {_STEP_MARK.get(s.get('state'), ' ')} {i} ")
        t.append(lit(str(s.get("title", ""))))
        ev = sum((s.get("evictions") or {}).values())
        extra = ((f" · evicts {ev}" if ev else "")
                 + (f" · deactivates {s['deactivated']}" if s.get("deactivated") else ""))
        t.append(f"  {_dur(s.get('simulatedSeconds'))} (deadline {_dur(s.get('deadlineSeconds'))}){extra}\n",
                 style="dim")
    for label, key in (("Evicted", "evictedByQueue"), ("Deactivated", "deactivatedByQueue")):
        rows = res.get(key) or []
        if rows:
            t.append(f"\n{label}\n", style="bold")
            for r in rows:
                t.append(lit(f"  {r.get('team')} / {r.get('queue')}: {r.get('workloads')} Workload(s), "
                             f"{r.get('gpus')} GPU(s)"))
                t.append("\n")
    t.append(f"\nGPUs freed: {res.get('gpusFreed', 0)}\n")
    f = res.get("findings") or {}
    appeared, cleared = f.get("appeared") or [], f.get("cleared") or []
    if appeared or cleared:
        t.append("\nFindings\n", style="bold")
        for sign, rows, style in (("+", appeared, "yellow"), ("−", cleared, "green")):
            for row in rows[:limit]:
                t.append(f"  {sign} ", style=style)
                t.append(lit(f"{row.get('severity')} {row.get('rule')} {row.get('kind')} {row.get('name')}"))
                t.append("\n")
    changes = res.get("changes") or []
    if changes:
        t.append(f"\nEnd state of the {len(changes)} object(s) it changes\n", style="bold")
        for c in changes[:limit]:
            if c.get("verb") == "delete":
                t.append(lit(f"  − {_ref(c)}: deleted"))
                t.append("\n")
                continue
            diff = "; ".join(f"{d.get('path')}: {_short(d.get('before'), 16)} → {_short(d.get('after'))}"
                             for d in (c.get("diff") or [])[:3]) or "back to what it was"
            t.append(lit(f"  ~ {_ref(c)}: {diff}"))
            t.append("\n")
        if len(changes) > limit:
            t.append(f"  … and {len(changes) - limit} more (taudash rehearse report {md.get('id', '?')})\n",
                     style="dim")
    fork = report.get("fork") or {}
    t.append("\nNot modelled", style="bold")
    t.append(lit(f" (see {report.get('fidelity', 'docs/simulator.md')})", "dim"))
    t.append("\n")
    for item in report.get("notModelled") or []:
        t.append(lit(f"  · {item}", "dim"))
        t.append("\n")
    if fork.get("partialKinds"):
        t.append(lit(f"  · partial copies (fields taudash reads only): {', '.join(fork['partialKinds'])}", "dim"))
        t.append("\n")
    t.append("\n")
    t.append(lit(f"run it for real: taudash workflow start {spec.get('workflow', '?')} … "
                 f"--after-rehearsal {md.get('id', '?')}", "dim"))
    return t


class RehearsalScreen(ModalScreen[bool]):
    """Shows one RehearsalReport (a dict). Dismisses True for "run it for real", else False."""

    DEFAULT_CSS = """
    RehearsalScreen { align: center middle; }
    RehearsalScreen > Vertical {
        width: 112; max-width: 96%; height: 94%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    RehearsalScreen VerticalScroll { height: 1fr; }
    RehearsalScreen Horizontal { height: auto; align-horizontal: right; }
    RehearsalScreen Button { margin-left: 2; }
    """
    BINDINGS = [Binding("escape", "close", "close"), Binding("r", "real", "run for real")]

    def __init__(self, report: dict[str, Any], can_run: bool = True) -> None:
        super().__init__()
        self.report = report
        self.can_run = can_run

    def compose(self) -> ComposeResult:
        md, spec = self.report.get("metadata") or {}, self.report.get("spec") or {}
        with Vertical():
            head = Text(end="")
            head.append("Rehearsal ", style="bold")
            head.append(lit(f"{md.get('id', '?')} · {spec.get('title', spec.get('workflow', '?'))}", "bold"))
            head.append(lit(f"  on a simulated fork of {md.get('context') or '?'} "
                            f"({(self.report.get('fork') or {}).get('objects', '?')} objects)", "dim"))
            yield Static(head, id="rh-title")
            with VerticalScroll():
                yield Static(report_text(self.report), id="rh-body")
            with Horizontal():
                yield Button("Close", id="rh-close", variant="primary")
                if self.can_run:
                    yield Button("Run it for real…", id="rh-real", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#rh-close", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "rh-real")

    def action_close(self) -> None:
        self.dismiss(False)

    def action_real(self) -> None:
        if self.can_run:
            self.dismiss(True)
