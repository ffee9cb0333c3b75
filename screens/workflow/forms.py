"""The new-workflow form (`n` on the Workflows screen, `w` on a queue or a draining workspace, ctrl+p
"Start workflow: …"): choose a registered kind and its targets. Nothing here writes; Start journals the
workflow (the App's workflow host, host.py) and every step then asks for its own confirmation in the wizard.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, ContentSwitcher, Input, RadioButton, RadioSet, Select, SelectionList, Static
from textual.widgets.selection_list import Selection

from taudash.engine.session import Session
from taudash.engine.workflows import Param, WorkflowKind, build, overlap_refusal, registry
from taudash.engine.workflows.base import Context
from taudash.engine.workflows.journal import workflows_dir
from taudash.engine.workflows.params import ParamError

from ..kit.messages import NewWorkflow, RehearseWorkflow
from ..kit.presenters import operations_enabled
from ..kit.text import lit
from ..widgets.choices import ChoiceSet, MarkedCheckbox, MarkedRadioButton, MarkedSelectionList
from .journals import Entry, JournalIndex


def kind_labels() -> dict[str, str]:
    """Every registered workflow kind and its label, in registry order (engine/workflows/registry.py)."""
    return {w.name: w.label for w in registry.kinds()}


def label_of(kind: str) -> str:
    wk = registry.find(kind)
    return wk.label if wk is not None else kind


# The forms drawn by hand below (pickers over queues, journals, workspaces), by the name a kind declares as
# its `form` (engine/workflows/kind.py); a kind whose form is GENERATED gets a section generated from its
# parameters (`_generated`).
CUSTOM_FORMS = ("hold", "release", "catalog", "rollback", "drain")


def custom_form(kind: str) -> str | None:
    """The hand-drawn form a registered kind declares, or None: its form is generated from its Params."""
    form = registry.get(kind).form
    return form if form in CUSTOM_FORMS else None


def section_id(kind: str) -> str:
    """The form section a kind is shown in: its hand-drawn form's, else its own generated one."""
    return f"nw-{custom_form(kind) or kind}"


# --- the "new workflow" form ---------------------------------------------------------------


class NewWorkflowScreen(ModalScreen[tuple[str, dict] | None]):
    """Choose a workflow and its targets. Start journals it and opens the wizard; the first write
    still waits for the step's own confirmation."""

    DEFAULT_CSS = """
    NewWorkflowScreen { align: center middle; }
    NewWorkflowScreen > Vertical {
        width: 110; max-width: 96%; height: auto; max-height: 94%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    NewWorkflowScreen RadioSet { layout: horizontal; width: 100%; height: auto; border: none; }
    NewWorkflowScreen RadioSet RadioButton { width: auto; margin-right: 1; }
    NewWorkflowScreen RadioSet.-many { layout: grid; grid-size: 3; grid-rows: 1; grid-gutter: 0 1; }
    NewWorkflowScreen ContentSwitcher { height: auto; max-height: 16; }
    NewWorkflowScreen ContentSwitcher > Vertical { height: auto; }
    NewWorkflowScreen SelectionList { height: auto; max-height: 9; }
    NewWorkflowScreen .nw-label { color: $text-muted; margin-top: 1; }
    NewWorkflowScreen #nw-steps { color: $text-muted; margin-top: 1; }
    NewWorkflowScreen #nw-error { color: $error; }
    NewWorkflowScreen Horizontal#nw-buttons { height: auto; align-horizontal: right; margin-top: 1; }
    NewWorkflowScreen Button { margin-left: 2; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, session: Session, kind: str | None = None, cqs: list[str] | None = None,
                 workspace: str | None = None, directory: Path | None = None,
                 reactivate_from: str | None = None) -> None:
        super().__init__()
        self.session = session
        self.kind: str = kind if kind is not None and registry.find(kind) is not None else "hold"
        self.cqs = list(cqs or [])
        self.workspace = workspace
        self.directory = directory
        frame = session.last_frame
        self.queues = list(frame.view.cluster_queues) if frame is not None else []
        self.workspaces = [w for w in frame.view.workspaces if w.drain.state != "NotDraining"] if frame else []
        self.journals = JournalIndex().load(directory or workflows_dir())
        self.reactivation_sources = self._reactivation_sources()
        self.reactivate_from = reactivate_from if reactivate_from in self.reactivation_sources else None
        if self.reactivate_from and not self.cqs:  # the queues that run held: the ones to release
            self.cqs = list(self.reactivation_sources[self.reactivate_from][0].params.get("cqs") or [])

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("New workflow", style="bold"), id="nw-title")
            # Five kinds fit on one line; with more (a registered workflow), they wrap in rows of three.
            with ChoiceSet(id="nw-kind", classes="-many" if len(registry.kinds()) > 5 else ""):
                for kind, label in kind_labels().items():
                    yield MarkedRadioButton(label, value=kind == self.kind, id=f"nw-kind-{kind}")
            with ContentSwitcher(initial=section_id(self.kind)):
                with Vertical(id="nw-hold"):
                    yield Static("ClusterQueues to stop (space toggles)", classes="nw-label")
                    yield MarkedSelectionList[str](*self._queue_options(self.cqs), id="nw-hold-cqs")
                    with ChoiceSet(id="nw-hold-mode"):
                        yield MarkedRadioButton("HoldAndDrain — evicts admitted work", value=True,
                                                id="nw-mode-HoldAndDrain")
                        yield MarkedRadioButton("Hold — admitted work runs to completion", id="nw-mode-Hold")
                    yield MarkedCheckbox("deactivate pending Workloads (reversible: spec.active=false)", value=True,
                                         id="nw-hold-cancel")
                with Vertical(id="nw-release"):
                    yield Static("ClusterQueues to release (stopPolicy None)", classes="nw-label")
                    stopped = self.cqs or [q.name for q in self.queues if q.stop_policy != "None"]
                    yield MarkedSelectionList[str](*self._queue_options(stopped), id="nw-release-cqs")
                    yield Static("reactivate the Workloads a hold, catalog change or rollback deactivated",
                                 classes="nw-label")
                    yield Select(self._reactivation_options(), prompt="no reactivation", id="nw-release-from",
                                 value=self.reactivate_from or Select.NULL)
                with Vertical(id="nw-catalog"):
                    yield Static("new catalog file: a profile list, {workloadProfiles: …} or a TauCluster (YAML)",
                                 classes="nw-label")
                    yield Input(placeholder="path/to/catalog.yaml", id="nw-catalog-file")
                    yield Static("also hold (besides every queue the current and the new catalog route to)",
                                 classes="nw-label")
                    yield MarkedSelectionList[str](*self._queue_options([]), id="nw-catalog-cqs")
                with Vertical(id="nw-rollback"):
                    yield Static("the catalog change to roll back (its exported TauCluster is restored)",
                                 classes="nw-label")
                    yield Select(self._catalog_options(), prompt="choose a catalog change", id="nw-rollback-from")
                with Vertical(id="nw-drain"):
                    yield Static("workspace being deleted or retargeted", classes="nw-label")
                    yield Select(self._workspace_options(), prompt="choose a draining workspace", id="nw-drain-ws",
                                 value=self.workspace if self.workspace in {w.name for w in self.workspaces}
                                 else Select.NULL)
                for wk in registry.kinds():
                    if custom_form(wk.name) is None:
                        yield from self._generated(wk)
            yield Static(self._steps_text(), id="nw-steps")
            yield MarkedCheckbox("Rehearse first on a simulated fork: show the predicted outcome, write nothing",
                                 value=False, id="nw-rehearse")
            yield Static("", id="nw-error")
            with Horizontal(id="nw-buttons"):
                yield Button("Cancel", id="nw-cancel", variant="primary")
                yield Button("Start…", id="nw-start", variant="warning")

    # options ------------------------------------------------------------------------------
    def _queue_options(self, chosen: list[str]) -> list[Selection[str]]:
        out = []
        for q in self.queues:
            t = lit(q.name)
            t.append("  ")
            t.append(lit(f"stopPolicy {q.stop_policy} · pending {q.pending} · reserving {q.reserving} · "
                         f"admitted {q.admitted}", "dim"))
            out.append(Selection(t, q.name, q.name in chosen))
        return out

    def _reactivation_sources(self) -> dict[str, tuple[Entry, int]]:
        """Runs that may have deactivated Workloads (hold, catalog change, rollback), newest first, with
        how many each deactivated (read from its journal)."""
        out: dict[str, tuple[Entry, int]] = {}
        for e in self.journals:
            if e.kind not in registry.deactivating():
                continue
            out[e.id] = (e, e.deactivated)
        return out

    def _reactivation_options(self) -> list[tuple[Text, str]]:
        return [(lit(f"{e.id} · {label_of(e.kind).lower()} · {n} Workload{'' if n == 1 else 's'} deactivated · "
                     f"{e.state} · {e.about}"), e.id)
                for e, n in self.reactivation_sources.values()]

    def _catalog_options(self) -> list[tuple[Text, str]]:
        return [(lit(f"{e.id} · {e.about} · {e.state}" + ("" if "taucluster" in e.artifacts else " · no export")),
                 e.id) for e in self.journals if e.kind == "catalog"]

    def _workspace_options(self) -> list[tuple[Text, str]]:
        return [(lit(f"{w.name} · {w.drain.mode} · drain {w.drain.state} ({len(w.drain.blockers)} blockers)"), w.name)
                for w in self.workspaces]

    def _steps_text(self) -> Text:
        t = Text(f"Steps: {registry.get(self.kind).steps}.\n", end="")
        t.append("Start journals the workflow and opens its wizard; each step shows its plan and asks before it "
                 "writes (destructive steps: type the context name).")
        return t

    # events -------------------------------------------------------------------------------
    def on_mount(self) -> None:
        self.query_one("#nw-cancel", Button).focus()

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        if event.radio_set.id != "nw-kind" or event.pressed.id is None:
            return
        event.stop()
        self.kind = event.pressed.id.removeprefix("nw-kind-")
        self.query_one(ContentSwitcher).current = section_id(self.kind)
        self.query_one("#nw-steps", Static).update(self._steps_text())
        self.query_one("#nw-error", Static).update("")

    def select_kind(self, kind: str) -> None:
        """Choose the workflow kind (what clicking its radio button does)."""
        self.query_one(f"#nw-kind-{kind}", RadioButton).value = True

    def values(self) -> dict[str, Any]:
        """What the form's fields say, by parameter (the same names as `taudash workflow start`'s flags)."""
        kind = custom_form(self.kind)
        if kind is None:
            return self._generated_values(registry.get(self.kind))
        if kind == "hold":
            mode_btn = self.query_one("#nw-hold-mode", RadioSet).pressed_button
            mode = (mode_btn.id or "").removeprefix("nw-mode-") if mode_btn is not None else "HoldAndDrain"
            return {"cq": self.query_one("#nw-hold-cqs", SelectionList).selected, "mode": mode,
                    "keep_pending": not self.query_one("#nw-hold-cancel", MarkedCheckbox).value}
        if kind == "release":
            src = self.query_one("#nw-release-from", Select).value
            return {"cq": self.query_one("#nw-release-cqs", SelectionList).selected,
                    "reactivate_from": src if isinstance(src, str) else None}
        if kind == "catalog":
            return {"catalog": self.query_one("#nw-catalog-file", Input).value.strip(),
                    "cq": self.query_one("#nw-catalog-cqs", SelectionList).selected}
        if kind == "rollback":
            src = self.query_one("#nw-rollback-from", Select).value
            return {"from_id": src if isinstance(src, str) else ""}
        ws = self.query_one("#nw-drain-ws", Select).value
        return {"workspace": ws if isinstance(ws, str) else ""}

    def params(self) -> dict[str, Any]:
        """The chosen parameters, through the same description as `taudash workflow start` (ParamError on bad
        input)."""
        s = self.session
        ctx = Context(store=s.store, actions=s.actions, config=s.config, lock=s.lock)
        return registry.get(self.kind).make(ctx, self.values(), self.directory, registry.kinds())

    # a form section generated from a kind's parameters -------------------------------------------
    def _generated(self, wk: WorkflowKind) -> ComposeResult:
        with Vertical(id=f"nw-{wk.name}"):
            for p in wk.params:
                wid = f"nw-{wk.name}-{p.dest}"
                if p.type == "flag":
                    yield MarkedCheckbox(p.field_label, value=False, id=wid)
                    continue
                yield Static(p.field_label + (" (required)" if p.required else ""), classes="nw-label")
                if p.type == "choice":
                    with ChoiceSet(id=wid):
                        for c in p.choices:
                            yield MarkedRadioButton(c, value=c == p.default, id=f"{wid}-{c}")
                elif p.type == "list" and p.pick == "queues":
                    yield MarkedSelectionList[str](*self._queue_options([]), id=wid)
                else:
                    hint = p.metavar or p.dest
                    yield Input(placeholder=f"{hint}, {hint}, …" if p.type == "list" else hint, id=wid)

    def _generated_values(self, wk: WorkflowKind) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for p in wk.params:
            out[p.dest] = self._generated_value(wk, p)
        return out

    def _generated_value(self, wk: WorkflowKind, p: Param) -> Any:
        wid = f"#nw-{wk.name}-{p.dest}"
        if p.type == "flag":
            return self.query_one(wid, MarkedCheckbox).value
        if p.type == "choice":
            pressed = self.query_one(wid, RadioSet).pressed_button
            return (pressed.id or "").removeprefix(wid[1:] + "-") if pressed is not None else p.default
        if p.type == "list" and p.pick == "queues":
            return list(self.query_one(wid, SelectionList).selected)
        text = self.query_one(wid, Input).value.strip()
        if p.type == "list":
            return [x for x in (part.strip() for part in text.replace(",", " ").split()) if x]
        return text or None

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id != "nw-start":
            self.dismiss(None)
            return
        try:
            params = self.params()
            build(self.kind, params)  # a workflow that cannot be built is refused here, not in the wizard
        except ParamError as exc:
            self.query_one("#nw-error", Static).update(lit(f"✖ {exc}"))
            return
        except (AttributeError, KeyError, TypeError, ValueError) as exc:  # a journal the helpers cannot read
            self.query_one("#nw-error", Static).update(lit(f"✖ {exc.__class__.__name__}: {exc}"))
            return
        rehearse = self.query_one("#nw-rehearse", MarkedCheckbox).value
        s = self.session
        refusal = None if rehearse else overlap_refusal(
            self.kind, params, s.actions.context or s.source.context or "?", s.cluster, self.directory)
        if refusal:  # another unfinished run (this dashboard's or the CLI's) writes to the same objects
            self.query_one("#nw-error", Static).update(lit(f"✖ {refusal}"))
            return
        if rehearse:  # the app rehearses; nothing is started
            self.app.post_message(RehearseWorkflow(self.kind, params))
            self.dismiss(None)
            return
        self.dismiss((self.kind, params))

    def action_cancel(self) -> None:
        self.dismiss(None)


# --- the palette ----------------------------------------------------------------------------


class WorkflowProvider(Provider):
    """"Start workflow: …" commands, only in a session that may write; each opens the form."""

    async def startup(self) -> None:
        session = getattr(self.screen, "session", None) or getattr(self.app, "session", None)
        self.enabled = session is not None and operations_enabled(session)[0]

    def _new(self, kind: str) -> None:
        self.app.post_message(NewWorkflow(kind))

    def _commands(self) -> list[tuple[str, str]]:
        if not getattr(self, "enabled", False):
            return []
        return [(f"Start workflow: {label} …", kind) for kind, label in kind_labels().items()]

    async def discover(self) -> Hits:
        for label, kind in self._commands():
            yield DiscoveryHit(label, partial(self._new, kind), help="opens the form; every step asks before it writes")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for label, kind in self._commands():
            score = matcher.match(label)
            if score > 0:
                yield Hit(score, matcher.highlight(label), partial(self._new, kind), text=label,
                          help="opens the form; every step asks before it writes")
