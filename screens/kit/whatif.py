"""What if I submit this? An overlay every screen opens (W, or the palette): paste a Job, RayJob, Deployment or
Workload manifest (or give a path) and see what Kueue would do with it, predicted on a simulated fork of the
cluster (docs/whatif.md).

Screens never import the simulator: the modal posts `PredictWhatIf`, the app (program layer) forks the
session's store, predicts in a worker thread and hands back the `taudash/v1 WhatIfPrediction` as a plain dict.
Nothing here writes, so the modal works the same in read-only mode and on a snapshot.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static, TextArea

from .messages import PredictWhatIf
from .text import lit

HINT = ("Paste a manifest below, or give a file path; ctrl+r predicts. The prediction runs on an in-process fork: "
        "nothing is written to the cluster.")


def _secs(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s:.0f} s" if s < 90 else (f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h")


def prediction_text(doc: dict[str, Any]) -> Text:
    """A WhatIfPrediction as text; every name and message from the cluster or the manifest is inert (`lit`)."""
    p, o = doc.get("prediction") or {}, (doc.get("spec") or {}).get("object") or {}
    t = Text(end="")
    t.append(lit(f"{o.get('kind')} {o.get('namespace')}/{o.get('name')}", "bold"))
    t.append(lit(f" → LocalQueue {p.get('localQueue') or '-'} → ClusterQueue {p.get('clusterQueue') or '-'}"))
    t.append("\n")
    if p.get("admissible") is None and p.get("reason"):
        t.append("? unknown: ", style="bold")
        t.append(lit(str((p.get("reason") or {}).get("message", ""))))
        t.append("\n")
    elif not p.get("admissible"):
        reason = p.get("reason") or {}
        t.append("✖ never admitted as the cluster stands: ", style="bold red")
        t.append(lit(str(reason.get("code", "?")), "bold"))
        t.append("\n  ")
        t.append(lit(str(reason.get("message", ""))))
        t.append("\n")
    elif p.get("startsNow"):
        t.append("✓ starts now\n", style="bold green")
    else:
        pos = p.get("position") or {}
        t.append("… waits", style="bold yellow")
        if pos:
            t.append(f": {pos.get('clusterQueue')} of {pos.get('of')} in its ClusterQueue, "
                     f"{pos.get('localQueue')} in its LocalQueue")
        t.append("\n")
    profile = p.get("profile")
    if profile:
        t.append("profile ", style="dim")
        t.append(lit(f"{profile.get('name') or 'none'} ({profile.get('selectedBy')})"))
        t.append("\n")
    for f in p.get("flavors") or []:
        t.append("flavors ", style="dim")
        fl = ", ".join(f"{r} → {v}" for r, v in sorted((f.get("flavors") or {}).items()))
        t.append(lit(f"{f.get('podSet')} ×{f.get('count')}: {fl}"))
        t.append("\n")
    eta = p.get("eta")
    if eta and not p.get("startsNow"):
        t.append("eta ", style="dim")
        t.append(lit(str(eta.get("text", ""))))
        t.append("\n")
    for b in p.get("borrows") or []:
        who = ", ".join(f"{x.get('name')}" for x in b.get("from") or []) or "its cohort"
        t.append("borrows " if p.get("startsNow") else "borrows once admitted ", style="dim")
        t.append(lit(f"{b.get('amount')} {b.get('resource')} of {b.get('flavor')} from {who}"))
        t.append("\n")
    victims = p.get("preempts") or []
    if p.get("admissible"):
        t.append(f"preempts {len(victims) or 'nothing'}\n", style="bold red" if victims else "dim")
    for v in victims:
        owner = v.get("owner") or {}
        t.append(lit(f"  · {v.get('namespace')}/{v.get('name')}"
                     + (f" ({owner.get('kind')} {owner.get('name')})" if owner else "") + f" {v.get('reason', '')}"))
        t.append("\n")
    waiting = p.get("waiting")
    if waiting:
        t.append("still waiting after the horizon: ", style="dim")
        t.append(lit(f"{waiting.get('reason')}: {waiting.get('message')}"))
        t.append("\n")
    sim = p.get("simulation") or {}
    t.append(f"simulated {_secs(sim.get('simulatedSeconds'))} forward; writes to the cluster: "
             f"{doc.get('writesToCluster', 0)}", style="dim")
    return t


class WhatIfScreen(ModalScreen[None]):
    """The manifest in, the prediction out; escape closes."""

    DEFAULT_CSS = """
    WhatIfScreen { align: center middle; }
    WhatIfScreen > Vertical {
        width: 112; max-width: 96%; height: 94%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    WhatIfScreen #wi-yaml { height: 10; }
    WhatIfScreen #wi-result { height: 1fr; min-height: 6; border-top: solid $primary-darken-2; }
    WhatIfScreen Horizontal { height: auto; align-horizontal: right; }
    WhatIfScreen Button { margin-left: 2; }
    """
    BINDINGS = [Binding("escape", "close", "close"), Binding("ctrl+r", "predict", "predict", priority=True)]
    HELP = "paste YAML or type a path · ctrl+r predict · escape close"

    def __init__(self) -> None:
        super().__init__()
        self.busy = False
        self.prediction: dict[str, Any] | None = None
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("What if I submit this?", style="bold"), id="wi-title")
            yield Static(Text(HINT, style="dim"), id="wi-hint")
            yield Input(placeholder="path to a manifest (or leave empty and paste below)", id="wi-path")
            yield TextArea(id="wi-yaml", language=None, show_line_numbers=False, soft_wrap=False)
            with VerticalScroll(id="wi-result"):
                yield Static(Text("no prediction yet", style="dim"), id="wi-body")
            with Horizontal():
                yield Button("Predict", id="wi-predict", variant="primary")
                yield Button("Close", id="wi-close")

    def on_mount(self) -> None:
        self.query_one("#wi-path", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_predict()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "wi-predict":
            self.action_predict()
        else:
            self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_predict(self) -> None:
        if self.busy:
            return
        path = self.query_one("#wi-path", Input).value.strip()
        text = self.query_one("#wi-yaml", TextArea).text
        if not path and not text.strip():
            self.show_error("nothing to predict: paste a manifest or give a path")
            return
        self.busy = True
        self._body(Text("predicting on a simulated fork…", style="dim"))
        self.app.post_message(PredictWhatIf(text, path, self))

    def show_prediction(self, doc: dict[str, Any], kept: str = "") -> None:
        """`kept`: where the prediction was kept to be held against what happens ("" when it was not)."""
        self.busy, self.prediction, self.error = False, doc, None
        text = prediction_text(doc)
        if kept:
            text.append(f"\n{kept}", style="dim")
        self._body(text)

    def show_error(self, message: str) -> None:
        self.busy, self.error = False, message
        t = Text(end="")
        t.append("✖ ", style="bold red")
        t.append(lit(message))
        self._body(t)

    def _body(self, text: Text) -> None:
        self.query_one("#wi-body", Static).update(text)
